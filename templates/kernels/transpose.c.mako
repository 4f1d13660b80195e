<%doc> y (row-major) = x read with permuted strides, over the merged output dimensions. </%doc>\
<%
    shape, sx, sy = p['shape'], p['x_strides'], p['y_strides']
    rank = len(shape)
%>\
${signature}
{
% for d in range(rank):
${'    ' * (d + 1)}for (size_t i${d} = 0; i${d} < ${shape[d]}u; ++i${d}) {
% endfor
${'    ' * (rank + 1)}y[${' + '.join(f'i{d} * {sy[d]}u' for d in range(rank))}] = x[${' + '.join(f'i{d} * {sx[d]}u' for d in range(rank))}];
% for d in reversed(range(rank)):
${'    ' * (d + 1)}}
% endfor
}

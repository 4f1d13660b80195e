<%doc>
  y (row-major, over the merged output dimensions) = x read from element `offset` with
  signed element strides: a transpose, slice (any step), broadcast (stride 0), tile or
  depth/space shuffle is one such walk, resolved at compile time.
</%doc>\
<%
    shape, sx, sy, rank = p['shape'], p['x_strides'], p['y_strides'], len(p['shape'])
    ix = ' + '.join([str(p['offset'])] * bool(p['offset']) + [f'i{d} * {sx[d]}' for d in range(rank) if sx[d]]) or '0'
    iy = ' + '.join(f'i{d} * {sy[d]}' for d in range(rank)) or '0'
%>\
${signature}
{
% for d in range(rank):
${'    ' * (d + 1)}for (ptrdiff_t i${d} = 0; i${d} < ${shape[d]}; ++i${d}) {
% endfor
${'    ' * (rank + 1)}y[${iy}] = x[${ix}];
% for d in reversed(range(rank)):
${'    ' * (d + 1)}}
% endfor
}

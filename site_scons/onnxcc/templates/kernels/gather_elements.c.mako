<%doc>
  GatherElements: y[i] = x[i with its axis coordinate replaced by indices[i]], for every i
  of the indices' shape (loops over its dimensions; x read with its own strides).
</%doc>\
<%
    shape, xs, axis, rank = p['shape'], p['x_strides'], p['axis'], len(p['shape'])
    ind = '    ' * (rank + 1)
    base = ' + '.join(f'i{d} * {xs[d]}' for d in range(rank) if d != axis and xs[d]) or '0'
%>\
${signature}
{
    size_t t = 0;
% for d in range(rank):
${'    ' * (d + 1)}for (ptrdiff_t i${d} = 0; i${d} < ${shape[d]}; ++i${d}) {
% endfor
${ind}const ptrdiff_t k = (ptrdiff_t)indices[t] + (indices[t] < 0 ? ${p['n']} : 0);
${ind}y[t++] = x[${base} + k * ${xs[axis]}];
% for d in reversed(range(rank)):
${'    ' * (d + 1)}}
% endfor
}

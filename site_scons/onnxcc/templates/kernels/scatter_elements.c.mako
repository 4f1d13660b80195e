<%doc>
  ScatterElements: y = data, then y[i with its axis coordinate replaced by indices[i]]
  = updates[i] (or combined with it by the reduction) for every i of the indices' shape.
</%doc>\
<%
    shape, ys, axis, rank = p['shape'], p['y_strides'], p['axis'], len(p['shape'])
    ind = '    ' * (rank + 1)
    base = ' + '.join(f'i{d} * {ys[d]}' for d in range(rank) if d != axis and ys[d]) or '0'
%>\
${signature}
{
    size_t t = 0;
    memcpy(y, data, ${p['size']}u * sizeof y[0]);
% for d in range(rank):
${'    ' * (d + 1)}for (ptrdiff_t i${d} = 0; i${d} < ${shape[d]}; ++i${d}) {
% endfor
${ind}const ptrdiff_t k = (ptrdiff_t)indices[t] + (indices[t] < 0 ? ${p['n']} : 0);
${ind}${c_type(p['dtype'])} *const to = &y[${base} + k * ${ys[axis]}];
${ind}${p['combine'].format(to='*to', update='updates[t]')};
${ind}++t;
% for d in reversed(range(rank)):
${'    ' * (d + 1)}}
% endfor
}

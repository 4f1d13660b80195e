<%doc>
  Pad: each output coordinate along dimension d reads input coordinate map_d[o] (the pads
  and the mode - constant, reflect, edge, wrap - resolved at compile time), or, where a
  map says -1, the constant value.
</%doc>\
<%
    shape, xs, maps, rank = p['shape'], p['x_strides'], p['maps'], len(p['shape'])
    ind = '    ' * (rank + 1)
    outside = ' || '.join(f's{d} < 0' for d in range(rank))
    index = ' + '.join(f's{d} * {xs[d]}' for d in range(rank) if xs[d]) or '0'
%>\
${signature}
{
% for d in range(rank):
    static const int32_t map${d}[${shape[d]}] = {${', '.join(map(str, maps[d]))}};
% endfor
    size_t t = 0;
% for d in range(rank):
${'    ' * (d + 1)}for (size_t i${d} = 0; i${d} < ${shape[d]}u; ++i${d}) {
${'    ' * (d + 2)}const ptrdiff_t s${d} = map${d}[i${d}];
% endfor
% if p['constant']:
${ind}y[t++] = ${outside} ? ${p['value']} : x[${index}];
% else:
${ind}y[t++] = x[${index}];
% endif
% for d in reversed(range(rank)):
${'    ' * (d + 1)}}
% endfor
}

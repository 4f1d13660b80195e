<%doc>
  y = a OP b over the output's (merged) dimensions; a and b are read with the element
  strides computed at compile time (0 where an operand is broadcast).
</%doc>\
<%
    shape, sa, sb = p['shape'], p['a_strides'], p['b_strides']
    rank = len(shape)
%>\
${signature}
{
% for d in range(rank):
${'    ' * (d + 1)}for (size_t i${d} = 0; i${d} < ${shape[d]}u; ++i${d}) {
% endfor
<%
    ind = '    ' * (rank + 1)
    ia = ' + '.join(f'i{d} * {sa[d]}u' for d in range(rank) if sa[d]) or '0'
    ib = ' + '.join(f'i{d} * {sb[d]}u' for d in range(rank) if sb[d]) or '0'
    iy = ' + '.join(f'i{d} * {stride}u' for d, stride in enumerate(p['out_strides']))
%>\
${ind}float v = a[${ia}] ${p['op']} b[${ib}];
% if p['epilogue']:
${ind}${epilogue('v', p['epilogue'], [iy])}
% endif
${ind}y[${iy}] = v;
% for d in reversed(range(rank)):
${'    ' * (d + 1)}}
% endfor
}

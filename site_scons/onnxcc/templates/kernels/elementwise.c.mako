<%doc>
  y = f(x0, x1, ...) over the output's (merged) dimensions, numpy broadcasting: each input
  is read with the element strides computed at compile time (0 where it repeats) into a
  local named a, b, c, ... and f is the op's C expression of those locals.
</%doc>\
<%
    shape, strides, rank = p['shape'], p['strides'], len(p['shape'])
    ind = '    ' * (rank + 1)
    def index(s):
        return ' + '.join(f'i{d} * {s[d]}u' for d in range(rank) if s[d]) or '0'
%>\
${signature}
{
% for d in range(rank):
${'    ' * (d + 1)}for (size_t i${d} = 0; i${d} < ${shape[d]}u; ++i${d}) {
% endfor
% for k, (local, dtype) in enumerate(zip(p['locals'], p['dtypes'])):
${ind}const ${c_type(dtype)} ${local} = x${k}[${index(strides[k])}];
% endfor
${ind}y[${index(p['out_strides'])}] = ${p['expression']};
% for d in reversed(range(rank)):
${'    ' * (d + 1)}}
% endfor
}

<%doc>
  y[k] = the reduction of x over the reduced dimensions, for every position k of the kept
  ones (both walked with x's element strides, merged where contiguous). `first` runs once
  over the elements before `step` (LogSumExp's maximum), `final` turns the accumulator
  into the result.
</%doc>\
<%
    kept, kept_strides = p['kept'], p['kept_strides']
    red, red_strides = p['reduced'], p['reduced_strides']
    nk, nr = len(kept), len(red)
    base = ' + '.join(f'k{d} * {kept_strides[d]}u' for d in range(nk)) or '0'
    index = ' + '.join(f'r{d} * {red_strides[d]}u' for d in range(nr)) or '0'
    acc_type = c_type(p['dtype'])
    def reduced_loop(ind, body):
        if not nr:  # an empty reduction
            return ''
        lines = []
        for d in range(nr):
            lines.append('    ' * (ind + d) + f'for (size_t r{d} = 0; r{d} < {red[d]}u; ++r{d}) {{')
        lines.append('    ' * (ind + nr) + f'const {acc_type} v = xk[{index}];')
        lines.append('    ' * (ind + nr) + body)
        for d in reversed(range(nr)):
            lines.append('    ' * (ind + d) + '}')
        return '\n'.join(lines)
%>\
${signature}
{
    size_t t = 0;
% if not nr:
    (void)x; /* an empty reduction reads nothing */
% endif
% for d in range(nk):
${'    ' * (d + 1)}for (size_t k${d} = 0; k${d} < ${kept[d]}u; ++k${d}) {
% endfor
<% ind = nk + 1 %>\
% if nr:
${'    ' * ind}const ${c_type(p['dtype'])} *const xk = x + ${base};
% endif
% if p['first']:
${'    ' * ind}${acc_type} first = ${p['first_init']};
${reduced_loop(ind, p['first'])}
% endif
${'    ' * ind}${acc_type} acc = ${p['init']};
${reduced_loop(ind, p['step'])}
${'    ' * ind}y[t++] = ${p['final']};
% for d in reversed(range(nk)):
${'    ' * (d + 1)}}
% endfor
}

<%doc>
  Einsum: for every output index (letters ${''.join(c for c, _ in p['output']) or 'none'}), the sum over the summed
  letters (${''.join(c for c, _ in p['summed']) or 'none'}) of the product of the operands, each read with
  its letters' strides.
</%doc>\
<%
    out, summed, strides = p['output'], p['summed'], p['strides']
    no, ns = len(out), len(summed)
    def index(k):
        return ' + '.join(f'i{c} * {s}' for c, s in sorted(strides[k].items()) if s) or '0'
    product = ' * '.join(f'x{k}[{index(k)}]' for k in range(len(strides)))
    ctype = c_type(p['dtype'])
%>\
${signature}
{
    size_t t = 0;
% for d, (c, n) in enumerate(out):
${'    ' * (d + 1)}for (ptrdiff_t i${c} = 0; i${c} < ${n}; ++i${c}) {
% endfor
${'    ' * (no + 1)}${ctype} acc = 0;
% for d, (c, n) in enumerate(summed):
${'    ' * (no + d + 1)}for (ptrdiff_t i${c} = 0; i${c} < ${n}; ++i${c})
% endfor
${'    ' * (no + ns + 1)}acc += ${product};
${'    ' * (no + 1)}y[t++] = acc;
% for d in reversed(range(no)):
${'    ' * (d + 1)}}
% endfor
}

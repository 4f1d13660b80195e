<%namespace name="simd" file="/kernels/lib/simd.mako"/>\
<%doc>
  y = a OP b over the output's (merged) dimensions, the innermost one in vectors of
  `lanes`: each operand is loaded (stride 1) or broadcast (stride 0) there, and the
  epilogue runs on the vector; the last elements of a row one by one.
</%doc>\
<%
    shape, sa, sb = p['shape'], p['a_strides'], p['b_strides']
    rank = len(shape)
    lanes = p['lanes']
    inner = shape[-1]
    full = inner // lanes * lanes
    ind = '    ' * rank
    ia = ' + '.join(f'i{d} * {sa[d]}u' for d in range(rank - 1) if sa[d]) or '0'
    ib = ' + '.join(f'i{d} * {sb[d]}u' for d in range(rank - 1) if sb[d]) or '0'
    iy = ' + '.join(f'i{d} * {s}u' for d, s in enumerate(p['out_strides'][:-1])) or '0'
    def operand(name, base, stride):
        return f"*(const vfu *)({name} + {base} + j)" if stride[-1] else f"((vf){{0}} + {name}[{base}])"
%>\
${signature}
{
${simd.types(lanes)}\
% for d in range(rank - 1):
${'    ' * (d + 1)}for (size_t i${d} = 0; i${d} < ${shape[d]}u; ++i${d}) {
% endfor
<%simd:loop i="j" start="${0}" stop="${full}" step="${lanes}" indent="${ind}">\
${ind}    vf v = ${operand('a', ia, sa)} ${p['op']} ${operand('b', ib, sb)};
% if p['epilogue']:
${ind}    ${vector_epilogue('v', p['epilogue'], [f'{iy} + j'], 0, lanes, lanes)}
% endif
${ind}    *(vfu *)(y + ${iy} + j) = v;
</%simd:loop>\
<%simd:loop i="j" start="${full}" stop="${inner}" step="${1}" indent="${ind}">\
${ind}    float v = a[${ia} + j * ${sa[-1]}u] ${p['op']} b[${ib} + j * ${sb[-1]}u];
% if p['epilogue']:
${ind}    ${epilogue('v', p['epilogue'], [f'{iy} + j'], fast=True)}
% endif
${ind}    y[${iy} + j] = v;
</%simd:loop>\
% for d in reversed(range(rank - 1)):
${'    ' * (d + 1)}}
% endfor
}

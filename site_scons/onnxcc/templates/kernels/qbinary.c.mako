<%doc>
  Quantized Add and Mul with numpy broadcasting, in onnxruntime's float32 arithmetic (its
  x86 kernels). add: y = round(a * ra + (b * rb + offset)) with fused multiply-adds; an
  operand that is constant along the innermost loop is folded into the offset first, as
  onnxruntime's scalar-operand kernel does. mul: y = round(float((a - za) * (b - zb)) *
  ratio + zy), a multiply and then an add (its SSE2 kernel; no contraction: -std=c99).
  steps=float (a group onnxruntime does not fuse): its float ops on the codes, each
  rounded to float32: DequantizeLinear (a - za) * sa, the add or multiply, then
  QuantizeLinear: round(v / sy) + zy, saturated. code: what onnxruntime's x86 kernels add
  to int8 codes and zero points before they compute (128: they fuse the group on uint8).
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
<%
    shape, sa, sb = p['shape'], p['a_strides'], p['b_strides']
    rank = len(shape)
    inner = rank - 1
    mul, steps = p['op'] == 'mul', p.get('steps')
    if not mul and not steps:
        ra, rb, off = c_float(p['ra']), c_float(p['rb']), c_float(p['offset'])
    lo, hi, code = p['lo'], p['hi'], p['code']
    def ld(t, index):
        return f"((int32_t){t}[{index}] + {code})" if code else f"(int32_t){t}[{index}]"
%>\
${qh.round_even(model)}
${signature}
{
% for d in range(rank - 1):
${'    ' * (d + 1)}for (size_t i${d} = 0; i${d} < ${shape[d]}u; ++i${d}) {
% endfor
<%
    ind = '    ' * rank
    ia = ' + '.join(f'i{d} * {sa[d]}u' for d in range(rank - 1) if sa[d]) or '0'
    ib = ' + '.join(f'i{d} * {sb[d]}u' for d in range(rank - 1) if sb[d]) or '0'
    iy = ' + '.join(f'i{d} * {s}u' for d, s in enumerate(p['out_strides'][:-1])) or '0'
%>\
${ind}const size_t a0 = ${ia}, b0 = ${ib}, y0 = ${iy};
% if steps:
${ind}for (size_t i = 0; i < ${shape[inner]}u; ++i) {
${ind}    const float va = (float)((int32_t)a[a0 + i * ${sa[inner]}u] - ${p['za']}) * ${c_float(p['sa'])};
${ind}    const float vb = (float)((int32_t)b[b0 + i * ${sb[inner]}u] - ${p['zb']}) * ${c_float(p['sb'])};
${ind}    float v = (va ${'*' if mul else '+'} vb) / ${c_float(p['sy'])};
${ind}    v = v < ${c_float(lo - p['zy'])} ? ${c_float(lo - p['zy'])} : v > ${c_float(hi - p['zy'])} ? ${c_float(hi - p['zy'])} : v;
${ind}    y[y0 + i * ${p['out_strides'][inner]}u] = ${model}_round_even(v) + ${p['zy']};
${ind}}
% elif mul:
${ind}for (size_t i = 0; i < ${shape[inner]}u; ++i) {
${ind}    const int32_t product = (${ld('a', f"a0 + i * {sa[inner]}u")} - ${p['za']}) * (${ld('b', f"b0 + i * {sb[inner]}u")} - ${p['zb']});
${ind}    float v = (float)product * ${c_float(p['ratio'])};
${ind}    v = v + ${c_float(p['zy'])};
% else:
% if sb[inner] == 0:
${ind}const float fixed = ${off} + (float)${ld('b', 'b0')} * ${rb};
% elif sa[inner] == 0:
${ind}const float fixed = ${off} + (float)${ld('a', 'a0')} * ${ra};
% endif
${ind}for (size_t i = 0; i < ${shape[inner]}u; ++i) {
% if sb[inner] == 0:
${ind}    float v = fmaf((float)${ld('a', f"a0 + i * {sa[inner]}u")}, ${ra}, fixed);
% elif sa[inner] == 0:
${ind}    float v = fmaf((float)${ld('b', f"b0 + i * {sb[inner]}u")}, ${rb}, fixed);
% else:
${ind}    float v = fmaf((float)${ld('a', f"a0 + i * {sa[inner]}u")}, ${ra}, fmaf((float)${ld('b', f"b0 + i * {sb[inner]}u")}, ${rb}, ${off}));
% endif
% endif
% if not steps:
${ind}    v = v < ${c_float(lo)} ? ${c_float(lo)} : v > ${c_float(hi)} ? ${c_float(hi)} : v;
${ind}    y[y0 + i * ${p['out_strides'][inner]}u] = ${model}_round_even(v)${f" - {code}" if code else ""};
${ind}}
% endif
% for d in reversed(range(rank - 1)):
${'    ' * (d + 1)}}
% endfor
}

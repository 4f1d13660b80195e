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
  On a core without a float unit the add's and the mul's float32 steps run in integers,
  exactly (lib/float32_int.mako).
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
<%namespace name="fi" file="/kernels/lib/float32_int.mako"/>\
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
    fx = p.get('fixed') if not (float_unit or steps) else None
    if fx and not mul:
        def unsigned(t, index):  # the code made unsigned, and its ratio's m and s
            u = f"{ld(t, index)} + {fx['bias']}" if fx['bias'] else ld(t, index)
            m, s = (fx['ma'], fx['sa']) if t == 'a' else (fx['mb'], fx['sb'])
            return f"(uint32_t)({u}), {m}u, {s}"
        def term(t, index, c):  # float32(code * ratio + c)
            return f"{model}_qadd_term({unsigned(t, index)}, {c_literal(c, 'int64')})"
        def code_of(t, index, c, t_expr):  # the outer step, with the other operand's term
            return (f"{model}_qadd_code({unsigned(t, index)}, {c_literal(c, 'int64')}, {t_expr}, "
                    f"{fx['f']}, {lo}, {hi})")
%>\
% if fx and mul:
${fi.qlinear_mul(model)}
% elif fx:
${fi.qlinear_add(model)}
% else:
${qh.round_even(model)}
% endif
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
% if fx:
${ind}    const int32_t v = ${model}_qmul_code(product, ${fx['m']}u, ${fx['s']}, ${c_literal(fx['z'], 'int64')}, ${fx['f']}, ${lo}, ${hi});
${ind}    y[y0 + i * ${p['out_strides'][inner]}u] = v${f" - {code}" if code else ""};
${ind}}
% else:
${ind}    float v = (float)product * ${c_float(p['ratio'])};
${ind}    v = v + ${c_float(p['zy'])};
% endif
% elif fx:
<%
    ea, eb = f"a0 + i * {sa[inner]}u", f"b0 + i * {sb[inner]}u"
%>\
% if sb[inner] == 0:
${ind}const int64_t fixed = ${model}_rn32(${c_literal(fx['offset'], 'int64')} + ${term('b', 'b0', fx['cb'])});
% elif sa[inner] == 0:
${ind}const int64_t fixed = ${model}_rn32(${c_literal(fx['offset'], 'int64')} + ${term('a', 'a0', fx['ca'])});
% endif
${ind}for (size_t i = 0; i < ${shape[inner]}u; ++i) {
% if sb[inner] == 0:
${ind}    const int32_t v = ${code_of('a', ea, fx['ca'], 'fixed')};
% elif sa[inner] == 0:
${ind}    const int32_t v = ${code_of('b', eb, fx['cb'], 'fixed')};
% else:
${ind}    const int32_t v = ${code_of('a', ea, fx['ca'], term('b', eb, fx['cb'] + fx['offset']))};
% endif
${ind}    y[y0 + i * ${p['out_strides'][inner]}u] = v${f" - {code}" if code else ""};
${ind}}
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
% if not steps and not fx:
${ind}    v = v < ${c_float(lo)} ? ${c_float(lo)} : v > ${c_float(hi)} ? ${c_float(hi)} : v;
${ind}    y[y0 + i * ${p['out_strides'][inner]}u] = ${model}_round_even(v)${f" - {code}" if code else ""};
${ind}}
% endif
% for d in reversed(range(rank - 1)):
${'    ' * (d + 1)}}
% endfor
}

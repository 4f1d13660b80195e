<%doc>
  Quantized Softmax as onnxruntime computes it: exp of every input code from a 256-entry
  float32 table (built for the input scale), shifted so that the row's maximum reads the
  table's last entry; y = round(e * floor(1 / y_scale) / sum(e)) + zero point, saturated.
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
<%
    n, inner = p['n'], p['inner']
    signed = p['signed']
    hi = 127 if signed else 255
    table = [c_float(v) for v in p['table']]
%>\
${qh.round_even(model)}
${signature}
{
    static const float table[256] = {
% for i in range(0, 256, 8):
        ${', '.join(table[i:i + 8])},
% endfor
    };
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        for (size_t s = 0; s < ${inner}u; ++s) {
            const size_t base = o * ${n * inner}u + s;
            int32_t xmax = x[base];
            for (size_t i = 1; i < ${n}u; ++i)
                xmax = x[base + i * ${inner}u] > xmax ? x[base + i * ${inner}u] : xmax;
            float sum = 0.0f;
            for (size_t i = 0; i < ${n}u; ++i)
                sum += table[(uint8_t)(x[base + i * ${inner}u] - xmax + ${'127' if signed else '255'})];
            for (size_t i = 0; i < ${n}u; ++i) {
                const float e = table[(uint8_t)(x[base + i * ${inner}u] - xmax + ${'127' if signed else '255'})];
                const int32_t v = ${model}_round_even(e * ${c_float(p['y_scale'])} / sum) + ${p['y_zp']};
                y[base + i * ${inner}u] = v > ${hi} ? ${hi} : v;
            }
        }
    }
}

<%doc>
  Quantized Softmax as onnxruntime computes it: exp of every input code from a 256-entry
  float32 table (built for the input scale), shifted so that the row's maximum reads the
  table's last entry; y = round(e * floor(1 / y_scale) / sum(e)) + zero point, saturated.
  On a core without a float unit the same float32 steps run in integers, exactly
  (lib/float32_int.mako): the table holds the floats' bits.
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
<%namespace name="fi" file="/kernels/lib/float32_int.mako"/>\
<%!
    import struct

    def bits(v):
        return struct.unpack("<I", struct.pack("<f", v))[0]

    def decoded(v):  # (m, e) as f32_decode reads the float
        b = bits(v)
        x = (b >> 23) & 0xFF
        return (b & 0x7FFFFF) | (0x800000 if x else 0), (x or 1) - 150
%>\
<%
    n, inner = p['n'], p['inner']
    signed = p['signed']
    hi = 127 if signed else 255
    if float_unit:
        ctype, table = "float", [c_float(v) for v in p['table']]
    else:
        ctype, table = "uint32_t", [f"0x{bits(v):08x}u" for v in p['table']]
    shift = '127' if signed else '255'
    def entry(i):
        return f"table[(uint8_t)(x[base + {i} * {inner}u] - xmax + {shift})]"
%>\
% if float_unit:
${qh.round_even(model)}
% else:
${fi.softmax(model)}
% endif
${signature}
{
    static const ${ctype} table[256] = {
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
% if float_unit:
            float sum = 0.0f;
            for (size_t i = 0; i < ${n}u; ++i)
                sum += ${entry('i')};
            for (size_t i = 0; i < ${n}u; ++i) {
                const int32_t v = ${model}_round_even(${entry('i')} * ${c_float(p['y_scale'])} / sum) + ${p['y_zp']};
                y[base + i * ${inner}u] = v > ${hi} ? ${hi} : v;
            }
% else:
<%
    ym, ye = decoded(p['y_scale'])
%>\
            uint32_t sum = 0u, m;
            int sum_e = 0, e;
            for (size_t i = 0; i < ${n}u; ++i) {
                ${model}_f32_decode(${entry('i')}, &m, &e);
                ${model}_f32_add(&sum, &sum_e, m, e);
            }
            for (size_t i = 0; i < ${n}u; ++i) {
                ${model}_f32_decode(${entry('i')}, &m, &e);
                const int32_t v = ${model}_f32_mul_div_round(m, e, ${ym}u, ${ye}, sum, sum_e) + ${p['y_zp']};
                y[base + i * ${inner}u] = v > ${hi} ? ${hi} : v;
            }
% endif
        }
    }
}

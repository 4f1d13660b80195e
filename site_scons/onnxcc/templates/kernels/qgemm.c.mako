<%doc>
  Quantized matrix multiply: y[i][j] = requantize(b[j] + sum_q (a[i][q] - a_zero_point) *
  (w[j][q] - w_zero_point[j])), weights stored [N][K] (contiguous dot products), one
  fixed-point multiplier and shift per output column.
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
<%
    m, n, k = p['m'], p['n'], p['k']
    raw = p.get('raw', False)  # ConvInteger / MatMulInteger: the int32 sums themselves
    per_channel = not raw and p['mult'] is None  # then the multipliers and shifts are inputs
%>\
% if not raw:
${qh.requantize(model)}
% endif
${signature}
{
% if p['w_zp']:
    static const int16_t w_zp[${n}] = {${', '.join(map(str, p['w_zp']))}};
% endif
    for (int i = 0; i < ${m}; ++i) {
        const size_t ar = (size_t)i * ${k}u;
        for (int j = 0; j < ${n}; ++j) {
            const size_t wr = (size_t)j * ${k}u;
            int32_t acc = ${'b[j]' if p['bias'] else '0'};
            for (int q = 0; q < ${k}; ++q)
                acc += ((int32_t)a[ar + q] - ${p['a_zp']}) * ((int32_t)w[wr + q]${' - w_zp[j]' if p['w_zp'] else ''});
% if raw:
            y[(size_t)i * ${n}u + j] = acc;
% elif per_channel:
            y[(size_t)i * ${n}u + j] = ${model}_requantize(acc, (uint32_t)mult[j], shift[j], ${p['y_zp']}, ${p['lo']}, ${p['hi']});
% else:
            y[(size_t)i * ${n}u + j] = ${model}_requantize(acc, ${p['mult']}u, ${p['shift']}, ${p['y_zp']}, ${p['lo']}, ${p['hi']});
% endif
        }
    }
}

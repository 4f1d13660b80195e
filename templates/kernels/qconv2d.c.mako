<%doc>
  Quantized direct NCHW convolution: int32 sums of (x - x_zero_point) * (w - w_zero_point)
  over the window's valid taps (padding is the zero point, which adds nothing), plus the
  int32 bias, requantized per output channel (fixed-point multiplier and shift). A whole
  output row is summed at once (int32 row on the stack), one weight at a time, so the
  inner loop runs along the row; each weight's valid output columns are found first.
</%doc>\
<%namespace name="qh" file="/kernels/qhelpers.mako"/>\
<%
    n, c, h, w = p['n'], p['c'], p['h'], p['w']
    m, oh, ow, kh, kw = p['m'], p['oh'], p['ow'], p['kh'], p['kw']
    sh, sw, dh, dw, pt, pl = p['sh'], p['sw'], p['dh'], p['dw'], p['pt'], p['pl']
    group = p['group']
    cg, mg = c // group, m // group
    raw = p.get('raw', False)  # ConvInteger / MatMulInteger: the int32 sums themselves
    per_channel = not raw and p['mult'] is None  # then the multipliers and shifts are inputs
%>\
% if not raw:
${qh.requantize(model)}
% endif
${signature}
{
% if p['w_zp']:
    static const int16_t w_zp[${m}] = {${', '.join(map(str, p['w_zp']))}};
% endif
    for (int nb = 0; nb < ${n}; ++nb) {
        for (int oc = 0; oc < ${m}; ++oc) {
            const size_t xg = (size_t)nb * ${c * h * w}u + (size_t)(oc / ${mg}) * ${cg * h * w}u;
            const size_t wk = (size_t)oc * ${cg * kh * kw}u;
            const size_t yo = ((size_t)nb * ${m} + oc) * ${oh * ow}u;
% if p['w_zp']:
            const int32_t wz = w_zp[oc];
% endif
            for (int oy = 0; oy < ${oh}; ++oy) {
                const int iy0 = oy * ${sh} - ${pt};
                int ky0 = 0, ky1 = ${kh};
                while (ky0 < ky1 && iy0 + ky0 * ${dh} < 0) ++ky0;
                while (ky1 > ky0 && iy0 + (ky1 - 1) * ${dh} >= ${h}) --ky1;
                int32_t acc[${ow}];
                for (int ox = 0; ox < ${ow}; ++ox)
                    acc[ox] = ${'b[oc]' if p['bias'] else '0'};
                for (int ic = 0; ic < ${cg}; ++ic) {
                    for (int ky = ky0; ky < ky1; ++ky) {
                        const size_t xr = xg + (size_t)ic * ${h * w}u + (size_t)((iy0 + ky * ${dh}) * ${w});
                        const size_t wr = wk + (size_t)(ic * ${kh * kw} + ky * ${kw});
                        for (int kx = 0; kx < ${kw}; ++kx) {
                            const int32_t wv = (int32_t)w[wr + kx]${' - wz' if p['w_zp'] else ''};
                            const int ix = kx * ${dw} - ${pl};  /* input column of output column 0 */
                            /* the output columns whose input column is inside the row */
                            const int ox0 = ix >= 0 ? 0 : (-ix + ${sw - 1}) / ${sw};
                            const int ox1 = ${w} - ix <= 0 ? 0 : (${w} - ix + ${sw - 1}) / ${sw} < ${ow} ? (${w} - ix + ${sw - 1}) / ${sw} : ${ow};
                            const size_t xk = xr + (size_t)ix;
                            for (int ox = ox0; ox < ox1; ++ox)
                                acc[ox] += ((int32_t)x[xk + (size_t)(ox * ${sw})] - ${p['x_zp']}) * wv;
                        }
                    }
                }
                for (int ox = 0; ox < ${ow}; ++ox) {
% if raw:
                    y[yo + (size_t)(oy * ${ow} + ox)] = acc[ox];
% elif per_channel:
                    y[yo + (size_t)(oy * ${ow} + ox)] = ${model}_requantize(acc[ox], (uint32_t)mult[oc], shift[oc], ${p['y_zp']}, ${p['lo']}, ${p['hi']});
% else:
                    y[yo + (size_t)(oy * ${ow} + ox)] = ${model}_requantize(acc[ox], ${p['mult']}u, ${p['shift']}, ${p['y_zp']}, ${p['lo']}, ${p['hi']});
% endif
                }
            }
        }
    }
}

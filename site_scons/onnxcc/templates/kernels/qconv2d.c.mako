<%doc>
  Quantized direct NCHW convolution: int32 sums of (x - x_zero_point) * (w - w_zero_point)
  over the window's valid taps (padding is the zero point, which adds nothing), plus the
  int32 bias, requantized per output channel (fixed-point multiplier and shift). A whole
  output row is summed at once (int32 row on the stack), one weight at a time, so the
  inner loop runs along the row; each weight's valid output columns are found first.
  With a fused QLinearAdd, each output code is added to the residual r's element right
  before the same element of y is written. ``in_place`` (ops/common/spatial.py says when y may
  be x): "channel", each channel of y is computed into scratch, then copied over y;
  "pixel" (a 1x1 window), the inputs of one pixel are copied to scratch, then every output
  of that pixel is written. Both sum in the same order and store through conv_output.
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
<%
    n, c, h, w = p['n'], p['c'], p['h'], p['w']
    m, oh, ow, kh, kw = p['m'], p['oh'], p['ow'], p['kh'], p['kw']
    sh, sw, dh, dw, pt, pl = p['sh'], p['sw'], p['dh'], p['dw'], p['pt'], p['pl']
    group = p['group']
    cg, mg = c // group, m // group
    in_place = p.get('in_place', False)
%>\
${qh.conv_helpers(model, p)}
${signature}
{
% if p['w_zp']:
    static const int16_t w_zp[${m}] = {${', '.join(map(str, p['w_zp']))}};
% endif
% if in_place == 'pixel':
<% assert (kh, kw, sh, sw, pt, pl, p['pb'], p['pr'], group) == (1, 1, 1, 1, 0, 0, 0, 0, 1) %>\
    ${p['x_type']} *const col = (${p['x_type']} *)scratch; /* the ${c} inputs of one pixel */
    for (int nb = 0; nb < ${n}; ++nb) {
        const size_t xb = (size_t)nb * ${c * h * w}u;
        for (int px = 0; px < ${oh * ow}; ++px) {
            for (int ic = 0; ic < ${c}; ++ic)
                col[ic] = x[xb + (size_t)ic * ${h * w}u + (size_t)px];
            for (int oc = 0; oc < ${m}; ++oc) {
                const size_t wr = (size_t)oc * ${c}u;
% if p['w_zp']:
                const int32_t wz = w_zp[oc];
% endif
                int32_t acc = ${'b[oc]' if p['bias'] else '0'};
                for (int ic = 0; ic < ${c}; ++ic)
                    acc += ((int32_t)col[ic] - ${p['x_zp']}) * ((int32_t)w[wr + (size_t)ic]${' - wz' if p['w_zp'] else ''});
                const size_t yi = ((size_t)nb * ${m} + oc) * ${oh * ow}u + (size_t)px;
                y[yi] = ${qh.conv_output(model, p, 'acc', 'oc', 'yi')};
            }
        }
    }
% else:
% if in_place:
<% assert group == c == m %>\
    ${p['y_type']} *const out = (${p['y_type']} *)scratch; /* one channel of y */
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
                for (int ox = 0; ox < ${ow}; ++ox)
                    ${'out' if in_place else 'y'}[${'' if in_place else 'yo + '}(size_t)(oy * ${ow} + ox)] = ${qh.conv_output(model, p, 'acc[ox]', 'oc', f"yo + (size_t)(oy * {ow} + ox)")};
            }
% if in_place:
            memcpy(y + yo, out, ${oh * ow}u);
% endif
        }
    }
% endif
}

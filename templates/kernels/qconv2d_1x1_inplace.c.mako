<%doc>
  Quantized 1x1 NCHW convolution (stride 1, no pads) whose y may be x: the inputs of one
  pixel are copied to scratch, then every output of that pixel is written (see
  ops/qlinear_inplace.py for why that is safe). The same sums and requantization as
  qconv2d.
</%doc>\
<%namespace name="qh" file="/kernels/qhelpers.mako"/>\
<%
    n, c, m, hw = p['n'], p['c'], p['m'], p['h'] * p['w']
%>\
${qh.conv_helpers(model, p)}
${signature}
{
    ${p['x_type']} *const col = (${p['x_type']} *)scratch; /* the ${c} inputs of one pixel */
% if p['w_zp']:
    static const int16_t w_zp[${m}] = {${', '.join(map(str, p['w_zp']))}};
% endif
    for (int nb = 0; nb < ${n}; ++nb) {
        const size_t xb = (size_t)nb * ${c * hw}u, yb = (size_t)nb * ${m * hw}u;
        for (int px = 0; px < ${hw}; ++px) {
            for (int ic = 0; ic < ${c}; ++ic)
                col[ic] = x[xb + (size_t)ic * ${hw}u + (size_t)px];
            for (int oc = 0; oc < ${m}; ++oc) {
                const size_t wr = (size_t)oc * ${c}u;
% if p['w_zp']:
                const int32_t wz = w_zp[oc];
% endif
                int32_t acc = ${'b[oc]' if p['bias'] else '0'};
                for (int ic = 0; ic < ${c}; ++ic)
                    acc += ((int32_t)col[ic] - ${p['x_zp']}) * ((int32_t)w[wr + (size_t)ic]${' - wz' if p['w_zp'] else ''});
                const size_t yi = yb + (size_t)oc * ${hw}u + (size_t)px;
                y[yi] = ${qh.conv_output(model, p, 'acc', 'oc', 'yi')};
            }
        }
    }
}

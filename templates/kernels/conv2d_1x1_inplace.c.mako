<%doc>
  1x1 NCHW convolution (stride 1, no pads) whose y may be x: the inputs of one pixel are
  copied to scratch, then every output of that pixel is written (see
  ops/conv_inplace.py for why that is safe).
</%doc>\
<%
    n, c, m, hw = p['n'], p['c'], p['m'], p['h'] * p['w']
%>\
${signature}
{
    float *const col = (float *)scratch; /* the ${c} inputs of one pixel */
    for (int nb = 0; nb < ${n}; ++nb) {
        const float *xb = x + (size_t)nb * ${c * hw}u;
        float *yb = y + (size_t)nb * ${m * hw}u;
        for (int px = 0; px < ${hw}; ++px) {
            for (int ic = 0; ic < ${c}; ++ic)
                col[ic] = xb[(size_t)ic * ${hw}u + px];
            for (int oc = 0; oc < ${m}; ++oc) {
                const float *wr = w + (size_t)oc * ${c}u;
                float acc = ${'b[oc]' if p['bias'] else '0.0f'};
                for (int ic = 0; ic < ${c}; ++ic)
                    acc += wr[ic] * col[ic];
% if p['epilogue']:
                ${epilogue('acc', p['epilogue'], ['nb', 'oc', 'px'])}
% endif
                yb[(size_t)oc * ${hw}u + px] = acc;
            }
        }
    }
}

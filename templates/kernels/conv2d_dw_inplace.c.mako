<%doc>
  Depthwise NCHW convolution whose y may be x: each channel is computed into scratch,
  then copied over y's channel (see ops/conv_inplace.py for why that is safe).
</%doc>\
<%
    n, c, h, w = p['n'], p['c'], p['h'], p['w']
    oh, ow, kh, kw = p['oh'], p['ow'], p['kh'], p['kw']
    sh, sw, dh, dw, pt, pl = p['sh'], p['sw'], p['dh'], p['dw'], p['pt'], p['pl']
%>\
${signature}
{
    float *const out = (float *)scratch; /* one channel of y */
    for (int nc = 0; nc < ${n * c}; ++nc) {
        const int ch = nc % ${c};
        const float *xc = x + (size_t)nc * ${h * w}u;
        const float *wk = w + (size_t)ch * ${kh * kw}u;
        for (int oy = 0; oy < ${oh}; ++oy) {
            const int iy0 = oy * ${sh} - ${pt};
            int ky0 = 0, ky1 = ${kh};
            while (ky0 < ky1 && iy0 + ky0 * ${dh} < 0) ++ky0;
            while (ky1 > ky0 && iy0 + (ky1 - 1) * ${dh} >= ${h}) --ky1;
            for (int ox = 0; ox < ${ow}; ++ox) {
                const int ix0 = ox * ${sw} - ${pl};
                int kx0 = 0, kx1 = ${kw};
                while (kx0 < kx1 && ix0 + kx0 * ${dw} < 0) ++kx0;
                while (kx1 > kx0 && ix0 + (kx1 - 1) * ${dw} >= ${w}) --kx1;
                float acc = ${'b[ch]' if p['bias'] else '0.0f'};
                for (int ky = ky0; ky < ky1; ++ky) {
                    const float *xr = xc + (iy0 + ky * ${dh}) * ${w} + ix0;
                    const float *wr = wk + ky * ${kw};
                    for (int kx = kx0; kx < kx1; ++kx)
                        acc += xr[kx * ${dw}] * wr[kx];
                }
% if p['epilogue']:
                ${epilogue('acc', p['epilogue'], [f'nc / {c}', 'ch', f'oy * {ow} + ox'])}
% endif
                out[oy * ${ow} + ox] = acc;
            }
        }
        memcpy(y + (size_t)nc * ${oh * ow}u, out, ${oh * ow}u * sizeof(float));
    }
}

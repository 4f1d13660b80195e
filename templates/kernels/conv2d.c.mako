<%doc>
  Direct NCHW convolution. Weights [M][C/group][KH][KW]; the window's valid kernel rows
  and columns are found once per output row and column, so the inner loop has no bounds
  checks (that is the zero padding). A fused input scale s (passes/fuse_channel_scale.py)
  multiplies each input element by its channel's factor first, as the Mul did.
</%doc>\
<%
    n, c, h, w = p['n'], p['c'], p['h'], p['w']
    m, oh, ow, kh, kw = p['m'], p['oh'], p['ow'], p['kh'], p['kw']
    sh, sw, dh, dw, pt, pl = p['sh'], p['sw'], p['dh'], p['dw'], p['pt'], p['pl']
    group = p['group']
    cg, mg = c // group, m // group
%>\
${signature}
{
    for (int nb = 0; nb < ${n}; ++nb) {
        const float *xb = x + (size_t)nb * ${c * h * w}u;
        float *yb = y + (size_t)nb * ${m * oh * ow}u;
        for (int oc = 0; oc < ${m}; ++oc) {
            const float *xg = xb + (size_t)(oc / ${mg}) * ${cg * h * w}u;
            const float *wk = w + (size_t)oc * ${cg * kh * kw}u;
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
                    float acc = ${'b[oc]' if p['bias'] else '0.0f'};
                    for (int ic = 0; ic < ${cg}; ++ic) {
                        const float *xc = xg + (size_t)ic * ${h * w}u;
                        const float *wc = wk + ic * ${kh * kw};
                        for (int ky = ky0; ky < ky1; ++ky) {
                            const float *xr = xc + (iy0 + ky * ${dh}) * ${w} + ix0;
                            const float *wr = wc + ky * ${kw};
                            for (int kx = kx0; kx < kx1; ++kx)
% if p.get('scale'):
                                acc += (xr[kx * ${dw}] * s[(oc / ${mg}) * ${cg} + ic]) * wr[kx];
% else:
                                acc += xr[kx * ${dw}] * wr[kx];
% endif
                        }
                    }
% if p['epilogue']:
                    ${epilogue('acc', p['epilogue'], ['nb', 'oc', f'oy * {ow} + ox'])}
% endif
                    yb[((size_t)oc * ${oh} + oy) * ${ow} + ox] = acc;
                }
            }
        }
    }
}

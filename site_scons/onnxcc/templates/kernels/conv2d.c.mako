<%namespace name="tl" file="/kernels/lib/tile.mako"/>\
<%doc>
  Direct NCHW convolution. Weights [M][C/group][KH][KW]; the window's valid kernel rows
  and columns are found once per output row and column, so the inner loop has no bounds
  checks (that is the zero padding). A fused input scale s (passes/fuse_channel_scale.py)
  multiplies each input element by its channel's factor first, as the Mul did.

  ``in_place`` (ops/common/spatial.py says when y may be x): "channel", each channel of y is
  computed into scratch and then copied over y; "pixel" (a 1x1 window), the inputs of
  one pixel are copied to scratch, then every output of that pixel is written. Every
  variant sums in the same order and stores through ``store``, so each applies the same
  input scale and chain (its bias starts the sums).
</%doc>\
<%
    n, c, h, w = p['n'], p['c'], p['h'], p['w']
    m, oh, ow, kh, kw = p['m'], p['oh'], p['ow'], p['kh'], p['kw']
    sh, sw, dh, dw, pt, pl = p['sh'], p['sw'], p['dh'], p['dw'], p['pt'], p['pl']
    group = p['group']
    cg, mg = c // group, m // group
    in_place = p.get('in_place')
%>\
<%def name="scaled(value, channel)">${f'({value} * s[{channel}])' if p.get('scale') else value}</%def>\
<% start, after = sums_start(p['epilogue'], 2, 1) %>\
<%def name="store(dst, pixel, ind)">${tl.store(0, 1, 1, lambda i: f"&{dst}", after, lambda i, col: ['nb', 'oc', pixel], 2, ind, fast=False)}</%def>\
${signature}
{
% if in_place == 'pixel':
<% assert (kh, kw, sh, sw, pt, pl, p['pb'], p['pr'], group) == (1, 1, 1, 1, 0, 0, 0, 0, 1) %>\
    float *const col = (float *)scratch; /* the ${c} inputs of one pixel, scaled */
    for (int nb = 0; nb < ${n}; ++nb) {
        const float *xb = x + (size_t)nb * ${c * h * w}u;
        float *yb = y + (size_t)nb * ${m * oh * ow}u;
        for (int px = 0; px < ${oh * ow}; ++px) {
            for (int ic = 0; ic < ${c}; ++ic)
                col[ic] = ${scaled(f'xb[(size_t)ic * {h * w}u + px]', 'ic')};
            for (int oc = 0; oc < ${m}; ++oc) {
                const float *wr = w + (size_t)oc * ${c}u;
                float acc0_0 = ${start(['nb', 'oc', 'px'])};
                for (int ic = 0; ic < ${c}; ++ic)
                    acc0_0 += col[ic] * wr[ic];
${store(f'yb[(size_t)oc * {oh * ow}u + px]', 'px', ' ' * 16)}\
            }
        }
    }
% else:
% if in_place == 'channel':
<% assert group == c == m %>\
    float *const out = (float *)scratch; /* one channel of y */
% endif
    for (int nb = 0; nb < ${n}; ++nb) {
        const float *xb = x + (size_t)nb * ${c * h * w}u;
        float *yb = y + (size_t)nb * ${m * oh * ow}u;
        for (int oc = 0; oc < ${m}; ++oc) {
            const float *xg = xb + (size_t)(oc / ${mg}) * ${cg * h * w}u;
            const float *wk = w + (size_t)oc * ${cg * kh * kw}u;
            float *yc = ${'out' if in_place else f'yb + (size_t)oc * {oh * ow}u'};
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
                    float acc0_0 = ${start(['nb', 'oc', f'oy * {ow} + ox'])};
                    for (int ic = 0; ic < ${cg}; ++ic) {
                        const float *xc = xg + (size_t)ic * ${h * w}u;
                        const float *wc = wk + ic * ${kh * kw};
                        for (int ky = ky0; ky < ky1; ++ky) {
                            const float *xr = xc + (iy0 + ky * ${dh}) * ${w} + ix0;
                            const float *wr = wc + ky * ${kw};
                            for (int kx = kx0; kx < kx1; ++kx)
                                acc0_0 += ${scaled('xr[kx * {}]'.format(dw), f'(oc / {mg}) * {cg} + ic')} * wr[kx];
                        }
                    }
${store(f'yc[oy * {ow} + ox]', f'oy * {ow} + ox', ' ' * 20)}\
                }
            }
% if in_place == 'channel':
            memcpy(yb + (size_t)oc * ${oh * ow}u, out, ${oh * ow}u * sizeof(float));
% endif
        }
    }
% endif
}

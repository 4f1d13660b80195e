<%doc>
  LpPool over NCHW: y = (sum over the window of |x|^${p['p']})^(1/${p['p']}); padding adds nothing.
</%doc>\
<%
    n, c, h, w, oh, ow = p['n'], p['c'], p['h'], p['w'], p['oh'], p['ow']
    kh, kw, sh, sw, dh, dw, pt, pl = p['kh'], p['kw'], p['sh'], p['sw'], p['dh'], p['dw'], p['pt'], p['pl']
    power = {1: 'fabsf(v)', 2: 'v * v'}.get(p['p'], f"powf(fabsf(v), {c_float(p['p'])})")
    root = {1: 'acc', 2: 'sqrtf(acc)'}.get(p['p'], f"powf(acc, {c_float(1.0 / p['p'])})")
%>\
${signature}
{
    for (int nc = 0; nc < ${n * c}; ++nc) {
        const float *xc = x + (size_t)nc * ${h * w}u;
        float *yc = y + (size_t)nc * ${oh * ow}u;
        for (int oy = 0; oy < ${oh}; ++oy) {
            for (int ox = 0; ox < ${ow}; ++ox) {
                float acc = 0.0f;
                for (int ky = 0; ky < ${kh}; ++ky) {
                    const int iy = oy * ${sh} - ${pt} + ky * ${dh};
                    if (iy < 0 || iy >= ${h})
                        continue;
                    for (int kx = 0; kx < ${kw}; ++kx) {
                        const int ix = ox * ${sw} - ${pl} + kx * ${dw};
                        if (ix < 0 || ix >= ${w})
                            continue;
                        const float v = xc[iy * ${w} + ix];
                        acc += ${power};
                    }
                }
                yc[oy * ${ow} + ox] = ${root};
            }
        }
    }
}

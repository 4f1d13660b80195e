<%doc>
  Max or average pooling over NCHW. Padded positions never win a max (it starts at the
  type's lowest value: float32, or int8 / uint8 codes); an average (float32) divides
  by the number of real inputs unless count_include_pad (then by the padded window
  clipped to the padded input, as ONNX specifies).
</%doc>\
<%
    n, c, h, w, oh, ow = p['n'], p['c'], p['h'], p['w'], p['oh'], p['ow']
    kh, kw, sh, sw, dh, dw, pt, pl = p['kh'], p['kw'], p['sh'], p['sw'], p['dh'], p['dw'], p['pt'], p['pl']
    is_max = p['kind'] == 'max'
    t = p['ctype']
%>\
${signature}
{
    for (int nc = 0; nc < ${n * c}; ++nc) {
        const ${t} *xc = x + (size_t)nc * ${h * w}u;
% if p.get('in_place'):
        ${t} *yc = (${t} *)scratch; /* copied over y's channel once x's is read */
% else:
        ${t} *yc = y + (size_t)nc * ${oh * ow}u;
% endif
        for (int oy = 0; oy < ${oh}; ++oy) {
            const int iy0 = oy * ${sh} - ${pt};
            for (int ox = 0; ox < ${ow}; ++ox) {
                const int ix0 = ox * ${sw} - ${pl};
                ${t} acc = ${p['lowest'] if is_max else '0.0f'};
% if not is_max:
                int count = 0;
% endif
                for (int ky = 0; ky < ${kh}; ++ky) {
                    const int iy = iy0 + ky * ${dh};
                    if (iy < 0 || iy >= ${h}) continue;
                    for (int kx = 0; kx < ${kw}; ++kx) {
                        const int ix = ix0 + kx * ${dw};
                        if (ix < 0 || ix >= ${w}) continue;
                        const ${t} v = xc[iy * ${w} + ix];
% if is_max:
                        acc = v > acc ? v : acc;
% else:
                        acc += v;
                        ++count;
% endif
                    }
                }
% if is_max:
                yc[oy * ${ow} + ox] = acc;
% elif p['count_include_pad']:
<%doc> the window clipped to the padded input, which ends pb (pr) past the input </%doc>\
                {
                    const int y1 = iy0 + ${(kh - 1) * dh + 1} < ${h + p['pb']} ? iy0 + ${(kh - 1) * dh + 1} : ${h + p['pb']};
                    const int x1 = ix0 + ${(kw - 1) * dw + 1} < ${w + p['pr']} ? ix0 + ${(kw - 1) * dw + 1} : ${w + p['pr']};
                    (void)count;
                    yc[oy * ${ow} + ox] = acc / (float)((y1 - iy0) * (x1 - ix0));
                }
% else:
                yc[oy * ${ow} + ox] = count ? acc / (float)count : 0.0f;
% endif
            }
        }
% if p.get('in_place'):
        memcpy(y + (size_t)nc * ${oh * ow}u, yc, ${oh * ow}u * sizeof(${t}));
% endif
    }
}

<%doc>
  Quantized average pool, in onnxruntime's float32 arithmetic: each input dequantized,
  summed in window order, divided by the count, then quantized (y / y_scale + zero point,
  rounded half to even). The window is clipped to the input; count_include_pad counts the
  whole kernel. ``in_place``: y may be x; each channel is pooled into scratch, then copied
  over y's channel (see ops/qlinear/in_place.py).
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
<%
    n, c, h, w, oh, ow = p['n'], p['c'], p['h'], p['w'], p['oh'], p['ow']
    kh, kw, sh, sw, pt, pl = p['kh'], p['kw'], p['sh'], p['sw'], p['pt'], p['pl']
%>\
${qh.round_even(model)}
${signature}
{
    for (int nc = 0; nc < ${n * c}; ++nc) {
        const size_t xc = (size_t)nc * ${h * w}u;
% if p.get('in_place'):
        ${p['y_type']} *const yc = (${p['y_type']} *)scratch; /* copied over y's channel once x's is read */
% else:
        ${p['y_type']} *const yc = y + (size_t)nc * ${oh * ow}u;
% endif
        for (int oy = 0; oy < ${oh}; ++oy) {
            int y0 = oy * ${sh} - ${pt};
            const int y1 = y0 + ${kh} < ${h} ? y0 + ${kh} : ${h};
            y0 = y0 > 0 ? y0 : 0;
            for (int ox = 0; ox < ${ow}; ++ox) {
                int x0 = ox * ${sw} - ${pl};
                const int x1 = x0 + ${kw} < ${w} ? x0 + ${kw} : ${w};
                x0 = x0 > 0 ? x0 : 0;
                float sum = 0.0f;
                for (int iy = y0; iy < y1; ++iy)
                    for (int ix = x0; ix < x1; ++ix)
                        sum += ${c_float(p['x_scale'])} * (float)((int32_t)x[xc + (size_t)(iy * ${w} + ix)] - ${p['x_zp']});
% if p['count_include_pad']:
                sum /= ${c_float(kh * kw)};
% else:
                sum /= (float)((y1 - y0) * (x1 - x0));
% endif
                float v = sum / ${c_float(p['y_scale'])} + ${c_float(p['y_zp'])};
                v = v < ${c_float(p['lo'])} ? ${c_float(p['lo'])} : v > ${c_float(p['hi'])} ? ${c_float(p['hi'])} : v;
                yc[oy * ${ow} + ox] = ${model}_round_even(v);
            }
        }
% if p.get('in_place'):
        memcpy(y + (size_t)nc * ${oh * ow}u, yc, ${oh * ow}u);
% endif
    }
}

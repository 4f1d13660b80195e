<%doc>
  Quantized depthwise NCHW convolution on int16 pairs (ops/qlinear/q15.py): each channel is
  copied into scratch as an int16 plane, zero-padded on every side the windows read, with
  the input zero point subtracted; then two outputs of a row at a time (their windows
  overlap: the compiler loads shared pairs once), each window's taps a pair of row
  neighbours per SMLAD against the channel's weight pairs (an odd row's last tap one
  multiply-add). Without the DSP extension, or with a dilation along the rows, one tap at
  a time in C. Then the fast exact requantization.
  ``in_place``: y may be x: a channel of y is written after its channel of x is copied,
  and lies within channels 0..k of x when a channel does not grow.
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
<%
    n, c, h, w = p['n'], p['c'], p['h'], p['w']
    oh, ow, kh, kw = p['oh'], p['ow'], p['kh'], p['kw']
    sh, sw, dh, dw, pt, pl = p['sh'], p['sw'], p['dh'], p['dw'], p['pt'], p['pl']
    ph, pw, zx = p['ph'], p['pw'], p['x_zp']
    rows, cols = min(h, ph - pt), min(w, pw - pl)  # the input rows and columns a window reads
    pairs_ok = dw == 1 and kw > 1  # row taps side by side: pairs of them per SMLAD
%>\
${qh.conv_helpers(model, p)}
<%def name="taps(acc, off, dsp=True)">\
<%doc> The window of the output whose taps start at win + off, summed into acc (``dsp``: with
  the DSP extension where the compiler has it). </%doc>\
% if pairs_ok and dsp:
#if defined(__ARM_FEATURE_DSP)
% for ky in range(kh):
% for j in range(kw // 2):
                    ${acc} = ${model}_smlad(${model}_load_pair(win + ${off + ky * dh * pw + 2 * j}), w${ky}_${j}, ${acc});
% endfor
% if kw % 2:
                    ${acc} += win[${off + ky * dh * pw + kw - 1}] * w${ky}_last;
% endif
% endfor
#else
% endif
                    for (int ky = 0; ky < ${kh}; ++ky)
                        for (int kx = 0; kx < ${kw}; ++kx)
                            ${acc} += (int32_t)win[${off} + ky * ${dh * pw} + kx * ${dw}] * wc[ky * ${kw} + kx];
% if pairs_ok and dsp:
#endif
% endif
</%def>\
${signature}
{
    int16_t *const plane = (int16_t *)scratch; /* ${ph} x ${pw} int16 */
    memset(plane, 0, ${ph * pw * 2}u); /* the padding stays 0 for every channel */
% if rows <= 0 or cols <= 0:
    (void)x;  /* every window reads only padding: the plane stays zero */
% endif
    for (int nb = 0; nb < ${n}; ++nb) {
        for (int ch = 0; ch < ${c}; ++ch) {
            const size_t plane_index = (size_t)nb * ${c} + (size_t)ch;
% if rows > 0 and cols > 0:
            const ${p['x_type']} *const xc = x + plane_index * ${h * w}u;
            for (int iy = 0; iy < ${rows}; ++iy) {
                int16_t *const d = plane + (size_t)(iy + ${pt}) * ${pw}u + ${pl}u;
                const ${p['x_type']} *const s = xc + (size_t)iy * ${w}u;
% if cols <= 16:
% for ix in range(cols):
                d[${ix}] = (int16_t)((int32_t)s[${ix}] - ${zx});
% endfor
% else:
                for (int ix = 0; ix < ${cols}; ++ix)
                    d[ix] = (int16_t)((int32_t)s[ix] - ${zx});
% endif
            }
% endif
            const int8_t *const wc = w + (size_t)ch * ${kh * kw}u;
% if pairs_ok:
#if defined(__ARM_FEATURE_DSP)
% for ky in range(kh):
% for j in range(kw // 2):
            const uint32_t w${ky}_${j} = (uint32_t)(uint16_t)(int16_t)wc[${ky * kw + 2 * j}] | (uint32_t)(uint16_t)(int16_t)wc[${ky * kw + 2 * j + 1}] << 16;
% endfor
% if kw % 2:
            const int32_t w${ky}_last = wc[${ky * kw + kw - 1}];
% endif
% endfor
#endif
% endif
            const int32_t bias = ${'b[ch]' if p['bias'] else '0'};
            const size_t yc = plane_index * ${oh * ow}u;
            for (int oy = 0; oy < ${oh}; ++oy) {
                const int16_t *const r0 = plane + (size_t)(oy * ${sh}) * ${pw}u;
                size_t yi = yc + (size_t)(oy * ${ow});
                for (int ox = 0; ox < ${ow - ow % 2}; ox += 2, yi += 2) {
                    const int16_t *const win = r0 + ox * ${sw};
                    int32_t a0 = bias, a1 = bias;
% if pairs_ok and sw == 1 and kw % 2:
#if defined(__ARM_FEATURE_DSP)
% for ky in range(kh):
% for j in range(kw // 2):
                    a0 = ${model}_smlad(${model}_load_pair(win + ${ky * dh * pw + 2 * j}), w${ky}_${j}, a0);
                    a1 = ${model}_smlad(${model}_load_pair(win + ${1 + ky * dh * pw + 2 * j}), w${ky}_${j}, a1);
% endfor
                    {   /* the odd last taps of both windows: one pair */
                        const uint32_t last = ${model}_load_pair(win + ${ky * dh * pw + kw - 1});
                        a0 = __smlabb((int32_t)last, w${ky}_last, a0);
                        a1 = __smlatb((int32_t)last, w${ky}_last, a1);
                    }
% endfor
#else
${taps('a0', 0, False)}\
${taps('a1', sw, False)}\
#endif
% else:
${taps('a0', 0)}\
${taps('a1', sw)}\
% endif
                    y[yi] = ${qh.conv_output(model, p, 'a0', 'ch', 'yi')};
                    y[yi + 1] = ${qh.conv_output(model, p, 'a1', 'ch', 'yi + 1')};
                }
% if ow % 2:
                {
                    const int16_t *const win = r0 + ${(ow - 1) * sw};
                    int32_t a0 = bias;
${taps('a0', 0)}\
                    y[yi] = ${qh.conv_output(model, p, 'a0', 'ch', 'yi')};
                }
% endif
            }
        }
    }
}

<%doc>
  Quantized depthwise NCHW convolution on int16 pairs (ops/qlinear/q15.py): each channel is
  copied into scratch as an int16 plane, zero-padded on every side the windows read, with
  the input zero point subtracted (four bytes per step with the SIMD32 extension); then
  each output row in two passes: the sums of a few neighbouring outputs at a time into a
  row of int32 (their windows overlap: pair_plan loads each pair of taps they share once,
  two row neighbours per SMLAD against the channel's weight pairs, an odd row's last tap
  by SMLAxB from a pair loaded anyway), then the row requantized (the fast exact path,
  the sums times 256 where requantize_scaled may take them: the weights and bias scaled
  once per channel). Without the DSP extension, or with a dilation along the rows, the
  same sums a tap at a time, unrolled, the channel's taps (scaled) in locals.
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
    group = 4 if sw == 1 else 2  # outputs summed per step: their windows share pairs
    plane_bytes = p['plane_bytes']  # the plane and a pair of slack (see pair_plan)
    scale = 256 if qh.attr.scaled(p) else 1  # the sums times 256: one multiply less each

    def pair_plan(count):
        """Per kernel row: the pairs of the plane to load (offsets in the window of the
        first output) and the multiply-adds, (output, intrinsic, pair, weight): the pairs
        of taps two at a time by SMLAD, an odd last tap by SMLAxB with the top or bottom
        half of a pair loaded anyway (else of the pair it starts: its second half may be
        the slack after the plane's end, multiplied by nothing)."""
        loads, ops = [], []
        for ky in range(kh):
            offs, row = [], []
            for g in range(count):
                for j in range(kw // 2):
                    o = g * sw + 2 * j
                    offs += [o] if o not in offs else []
                    row.append((g, "__smlad", o, f"w{ky}_{j}"))
            for g in range(count if kw % 2 else 0):
                t = g * sw + kw - 1
                if t - 1 in offs:
                    row.append((g, "__smlatb", t - 1, f"w{ky}_last"))
                else:
                    offs += [t] if t not in offs else []
                    row.append((g, "__smlabb", t, f"w{ky}_last"))
            loads.append(offs)
            ops.append(row)
        return loads, ops
%>\
${qh.conv_helpers(model, p)}
<%def name="sums(count, ox)">\
<%doc> The sums of ``count`` neighbouring outputs of the row from column ox into row[]. </%doc>\
                {
                    const int16_t *const win = r0 + (${ox}) * ${sw};
% if pairs_ok:
#if defined(__ARM_FEATURE_DSP)
<% loads, ops = pair_plan(count) %>\
% for g in range(count):
                    int32_t a${g} = bias;
% endfor
% for ky in range(kh):
% for off in loads[ky]:
                    const uint32_t p${ky}_${off} = ${model}_load_pair(win + ${ky * dh * pw + off});
% endfor
% for g, op, pair, weight in ops[ky]:
                    a${g} = ${op}((int32_t)p${ky}_${pair}, (int32_t)${weight}, a${g});
% endfor
% endfor
% for g in range(count):
                    row[${ox} + ${g}] = a${g};
% endfor
#else
% endif
% for g in range(count):
                    int32_t a${g} = bias;
% endfor
% for ky in range(kh):
% for kx in range(kw):
% for g in range(count):
                    a${g} += (int32_t)win[${g * sw + ky * dh * pw + kx * dw}] * k${ky}_${kx};
% endfor
% endfor
% endfor
% for g in range(count):
                    row[${ox} + ${g}] = a${g};
% endfor
% if pairs_ok:
#endif
% endif
                }
</%def>\
${signature}
{
    int16_t *const plane = (int16_t *)scratch; /* ${ph} x ${pw} int16 */
    int32_t *const row = (int32_t *)((unsigned char *)scratch + ${plane_bytes}u); /* a row's sums */
    memset(plane, 0, ${plane_bytes}u); /* the padding stays 0 for every channel */
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
                ${model}_widen_${'u' if p['x_type'] == 'uint8_t' else 's'}8(d, s, ${cols}, ${zx});
            }
% endif
            const int8_t *const wc = w + (size_t)ch * ${kh * kw}u;
% if pairs_ok:
#if defined(__ARM_FEATURE_DSP)
% for ky in range(kh):
% for j in range(kw // 2):
            const uint32_t w${ky}_${j} = (uint32_t)(uint16_t)(int16_t)(wc[${ky * kw + 2 * j}] * ${scale}) | (uint32_t)(uint16_t)(int16_t)(wc[${ky * kw + 2 * j + 1}] * ${scale}) << 16;
% endfor
% if kw % 2:
            const int32_t w${ky}_last = wc[${ky * kw + kw - 1}] * ${scale};
% endif
% endfor
#endif
% endif
% if pairs_ok:
#if !defined(__ARM_FEATURE_DSP)
% endif
% for ky in range(kh):
            const int32_t ${', '.join(f'k{ky}_{kx} = wc[{ky * kw + kx}] * {scale}' for kx in range(kw))};
% endfor
% if pairs_ok:
#endif
% endif
            const int32_t bias = ${f'b[ch] * {scale}' if p['bias'] else '0'};
${qh.fold_locals(model, p, 'ch', 0)}\
            size_t yi = plane_index * ${oh * ow}u;
            for (int oy = 0; oy < ${oh}; ++oy) {
                const int16_t *const r0 = plane + (size_t)(oy * ${sh}) * ${pw}u;
% if ow >= group:
                for (int ox = 0; ox < ${ow - ow % group}; ox += ${group}) {
${sums(group, 'ox')}\
                }
% endif
% if ow % group:
${sums(ow % group, str(ow - ow % group))}\
% endif
                for (int ox = 0; ox < ${ow - ow % 2}; ox += 2, yi += 2) {
                    y[yi] = ${qh.conv_output(model, p, 'row[ox]', 'ch', 'yi', 0, scale == 256)};
                    y[yi + 1] = ${qh.conv_output(model, p, 'row[ox + 1]', 'ch', 'yi + 1', 0, scale == 256)};
                }
% if ow % 2:
                y[yi] = ${qh.conv_output(model, p, f'row[{ow - 1}]', 'ch', 'yi', 0, scale == 256)};
                ++yi;
% endif
            }
        }
    }
}

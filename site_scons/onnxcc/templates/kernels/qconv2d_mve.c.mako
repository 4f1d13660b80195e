<%doc>
  Quantized 1x1 convolution (stride 1, no pads, one group) and QGemm (``matrix``: x's rows
  are the pixels, y is [pixels][channels]) on Helium (ops/qlinear/mve.py). Each output
  channel's starting sum once per call: its bias less zx' * sum(w), where x' = x - 128
  for uint8 codes (x ^ 0x80 as int8) and x' = x for int8, so that sum(x' * w) from it is
  the reference's sum((x - zx) * w). Then per block of ``block`` pixels: their inputs
  copied into scratch as int8, pixel-major, a pair of pixels' runs of 16 channels side
  by side ([pair][k16 / 16][2][16]; the padding channels meet weights of 0); then 4
  output channels (packed weights, ops/common/packing.py "lanes") by 2 pixels per step,
  one VMLADAVA.S8 per channel and pixel; each sum requantized as the reference does:
  a pixel's 4 channels at once (qhelpers.mako requantize_folded_x4, a lane near a tie
  by the exact path) where the requantization is folded, else one by one (conv_output,
  with a fused QLinearAdd's residual).
  ``in_place`` (1x1 only): y may be x, as in qconv2d_q15.
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
<%
    n, c, m = p['n'], p['c'], p['m']
    k16, block = p['k16'], p['block']
    pixels = p['oh'] * p['ow']
    matrix = p.get('matrix', False)
    unsigned = p['x_type'] == 'uint8_t'
    zx = p['x_zp'] - (128 if unsigned else 0)  # the zero point of x'
    steps = k16 // 16
    # y's element of channel oc, pixel p0 + j; its step from one pixel to the next
    ystep, ychannel = (m, 1) if matrix else (1, pixels)
    col_bytes = -(-block // 2) * 2 * k16
    # pixel i of 8 from an even one: its byte in the pairs' layout
    pair_offsets = ", ".join(str(i // 2 * 2 * k16 + i % 2 * 16) for i in range(8))
    # a pixel's 4 channels requantized in the lanes of a vector
    lanes = qh.attr.folded(p) and not p['residual']
    ysign = 'u' if p['y_type'] == 'uint8_t' else 's'
    even = ['r0', 'r2', 'r4', 'r6', 'r8', 'r10', 'r12', 'lr']  # the registers VMLADAVA sums in
%>\
${qh.conv_helpers(model, p)}
% if lanes:
${qh.requantize_folded_x4(model)}
% endif
#include <arm_mve.h>
<%def name="y_index(oc, j)">(size_t)yb + (size_t)(${oc}) * ${ychannel}u + (size_t)(p0 + ${j}) * ${ystep}u</%def>\
<%def name="tile(rows, count)">\
<%doc> Channels oc .. oc + rows - 1 by ``count`` (1 or 2) pixels from j: their sums over
  the k16 / 16 runs, then requantized. </%doc>\
                {
                    const int8_t *wp = wb, *xp = col + (size_t)j * ${k16}u;
% if rows == 4 and count == 2:
                    int32_t ${', '.join(f'a{r}{i}' for r in range(4) for i in range(2))};
                    {   /* VMLADAVA sums in an even register: the 8 sums in the 8 there are
                         * (with lr), where gcc shuffles them between steps of C; register
                         * variables only for the asm (a call, the exact path, may clobber them) */
% for r in range(4):
                        register int32_t e${r}0 __asm__("${even[2 * r]}") = s${r}, e${r}1 __asm__("${even[2 * r + 1]}") = s${r};
% endfor
                        uint32_t t = ${steps}u;
                        __asm__("1:\n\t"
                                "vldrb.8 q0, [%[xp]], #16\n\t"
                                "vldrb.8 q1, [%[xp]], #16\n\t"
% for r in range(4):
                                "vldrb.8 q2, [%[wp]], #16\n\t"
                                "vmladava.s8 %[e${r}0], q2, q0\n\t"
                                "vmladava.s8 %[e${r}1], q2, q1\n\t"
% endfor
                                "subs %[t], %[t], #1\n\t"
                                "bne 1b\n\t"
                                : ${', '.join(f'[e{r}{i}] "+r"(e{r}{i})' for r in range(4) for i in range(2))},
                                  [wp] "+r"(wp), [xp] "+r"(xp), [t] "+r"(t)
                                :
                                : "q0", "q1", "q2", "cc", "memory");
% for r in range(4):
                        a${r}0 = e${r}0;
                        a${r}1 = e${r}1;
% endfor
                    }
% else:
% for r in range(rows):
                    int32_t ${', '.join(f'a{r}{i} = s{r}' for i in range(count))};
% endfor
                    for (int t = 0; t < ${steps}; ++t, wp += 64, xp += 32) {
                        const int8x16_t ${', '.join(f'x{i} = vld1q_s8(xp + {16 * i})' for i in range(count))};
% for r in range(rows):
                        const int8x16_t w${r} = vld1q_s8(wp + ${16 * r});
% for i in range(count):
                        a${r}${i} = vmladavaq_s8(a${r}${i}, w${r}, x${i});
% endfor
% endfor
                    }
% endif
% if lanes:
<%
    full = (1 << 4 * rows) - 1  # the predicate bits of the rows' lanes
    store = f"vstrbq_scatter_offset_{'' if rows == 4 else 'p_'}{ysign}32"
%>\
% for i in range(count):
                    {
                        mve_pred16_t fine;
                        const int32x4_t q = ${model}_requantize_folded_x4((int32x4_t){${', '.join([f'a{r}{i}' for r in range(rows)] + ['0'] * (4 - rows))}},
                            m7v, cv, fv, ${p['fast']}, ${int(p['wide'])}, ${p['lo']}, ${p['hi']}, &fine);
                        ${p['y_type']} *const yp = y + ${y_index('oc', f'j + {i}')};
                        if ((fine & ${full}u) == ${full}u)
                            ${store}(yp, ystep, ${'q' if ysign == 's' else 'vreinterpretq_u32_s32(q)'}${'' if rows == 4 else f', vctp32q({rows}u)'});
                        else {  /* near a tie: the exact path */
% for r in range(rows):
                            yp[${r * ychannel}] = (${p['y_type']})${model}_requantize_slow(a${r}${i}, (uint32_t)mult[oc + ${r}], shift[oc + ${r}], ${p['y_zp']}, ${p['lo']}, ${p['hi']});
% endfor
                        }
                    }
% endfor
% else:
% for r in range(rows):
% for i in range(count):
                    {
                        const size_t yi = ${y_index(f'oc + {r}', f'j + {i}')};
                        y[yi] = ${qh.conv_output(model, p, f'a{r}{i}', f'oc + {r}', 'yi', r)};
                    }
% endfor
% endfor
% endif
                }
</%def>\
<%def name="channels(rows, count)">\
<%doc> Channels oc .. oc + rows - 1 over the ``count`` pixels of the block. </%doc>\
                const int8_t *const wb = w + (size_t)oc * ${k16}u;
% for r in range(rows):
${qh.fold_locals(model, p, f'oc + {r}', r)}\
                const int32_t s${r} = start[oc + ${r}];
% endfor
% if lanes:
<% pad = ['0'] * (4 - rows) %>\
                const int32x4_t m7v = {${', '.join([f'm7{r}' for r in range(rows)] + pad)}};
                const int32x4_t cv = {${', '.join([f'c{r}' for r in range(rows)] + pad)}};
                const int32x4_t fv = {${', '.join([f'f{r}' for r in range(rows)] + pad)}};
% endif
                for (int j = 0; j < ${count - count % 2}; j += 2)
${tile(rows, 2)}\
% if count % 2:
                {
                    const int j = ${count - 1};
${tile(rows, 1)}\
                }
% endif
</%def>\
<%def name="copy(count)">\
% if matrix:
            /* the rows from p0, 16 channels per step */
            for (int j = 0; j < ${count}; ++j) {
                const ${p['x_type']} *const s = x + (size_t)(p0 + j) * ${c}u;
                int8_t *const d = col + (size_t)(j >> 1) * ${2 * k16}u + (size_t)(j & 1) * 16u;
                for (int ic = 0; ic < ${c}; ic += 16) {
                    const mve_pred16_t in = vctp8q((uint32_t)(${c} - ic));
% if unsigned:
                    const uint8x16_t v = veorq_u8(vldrbq_z_u8(s + ic, in), vdupq_n_u8(0x80));
                    vstrbq_p_u8((uint8_t *)d + (size_t)ic * 2u, v, in);
% else:
                    vstrbq_p_s8(d + (size_t)ic * 2u, vldrbq_z_s8(s + ic, in), in);
% endif
                }
            }
% else:
            /* the ``count`` pixels from p0, 8 of one channel per step (scattered) */
            for (int ic = 0; ic < ${c}; ++ic) {
                const ${p['x_type']} *const s = xb + (size_t)ic * ${pixels}u + (size_t)p0;
                int8_t *const d = col + (size_t)(ic >> 4) * 32u + (size_t)(ic & 15);
                for (int j = 0; j < ${count}; j += 8) {
                    const mve_pred16_t in = vctp16q((uint32_t)(${count} - j));
% if unsigned:
                    const uint16x8_t v = veorq_u16(vldrbq_z_u16(s + j, in), vdupq_n_u16(0x80));
                    vstrbq_scatter_offset_p_u16((uint8_t *)d + (size_t)j * ${k16}u, offsets, v, in);
% else:
                    vstrbq_scatter_offset_p_s16(d + (size_t)j * ${k16}u, offsets, vldrbq_z_s16(s + j, in), in);
% endif
                }
            }
% endif
</%def>\
<%def name="run(count)">\
${copy(count)}\
% if m >= 4:
            for (int oc = 0; oc < ${m - m % 4}; oc += 4) {
${channels(4, count)}\
            }
% endif
% if m % 4:
            {
                const int oc = ${m - m % 4};
${channels(m % 4, count)}\
            }
% endif
</%def>\
${signature}
{
    /* each output channel's starting sum, then the block's inputs */
    int32_t *const start = (int32_t *)scratch;
    int8_t *const col = (int8_t *)scratch + ${4 * m}u;
% if not matrix:
    const uint16x8_t offsets = {${pair_offsets}};
% endif
% if lanes:
    /* a pixel's outputs of 4 channels */
    const uint32x4_t ystep = {0, ${ychannel}, ${2 * ychannel}, ${3 * ychannel}};
% endif
    /* the channels past C (weights 0) and an odd last pixel's partner: defined values */
    memset(col, 0, ${col_bytes}u);
    for (int oc = 0; oc < ${m}; ++oc) {
% if zx:
        /* sum(w), from the packed rows (4 rows, 16 taps of each in turn) */
        const int8_t *wr = w + (size_t)(oc >> 2) * ${4 * k16}u + (size_t)(oc & 3) * 16u;
        int32_t sw = 0;
        for (int t = 0; t < ${steps}; ++t, wr += 64)
            sw = vaddvaq_s8(sw, vld1q_s8(wr));
        start[oc] = (int32_t)((uint32_t)${'b[oc]' if p['bias'] else '0'} - (uint32_t)sw * ${zx & 0xffffffff}u);
% else:
        start[oc] = ${'b[oc]' if p['bias'] else '0'};
% endif
    }
    for (int nb = 0; nb < ${n}; ++nb) {
% if not matrix:
        const ${p['x_type']} *const xb = x + (size_t)nb * ${c * pixels}u;
% endif
        const size_t yb = (size_t)nb * ${m * pixels}u;
% if pixels >= block:
        for (int p0 = 0; p0 < ${pixels - pixels % block}; p0 += ${block}) {
${run(block)}\
        }
% endif
% if pixels % block:
        {
            const int p0 = ${pixels - pixels % block};
${run(pixels % block)}\
        }
% endif
    }
}

<%doc>
  Quantized NCHW convolution (group 1) as a GEMM on int16 pairs, the DSP extension's way
  (ops/qlinear/q15.py): the windows of two output pixels are copied into scratch as int16
  columns with the input zero point subtracted (padding is 0: it adds nothing), then
  every pair of output channels takes the dot products of its two weight rows with the
  two columns, four sums in registers: per 4 taps, one word of int8 weights per row
  widened by SXTB16 (the rows were packed k0 k2 k1 k3: ops/common/packing.py "pairs") and two
  SMLADs per sum (in inline assembly on Thumb-2). Without the DSP extension the same sums
  in plain C. Columns and weight rows are interleaved so that one step reads 8 bytes of
  weights and 16 of columns, contiguous. Each sum is then
  requantized (the fast exact path) and, with a fused QLinearAdd, added to the residual.
  The weight rows are padded to a multiple of 4 taps (the columns' tail is 0) and to an
  even count of rows. An odd pixel count's last pixel (or a single one) is one column
  alone, two rows x one column per step. ``matrix`` (QGemm): the columns are x's rows
  and y is [pixels][channels].
  ``in_place`` (1x1 only): y may be x; both columns are read before their pixels of y
  are written (see ops/qlinear/in_place.py).
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
<%! import math %>\
<%
    n, c, h, w = p['n'], p['c'], p['h'], p['w']
    m, oh, ow, kh, kw = p['m'], p['oh'], p['ow'], p['kh'], p['kw']
    sh, sw, dh, dw, pt, pl = p['sh'], p['sw'], p['dh'], p['dw'], p['pt'], p['pl']
    k, k4, zx = p['k'], p['k4'], p['x_zp']
    px_count = oh * ow
    pointwise = p['pointwise']
    matrix = p.get('matrix', False)  # QGemm: pixel i is row i of x ([pixels][k]), y [pixels][m]
    # a window inside x (most pixels): fixed offsets, whole words of taps per round of
    # ``period`` input channels; its taps (offset in x, position in the column)
    interior = not (matrix or pointwise) and h - 1 - (kh - 1) * dh >= 0 and w - 1 - (kw - 1) * dw >= 0
    period = 4 // math.gcd(kh * kw, 4)

    def chunk(step):  # step: int16 of the columns per 4 taps (8: two interleaved, 4: one)
        taps = []
        for r in range(period * kh * kw):
            ic, rest = divmod(r, kh * kw)
            taps.append((ic * h * w + (rest // kw) * dh * w + (rest % kw) * dw,
                         (r >> 2) * step + (r & 3)))
        return taps

    def bias(oc):
        return f"b[{oc}]" if p['bias'] else "0"

    # per-channel tables with the folded requantization: each channel's constants once
    # per pair of outputs, in locals (see qhelpers.mako requantize_folded)
    folded = p.get('fast') and p.get('fold') and p['mult'] is None
%>\
${qh.conv_helpers(model, p)}
<%def name="column(j, px, step)">\
<%doc> Column j (0 or 1) of the pixel px: tap t at col[8 * (t / 4) + 4 * j + t % 4] (one
  column: col[t]). </%doc>\
% if matrix or pointwise:
<%
    # the pixel's C inputs: a row of x (matrix) or one pixel of every channel (1x1)
    start, stride = (f"(size_t)({px}) * {c}u", 1) if matrix else (f"({px})", h * w)
%>\
            {
                const ${p['x_type']} *s = xb + ${start};
                int16_t *d = col + ${4 * j};
                for (int g = 0; g < ${c // 4}; ++g, d += ${step}, s += ${4 * stride}) {
% for i in range(4):
                    d[${i}] = (int16_t)((int32_t)s[${i * stride}] - ${zx});
% endfor
                }
% for i in range(c % 4):
                d[${i}] = (int16_t)((int32_t)s[${i * stride}] - ${zx});
% endfor
            }
% else:
            {
                const int oy = (${px}) / ${ow}, ox = (${px}) % ${ow};
% if interior:
                const int iy0 = oy * ${sh} - ${pt}, ix0 = ox * ${sw} - ${pl};
                if (iy0 >= 0 && iy0 <= ${h - 1 - (kh - 1) * dh} && ix0 >= 0 && ix0 <= ${w - 1 - (kw - 1) * dw}) {
                    /* the whole window inside x: every tap a load at a fixed offset, ${period}
                     * input channel(s) per round (whole words of taps) */
                    const ${p['x_type']} *s = xb + (size_t)iy0 * ${w}u + (size_t)ix0;
                    int16_t *d = col + ${4 * j};
                    for (int g = 0; g < ${c // period}; ++g, s += ${period * h * w}, d += ${step * period * kh * kw // 4}) {
% for src, dst in chunk(step):
                        d[${dst}] = (int16_t)((int32_t)s[${src}] - ${zx});
% endfor
                    }
% for src, dst in chunk(step)[:(c % period) * kh * kw]:
                    d[${dst}] = (int16_t)((int32_t)s[${src}] - ${zx});
% endfor
                } else
% endif
                {
                int t = 0;
                for (int ic = 0; ic < ${c}; ++ic) {
                    for (int ky = 0; ky < ${kh}; ++ky) {
                        const int iy = oy * ${sh} - ${pt} + ky * ${dh};
                        const int row = iy >= 0 && iy < ${h};
                        const size_t xr = (size_t)ic * ${h * w}u + (size_t)(row ? iy : 0) * ${w}u;
                        for (int kx = 0; kx < ${kw}; ++kx, ++t) {
                            const int ix = ox * ${sw} - ${pl} + kx * ${dw};
                            col[${step} * (t >> 2) + ${4 * j} + (t & 3)] = row && ix >= 0 && ix < ${w}
                                ? (int16_t)((int32_t)xb[xr + (size_t)ix] - ${zx}) : 0;
                        }
                    }
                }
                }
            }
% endif
</%def>\
<%def name="store(acc, oc, px, row)">\
<% yi = f"yb + (size_t)({px}) * {m}u + (size_t)({oc})" if matrix else f"yb + (size_t)({oc}) * {px_count}u + (size_t)({px})" %>\
                    {
                        const size_t yi = ${yi};
                        y[yi] = ${qh.conv_output(model, p, acc, oc, 'yi', (f"m7{row}", f"c{row}", f"f{row}") if folded else None)};
                    }
</%def>\
<%def name="fold_constants(oc, row)">\
% if folded:
                const int32_t m7${row} = (int32_t)((uint32_t)mult[${oc}] << 7), f${row} = shift[${oc}] - 17,
                              c${row} = ${model}_fold_bias(shift[${oc}], ${p['y_zp']});
% endif
</%def>\
<%def name="channels(cols, px)">\
<%doc> Every pair of output channels against ``cols`` (1 or 2) columns of pixels px, px + 1. </%doc>\
            for (int oc = 0; oc < ${m}; oc += 2) {
                const int8_t *wp = w + (size_t)oc * ${k4}u; /* rows oc and oc + 1, interleaved */
                const int16_t *cp = col;
                int32_t a00 = ${bias('oc')}, a01 = a00;
% if m % 2:
                int32_t a10 = oc + 1 < ${m} ? ${bias('oc + 1')} : 0, a11 = a10;
% else:
                int32_t a10 = ${bias('oc + 1')}, a11 = a10;
% endif
#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)
                {
% if cols == 1:
                    /* 8 multiply-accumulates in 11 instructions per step */
% else:
                    /* 16 multiply-accumulates in 16 instructions per step, two steps per
                     * round; the loop is in the assembly too: gcc shuffles the 13 live
                     * registers of the tile when it schedules the intrinsics, or an asm
                     * step in a C loop */
% endif
                    uint32_t wa, wb, x0, x1, u0, u1, steps = ${k4 // 8}u;
<%
    body = ['"ldrd %[wa], %[wb], [%[wp]], #8\\n\\t"',
            '"ldrd %[x0], %[x1], [%[cp]], #8\\n\\t"',
            '"sxtb16 %[u0], %[wa]\\n\\t"',
            '"sxtb16 %[wa], %[wa], ror #8\\n\\t"',
            '"sxtb16 %[u1], %[wb]\\n\\t"',
            '"sxtb16 %[wb], %[wb], ror #8\\n\\t"',
            '"smlad %[a00], %[u0], %[x0], %[a00]\\n\\t"',
            '"smlad %[a00], %[wa], %[x1], %[a00]\\n\\t"',
            '"smlad %[a10], %[u1], %[x0], %[a10]\\n\\t"',
            '"smlad %[a10], %[wb], %[x1], %[a10]\\n\\t"']
    if cols == 2:
        body += ['"ldrd %[x0], %[x1], [%[cp]], #8\\n\\t"',
                 '"smlad %[a01], %[u0], %[x0], %[a01]\\n\\t"',
                 '"smlad %[a01], %[wa], %[x1], %[a01]\\n\\t"',
                 '"smlad %[a11], %[u1], %[x0], %[a11]\\n\\t"',
                 '"smlad %[a11], %[wb], %[x1], %[a11]\\n\\t"']
    # two steps per round of the loop; an odd step first
    code = (body if (k4 // 4) % 2 else []) + (['"1:\\n\\t"'] + body + body
             + ['"subs %[steps], %[steps], #1\\n\\t"', '"bne 1b\\n\\t"'] if k4 // 8 else [])
%>\
                    __asm__(${'\n                            '.join(code)}
                            : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11),
                              [wp] "+r"(wp), [cp] "+r"(cp), [steps] "+r"(steps), [wa] "=&r"(wa),
                              [wb] "=&r"(wb), [x0] "=&r"(x0), [x1] "=&r"(x1), [u0] "=&r"(u0),
                              [u1] "=&r"(u1)
                            :
                            : "cc", "memory");
                }
#else
                for (int t = 0; t < ${k4 // 4}; ++t) {
                    /* the packed order: wp[1] is tap 2, wp[2] tap 1 */
                    const int32_t x0 = cp[0], x1 = cp[1], x2 = cp[2], x3 = cp[3];
                    const int32_t u0 = wp[0], u2 = wp[1], u1 = wp[2], u3 = wp[3];
                    const int32_t v0 = wp[4], v2 = wp[5], v1 = wp[6], v3 = wp[7];
                    a00 += x0 * u0 + x1 * u1 + x2 * u2 + x3 * u3;
                    a10 += x0 * v0 + x1 * v1 + x2 * v2 + x3 * v3;
% if cols == 2:
                    const int32_t z0 = cp[4], z1 = cp[5], z2 = cp[6], z3 = cp[7];
                    a01 += z0 * u0 + z1 * u1 + z2 * u2 + z3 * u3;
                    a11 += z0 * v0 + z1 * v1 + z2 * v2 + z3 * v3;
% endif
                    wp += 8;
                    cp += ${4 * cols};
                }
#endif
% if cols == 1:
                (void)a01;
                (void)a11;
% endif
${fold_constants('oc', 0)}\
${store('a00', 'oc', px, 0)}\
% if cols == 2:
${store('a01', 'oc', f'{px} + 1', 0)}\
% endif
% if m % 2:
                if (oc + 1 < ${m}) {
% endif
${fold_constants('oc + 1', 1)}\
${store('a10', 'oc + 1', px, 1)}\
% if cols == 2:
${store('a11', 'oc + 1', f'{px} + 1', 1)}\
% endif
% if m % 2:
                }
% endif
            }
</%def>\
${signature}
{
    /* two columns of ${k4} int16, interleaved by 4 taps (8 per step of the sums), or one */
    int16_t *const col = (int16_t *)scratch;
% if k4 > k and px_count >= 2:
    memset(col + ${(k4 - 4) * 2}, 0, 16u); /* the taps the weight rows were padded with */
% endif
    for (int nb = 0; nb < ${n}; ++nb) {
        const ${p['x_type']} *const xb = x + (size_t)nb * ${c * h * w}u;
        const size_t yb = (size_t)nb * ${m * px_count}u;
% if px_count >= 2:
        for (int px = 0; px < ${px_count - px_count % 2}; px += 2) {
${column(0, 'px', 8)}\
${column(1, 'px + 1', 8)}\
${channels(2, 'px')}\
        }
% endif
% if px_count % 2:
        {   /* the last pixel, one column */
            const int px = ${px_count - 1};
% if k4 > k:
            memset(col + ${k}, 0, ${(k4 - k) * 2}u); /* the padded taps */
% endif
${column(0, 'px', 4)}\
${channels(1, 'px')}\
        }
% endif
    }
}

<%doc>
  Quantized NCHW convolution (group 1) and QGemm (``matrix``: x's rows are the pixels, y
  is [pixels][channels]) on int16 pairs, the DSP extension's way (ops/qlinear/q15.py).
  Output channels outside, pixels inside: the taps of a block of ``block`` pixels are
  copied into scratch as int16 columns with the input zero point subtracted (a 1x1
  convolution's four pixels of two channels per step, a matrix row's four taps, with
  the SIMD32 extension; a window inside x at fixed offsets), the columns of a group of
  ``group`` pixels side by side by 4 taps, the taps padded to k4 with 0. Then each output
  channel runs down the block with its requantization constants computed once:
    few taps (k4 <= 8)  its k4 / 2 weight pairs in registers (times 256, with the bias,
                        where requantize_scaled may take the sums), two pixels per step,
                        one SMLAD per two taps;
    else                four pixels per step, lib/q15_tile.mako's row_sums over the
                        packed weights (one weight word widened for the four); the
                        block's last pixels (fewer than four) one at a time, two
                        channels at once (pair_sums).
  Then the fast exact requantization, with a fused QLinearAdd's residual. The weights are
  packed at compile time (ops/common/packing.py "pairs": two rows interleaved by word, a
  row's word k0 k2 k1 k3, the rows padded to an even count).
  ``in_place`` (1x1 only): y may be x: a block's pixels are all in the columns before any
  of their outputs is written, and output (k, p) lands on pixel p of x's channels (see
  ops/common/spatial.pointwise_fits_over_x).
</%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
<%namespace name="q15" file="/kernels/lib/q15_tile.mako"/>\
<%! import math %>\
<%
    n, c, h, w = p['n'], p['c'], p['h'], p['w']
    m, oh, ow, kh, kw = p['m'], p['oh'], p['ow'], p['kh'], p['kw']
    sh, sw, dh, dw, pt, pl = p['sh'], p['sw'], p['dh'], p['dw'], p['pt'], p['pl']
    k, k4, zx, block = p['k'], p['k4'], p['x_zp'], p['block']
    pixels = oh * ow
    matrix = p.get('matrix', False)
    pointwise = p['pointwise']
    group = p['col_group']  # pixels whose columns lie side by side, 4 taps at a time
    few = p['few']  # each channel's weights in registers (q15.FEW_TAPS)
    sign = 'u' if p['x_type'] == 'uint8_t' else 's'
    zz = f"0x{(-zx) & 0xffff:04x}{(-zx) & 0xffff:04x}u"  # -zero point in both halves
    # y's element of channel oc, pixel p0 + j; its step from one pixel to the next
    ystep, ychannel = (m, 1) if matrix else (1, pixels)
    # a window inside x (most pixels): fixed offsets, whole words of taps per round of
    # ``period`` input channels
    interior = not (matrix or pointwise) and h - 1 - (kh - 1) * dh >= 0 and w - 1 - (kw - 1) * dw >= 0
    period = 4 // math.gcd(kh * kw, 4)

    def tap(t):
        """Tap t of a pixel's column: its offset from the column's first (a C int)."""
        return (t >> 2) * 4 * group + (t & 3)

    def col_index(j, t):
        """Pixel j's tap t in the columns (C expressions)."""
        return (f"(({j}) / {group}) * {group * k4} + (({t}) >> 2) * {4 * group} + "
                f"(({j}) % {group}) * 4 + (({t}) & 3)")

    def quad(i):
        """Pixel i (0..3) of four from a multiple of 4: its offset from the first."""
        return i // group * group * k4 + i % group * 4

    def window_taps(count):
        """The first ``count`` taps of a round of ``period`` input channels of a window
        inside x, two by two: (offset in the column, offsets in x of the pair or of a
        last tap alone). A pair is one 32-bit store: gcc, merging single int16 stores,
        keeps every loaded tap live and spills."""
        def src(r):
            ic, rest = divmod(r, kh * kw)
            return ic * h * w + (rest // kw) * dh * w + (rest % kw) * dw
        return [(tap(r), [src(t) for t in range(r, min(r + 2, count))]) for r in range(0, count, 2)]

    def bias(oc):
        return f"b[{oc}]" if p['bias'] else "0"
%>\
${qh.conv_helpers(model, p)}
<%def name="output(acc, oc, yi, row, scale=1)">\
${qh.conv_output(model, p, acc, oc, yi, row, scale == 256)}\
</%def>\
<%def name="y_index(oc, j)">(size_t)yb + (size_t)(${oc}) * ${ychannel}u + (size_t)(p0 + ${j}) * ${ystep}u</%def>\
<%def name="few_taps(count)">\
<%doc> Each output channel over the ``count`` pixels of the block at p0, its weights in
  registers. </%doc>\
<% scale = 256 if qh.attr.scaled(p) else 1 %>\
            for (int oc = 0; oc < ${m}; ++oc) {
                /* the row's words: oc's pair of rows, then its half of each 8 bytes */
                const int8_t *const wr = w + (size_t)(oc >> 1) * ${2 * k4}u + (size_t)(oc & 1) * 4u;
% for j in range(k4 // 4):
                const uint32_t w${j}a = (uint32_t)(uint16_t)(int16_t)(wr[${8 * j}] * ${scale}) | (uint32_t)(uint16_t)(int16_t)(wr[${8 * j + 2}] * ${scale}) << 16;
                const uint32_t w${j}b = (uint32_t)(uint16_t)(int16_t)(wr[${8 * j + 1}] * ${scale}) | (uint32_t)(uint16_t)(int16_t)(wr[${8 * j + 3}] * ${scale}) << 16;
% endfor
                const int32_t bias = ${f'b[oc] * {scale}' if p['bias'] else '0'};
${qh.fold_locals(model, p, 'oc', 0)}\
                const int16_t *cp = col;
                size_t yi = ${y_index('oc', 0)};
                for (int j = 0; j < ${count - count % 2}; j += 2, yi += ${2 * ystep}) {
                    int32_t a = bias, a1 = bias;
% for j in range(k4 // 4):
                    {   /* the pair's columns in order: 4 taps of each pixel per step */
                        uint32_t x0, x1, z0, z1;
                        ${model}_load_pairs(&cp, &x0, &x1);
                        ${model}_load_pairs(&cp, &z0, &z1);
                        a = ${model}_smlad(x0, w${j}a, a);
                        a1 = ${model}_smlad(z0, w${j}a, a1);
                        a = ${model}_smlad(x1, w${j}b, a);
                        a1 = ${model}_smlad(z1, w${j}b, a1);
                    }
% endfor
                    y[yi] = ${output('a', 'oc', 'yi', 0, scale)};
                    y[yi + ${ystep}] = ${output('a1', 'oc', f'yi + {ystep}', 0, scale)};
                }
% if count % 2:
                {
                    int32_t a = bias;
% for j in range(k4 // 4):
                    a = ${model}_smlad(${model}_load_pair(cp + ${4 * group * j}), w${j}a, a);
                    a = ${model}_smlad(${model}_load_pair(cp + ${4 * group * j + 2}), w${j}b, a);
% endfor
                    y[yi] = ${output('a', 'oc', 'yi', 0, scale)};
                }
% endif
            }
</%def>\
<%def name="tiles(count)">\
<%doc> Each output channel over the pixels of the block at p0, four per step; then the last
  count % 4 pixels, two channels at once. </%doc>\
% if count >= 4:
            for (int oc = 0; oc < ${m}; ++oc) {
${qh.fold_locals(model, p, 'oc', 0)}\
                const int32_t bias = ${bias('oc')};
                const int8_t *const wr = w + (size_t)(oc >> 1) * ${2 * k4}u + (size_t)(oc & 1) * 4u;
                const int16_t *cp = col;
                size_t yi = ${y_index('oc', 0)};
                for (int j = 0; j < ${count - count % 4}; j += 4, yi += ${4 * ystep}) {
                    const int8_t *wp = wr;
                    int32_t a0 = bias, a1 = bias, a2 = bias, a3 = bias;
${q15.row_sums(k4)}\
% for i in range(4):
                    y[yi + ${i * ystep}] = ${output(f'a{i}', 'oc', f'yi + {i * ystep}', 0)};
% endfor
                }
            }
% endif
% if count % 4:
            for (int oc = 0; oc < ${m}; oc += 2) {
${qh.fold_locals(model, p, 'oc', 0)}\
% if m % 2:
                const int second = oc + 1 < ${m}; /* an odd last channel: a padded weight row */
${qh.fold_locals(model, p, 'oc + second', 1)}\
% else:
${qh.fold_locals(model, p, 'oc + 1', 1)}\
% endif
% for i in range(count % 4):
                {   /* pixel ${count - count % 4 + i}: its column's steps ${4 * group} int16 apart */
                    const int8_t *wp = w + (size_t)oc * ${k4}u; /* rows oc and oc + 1, interleaved */
                    const int16_t *cp = col + ${(count - count % 4) * k4 + 4 * i};
                    const size_t y0 = ${y_index('oc', count - count % 4 + i)};
                    int32_t a00 = ${bias('oc')};
% if m % 2:
                    int32_t a10 = second ? ${bias('oc + 1')} : 0;
% else:
                    int32_t a10 = ${bias('oc + 1')};
% endif
${q15.pair_sums(k4, 4 * group)}\
                    y[y0] = ${output('a00', 'oc', 'y0', 0)};
% if m % 2:
                    if (second) {
% else:
                    {
% endif
                        const size_t y1 = y0 + ${ychannel}u;
                        y[y1] = ${output('a10', 'oc + 1', 'y1', 1)};
                    }
                }
% endfor
            }
% endif
</%def>\
<%def name="copy_pointwise(count)">\
<%doc> 1x1: the ``count`` pixels from p0, pairs of channels (four pixels per step with the
  SIMD32 extension). </%doc>\
            for (int ic = 0; ic < ${c - c % 2}; ic += 2) {
                const ${p['x_type']} *const s0 = xb + (size_t)ic * ${pixels}u + (size_t)p0, *const s1 = s0 + ${pixels};
                int j = 0;
% if count >= 4:
#if defined(__ARM_FEATURE_SIMD32)
                for (int16_t *d = col + (ic >> 2) * ${4 * group} + (ic & 3); j < ${count - count % 4}; j += 4, d += ${4 * k4}) {
                    uint32_t v0, v1, q[4];
                    memcpy(&v0, s0 + j, 4u);
                    memcpy(&v1, s1 + j, 4u);
                    ${model}_channel_pairs_${sign}8(v0, v1, ${zz}, q);
% for i in range(4):
                    memcpy(d + ${quad(i)}, &q[${i}], 4u);
% endfor
                }
#endif
% endif
                for (; j < ${count}; ++j) {
                    int16_t *const d = col + ${col_index('j', 'ic')};
                    d[0] = (int16_t)((int32_t)s0[j] - ${zx});
                    d[1] = (int16_t)((int32_t)s1[j] - ${zx});
                }
            }
% if c % 2:
            {
                const ${p['x_type']} *const s = xb + ${(c - 1) * pixels}u + (size_t)p0;
                for (int j = 0; j < ${count}; ++j)
                    col[${col_index('j', c - 1)}] = (int16_t)((int32_t)s[j] - ${zx});
            }
% endif
</%def>\
<%def name="copy_rows(count)">\
<%doc> matrix: the ``count`` rows from p0, four taps per step (SIMD32). </%doc>\
            for (int j = 0; j < ${count}; ++j) {
                const ${p['x_type']} *const s = x + (size_t)(p0 + j) * ${c}u;
                int16_t *const d = col + (j / ${group}) * ${group * k4} + (j % ${group}) * 4;
                int t = 0;
% if c >= 4:
#if defined(__ARM_FEATURE_SIMD32)
                for (; t < ${c - c % 4}; t += 4)
                    ${model}_widen4_${sign}8(d + (t >> 2) * ${4 * group}, s + t, ${zz});
#endif
% endif
                for (; t < ${c}; ++t)
                    d[(t >> 2) * ${4 * group} + (t & 3)] = (int16_t)((int32_t)s[t] - ${zx});
            }
</%def>\
<%def name="window_pairs(count)">\
<%doc> The first ``count`` taps of a round at s into the column at e. </%doc>\
% for dst, srcs in window_taps(count):
% if len(srcs) == 2:
                    {
                        const uint32_t v = (uint32_t)(uint16_t)((int32_t)s[${srcs[0]}] - ${zx}) | (uint32_t)(uint16_t)((int32_t)s[${srcs[1]}] - ${zx}) << 16;
                        memcpy(e + ${dst}, &v, 4u);
                    }
% else:
                    e[${dst}] = (int16_t)((int32_t)s[${srcs[0]}] - ${zx});
% endif
% endfor
</%def>\
<%def name="copy_windows(count)">\
<%doc> The windows of the ``count`` pixels from p0 (outside x: 0, adding nothing). </%doc>\
            for (int j = 0; j < ${count}; ++j) {
                const int px = p0 + j, oy = px / ${ow}, ox = px % ${ow};
                int16_t *const d = col + (j / ${group}) * ${group * k4} + (j % ${group}) * 4;
% if interior:
                const int iy0 = oy * ${sh} - ${pt}, ix0 = ox * ${sw} - ${pl};
                if (iy0 >= 0 && iy0 <= ${h - 1 - (kh - 1) * dh} && ix0 >= 0 && ix0 <= ${w - 1 - (kw - 1) * dw}) {
                    /* the whole window inside x: every tap a load at a fixed offset, ${period}
                     * input channel(s) per round (whole words of taps) */
                    const ${p['x_type']} *s = xb + (size_t)iy0 * ${w}u + (size_t)ix0;
                    int16_t *e = d;
                    for (int g = 0; g < ${c // period}; ++g, s += ${period * h * w}, e += ${tap(period * kh * kw)}) {
${window_pairs(period * kh * kw)}\
                    }
${window_pairs((c % period) * kh * kw)}\
                    continue;
                }
% endif
                int t = 0;
                for (int ic = 0; ic < ${c}; ++ic) {
                    for (int ky = 0; ky < ${kh}; ++ky) {
                        const int iy = oy * ${sh} - ${pt} + ky * ${dh};
                        const int row = iy >= 0 && iy < ${h};
                        const size_t xr = (size_t)ic * ${h * w}u + (size_t)(row ? iy : 0) * ${w}u;
                        for (int kx = 0; kx < ${kw}; ++kx, ++t) {
                            const int ix = ox * ${sw} - ${pl} + kx * ${dw};
                            d[(t >> 2) * ${4 * group} + (t & 3)] = row && ix >= 0 && ix < ${w}
                                ? (int16_t)((int32_t)xb[xr + (size_t)ix] - ${zx}) : 0;
                        }
                    }
                }
            }
</%def>\
<%def name="run(count)">\
% if matrix:
${copy_rows(count)}\
% elif pointwise:
${copy_pointwise(count)}\
% else:
${copy_windows(count)}\
% endif
% if few:
${few_taps(count)}\
% else:
${tiles(count)}\
% endif
</%def>\
${signature}
{
    /* ${block} pixels' columns of ${k4} int16, ${group} by ${group} side by side by 4 taps */
    int16_t *const col = (int16_t *)scratch;
    /* the taps the weight rows were padded with: zero */
    memset(col, 0, ${2 * k4 * -(-block // group) * group}u);
    for (int nb = 0; nb < ${n}; ++nb) {
% if not matrix:
        const ${p['x_type']} *const xb = x + (size_t)nb * ${c * h * w}u;
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

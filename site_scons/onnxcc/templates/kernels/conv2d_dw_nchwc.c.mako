<%namespace name="tl" file="/kernels/lib/tile.mako"/>\
<%namespace name="ps" file="/kernels/lib/panel_store.mako"/>\
<%namespace name="tr" file="/kernels/lib/transpose.mako"/>\
<%doc>
  Depthwise convolution with the channels in the lanes (ops/conv/depthwise_lanes.py): a block of
  `lanes` channels is transposed into a zero-padded scratch image of channel vectors
  [image_rows][image_cols][lanes], each output pixel sums its kh * kw taps as whole vectors
  against the packed weights [block][tap][lanes] (a tile of `rows` pixels of an output row
  in registers), into a scratch [oh * ow][lanes], which is transposed back to NCHW a run of
  `lanes` pixels of every channel at a time. The chain (the bias first) runs on the pixel
  vectors when all its ops have vector forms along the channels, else (a residual) on each
  channel's run as it is stored. The last block of fewer channels loads zeros for the
  missing ones and stores only its own.
</%doc>\
<%
    n, c, h, w = p['n'], p['c'], p['h'], p['w']
    oh, ow = p['oh'], p['ow']
    L, rows = p['lanes'], p['rows']
    hw, P = h * w, oh * ow
    ir, ic = p['image_rows'], p['image_cols']
    taps = p['kh'] * p['kw']
    full_blocks, tail = divmod(c, L)
    full_tiles, rest_tile = divmod(ow, rows)
    chain = p['epilogue']
    early = vectorizable(chain, 1)
    late = [] if early else chain
    def dest(f):
        """The scratch image pixel of input pixel f (a C expression of the plane)."""
        if ic == w:
            return f"({p['pt'] * ic}u + (size_t)({f}))"
        return f"((size_t)(({f}) / {w} + {p['pt']}) * {ic}u + ({f}) % {w} + {p['pl']}u)"
%>\
## Input pixels f0 .. f0 + count - 1 of the block's cv channels into the scratch image.
<%def name="fill_chunk(cv, count, ind)">\
<% names = [f't{j}' for j in range(L)] %>\
% for j in range(L):
% if j >= cv:
${ind}vf t${j} = (vf){0};
% elif count == L:
${ind}vf t${j} = *(const vfu *)(xb + ${j * hw}u + f0);
% else:
${ind}vf t${j} = (vf){0}; memcpy(&t${j}, xb + ${j * hw}u + f0, ${count}u * sizeof(float));
% endif
% endfor
${tr.transpose(names, L, ind)}\
% for i in range(count):
${ind}*(vfu *)(sp + ${dest(f'f0 + {i}')} * ${L}u) = t${i};
% endfor
</%def>\
## A tile of `count` pixels of output row oy from column ox0: per kernel row, its kw weight
## vectors, then each input vector the tile's windows read there, loaded once into every
## multiply-add it takes part in; then (early) the chain. Where the accumulators, the weights
## and a row of inputs outgrow the registers, an empty asm between kernel rows keeps GCC
## from holding inputs for later rows, which spilled the accumulators (AVX2: 10% slower).
<%def name="tile(cv, count, ind)">\
<%
    sw, dw, kw = p['sw'], p['dw'], p['kw']
    span = (count - 1) * sw + (kw - 1) * dw + 1
    start, after = sums_start(chain if early else [], 1, L, cv == L)
    def users(q):
        """(pixel, kx) of the taps that read input column q of the tile."""
        return [((q - kx * dw) // sw, kx) for kx in range(kw)
                if q >= kx * dw and (q - kx * dw) % sw == 0 and (q - kx * dw) // sw < count]
%>\
${ind}{
${ind}    const float *s0 = sp + ((size_t)oy * ${p['sh'] * ic}u + (size_t)ox0 * ${sw}u) * ${L}u;
${ind}    vf ${', '.join(f'a{i} = ' + start(['nb', 'c0', f'oy * {ow} + ox0 + {i}']) for i in range(count))};
% for ky in range(p['kh']):
% if ky and count + kw + span + 1 > p['registers']:
${ind}    __asm__("" ::: "memory");
% endif
${ind}    {
${ind}        const vf ${', '.join(f'w{kx} = *(const vfu *)(wb + {(ky * kw + kx) * L}u)' for kx in range(kw))};
% for q in [q for q in range(span) if users(q)]:
${ind}        { const vf v = *(const vfu *)(s0 + ${(ky * p['dh'] * ic + q) * L}u); ${' '.join(f'a{i} += v * w{kx};' for i, kx in users(q))} }
% endfor
${ind}    }
% endfor
% for i in range(count):
% if early and after:
${ind}    ${tl.apply(f'a{i}', L, after, ['nb', 'c0', f'oy * {ow} + ox0 + {i}'], 1, cv)}
% endif
${ind}    *(vfu *)(so + ((size_t)oy * ${ow}u + ox0 + ${i}u) * ${L}u) = a${i};
% endfor
${ind}}
</%def>\
## Output pixels f0 .. f0 + count - 1 of the block's cv channels from the scratch to y.
<%def name="store_chunk(cv, count, ind)">\
<%
    def out(j):
        return f"y + ((size_t)nb * {c} + c0 + {j}) * {P}u + f0"
    def coords(j, col):
        return ['nb', f'c0 + {j}', f'f0 + {col}']
%>\
${ps.chunk(0, cv, count, L, L, out, late, coords, ind)}\
</%def>\
<%def name="block(cv)">\
            const float *xb = x + ((size_t)nb * ${c} + c0) * ${hw}u;
            const float *wb = w + (size_t)c0 * ${taps}u;
% if hw // L:
            for (int f0 = 0; f0 < ${hw // L * L}; f0 += ${L}) {
${fill_chunk(cv, L, ' ' * 16)}\
            }
% endif
% if hw % L:
            {
                const int f0 = ${hw // L * L};
${fill_chunk(cv, hw % L, ' ' * 16)}\
            }
% endif
            for (int oy = 0; oy < ${oh}; ++oy) {
% if full_tiles:
                for (int ox0 = 0; ox0 < ${full_tiles * rows}; ox0 += ${rows})
${tile(cv, rows, ' ' * 20)}\
% endif
% if rest_tile:
                {
                    const int ox0 = ${full_tiles * rows};
${tile(cv, rest_tile, ' ' * 20)}\
                }
% endif
            }
% if P // L:
            for (int f0 = 0; f0 < ${P // L * L}; f0 += ${L}) {
${store_chunk(cv, L, ' ' * 16)}\
            }
% endif
% if P % L:
            {
                const int f0 = ${P // L * L};
${store_chunk(cv, P % L, ' ' * 16)}\
            }
% endif
</%def>\
${tl.contracted(signature)}
{
${tl.types(L)}\
    float *const sp = (float *)scratch;  /* ${ir} x ${ic} pixels of ${L} channels, zero-padded */
    float *const so = sp + ${ir * ic * L}u;  /* ${P} output pixels of ${L} channels */
    memset(sp, 0, ${ir * ic * L}u * sizeof(float));
    for (int nb = 0; nb < ${n}; ++nb) {
% if full_blocks:
        for (int c0 = 0; c0 < ${full_blocks * L}; c0 += ${L}) {
${block(L)}\
        }
% endif
% if tail:
        {
            const int c0 = ${full_blocks * L};
${block(tail)}\
        }
% endif
    }
}

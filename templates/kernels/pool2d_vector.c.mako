<%namespace name="simd" file="/kernels/simd.mako"/>\
<%namespace name="planes" file="/kernels/conv_planes.mako"/>\
<%doc>
  Max or average pooling, vectorized: one channel at a time is copied into stride phases
  padded with -inf (max) or zeros (average; every window has kh * kw elements here), so
  that each tap of an output row is a contiguous run; vecs vectors of an output row take
  the max, or the sum, of the taps.
</%doc>\
<%
    n, c, h, w, oh, ow = p['n'], p['c'], p['h'], p['w'], p['oh'], p['ow']
    vecs, lanes = p['vecs'], p['lanes']
    width = vecs * lanes
    cols, cs = p['plane_cols'], p['channel_stride']
    offsets = p['tap_offsets']
    is_max = p['kind'] == 'max'
    full, rest = divmod(ow, width)
    def ld(off):
        return f"*(const vfu *)(pr + {off}u)"
%>\
<%def name="tile(nvecs, store)">\
                {
% for v in range(nvecs):
                    vf acc${v} = ${ld(offsets[0] + v * lanes)};
% endfor
% for t in offsets[1:]:
% for v in range(nvecs):
% if is_max:
                    { const vf x${v} = ${ld(t + v * lanes)}; const vi more = x${v} > acc${v}; acc${v} = (vf)(((vi)x${v} & more) | ((vi)acc${v} & ~more)); }
% else:
                    acc${v} += ${ld(t + v * lanes)};
% endif
% endfor
% endfor
% if not is_max:
% for v in range(nvecs):
                    acc${v} = acc${v} / ${c_float(len(offsets))};
% endfor
% endif
% if store == nvecs * lanes:
                    ${' '.join(f'*(vfu *)(yr + {v * lanes}) = acc{v};' for v in range(nvecs))}
% else:
                    float part[${nvecs * lanes}];
                    ${' '.join(f'*(vfu *)(part + {v * lanes}) = acc{v};' for v in range(nvecs))}
                    memcpy(yr, part, ${store}u * sizeof(float));
% endif
                }
</%def>\
${signature}
{
${simd.types(lanes, is_max and len(offsets) > 1)}\
    float *const pc = (float *)scratch;
${planes.clear('pc', cs + p['slack'], '-INFINITY' if is_max else '0.0f', 4)}\
    for (int nc = 0; nc < ${n * c}; ++nc) {
        const float *xc = x + (size_t)nc * ${h * w}u;
${planes.fill(p, 'xc', 'pc', 8)}\
        for (int oy = 0; oy < ${oh}; ++oy) {
% if full:
            for (int ox0 = 0; ox0 < ${full * width}; ox0 += ${width}) {
                const float *pr = pc + (size_t)oy * ${cols}u + ox0;
                float *yr = y + ((size_t)nc * ${oh} + oy) * ${ow}u + ox0;
${tile(vecs, width)}\
            }
% endif
% if rest:
            {
                const float *pr = pc + (size_t)oy * ${cols}u + ${full * width};
                float *yr = y + ((size_t)nc * ${oh} + oy) * ${ow}u + ${full * width};
${tile(-(-rest // lanes), rest)}\
            }
% endif
        }
    }
}

<%namespace name="simd" file="/kernels/simd.mako"/>\
<%doc>
  Global max or average pool, vectorized: each channel's elements (contiguous) are reduced
  in `lanes`-wide vectors, the last ones one by one, then across the vector's lanes.
</%doc>\
<%
    inner, lanes = p['inner'], p['lanes']
    full = inner // lanes * lanes
    is_max = p['kind'] == 'max'
%>\
${signature}
{
% if full:
${simd.types(lanes, is_max and full > lanes)}\
% endif
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        const float *xo = x + o * ${inner}u;
% if full:
        vf acc = *(const vfu *)xo;
% if full > lanes:
        for (size_t i = ${lanes}; i < ${full}u; i += ${lanes}) {
            const vf v = *(const vfu *)(xo + i);
% if is_max:
            const vi more = v > acc;
            acc = (vf)(((vi)v & more) | ((vi)acc & ~more));
% else:
            acc += v;
% endif
        }
% endif
        float r = acc[0];
% for l in range(1, lanes):
% if is_max:
        r = acc[${l}] > r ? acc[${l}] : r;
% else:
        r += acc[${l}];
% endif
% endfor
% else:
        float r = ${'xo[0]' if is_max else '0.0f'};
% endif
        for (size_t i = ${full}u; i < ${inner}u; ++i)
            r = ${'xo[i] > r ? xo[i] : r' if is_max else 'r + xo[i]'};
        y[o] = ${'r' if is_max else f"r / {c_float(inner)}"};
    }
}

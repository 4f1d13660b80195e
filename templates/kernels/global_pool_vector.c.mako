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
${simd.types(lanes, is_max)}\
% if is_max:
${simd.max_op(lanes)}\
% endif
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        const float *xo = x + o * ${inner}u;
% if full:
% if is_max:
        vf acc = (vf){0} - INFINITY;  /* never NaN: NaN inputs never win */
<%simd:loop i="i" start="${0}" stop="${full}" step="${lanes}" indent="        ">\
            acc = simd_max_v${lanes}(acc, *(const vfu *)(xo + i));
</%simd:loop>\
% else:
        vf acc = *(const vfu *)xo;
<%simd:loop i="i" start="${lanes}" stop="${full}" step="${lanes}" indent="        ">\
            acc += *(const vfu *)(xo + i);
</%simd:loop>\
% endif
        float r = acc[0];
% for l in range(1, lanes):
% if is_max:
        r = acc[${l}] > r ? acc[${l}] : r;
% else:
        r += acc[${l}];
% endif
% endfor
% else:  ## (the channel is shorter than a vector)
        float r = ${'-INFINITY' if is_max else '0.0f'};
% endif
<%simd:loop i="i" start="${full}" stop="${inner}" step="${1}" indent="        ">\
            r = ${'xo[i] > r ? xo[i] : r' if is_max else 'r + xo[i]'};
</%simd:loop>\
        y[o] = ${'r' if is_max else f"r / {c_float(inner)}"};
    }
}

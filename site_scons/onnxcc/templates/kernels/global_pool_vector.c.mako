<%namespace name="simd" file="/kernels/lib/simd.mako"/>\
<%doc>
  Global max or average pool (or a ReduceMax, ReduceMean or ReduceSum over rows), vectorized: each channel's elements (contiguous) are reduced
  in `lanes`-wide vectors, the last ones one by one, then across the vector's lanes. From
  four vectors a channel on, into four accumulators (four vectors a step), which then
  combine: one chain of dependent additions waits the adder's latency for each vector. The
  average's sum across the lanes is a tree of the vector's halves (docs/speed.md, "Pooling
  and Softmax": EfficientNet's squeeze-excitation pools over 7x7 to 28x28 pixels).
</%doc>\
<%
    inner, lanes = p['inner'], p['lanes']
    full = inner // lanes * lanes
    is_max = p['kind'] == 'max'
    ways = 4 if full >= 4 * lanes else 1
    blocked = full // (ways * lanes) * (ways * lanes)
    op = (lambda a, v: f"simd_max_v{lanes}({a}, {v})") if is_max else (lambda a, v: f"{a} + {v}")

    # the average's sum across the lanes, as a tree of one vector's halves (a 16-lane sum
    # in four levels, not 15 dependent additions): 16 -> 8 -> 4 lanes by vector additions
    # (the halves copied out: plain GCC vector extensions), then (s[0] + s[2]) + (s[1] + s[3])
    halves = []
    while lanes >> len(halves) > 4:
        halves.append(lanes >> (len(halves) + 1))
%>\
<%def name="lane_sum(halves, lanes)">\
<% src = "acc" %>\
% for n in halves:
        vh${n} lo${n}, hi${n};
        __builtin_memcpy(&lo${n}, &${src}, sizeof lo${n});
        __builtin_memcpy(&hi${n}, (const float *)&${src} + ${n}, sizeof hi${n});
        const vh${n} s${n} = lo${n} + hi${n};
<% src = f"s{n}" %>\
% endfor
% if lanes >= 4:
        float r = (${src}[0] + ${src}[2]) + (${src}[1] + ${src}[3]);
% else:
        float r = ${' + '.join(f"{src}[{l}]" for l in range(lanes))};
% endif
</%def>\
${signature}
{
${simd.types(lanes)}\
% for n in halves if full and not is_max else ():
    typedef float vh${n} __attribute__((vector_size(${4 * n})));
% endfor
% if is_max:
${simd.max_op(lanes)}\
% endif
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        const float *xo = x + o * ${inner}u;
% if full:
% for k in range(ways):
% if is_max:
        vf acc${k} = (vf){0} - INFINITY;${'  /* never NaN: NaN inputs never win */' if k == ways - 1 else ''}
% else:
        vf acc${k} = *(const vfu *)(xo + ${k * lanes}u);
% endif
% endfor
<%simd:loop i="i" start="${0 if is_max else ways * lanes}" stop="${blocked}" step="${ways * lanes}" indent="        ">\
% for k in range(ways):
            acc${k} = ${op(f"acc{k}", f"*(const vfu *)(xo + i{f' + {k * lanes}u' if k else ''})")};
% endfor
</%simd:loop>\
% if ways > 1:
        vf acc = ${op(op("acc0", "acc1"), op("acc2", "acc3"))};
% else:
        vf acc = acc0;
% endif
<%simd:loop i="i" start="${blocked}" stop="${full}" step="${lanes}" indent="        ">\
            acc = ${op("acc", "*(const vfu *)(xo + i)")};
</%simd:loop>\
% if is_max:
        float r = acc[0];
% for l in range(1, lanes):
        r = acc[${l}] > r ? acc[${l}] : r;
% endfor
% else:
${lane_sum(halves, lanes)}\
% endif
% else:  ## (the channel is shorter than a vector)
        float r = ${'-INFINITY' if is_max else '0.0f'};
% endif
<%simd:loop i="i" start="${full}" stop="${inner}" step="${1}" indent="        ">\
            r = ${'xo[i] > r ? xo[i] : r' if is_max else 'r + xo[i]'};
</%simd:loop>\
        y[o] = ${f"r / {c_float(inner)}" if p['kind'] == 'avg' else 'r'};
    }
}

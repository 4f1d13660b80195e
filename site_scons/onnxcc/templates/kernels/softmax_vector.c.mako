<%namespace name="simd" file="/kernels/lib/simd.mako"/>\
<%namespace name="tile" file="/kernels/lib/tile.mako"/>\
<%namespace name="reference" file="/kernels/softmax.c.mako"/>\
<%doc>
  Softmax or LogSoftmax over n float32 elements spaced inner apart, vectorized with the
  libm-free exp (and log) of vmath.mako; the max is subtracted for range safety. Along the
  last axis (inner 1) a row runs in vectors: a max pass (four accumulators, the lanes then
  folded by shuffles), an exp and sum pass (the last elements padded with -inf, whose exp
  adds 0), then a scale pass. Along another axis the vectors run across inner (lanes
  neighbouring columns at once), the last columns one by one (the reference kernel's loops
  with vmath's functions). The exp polynomial may use fused multiply-adds (contracted: 17%
  faster on AVX2).
</%doc>\
<%
    n, inner, outer, L = p['n'], p['inner'], p['outer'], p['lanes']
    log = p['kind'] == 'LogSoftmax'
    full = n // L * L
    rest = n - full
    cols = inner // L * L
    nvec = full // L
    acc = min(4, nvec)
%>\
<%doc>
  `e`, the exp of vector `d` = x - max: in [-inf, 0], or NaN (a NaN input, or inf - inf).
  vmath's exp without its range selects: one max clamps below (exp(-104) rounds to 0; a
  NaN becomes -104, so none reaches the float -> int conversion), an or gives NaN back.
</%doc>
<%def name="exp(e, d, indent)">\
<% pad = ' ' * indent %>\
${pad}vf ${e};
${pad}{
${pad}    const vf d_ = ${d};
${pad}    vm_i${L} n_;
${pad}    const vf q_ = vm_expq_v${L}(simd_max_v${L}((vf){0} - 104.0f, d_), &n_);
${pad}    ${e} = (vf)((vi)vm_scaled_v${L}(1.0f + q_, n_) | (d_ != d_));
${pad}}
</%def>
<%doc> `v` folded over its lanes by `op` (max or +) in shuffles L/2, L/4, ... 1 lanes apart: every lane holds the result. </%doc>
<%def name="fold(v, op)">\
<% step = L // 2 %>\
% while step:
        ${v} = ${op(v, "__builtin_shufflevector(%s, %s, %s)" % (v, v, ', '.join(str(i ^ step) for i in range(L))))};
<% step //= 2 %>\
% endwhile
</%def>
<%
    def vmax(a, b):
        return f"simd_max_v{L}({a}, {b})"

    def vadd(a, b):
        return f"{a} + {b}"
%>\
${tile.contracted(signature)}
{
${simd.types(L)}\
${simd.max_op(L)}\
% if inner == 1:
    for (size_t o = 0; o < ${outer}u; ++o) {
        const float *xo = x + o * ${n}u;
        float *yo = y + o * ${n}u;
% if rest:
        float t[${L}];
        for (int k = 0; k < ${L}; ++k)
            t[k] = -INFINITY;
        memcpy(t, xo + ${full}, ${rest}u * sizeof(float));
        const vf tail = *(const vfu *)t;
% endif
% if acc:
% for a in range(acc):
        vf m${a} = *(const vfu *)(xo + ${a * L});
% endfor
<% blocks, left = divmod(nvec - acc, acc) %>\
<%simd:loop i="i" start="${acc * L}" stop="${(1 + blocks) * acc * L}" step="${acc * L}" indent="        ">\
% for a in range(acc):
            m${a} = ${vmax(f'm{a}', f'*(const vfu *)(xo + i + {a * L})')};
% endfor
</%simd:loop>\
% for a in range(left):
        m${a} = ${vmax(f'm{a}', f'*(const vfu *)(xo + {((1 + blocks) * acc + a) * L})')};
% endfor
% if rest:
        m0 = ${vmax('m0', 'tail')};
% endif
% for a, b in [(0, 1), (2, 3), (0, 2)]:
% if b < acc:
        m${a} = ${vmax(f'm{a}', f'm{b}')};
% endif
% endfor
% else:
        vf m0 = tail;
% endif
${fold('m0', vmax)}\
        const float max = m0[0];
        vf s = (vf){0};
<%simd:loop i="i" start="${0}" stop="${full}" step="${L}" indent="        ">\
${exp('e', '*(const vfu *)(xo + i) - max', 12)}\
% if not log:
            *(vfu *)(yo + i) = e;
% endif
            s += e;
</%simd:loop>\
% if rest:
        {
${exp('e', 'tail - max', 12)}\
% if not log:
            *(vfu *)t = e;
            memcpy(yo + ${full}, t, ${rest}u * sizeof(float));
% endif
            s += e;
        }
% endif
${fold('s', vadd)}\
        const float sum = s[0];
% if log:
        const float shift = max + vm_log_s(sum);
<%simd:loop i="i" start="${0}" stop="${full}" step="${L}" indent="        ">\
            *(vfu *)(yo + i) = *(const vfu *)(xo + i) - shift;
</%simd:loop>\
<%simd:loop i="i" start="${full}" stop="${n}" step="${1}" indent="        ">\
            yo[i] = xo[i] - shift;
</%simd:loop>\
% else:
        const float inv = 1.0f / sum;
<%simd:loop i="i" start="${0}" stop="${full}" step="${L}" indent="        ">\
            *(vfu *)(yo + i) = *(const vfu *)(yo + i) * inv;
</%simd:loop>\
<%simd:loop i="i" start="${full}" stop="${n}" step="${1}" indent="        ">\
            yo[i] *= inv;
</%simd:loop>\
% endif
    }
% else:
    for (size_t o = 0; o < ${outer}u; ++o) {
<%simd:loop i="c" start="${0}" stop="${cols}" step="${L}" indent="        ">\
            const float *xo = x + o * ${n * inner}u + c;
            float *yo = y + o * ${n * inner}u + c;
            vf m = *(const vfu *)xo;
            for (size_t i = 1; i < ${n}u; ++i)
                m = ${vmax('m', f'*(const vfu *)(xo + i * {inner}u)')};
            vf s = (vf){0};
            for (size_t i = 0; i < ${n}u; ++i) {
${exp('e', f'*(const vfu *)(xo + i * {inner}u) - m', 16)}\
% if not log:
                *(vfu *)(yo + i * ${inner}u) = e;
% endif
                s += e;
            }
% if log:
            const vf shift = m + vm_log_v${L}(s);
            for (size_t i = 0; i < ${n}u; ++i)
                *(vfu *)(yo + i * ${inner}u) = *(const vfu *)(xo + i * ${inner}u) - shift;
% else:
            const vf inv = 1.0f / s;
            for (size_t i = 0; i < ${n}u; ++i)
                *(vfu *)(yo + i * ${inner}u) = *(const vfu *)(yo + i * ${inner}u) * inv;
% endif
</%simd:loop>\
<%simd:loop i="s" start="${cols}" stop="${inner}" step="${1}" indent="        ">\
            const float *xo = x + o * ${n * inner}u + s;
            float *yo = y + o * ${n * inner}u + s;
${reference.column('float', n, inner, p['kind'], 'vm_exp_s', 'vm_log_s')}\
</%simd:loop>\
    }
% endif
}

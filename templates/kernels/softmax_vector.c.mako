<%namespace name="simd" file="/kernels/simd.mako"/>\
<%namespace name="tile" file="/kernels/tile.mako"/>\
<%doc>
  Softmax or LogSoftmax over n float32 elements spaced inner apart, vectorized with the
  libm-free exp (and log) of vmath.mako; the max is subtracted for range safety. Along the
  last axis (inner 1) a row runs in vectors: a max pass, an exp and sum pass (the last
  elements padded with -inf, whose exp adds 0), then a scale pass. Along another axis the
  vectors run across inner (lanes neighbouring columns at once), the last columns one by one.
  The exp polynomial may use fused multiply-adds (contracted: 17% faster on AVX2).
</%doc>\
<%
    n, inner, outer, L = p['n'], p['inner'], p['outer'], p['lanes']
    log = p['kind'] == 'LogSoftmax'
    full = n // L * L
    rest = n - full
    cols = inner // L * L
    def vmax(acc, v):
        return f"{{ const vi more = {v} > {acc}; {acc} = (vf)(((vi){v} & more) | ((vi){acc} & ~more)); }}"
%>\
${tile.contracted(signature)}
{
% if inner == 1 or cols:
${simd.types(L, True)}\
% endif
% if inner == 1:
    for (size_t o = 0; o < ${outer}u; ++o) {
        const float *xo = x + o * ${n}u;
        float *yo = y + o * ${n}u;
        float max = xo[0];
% if full:
        {
            vf m = *(const vfu *)xo;
            for (size_t i = ${L}; i < ${full}u; i += ${L}) {
                const vf v = *(const vfu *)(xo + i);
                ${vmax('m', 'v')}
            }
            for (int k = 0; k < ${L}; ++k)
                max = m[k] > max ? m[k] : max;
        }
% endif
% if rest:
        for (size_t i = ${full}u; i < ${n}u; ++i)
            max = xo[i] > max ? xo[i] : max;
% endif
        vf s = (vf){0};
% if full:
        for (size_t i = 0; i < ${full}u; i += ${L}) {
            const vf e = vm_exp_v${L}(*(const vfu *)(xo + i) - max);
% if not log:
            *(vfu *)(yo + i) = e;
% endif
            s += e;
        }
% endif
% if rest:
        {
            float t[${L}];
            for (int k = 0; k < ${L}; ++k)
                t[k] = -INFINITY;
            memcpy(t, xo + ${full}, ${rest}u * sizeof(float));
            const vf e = vm_exp_v${L}(*(const vfu *)t - max);
% if not log:
            *(vfu *)t = e;
            memcpy(yo + ${full}, t, ${rest}u * sizeof(float));
% endif
            s += e;
        }
% endif
        float sum = 0.0f;
        for (int k = 0; k < ${L}; ++k)
            sum += s[k];
% if log:
        const float shift = max + vm_log_s(sum);
% if full:
        for (size_t i = 0; i < ${full}u; i += ${L})
            *(vfu *)(yo + i) = *(const vfu *)(xo + i) - shift;
% endif
% if rest:
        for (size_t i = ${full}u; i < ${n}u; ++i)
            yo[i] = xo[i] - shift;
% endif
% else:
        const float inv = 1.0f / sum;
% if full:
        for (size_t i = 0; i < ${full}u; i += ${L})
            *(vfu *)(yo + i) = *(const vfu *)(yo + i) * inv;
% endif
% if rest:
        for (size_t i = ${full}u; i < ${n}u; ++i)
            yo[i] *= inv;
% endif
% endif
    }
% else:
    for (size_t o = 0; o < ${outer}u; ++o) {
% if cols:
        for (size_t c = 0; c < ${cols}u; c += ${L}) {
            const float *xo = x + o * ${n * inner}u + c;
            float *yo = y + o * ${n * inner}u + c;
            vf m = *(const vfu *)xo;
            for (size_t i = 1; i < ${n}u; ++i) {
                const vf v = *(const vfu *)(xo + i * ${inner}u);
                ${vmax('m', 'v')}
            }
            vf s = (vf){0};
            for (size_t i = 0; i < ${n}u; ++i) {
                const vf e = vm_exp_v${L}(*(const vfu *)(xo + i * ${inner}u) - m);
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
        }
% endif
% if cols < inner:
        for (size_t c = ${cols}u; c < ${inner}u; ++c) {
            const float *xo = x + o * ${n * inner}u + c;
            float *yo = y + o * ${n * inner}u + c;
            float max = xo[0];
            for (size_t i = 1; i < ${n}u; ++i)
                max = xo[i * ${inner}u] > max ? xo[i * ${inner}u] : max;
            float sum = 0.0f;
            for (size_t i = 0; i < ${n}u; ++i) {
                const float e = vm_exp_s(xo[i * ${inner}u] - max);
% if not log:
                yo[i * ${inner}u] = e;
% endif
                sum += e;
            }
% if log:
            const float shift = max + vm_log_s(sum);
            for (size_t i = 0; i < ${n}u; ++i)
                yo[i * ${inner}u] = xo[i * ${inner}u] - shift;
% else:
            const float inv = 1.0f / sum;
            for (size_t i = 0; i < ${n}u; ++i)
                yo[i * ${inner}u] *= inv;
% endif
        }
% endif
    }
% endif
}

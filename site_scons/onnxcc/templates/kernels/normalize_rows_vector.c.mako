<%namespace name="simd" file="/kernels/lib/simd.mako"/>\
<%doc>
  LayerNormalization over rows of n float32 elements (the scale and bias per element),
  in vectors of `lanes` floats: the reference kernel's three passes (the mean, then the
  corrected two-pass variance of Chan, Golub and LeVeque, then the scaling), each sum in
  one vector of partial sums whose lanes are added at the end, the last n % lanes
  elements one by one. The reference kernel's sums are one float each: a chain of
  dependent adds, 2n adds' latency a row (LayerNormalization was 9% of an AVX-512
  transformer's time).
</%doc>\
<%
    n, L = p['n'], p['lanes']
    full = n // L * L
    def hsum(v):
        return ' + '.join(f'{v}[{l}]' for l in range(L))
%>\
${signature}
{
% if full:
${simd.types(L)}\
% endif
    for (size_t r = 0; r < ${p['rows']}u; ++r) {
        const float *xr = x + r * ${n}u;
        float *yr = y + r * ${n}u;
        float mean = 0.0f, var = 0.0f, shift = 0.0f;
% if full:
        {
            vf s = (vf){0};
            for (size_t i = 0; i < ${full}u; i += ${L}u)
                s += *(const vfu *)(xr + i);
            mean = ${hsum('s')};
        }
% endif
% if full < n:
        for (size_t i = ${full}u; i < ${n}u; ++i)
            mean += xr[i];
% endif
        mean /= ${c_float(n)};
% if full:
        {
            vf sd = (vf){0}, sq = (vf){0};
            for (size_t i = 0; i < ${full}u; i += ${L}u) {
                const vf d = *(const vfu *)(xr + i) - mean;
                sd += d;
                sq += d * d;
            }
            shift = ${hsum('sd')};
            var = ${hsum('sq')};
        }
% endif
% if full < n:
        for (size_t i = ${full}u; i < ${n}u; ++i) {
            const float d = xr[i] - mean;
            shift += d;
            var += d * d;
        }
% endif
        shift /= ${c_float(n)};
        var = var / ${c_float(n)} - shift * shift;
        var = var > 0.0f ? var : 0.0f;
        mean += shift;
        const float inv = 1.0f / sqrtf(var + ${c_float(p['epsilon'])});
% if full:
        for (size_t i = 0; i < ${full}u; i += ${L}u)
            *(vfu *)(yr + i) = (*(const vfu *)(xr + i) - mean) * inv * *(const vfu *)(scale + i)${' + *(const vfu *)(bias + i)' if p['bias'] else ''};
% endif
% if full < n:
        for (size_t i = ${full}u; i < ${n}u; ++i)
            yr[i] = (xr[i] - mean) * inv * scale[i]${' + bias[i]' if p['bias'] else ''};
% endif
% if p['stats']:
        mean_out[r] = mean;
        inv_std_dev[r] = inv;
% endif
    }
}

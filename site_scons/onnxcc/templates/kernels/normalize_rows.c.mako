<%doc>
  Each of the rows of n elements is normalized:
% if p['rms']:
  y = x / sqrt(mean(x^2) + epsilon) * scale[s]
% else:
  y = (x - mean) / sqrt(variance + epsilon) * scale[s]${' + bias[s]' if p['bias'] else ''}
% endif
  where s = (row % ${p['period']}) * ${p['stride']} + i / ${p['div']} picks the scale of element i of the row.
</%doc>\
<%
    n = p['n']
    terms = []
    if p['stride']:
        terms.append(f"(r % {p['period']}u) * {p['stride']}u" if p['period'] > 1 else None)
    if p['div'] == 1:
        terms.append('i')
    elif p['div'] < n:
        terms.append(f'i / {p["div"]}u')
    s = ' + '.join(t for t in terms if t) or '0'
%>\
${signature}
{
    for (size_t r = 0; r < ${p['rows']}u; ++r) {
        const float *xr = x + r * ${n}u;
        float *yr = y + r * ${n}u;
% if p['rms']:
        const float mean = 0.0f;
% else:
        float mean = 0.0f;
        for (size_t i = 0; i < ${n}u; ++i)
            mean += xr[i];
        mean /= ${c_float(n)};
% endif
        float var = 0.0f;
% if p['rms']:
        for (size_t i = 0; i < ${n}u; ++i)
            var += xr[i] * xr[i];
        var /= ${c_float(n)};
% else:
        /* corrected two-pass (Chan, Golub, LeVeque): the deviations also sum the rounding
           error of the mean, which matters when the values differ in their last bits */
        float shift = 0.0f;
        for (size_t i = 0; i < ${n}u; ++i) {
            const float d = xr[i] - mean;
            shift += d;
            var += d * d;
        }
        shift /= ${c_float(n)};
        var = var / ${c_float(n)} - shift * shift;
        var = var > 0.0f ? var : 0.0f;
        mean += shift;
% endif
        const float inv = 1.0f / sqrtf(var + ${c_float(p['epsilon'])});
        for (size_t i = 0; i < ${n}u; ++i)
            yr[i] = (xr[i] - mean) * inv * scale[${s}]${f' + bias[{s}]' if p['bias'] else ''};
% if p['stats']:
        mean_out[r] = mean;
        inv_std_dev[r] = inv;
% endif
    }
}

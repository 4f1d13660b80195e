<%doc>
  ${'Inverse ' if p['inverse'] else ''}DFT of length ${p['length']} along an axis of ${p['n']} ${'complex' if p['x_complex'] else 'real'} values${' (one-sided)' if p['onesided'] else ''}:
% if p['inverse'] and p['onesided']:
  y[j] = 1/L * sum over k < L of Re(X[k] e^(2 pi i j k / L)), X[L - k] = conj(X[k]) beyond the half given.
% elif p['inverse']:
  y[j] = 1/L * sum over k of x[k] e^(2 pi i j k / L).
% else:
  y[k] = sum over j of x[j] e^(-2 pi i j k / L), for the ${p['bins']} bins kept.
% endif
  cos_t[m] and sin_t[m] are cos and sin of 2 pi m / L.
</%doc>\
<%
    n, L, inner = p['n'], p['length'], p['inner']
    cx, cy = 2 if p['x_complex'] else 1, 2 if p['y_complex'] else 1
    used = min(n, L)
%>\
${signature}
{
    static const float cos_t[${L}] = {${', '.join(c_float(v) for v in p['cos'])}};
    static const float sin_t[${L}] = {${', '.join(c_float(v) for v in p['sin'])}};
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        for (size_t i = 0; i < ${inner}u; ++i) {
            const float *xo = x + (o * ${n * inner}u + i) * ${cx}u;
            float *yo = y + (o * ${p['bins'] * inner}u + i) * ${cy}u;
            for (size_t k = 0; k < ${p['bins']}u; ++k) {
% if p['inverse'] and p['onesided']:
                float re = 0.0f;
                for (size_t j = 0; j < ${L}u; ++j) { /* the full spectrum from its half */
                    const size_t bin = j <= ${L // 2}u ? j : ${L}u - j;
                    if (bin >= ${n}u)
                        continue;
                    const float xr = xo[bin * ${inner * cx}u];
                    const float xi = ${'(j <= %du ? 1.0f : -1.0f) * xo[bin * %du + 1u]' % (L // 2, inner * cx) if cx == 2 else '0.0f'};
                    const size_t m = (j * k) % ${L}u;
                    re += xr * cos_t[m] - xi * sin_t[m];
                }
                yo[k * ${inner * cy}u] = re * ${c_float(1.0 / L)};
% else:
                float re = 0.0f, im = 0.0f;
                for (size_t j = 0; j < ${used}u; ++j) {
                    const float xr = xo[j * ${inner * cx}u];
                    const float xi = ${f'xo[j * {inner * cx}u + 1u]' if cx == 2 else '0.0f'};
                    const size_t m = (j * k) % ${L}u;
% if p['inverse']:
                    re += xr * cos_t[m] - xi * sin_t[m];
                    im += xi * cos_t[m] + xr * sin_t[m];
% else:
                    re += xr * cos_t[m] + xi * sin_t[m];
                    im += xi * cos_t[m] - xr * sin_t[m];
% endif
                }
% if p['inverse']:
                yo[k * ${inner * cy}u] = re * ${c_float(1.0 / L)};
                yo[k * ${inner * cy}u + 1u] = im * ${c_float(1.0 / L)};
% else:
                yo[k * ${inner * cy}u] = re;
                yo[k * ${inner * cy}u + 1u] = im;
% endif
% endif
            }
        }
    }
}

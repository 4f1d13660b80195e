<%doc> LpNormalization: x divided by its L${p['p']} norm over n elements spaced inner apart (0 stays 0). </%doc>\
<% n, inner = p['n'], p['inner'] %>\
${signature}
{
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        for (size_t s = 0; s < ${inner}u; ++s) {
            const float *xo = x + o * ${n * inner}u + s;
            float *yo = y + o * ${n * inner}u + s;
            float norm = 0.0f;
            for (size_t i = 0; i < ${n}u; ++i)
% if p['p'] == 1:
                norm += fabsf(xo[i * ${inner}u]);
% else:
                norm += xo[i * ${inner}u] * xo[i * ${inner}u];
            norm = sqrtf(norm);
% endif
            for (size_t i = 0; i < ${n}u; ++i)
                yo[i * ${inner}u] = norm == 0.0f ? 0.0f : xo[i * ${inner}u] / norm;
        }
    }
}

<%doc>
  ${p['kind']} over n elements spaced inner apart; the max is subtracted for range safety.
</%doc>\
<% n, inner, kind = p['n'], p['inner'], p['kind'] %>\
${signature}
{
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        for (size_t s = 0; s < ${inner}u; ++s) {
            const float *xo = x + o * ${n * inner}u + s;
            float *yo = y + o * ${n * inner}u + s;
% if kind == 'Hardmax':
            size_t best = 0;
            for (size_t i = 1; i < ${n}u; ++i)
                best = xo[i * ${inner}u] > xo[best * ${inner}u] ? i : best;
            for (size_t i = 0; i < ${n}u; ++i)
                yo[i * ${inner}u] = i == best ? 1.0f : 0.0f;
% else:
            float max = xo[0];
            for (size_t i = 1; i < ${n}u; ++i)
                max = xo[i * ${inner}u] > max ? xo[i * ${inner}u] : max;
            float sum = 0.0f;
% if kind == 'LogSoftmax':
            for (size_t i = 0; i < ${n}u; ++i)
                sum += expf(xo[i * ${inner}u] - max);
            const float shift = max + logf(sum);
            for (size_t i = 0; i < ${n}u; ++i)
                yo[i * ${inner}u] = xo[i * ${inner}u] - shift;
% else:
            for (size_t i = 0; i < ${n}u; ++i) {
                const float e = expf(xo[i * ${inner}u] - max);
                yo[i * ${inner}u] = e;
                sum += e;
            }
            const float inv = 1.0f / sum;
            for (size_t i = 0; i < ${n}u; ++i)
                yo[i * ${inner}u] *= inv;
% endif
% endif
        }
    }
}

<%doc>
  ${p['kind']} over n elements spaced inner apart; the max is subtracted for range safety.
</%doc>\
<%
    n, inner, kind = p['n'], p['inner'], p['kind']
    T = c_type(p['dtype'])
    f = 'f' if p['dtype'] == 'float32' else ''  # expf / exp
%>\
${signature}
{
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        for (size_t s = 0; s < ${inner}u; ++s) {
            const ${T} *xo = x + o * ${n * inner}u + s;
            ${T} *yo = y + o * ${n * inner}u + s;
% if kind == 'Hardmax':
            size_t best = 0;
            for (size_t i = 1; i < ${n}u; ++i)
                best = xo[i * ${inner}u] > xo[best * ${inner}u] ? i : best;
            for (size_t i = 0; i < ${n}u; ++i)
                yo[i * ${inner}u] = i == best ? 1 : 0;
% else:
${column(T, n, inner, kind, 'exp' + f, 'log' + f)}\
% endif
        }
    }
}
<%doc>
  Softmax or LogSoftmax of the n elements xo[i * inner] into yo[i * inner], with the
  functions `exp` and `log` (libm's, or vmath's in the vector kernel's last columns).
</%doc>
<%def name="column(T, n, inner, kind, exp, log)">\
            ${T} max = xo[0];
            for (size_t i = 1; i < ${n}u; ++i)
                max = xo[i * ${inner}u] > max ? xo[i * ${inner}u] : max;
            ${T} sum = 0;
% if kind == 'LogSoftmax':
            for (size_t i = 0; i < ${n}u; ++i)
                sum += ${exp}(xo[i * ${inner}u] - max);
            const ${T} shift = max + ${log}(sum);
            for (size_t i = 0; i < ${n}u; ++i)
                yo[i * ${inner}u] = xo[i * ${inner}u] - shift;
% else:
            for (size_t i = 0; i < ${n}u; ++i) {
                const ${T} e = ${exp}(xo[i * ${inner}u] - max);
                yo[i * ${inner}u] = e;
                sum += e;
            }
            const ${T} inv = 1 / sum;
            for (size_t i = 0; i < ${n}u; ++i)
                yo[i * ${inner}u] *= inv;
% endif
</%def>

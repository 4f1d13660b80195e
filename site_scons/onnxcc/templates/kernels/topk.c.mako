<%doc>
  TopK: the k ${'largest' if p['better'] == '>' else 'smallest'} of n elements spaced inner apart, best first; among equal
  values the lower index comes first. Pick j is the best element ranked after pick j-1
  (no scratch memory: O(k n) comparisons).
</%doc>\
<% n, inner, k, better = p['n'], p['inner'], p['k'], p['better'] %>\
${signature}
{
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        for (size_t s = 0; s < ${inner}u; ++s) {
            const ${c_type(p['dtype'])} *xo = x + o * ${n * inner}u + s;
            size_t previous = 0;
            for (size_t j = 0; j < ${k}u; ++j) {
                size_t best = ${n}u;
                for (size_t i = 0; i < ${n}u; ++i) {
                    const int after_previous = j == 0 || xo[previous * ${inner}u] ${better} xo[i * ${inner}u]
                        || (xo[i * ${inner}u] == xo[previous * ${inner}u] && i > previous);
                    if (after_previous && (best == ${n}u || xo[i * ${inner}u] ${better} xo[best * ${inner}u]))
                        best = i;
                }
                previous = best;
                values[(o * ${k}u + j) * ${inner}u + s] = xo[best * ${inner}u];
                indices[(o * ${k}u + j) * ${inner}u + s] = (int64_t)best;
            }
        }
    }
}

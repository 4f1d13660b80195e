<%doc>
  ${p['kind']}: the index along the reduced axis of the ${'largest' if p['kind'] == 'ArgMax' else 'smallest'} element, for every outer and
  inner position; ties go to the ${'last' if p['last'] else 'first'} index.
</%doc>\
<% outer, n, inner = p['outer'], p['n'], p['inner'] %>\
${signature}
{
    for (size_t o = 0; o < ${outer}u; ++o) {
        for (size_t i = 0; i < ${inner}u; ++i) {
            const ${c_type(p['dtype'])} *const xo = x + o * ${n * inner}u + i;
            size_t best = 0;
            for (size_t k = 1; k < ${n}u; ++k)
                if (xo[k * ${inner}u] ${p['better']} xo[best * ${inner}u])
                    best = k;
            y[o * ${inner}u + i] = (int64_t)best;
        }
    }
}

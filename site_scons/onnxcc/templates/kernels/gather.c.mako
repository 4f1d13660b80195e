<%doc>
  Gather: y[o][j][i] = x[o][indices[j]][i], whole inner rows at a time; a negative index
  counts from the end of the gathered axis.
</%doc>\
<% outer, n, count, inner = p['outer'], p['n'], p['count'], p['inner'] %>\
${signature}
{
    for (size_t o = 0; o < ${outer}u; ++o) {
        for (size_t j = 0; j < ${count}u; ++j) {
            const ptrdiff_t k = (ptrdiff_t)indices[j] + (indices[j] < 0 ? ${n} : 0);
            memcpy(y + (o * ${count}u + j) * ${inner}u, x + (o * ${n}u + (size_t)k) * ${inner}u,
                   ${inner}u * sizeof y[0]);
        }
    }
}

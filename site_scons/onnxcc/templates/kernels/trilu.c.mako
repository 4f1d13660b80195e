<%doc>
  Trilu: each rows x cols matrix keeps the elements on and ${'above' if p['upper'] else 'below'}
  diagonal k (column - row ${'>=' if p['upper'] else '<='} k); the others become 0.
</%doc>\
<% rows, cols = p['rows'], p['cols'] %>\
${signature}
{
    for (size_t m = 0; m < ${p['count']}u; ++m) {
        for (ptrdiff_t r = 0; r < ${rows}; ++r) {
            for (ptrdiff_t c = 0; c < ${cols}; ++c) {
                const size_t i = (m * ${rows}u + (size_t)r) * ${cols}u + (size_t)c;
                y[i] = c - r ${'>=' if p['upper'] else '<='} ${p['k']} ? x[i] : 0;
            }
        }
    }
}

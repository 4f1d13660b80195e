<%doc>
  ScatterND: y = data, then for each index tuple j (negative numbers counting from the
  end) the slice of y it points at takes updates' j-th slice (or is combined with it).
</%doc>\
<% count, k, slice_, dims, strides = p['count'], p['k'], p['slice'], p['dims'], p['strides'] %>\
${signature}
{
    memcpy(y, data, ${p['size']}u * sizeof y[0]);
    for (size_t j = 0; j < ${count}u; ++j) {
        const ${p['index_ctype']} *t = indices + j * ${k}u;
        ptrdiff_t offset = 0;
% for q in range(k):
        offset += ((ptrdiff_t)t[${q}] + (t[${q}] < 0 ? ${dims[q]} : 0)) * ${strides[q]};
% endfor
        for (size_t e = 0; e < ${slice_}u; ++e) {
            ${c_type(p['dtype'])} *const to = &y[offset + (ptrdiff_t)e];
            ${p['combine'].format(to='*to', update=f'updates[j * {slice_}u + e]')};
        }
    }
}

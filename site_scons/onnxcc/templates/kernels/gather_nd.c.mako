<%doc>
  GatherND: for each batch b and index tuple j (k numbers, negative ones counting from the
  end), y's j-th slice of the batch = the slice of x the tuple points at.
</%doc>\
<%
    batch, count, k, slice_ = p['batch'], p['count'], p['k'], p['slice']
    dims, strides = p['dims'], p['strides']
%>\
${signature}
{
    for (size_t b = 0; b < ${batch}u; ++b) {
        for (size_t j = 0; j < ${count}u; ++j) {
            const ${p['index_ctype']} *t = indices + (b * ${count}u + j) * ${k}u;
            ptrdiff_t offset = (ptrdiff_t)b * ${p['batch_stride']};
% for q in range(k):
            offset += ((ptrdiff_t)t[${q}] + (t[${q}] < 0 ? ${dims[q]} : 0)) * ${strides[q]};
% endfor
            memcpy(y + (b * ${count}u + j) * ${slice_}u, x + offset, ${slice_}u * sizeof y[0]);
        }
    }
}

<%doc>
  OneHot: y[o][d][i] = values[1] where the index at [o][i] (negative ones counting from
  the end) equals d, else values[0].
</%doc>\
<% outer, depth, inner = p['outer'], p['depth'], p['inner'] %>\
${signature}
{
    for (size_t o = 0; o < ${outer}u; ++o) {
        for (size_t i = 0; i < ${inner}u; ++i) {
            int64_t k = (int64_t)indices[o * ${inner}u + i];
            if (k < 0)
                k += ${depth};
            for (int64_t d = 0; d < ${depth}; ++d)
                y[(o * ${depth}u + (size_t)d) * ${inner}u + i] = d == k ? values[1] : values[0];
        }
    }
}

<%doc>
  Transposed convolution, NC + ${len(p['in'])} spatial dimensions, as a scatter: every input
  element adds its products with the kernel (weights [C][M/group][kernel]) to the outputs
  it reaches, o = i * stride - pad + k * dilation; y starts as the bias.
</%doc>\
<%
    n, c, m, group = p['n'], p['c'], p['m'], p['group']
    cg, mg = c // group, m // group
    ins, outs, ks = p['in'], p['out'], p['kernel']
    r = len(ins)
    in_size, out_size, k_size = 1, 1, 1
    for v in ins: in_size *= v
    for v in outs: out_size *= v
    for v in ks: k_size *= v
    def flat(names, dims):
        e = names[0]
        for name, d in zip(names[1:], dims[1:]):
            e = f"({e}) * {d} + {name}"
        return e
    ind = lambda k: '    ' * k
%>\
${signature}
{
    for (size_t i = 0; i < ${n * m * out_size}u; ++i)
        y[i] = ${f'b[(i / {out_size}u) % {m}u]' if p['bias'] else '0.0f'};
    for (int nb = 0; nb < ${n}; ++nb) {
        for (int ic = 0; ic < ${c}; ++ic) {
            const float *xc = x + ((size_t)nb * ${c} + ic) * ${in_size}u;
            float *yg = y + ((size_t)nb * ${m} + ic / ${cg} * ${mg}) * ${out_size}u;
            const float *wc = w + (size_t)ic * ${mg * k_size}u;
% for d in range(r):
${ind(3 + d)}for (int i${d} = 0; i${d} < ${ins[d]}; ++i${d}) {
% endfor
${ind(3 + r)}const float v = xc[${flat([f'i{d}' for d in range(r)], ins)}];
${ind(3 + r)}for (int oc = 0; oc < ${mg}; ++oc) {
% for d in range(r):
${ind(4 + r + d)}for (int k${d} = 0; k${d} < ${ks[d]}; ++k${d}) {
${ind(5 + r + d)}const int o${d} = i${d} * ${p['strides'][d]} - ${p['pads'][d]} + k${d} * ${p['dilations'][d]};
${ind(5 + r + d)}if (o${d} < 0 || o${d} >= ${outs[d]})
${ind(6 + r + d)}continue;
% endfor
${ind(4 + 2 * r)}yg[(size_t)oc * ${out_size}u + (size_t)(${flat([f'o{d}' for d in range(r)], outs)})] +=
${ind(5 + 2 * r)}v * wc[(size_t)oc * ${k_size}u + (size_t)(${flat([f'k{d}' for d in range(r)], ks)})];
% for d in reversed(range(r)):
${ind(4 + r + d)}}
% endfor
${ind(3 + r)}}
% for d in reversed(range(r)):
${ind(3 + d)}}
% endfor
        }
    }
}

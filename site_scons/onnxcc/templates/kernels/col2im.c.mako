<%doc>
  Col2Im: y starts at 0; column l (a block position) of channel c's block element k adds
  x[n][c * K + k][l] to the pixel o = position * stride - pad + offset * dilation it covers.
</%doc>\
<%
    image, block, positions = p['image'], p['block'], p['positions']
    r = len(image)
    K = L = size = 1
    for v in block: K *= v
    for v in positions: L *= v
    for v in image: size *= v
    def flat(names, dims):
        e = names[0]
        for name, d in zip(names[1:], dims[1:]):
            e = f"({e}) * {d} + {name}"
        return e
    ind = lambda k: '    ' * k
%>\
${signature}
{
    memset(y, 0, ${p['n'] * p['c'] * size}u * sizeof y[0]);
    for (int nc = 0; nc < ${p['n'] * p['c']}; ++nc) {
        const float *xc = x + (size_t)nc * ${K * L}u;
        float *yc = y + (size_t)nc * ${size}u;
% for d in range(r):
${ind(2 + d)}for (int k${d} = 0; k${d} < ${block[d]}; ++k${d}) {
% endfor
% for d in range(r):
${ind(2 + r + d)}for (int l${d} = 0; l${d} < ${positions[d]}; ++l${d}) {
${ind(3 + r + d)}const int o${d} = l${d} * ${p['strides'][d]} - ${p['pads'][d]} + k${d} * ${p['dilations'][d]};
${ind(3 + r + d)}if (o${d} < 0 || o${d} >= ${image[d]})
${ind(4 + r + d)}continue;
% endfor
${ind(2 + 2 * r)}yc[${flat([f'o{d}' for d in range(r)], image)}] +=
${ind(3 + 2 * r)}xc[(${flat([f'k{d}' for d in range(r)], block)}) * ${L} + ${flat([f'l{d}' for d in range(r)], positions)}];
% for d in reversed(range(2 * r)):
${ind(2 + d)}}
% endfor
    }
}

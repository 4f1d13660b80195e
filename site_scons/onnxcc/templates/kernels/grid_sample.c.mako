<%doc>
  GridSample, ${p['mode']}, ${p['padding']} padding${', corners aligned' if p['align_corners'] else ''}: every output position reads the
  grid's coordinates (in [-1, 1], last spatial dimension first), turns them into input
  coordinates, and sums ${p['taps']} tap(s) per dimension with their weights; a tap outside the
  input reads ${ {'zeros': '0', 'border': 'the border', 'reflection': 'its reflection'}[p['padding']] }.
</%doc>\
<%
    dims, strides, R, T = p['dims'], p['strides'], len(p['dims']), p['taps']
    size = 1
    for d in dims: size *= d
    def reflect(v, d, indent):
        """C statements reflecting ``v`` at dimension d's borders until it lies inside."""
        lo, hi = c_float(p['low'][d]), c_float(p['high'][d])
        span = c_float(p['high'][d] - p['low'][d])
        pad = ' ' * indent
        return '\n'.join([
            f"if ({v} < {lo} || {v} > {hi}) {{ /* reflect at the borders until inside */",
            f"{pad}    const float over = {v} < {lo} ? {lo} - {v} : {v} - {hi};",
            f"{pad}    const int flips = (int)(over / {span});",
            f"{pad}    const float rest = over - (float)flips * {span};",
            f"{pad}    {v} = ({v} < {lo}) == (flips % 2 == 0) ? {lo} + rest : {hi} - rest;",
            f"{pad}}}"])
%>\
${signature}
{
    for (size_t n = 0; n < ${p['n']}u; ++n) {
        for (size_t o = 0; o < ${p['out']}u; ++o) {
            const float *g = grid + (n * ${p['out']}u + o) * ${R}u;
% for d in range(R):
            ptrdiff_t index${d}[${T}];
            float weight${d}[${T}];
            {
% if p['align_corners']:
                float v = (g[${R - 1 - d}] + 1.0f) * ${c_float((dims[d] - 1) / 2)};
% else:
                float v = ((g[${R - 1 - d}] + 1.0f) * ${c_float(dims[d])} - 1.0f) * 0.5f;
% endif
% if p['mode'] == 'nearest':
                v = rintf(v); /* half to even */
% endif
% if p['padding'] == 'border':
                v = v < ${c_float(p['low'][d])} || v > ${c_float(p['high'][d])} ? (v < 0.0f ? 0.0f : (v > ${c_float(dims[d] - 1)} ? ${c_float(dims[d] - 1)} : v)) : v;
% elif p['padding'] == 'reflection':
                ${reflect('v', d, 16)}
% endif
% if p['mode'] == 'nearest':
                index${d}[0] = (ptrdiff_t)v;
                weight${d}[0] = 1.0f;
% else:
                const float first = floorf(v);
                const float t = v - first;
% if p['mode'] == 'linear':
                weight${d}[0] = 1.0f - t;
                weight${d}[1] = t;
% else:
                /* Keys' cubic convolution, a = -0.75 */
                weight${d}[0] = ((-0.75f * (t + 1.0f) + 3.75f) * (t + 1.0f) - 6.0f) * (t + 1.0f) + 3.0f;
                weight${d}[1] = (1.25f * t - 2.25f) * t * t + 1.0f;
                weight${d}[2] = (1.25f * (1.0f - t) - 2.25f) * (1.0f - t) * (1.0f - t) + 1.0f;
                weight${d}[3] = ((-0.75f * (2.0f - t) + 3.75f) * (2.0f - t) - 6.0f) * (2.0f - t) + 3.0f;
% endif
                for (int k = 0; k < ${T}; ++k)
                    index${d}[k] = (ptrdiff_t)first + k${' - 1' if T == 4 else ''};
% endif
                for (int k = 0; k < ${T}; ++k) {
% if p['padding'] == 'zeros':
                    if (index${d}[k] < 0 || index${d}[k] >= ${dims[d]}) {
                        index${d}[k] = 0;
                        weight${d}[k] = 0.0f; /* outside: reads 0 */
                    }
% elif p['padding'] == 'border':
                    index${d}[k] = index${d}[k] < 0 ? 0 : (index${d}[k] > ${dims[d] - 1} ? ${dims[d] - 1} : index${d}[k]);
% else:
                    float u = (float)index${d}[k];
                    ${reflect('u', d, 20)}
                    index${d}[k] = (ptrdiff_t)u;
% endif
                }
            }
% endfor
            for (size_t c = 0; c < ${p['c']}u; ++c) {
                const float *xc = x + (n * ${p['c']}u + c) * ${size}u;
                float acc = 0.0f;
% for d in range(R):
                ${'    ' * d}for (int k${d} = 0; k${d} < ${T}; ++k${d})
% endfor
                ${'    ' * R}acc += ${' * '.join(f'weight{d}[k{d}]' for d in range(R))} * xc[${' + '.join(f'index{d}[k{d}] * {strides[d]}' for d in range(R))}];
                y[(n * ${p['c']}u + c) * ${p['out']}u + o] = acc;
            }
        }
    }
}

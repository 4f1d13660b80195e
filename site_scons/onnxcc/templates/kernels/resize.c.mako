<%doc>
  Separable resampling: along each resized axis d, output coordinate o reads the input
  coordinates index_d[o][k] with weights weight_d[o][k] (k < taps); an output element is
  the sum over the tap combinations of the weights' product times the input element.
  Axes that are not resized read their own coordinate.
</%doc>\
<%
    out, xs, axes = p['out_shape'], p['x_strides'], p['axes']
    rank = len(out)
    resized = [d for d in range(rank) if axes[d]]
    def tap(d):
        return f"o{d} * {axes[d]['taps']}u + k{d}"
    offset = ' + '.join((f"(size_t)index{d}[{tap(d)}] * {xs[d]}u" if axes[d] else f"o{d} * {xs[d]}u")
                        for d in range(rank) if xs[d]) or '0'
    weights = ' * '.join(f"weight{d}[{tap(d)}]" for d in resized if axes[d]['weight'])
    outside = ' || '.join(f"outside{d}[o{d}]" for d in resized if axes[d]['outside'])
    ind = '    ' * (rank + 1)
%>\
${signature}
{
% for d in resized:
    static const int32_t index${d}[${len(axes[d]['index'])}] = {${', '.join(map(str, axes[d]['index']))}};
% if axes[d]['weight']:
    static const float weight${d}[${len(axes[d]['weight'])}] = {${', '.join(c_float(w) for w in axes[d]['weight'])}};
% endif
% if axes[d]['outside']:
    static const uint8_t outside${d}[${len(axes[d]['outside'])}] = {${', '.join(map(str, axes[d]['outside']))}};
% endif
% endfor
    size_t t = 0;
% for d in range(rank):
${'    ' * (d + 1)}for (size_t o${d} = 0; o${d} < ${out[d]}u; ++o${d}) {
% endfor
${ind}float acc = 0.0f;
% for j, d in enumerate(resized):
${ind}${'    ' * j}for (size_t k${d} = 0; k${d} < ${axes[d]['taps']}u; ++k${d})
% endfor
${ind}${'    ' * len(resized)}acc += ${weights + ' * ' if weights else ''}x[${offset}];
% if outside:
${ind}y[t++] = ${outside} ? ${c_float(p['extrapolation'])} : acc;
% else:
${ind}y[t++] = acc;
% endif
% for d in reversed(range(rank)):
${'    ' * (d + 1)}}
% endfor
}

<%doc>
  Running ${'product' if p['combine'] == '*=' else 'sum'} along n elements spaced inner apart, ${'from the last' if p['reverse'] else 'from the first'};
  ${'exclusive: element i gets the elements before it' if p['exclusive'] else 'inclusive: element i gets the elements up to itself'}.
</%doc>\
<% n, inner = p['n'], p['inner'] %>\
${signature}
{
    for (size_t o = 0; o < ${p['outer']}u; ++o) {
        for (size_t s = 0; s < ${inner}u; ++s) {
            ${c_type(p['dtype'])} acc = ${p['identity']};
            for (size_t j = 0; j < ${n}u; ++j) {
                const size_t i = o * ${n * inner}u + (${f'{n - 1}u - j' if p['reverse'] else 'j'}) * ${inner}u + s;
% if p['exclusive']:
                y[i] = acc;
                acc ${p['combine']} x[i];
% else:
                acc ${p['combine']} x[i];
                y[i] = acc;
% endif
            }
        }
    }
}

<%doc>
  y[i] = f(x[i]) for the op's own function f, then the ops fused after it (float32 only).
</%doc>\
${signature}
{
    for (size_t i = 0; i < ${p['n']}u; ++i) {
        const ${c_type(p['x_dtype'])} u = x[i];
        ${c_type(p['y_dtype'])} v = ${expression('u', p['chain'][0], p['y_dtype'])};
% if len(p['chain']) > 1:
        ${epilogue('v', p['chain'][1:], dtype=p['y_dtype'])}
% endif
        y[i] = v;
    }
}

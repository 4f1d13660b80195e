<%doc> y = chain(x), element by element, in vectors of `lanes` (the rest one by one). </%doc>\
<% n, lanes = p['n'], p['lanes'] %>\
${signature}
{
    typedef float vf __attribute__((vector_size(${4 * lanes})));
    typedef int32_t vi __attribute__((vector_size(${4 * lanes})));
    typedef float vfu __attribute__((vector_size(${4 * lanes}), aligned(4), may_alias));
    for (size_t i = 0; i < ${n // lanes * lanes}u; i += ${lanes}) {
        vf v = *(const vfu *)(x + i);
        ${vector_epilogue('v', p['chain'], ['i'], 0, lanes, lanes)}
        *(vfu *)(y + i) = v;
    }
% if n % lanes:
    for (size_t i = ${n // lanes * lanes}u; i < ${n}u; ++i) {
        float v = x[i];
        ${epilogue('v', p['chain'], ['i'])}
        y[i] = v;
    }
% endif
}

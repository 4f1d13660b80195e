<%namespace name="simd" file="/kernels/simd.mako"/>\
<%namespace name="tl" file="/kernels/tile.mako"/>\
<%doc> y = chain(x), element by element, in vectors of `lanes` (the rest one by one). </%doc>\
<% n, lanes = p['n'], p['lanes'] %>\
## Contracted on SIMD CPUs: vmath's polynomials take fused multiply-adds, as in the blocked
## kernels' epilogues (on one-lane vectors it costs the Cortex-M4 7% more instructions in tanh)
${tl.contracted(signature) if lanes > 1 else signature}
{
% if n >= lanes:  ## (a patch of a tensor may be shorter than a vector: no vector loop, no vector types)
${simd.types(lanes, True)}\
    for (size_t i = 0; i < ${n // lanes * lanes}u; i += ${lanes}) {
        vf v = *(const vfu *)(x + i);
        ${vector_epilogue('v', p['chain'], ['i'], 0, lanes, lanes)}
        *(vfu *)(y + i) = v;
    }
% endif
% if n % lanes:
    for (size_t i = ${n // lanes * lanes}u; i < ${n}u; ++i) {
        float v = x[i];
        ${epilogue('v', p['chain'], ['i'], fast=True)}
        y[i] = v;
    }
% endif
}

<%namespace name="simd" file="/kernels/lib/simd.mako"/>\
<%namespace name="tl" file="/kernels/lib/tile.mako"/>\
<%doc> y = chain(x), element by element, in vectors of `lanes` (the rest one by one). </%doc>\
<% n, lanes = p['n'], p['lanes'] %>\
## Contracted on SIMD CPUs: vmath's polynomials take fused multiply-adds, as in the blocked
## kernels' epilogues (on one-lane vectors it costs the Cortex-M4 7% more instructions in tanh)
${tl.contracted(signature) if lanes > 1 else signature}
{
${simd.types(lanes)}\
<%simd:loop i="i" start="${0}" stop="${n // lanes * lanes}" step="${lanes}" indent="    ">\
        vf v = *(const vfu *)(x + i);
        ${vector_epilogue('v', p['chain'], ['i'], 0, lanes, lanes)}
        *(vfu *)(y + i) = v;
</%simd:loop>\
<%simd:loop i="i" start="${n // lanes * lanes}" stop="${n}" step="${1}" indent="    ">\
        float v = x[i];
        ${epilogue('v', p['chain'], ['i'], fast=True)}
        y[i] = v;
</%simd:loop>\
}

<%doc>
  The register-blocked GEMM tile of the blocked kernels (conv2d_1x1, conv2d_im2col,
  conv2d_implicit, gemm_blocked): rows x vecs accumulators of `lanes` floats stay in
  registers while the sum runs; each step loads `vecs` vectors of B and broadcasts `rows`
  values of A. lanes == 1 is the scalar fallback: plain floats, the same code otherwise.
  Vectors are GCC vector extensions (vf), so one template serves AVX2, NEON and scalar
  CPUs; the sizes come from ops/tiling.py.
</%doc>

## The vector types (once per kernel function that uses lanes > 1).
<%def name="types(lanes)">\
% if lanes > 1:
    typedef float vf __attribute__((vector_size(${4 * lanes})));
    typedef float vfu __attribute__((vector_size(${4 * lanes}), aligned(4), may_alias));
% endif
</%def>

<%doc>
  One tile. The sum runs over kc = 0..count-1, each with `taps` unrolled steps t:
  a_at(i, t) is the C expression of A's value for row i, b_at(t) the C pointer to the
  step's first B value (both may use kc); init(i) a row's first value (broadcast).
  Row i of the result (its first `width` columns) is stored at pointer out(i).
</%doc>
<%def name="tile(rows, vecs, lanes, count, taps, a_at, b_at, init, out, width, indent)">\
<%
    ind = ' ' * indent
    acc_type = 'vf' if lanes > 1 else 'float'
    def ld(ptr):
        return f'*(const vfu *)({ptr})' if lanes > 1 else f'*({ptr})'
    def first(i):
        value = init(i)
        return value if lanes == 1 else '(vf){0}' if value == '0.0f' else f'(vf){{0}} + {value}'
%>\
${ind}{
% for i in range(rows):
${ind}    ${acc_type} ${', '.join(f'acc{i}_{v} = {first(i)}' for v in range(vecs))};
% endfor
${ind}    for (int kc = 0; kc < ${count}; ++kc) {
% for t in range(taps):
${ind}        {
${ind}            const ${acc_type} ${', '.join(f'bv{v} = {ld(f"{b_at(t)} + {v * lanes}")}' for v in range(vecs))};
% for i in range(rows):
${ind}            { const float av = ${a_at(i, t)}; ${' '.join(f'acc{i}_{v} += bv{v} * av;' for v in range(vecs))} }
% endfor
${ind}        }
% endfor
${ind}    }
% for i in range(rows):
% if lanes == 1:
${ind}    { float *o = ${out(i)}; ${' '.join(f'o[{v}] = acc{i}_{v};' for v in range(width))} }
% elif width == vecs * lanes:
${ind}    { float *o = ${out(i)}; ${' '.join(f'*(vfu *)(o + {v * lanes}) = acc{i}_{v};' for v in range(vecs))} }
% else:
${ind}    {
${ind}        float part[${vecs * lanes}];
${ind}        ${' '.join(f'*(vfu *)(part + {v * lanes}) = acc{i}_{v};' for v in range(vecs))}
${ind}        memcpy(${out(i)}, part, ${width}u * sizeof(float));
${ind}    }
% endif
% endfor
${ind}}
</%def>

<%doc>
  The epilogue over a stored tile: rows x width results, row i at pointer out(i), with
  the kernel coordinates coords(i, 'jj') (jj: the column in the tile). A plain loop the
  compiler vectorizes when the chain allows.
</%doc>
<%def name="finish(rows, width, out, coords, chain, indent)">\
% if chain:
<% ind = ' ' * indent %>\
% for i in range(rows):
${ind}for (int jj = 0; jj < ${width}; ++jj) {
${ind}    float *o = ${out(i)} + jj;
${ind}    float v = *o;
${ind}    ${epilogue('v', chain, coords(i, 'jj'))}
${ind}    *o = v;
${ind}}
% endfor
% endif
</%def>

<%doc>
  All row blocks of one column tile: A is packed in panels of `rows` rows (`panel`
  floats each) starting at pointer `a_base`; block r0 is bound to `wp` (its panel) and
  `r0` (its first row) for the caller's a_at / init / out / coords. The last block may
  have fewer rows (its panel is zero-padded).
</%doc>
<%def name="row_blocks(m, rows, vecs, lanes, count, taps, a_base, panel, a_at, b_at, init, out, width, coords, chain, indent)">\
<%
    ind = ' ' * indent
    full, rest = divmod(m, rows)
%>\
% if full:
${ind}for (int mb = 0; mb < ${full}; ++mb) {
${ind}    const float *wp = ${a_base} + (size_t)mb * ${panel}u;
${ind}    const int r0 = mb * ${rows};
${tile(rows, vecs, lanes, count, taps, a_at, b_at, init, out, width, indent + 4)}\
${finish(rows, width, out, coords, chain, indent + 4)}\
${ind}}
% endif
% if rest:
${ind}{
${ind}    const float *wp = ${a_base} + ${full * panel}u;
${ind}    const int r0 = ${full * rows};
${tile(rest, vecs, lanes, count, taps, a_at, b_at, init, out, width, indent + 4)}\
${finish(rest, width, out, coords, chain, indent + 4)}\
${ind}}
% endif
</%def>

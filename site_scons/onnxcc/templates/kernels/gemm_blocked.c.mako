<%namespace name="tl" file="/kernels/lib/tile.mako"/>\
<%doc>
  y[M][N] = epilogue(A B) in register tiles of rows x (vecs * lanes) outputs, batch by
  batch (Gemm's bias C is the epilogue's first op). A constant B is packed (ops/common/packing.py)
  in panels of the tile's columns, each read contiguously and zero-padded at the end; a
  computed B is read in place (row-major), its last columns in narrower tiles down to
  scalars. When a column panel outgrows the L1 cache, the sum runs in chunks of k_chunk
  steps, each over every row block while its piece of the panel stays cached; the tile's
  partial sums wait in y, and the epilogue runs after the last chunk. `ahead` (a packed
  B summed whole, of several panels and row blocks, ops/gemm.py): while a panel is
  re-read from the caches, pass q of its row blocks prefetches part q of the next panel
  (the step's offset scaled by 1/passes), into the level 2, as conv2d_1x1's does.
</%doc>\
<%
    m, n, k = p['m'], p['n'], p['k']
    batches = p['batches']
    rows, vecs, lanes = p['rows'], p['vecs'], p['lanes']
    width = vecs * lanes
    full_rows, rest_rows = divmod(m, rows)
    full = n // width
    # the columns after the full tiles: [first, vecs, lanes, columns stored]
    tails = [(j0, v, l, min(v * l, n - j0)) for j0, v, l in p['tails']]
    chain = p['epilogue']
    lane_axis = 2 if len(batches) > 1 else 1
    chunk = p['k_chunk']
    chunks = -(-k // chunk)
    step = 'kc' if chunks == 1 else '(k0 + kc)'
    def a_at(i, t):
        col = step if p['a_cs'] == 1 else f"{step} * {p['a_cs']}"
        return f"ab[(size_t)(i0 + {i}) * {p['a_rs']}u + {col}]"
    def b_at(j0):
        if p['packed']:
            panel = f"(size_t)({j0} / {width}) * {k * width}u" if isinstance(j0, str) else f"{j0 // width * k * width}u"
            return lambda t: f"b + {panel} + (size_t){step} * {width}u"
        return lambda t: f"bb + (size_t){step} * {p['b_rs']}u + {j0}"
    def out(j0):
        return lambda i: f"yb + (size_t)(i0 + {i}) * {n}u + {j0}"
    def coords(j0):
        return lambda i, col: (['t'] if len(batches) > 1 else []) + [f"i0 + {i}", f"{j0} + {col}"]
    operands = sorted({attrs['operand'] for _, attrs in chain if attrs.get('operand')})
    panels = -(-n // width)
    # (each full row block, pass q of full_rows over a panel, prefetches its share of the
    # next: tile.mako's next_panel_share)
    ahead_lines = tl.attr.share_lines(width, full_rows)
    def prefetch(t):
        return tl.attr.next_panel_share("bq", "kc", width, full_rows)
    def opaque(r, v, last):
        """The operands a tile of r x v vectors launders (ops/gemm.py _laundering_tiles)."""
        return operands if last and [r, v] in p['launder'] else ()
%>\
<%def name="row_blocks(j0, nvecs, nlanes, store, count, first, last, ahead=False)">\
% if full_rows and ahead:
            const float *bq = b + (size_t)(${j0} / ${width} + 1 < ${panels} ? ${j0} / ${width} + 1 : 0) * ${k * width}u;
            for (int i0 = 0; i0 < ${full_rows * rows}; i0 += ${rows}) {
                ${tl.attr.next_panel_pass(f"i0 / {rows}", 4 * (k - 1) * width)}
${tl.tile(rows, nvecs, nlanes, count, 1, a_at, b_at(j0), out(j0), store, chain if last else [], coords(j0), lane_axis, 16, accumulate=not first, opaque=opaque(rows, nvecs, last), prefetch=prefetch, prefetch_lines=ahead_lines)}\
            }
% elif full_rows:
            for (int i0 = 0; i0 < ${full_rows * rows}; i0 += ${rows}) {
${tl.tile(rows, nvecs, nlanes, count, 1, a_at, b_at(j0), out(j0), store, chain if last else [], coords(j0), lane_axis, 16, accumulate=not first, opaque=opaque(rows, nvecs, last))}\
            }
% endif
% if rest_rows:
            {
                const int i0 = ${full_rows * rows};
${tl.tile(rest_rows, nvecs, nlanes, count, 1, a_at, b_at(j0), out(j0), store, chain if last else [], coords(j0), lane_axis, 16, accumulate=not first, opaque=opaque(rest_rows, nvecs, last))}\
            }
% endif
</%def>\
<%def name="column_tile(j0, nvecs, nlanes, store, ahead=False)">\
% if chunks == 1:
${row_blocks(j0, nvecs, nlanes, store, k, True, True, ahead)}\
% else:
            {
                const int k0 = 0;
${row_blocks(j0, nvecs, nlanes, store, chunk, True, False)}\
            }
% if chunks > 2:
            for (int k0 = ${chunk}; k0 < ${(chunks - 1) * chunk}; k0 += ${chunk}) {
${row_blocks(j0, nvecs, nlanes, store, chunk, False, False)}\
            }
% endif
            {
                const int k0 = ${(chunks - 1) * chunk};
${row_blocks(j0, nvecs, nlanes, store, k - (chunks - 1) * chunk, False, True)}\
            }
% endif
</%def>\
${tl.contracted(signature)}
{
% if len(batches) > 1:
    static const uint32_t a_offset[${len(batches)}] = {${', '.join(str(o[0]) for o in batches)}};
    static const uint32_t b_offset[${len(batches)}] = {${', '.join(str(o[1]) for o in batches)}};
    for (int t = 0; t < ${len(batches)}; ++t) {
        const float *ab = a + a_offset[t];
        const float *bb = b + b_offset[t];
        float *yb = y + (size_t)t * ${m * n}u;
% else:
    {
        const float *ab = a;
% if not p['packed']:
        const float *bb = b;
% endif
        float *yb = y;
% endif
% if full:
        for (int j0 = 0; j0 < ${full * width}; j0 += ${width}) {
## (each column of tiles declares its own vector types: a narrower tail's would shadow
## a wider vf of the function's scope, -Wshadow)
${tl.types(lanes)}\
${column_tile('j0', vecs, lanes, width, p['ahead'])}\
        }
% endif
% for j0, nv, nl, store in tails:
        {
${tl.types(nl)}\
${column_tile(j0, nv, nl, store)}\
        }
% endfor
    }
}

<%namespace name="tl" file="/kernels/tile.mako"/>\
<%doc>
  1x1 convolution, stride 1, no padding: per image and group, y[M][HW] = W[M][C] x[C][HW],
  a GEMM of the packed weights (panels of `rows` output channels, packing.py) and the
  input rows, in register tiles of rows x (vecs * lanes) pixels. The last pixels of a row
  of x go in narrower tiles, down to scalars: nothing reads past the input.
</%doc>\
<%
    n, c, m, group = p['n'], p['c'], p['m'], p['group']
    hw = p['oh'] * p['ow']
    cg, mg = c // group, m // group
    rows, vecs, lanes = p['rows'], p['vecs'], p['lanes']
    width = vecs * lanes
    full, rest = divmod(hw, width)
    panel = cg * rows
    group_floats = -(-mg // rows) * panel
    # the column tiles after the full ones: (first column, vecs, lanes)
    tails = [(full * width + s, v, l) for s, v, l in
             ((0, rest // lanes, lanes), (rest // lanes * lanes, rest % lanes, 1)) if v]
    def a_at(i, t):
        return f"wp[kc * {rows} + {i}]"
    def b_at(j0):
        return lambda t: f"xg + (size_t)kc * {hw}u + {j0}"
    def init(i):
        return f"b[oc0 + r0 + {i}]" if p['bias'] else "0.0f"
    def out(j0):
        return lambda i: f"y + ((size_t)nb * {m} + oc0 + r0 + {i}) * {hw}u + {j0}"
    def coords(j0):
        return lambda i, jj: ["nb", f"oc0 + r0 + {i}", f"{j0} + {jj}"]
%>\
${signature}
{
${tl.types(lanes, p['epilogue'], 2)}\
    for (int nb = 0; nb < ${n}; ++nb) {
        for (int gi = 0; gi < ${group}; ++gi) {
            const float *xg = x + (size_t)nb * ${c * hw}u + (size_t)gi * ${cg * hw}u;
            const float *wg = w + (size_t)gi * ${group_floats}u;
            const int oc0 = gi * ${mg};
% if full:
            for (int j0 = 0; j0 < ${full * width}; j0 += ${width}) {
${tl.row_blocks(mg, rows, vecs, lanes, cg, 1, 'wg', panel, a_at, b_at('j0'), init, out('j0'), width, p['epilogue'], coords('j0'), 2, 16)}\
            }
% endif
% for j0, v, l in tails:
            {
${tl.row_blocks(mg, rows, v, l, cg, 1, 'wg', panel, a_at, b_at(j0), init, out(j0), v * l, p['epilogue'], coords(j0), 2, 16)}\
            }
% endfor
        }
    }
}

<%namespace name="tl" file="/kernels/lib/tile.mako"/>\
<%doc>
  im2col + GEMM: for each chunk of `columns` output pixels, every window element of every
  pixel is gathered into scratch (col[k][j], zero where the window is in the padding or
  past the last pixel), then y[oc][chunk] = W[oc][k] col[k][chunk] in register tiles of
  rows output channels x (vecs * lanes) pixels, the weights packed in panels of rows.
</%doc>\
<%
    n, c, h, w, m, group = p['n'], p['c'], p['h'], p['w'], p['m'], p['group']
    oh, ow, kh, kw = p['oh'], p['ow'], p['kh'], p['kw']
    cg, mg = c // group, m // group
    rows, vecs, lanes = p['rows'], p['vecs'], p['lanes']
    width = vecs * lanes
    columns = p['columns']
    pixels = oh * ow
    k = cg * kh * kw
    panel = k * rows
    group_floats = -(-mg // rows) * panel
    full_chunks, last = divmod(pixels, columns)
    def a_at(i, t):
        return f"wp[kc * {rows} + {i}]"
    def b_at(t):
        return f"col + (size_t)kc * {columns}u + j0"
    def out(i):
        return f"y + ((size_t)nb * {m} + oc0 + r0 + {i}) * {pixels}u + p0 + j0"
    def coords(i, jj):
        return ["nb", f"oc0 + r0 + {i}", f"p0 + j0 + {jj}"]
%>\
<%def name="chunk(count)">\
<% full, rest = divmod(count, width) %>\
                for (int ic = 0; ic < ${cg}; ++ic) {
                    const float *xc = xg + (size_t)ic * ${h * w}u;
                    for (int ky = 0; ky < ${kh}; ++ky) {
                        for (int kx = 0; kx < ${kw}; ++kx) {
                            float *ck = col + (size_t)((ic * ${kh} + ky) * ${kw} + kx) * ${columns}u;
                            int oy = p0 / ${ow}, ox = p0 - oy * ${ow};
                            for (int j = 0; j < ${count}; ++j) {
                                const int iy = oy * ${p['sh']} - ${p['pt']} + ky * ${p['dh']};
                                const int ix = ox * ${p['sw']} - ${p['pl']} + kx * ${p['dw']};
                                ck[j] = iy >= 0 && iy < ${h} && ix >= 0 && ix < ${w} ? xc[iy * ${w} + ix] : 0.0f;
                                if (++ox == ${ow}) {
                                    ox = 0;
                                    ++oy;
                                }
                            }
% if count < columns:
                            memset(ck + ${count}, 0, ${columns - count}u * sizeof(float));
% endif
                        }
                    }
                }
% if full:
                for (int j0 = 0; j0 < ${full * width}; j0 += ${width}) {
${tl.row_blocks(mg, rows, vecs, lanes, k, 1, 'wg', panel, a_at, b_at, out, width, p['epilogue'], coords, 2, 20)}\
                }
% endif
% if rest:
                {
                    const int j0 = ${full * width};
${tl.row_blocks(mg, rows, -(-rest // lanes), lanes, k, 1, 'wg', panel, a_at, b_at, out, rest, p['epilogue'], coords, 2, 20)}\
                }
% endif
</%def>\
${tl.contracted(signature)}
{
${tl.types(lanes)}\
    float *const col = (float *)scratch;
    for (int nb = 0; nb < ${n}; ++nb) {
        for (int gi = 0; gi < ${group}; ++gi) {
            const float *xg = x + ((size_t)nb * ${c} + (size_t)gi * ${cg}) * ${h * w}u;
            const float *wg = w + (size_t)gi * ${group_floats}u;
            const int oc0 = gi * ${mg};
% if full_chunks:
            for (int p0 = 0; p0 < ${full_chunks * columns}; p0 += ${columns}) {
${chunk(columns)}\
            }
% endif
% if last:
            {
                const int p0 = ${full_chunks * columns};
${chunk(last)}\
            }
% endif
        }
    }
}

<%namespace name="tl" file="/kernels/lib/tile.mako"/>\
<%namespace name="planes" file="/kernels/lib/conv_planes.mako"/>\
<%doc>
  Winograd F(t x t, 3 x 3) convolution (ops/common/winograd.py). The zero-padded input is kept
  in patch planes (winograd.patch_planes), from which a vector of consecutive tiles reads
  an element of their patches with one load. Per chunk of `cols` output tiles (t x t
  pixels each): every input channel's (t+2)^2 patches are transformed, B^T d B, `lanes`
  tiles at a time into V[point][ic][tile]; then for each of the (t+2)^2
  points a GEMM M[point][oc][tile] = U[point][oc][ic] V[point][ic][tile] in register
  tiles (U: the weights transformed and packed in panels of `rows` at build time); then
  each output channel's tiles are transformed back, A^T M A, and the bias and epilogue
  applied to every pixel inside the image on its way out.
</%doc>\
<%
    n, c, h, w, m = p['n'], p['c'], p['h'], p['w'], p['m']
    oh, ow = p['oh'], p['ow']
    rows, vecs, lanes, cols = p['rows'], p['vecs'], p['lanes'], p['cols']
    t, th, tw = p['tile'], p['tiles_h'], p['tiles_w']
    a = t + 2
    channel = p['channel_floats']  # one channel's patch planes
    offsets = p['tap_offsets']  # of patch element (r, s) of tile 0, row-major
    v_point, m_point = p['v_point'], p['m_point']  # floats from one point's matrix to the next
    points = a * a
    tiles = th * tw
    width = vecs * lanes
    panel = c * rows
    point_floats = -(-m // rows) * panel
    bt, at = p['bt'], p['at']
    chain = p['epilogue']
    on_vectors = p['epilogue_on_vectors']  # the bias and epilogue on the back-transform's vectors

    def form(row, names):
        terms = []
        for coeff, name in zip(row, names):
            if coeff == 0:
                continue
            mag = abs(coeff)
            term = name if mag == 1 else f"{repr(float(mag))}f * {name}"
            terms.append(("-" if coeff < 0 else "+", term))
        if not terms:
            return "(vf){0}"
        text = ("-" if terms[0][0] == "-" else "") + terms[0][1]
        return " ".join([text] + [f"{s} {x}" for s, x in terms[1:]])
    def a_at(i, k):
        return f"wp[kc * {rows} + {i}]"
    def b_at(k):
        return f"vp + (size_t)kc * {cols}u + j0"
    def out(i):
        return f"mp + (size_t)(r0 + {i}) * {cols}u + j0"
    def coords(i, jj):
        return ["nb", f"r0 + {i}", "0"]
    # the tiles on the output's last row (column) of tiles are cut short where m does not
    # divide its height (width): those are stored pixel by pixel in loops, every other
    # tile's m x m pixels by straight-line stores
    whole_test = " && ".join([f"ty < {oh // t}"] * (oh % t != 0) + [f"tx < {ow // t}"] * (ow % t != 0))
%>\
## Pixel (r, s) of tile l (C expressions) stored at `dst`: the bias and epilogue applied
## here unless they ran on the vectors; `at`: its offset in the output channel.
<%def name="store_pixel(r, s, dst, at, ind)">\
<% late = [] if p['epilogue_on_vectors'] else p['epilogue'] %>\
${ind}{
${ind}    float acc0_0 = res[${r} * ${p['tile']} + ${s}][l];
${tl.store(0, 1, 1, lambda i: f"&{dst}", late, lambda i, col: ['nb', 'oc', at], 2, ind + '    ')}\
${ind}}
</%def>\
${tl.contracted(signature)}
{
${tl.types(lanes)}\
    float *const pad = (float *)scratch;
    float *const v = pad + ${c * channel + lanes}u;
    float *const mm = v + ${points * v_point}u;
<% border = capture(planes.clear_border, p, 'pc', 8) %>\
% if border.strip():
    for (int ic = 0; ic < ${c}; ++ic) {  /* the padding: the same for every image */
        float *pc = pad + (size_t)ic * ${channel}u;
${border}\
    }
% endif
    memset(pad + ${c * channel}u, 0, ${lanes}u * sizeof(float));  /* read by the last tiles' vector */
<%
    last = tiles - (-(-tiles // cols) - 1) * cols  # the tiles of the last chunk
    written, read = -(-last // lanes) * lanes, -(-last // width) * width
%>\
% if read > written:
    for (int k = 0; k < ${points * c}; ++k)  /* columns the last chunk's GEMMs read and no transform writes */
        memset(v + (size_t)(k / ${c}) * ${v_point}u + (size_t)(k % ${c}) * ${cols}u + ${written}u, 0, ${read - written}u * sizeof(float));
% endif
    for (int nb = 0; nb < ${n}; ++nb) {
        for (int ic = 0; ic < ${c}; ++ic) {
            const float *xc = x + ((size_t)nb * ${c} + ic) * ${h * w}u;
            float *pc = pad + (size_t)ic * ${channel}u;
${planes.fill(dict(p, sh=t, sw=t), 'xc', 'pc', 12, lanes)}\
        }
        for (int t0 = 0; t0 < ${tiles}; t0 += ${cols}) {
            const int count = t0 + ${cols} <= ${tiles} ? ${cols} : ${tiles} - t0;
            for (int ic = 0; ic < ${c}; ++ic) {
                const float *pc = pad + (size_t)ic * ${channel}u + t0;
                float *vc = v + (size_t)ic * ${cols}u;
                for (int j0 = 0; j0 < count; j0 += ${lanes}) {  /* (past the last tile: the planes' next floats) */
% for r in range(a):
                    const vf ${', '.join(f'd{r}_{s} = *(const vfu *)(pc + j0 + {offsets[r * a + s]})' for s in range(a))};
% endfor
## rows: e[r][q] = sum_s bt[q][s] d[r][s]; then columns: V[p][q] = sum_r bt[p][r] e[r][q]
% for r in range(a):
                    const vf ${', '.join(f'e{r}_{q} = {form(bt[q], [f"d{r}_{s}" for s in range(a)])}' for q in range(a))};
% endfor
% for pp in range(a):
% for q in range(a):
                    *(vfu *)(vc + ${(pp * a + q) * v_point}u + j0) = ${form(bt[pp], [f"e{r}_{q}" for r in range(a)])};
% endfor
% endfor
                }
            }
            for (int pt_ = 0; pt_ < ${points}; ++pt_) {
                const float *vp = v + (size_t)pt_ * ${v_point}u;
                float *mp = mm + (size_t)pt_ * ${m_point}u;
                const float *wpt = w + (size_t)pt_ * ${point_floats}u;
                for (int j0 = 0; j0 < count; j0 += ${width}) {
${tl.row_blocks(m, rows, vecs, lanes, c, 1, 'wpt', panel, a_at, b_at, out, width, [], coords, 2, 20)}\
                }
            }
            for (int oc = 0; oc < ${m}; ++oc) {
                float *yc = y + ((size_t)nb * ${m} + oc) * ${oh * ow}u;
                const float *mc = mm + (size_t)oc * ${cols}u;
                for (int j0 = 0; j0 < count; j0 += ${lanes}) {
                    float res[${t * t}][${lanes}]; /* the tiles' pixels, transformed back */
                    {
% for r in range(a):
                        const vf ${', '.join(f'm{r}_{s} = *(const vfu *)(mc + {(r * a + s) * m_point}u + j0)' for s in range(a))};
% endfor
% for r in range(a):
                        const vf ${', '.join(f'f{r}_{q} = {form(at[q], [f"m{r}_{s}" for s in range(a)])}' for q in range(t))};
% endfor
% for pp in range(t):
% for q in range(t):
% if on_vectors:
                        {
                            vf val = ${form(at[pp], [f"f{r}_{q}" for r in range(a)])};
% if chain:
                            ${tl.apply('val', lanes, chain, ['nb', 'oc', '0'], 2, lanes)}
% endif
                            *(vfu *)res[${pp * t + q}] = val;
                        }
% else:
                        *(vfu *)res[${pp * t + q}] = ${form(at[pp], [f"f{r}_{q}" for r in range(a)])};
% endif
% endfor
% endfor
                    }
                    for (int l = 0; l < ${lanes} && j0 + l < count; ++l) {
                        const int tile = t0 + j0 + l;
                        const int ty = tile / ${tw}, tx = tile - ty * ${tw};
% if whole_test:
                        if (${whole_test}) {
% endif
                            float *yt = yc + (size_t)(ty * ${t}) * ${ow}u + (size_t)(tx * ${t});
% for r in range(t):
% for s in range(t):
${store_pixel(r, s, f"yt[{r * ow + s}]", f"(ty * {t} + {r}) * {ow} + tx * {t} + {s}", ' ' * 28)}\
% endfor
% endfor
% if whole_test:
                        } else {
                            for (int r = 0; r < ${t} && ty * ${t} + r < ${oh}; ++r) {
                                const int oy = ty * ${t} + r;
                                for (int s = 0; s < ${t} && tx * ${t} + s < ${ow}; ++s) {
${store_pixel("r", "s", f"yc[oy * {ow} + tx * {t} + s]", f"oy * {ow} + tx * {t} + s", ' ' * 36)}\
                                }
                            }
                        }
% endif
                    }
                }
            }
        }
    }
}

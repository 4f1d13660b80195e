<%namespace name="simd" file="/kernels/lib/simd.mako"/>\
<%doc>
  Max or average pooling, vectorized, an output row at a time: first the rows of its
  windows are reduced into one (max or sum of up to kh input rows, vectors over the whole
  input width, rows outside the input skipped), written into `row`, a scratch row whose
  left and right padding holds -inf (max) or 0 (average) once per call; then each vector
  of outputs reduces its kw taps of that row, a tap at stride sw being a load (sw 1), two
  loads and a deinterleave (sw 2) or a gather (sw >= 3). An average divides by the
  number of elements its window counts: valid rows (at run time) times columns (a table).
</%doc>\
<%
    n, c, h, w, oh, ow = p['n'], p['c'], p['h'], p['w'], p['oh'], p['ow']
    kh, kw, sh, sw, dh, dw, pt, pl = p['kh'], p['kw'], p['sh'], p['sw'], p['dh'], p['dw'], p['pt'], p['pl']
    L, nv = p['lanes'], p['vecs']
    wfull = w // L * L
    is_max = p['kind'] == 'max'
    pad = '-INFINITY' if is_max else '0.0f'
    def vmax(acc, v):
        return f"{acc} = simd_max_v{L}({acc}, {v});" if is_max else f"{acc} += {v};"
    def tap(ptr):
        if sw == 1:
            return f"*(const vfu *)({ptr})"
        if sw == 2:
            evens = ', '.join(str(2 * i) for i in range(L))
            return f"__builtin_shufflevector(*(const vfu *)({ptr}), *(const vfu *)({ptr} + {L}), {evens})"
        return "(vf){" + ', '.join(f"({ptr})[{i * sw}]" for i in range(L)) + "}"
%>\
<%def name="reduce_rows(j, is_max, vmax)">\
% if is_max:
                    vf acc = (vf){0} - INFINITY;  /* never NaN: NaN inputs never win */
                    for (int r = 0; r < rows; ++r)
                        ${vmax('acc', f'*(const vfu *)(src[r] + {j})')}
% else:
                    vf acc = *(const vfu *)(src[0] + ${j});
                    for (int r = 1; r < rows; ++r)
                        ${vmax('acc', f'*(const vfu *)(src[r] + {j})')}
% endif
                    *(vfu *)(mid + ${j}) = acc;
</%def>\
${signature}
{
${simd.types(L)}\
% if is_max:
${simd.max_op(L)}\
% endif
    float *const row = (float *)scratch;
    for (size_t i = 0; i < ${p['row_len']}u; ++i)
        row[i] = ${pad};
% if not is_max:
    static const float cols[${nv * L}] = {${', '.join(c_float(v) for v in p['col_counts'])}};
% endif
    for (int nc = 0; nc < ${n * c}; ++nc) {
        const float *xc = x + (size_t)nc * ${h * w}u;
        for (int oy = 0; oy < ${oh}; ++oy) {
            const int iy0 = oy * ${sh} - ${pt};
            const float *src[${kh}] = {0};  /* (GCC cannot see rows of them are set) */
            int rows = 0;
            for (int ky = 0; ky < ${kh}; ++ky) {
                const int iy = iy0 + ky * ${dh};
                if (iy >= 0 && iy < ${h})
                    src[rows++] = xc + (size_t)iy * ${w}u;
            }
            float *const mid = row + ${pl};
            if (rows == 0) {
                for (int j = 0; j < ${w}; ++j)
                    mid[j] = ${pad};
            } else {
% if wfull:
                for (int j = 0; j < ${wfull}; j += ${L}) {
${reduce_rows("j", is_max, vmax)}\
                }
% if w > wfull:
                {  /* the last vector overlaps the one before */
${reduce_rows(str(w - L), is_max, vmax)}\
                }
% endif
% else:
                for (int j = 0; j < ${w}; ++j) {
% if is_max:
                    float acc = -INFINITY;
                    for (int r = 0; r < rows; ++r)
                        acc = src[r][j] > acc ? src[r][j] : acc;
% else:
                    float acc = src[0][j];
                    for (int r = 1; r < rows; ++r)
                        acc += src[r][j];
% endif
                    mid[j] = acc;
                }
% endif
            }
% if not is_max:
% if p['count_include_pad']:
            const int y1 = iy0 + ${kh} < ${h + p['pb']} ? iy0 + ${kh} : ${h + p['pb']};
            const float count = (float)(y1 - iy0);
% else:
            const float count = rows ? (float)rows : 1.0f;
% endif
% endif
            float *yr = y + ((size_t)nc * ${oh} + oy) * ${ow}u;
            for (int ox0 = 0; ox0 < ${ow}; ox0 += ${L}) {
% if ow % L and ow > L:
                if (ox0 > ${ow - L})
                    ox0 = ${ow - L};  /* the last vector overlaps the one before */
% endif
                const float *t = row + ox0 * ${sw};
                vf acc = ${tap('t')};
% for kx in range(1, kw):
                {
                    const vf v = ${tap(f't + {kx * dw}')};
                    ${vmax('acc', 'v')}
                }
% endfor
% if not is_max:
                acc = acc / (count * *(const vfu *)(cols + ox0));
% endif
% if ow < L:
                float part[${L}];
                *(vfu *)part = acc;
                memcpy(yr, part, ${ow}u * sizeof(float));
% else:
                *(vfu *)(yr + ox0) = acc;
% endif
            }
        }
    }
}

<%namespace name="tl" file="/kernels/lib/tile.mako"/>\
<%namespace name="planes" file="/kernels/lib/conv_planes.mako"/>\
<%doc>
  Depthwise convolution (group == channels == outputs): one channel at a time, copied into
  zero-padded stride phases (scratch) so that each tap of an output row is a contiguous
  run; a tile of `rows` output rows x (vecs * lanes) pixels sums the taps in registers.
  Rows shorter than a vector (small images) are stored as whole vectors running into the
  next row, which is stored after (spills). With `shift` (planes whose rows
  start on a vector boundary: the depthwise_shift tactic) each vector of a plane row is
  loaded once, aligned, for all the taps and output rows that read it; a tap k columns
  over (tap_cols) takes lanes k.. of it and the next vector by a two-vector shuffle
  (vpermt2ps, ext) instead of an unaligned load (on AVX-512 each one splits a cache line).
  With `direct` (stride-2 columns: the depthwise_s2 tactic) there are no planes: each
  input row a tile reads is loaded from x as pairs of vectors, split into its even and odd
  columns by two-vector shuffles in registers, and the taps taken from those as above;
  rows outside the image read a zero row (scratch), lanes outside it are loaded as zeros,
  and every column block of a row is generated on its own (its edges known).
</%doc>\
<%
    n, c, h, w = p['n'], p['c'], p['h'], p['w']
    oh, ow = p['oh'], p['ow']
    rows, vecs, lanes = p['rows'], p['vecs'], p['lanes']
    width = vecs * lanes
    cols, cs = p.get('plane_cols', 0), p.get('channel_stride', 0)
    offsets = p['tap_offsets']
    taps = len(offsets)
    full_rows, rest_rows = divmod(oh, rows)
    full, rest = divmod(ow, width)
    acc_type = 'vf' if lanes > 1 else 'float'
    def ld(ptr):
        return f'*(const vfu *)({ptr})' if lanes > 1 else f'*({ptr})'
    def out(i):
        return f"y + ((size_t)nb * {c} + ic) * {oh * ow}u + (size_t)(oy + {i}) * {ow}u + ox0"
    def coords(i, jj):
        return ["nb", "ic", f"(oy + {i}) * {ow} + ox0 + {jj}"]
    def spills(nrows, nvecs, store):
        """Whether a tile of rows shorter than a vector (one per row) stores whole vectors
        where their extra lanes land in the tile's later rows (stored after, over them):
        its epilogue (which may read a residual y is written over) runs on every row
        first, and only a row whose vector would reach past the tile is stored in part."""
        return (lanes > 1 and full == 0 and nvecs == 1 and store < lanes and nrows > 1
                and vectorizable(after, 2))
    shift = p.get('shift', False)
    tap_cols = p.get('tap_cols', [])
    def shift_rows(nrows, nvecs):
        """Per input row a tile reads (its offset from pr, in order): the vectors loaded,
        the shuffles [(name, u, lanes over)] and the multiply-adds [(i, v, tap, operand)]."""
        groups = {}
        for i in range(nrows):
            for t in range(taps):
                ro = i * cols + offsets[t] - tap_cols[t]
                for v in range(nvecs):
                    u, s = divmod(v * lanes + tap_cols[t], lanes)
                    loads, shuffles, sums = groups.setdefault(ro, (set(), {}, []))
                    loads.update({u, u + 1} if s else {u})
                    name = f'r{u}' if not s else shuffles.setdefault((u, s), f'r{u}_{s}')
                    sums.append((i, v, t, name))
        return [(ro, sorted(g[0]), sorted((n, u, s) for (u, s), n in g[1].items()), g[2])
                for ro, g in sorted(groups.items())]
    direct = p.get('direct', False)
    def clip_load(row, col):
        """Lanes col.. of input row `row` (a pointer), zeros outside the row: a vector
        within the row (w >= lanes: ops/conv/depthwise.py) and a shuffle with zeros at the edges."""
        lo, hi = max(0, -col), min(lanes, w - col)
        if lo >= hi:
            return '(vf){0}'
        if (lo, hi) == (0, lanes):
            return ld(f'{row} + {col}')
        at = min(max(col, 0), w - lanes)
        idx = ', '.join(str(j + col - at) if lo <= j < hi else str(lanes) for j in range(lanes))
        return f'__builtin_shuffle((vf){ld(f"{row} + {at}")}, (vf){{0}}, (vi){{{idx}}})'
    def direct_rows(nrows, nvecs, ox0):
        """Per input row a tile reads (its offset from the tile's first): the raw vector
        loads [(name, expr)], the phase shuffles [(name, a, b, phase)], the tap shuffles
        [(name, u, lanes over, phase)] and the multiply-adds [(i, v, tap, operand)].
        Phase p's unit u is the columns 2 * (ox0 + u * lanes + j) + p of the row."""
        groups = {}
        for i in range(nrows):
            for t in range(taps):
                ky, kx = divmod(t, p['kw'])
                ro = i * p['sh'] + ky * p['dh']
                c0 = kx * p['dw'] - p['pl']
                ph, m = c0 % 2, c0 // 2
                units, shuffles, sums = groups.setdefault(ro, (set(), {}, []))
                for v in range(nvecs):
                    u, sh_ = divmod(v * lanes + m, lanes)
                    units.update({(ph, u), (ph, u + 1)} if sh_ else {(ph, u)})
                    name = f'p{ph}_{u}' if not sh_ else shuffles.setdefault(
                        (ph, u, sh_), f'p{ph}_{u}_{sh_}'.replace('-', 'm'))
                    sums.append((i, v, t, name.replace('-', 'm')))
        out_ = []
        for ro, (units, shuffles, sums) in sorted(groups.items()):
            raws = sorted({2 * u + k for _, u in units for k in (0, 1)})
            loads = [(f'a{k}'.replace('-', 'm'), clip_load(f'xr', 2 * ox0 + k * lanes)) for k in raws]
            phases = [(f'p{ph}_{u}'.replace('-', 'm'), f'a{2 * u}'.replace('-', 'm'),
                       f'a{2 * u + 1}'.replace('-', 'm'), ph) for ph, u in sorted(units)]
            taps_ = [(n, f'p{ph}_{u}'.replace('-', 'm'), f'p{ph}_{u + 1}'.replace('-', 'm'), sh_)
                     for (ph, u, sh_), n in sorted(shuffles.items())]
            out_.append((ro, loads, phases, taps_, sums))
        return out_
    start, after = sums_start(p['epilogue'], 2, lanes)  # the chain after the sums' start
%>\
<%def name="block(nrows, nvecs, store, ox0=None)">\
                    {
% for i in range(nrows):
                        ${acc_type} ${', '.join(f'acc{i}_{v} = {start(coords(i, v * lanes))}' for v in range(nvecs))};
% endfor
% if direct:
% for ro, loads, phases, tshuffles, sums in direct_rows(nrows, nvecs, ox0):
                        {
                            const int iy = oy * ${p['sh']} + ${ro - p['pt']};
                            const float *xr = (unsigned)iy < ${h}u ? xc + (size_t)iy * ${w}u : zr;
                            const vf ${', '.join(f'{n} = {e}' for n, e in loads)};
% for name, a, b_, ph in phases:
                            const vf ${name} = __builtin_shuffle(${a}, ${b_}, (vi){${', '.join(str(2 * j + ph) for j in range(lanes))}});
% endfor
% for name, a, b_, s_ in tshuffles:
                            const vf ${name} = __builtin_shuffle(${a}, ${b_}, (vi){${', '.join(str(s_ + j) for j in range(lanes))}});
% endfor
% for i, v, t, name in sums:
                            acc${i}_${v} += ${name} * wc[${t}];
% endfor
                        }
% endfor
% elif shift:
% for ro, loads, shuffles, sums in shift_rows(nrows, nvecs):
                        {
                            const vf ${', '.join(f'r{u} = {ld(f"pr + {ro + u * lanes}u")}' for u in loads)};
% for name, u, s in shuffles:
                            const vf ${name} = __builtin_shuffle(r${u}, r${u + 1}, (vi){${', '.join(str(s + j) for j in range(lanes))}});
% endfor
% for i, v, t, name in sums:
                            acc${i}_${v} += ${name} * wc[${t}];
% endfor
                        }
% endfor
% else:
% for t in range(taps):
                        {
                            const float wt = wc[${t}];
% for i in range(nrows):
                            ${' '.join(f'acc{i}_{v} += {ld(f"pr + {i * cols + offsets[t] + v * lanes}u")} * wt;' for v in range(nvecs))}
% endfor
                        }
% endfor
% endif
% if spills(nrows, nvecs, store):
% for i in range(nrows):
                        ${tl.apply(f'acc{i}_0', lanes, after, coords(i, 0), 2, store)}
% endfor
% for i in range(nrows):
${tl.store(i, lanes, store, out, [], coords, 2, ' ' * 24, spill=(i + 1) * ow + (lanes - ow) <= nrows * ow)}\
% endfor
% else:
% for i in range(nrows):
${tl.store(i, lanes, store, out, after, coords, 2, ' ' * 24)}\
% endfor
% endif
                    }
</%def>\
<%def name="row_group(nrows)">\
% if direct:
% for ox in range(0, ow, width):
                {
                    const int ox0 = ${ox};
${block(nrows, min(vecs, -(-(ow - ox) // lanes)), min(width, ow - ox), ox)}\
                }
% endfor
% else:
% if full:
                for (int ox0 = 0; ox0 < ${full * width}; ox0 += ${width}) {
                    const float *pr = pc + (size_t)oy * ${cols}u + ox0;
${block(nrows, vecs, width)}\
                }
% endif
% if rest:
                {
                    const int ox0 = ${full * width};
                    const float *pr = pc + (size_t)oy * ${cols}u + ox0;
${block(nrows, -(-rest // lanes), rest)}\
                }
% endif
% endif
</%def>\
${tl.contracted(signature)}
{
${tl.types(lanes)}\
% if shift or direct:
% endif
% if direct:
    float *const zr = (float *)scratch;  /* the zero row read outside the image */
${planes.clear('zr', w, '0.0f', 4)}\
% else:
    float *const pc = (float *)scratch;
${planes.clear('pc', cs + p['slack'], '0.0f', 4)}\
% endif
    for (int nb = 0; nb < ${n}; ++nb) {
        for (int ic = 0; ic < ${c}; ++ic) {
            const float *xc = x + ((size_t)nb * ${c} + ic) * ${h * w}u;
            const float *wc = w + (size_t)ic * ${taps}u;
% if not direct:
${planes.fill(p, 'xc', 'pc', 12, lanes)}\
% endif
% if full_rows:
            for (int oy = 0; oy < ${full_rows * rows}; oy += ${rows}) {
${row_group(rows)}\
            }
% endif
% if rest_rows:
            {
                const int oy = ${full_rows * rows};
${row_group(rest_rows)}\
            }
% endif
        }
    }
}

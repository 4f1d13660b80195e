<%namespace name="tl" file="/kernels/lib/tile.mako"/>\
<%namespace name="ps" file="/kernels/lib/panel_store.mako"/>\
<%doc>
  1x1 convolution, stride 1, no padding: per image and group, y[M][HW] = W[M][C] x[C][HW],
  a GEMM of the packed weights and the input rows in register tiles. Vectors run along
  the pixels (tiles of rows channels x vecs * lanes pixels; the weights in panels of rows
  channels; the last pixels of a row in narrower tiles, down to scalars: nothing reads
  past the input), or, transposed, along the channels (tiles of rows pixels x vecs * lanes
  channels, the weights in panels of that many channels) when the image has few pixels:
  the tiles of a panel store their sums as whole vectors into a scratch [pixels][panel],
  which is then transposed back to NCHW a block of lanes x lanes at a time, the epilogue
  (the bias first) running on each channel's run of lanes pixels as it is stored; an
  image of one pixel (a squeeze-excitation's) has its channels adjacent in y: its tiles
  are stored there straight, the epilogue on the channel vectors. Written over x (p['block'], ops/conv/gemm.py), a
  column of tiles goes to a scratch block first and is copied over y once every channel
  of its pixels has been read -- the tiles of y's channels that lie past x's end (an
  expansion's c..m-1) are stored straight into y. With a fused input scale s (p['scaled'] floats of scratch,
  passes/fuse_channel_scale.py) the packed weights are first multiplied by it, input
  channel by input channel, into the scratch, and the GEMM reads them there.
</%doc>\
<%
    n, c, m, group = p['n'], p['c'], p['m'], p['group']
    hw = p['oh'] * p['ow']
    cg, mg = c // group, m // group
    rows, vecs, lanes = p['rows'], p['vecs'], p['lanes']
    width = vecs * lanes
    chain = p['epilogue']
    transposed = p['transposed']
    if transposed:
        panel = cg * width
        group_floats = -(-mg // width) * panel
        full_panels, rest_channels = divmod(mg, width)
        full_rows, rest_rows = divmod(hw, rows)
    else:
        panel = cg * rows
        group_floats = -(-mg // rows) * panel
        full = hw // width
        tails = p['tails']  # the columns after the full tiles: [first, vecs, lanes]
    def a_at(i, t):
        return f"wp[kc * {rows} + {i}]"
    def b_at(j0):
        return lambda t: f"xg + (size_t)kc * {hw}u + {j0}"
    block = p.get('block', False)
    scaled = p.get('scaled', 0)
    panel_width = width if transposed else rows
    # written over x: only y's channels below x's end (the first `held` of them, one image:
    # _over_x_possible) land on x, and wait in the block for the column's last read of x;
    # the others go straight to y
    held = min(mg, cg)
    def out(j0):
        def direct(i):
            return f"y + ((size_t)nb * {m} + oc0 + r0 + {i}) * {hw}u + {j0}"
        if block and held < mg:
            return lambda i: f"(r0 + {i} < {held} ? blk + (size_t)(r0 + {i}) * {width}u : {direct(i)})"
        if block:
            return lambda i: f"blk + (size_t)(r0 + {i}) * {width}u"
        return direct
    def coords(j0):
        return lambda i, col: ["nb", f"oc0 + r0 + {i}", f"{j0} + {col}"]
    # transposed: A is the input read across (pixel p0 + i, channel kc), B the weight panel
    # K in blocks (p['kblock'] input channels, ops/conv/gemm.py _k_block): a block's share of the
    # panel and of the input rows stays in the level-1 cache over the panel's pixel tiles,
    # which resume their sums from the scratch after the first block
    def t_a_at(i, t):
        return f"{xs}[(size_t)kc * {hw}u + p0 + {i}]"
    def t_b_at(t):
        return f"{ws} + (size_t)kc * {width}u"
    straight = transposed and hw == 1
    kblock = p.get('kblock', 0) if transposed and not straight else 0
    xs, ws = ('xk', 'wk') if kblock else ('xg', 'wp')
    # each full tile of a panel (pass q of `passes`) prefetches its share of the next
    # panel (tile.mako's next_panel_share)
    passes = full_rows if transposed else 0
    ahead = transposed and not straight and passes > 1 and (full_panels > 1 or rest_channels)
    ahead_lines = tl.attr.share_lines(width, passes)
    def t_prefetch(t, k0="0"):
        # (in blocks: step kc of the block from input channel k0)
        return tl.attr.next_panel_share("wq", "kc" if k0 == "0" else f"({k0} + kc)", width, passes)
    def t_out(i):
        if straight:
            return f"y + (size_t)nb * {m} + oc0 + j0"
        return f"so + (size_t)(p0 + {i}) * {width}u"
    def t_coords(i, col):
        return ["nb", f"oc0 + j0 + {col}", f"p0 + {i}"]
%>\
<%def name="copy_block(j0, columns)">\
% if block:
                for (int r = 0; r < ${held}; ++r)
                    memcpy(y + ((size_t)nb * ${m} + r) * ${hw}u + ${j0}, blk + (size_t)r * ${width}u,
                           ${columns}u * sizeof(float));
% endif
</%def>\
<%def name="pixel_blocks(store)">\
<% nv = -(-store // lanes) %>\
% if straight:
                {
                    const int p0 = 0;
${tl.tile(1, nv, lanes, cg, 1, t_a_at, t_b_at, t_out, store, chain, t_coords, 1, 20)}\
                }
% elif kblock:
<% whole, rest_k = divmod(cg, kblock) %>\
                {
                    const float *xk = xg, *wk = wp;
${pixel_tiles(store, kblock, False, "0")}\
                }
% if whole > 1:
                for (int k0 = ${kblock}; k0 < ${whole * kblock}; k0 += ${kblock}) {
                    const float *xk = xg + (size_t)k0 * ${hw}u, *wk = wp + (size_t)k0 * ${width}u;
${pixel_tiles(store, kblock, True, "k0")}\
                }
% endif
% if rest_k:
                {
                    const float *xk = xg + ${whole * kblock * hw}u, *wk = wp + ${whole * kblock * width}u;
${pixel_tiles(store, rest_k, True, str(whole * kblock))}\
                }
% endif
${ps.back(store, hw, width, lanes, m, chain, ' ' * 16)}\
% else:
${pixel_tiles(store, cg, False, "0")}\
${ps.back(store, hw, width, lanes, m, chain, ' ' * 16)}\
% endif
</%def>\
<%def name="pixel_tiles(store, count, accumulate, k0)">\
<%
    nv = -(-store // lanes)
    fetch = lambda t: t_prefetch(t, k0)
%>\
% if full_rows:
                for (int p0 = 0; p0 < ${full_rows * rows}; p0 += ${rows}) {
% if ahead and store == width:
                    ${tl.attr.next_panel_pass(f"p0 / {rows}", 4 * (panel - width))}
${tl.tile(rows, nv, lanes, count, 1, t_a_at, t_b_at, t_out, nv * lanes, [], t_coords, 1, 20, accumulate=accumulate, prefetch=fetch, prefetch_lines=ahead_lines)}\
% else:
${tl.tile(rows, nv, lanes, count, 1, t_a_at, t_b_at, t_out, nv * lanes, [], t_coords, 1, 20, accumulate=accumulate)}\
% endif
                }
% endif
% if rest_rows:
                {
                    const int p0 = ${full_rows * rows};
${tl.tile(rest_rows, nv, lanes, count, 1, t_a_at, t_b_at, t_out, nv * lanes, [], t_coords, 1, 20, accumulate=accumulate)}\
                }
% endif
</%def>\
${tl.contracted(signature)}
{
## (along the pixels each column of tiles declares its own vector types: a narrower tail's
## would shadow a wider vf of the function's scope, -Wshadow)
% if transposed:
${tl.types(lanes)}\
% endif
% if scaled:
    float *const wsc = (float *)scratch; /* the packed weights times s, per input channel */
    for (int gi = 0; gi < ${group}; ++gi)
        for (int pn = 0; pn < ${group_floats // panel}; ++pn)
            for (int kc = 0; kc < ${cg}; ++kc) {
                const size_t at = (size_t)gi * ${group_floats}u + ((size_t)pn * ${cg} + kc) * ${panel_width}u;
                const float sc = s[gi * ${cg} + kc];
                for (int j = 0; j < ${panel_width}; ++j)
                    wsc[at + j] = w[at + j] * sc;
            }
    const float *const wt = wsc;
% else:
    const float *const wt = w;
% endif
% if transposed and not straight:
    float *const so = (float *)scratch + ${scaled}; /* a panel's sums: ${hw} pixels x ${width} channels */
% endif
% if block:
    float *const blk = (float *)scratch + ${scaled}; /* a column of tiles: ${held} channels x ${width} pixels */
% endif
    for (int nb = 0; nb < ${n}; ++nb) {
        for (int gi = 0; gi < ${group}; ++gi) {
            const float *xg = x + (size_t)nb * ${c * hw}u + (size_t)gi * ${cg * hw}u;
            const float *wg = wt + (size_t)gi * ${group_floats}u;
            const int oc0 = gi * ${mg};
% if block:
            (void)oc0; /* one group (ops/conv/gemm.py): the block's rows are y's channels */
% endif
% if transposed:
% if full_panels:
            for (int j0 = 0; j0 < ${full_panels * width}; j0 += ${width}) {
                const float *wp = wg + (size_t)(j0 / ${width}) * ${panel}u;
% if ahead:
                /* the next panel, streamed into the caches while this one is re-read */
                const float *wq = j0 + ${width} < ${mg} ? wp + ${panel}u : wp;
% endif
${pixel_blocks(width)}\
            }
% endif
% if rest_channels:
            {
                const int j0 = ${full_panels * width};
                const float *wp = wg + ${full_panels * panel}u;
${pixel_blocks(rest_channels)}\
            }
% endif
% else:
% if full:
            for (int j0 = 0; j0 < ${full * width}; j0 += ${width}) {
${tl.types(lanes)}\
${tl.row_blocks(mg, rows, vecs, lanes, cg, 1, 'wg', panel, a_at, b_at('j0'), out('j0'), width, chain, coords('j0'), 2, 16)}\
${copy_block('j0', width)}\
            }
% endif
% for j0, v, l in tails:
            {
${tl.types(l)}\
${tl.row_blocks(mg, rows, v, l, cg, 1, 'wg', panel, a_at, b_at(j0), out(j0), v * l, chain, coords(j0), 2, 16)}\
${copy_block(j0, v * l)}\
            }
% endfor
% endif
        }
    }
}

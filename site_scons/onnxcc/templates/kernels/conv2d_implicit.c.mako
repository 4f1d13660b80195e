<%namespace name="tl" file="/kernels/lib/tile.mako"/>\
<%namespace name="planes" file="/kernels/lib/conv_planes.mako"/>\
<%namespace name="ps" file="/kernels/lib/panel_store.mako"/>\
<%doc>
  Implicit-GEMM convolution: the input is copied once into zero-padded stride phases
  (scratch), from which every tap of an output row's pixels is a contiguous run; then per
  output row, y[oc][row] = sum over (ic, tap) of W[oc][ic, tap] * run, in register tiles
  of rows output channels x (vecs * lanes) pixels with the weights packed in panels of
  rows channels -- or, transposed (narrow images), of rows pixels x (vecs * lanes)
  channels with the weights in panels of that many channels: with p['panel_store'] the
  tiles of a panel store whole vectors into a scratch [pixels][panel channels] after
  the planes, transposed back to y when the panel's pixels are all summed
  (panel_store.mako, as conv2d_1x1's), else float by float, a channel's pixels apart.
  Where a panel of the whole image outgrows half the L1 the scratch holds
  p['store_rows'] rows, each band of rows transposed back as soon as it is summed.
  A transposed tile may instead cover p['row_group'] whole output rows of a narrow
  image (2 rows of 7 pixels: 14 per tile), so that each vector of weights streamed in
  serves more pixels and the weights are read once per group of rows, not per row.
  With p['flat'] (group convolutions on AVX2) the transposed tiles run over the image's
  pixels in row-major order across its rows, `rows` pixels a tile (the last few rows - 1),
  each pixel read through a pointer of its own, each tile prefetching its share of the
  next panel.
  No window is ever copied; any stride, dilation and padding. The planes hold the input
  rows of one group's channels for a band of p['band'] output rows at a time (what fits
  the cache, or little RAM), filled right before that group's tiles read them.
</%doc>\
<%
    n, c, h, w, m, group = p['n'], p['c'], p['h'], p['w'], p['m'], p['group']
    oh, ow = p['oh'], p['ow']
    cg, mg = c // group, m // group
    rows, vecs, lanes = p['rows'], p['vecs'], p['lanes']
    width = vecs * lanes
    cols, cs = p['plane_cols'], p['channel_stride']
    band = p['band']
    offsets = p['tap_offsets']
    taps = len(offsets)
    panel = cg * taps * rows
    group_floats = -(-mg // rows) * panel
    chain = p['epilogue']
    transposed = p['transposed']
    if transposed:
        panel = cg * taps * width
        group_floats = -(-mg // width) * panel
        full_panels, rest_channels = divmod(mg, width)
        full_rows, rest_rows = divmod(ow, rows)
        row_group = p.get('row_group', 1)
        panel_store = p['panel_store']
        # a panel's scratch holds store_rows rows of the image's pixels: all, or (tiles of
        # one row, the planes of the whole image) a band transposed back once summed
        store_rows = p['store_rows'] if panel_store else oh
        assert band == oh or not panel_store, "the panel's store bands are the image's rows"
        assert store_rows == oh or row_group == 1, "a row group stores into a whole image's panel"
        # the tiles' store: whole vectors to the panel's scratch (the chain runs after the
        # transposes), or (width, chain, stride) of each channel's floats straight to y
        def t_store(store):
            if panel_store:
                return -(-store // lanes) * lanes, [], None
            return store, chain, oh * ow
    full, rest = divmod(ow, width)
    def t_a_at(i, t):
        return f"pb[(size_t)kc * {cs}u + {offsets[t] + i}u]"
    def g_a_at(i, t):
        return f"pb[(size_t)kc * {cs}u + {offsets[t] + i // ow * cols + i % ow}u]"
    # the row groups' passes over a panel each prefetch their share of the next panel
    # (tile.mako's next_panel_share)
    passes = oh // p.get('row_group', 1)
    def g_prefetch(t):
        return tl.attr.next_panel_share("wq", f"(kc * {taps} + {t})", width, passes)
    def t_b_at(t):
        return f"wp + (size_t)(kc * {taps} + {t}) * {width}u"
    def t_out(i):
        if panel_store and store_rows < oh:
            return f"so + ((size_t)(oy - sy) * {ow}u + ox0 + {i}) * {width}u"
        if panel_store:
            return f"so + ((size_t)oy * {ow}u + ox0 + {i}) * {width}u"
        return f"y + ((size_t)nb * {m} + oc0 + j0) * {oh * ow}u + (size_t)oy * {ow}u + ox0 + {i}"
    def t_coords(i, col):
        return ["nb", f"oc0 + j0 + {col}", f"oy * {ow} + ox0 + {i}"]
    # flat tiles: runs of the image's pixels in row-major order, across its rows (pixel
    # p0 + i is read through its own pointer a<i>, set before the tile)
    flat = p.get('flat', False)
    assert not flat or (row_group == 1 and store_rows == oh), "flat tiles store the whole image's panel"
    pixels = oh * ow
    # tiles of `rows` pixels, the rest of rows - 1 (conv._flat_tiles' rows: a split of
    # the pixels into tiles of as equal a length as can be)
    flat_big = pixels - -(-pixels // rows) * (rows - 1)
    assert not flat or 0 <= flat_big <= -(-pixels // rows), "the pixels split into tiles of rows, rows - 1"
    def f_a_at(i, t):
        return f"a{i}[(size_t)kc * {cs}u + {offsets[t]}u]"
    def f_out(i):
        if panel_store:
            return f"so + (size_t)(p0 + {i}) * {width}u"
        return f"y + ((size_t)nb * {m} + oc0 + j0) * {oh * ow}u + p0 + {i}"
    def f_coords(i, col):
        return ["nb", f"oc0 + j0 + {col}", f"p0 + {i}"]
    # as the row groups' passes, each flat tile prefetches its share of the next panel
    flat_count = -(-pixels // rows)
    def f_prefetch(t):
        return tl.attr.next_panel_share("wq", f"(kc * {taps} + {t})", width, flat_count)
    def a_at(i, t):
        return f"wp[(kc * {taps} + {t}) * {rows} + {i}]"
    def b_at(t):
        return f"pb + (size_t)kc * {cs}u + {offsets[t]}u"
    def out(i):
        return f"y + ((size_t)nb * {m} + oc0 + r0 + {i}) * {oh * ow}u + (size_t)oy * {ow}u + ox0"
    def coords(i, jj):
        return ["nb", f"oc0 + r0 + {i}", f"oy * {ow} + ox0 + {jj}"]
%>\
<%def name="pixel_blocks(store)">\
% if full_rows:
                    for (int ox0 = 0; ox0 < ${full_rows * rows}; ox0 += ${rows}) {
                        const float *pb = pg + (size_t)(oy - oy0) * ${cols}u + ox0;
${tl.tile(rows, -(-store // lanes), lanes, cg, taps, t_a_at, t_b_at, t_out, *t_store(store)[:2], t_coords, 1, 24, t_store(store)[2], fence=True)}\
                    }
% endif
% if rest_rows:
                    {
                        const int ox0 = ${full_rows * rows};
                        const float *pb = pg + (size_t)(oy - oy0) * ${cols}u + ox0;
${tl.tile(rest_rows, -(-store // lanes), lanes, cg, taps, t_a_at, t_b_at, t_out, *t_store(store)[:2], t_coords, 1, 24, t_store(store)[2], fence=True)}\
                    }
% endif
</%def>\
<%def name="flat_tiles(store, first, last, size, ahead, q)">\
% if last > first:
                for (int p0 = ${first}; p0 < ${last}; p0 += ${size}) {
% for i in range(size):
                    const float *a${i} = pg + (size_t)((p0 + ${i}) / ${ow}) * ${cols}u + (p0 + ${i}) % ${ow};
% endfor
% if ahead and flat_count > 1:
                    ${tl.attr.next_panel_pass(q, 4 * (panel - width))}
% endif
${tl.tile(size, -(-store // lanes), lanes, cg, taps, f_a_at, t_b_at, f_out, *t_store(store)[:2], f_coords, 1, 20, t_store(store)[2], fence=True, prefetch=ahead)}\
                }
% endif
</%def>\
<%def name="band_rows(store, ahead=None)">\
% if flat:
<% ahead = f_prefetch if ahead else None %>\
${flat_tiles(store, 0, flat_big * rows, rows, ahead, f"p0 / {rows}")}\
${flat_tiles(store, flat_big * rows, pixels, rows - 1, ahead, f"{flat_big} + (p0 - {flat_big * rows}) / {max(1, rows - 1)}")}\
% if panel_store:
${ps.back(store, oh * ow, width, lanes, m, chain, ' ' * 16)}\
% endif
% elif store_rows < oh:
${store_bands(store)}\
% else:
% if row_group > 1:
                int oy = oy0;
                for (; oy + ${row_group} <= (oy0 + ${band} < ${oh} ? oy0 + ${band} : ${oh}); oy += ${row_group}) {
                    const int ox0 = 0;
                    const float *pb = pg + (size_t)(oy - oy0) * ${cols}u;
% if ahead and passes > 1:
                    ${tl.attr.next_panel_pass(f"(oy - oy0) / {row_group}", 4 * (panel - width))}
% endif
${tl.tile(row_group * ow, -(-store // lanes), lanes, cg, taps, g_a_at, t_b_at, t_out, *t_store(store)[:2], t_coords, 1, 20, t_store(store)[2], fence=True, prefetch=ahead)}\
                }
% endif
## (the rows after the row groups, where a band's rows leave some: a loop that never runs,
## its start known, made GCC warn of an overflow at its 2^31st iteration)
% if row_group == 1:
                for (int oy = oy0; oy < (oy0 + ${band} < ${oh} ? oy0 + ${band} : ${oh}); ++oy) {
${pixel_blocks(store)}\
                }
% elif band % row_group or oh % band % row_group:
                for (; oy < (oy0 + ${band} < ${oh} ? oy0 + ${band} : ${oh}); ++oy) {
${pixel_blocks(store)}\
                }
% endif
% if panel_store:
${ps.back(store, oh * ow, width, lanes, m, chain, ' ' * 16)}\
% endif
% endif
</%def>\
## A panel's rows in bands of store_rows (from row sy), each transposed back once summed.
<%def name="store_bands(store)">\
<% full_bands, last_rows = divmod(oh, store_rows) %>\
                for (int sy = 0; sy < ${full_bands * store_rows}; sy += ${store_rows}) {
                    for (int oy = sy; oy < sy + ${store_rows}; ++oy) {
${pixel_blocks(store)}\
                    }
${ps.back(store, store_rows * ow, width, lanes, m, chain, ' ' * 20, oh * ow, f'sy * {ow}')}\
                }
% if last_rows:
                {
                    const int sy = ${full_bands * store_rows};
                    for (int oy = sy; oy < ${oh}; ++oy) {
${pixel_blocks(store)}\
                    }
${ps.back(store, last_rows * ow, width, lanes, m, chain, ' ' * 20, oh * ow, f'sy * {ow}')}\
                }
% endif
</%def>\
${tl.contracted(signature)}
{
${tl.types(lanes)}\
    float *const pl = (float *)scratch;
% if transposed and panel_store:
    float *const so = pl + ${cg * cs + p['slack']}u; /* a panel's sums: ${store_rows * ow} pixels x ${width} channels */
% endif
${planes.clear('pl', cg * cs + p['slack'], '0.0f', 4)}\
    for (int nb = 0; nb < ${n}; ++nb) {
      for (int oy0 = 0; oy0 < ${oh}; oy0 += ${band}) {
        for (int gi = 0; gi < ${group}; ++gi) {
            for (int ic = 0; ic < ${cg}; ++ic) {
                const float *xc = x + ((size_t)nb * ${c} + gi * ${cg} + ic) * ${h * w}u;
                float *pc = pl + (size_t)ic * ${cs}u;
${planes.fill_band(p, 'xc', 'pc', 'oy0', 16, lanes)}\
            }
            const float *pg = pl;
            const float *wg = w + (size_t)gi * ${group_floats}u;
            const int oc0 = gi * ${mg};
% if transposed:
% if full_panels:
            for (int j0 = 0; j0 < ${full_panels * width}; j0 += ${width}) {
                const float *wp = wg + (size_t)(j0 / ${width}) * ${panel}u;
% if (row_group > 1 or flat) and (full_panels > 1 or rest_channels):
                /* the next panel, streamed into the caches while this one is re-read */
                const float *wq = j0 + ${width} < ${mg} ? wp + ${panel}u : wp;
% elif (row_group > 1 or flat) and group > 1:
                /* the next group's panel, streamed into the caches while this one is re-read */
                const float *wq = gi + 1 < ${group} ? wp + ${panel}u : wp;
% endif
${band_rows(width, g_prefetch if full_panels > 1 or rest_channels or group > 1 else None)}\
            }
% endif
% if rest_channels:
            {
                const int j0 = ${full_panels * width};
                const float *wp = wg + ${full_panels * panel}u;
${band_rows(rest_channels)}\
            }
% endif
% else:
            for (int oy = oy0; oy < (oy0 + ${band} < ${oh} ? oy0 + ${band} : ${oh}); ++oy) {
% if full:
                for (int ox0 = 0; ox0 < ${full * width}; ox0 += ${width}) {
                    const float *pb = pg + (size_t)(oy - oy0) * ${cols}u + ox0;
${tl.row_blocks(mg, rows, vecs, lanes, cg, taps, 'wg', panel, a_at, b_at, out, width, p['epilogue'], coords, 2, 20)}\
                }
% endif
% if rest:
                {
                    const int ox0 = ${full * width};
                    const float *pb = pg + (size_t)(oy - oy0) * ${cols}u + ox0;
${tl.row_blocks(mg, rows, -(-rest // lanes), lanes, cg, taps, 'wg', panel, a_at, b_at, out, rest, p['epilogue'], coords, 2, 20)}\
                }
% endif
            }
% endif
        }
      }
    }
}

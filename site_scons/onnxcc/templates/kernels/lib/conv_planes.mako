<%namespace name="simd" file="/kernels/lib/simd.mako"/>\
<%doc>
  The padded input of a convolution or pooling window split into stride phases
  (ops/common/conv_geometry.py: phase_planes), which conv2d_implicit, conv2d_depthwise and
  pool2d_vector read their windows from: tap (ky, kx) of the pixels of an output row is
  then one contiguous run of a plane (conv2d_winograd clears and fills its patch planes,
  ops/common/winograd.py patch_planes, with the same defs). The padding is the same for every channel and image: the planes are
  cleared once per call (clear, or clear_border beside planes filled image by image), then
  each channel copies in its pixels (fill).
</%doc>

## Set `count` floats from pointer `dst` to `value` (a C float expression).
<%def name="clear(dst, count, value, indent)">\
<% ind = ' ' * indent %>\
% if value == '0.0f':
${ind}memset(${dst}, 0, ${count}u * sizeof(float));
% else:
${ind}for (size_t i = 0; i < ${count}u; ++i)
${ind}    ${dst}[i] = ${value};
% endif
</%def>

<%doc>
  Zero what fill leaves alone in the planes of one channel at `dst`: the rows no input row
  lands on, and the columns beside the copied ones (for a kernel that refills its planes
  image by image: each channel's once per call, without writing the pixels twice).
</%doc>
<%def name="clear_border(p, dst, indent)">\
<%
    ind = ' ' * indent
    rows, cols = p['plane_rows'], p['plane_cols']
    plane = rows * cols
%>\
% for k, f in enumerate(p['fills']):
<%
    r_lo, r_hi = f['rows']
    c_lo, c_hi = f['cols']
    pp = f"{dst} + {k * plane}u" if k else dst
    if c_hi <= c_lo:  # (no pixel: the whole plane)
        r_lo = r_hi = 0
%>\
% if r_lo:
${ind}memset(${pp}, 0, ${r_lo * cols}u * sizeof(float));
% endif
% if r_hi < rows:
${ind}memset(${pp} + ${r_hi * cols}u, 0, ${(rows - r_hi) * cols}u * sizeof(float));
% endif
% if r_hi > r_lo and (c_lo or c_hi < cols):
${ind}for (int r = ${r_lo}; r < ${r_hi}; ++r) {
% if c_lo:
${ind}    memset(${pp} + (size_t)r * ${cols}u, 0, ${c_lo}u * sizeof(float));
% endif
% if c_hi < cols:
${ind}    memset(${pp} + (size_t)r * ${cols}u + ${c_hi}u, 0, ${cols - c_hi}u * sizeof(float));
% endif
${ind}}
% endif
% endfor
</%def>

<%doc>
  Copy the pixels of one input channel `src` (H x W floats) into its planes at `dst`. With
  `lanes` >= 4, a row of column stride 2 or 4 is split into its column phases' planes by
  vector shuffles, stride vectors in, one out to each (whole vectors, then halves where
  the row has room): the columns no vector run covers are copied one by one.
</%doc>
<%def name="fill(p, src, dst, indent, lanes=1)">\
<%
    ind = ' ' * indent
    rows, cols = p['plane_rows'], p['plane_cols']
    plane = rows * cols
    splits = split_phases(p, lanes)
    split_fills = {k for ks, _ in splits for k in ks}
%>\
% if not any(f['rows'][1] > f['rows'][0] and f['cols'][1] > f['cols'][0] for f in p['fills']):
${ind}(void)${src};  /* every window reads padding only */
% endif
${split_types(splits, ind)}\
% for ks, runs in splits:
${fill_split(p, src, dst, ks, runs, ind)}\
% endfor
% for k, f in [(k, f) for k, f in enumerate(p['fills']) if k not in split_fills]:
<%
    r_lo, r_hi = f['rows']
    c_lo, c_hi = f['cols']
    pp = f"{dst} + {k * plane}u" if k else dst
    row0 = f['py'] - p['pt']
    col0 = f['px'] - p['pl']
%>\
% if r_hi > r_lo and c_hi > c_lo:
${ind}for (int r = ${r_lo}; r < ${r_hi}; ++r) {
${ind}    float *d = ${pp} + (size_t)r * ${cols}u;
${ind}    const float *s = ${src} + (size_t)(r * ${p['sh']} + ${row0}) * ${p['w']}u;
% if p['sw'] == 1:
${ind}    memcpy(d + ${c_lo}, s + ${c_lo + col0}, ${c_hi - c_lo}u * sizeof(float));
% else:
${ind}    for (int q = ${c_lo}; q < ${c_hi}; ++q)
${ind}        d[q] = s[q * ${p['sw']} + ${col0}];
% endif
${ind}}
% endif
% endfor
</%def>

<%!
from onnxcc.ops.common.conv_geometry import SPLIT_STRIDES


def split_phases(p, lanes):
    """(the fill index of each column phase 0 .. sw - 1, None where it is not a plane; the
    vector runs [(first plane column, end, lanes)]) of each row phase of a fill of column
    stride sw (2 or 4) whose column phase 0 is a plane: whole vectors, then half vectors
    (down to 4 lanes) where a row has room. Each run reads sw vectors of a source row and
    shuffles each phase's lanes out of them (split)."""
    sw = p['sw']
    if lanes < 4 or sw not in SPLIT_STRIDES:
        return []
    fills, pl, w = p['fills'], p['pl'], p['w']
    splits = []
    for f in fills:
        if f['px'] != 0 or f['rows'][1] <= f['rows'][0]:
            continue
        ks = [next((k for k, g in enumerate(fills) if g['py'] == f['py'] and g['px'] == c), None)
              for c in range(sw)]
        q = -(-pl // sw)  # the first column all of whose phases' sources are >= 0
        end = min(fills[k]['cols'][1] for k in ks if k is not None)
        runs, width = [], lanes
        while width >= 4:
            count = max(0, min((w + pl - sw * q) // (sw * width), (end - q) // width))
            if count:
                runs.append((q, q + count * width, width))
                q += count * width
            width //= 2
        if runs:
            splits.append((ks, runs))
    return splits


def split(vectors, c, width):
    """The C expression of column phase c of the sw (a power of two) consecutive vectors
    ``vectors`` of ``width`` floats: their floats c, c + sw, c + 2 sw, ... as one vector.
    Each pair of vectors gives the 2 width / sw of them it holds (in its low lanes), then
    pairs of those are joined, low lanes to low lanes, until one vector is left."""
    sw = len(vectors)

    def mask(idx):
        return f"(vi{width}){{{', '.join(str(i) for i in (idx * width)[:width])}}}"
    level = [f"__builtin_shuffle({lo}, {hi}, {mask([c + sw * i for i in range(2 * width // sw)])})"
             for lo, hi in zip(vectors[::2], vectors[1::2])]
    held = 2 * width // sw
    while len(level) > 1:
        join = mask(list(range(held)) + [width + i for i in range(held)])
        level = [f"__builtin_shuffle({lo}, {hi}, {join})" for lo, hi in zip(level[::2], level[1::2])]
        held *= 2
    return level[0]
%>

## Rows of the column phases (fills ks) of one row phase: the runs by vectors.
<%def name="fill_split(p, src, dst, ks, runs, ind)">\
<%
    cols = p['plane_cols']
    plane = p['plane_rows'] * cols
    f0 = p['fills'][ks[0]]
    r_lo, r_hi = f0['rows']
%>\
${ind}for (int r = ${r_lo}; r < ${r_hi}; ++r) {
% for c, k in enumerate(ks):
% if k is not None:
${ind}    float *d${c} = ${dst} + ${k * plane}u + (size_t)r * ${cols}u;
% endif
% endfor
${ind}    const float *s = ${src} + (size_t)(r * ${p['sh']} + ${f0['py'] - p['pt']}) * ${p['w']}u;
${copy_row(p, ks, runs, ind + '    ')}\
${ind}}
</%def>

## One source row `s` of a row phase split into its column phases at pointers d0, d1, ...
<%def name="copy_row(p, ks, runs, ind)">\
<%
    pl, sw = p['pl'], p['sw']
    qa, qe = runs[0][0], runs[-1][1]
    def rest(f, d):
        """The scalar copies of phase f's columns outside [qa, qe)."""
        col0 = f['px'] - pl
        spans = [(f['cols'][0], min(qa, f['cols'][1])), (max(qe, f['cols'][0]), f['cols'][1])]
        return [(lo, hi, d, col0) for lo, hi in spans if hi > lo]
    phases = [(p['fills'][k], f'd{c}', c) for c, k in enumerate(ks) if k is not None]
%>\
% for q0, q1, width in runs:
${ind}for (int q = ${q0}; q < ${q1}; q += ${width}) {
${ind}    const vfu${width} ${', '.join(f'sv{j} = *(const vfu{width} *)(s + {sw} * q + {j * width - pl})' for j in range(sw))};
% for f, d, c in phases:
${ind}    *(vfu${width} *)(${d} + q) = ${split([f'sv{j}' for j in range(sw)], c, width)};
% endfor
${ind}}
% endfor
% for lo, hi, d, col0 in [r for f, d, _ in phases for r in rest(f, d)]:
${ind}for (int q = ${lo}; q < ${hi}; ++q)
${ind}    ${d}[q] = s[q * ${sw} + ${col0}];
% endfor
</%def>

## The vector types of the shuffle runs of `splits`.
<%def name="split_types(splits, ind)">\
% for width in sorted({run[2] for _, runs in splits for run in runs}):
${simd.sized_types(width, ind)}\
% endfor
</%def>

<%doc>
  Fill the band of the planes (p['plane_rows'] rows each) that starts at plane row `first`
  (a C expression) from input channel `src`: rows of the input copied in, the rows above
  and below the input zeroed (a previous band may have written them). With `lanes` >= 4,
  rows of column stride 2 or 4 are split into their column phases by vector shuffles, as
  in fill.
</%doc>
<%def name="fill_band(p, src, dst, first, indent, lanes=1)">\
<%
    ind = ' ' * indent
    rows, cols = p['plane_rows'], p['plane_cols']
    plane = rows * cols
    splits = split_phases(p, lanes)
    split_fills = {k for ks, _ in splits for k in ks}
    def at_plane(k):
        return f"{dst} + {k * plane}u" if k else dst
%>\
% if not any(f['cols'][1] > f['cols'][0] for f in p['fills']):
${ind}(void)${src};  /* every window reads padding only */
% endif
${split_types(splits, ind)}\
% for ks, runs in splits:
<% f0 = p['fills'][ks[0]] %>\
${ind}for (int r = 0; r < ${rows}; ++r) {
${ind}    const int at = ${first} + r;
% for c, k in enumerate(ks):
% if k is not None:
${ind}    float *d${c} = ${at_plane(k)} + (size_t)r * ${cols}u;
% endif
% endfor
${ind}    if (at < ${f0['rows'][0]} || at >= ${f0['rows'][1]}) {
% for c, k in enumerate(ks):
% if k is not None:
${ind}        memset(d${c}, 0, ${cols}u * sizeof(float));
% endif
% endfor
${ind}        continue;
${ind}    }
${ind}    const float *s = ${src} + (size_t)(at * ${p['sh']} + ${f0['py'] - p['pt']}) * ${p['w']}u;
${copy_row(p, ks, runs, ind + '    ')}\
${ind}}
% endfor
% for k, f in [(k, f) for k, f in enumerate(p['fills']) if k not in split_fills]:
<%
    r_lo, r_hi = f['rows']
    c_lo, c_hi = f['cols']
    row0 = f['py'] - p['pt']
    col0 = f['px'] - p['pl']
%>\
${ind}for (int r = 0; r < ${rows}; ++r) {
${ind}    const int at = ${first} + r;
${ind}    float *d = ${at_plane(k)} + (size_t)r * ${cols}u;
${ind}    if (at < ${r_lo} || at >= ${r_hi}) {
${ind}        memset(d, 0, ${cols}u * sizeof(float));
${ind}        continue;
${ind}    }
% if c_hi > c_lo:
${ind}    const float *s = ${src} + (size_t)(at * ${p['sh']} + ${row0}) * ${p['w']}u;
% if p['sw'] == 1:
${ind}    memcpy(d + ${c_lo}, s + ${c_lo + col0}, ${c_hi - c_lo}u * sizeof(float));
% else:
${ind}    for (int q = ${c_lo}; q < ${c_hi}; ++q)
${ind}        d[q] = s[q * ${p['sw']} + ${col0}];
% endif
% endif
${ind}}
% endfor
</%def>

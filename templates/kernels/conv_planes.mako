<%doc>
  The padded input of a convolution or pooling window split into stride phases
  (ops/conv.py: phase_planes), which conv2d_implicit, conv2d_depthwise and pool2d_vector
  read their windows from: tap (ky, kx) of the pixels of an output row is then one
  contiguous run of a plane. The padding is the same for every channel and image: the
  planes are cleared once per call (clear), then each channel copies in its pixels (fill).
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

## Copy the pixels of one input channel `src` (H x W floats) into its planes at `dst`.
<%def name="fill(p, src, dst, indent)">\
<%
    ind = ' ' * indent
    rows, cols = p['plane_rows'], p['plane_cols']
    plane = rows * cols
%>\
% if not any(f['rows'][1] > f['rows'][0] and f['cols'][1] > f['cols'][0] for f in p['fills']):
${ind}(void)${src};  /* every window reads padding only */
% endif
% for k, f in enumerate(p['fills']):
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

<%doc>
  Fill the band of the planes (p['plane_rows'] rows each) that starts at plane row `first`
  (a C expression) from input channel `src`: rows of the input copied in, the rows above
  and below the input zeroed (a previous band may have written them).
</%doc>
<%def name="fill_band(p, src, dst, first, indent)">\
<%
    ind = ' ' * indent
    rows, cols = p['plane_rows'], p['plane_cols']
    plane = rows * cols
%>\
% if not any(f['cols'][1] > f['cols'][0] for f in p['fills']):
${ind}(void)${src};  /* every window reads padding only */
% endif
% for k, f in enumerate(p['fills']):
<%
    r_lo, r_hi = f['rows']
    c_lo, c_hi = f['cols']
    pp = f"{dst} + {k * plane}u" if k else dst
    row0 = f['py'] - p['pt']
    col0 = f['px'] - p['pl']
%>\
${ind}for (int r = 0; r < ${rows}; ++r) {
${ind}    const int at = ${first} + r;
${ind}    float *d = ${pp} + (size_t)r * ${cols}u;
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

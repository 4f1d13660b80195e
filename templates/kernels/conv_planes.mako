<%doc>
  The zero-padded input of a convolution split into stride phases (ops/conv.py:
  phase_planes), which conv2d_implicit and conv2d_depthwise read their windows from:
  tap (ky, kx) of the pixels of an output row is then one contiguous run of a plane.
</%doc>

## Fill the planes of one input channel: `src` (H x W floats) -> `dst` (C pointer names).
<%def name="fill(p, src, dst, indent)">\
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
    row0 = f['py'] - p['pt']
    col0 = f['px'] - p['pl']
%>\
% if r_lo:
${ind}memset(${pp}, 0, ${r_lo * cols}u * sizeof(float));
% endif
${ind}for (int r = ${r_lo}; r < ${r_hi}; ++r) {
${ind}    float *d = ${pp} + (size_t)r * ${cols}u;
${ind}    const float *s = ${src} + (size_t)(r * ${p['sh']} + ${row0}) * ${p['w']}u;
% if c_lo:
${ind}    memset(d, 0, ${c_lo}u * sizeof(float));
% endif
% if p['sw'] == 1:
${ind}    memcpy(d + ${c_lo}, s + ${c_lo + col0}, ${c_hi - c_lo}u * sizeof(float));
% else:
${ind}    for (int q = ${c_lo}; q < ${c_hi}; ++q)
${ind}        d[q] = s[q * ${p['sw']} + ${col0}];
% endif
% if cols > c_hi:
${ind}    memset(d + ${c_hi}, 0, ${cols - c_hi}u * sizeof(float));
% endif
${ind}}
% if rows > r_hi:
${ind}memset(${pp} + ${r_hi * cols}u, 0, ${(rows - r_hi) * cols}u * sizeof(float));
% endif
% endfor
</%def>

<%namespace name="tl" file="/kernels/lib/tile.mako"/>\
<%namespace name="tr" file="/kernels/lib/transpose.mako"/>\
<%doc>
  The store of channel-vector ("transposed") GEMM tiles, shared by conv2d_1x1 and
  conv2d_implicit: the tiles of a panel of `width` output channels store their sums as
  whole vectors into a scratch `so` [pixels][width] (no epilogue), and `back` then moves
  the panel's first `store` channels to NCHW y a block of lanes x lanes at a time (a
  transpose), the epilogue running on each channel's run of pixels as it is stored
  (contiguous in y: a residual is a vector load). The kernel binds y, so, nb, oc0 (the
  group's first channel) and j0 (the panel's first channel of the group); `m` channels
  of `hw` pixels an image.
</%doc>
<%def name="back(store, hw, width, lanes, m, chain, ind, stride=None, first=None)">\
<%
    # (a band of the image's pixels: hw of them in the scratch, from pixel `first` of y's
    # channels of `stride` pixels)
    stride = stride or hw
    at = f"{first} + f0" if first else "f0"
    def out(cb):
        return lambda j: f"y + ((size_t)nb * {m} + oc0 + j0 + {cb * lanes + j}) * {stride}u + {at}"
    def coords(cb):
        return lambda j, col: ["nb", f"oc0 + j0 + {cb * lanes + j}", f"{at} + {col}"]
%>\
% for cb in range(-(-store // lanes)):
% if hw // lanes:
${ind}for (int f0 = 0; f0 < ${hw // lanes * lanes}; f0 += ${lanes}) {
${chunk(cb, min(lanes, store - cb * lanes), lanes, width, lanes, out(cb), chain, coords(cb), ind + '    ')}\
${ind}}
% endif
% if hw % lanes:
${ind}{
${ind}    const int f0 = ${hw // lanes * lanes};
${chunk(cb, min(lanes, store - cb * lanes), hw % lanes, width, lanes, out(cb), chain, coords(cb), ind + '    ')}\
${ind}}
% endif
% endfor
</%def>
## Pixels f0 .. f0 + count - 1 of the panel's channel vector cb (its first cv channels),
## from a scratch `so` of `width` channels a pixel, transposed, to out(j) (channel j).
<%def name="chunk(cb, cv, count, width, lanes, out, chain, coords, ind)">\
% for i in range(lanes):
% if i < count:
${ind}vf acc${i}_0 = *(const vfu *)(so + (size_t)(f0 + ${i}) * ${width}u${f' + {cb * lanes}' if cb else ''});
% else:
${ind}vf acc${i}_0 = (vf){0};
% endif
% endfor
${tr.transpose([f'acc{i}_0' for i in range(lanes)], lanes, ind)}\
% for j in range(cv):
${tl.store(j, lanes, count, out, chain, coords, 2, ind)}\
% endfor
</%def>

"""What every Conv tactic reads off its node the same way, shared by the GEMM, direct and
winograd tactics (ops/conv/: gemm.py, implicit.py, tactics.py, winograd.py) and the depthwise ones (ops/conv/depthwise.py), which
import it and not each other:

  geometry      the Conv's window, channels, group, fused epilogue and input scale, and
                its kernel's tensors by role
  conv_tag      the kernel's tag (part of its C symbol); tile_tag: a tile's part of it
  with_tile     the template parameters of a tile of rows x vecs
  phase_planes  the layout of a zero-padded input split into stride phases, which the
                implicit GEMM and depthwise kernels read (phase_span: a plane's indices
                that hold input; winograd's patch planes use it too)
                (templates/kernels/lib/conv_planes.mako; SPLIT_STRIDES: the strides whose
                rows it splits by vector shuffles)
  macs          the multiply-accumulates of a geometry (qlinear_q15's int8 Conv too)
"""

from .epilogue import after_sums, bias_first, epilogue_tag, kernel_epilogue, own_inputs
from .spatial import is_depthwise, window_2d, window_tag


def conv_spans(node, graph):
    """Kernel coordinates: image, output channel, pixel (row-major over the spatial dims)."""
    return [(0, 1), (1, 2), (2, len(graph.info(node.outputs[0]).shape))]


def geometry(node, graph):
    """(g, inputs, outputs) of a Conv node: g its window (spatial.window_2d) with its output
    channels m, group, bias, epilogue (the bias first, then the fused chain) and input
    scale; the kernel's tensors by role."""
    own = own_inputs(node)
    x, w = own[0], own[1]
    b = own[2] if len(own) > 2 and own[2] else None
    s = own[3] if len(own) > 3 else None  # a fused per-input-channel scale (passes/fuse_channel_scale.py)
    y = node.outputs[0]
    w_shape = graph.info(w).shape
    g = window_2d(node, graph.info(x).shape, graph.info(y).shape,
                  node.attrs.get("kernel_shape", w_shape[2:]))
    chain, operands = kernel_epilogue(node, graph, conv_spans(node, graph))
    if b:
        chain = bias_first(chain, "b", [0, 1, 0], starts_sums=True)
    g.update(m=w_shape[0], group=node.attrs.get("group", 1), bias=b is not None, epilogue=chain,
             scale=s is not None)
    inputs = [("x", x), ("w", w)] + ([("b", b)] if b else []) + ([("s", s)] if s else []) + operands
    return g, inputs, [("y", y)]


def _kind(g):
    return "dw" if is_depthwise(g) else f"g{g['group']}"


def conv_tag(g, prefix=""):
    """The kernel's tag: the geometry, after a tactic's ``prefix`` (its tile's, say)."""
    scale = "_s" if g["scale"] else ""
    fused = epilogue_tag(after_sums(g["epilogue"]))
    return f"f32_{prefix}{_kind(g)}_{window_tag(g)}_m{g['m']}{scale}{fused}"


def macs(g):
    return g["n"] * g["m"] * g["oh"] * g["ow"] * (g["c"] // g["group"]) * g["kh"] * g["kw"]


def with_tile(g, cpu, transposed, rows, vecs):
    """The template's parameters: the geometry and its tile."""
    return dict(g, rows=rows, vecs=vecs, lanes=cpu.lanes(), transposed=transposed)


def tile_tag(p):
    """A tile's part of a kernel's tag: c (transposed) or t, rows x the floats of its
    vectors, then r (row groups), f (flat tiles) or b (a panel store in bands)."""
    group = f"r{p['row_group']}" if p.get("row_group", 1) > 1 else "f" if p.get("flat") else ""
    if p.get("panel_store") and p["store_rows"] < p["oh"]:
        group += f"b{p['store_rows']}"
    return f"{'c' if p['transposed'] else 't'}{p['rows']}x{p['vecs'] * p['lanes']}{group}_"


#: the column strides whose rows conv_planes.mako's fills split into their column phases
#: by vector shuffles (4 lanes or more: stride vectors in, a vector out to each phase);
#: rows of other strides are copied float by float
SPLIT_STRIDES = (2, 4)


def phase_span(count, stride, phase, pad, size):
    """[first, end) of the indices i < ``count`` of a plane of stride phase ``phase`` whose
    source (i * stride + phase - pad) lies in the input of ``size``: the rest of the plane
    is padding (an empty span where none does)."""
    lo = min(count, max(0, -((phase - pad) // stride)))  # the first index whose source is >= 0
    hi = min(count, (size - 1 + pad - phase) // stride + 1)
    return [lo, max(lo, hi)]


def phase_planes(g, slack, band=None, align=1):
    """The layout of a zero-padded input split into stride phases, for kernels that read
    a window's tap (ky, kx) of every pixel of an output row as one contiguous run.

    Padded input row r*sh + py, column q*sw + px is plane (py, px)'s element [r][q]; tap
    (ky, kx) of output pixel (oy, ox) is then element [oy + ky*dh // sh][ox + kx*dw // sw]
    of plane (ky*dh % sh, kx*dw % sw). Only the planes some tap reads are kept. With
    ``band``, the planes hold only the rows ``band`` output rows read, refilled for
    each band of output rows (``fills`` row ranges are of the whole planes). ``align``:
    the rows' length a multiple of it (vectors of a row aligned as its first).
    """
    sh, sw, dh, dw = g["sh"], g["sw"], g["dh"], g["dw"]
    taps = [(ky * dh, kx * dw) for ky in range(g["kh"]) for kx in range(g["kw"])]
    phases = sorted({(ty % sh, tx % sw) for ty, tx in taps})
    reach = max(ty // sh for ty, _ in taps)
    whole = g["oh"] + reach
    rows = min(band, g["oh"]) + reach if band else whole
    cols = -(-(g["ow"] + max(tx // sw for _, tx in taps)) // align) * align
    plane = rows * cols

    fills = [{"py": py, "px": px, "rows": phase_span(whole, sh, py, g["pt"], g["h"]),
              "cols": phase_span(cols, sw, px, g["pl"], g["w"])} for py, px in phases]
    offsets = [phases.index((ty % sh, tx % sw)) * plane + (ty // sh) * cols + tx // sw
               for ty, tx in taps]
    return {"plane_rows": rows, "plane_cols": cols, "fills": fills, "band": band or g["oh"],
            "channel_stride": len(phases) * plane, "tap_offsets": offsets, "slack": slack}

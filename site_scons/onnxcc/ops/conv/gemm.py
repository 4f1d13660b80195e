"""Conv's GEMM tactics: gemm1x1 (a 1x1 stride-1 unpadded convolution is a GEMM of the
weights and the input) and im2col (the input's windows copied into scratch columns, then a
GEMM). Both read the weights packed at compile time into panels (ops/common/packing.py).
"""

import math
from dataclasses import replace

from onnxcc.ops import KernelCall, in_place
from onnxcc.ops.common import packing
from onnxcc.ops.common.conv_geometry import conv_tag, geometry, tile_tag, with_tile
from onnxcc.ops.common.epilogue import residual_roles, tile_epilogue_cost
from onnxcc.ops.common.spatial import is_unit_window, pointwise_fits_over_x
from onnxcc.ops.common.tiling import best_tile, column_tails, copy_cost, reread_cost


def gemm_shape(g):
    """(rows of A per group, depth K, columns N) of the convolution as GEMMs."""
    return g["m"] // g["group"], (g["c"] // g["group"]) * g["kh"] * g["kw"], g["oh"] * g["ow"]


def packed_weights(g, width):
    """Weights in panels of ``width`` output channels (a tile's rows, or its vectors')."""
    mg, k, _ = gemm_shape(g)
    return {"w": packing.panels_spec(g["m"], k, width, "rows", g["group"])}


def panel_width(p):
    return p["vecs"] * p["lanes"] if p["transposed"] else p["rows"]


def is_1x1(node, graph, cpu=None):
    g, _, _ = geometry(node, graph)
    return is_unit_window(g)


def _plan_1x1(g, cpu):
    """(transposed, rows, vecs, cycles) of the orientation of fewer estimated cycles, its
    transposed tiles stored through block transposes (one pixel: straight, its channels
    are adjacent). Where pixel tiles could write y over x (which transposed ones cannot:
    _gemm1x1_in_place) and the estimate of a float-by-float transposed store -- the one
    the memory plans were made with -- keeps them, they stay: the block transposes' lower
    estimate would cost a DS-CNN's 1x1 convs their in-place steps (the numbers:
    docs/speed.md, "Pointwise convolutions")."""
    mg, k, n = gemm_shape(g)
    repeat = g["n"] * g["group"]
    (rows, vecs), cycles = best_tile(mg, n, k, cpu, overhang=False)
    pixels = False, rows, vecs, repeat * cycles
    if cpu.lanes() == 1:
        return pixels
    if pointwise_fits_over_x(g) and best_tile(n, mg, k, cpu, overhang=True, scatter=True)[1] >= cycles:
        return pixels
    (t_rows, t_vecs), t_cycles = best_tile(n, mg, k, cpu, overhang=True, blocks=n > 1)
    return (True, t_rows, t_vecs, repeat * t_cycles) if t_cycles < cycles else pixels


def _k_block(g, cpu, p):
    """Input channels per block of the sums of transposed tiles (0: one block): a block's
    rows of the weight panel (4 * width bytes each) and of the input (about a line each)
    fill half the level-1 cache, so the panel's pixel tiles re-read them there and not
    from the level 2. On AVX2 only: AVX-512's wider tiles leave blocks too short to pay,
    the other targets were not measured (the numbers: docs/speed.md,
    "1x1 convolutions on AVX2 (Zen 4)")."""
    if not p["transposed"] or g["oh"] * g["ow"] == 1 or cpu.simd_bytes != 32 or not cpu.l1d_bytes:
        return 0
    block = cpu.l1d_bytes // 2 // (4 * p["vecs"] * p["lanes"] + 64)
    return block if block < g["c"] // g["group"] else 0


def _scaled_floats(g, width):
    """Scratch floats of the packed weights scaled by a fused scale s (0 without one),
    rounded up to 64 bytes: the kernel's other scratch follows, aligned as before."""
    if not g["scale"]:
        return 0
    return -(-packing.packed_size(packed_weights(g, width)["w"]) // 16) * 16


def lower_gemm1x1(node, graph, cpu):
    g, inputs, outputs = geometry(node, graph)
    p = with_tile(g, cpu, *_plan_1x1(g, cpu)[:3])
    p["scaled"] = _scaled_floats(g, panel_width(p))
    p["kblock"] = _k_block(g, cpu, p)
    width = p["vecs"] * p["lanes"]
    full = g["oh"] * g["ow"] // width * width
    p["tails"] = [[full + s, v, l] for s, v, l in column_tails(g["oh"] * g["ow"] - full, p["lanes"])]
    # transposed: a panel's sums [pixels][panel channels], transposed back to y (one pixel:
    # stored straight, its channels are adjacent in y)
    scratch = 4 * g["oh"] * g["ow"] * width if p["transposed"] and g["oh"] * g["ow"] > 1 else 0
    scratch += 4 * p["scaled"]  # (first: the scaled weights)
    return KernelCall("conv2d_1x1", conv_tag(g, tile_tag(p)), p, inputs, outputs,
                      scratch_bytes=scratch, packed=packed_weights(g, panel_width(p)))


def cost_gemm1x1(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    outputs = g["n"] * g["m"] * g["oh"] * g["ow"]
    scale = copy_cost(g["m"] * g["c"], cpu) if g["scale"] else 0  # a multiply pass over the weights
    return _plan_1x1(g, cpu)[3] + scale + tile_epilogue_cost(outputs, g["epilogue"], cpu)


def _im2col_columns(g, cpu, k, width):
    """Columns per im2col chunk: a chunk of k rows about fits half the data cache."""
    budget = (cpu.l1d_bytes or 16384) // 2
    n = g["oh"] * g["ow"]
    columns = max(width, budget // (4 * k) // width * width)
    return min(columns, math.ceil(n / width) * width)


#: cycles per element of the im2col gather (conv2d_im2col.c.mako's bounds-checked loop) on
#: a SIMD CPU, next to vector tiles
GATHER_CYCLES = 6
#: instructions per element of the same loop on a scalar CPU, as measured on Cortex-M7 (the
#: numbers: docs/speed.md, "RegNetX's group convolutions")
GATHER_INSTRUCTIONS = 24


def _plan_im2col(g, cpu):
    mg, k, n = gemm_shape(g)
    (rows, vecs), cycles = best_tile(mg, n, k, cpu, overhang=True)
    # each gathered element: its window coordinates, four bounds tests, a load or a zero
    # and a store (the numbers: docs/speed.md, "Model zoo")
    gather = (GATHER_CYCLES if cpu.lanes() > 1 else GATHER_INSTRUCTIONS) * k * n
    chunks = -(-n // _im2col_columns(g, cpu, k, vecs * cpu.lanes()))
    weights = reread_cost(4 * mg * k, chunks, cpu)  # every chunk reads all the weights
    return rows, vecs, g["n"] * g["group"] * (cycles + gather + weights)


def lower_im2col(node, graph, cpu):
    g, inputs, outputs = geometry(node, graph)
    rows, vecs, _ = _plan_im2col(g, cpu)
    p = with_tile(g, cpu, False, rows, vecs)
    _, k, _ = gemm_shape(g)
    p["columns"] = _im2col_columns(g, cpu, k, vecs * p["lanes"])
    return KernelCall("conv2d_im2col", conv_tag(g, tile_tag(p)), p, inputs, outputs,
                      scratch_bytes=4 * k * p["columns"], packed=packed_weights(g, rows))


def cost_im2col(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    outputs = g["n"] * g["m"] * g["oh"] * g["ow"]
    return _plan_im2col(g, cpu)[2] + tile_epilogue_cost(outputs, g["epilogue"], cpu)


def gemm1x1_in_place(node, graph, cpu, tensor):
    """Over a residual; or over x (one group, pixels along the vectors, one image or no more
    outputs than inputs): a column of tiles is kept in a scratch block of the output
    channels that land on x until all channels of its pixels are read, then copied over y,
    where it lands on those same pixels of x; the channels past x's end (an expansion's)
    are stored straight."""
    call = lower_gemm1x1(node, graph, cpu)
    g = call.params
    residuals = residual_roles(call, graph)
    if tensor in [t for role, t in call.inputs if role in residuals]:
        return in_place(call, tensor, residuals)
    if g["transposed"] or not pointwise_fits_over_x(g):
        return None
    width = g["vecs"] * g["lanes"]
    held = min(g["m"], g["c"])  # y's channels over x (the rest lie past x's end: stored straight)
    return in_place(replace(call, params=dict(g, block=True)), tensor, ("x",),
                    scratch_bytes=call.scratch_bytes + 4 * held * width)

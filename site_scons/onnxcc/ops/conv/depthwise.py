"""The Conv's depthwise tactics (one group per channel, ops/common/spatial.py is_depthwise): a
channel at a time, its taps summed over vectors along an output row.

  depthwise        each channel copied into zero-padded phase planes (conv_geometry's
                   phase_planes), each tap read as unaligned vectors of a plane row
  depthwise_shift  the same, each input vector loaded once, aligned, and the taps over it
                   shuffled out of two vectors (no unaligned loads)
  depthwise_s2     column stride 2 on x86 without planes: input rows read from x as vector
                   pairs and split into even and odd columns in registers
  depthwise_nchwc  a block of a vector's channels at a time, transposed into channel
                   vectors: the lowering and estimate here, the plan in ops/conv/depthwise_lanes.py

The first three are templates/kernels/conv2d_depthwise.c.mako's kernels, depthwise_nchwc
conv2d_dw_nchwc.c.mako's. ops/conv/tactics.py lists them in the Conv's TACTICS beside the GEMM
tactics; the geometry, tags and tiles they share are ops/common/conv_geometry.py's.
"""

import math

from onnxcc.ops import KernelCall, in_place, unsupported
from onnxcc.ops.common.conv_geometry import (SPLIT_STRIDES, conv_tag, geometry, phase_planes,
                                             tile_tag, with_tile)
from onnxcc.ops.common.epilogue import residual_roles, tile_epilogue_cost, tile_lanes
from onnxcc.ops.common.spatial import channel_fits_over_x, is_depthwise
from onnxcc.ops.common.tiling import copy_cost, tile_cost

from . import depthwise_lanes


def depthwise_applies(node, graph, cpu=None):
    g, _, _ = geometry(node, graph)
    return is_depthwise(g)


def _plan_depthwise(g, cpu, shift=False):
    """(rows, vecs, planes, cycles) of the tile of fewest estimated cycles; ``shift``: of
    the depthwise_shift tactic (_shift_tile_cost)."""
    lanes = cpu.lanes()
    taps = g["kh"] * g["kw"]

    def tile(rows, vecs):
        if shift:
            return _shift_tile_cost(rows, vecs, g, cpu)
        # (a 64-byte load from an unaligned plane row splits a cache line: one a cycle)
        split = taps * rows * vecs if cpu.simd_bytes >= 64 else 0
        return max(tile_cost(rows, vecs, taps, cpu), split + 2 * rows * vecs + 8)
    best = None
    # (on SIMD CPUs a small image's channel may be one tile of all its rows, rows shorter
    # than a vector stored whole into the next rows: conv2d_depthwise)
    heights = sorted({1, 2, 4, g["oh"]} if lanes > 1 else {1, 2, 4})
    for rows, vecs in ((r, v) for r in heights for v in (1, 2, 3, 4)
                       if r * v + 2 <= cpu.registers and r <= g["oh"]):
        width = vecs * lanes
        full, rest = divmod(g["ow"], width)
        per_row = full * tile(rows, vecs) / rows
        if rest:
            per_row += tile(rows, math.ceil(rest / lanes)) / rows
        cycles = per_row * g["oh"] + (g["oh"] % rows) * per_row  # leftover rows, roughly
        if best is None or cycles < best[2]:
            best = (rows, vecs, cycles)
    rows, vecs, cycles = best
    # (shift: a tile reads a vector past its last, and its rows from vector boundaries)
    planes = phase_planes(g, (vecs + shift) * lanes, align=lanes if shift else 1)
    # (stride-2 and -4 rows are split into their column phases by vector shuffles: twice
    # a copy's cycles; and each row filled costs a memcpy call or a loop's start; fitted:
    # docs/speed.md, "Channels in the lanes: `depthwise_nchwc`")
    split = g["sw"] in SPLIT_STRIDES
    copy = copy_cost(planes["channel_stride"], cpu, contiguous=g["sw"] == 1 or split) * (2 if split else 1)
    copy += 4 * sum(f["rows"][1] - f["rows"][0] for f in planes["fills"] if f["px"] == 0)
    return rows, vecs, planes, g["n"] * g["c"] * (cycles + copy)


def _shift_tile_cost(rows, vecs, g, cpu):
    """A depthwise_shift tile: each vector of the plane rows it reads loaded once (and the
    one after), a shuffle per tap column not a multiple of the lanes over, the
    multiply-adds, the stores. On 8-lane AVX2 a shuffle across its 128-bit halves is two
    on the one shuffle port (slower than the unaligned loads except on small images; the
    numbers: docs/speed.md, "Aligned rows and shifted taps: `depthwise_shift`"); on
    AVX-512 and NEON it shares the multiply-adds' ports."""
    lanes = cpu.lanes()
    reads = {(ky * g["dh"] % g["sh"], kx * g["dw"] % g["sw"], i + ky * g["dh"] // g["sh"])
             for i in range(rows) for ky in range(g["kh"]) for kx in range(g["kw"])}
    over = len({kx * g["dw"] // g["sw"] % lanes for kx in range(g["kw"])} - {0})
    shuffles = len(reads) * vecs * over
    fmas = rows * vecs * g["kh"] * g["kw"]
    sums = max(fmas, 4 * shuffles) if lanes == 8 else fmas + shuffles
    return max(sums, len(reads) * (vecs + 1)) / 2 + 2 * rows * vecs + 8


def _direct_tile_cost(rows, vecs, ox, g, cpu):
    """A depthwise_s2 tile at column ``ox``: per input row it reads, the row pointer's
    select, the pairs of vectors loaded from x (unaligned: on AVX-512 most split a cache
    line, one a cycle; those across the row's edges shuffled with zeros), a shuffle per
    even or odd vector split out of them and per tap column not a multiple of the lanes
    over, the multiply-adds, the stores. On AVX2 a shuffle counts 1.5 times against the
    multiply-adds: fitted on the stride-2 layers on Zen 4, two shuffle pipes (the numbers:
    docs/speed.md, "On Zen 4: the choices re-fitted, and Swish's exp")."""
    lanes = cpu.lanes()
    reads = {i * g["sh"] + ky * g["dh"] for i in range(rows) for ky in range(g["kh"])}
    cols = [kx * g["dw"] - g["pl"] for kx in range(g["kw"])]
    units = {(c % 2, (v * lanes + c // 2) // lanes + k) for c in cols for v in range(vecs)
             for k in ((0, 1) if c // 2 % lanes else (0,))}
    over = {(c % 2, c // 2 % lanes) for c in cols} - {(0, 0), (1, 0)}
    cols = [2 * ox + k * lanes for u in {u for _, u in units} for k in (2 * u, 2 * u + 1)]
    edges = sum(1 for c in cols if c < g["w"] and c + lanes > 0 and not 0 <= c <= g["w"] - lanes)
    loads = len(reads) * len(cols)
    shuffles = len(reads) * (len(units) + vecs * len(over) + edges)
    fmas = rows * vecs * g["kh"] * g["kw"]
    sums = max(fmas, 1.5 * shuffles) if lanes == 8 else fmas + shuffles
    return max(sums / 2, loads if cpu.simd_bytes >= 64 else loads / 2) + 2 * rows * vecs + 8 + 2 * len(reads)


#: depthwise_s2 generates each column block of a row on its own: at most this many
DIRECT_BLOCKS = 4


def _plan_direct(g, cpu):
    """(rows, vecs, cycles) of the depthwise_s2 tile of fewest estimated cycles, or None
    when input rows are narrower than a vector (its loads are whole vectors of a row) or
    no tile covers a row in DIRECT_BLOCKS blocks."""
    lanes = cpu.lanes()
    if g["w"] < lanes:
        return None
    best = None
    for rows, vecs in ((r, v) for r in sorted({1, 2, 4, g["oh"]}) for v in (1, 2, 3, 4)
                       if r * v + 2 <= cpu.registers and r <= g["oh"]):
        if -(-g["ow"] // (vecs * lanes)) > DIRECT_BLOCKS:
            continue
        per_row = sum(_direct_tile_cost(rows, min(vecs, -(-(g["ow"] - ox) // lanes)), ox, g, cpu)
                      for ox in range(0, g["ow"], vecs * lanes)) / rows
        cycles = per_row * (g["oh"] + g["oh"] % rows)
        if best is None or cycles < best[2]:
            best = (rows, vecs, cycles)
    return best and best[:2] + (g["n"] * g["c"] * best[2],)


def direct_applies(node, graph, cpu):
    """Column stride 2, rows of a vector or more, on x86 (8 or 16 lanes: measured there;
    NEON's unaligned loads do not split as badly, its planes are kept unmeasured)."""
    g, _, _ = geometry(node, graph)
    return (is_depthwise(g) and cpu.lanes() >= 8 and g["sw"] == 2
            and _plan_direct(g, cpu) is not None)


def lower_direct_s2(node, graph, cpu):
    g, inputs, outputs = geometry(node, graph)
    plan = _plan_direct(g, cpu)
    if plan is None:  # (a patch keeps its layer's tactic: its rows may be narrower)
        raise unsupported(node, f"depthwise_s2 on rows of {g['w']} floats",
                          hint="it loads whole vectors of each row; choose another tactic=")
    rows, vecs, _ = plan
    p = with_tile(g, cpu, False, rows, vecs)
    p.update(direct=True, tap_offsets=[0] * (g["kh"] * g["kw"]), slack=0)
    return KernelCall("conv2d_depthwise", conv_tag(g, "d" + tile_tag(p)), p, inputs, outputs,
                      scratch_bytes=4 * g["w"])


def cost_direct_s2(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    lanes = tile_lanes(g["epilogue"], cpu)
    outputs = g["n"] * g["m"] * g["oh"] * -(-g["ow"] // lanes) * lanes
    return _plan_direct(g, cpu)[2] + tile_epilogue_cost(outputs, g["epilogue"], cpu)


def _depthwise_call(g, inputs, outputs, cpu, shift):
    rows, vecs, planes, _ = _plan_depthwise(g, cpu, shift)
    p = with_tile(g, cpu, False, rows, vecs)
    # (a tap's column in its plane: its offset less that is the row's start)
    p.update(planes, shift=shift,
             tap_cols=[kx * g["dw"] // g["sw"] for _ in range(g["kh"]) for kx in range(g["kw"])])
    tag = conv_tag(g, ("s" if shift else "") + tile_tag(p))
    return KernelCall("conv2d_depthwise", tag, p, inputs, outputs,
                      scratch_bytes=4 * (planes["channel_stride"] + planes["slack"]))


def lower_depthwise(node, graph, cpu):
    g, inputs, outputs = geometry(node, graph)
    return _depthwise_call(g, inputs, outputs, cpu, False)


def lower_shift(node, graph, cpu):
    g, inputs, outputs = geometry(node, graph)
    return _depthwise_call(g, inputs, outputs, cpu, True)


def _depthwise_cost(g, cpu, shift):
    lanes = tile_lanes(g["epilogue"], cpu)
    # the epilogue runs on whole vectors along each output row (7 of 16 lanes on 7x7)
    outputs = g["n"] * g["m"] * g["oh"] * -(-g["ow"] // lanes) * lanes
    return _plan_depthwise(g, cpu, shift)[3] + tile_epilogue_cost(outputs, g["epilogue"], cpu)


def cost_depthwise(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    return _depthwise_cost(g, cpu, False)


def shift_applies(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    return is_depthwise(g) and cpu.lanes() >= 4


def cost_shift(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    return _depthwise_cost(g, cpu, True)


def nchwc_applies(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    return is_depthwise(g) and depthwise_lanes.applies(g, cpu)


def lower_nchwc(node, graph, cpu):
    g, inputs, outputs = geometry(node, graph)
    p = depthwise_lanes.params(g, cpu)
    return KernelCall("conv2d_dw_nchwc", conv_tag(g, f"nchwc{p['lanes']}r{p['rows']}_"), p, inputs,
                      outputs, scratch_bytes=4 * depthwise_lanes.scratch_floats(p),
                      packed=depthwise_lanes.packed(g, cpu))


def cost_nchwc(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    return depthwise_lanes.cost(g, cpu) + depthwise_lanes.epilogue_cycles(g, cpu)


def depthwise_in_place(node, graph, cpu, tensor, lower=lower_depthwise):
    """Over a residual, or over x when a channel does not grow: channel c of x is copied
    into the scratch before channel c of y is written (depthwise_nchwc: its whole block of
    channels), and y's channel c lies within x's channels 0..c."""
    call = lower(node, graph, cpu)
    g = call.params
    roles = residual_roles(call, graph) + (["x"] if channel_fits_over_x(g) else [])
    return in_place(call, tensor, roles)

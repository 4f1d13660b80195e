"""Conv (NCHW, 1-D and 2-D, grouped and depthwise) with the fused epilogue, as tactics:

  direct     the reference: one scalar loop nest, the smallest code
  gemm1x1    a 1x1 stride-1 unpadded convolution is a GEMM of the weights and the input
  im2col     the input's windows copied into scratch columns, then a GEMM
  implicit   a GEMM that reads the windows in place from a zero-padded copy of the input,
             split into stride phases so that every step reads contiguous vectors
  depthwise, depthwise_shift, depthwise_s2, depthwise_nchwc
             one group per channel: a channel, or a vector's channels, at a time
             (ops/conv_depthwise.py)
  winograd   3x3 stride 1: Winograd F(4x4, 3x3) or F(2x2, 3x3), fewer multiplies
             (ops/winograd.py)

This module holds the direct, GEMM and winograd tactics and the Conv's TACTICS table;
what every tactic reads off the node (geometry, tags, tiles, phase planes) is
ops/conv_geometry.py's.

The GEMM tactics read the weights packed at compile time into panels (packing.py) and
keep a tile of output channels x pixels in registers (tiling.py), its vectors along the
pixels -- or, where an image has few pixels and many channels, along the channels
("transposed": the weights packed in panels of a vector's channels, the tiles of a
panel stored into a scratch transposed back to NCHW in blocks, templates/kernels/
panel_store.mako).
"""

import math
from dataclasses import replace
from typing import NamedTuple

from onnxcc.ops import KernelCall, Tactic, in_place
from onnxcc.ops.common import packing, winograd
from onnxcc.ops.common.conv_geometry import (SPLIT_STRIDES, conv_spans, conv_tag, geometry, macs,
                                             phase_planes, tile_tag, with_tile)
from onnxcc.ops.common.epilogue import residual_roles, tile_lanes
from onnxcc.ops.common.spatial import is_unit_window, pointwise_fits_over_x
from onnxcc.ops.common.tiling import (MAX_ROWS, MAX_VECS, best_tile, column_tails, copy_cost,
                                      epilogue_cost, gemm_cost, l2_bytes, reread_cost,
                                      scalar_mac_cost, tile_fits)

from .depthwise import (cost_depthwise, cost_direct_s2, cost_nchwc, cost_shift, depthwise_applies,
                        depthwise_in_place, direct_applies, lower_depthwise, lower_direct_s2,
                        lower_nchwc, lower_shift, nchwc_applies, shift_applies)

# --- direct (reference) -------------------------------------------------------------------

def lower_direct(node, graph, cpu=None):
    g, inputs, outputs = geometry(node, graph)
    return KernelCall("conv2d", conv_tag(g), g, inputs, outputs)


def cost_direct(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    pixels = g["n"] * g["m"] * g["oh"] * g["ow"]
    return macs(g) * scalar_mac_cost(cpu) + pixels * 6 + epilogue_cost(pixels, g["epilogue"])


# --- the GEMM tactics -------------------------------------------------------------------

def _gemm_shape(g):
    """(rows of A per group, depth K, columns N) of the convolution as GEMMs."""
    return g["m"] // g["group"], (g["c"] // g["group"]) * g["kh"] * g["kw"], g["oh"] * g["ow"]


def _packed_weights(g, width):
    """Weights in panels of ``width`` output channels (a tile's rows, or its vectors')."""
    mg, k, _ = _gemm_shape(g)
    return {"w": packing.panels_spec(g["m"], k, width, "rows", g["group"])}


def _panel_width(p):
    return p["vecs"] * p["lanes"] if p["transposed"] else p["rows"]


def _is_1x1(node, graph, cpu=None):
    g, _, _ = geometry(node, graph)
    return is_unit_window(g)


def _plan_1x1(g, cpu):
    """(transposed, rows, vecs, cycles) of the orientation of fewer estimated cycles, its
    transposed tiles stored through block transposes (one pixel: straight, its channels
    are adjacent). Where pixel tiles could write y over x (which transposed ones cannot:
    _gemm1x1_in_place) and the estimate of a float-by-float transposed store -- the one
    the memory plans were made with -- keeps them, they stay: the block transposes' lower
    estimate would cost a DS-CNN's 64 -> 64 on 25x5 pixels its in-place step (+30 KB of
    arena)."""
    mg, k, n = _gemm_shape(g)
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
    from the level 2. On AVX2 only (Zen 4: RegNetX's 400 -> 400 on 7x7 from 46 to 54
    GMAC/s, docs/speed.md "1x1 convolutions on AVX2"); AVX-512's tiles of 48-80 channels
    left blocks too short to pay (1-16% slower), the other targets were not measured."""
    if not p["transposed"] or g["oh"] * g["ow"] == 1 or cpu.simd_bytes != 32 or not cpu.l1d_bytes:
        return 0
    block = cpu.l1d_bytes // 2 // (4 * p["vecs"] * p["lanes"] + 64)
    return block if block < g["c"] // g["group"] else 0


def _scaled_floats(g, width):
    """Scratch floats of the packed weights scaled by a fused scale s (0 without one),
    rounded up to 64 bytes: the kernel's other scratch follows, aligned as before."""
    if not g["scale"]:
        return 0
    return -(-packing.packed_size(_packed_weights(g, width)["w"]) // 16) * 16


def lower_gemm1x1(node, graph, cpu):
    g, inputs, outputs = geometry(node, graph)
    p = with_tile(g, cpu, *_plan_1x1(g, cpu)[:3])
    p["scaled"] = _scaled_floats(g, _panel_width(p))
    p["kblock"] = _k_block(g, cpu, p)
    width = p["vecs"] * p["lanes"]
    full = g["oh"] * g["ow"] // width * width
    p["tails"] = [[full + s, v, l] for s, v, l in column_tails(g["oh"] * g["ow"] - full, p["lanes"])]
    # transposed: a panel's sums [pixels][panel channels], transposed back to y (one pixel:
    # stored straight, its channels are adjacent in y)
    scratch = 4 * g["oh"] * g["ow"] * width if p["transposed"] and g["oh"] * g["ow"] > 1 else 0
    scratch += 4 * p["scaled"]  # (first: the scaled weights)
    return KernelCall("conv2d_1x1", conv_tag(g, tile_tag(p)), p, inputs, outputs,
                      scratch_bytes=scratch, packed=_packed_weights(g, _panel_width(p)))


def cost_gemm1x1(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    outputs = g["n"] * g["m"] * g["oh"] * g["ow"]
    scale = copy_cost(g["m"] * g["c"], cpu) if g["scale"] else 0  # a multiply pass over the weights
    return _plan_1x1(g, cpu)[3] + scale + epilogue_cost(outputs, g["epilogue"], tile_lanes(g["epilogue"], cpu))


def _im2col_columns(g, cpu, k, width):
    """Columns per im2col chunk: a chunk of k rows about fits half the data cache."""
    budget = (cpu.l1d_bytes or 16384) // 2
    n = g["oh"] * g["ow"]
    columns = max(width, budget // (4 * k) // width * width)
    return min(columns, math.ceil(n / width) * width)


#: cycles per element of the im2col gather (conv2d_im2col.c.mako's bounds-checked loop) on
#: a SIMD CPU, next to vector tiles
GATHER_CYCLES = 6
#: instructions per element of the same loop on a scalar CPU (measured on Cortex-M7:
#: RegNetX's group convolutions ran 22-24 an element beyond their GEMM's estimate)
GATHER_INSTRUCTIONS = 24


def _plan_im2col(g, cpu):
    mg, k, n = _gemm_shape(g)
    (rows, vecs), cycles = best_tile(mg, n, k, cpu, overhang=True)
    # each gathered element: its window coordinates, four bounds tests, a load or a zero
    # and a store (measured: RegNetX's stride-2 group convolutions ran 3x their estimate)
    gather = (GATHER_CYCLES if cpu.lanes() > 1 else GATHER_INSTRUCTIONS) * k * n
    chunks = -(-n // _im2col_columns(g, cpu, k, vecs * cpu.lanes()))
    weights = reread_cost(4 * mg * k, chunks, cpu)  # every chunk reads all the weights
    return rows, vecs, g["n"] * g["group"] * (cycles + gather + weights)


def lower_im2col(node, graph, cpu):
    g, inputs, outputs = geometry(node, graph)
    rows, vecs, _ = _plan_im2col(g, cpu)
    p = with_tile(g, cpu, False, rows, vecs)
    _, k, _ = _gemm_shape(g)
    p["columns"] = _im2col_columns(g, cpu, k, vecs * p["lanes"])
    return KernelCall("conv2d_im2col", conv_tag(g, tile_tag(p)), p, inputs, outputs,
                      scratch_bytes=4 * k * p["columns"], packed=_packed_weights(g, rows))


def cost_im2col(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    outputs = g["n"] * g["m"] * g["oh"] * g["ow"]
    return _plan_im2col(g, cpu)[2] + epilogue_cost(outputs, g["epilogue"], tile_lanes(g["epilogue"], cpu))


def _grouped(g):
    """A group convolution of several input channels a group (not a depthwise one)."""
    return g["group"] > 1 and g["c"] // g["group"] > 1


#: the caches of L1's size a group convolution's planes of a band may fill on x86: RegNetX's
#: first (32 channels, 2 groups, 112x112 /2: the planes of an output row 14.6 KB) ran its
#: pixel tiles in bands of 1 row at 366 us, of 3 at 337, 4 at 331, 6 and 8 at 333 (Zen 4,
#: x86_64, conv_layers.py): each band copies the rows its taps reach again. In the network
#: bands of 7 (4 L1s) ran 0.98-1.04 of before, of 5 (3 L1s) 0.94; AVX-512 0.81 (7 rows)
GROUP_BAND_L1S = 3


def _band(g, cpu):
    """Output rows per band of the implicit GEMM: its planes of a group's input channels
    about fill the L1 cache (a group convolution's on x86, GROUP_BAND_L1S of them); one row
    at a time (the least scratch) on a CPU without a cache."""
    whole = phase_planes(g, 0)
    reach = whole["plane_rows"] - g["oh"]
    row_bytes = 4 * (g["c"] // g["group"]) * whole["channel_stride"] // whole["plane_rows"]
    cache = cpu.l1d_bytes * (GROUP_BAND_L1S if _grouped(g) and cpu.simd_bytes >= 32 else 1)
    fits = cache // row_bytes - reach if cpu.l1d_bytes else 1
    return max(1, min(g["oh"], fits))


def _row_group(g, cpu, mg, k, rows, vecs, cycles, store):
    """A transposed tile over several whole output rows of a narrow image: (rows of
    output per tile, tile rows of a leftover row, vecs, cycles). Each pass over the
    rows streams all the weights again (a 7x7 image of 512 channels: 9.4 MB, seven
    times at one row a pass), so a group is taken when that re-read makes it cheaper,
    the one of most accumulators (each load feeds the most multiply-adds: 14 pixels x 2
    vectors ran 8% faster than 21 x 1 on AVX-512 with one pass less). The re-read
    ranks the choices here only; the cycles are the tiles' (as every transposed tile's).
    ``store``: gemm_cost's keyword of the tiles' store."""
    oh, ow = g["oh"], g["ow"]
    size = 4 * mg * k
    best = None
    for group in range(2, oh + 1):
        # one vector is broadcast-bound (26 x 1 no faster); no wider than the channels
        for v in range(2, min(MAX_VECS, -(-mg // cpu.lanes())) + 1):
            if not tile_fits(group * ow, v, cpu):
                continue
            r1 = max(r for r in range(1, min(ow, MAX_ROWS) + 1) if tile_fits(r, v, cpu))
            whole, left = divmod(oh, group)
            tiles = (whole * gemm_cost(group * ow, mg, k, group * ow, v, cpu, **store)
                     + left * gemm_cost(ow, mg, k, r1, v, cpu, **store))
            tiles *= g["n"] * g["group"]
            key = (-group * ow * v, -v, tiles)
            if reread_cost(size, whole + left, cpu) + tiles < reread_cost(size, oh, cpu) + cycles \
                    and (best is None or key < best[0]):
                best = (key, group, r1, v, tiles)
    return best[1:] if best else (1, rows, vecs, cycles)


def _group_lanes(g, cpu, mg, k, store):
    """A group convolution's channel-vector tiles longer than best_tile's (MAX_ROWS
    pixels), on 512-bit vectors: a group's few outputs (RegNetX's 16, one vector) leave
    the registers to many pixels, each multiply-add reading its input value as a
    broadcast memory operand, the weights' vector loaded once for them all (measured
    there: RegNetX's 7x7 and 14x14 group layers 4-9% faster than 7-pixel tiles). The
    tiles cover a row split evenly, or groups of whole rows of a narrow image: (rows of
    output per tile, pixels per tile of a row, vecs, cycles); None where no tile longer
    than MAX_ROWS fits the registers."""
    if g["group"] == 1 or cpu.simd_bytes < 64:
        return None
    vecs = -(-mg // cpu.lanes())
    longest = max((r for r in range(1, 4 * MAX_ROWS) if tile_fits(r, vecs, cpu)), default=0)
    if longest <= MAX_ROWS:
        return None
    oh, ow = g["oh"], g["ow"]
    r1 = -(-ow // -(-ow // longest))  # a row in tiles of about equal length
    best = None
    for group in range(1, oh + 1):
        if group > 1 and group * ow > longest:
            break
        whole, left = divmod(oh, group)
        tiles = (whole * gemm_cost(group * ow, mg, k, group * ow if group > 1 else r1, vecs, cpu, **store)
                 + left * gemm_cost(ow, mg, k, r1, vecs, cpu, **store))
        if best is None or tiles < best[3]:
            best = (group, r1, vecs, tiles)
    best = (*best[:3], g["n"] * g["group"] * best[3])
    return best if max(best[0] * ow, best[1]) > MAX_ROWS else None


def _flat_tiles(g, cpu, mg, k, store):
    """A group convolution's channel-vector tiles over runs of the image's pixels in
    row-major order, across its rows, on 256-bit vectors: a group's 16 outputs (two
    vectors) leave AVX2's 16 registers to 6 pixels, which a row of 7 or 14 split into
    tiles of 4 + 3 or 5 + 5 + 4 (fewer accumulators than the multiply-adds' latency
    keeps busy, and more tiles); the image's 49 pixels are 4 tiles of 6 and 5 of 5.
    Each tile prefetches its share of the next panel (the next group's weights: in the
    network they come from memory; RegNetX's 7x7 layers ran 0.78 of before, their rows'
    tiles without the prefetch 0.90).
    (rows, vecs, cycles): tiles of rows pixels, the last few of rows - 1 (the template's
    split); None where it does not apply."""
    if not _grouped(g) or cpu.simd_bytes != 32:
        return None
    vecs = -(-mg // cpu.lanes())
    longest = max((r for r in range(2, MAX_ROWS + 1) if tile_fits(r, vecs, cpu)), default=0)
    if not longest:
        return None
    pixels = g["oh"] * g["ow"]
    rows = -(-pixels // -(-pixels // longest))  # as many tiles, of as equal a length
    tiles = -(-pixels // rows)
    big = pixels - tiles * (rows - 1)
    cycles = big * gemm_cost(rows, mg, k, rows, vecs, cpu, **store)
    if rows > 1:
        cycles += (tiles - big) * gemm_cost(rows - 1, mg, k, rows - 1, vecs, cpu, **store)
    return rows, vecs, g["n"] * g["group"] * cycles


class ImplicitPlan(NamedTuple):
    """The implicit GEMM's tiles, the layout of its planes, and its estimated cycles."""
    transposed: bool
    rows: int
    vecs: int
    row_group: int
    planes: dict
    cycles: float
    store_rows: int  # output rows per panel store (the image's, or a band of them); 0: none
    flat: bool = False  # tiles over the image's pixels across rows (_flat_tiles)

    @property
    def panel_store(self):
        return self.store_rows > 0


def _store_rows(g, cpu, vecs, group):
    """Output rows of a panel's scratch store: the whole image's where it fits half the L1
    cache (written and read back right away) and is no larger than the planes (it grew
    arenas: kws's first conv on x86_64, 41.1 -> 41.8 KiB), else as many rows as fit so
    (one row group: each band of rows is transposed back as soon as it is summed); 0:
    not one row fits (the tiles store float by float). Bands only at stride 1: ResNet-18's
    stride-2 layers ran them at 0.996-1.037 of the float-by-float store (profile steps
    alternated, x86_64-avx512), SqueezeNet's stride-1 expands at 0.88-0.98. Dense only:
    group convolutions' bands were neither measured nor tested."""
    limit = 4 * (g["c"] // g["group"]) * phase_planes(g, 0)["channel_stride"]
    row = 4 * g["ow"] * vecs * cpu.lanes()
    rows = min(limit, cpu.l1d_bytes // 2 or limit) // row
    if rows >= g["oh"]:
        return g["oh"]
    return rows if group == 1 and g["group"] == 1 and (g["sh"], g["sw"]) == (1, 1) else 0


def _implicit_tiles(g, cpu, mg, k):
    """(transposed, rows, vecs, row_group, store_rows, cycles, flat) of the tiles: a GEMM
    per output row, or per group of rows (transposed, narrow images), or (flat) over runs
    of the image's pixels across rows (_flat_tiles). Transposed tiles store
    through a scratch panel of store_rows rows of pixels (_store_rows) where one fits;
    elsewhere they store float by float, as before, and are weighed so."""
    repeat = g["n"] * g["group"] * g["oh"]
    (rows, vecs), cycles = best_tile(mg, g["ow"], k, cpu, overhang=True)
    pixels = False, rows, vecs, 1, 0, repeat * cycles, False
    if cpu.lanes() == 1:
        return pixels
    for store in ("blocks", "scatter"):
        (t_rows, t_vecs), t_cycles = best_tile(g["ow"], mg, k, cpu, overhang=True,
                                               **{store: True})
        flat = _flat_tiles(g, cpu, mg, k, {store: True})
        if flat and flat[2] < min(repeat * t_cycles, pixels[5]):
            store_rows = _store_rows(g, cpu, flat[1], 1) if store == "blocks" else 0
            if store_rows == g["oh"] or store == "scatter":
                return True, flat[0], flat[1], 1, store_rows, flat[2], True
            continue  # (the panel does not fit: weighed again storing float by float)
        lane = _group_lanes(g, cpu, mg, k, {store: True})
        if lane and lane[3] < min(repeat * t_cycles, pixels[5]):
            group, t_rows, t_vecs, t_cycles = lane
        elif t_cycles >= cycles:
            return pixels
        else:
            group, t_rows, t_vecs, t_cycles = _row_group(g, cpu, mg, k, t_rows, t_vecs,
                                                         repeat * t_cycles, {store: True})
        store_rows = _store_rows(g, cpu, t_vecs, group) if store == "blocks" else 0
        if store_rows or store == "scatter":
            return True, t_rows, t_vecs, group, store_rows, t_cycles, False


def _plan_implicit(g, cpu):
    mg, k, _ = _gemm_shape(g)
    transposed, rows, vecs, row_group, store_rows, cycles, flat = _implicit_tiles(g, cpu, mg, k)
    band = g["oh"] if transposed else _band(g, cpu)
    planes = phase_planes(g, 0 if transposed else vecs * cpu.lanes(), band)
    bands = -(-g["oh"] // band)
    # each row of each plane is a copy of its own, for every band and channel (stride-2
    # and -4 rows split into their column phases by vector shuffles)
    plane_rows = bands * g["c"] * planes["channel_stride"] // planes["plane_cols"]
    copy = plane_rows * copy_cost(planes["plane_cols"], cpu, contiguous=g["sw"] in (1, *SPLIT_STRIDES))
    if transposed:  # each panel of a group's channels reads the group's planes of the band
        panels = -(-mg // (vecs * cpu.lanes()))
        size = 4 * (g["c"] // g["group"]) * planes["channel_stride"]
        reread = bands * g["group"] * reread_cost(size, panels, cpu)
    else:  # each output row reads all the weights
        reread = reread_cost(4 * g["m"] * k, g["oh"], cpu)
    return ImplicitPlan(transposed, rows, vecs, row_group, planes,
                        cycles + g["n"] * (copy + reread), store_rows, flat)


def lower_implicit(node, graph, cpu):
    g, inputs, outputs = geometry(node, graph)
    plan = _plan_implicit(g, cpu)
    p = with_tile(g, cpu, plan.transposed, plan.rows, plan.vecs)
    p.update(plan.planes, row_group=plan.row_group, panel_store=plan.panel_store,
             store_rows=plan.store_rows, flat=plan.flat)
    size = g["c"] // g["group"] * plan.planes["channel_stride"] + plan.planes["slack"]
    if plan.panel_store:  # then a panel's sums, [pixels][panel channels] (panel_store.mako)
        size += plan.store_rows * g["ow"] * plan.vecs * cpu.lanes()
    return KernelCall("conv2d_implicit", conv_tag(g, tile_tag(p)), p, inputs, outputs,
                      scratch_bytes=4 * size, packed=_packed_weights(g, _panel_width(p)))


def cost_implicit(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    outputs = g["n"] * g["m"] * g["oh"] * g["ow"]
    return _plan_implicit(g, cpu).cycles + epilogue_cost(outputs, g["epilogue"], tile_lanes(g["epilogue"], cpu))


# --- winograd ---------------------------------------------------------------------------

def _winograd_applies(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    return winograd.applies(g, cpu)


#: the vectors winograd's kernel runs on where the target's are wider but its multiply-adds
#: are not faster on them: a core whose AVX-512 is double-pumped (AMD Zen 4, ``[cpu]
#: fma_bytes = 64``: a 512-bit multiply-add a cycle or two 256-bit ones, 58.3 GMAC/s
#: either way) gains nothing from 512-bit vectors in winograd's gathers, transforms and
#: scatters, and its GEMMs of few tiles (F(4x4)'s 16 on 14x14: one 512-bit vector) stall
#: on the transformed weights' stream. On 256-bit vectors (AVX-512VL keeps the 32
#: registers) it runs as on x86_64, and its estimate, counted as tiling.py counts (two
#: multiply-adds of a vector a cycle), is divided by how many times tiling.py over-counts
#: the other tactics' 512-bit ones there (2 * simd_bytes / fma_bytes). Measured
#: (benchmarks/versus.py, CPU time, docs/speed.md): on Zen 4, SqueezeNet 1.1's expands
#: run winograd on 256-bit vectors at 0.89 of implicit on 512-bit ones, the whole network;
#: on an Intel Xeon (two 512-bit units, fma_bytes = 128) winograd on 512-bit vectors runs
#: ResNet-18 in 0.85 of the time it takes on 256-bit ones.
WINOGRAD_VECTOR_BYTES = 32


def _winograd_cpu(cpu):
    """(the CPU winograd's kernel is planned and lowered for, its estimates' divisor)."""
    if cpu.simd_bytes > WINOGRAD_VECTOR_BYTES and 0 < cpu.fma_bytes <= 2 * WINOGRAD_VECTOR_BYTES:
        return replace(cpu, simd_bytes=WINOGRAD_VECTOR_BYTES), 2 * cpu.simd_bytes / cpu.fma_bytes
    return cpu, 1


def _winograd_budget(cpu):
    """Bytes of transformed tiles per chunk: about the level-2 cache (that of a 16 KiB
    level 1 on a CPU that names none)."""
    return l2_bytes(cpu) or 16 * 16384


def _winograd_plan(g, cpu):
    """(estimated cycles, tile edge, rows, vecs, tiles per chunk) of the cheaper tile size,
    on _winograd_cpu's vectors (the estimate in units of the target's)."""
    narrow, overcount = _winograd_cpu(cpu)
    cycles, *plan = min(_winograd_cost(g, narrow, m) for m in winograd.SIZES)
    return (cycles / overcount, *plan)


def _winograd_cost(g, cpu, m):
    rows, vecs, cols = winograd.plan(g, cpu, best_tile, _winograd_budget(cpu), m)
    points, lanes = (m + 2) ** 2, cpu.lanes()
    chunks = -(-winograd.tile_count(g, m) // cols)
    gemms = points * chunks * gemm_cost(g["m"], cols, g["c"], rows, vecs, cpu)
    # the input is split into its patch planes (winograd.patch_planes: (m+2)/m of the
    # padded input): the m column phases by vector shuffles (twice a copy's cycles, as
    # depthwise's stride-2 rows), the 2 planes of the next tile's first columns float by
    # float; the transforms run on vectors of tiles read from them (a load and about 6
    # operations a point); each output pixel is a load and a store (whole tiles in
    # straight lines, the image's cut ones in loops)
    planes = g["c"] * winograd.plane_floats(g, m)
    split = m in SPLIT_STRIDES and lanes >= 4
    shuffled = planes * m // (m + 2) if split else 0
    pad = 2 * copy_cost(shuffled, cpu) + copy_cost(planes - shuffled, cpu, contiguous=False)
    inputs = g["c"] * 7 * points / lanes
    outputs = g["m"] * (m * m + 6 * points / lanes)
    # the transformed weights, (m+2)^2 / 9 times the weights, read once per chunk: in a
    # whole network from memory (a layer's benchmark alone keeps them in the L3)
    weights = reread_cost(4 * points * g["m"] * g["c"], chunks, cpu)
    cycles = g["n"] * (gemms + pad + chunks * cols * (inputs + outputs) + weights)
    return cycles, m, rows, vecs, cols


def lower_winograd(node, graph, cpu):
    g, inputs, outputs = geometry(node, graph)
    _, m, rows, vecs, cols = _winograd_plan(g, cpu)
    cpu = _winograd_cpu(cpu)[0]
    p = winograd.params(g, cpu, rows, vecs, cols, m)
    tag = conv_tag(g, f"wino{m}_{rows}x{vecs * cpu.lanes()}_")
    return KernelCall("conv2d_winograd", tag, p, inputs, outputs,
                      scratch_bytes=4 * winograd.scratch_floats(p),
                      packed={"w": packing.winograd_spec(g["m"], g["c"], rows, m)})


def cost_winograd(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    pixels = g["m"] * g["oh"] * g["ow"]
    # (the epilogue runs on the back-transform's vectors, or float by float as the pixels
    # are stored, with the vmath functions)
    lanes = cpu.lanes() if winograd.epilogue_on_vectors(g["epilogue"]) else 1
    return _winograd_plan(g, cpu)[0] + epilogue_cost(g["n"] * pixels, g["epilogue"], lanes)


def _over_residual(lower):
    """The tactic's kernel writing y over a fused residual: each tile reads the residual's
    elements right before it stores the same elements of y."""
    def call_over(node, graph, cpu, tensor):
        call = lower(node, graph, cpu)
        return in_place(call, tensor, residual_roles(call, graph))
    return call_over


def _gemm1x1_in_place(node, graph, cpu, tensor):
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


def _unscaled(node, graph, cpu=None):
    """Whether the Conv has no fused input scale: the tactics other than direct and gemm1x1
    (all it is fused into, passes/fuse_channel_scale.py) read their weights unscaled."""
    return not geometry(node, graph)[0]["scale"]


TACTICS = {"Conv": [
    Tactic("direct", lower_direct, cost=cost_direct),
    Tactic("gemm1x1", lower_gemm1x1, _is_1x1, cost_gemm1x1, _gemm1x1_in_place),
    Tactic("im2col", lower_im2col, _unscaled, cost_im2col, _over_residual(lower_im2col)),
    Tactic("implicit", lower_implicit, _unscaled, cost_implicit,
           in_place=_over_residual(lower_implicit)),
    Tactic("depthwise", lower_depthwise, depthwise_applies, cost_depthwise, depthwise_in_place),
    Tactic("depthwise_shift", lower_shift, shift_applies, cost_shift,
           lambda node, graph, cpu, tensor: depthwise_in_place(node, graph, cpu, tensor, lower_shift)),
    # (reads x while writing y: in place over a residual only)
    Tactic("depthwise_s2", lower_direct_s2, direct_applies, cost_direct_s2,
           _over_residual(lower_direct_s2)),
    Tactic("depthwise_nchwc", lower_nchwc, nchwc_applies, cost_nchwc,
           lambda node, graph, cpu, tensor: depthwise_in_place(node, graph, cpu, tensor, lower_nchwc)),
    Tactic("winograd", lower_winograd, _winograd_applies, cost_winograd,
           _over_residual(lower_winograd)),
]}
EPILOGUE_SPANS = {"Conv": conv_spans}

"""Conv's implicit GEMM tactic: a GEMM that reads the windows in place from a zero-padded
copy of the input, split into stride phases so that every step reads contiguous vectors;
its tiles along the pixels, or transposed (along the channels) for narrow images.
"""

from typing import NamedTuple

from onnxcc.ops import KernelCall
from onnxcc.ops.common.conv_geometry import (SPLIT_STRIDES, conv_tag, geometry, phase_planes,
                                             tile_tag, with_tile)
from onnxcc.ops.common.epilogue import tile_epilogue_cost
from onnxcc.ops.common.tiling import (MAX_ROWS, MAX_VECS, best_tile, copy_cost, gemm_cost,
                                      reread_cost, tile_fits)

from .gemm import gemm_shape, packed_weights, panel_width


def _grouped(g):
    """A group convolution of several input channels a group (not a depthwise one)."""
    return g["group"] > 1 and g["c"] // g["group"] > 1


#: the caches of L1's size a group convolution's planes of a band may fill on x86: each band
#: copies the rows its taps reach again, so bands of one L1 copy too much (the numbers:
#: docs/speed.md, "RegNetX's group convolutions on AVX2: flat tiles, wider bands (Zen 4)")
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
    rows streams all the weights again, so a group is taken when that re-read makes it
    cheaper, the one of most accumulators (each load feeds the most multiply-adds; the
    numbers: docs/speed.md, "Narrow images: tiles over groups of rows"). The re-read
    ranks the choices here only; the cycles are the tiles' (as every transposed tile's).
    ``store``: gemm_cost's keyword of the tiles' store."""
    oh, ow = g["oh"], g["ow"]
    size = 4 * mg * k
    best = None
    for group in range(2, oh + 1):
        # one vector is broadcast-bound (docs/speed.md, "Narrow images: tiles over groups of rows");
        # no wider than the channels
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
    broadcast memory operand, the weights' vector loaded once for them all; the numbers:
    docs/speed.md, "RegNetX's group convolutions: long channel-vector tiles (AVX-512)". The
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
    network they come from memory). (The numbers: docs/speed.md,
    "RegNetX's group convolutions on AVX2: flat tiles, wider bands (Zen 4)".)
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
    arenas), else as many rows as fit so (one row group: each band of rows is transposed
    back as soon as it is summed); 0: not one row fits (the tiles store float by float).
    Bands only at stride 1: stride-2 layers gained nothing from them. Dense only: group
    convolutions' bands were neither measured nor tested. (The numbers: docs/speed.md,
    "Implicit's channel-vector tiles: the panel store" and
    "The panel store in bands of rows: larger images".)"""
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
    mg, k, _ = gemm_shape(g)
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
                      scratch_bytes=4 * size, packed=packed_weights(g, panel_width(p)))


def cost_implicit(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    outputs = g["n"] * g["m"] * g["oh"] * g["ow"]
    return _plan_implicit(g, cpu).cycles + tile_epilogue_cost(outputs, g["epilogue"], cpu)

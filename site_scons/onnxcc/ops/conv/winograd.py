"""Conv's winograd tactic: 3x3 stride 1 as Winograd F(4x4, 3x3) or F(2x2, 3x3), fewer
multiplies (the transforms are ops/common/winograd.py's)."""

from dataclasses import replace

from onnxcc.ops import KernelCall
from onnxcc.ops.common import packing, winograd
from onnxcc.ops.common.conv_geometry import SPLIT_STRIDES, conv_tag, geometry
from onnxcc.ops.common.tiling import (best_tile, copy_cost, epilogue_cost, gemm_cost, l2_share,
                                      reread_cost)


def winograd_applies(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    return winograd.applies(g, cpu)


#: the vectors winograd's kernel runs on where the target's are wider but its multiply-adds
#: are not faster on them: a core whose AVX-512 is double-pumped (AMD Zen 4, ``[cpu]
#: fma_bytes = 64``: a 512-bit multiply-add a cycle or two 256-bit ones) gains nothing from
#: 512-bit vectors in winograd's gathers, transforms and scatters, and its GEMMs of few
#: tiles stall on the transformed weights' stream. On 256-bit vectors (AVX-512VL keeps the
#: 32 registers) it runs as on x86_64, and its estimate, counted as tiling.py counts (two
#: multiply-adds of a vector a cycle), is divided by how many times tiling.py over-counts
#: the other tactics' 512-bit ones there (2 * simd_bytes / fma_bytes). (The numbers:
#: docs/speed.md, "Zen 4: Winograd on 256-bit vectors on the AVX-512 target" and
#: "One AVX-512, two cost models".)
WINOGRAD_VECTOR_BYTES = 32


def _winograd_cpu(cpu):
    """(the CPU winograd's kernel is planned and lowered for, its estimates' divisor)."""
    if cpu.simd_bytes > WINOGRAD_VECTOR_BYTES and 0 < cpu.fma_bytes <= 2 * WINOGRAD_VECTOR_BYTES:
        return replace(cpu, simd_bytes=WINOGRAD_VECTOR_BYTES), 2 * cpu.simd_bytes / cpu.fma_bytes
    return cpu, 1


def _winograd_budget(cpu):
    """Bytes of transformed tiles per chunk: the level 2's share; 256 KiB on a CPU
    without one."""
    return l2_share(cpu) or 16 * 16384


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

"""Depthwise convolution with the channels in the vector lanes: the Conv tactic
``depthwise_nchwc`` (templates/kernels/conv2d_dw_nchwc.c.mako).

The ``depthwise`` tactic runs a channel at a time with its vectors along an output row: on
the 14x14 and 7x7 images of MobileNetV2's and EfficientNet's late layers most lanes of a
16-float vector carry nothing, and copying each channel into its padded planes costs more
than its taps. Here a block of ``lanes`` channels is transposed (vector shuffles, a
``lanes`` x ``lanes`` block at a time) into a zero-padded scratch image whose pixels are
vectors of the block's channels, [rows][cols][lanes]; each output pixel is then kh * kw
multiply-adds of whole vectors against the weights packed at build time as
[channel block][kh * kw][lanes]. A tile of ``rows`` pixels of an output row stays in
registers; the block's outputs, pixel vectors, are transposed back to NCHW, a
``lanes``-pixel run of each channel at a time, through the usual epilogue store.

Any kernel, stride, dilation and padding: the scratch image holds every input pixel and
the padding every window reads. SIMD CPUs (4, 8 or 16 lanes) only.
"""

import math

from onnxcc.ops.common import packing
from onnxcc.ops.common.epilogue import tile_epilogue_cost, vectorizable
from onnxcc.ops.common.spatial import window_reach
from onnxcc.ops.common.tiling import copy_cost


def applies(g, cpu):
    lanes = cpu.lanes()
    return lanes >= 4 and lanes & (lanes - 1) == 0


def scratch_image(g):
    """(rows, cols) of the padded scratch image: every window's reach and every input
    pixel (placed at row + pt, column + pl)."""
    rows = max(window_reach(g["oh"], g["kh"], g["sh"], g["dh"]), g["pt"] + g["h"])
    cols = max(window_reach(g["ow"], g["kw"], g["sw"], g["dw"]), g["pl"] + g["w"])
    return rows, cols


def tile_pixels(g, cpu):
    """Output pixels of a register tile: as many as the registers hold (an accumulator
    each, the weight vector and a few spare), the row split into tiles of equal size."""
    most = max(1, cpu.registers - 4)
    return -(-g["ow"] // -(-g["ow"] // most))


def params(g, cpu):
    rows, cols = scratch_image(g)
    return dict(g, lanes=cpu.lanes(), registers=cpu.registers, rows=tile_pixels(g, cpu),
                image_rows=rows, image_cols=cols)


def scratch_floats(p):
    return (p["image_rows"] * p["image_cols"] + p["oh"] * p["ow"]) * p["lanes"]


def packed(g, cpu):
    """The weights [channels][kh * kw] in panels of a vector's channels, tap-major."""
    return {"w": packing.panels_spec(g["c"], g["kh"] * g["kw"], cpu.lanes())}


def cost(g, cpu):
    """Estimated cycles, without the epilogue: per block of channels, the transposes in
    and out (log2(lanes) shuffles a vector, and its load or store), the tiles'
    multiply-adds and their stores; per call, clearing the image. (Fitted against the
    depthwise tactic: docs/speed.md, "Channels in the lanes: `depthwise_nchwc`".)"""
    lanes = cpu.lanes()
    rows, cols = scratch_image(g)
    # (log2(lanes) shuffles of two vectors in, one out, a vector, plus what a fit against
    # depthwise_shift added: on 16 lanes more on one shuffle port than on two (``[cpu]
    # shuffle_ports``), on AVX2 one (with less, this tactic won layers where it ran slower).
    # The numbers: docs/speed.md, "Aligned rows and shifted taps: `depthwise_shift`" and
    # "On Zen 4: the choices re-fitted, and Swish's exp")
    wide = (3 if cpu.shuffle_ports < 2 else 2) if lanes >= 16 else 1
    per_vector = math.log2(lanes) + wide
    transposes = (g["h"] * g["w"] + g["oh"] * g["ow"]) * per_vector
    r = tile_pixels(g, cpu)
    full, rest = divmod(g["ow"], r)
    tiles = g["oh"] * (full * _tile(r, g) + (_tile(rest, g) if rest else 0))
    blocks = -(-g["c"] // lanes)
    return g["n"] * (blocks * (transposes + tiles) + copy_cost(rows * cols * lanes, cpu))


def _tile(pixels, g):
    """A tile's multiply-adds, two a cycle (each input vector loaded once, into all of
    its multiply-adds of a kernel row), then its stores."""
    return g["kh"] * g["kw"] * pixels / 2 + pixels + 4


def epilogue_cycles(g, cpu):
    """The epilogue on whole vectors: of a block's channels (the padded last block too), or
    where it cannot run along the channels (a residual), of a channel's pixels."""
    lanes, chain = cpu.lanes(), g["epilogue"]
    pixels = g["oh"] * g["ow"]
    if vectorizable(chain, 1):
        elements = -(-g["c"] // lanes) * lanes * pixels
    else:
        elements = g["c"] * -(-pixels // lanes) * lanes
    return tile_epilogue_cost(g["n"] * elements, chain, cpu)

"""QLinearConv (1x1, stride 1, no pads, one group) and QGemm on Helium (MVE): int8 dot
products of 16 lanes.

  gemm_mve    (qconv2d_mve) a block of pixels' inputs copied pixel-major into scratch
              as int8 (uint8 codes less 128), each pixel's channels padded to a multiple
              of 16; then 4 output channels by 2 pixels per step, one VMLADAVA.S8 (16
              multiply-accumulates into a scalar sum) per channel and pixel (inline
              assembly: 128 in 16 instructions), a pixel's 4 channels requantized in the
              lanes of a vector where the requantization is folded. The input
              zero point is folded into each channel's starting sum once per call:
              sum((x - zx) * w) = sum(x' * w) - zx' * sum(w), the same int32 sums as the
              reference (then the same requantization gives the same codes).
              Weights packed at compile time (ops/common/packing.py "lanes": 4 rows, a run
              of 16 taps of each in turn).

Only where the target has MVE (cpu feature "mve"), with q15's weights (int8, zero point 0).
"""

from dataclasses import replace

from onnxcc.core.cgen import c_type
from onnxcc.ops.common import packing
from onnxcc.ops.common.spatial import is_pointwise, pointwise_fits_over_x

from .q15 import _base, _over, _q15_weights, _qgemm_base

#: output channels (weight rows) and pixels of a step of the kernel
ROWS, PIXELS = 4, 2
#: int8 lanes of a vector
LANES = 16
#: bytes of a block of pixels' inputs in scratch (q15's columns' size)
BLOCK_BYTES = 1024


def _mve(cpu):
    return cpu is not None and "mve" in cpu.features


def _lanes(call, p, k):
    """``call`` as qconv2d_mve with ``k`` inputs per output: blocks of pixels of up to
    BLOCK_BYTES (an even count, but all the pixels if fewer), each channel's starting sum
    in scratch before them."""
    k16 = packing.lanes_depth(k, LANES)
    pixels = p["oh"] * p["ow"]
    block = min(pixels, max(PIXELS, BLOCK_BYTES // k16 // PIXELS * PIXELS))
    p.update(k=k, k16=k16, block=block)
    col_bytes = -(-block // PIXELS) * PIXELS * k16
    return replace(call, template="qconv2d_mve", params=p, scratch_bytes=4 * p["m"] + col_bytes,
                   packed={"w": packing.lanes_spec(p["m"], k, ROWS, LANES)})


def applies(node, graph, cpu):
    _, p = _base(node, graph)
    return _mve(cpu) and _q15_weights(node, graph, p) and is_pointwise(p)


def lower(node, graph, cpu):
    call, p = _base(node, graph)
    p["pointwise"] = True
    return _lanes(call, p, p["c"])


def _cost(n, pixels, m, k):
    """Instructions (q15's units): 16 per step of 16 taps of 8 sums, ~12 per output for a
    tile's setup and the requantization (kws_qdq's 1x1 layers on cortex-m55: 162,000 for
    8,000 outputs of 64 taps), the copy of the inputs."""
    steps = -(-k // LANES)
    return n * pixels * (m * steps * 16.0 / (ROWS * PIXELS) + m * 12.0 + k * 0.5)


def cost(node, graph, cpu):
    _, p = _base(node, graph)
    return _cost(p["n"], p["oh"] * p["ow"], p["m"], p["c"])


def in_place(node, graph, cpu, tensor):
    """As gemm_q15's (q15._gemm_in_place): a block's inputs are all in scratch before any
    of its outputs is written."""
    return _over(lower(node, graph, cpu), node, graph, tensor, pointwise_fits_over_x)


# --- QGemm ---------------------------------------------------------------------------------

def qgemm_applies(node, graph, cpu):
    return _mve(cpu) and _q15_weights(node, graph, _qgemm_base(node, graph)[1])


def lower_qgemm(node, graph, cpu):
    call, p = _qgemm_base(node, graph)
    p["y_type"] = c_type(graph.info(node.outputs[0]).dtype)  # (the lanes' store)
    inputs = [("x" if role == "a" else role, t) for role, t in call.inputs]
    return replace(_lanes(call, p, p["k"]), inputs=inputs)


def cost_qgemm(node, graph, cpu):
    _, p = _qgemm_base(node, graph)
    return _cost(1, p["ow"], p["m"], p["k"])

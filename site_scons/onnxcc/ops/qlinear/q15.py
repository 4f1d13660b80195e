"""QLinearConv and QGemm as tactics: the reference kernels and kernels on int16 pairs.

  reference       qconv2d / qgemm: the smallest code
  gemm_q15        QLinearConv with one group (qconv2d_q15): a block of pixels' windows
                  copied into int16 columns (zero point subtracted), then each output
                  channel down the block, its requantization constants once: four
                  pixels per step, a weight word widened by SXTB16 for the four, two
                  taps per SMLAD (inline assembly on Thumb-2 with the DSP extension:
                  Cortex-M4/M7, ARMv7-A; the same sums in C elsewhere); few taps (<=
                  FEW_TAPS): the channel's weights in registers, two pixels per step;
                  weights packed at compile time (ops/common/packing.py "pairs")
  depthwise_q15   QLinearConv with group == channels: each channel copied into a
                  zero-padded int16 plane, then a row of outputs' sums, neighbouring
                  windows sharing the pairs of taps they load (two taps per SMLAD against
                  weight pairs in registers), then the row requantized
  gemm_q15        QGemm: the same kernel with x's rows as the pixels

They requantize with the fast exact path (qhelpers.mako ``requantize_fast``, where every
channel's shift is in its range): the same integers as the reference, so every tactic
gives bit-identical outputs. They need int8 weights with zero point 0 (what onnxruntime's
quantizer writes: symmetric weights); other convolutions keep the reference.
"""

from dataclasses import replace

from onnxcc.core.cgen import c_type
from onnxcc.core.quant import fast_requant_window
from onnxcc.ops import in_place
from onnxcc.ops.common import packing
from onnxcc.ops.common.conv_geometry import macs
from onnxcc.ops.common.spatial import (channel_fits_over_x, is_depthwise, is_pointwise,
                                       pointwise_fits_over_x, window_reach)

from .in_place import same_width
from .lowering import RESIDUAL_INPUT, lower_qconv, lower_qgemm, requant_shifts


def _requant(node, graph):
    """The fast requantization's parameters: its tie window (or None), ``wide`` unless
    every sum is below 2^23 in magnitude whatever the input (passes/accumulator_bits.py:
    the range test goes), ``fold`` when every shift is at most 38 (the zero point rides in
    the multiply's accumulator)."""
    shifts = requant_shifts(node, graph)
    return {"fast": fast_requant_window(shifts), "wide": node.attrs.get("onnxcc_sum_bits", 32) > 23,
            "fold": max(shifts) <= 38}


def _base(node, graph):
    call = lower_qconv(node, graph)
    p = dict(call.params, **_requant(node, graph))
    return call, p


def _q15_weights(node, graph, p):
    """Weights these kernels can read: int8 with every zero point 0."""
    return graph.info(node.inputs[1]).dtype == "int8" and not p["w_zp"]


def _outputs(p):
    return p["n"] * p["m"] * p["oh"] * p["ow"]


def _dsp(cpu):
    return "dsp" in cpu.features


# --- reference ---------------------------------------------------------------------------

def cost_reference(node, graph, cpu):
    _, p = _base(node, graph)
    return macs(p) * 6.0 + _outputs(p) * 60.0


# --- gemm_q15 ----------------------------------------------------------------------------

def _gemm_applies(node, graph, cpu):
    _, p = _base(node, graph)
    return _q15_weights(node, graph, p) and p["group"] == 1


#: the most taps (k4) of a convolution whose kernel holds each channel's weights in registers
FEW_TAPS = 8


def _blocked(call, p, k):
    """``call`` as qconv2d_q15 with ``k`` taps per output: blocks of pixels' columns of up
    to 512 taps (each output channel's constants once per block), the columns of 2 pixels
    (few taps: the weights in registers) or 4 (a weight word widened once for four) side
    by side."""
    k4 = packing.pairs_depth(k)
    few = k4 <= FEW_TAPS
    group = 2 if few else 4
    pixels = p["oh"] * p["ow"]
    block = min(pixels, max(group, 512 // k4 // group * group))
    group = min(group, block)  # fewer pixels: their columns side by side all the same
    p.update(q15=True, k=k, k4=k4, block=block, col_group=group, few=few)
    return replace(call, template="qconv2d_q15", params=p,
                   scratch_bytes=2 * k4 * -(-block // group) * group,
                   packed={"w": packing.pairs_spec(p["m"], k)})


def lower_gemm(node, graph, cpu):
    call, p = _base(node, graph)
    p["pointwise"] = is_pointwise(p)
    return _blocked(call, p, p["c"] * p["kh"] * p["kw"])


def cost_gemm(node, graph, cpu):
    _, p = _base(node, graph)
    k = p["c"] * p["kh"] * p["kw"]
    columns = p["n"] * p["oh"] * p["ow"] * k * (2.0 if is_pointwise(p) else 5.0)
    return macs(p) * (1.3 if _dsp(cpu) else 2.5) + _outputs(p) * 22.0 + columns


def _gemm_in_place(node, graph, cpu, tensor):
    """Over a fused residual (each element read right before the same element of y is
    written); over x for a 1x1 convolution in one image or with M <= C: a block's pixels'
    inputs are in the columns before any of their outputs is written, and output (k, p)
    lands on x's pixel p (of the block) of some channel, or of an earlier image, or beyond
    x (the reference's proof, qlinear/in_place.qconv_in_place)."""
    return _over(lower_gemm(node, graph, cpu), node, graph, tensor, pointwise_fits_over_x)


def _over(call, node, graph, tensor, fits_over_x):
    """``call`` writing y over the fused residual ``tensor``, or over x where
    ``fits_over_x(params)`` and x's elements are y's width; else None."""
    if call.params["residual"] and tensor == node.inputs[RESIDUAL_INPUT]:
        return in_place(call, tensor, ("r",))
    if fits_over_x(call.params) and same_width(graph, node, tensor):
        return in_place(call, tensor, ("x",))
    return None


# --- depthwise_q15 -----------------------------------------------------------------------

def _depthwise_applies(node, graph, cpu):
    _, p = _base(node, graph)
    return _q15_weights(node, graph, p) and is_depthwise(p)


def lower_depthwise(node, graph, cpu):
    call, p = _base(node, graph)
    # the padded plane: the rows and columns the windows read
    ph = window_reach(p["oh"], p["kh"], p["sh"], p["dh"])
    pw = window_reach(p["ow"], p["kw"], p["sw"], p["dw"])
    # the plane, a pair of slack after it (a last tap's pair may reach one int16 beyond)
    # and one output row's int32 sums
    plane_bytes = -(-2 * (ph * pw + 2) // 4) * 4
    p.update(q15=True, ph=ph, pw=pw, plane_bytes=plane_bytes)
    return replace(call, template="qconv2d_dw_q15", params=p,
                   scratch_bytes=plane_bytes + 4 * p["ow"])


def cost_depthwise(node, graph, cpu):
    _, p = _base(node, graph)
    plane = p["n"] * p["c"] * p["h"] * p["w"] * 3.0
    return macs(p) * (0.7 if _dsp(cpu) else 2.5) + _outputs(p) * 26.0 + plane


def _depthwise_in_place(node, graph, cpu, tensor):
    """Over a fused residual, or over x when a channel does not grow: channel k of x is in
    the plane before channel k of y is written, and lies within channels 0..k of x."""
    return _over(lower_depthwise(node, graph, cpu), node, graph, tensor, channel_fits_over_x)


# --- QGemm ---------------------------------------------------------------------------------

def _qgemm_base(node, graph):
    call = lower_qgemm(node, graph)
    q = call.params
    p = dict(q, matrix=True, n=1, c=q["k"], h=1, w=1, oh=1, ow=q["m"], m=q["n"], kh=1, kw=1,
             sh=1, sw=1, dh=1, dw=1, pt=0, pl=0, pb=0, pr=0, x_zp=q["a_zp"], residual=None,
             pointwise=False, x_type=c_type(graph.info(node.inputs[0]).dtype),
             **_requant(node, graph))
    return call, p


def _qgemm_applies(node, graph, cpu):
    return _q15_weights(node, graph, _qgemm_base(node, graph)[1])


def lower_qgemm_q15(node, graph, cpu):
    call, p = _qgemm_base(node, graph)
    inputs = [("x" if role == "a" else role, t) for role, t in call.inputs]
    return replace(_blocked(call, p, p["k"]), inputs=inputs)


def cost_qgemm_reference(node, graph, cpu):
    q = lower_qgemm(node, graph).params
    return q["m"] * q["n"] * (q["k"] * 6.0 + 60.0)


def cost_qgemm_q15(node, graph, cpu):
    q = lower_qgemm(node, graph).params
    per_mac = (1.5 if _dsp(cpu) else 2.5) if q["m"] == 1 else (1.1 if _dsp(cpu) else 2.5)
    return q["m"] * q["n"] * (q["k"] * per_mac + 22.0) + q["m"] * q["k"] * 3.0


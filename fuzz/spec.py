"""Random valid graphs for the differential fuzzer, as plain JSON-able specs.

A *spec* describes one small graph: an anchor (a convolution, Gemm, MatMul, pooling,
broadcasting binary op, or nothing) followed by a chain of elementwise ops -- exactly what
the optimizer fuses into a kernel's epilogue -- plus the tactics to force and whether to
fuse. Specs are drawn by Hypothesis strategies (``specs()``), so a failing one shrinks to
a minimal reproducer; ``build_model(spec)`` turns a spec into an ONNX model, the same
bytes every time (weights come from the spec's seed), so a spec saved as JSON replays.

As NNSmith does, the ops know their valid inputs: shapes are drawn so that every
attribute combination is legal, ops that are undefined somewhere (Log, Sqrt, Reciprocal,
Acos, ...) are guarded by an op that maps into their domain, growth (Exp, Sinh) is
bounded by a Clip before it, and nothing divides by a computed value, so no NaN or Inf can
hide a difference. Shapes favour tails: odd channel counts and sizes that are no
multiple of any vector width or tile.
"""

import hashlib
import json
import logging
import os
import types

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from onnxcc import ops as onnxcc_ops  # noqa: E402 (the tactics to force come from the compiler)
from onnxcc.ops.common import winograd  # noqa: E402
from onnxcc.ops.common.spatial import is_depthwise, is_unit_window, window_2d, window_count  # noqa: E402
from onnxcc.target import Cpu  # noqa: E402

OPSET = 20


def _same_draws_in_every_process():
    """Hypothesis (since 6.131) draws one integer in twenty from constants it reads out of
    the local modules a process has imported -- fuzz/ and onnxcc/ here, more of them as
    the compiler imports its stages -- so a seed's graphs depended on what else the process
    had imported (one that imported every compiler module first parted from a plain
    ``fuzz.graphs`` at graph 48 of seed 5). That pool is kept empty (its built-in
    constants, the same everywhere, stay):
    a seed draws the same graphs in every process. (Hypothesis' private hook: the pinned
    version has it; tests/test_fuzz_graphs.py draws a seed in two processes.)"""
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import Constants
    if not hasattr(providers, "_get_local_constants"):
        raise ImportError("hypothesis.internal.conjecture.providers._get_local_constants is gone: "
                          "fuzz/spec.py cannot keep a seed's draws the same in every process")
    empty = Constants()
    providers._get_local_constants = lambda: empty


_same_draws_in_every_process()

#: unary ops defined and finite on every finite input: op -> attribute strategy
SAFE_UNARY = {
    "Relu": st.just({}),
    "LeakyRelu": st.fixed_dictionaries({"alpha": st.sampled_from([0.01, 0.1, 0.3, 1.5])}),
    "Elu": st.fixed_dictionaries({"alpha": st.sampled_from([0.5, 1.0, 2.0])}),
    "Selu": st.just({}),
    "Celu": st.fixed_dictionaries({"alpha": st.sampled_from([0.5, 1.0, 2.0])}),
    "Sigmoid": st.just({}),
    "HardSigmoid": st.fixed_dictionaries({"alpha": st.sampled_from([0.2, 0.1, 0.5]),
                                          "beta": st.sampled_from([0.5, 0.3, 0.6])}),
    "HardSwish": st.just({}),
    "Tanh": st.just({}),
    "Softsign": st.just({}),
    "Softplus": st.just({}),
    "Neg": st.just({}),
    "Abs": st.just({}),
    "Erf": st.just({}),
    "Sin": st.just({}),
    "Cos": st.just({}),
    "Atan": st.just({}),
    "Asinh": st.just({}),
    "Mish": st.just({}),
    "Gelu": st.fixed_dictionaries({"approximate": st.sampled_from(["none", "tanh"])}),
    "Clip": st.sampled_from([{"min": -1.0, "max": 1.0}, {"min": 0.0, "max": 6.0},
                             {"min": -0.5}, {"max": 0.25}]),
}

#: ops defined on part of the line, and the steps that bring any value into it
GUARDED_UNARY = {
    "Exp": [["Clip", {"min": -6.0, "max": 6.0}]],
    "Sinh": [["Clip", {"min": -4.0, "max": 4.0}]],
    "Cosh": [["Clip", {"min": -4.0, "max": 4.0}]],
    "Sqrt": [["Abs", {}]],
    "Log": [["Abs", {}], ["Add", {"const": 0.5}]],
    "Reciprocal": [["Abs", {}], ["Add", {"const": 0.5}]],
    "Asin": [["Tanh", {}]],
    "Acos": [["Tanh", {}]],
    "Atanh": [["Tanh", {}], ["Mul", {"const": 0.9}]],
    "Acosh": [["Abs", {}], ["Add", {"const": 1.5}]],
}

#: elementwise binary ops with a second operand; Div only divides by that operand, whose
#: elements are kept away from zero
BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min"]

#: the tactics the fuzzer forces, per op type: every tactic the compiler has, so a new
#: one is fuzzed from the day it is registered
#: ops whose fast tactic the cost model takes wherever it applies (Transpose's tiles, the
#: row reductions' vector) and opt=size builds the reference of: not forced, so that the
#: draws of every graph stay those before they had tactics
COST_ONLY = {"Transpose", "ReduceMean", "ReduceSum", "ReduceMax"}
#: a CPU with vectors, for the structural rules of tactics that need one (winograd)
SIMD_CPU = Cpu(simd_bytes=16)
#: tactics of one CPU extension that the cost model takes wherever they apply on its
#: targets (Helium's gemm_mve: the int8 networks campaign on cortex-m55 reaches it): not
#: forced, so that the draws of every other target stay theirs, no build refused for them
EXTENSION_ONLY = {"gemm_mve"}
TACTICS = {op: [t.name for t in tactics if t.name not in EXTENSION_ONLY]
           for op, tactics in sorted(onnxcc_ops.TACTICS.items()) if len(tactics) > 1 and op not in COST_ONLY}

#: the sizes of a first stage's input: "small" (tails everywhere), "wide" (a few rows of 17
#: to 70 pixels, a convolution (stride 2 or 4 along them) or pooling: rows of several
#: vectors even at stride 2 and 16 lanes, the phase planes' shuffle fill) and "big" (native targets only: a
#: 3x3 convolution of 32 to 44 pixels a side and 32 to 48 channels, winograd's many tiles
#: in several chunks; or a recurrent cell of 100 to 128 units over 300 to 800 steps, the
#: blocked tactic's projection in chunks); the big ones stay under about 40 million
#: multiply-adds; "narrow" (a dense convolution of 40 to 80 channels on an image of 2 to 6
#: rows of 2 to 7 pixels: the implicit GEMM's channel-vector tiles over groups of rows)
SIZES = {"small": 10, "wide": 4, "big": 2, "narrow": 2}


def size_mode(big):
    """A first stage's size mode (``SIZES``; "big" only where ``big``), "small" first so
    that a failure shrinks to it."""
    modes = [m for m, weight in SIZES.items() for _ in range(weight) if big or m != "big"]
    return st.sampled_from(modes)


def _sizes(draw, spatial, mode):
    """Spatial sizes of a first stage's input in ``mode``: for "wide", the last dimension
    long and the others short."""
    if mode == "wide":
        return [draw(st.integers(1, 6)) for _ in range(spatial - 1)] + [draw(st.integers(17, 70))]
    if mode == "big":
        return [draw(st.integers(32, 44)) for _ in range(spatial)]
    if mode == "narrow":
        return [draw(st.integers(2, 6)), draw(st.integers(2, 7))]
    return [draw(st.integers(1, 13)) for _ in range(spatial)]


@st.composite
def conv_anchor(draw, x=None, image=False, mode="small"):
    """A convolution; on ``x`` (a later stage's input, rank 3 or 4) its kernel shrinks to fit;
    ``image``: 2-D on one image of 4 to 16 pixels a side; ``mode``: ``SIZES``."""
    spatial = len(x) - 2 if x else 2 if image or mode != "small" else draw(st.sampled_from([2, 2, 2, 1]))
    n = x[0] if x else 1 if image or mode != "small" else draw(st.integers(1, 2))
    kinds = ["dense", "dense", "depthwise", "grouped", "pointwise", "pointwise"]
    if mode == "wide":  # the kernels that read phase planes (the depthwise one's by shuffles)
        kinds = ["dense", "depthwise", "depthwise"]
    elif mode in ("big", "narrow"):  # winograd's; implicit's row groups
        kinds = ["dense"]
    if x and not any(x[1] % g == 0 for g in (2, 3)):
        kinds.remove("grouped")
    kind = draw(st.sampled_from(kinds))
    group = 1
    if kind == "depthwise":
        c = x[1] if x else draw(st.integers(1, 12))
        group, m = c, c * draw(st.sampled_from([1, 1, 2]))
    elif kind == "grouped":
        group = draw(st.sampled_from([g for g in (2, 3) if x[1] % g == 0])) if x else draw(st.integers(2, 3))
        # (a third of first stages take 12 inputs a group, a quarter 16 outputs: RegNetX's
        # group width, one AVX-512 vector, its long group tiles)
        if x:
            c = x[1]
        else:
            per = draw(st.integers(1, 3))
            c = group * (12 if per == 3 else per)
        per = draw(st.integers(1, 4))
        m = group * (16 if per == 4 else per)
    elif mode == "big" and not x:  # tiles x (c + m) outgrow winograd's chunk
        c, m = draw(st.integers(32, 48)), draw(st.integers(32, 48))
    elif mode == "narrow" and not x:
        c, m = draw(st.integers(40, 80)), draw(st.integers(40, 80))
    else:
        c, m = (x[1] if x else draw(st.integers(1, 9))), draw(st.integers(1, 19))
    if x:
        sizes = list(x[2:])
    elif image:
        sizes = [draw(st.integers(4, 16)) for _ in range(spatial)]
    else:
        sizes = _sizes(draw, spatial, mode)
    if kind == "pointwise":
        kernel, dilations, pads = [1] * spatial, [1] * spatial, [0] * 2 * spatial
        strides = [draw(st.sampled_from([1, 1, 1, 2])) for _ in range(spatial)]  # (gemm1x1: 1)
    else:
        kernel = [draw(st.integers(1, 5)) for _ in range(spatial)]
        strides = [draw(st.integers(1, 3)) for _ in range(spatial)]
        dilations = [draw(st.sampled_from([1, 1, 1, 2])) for _ in range(spatial)]
        pads = [draw(st.integers(0, 2)) for _ in range(2 * spatial)]
        if mode == "wide":  # a stride-2 or -4 row whose column phases are read: split by shuffles
            # (stride 4 for a kernel 5 wide, which reads all four phases: no draw of its own,
            # so that the other draws of a seed stay as they were)
            strides[-1] = 4 if kernel[-1] == 5 else 2
            kernel[-1], dilations[-1] = max(kernel[-1], 2), 1
        elif spatial == 2 and (mode == "big" or draw(st.sampled_from([False, False, True]))):  # the common 3x3
            kernel, strides, dilations = [3, 3], [1, 1], [1, 1]
    for d in range(spatial):  # every window must fit the padded input
        room = sizes[d] + pads[d] + pads[d + spatial]
        if x and dilations[d] * (kernel[d] - 1) + 1 > room:
            dilations[d], kernel[d] = 1, min(kernel[d], room)
        span = dilations[d] * (kernel[d] - 1) + 1
        sizes[d] = max(sizes[d], span - pads[d] - pads[d + spatial])
    attrs = {"kernel_shape": kernel, "strides": strides, "dilations": dilations, "pads": pads,
             "group": group}
    anchor = {"op": "Conv", "x": [n, c] + sizes, "w": [m, c // group] + kernel, "attrs": attrs,
              "bias": draw(st.booleans()), "batchnorm": draw(st.sampled_from([False, False, True])),
              "weight_input": draw(st.sampled_from([False] * 9 + [True]))}
    if kind == "pointwise" and strides == [1] * spatial and draw(st.booleans()):
        # a squeeze-excitation's scale before it: x * Sigmoid(GlobalAveragePool(x)), the
        # scale on either side (passes/fuse_channel_scale.py)
        anchor["se"] = {"scale_first": draw(st.booleans())}
    return anchor


@st.composite
def gemm_anchor(draw, x=None):
    trans_a = draw(st.booleans())
    if x:
        m, k = (x[1], x[0]) if trans_a else (x[0], x[1])
    else:
        m, k = draw(st.integers(1, 17)), draw(st.integers(1, 40))
    n, trans_b = draw(st.integers(1, 37)), draw(st.booleans())
    bias = draw(st.sampled_from([None, [n], [1, n], [m, n], [m, 1], []]))
    return {"op": "Gemm", "x": [k, m] if trans_a else [m, k], "w": [n, k] if trans_b else [k, n],
            "attrs": {"transA": int(trans_a), "transB": int(trans_b),
                      "alpha": draw(st.sampled_from([1.0, 1.0, 0.5])),
                      "beta": draw(st.sampled_from([1.0, 1.0, 2.0]))},
            "bias": bias, "weight_input": draw(st.sampled_from([False] * 5 + [True]))}


@st.composite
def matmul_anchor(draw, x=None):
    if x:
        batch, (m, k) = list(x[:-2]), x[-2:]
    else:
        batch = draw(st.sampled_from([[], [], [2], [3], [2, 2]]))
        m, k = draw(st.integers(1, 17)), draw(st.integers(1, 40))
    n = draw(st.integers(1, 37))
    w_batch = draw(st.sampled_from([[], batch[-1:], batch])) if batch else []
    return {"op": "MatMul", "x": batch + [m, k], "w": w_batch + [k, n], "attrs": {},
            "weight_input": draw(st.sampled_from([False] * 3 + [True]))}


@st.composite
def pool_anchor(draw, x=None, mode="small"):
    """A pooling (max, average, Lp or global), 1-D or 2-D; windows with strides, dilations,
    pads smaller than the window and ceil_mode, on rows up to 70 wide (``mode`` "wide":
    several vectors a row)."""
    op = draw(st.sampled_from(["MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool"]))
    n, c = (x[0], x[1]) if x else (draw(st.integers(1, 2)), draw(st.integers(1, 11)))
    if x:
        sizes = list(x[2:])
    else:
        spatial = draw(st.sampled_from([2, 2, 2, 1]))
        sizes = _sizes(draw, spatial, mode) if mode == "wide" else [draw(st.integers(1, 14)) for _ in range(spatial)]
    spatial = len(sizes)
    attrs = {}
    if op in ("MaxPool", "AveragePool", "LpPool"):
        kernel = [draw(st.integers(1, 4)) for _ in range(spatial)]
        # (onnxcc refuses an AveragePool's dilations: only MaxPool's and LpPool's are drawn)
        dilations = [draw(st.sampled_from([1, 1, 1, 2])) if op != "AveragePool" else 1 for _ in range(spatial)]
        if x:
            kernel = [min(k, size) for k, size in zip(kernel, sizes)]
            dilations = [dil if dil * (k - 1) < size else 1 for dil, k, size in zip(dilations, kernel, sizes)]
        pads = [draw(st.integers(0, k - 1)) for k in kernel * 2]  # a pad smaller than the window
        attrs = {"kernel_shape": kernel, "strides": [draw(st.integers(1, 3)) for _ in range(spatial)],
                 "pads": pads}
        if dilations != [1] * spatial:
            attrs["dilations"] = dilations
        if op == "AveragePool":
            attrs["count_include_pad"] = int(draw(st.booleans()))
        if op == "LpPool":
            attrs["p"] = draw(st.sampled_from([2, 2, 1, 3]))
        for d in range(spatial):
            sizes[d] = max(sizes[d], dilations[d] * (kernel[d] - 1) + 1 - pads[d] - pads[d + spatial])
        if draw(st.sampled_from([False, False, True])) and _ceil_windows_start_inside(sizes, attrs):
            attrs["ceil_mode"] = 1
    return {"op": op, "x": [n, c] + sizes, "attrs": attrs}


def _pool_size(size, d, a, ceil=None):
    """Output size of a pooling along dimension ``d`` (ONNX's formula, ceil_mode or not)."""
    spatial = len(a["kernel_shape"])
    span = a.get("dilations", [1] * spatial)[d] * (a["kernel_shape"][d] - 1) + 1
    room = size + a["pads"][d] + a["pads"][d + spatial] - span
    ceil = a.get("ceil_mode", 0) if ceil is None else ceil
    return (-(-room // a["strides"][d]) if ceil else room // a["strides"][d]) + 1


def _ceil_windows_start_inside(sizes, a):
    """ceil_mode's last window starts inside the input or its leading pad. One that would
    start in the trailing pad is dropped by onnxruntime (and onnxcc's ceil_pools) but
    kept by onnx's shape inference, onnxruntime's own included: an op after it whose shape
    depends on that count (a MatMul, a broadcast operand) is a model onnxruntime cannot
    load. Left out here; tests/test_pool_softmax_vector.py crosses it."""
    spatial = len(sizes)
    return all((_pool_size(sizes[d], d, a, ceil=1) - 1) * a["strides"][d] < sizes[d] + a["pads"][d]
               for d in range(spatial))


#: the recurrent cells and their gates
CELLS = {"RNN": 1, "GRU": 3, "LSTM": 4}
#: activations onnxruntime runs in a recurrent cell, and the alpha (beta) they take
RECURRENT_ACTIVATIONS = {"Sigmoid": [], "Tanh": [], "Relu": [], "Softsign": [], "Softplus": [],
                         "HardSigmoid": [0.2, 0.5], "Affine": [0.5, 0.1], "LeakyRelu": [0.1],
                         "ThresholdedRelu": [0.2], "ScaledTanh": [0.9, 1.2], "Elu": [0.5]}


@st.composite
def recurrent_anchor(draw, x=None, mode="small"):
    """An RNN, GRU or LSTM in layout 0 (onnxruntime runs no other; the node cases of
    tests/test_recurrent.py cross layout 1) with every optional input and attribute drawn:
    directions, clip, activations with or without their alpha and beta, sequence lengths
    (0 included), initial states, peepholes; its output Y, Y_h or Y_c. ``x``: a later
    stage's [seq, batch, features]; ``mode`` "big": a sequence long enough that the blocked
    tactic projects it in chunks even with a cache."""
    op = draw(st.sampled_from(sorted(CELLS)))
    if x:
        seq, batch, features = x
    elif mode == "big":  # seq x gates x hidden outgrow the chunk (half of 16 level-1s)
        seq = draw(st.integers(650, 800) if op == "RNN" else st.integers(300, 400))
        batch, features = 1, draw(st.integers(8, 24))
    else:
        seq, batch, features = draw(st.integers(1, 12)), draw(st.integers(1, 3)), draw(st.integers(1, 19))
    hidden = draw(st.integers(100, 128) if mode == "big" and not x else st.integers(1, 20))
    direction = draw(st.sampled_from(["forward", "reverse", "bidirectional"]))
    attrs = {"hidden_size": hidden, "direction": direction}
    if draw(st.booleans()):
        attrs["clip"] = draw(st.sampled_from([0.5, 1.0, 3.0]))
    if op == "GRU":
        attrs["linear_before_reset"] = int(draw(st.booleans()))
    if op == "LSTM" and draw(st.sampled_from([False, False, True])):
        attrs["input_forget"] = 1
    if draw(st.sampled_from([False, False, True])):
        count = {"RNN": 1, "GRU": 2, "LSTM": 3}[op] * (2 if direction == "bidirectional" else 1)
        names = [draw(st.sampled_from(sorted(RECURRENT_ACTIVATIONS))) for _ in range(count)]
        attrs["activations"] = names
        # the parameters given, else each function's default (onnxcc refuses the defaults
        # onnxruntime and the specification disagree on: recurrent.UNSETTLED_DEFAULTS)
        if draw(st.booleans()) or set(names) & {"Affine", "ScaledTanh", "ThresholdedRelu"}:
            alphas = [RECURRENT_ACTIVATIONS[n][0] for n in names if RECURRENT_ACTIVATIONS[n]]
            betas = [RECURRENT_ACTIVATIONS[n][1] for n in names if len(RECURRENT_ACTIVATIONS[n]) > 1]
            attrs.update({k: v for k, v in (("activation_alpha", alphas), ("activation_beta", betas)) if v})
    lens = None
    if draw(st.booleans()):
        lens = [draw(st.integers(0, seq)) for _ in range(batch)]
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    return {"op": op, "x": [seq, batch, features], "attrs": attrs, "bias": draw(st.booleans()),
            "lens": lens, "initial": draw(st.sampled_from(["none", "const", "input"])),
            "peepholes": op == "LSTM" and draw(st.booleans()), "output": draw(st.sampled_from(outputs))}


def recurrent_output(anchor):
    """Y's shape [seq, directions, batch, hidden], or Y_h's and Y_c's [directions, batch, hidden]."""
    seq, batch, _ = anchor["x"]
    a = anchor["attrs"]
    state = [2 if a["direction"] == "bidirectional" else 1, batch, a["hidden_size"]]
    return [seq] + state if anchor["output"] == "Y" else state


@st.composite
def binary_anchor(draw, x=None):
    shape = list(x) if x else draw(st.lists(st.integers(1, 13), min_size=1, max_size=4))
    other = draw(broadcast_shape(shape))
    return {"op": draw(st.sampled_from(["Add", "Sub", "Mul"])), "x": shape, "other": other,
            "attrs": {}}


#: (epsilon, None or the decomposition's (square, gamma, beta)) of a LayerNormalization anchor
LAYER_NORMS = [(1e-5, None), (1e-3, None), (1e-5, ("Pow", "const", True)), (1e-3, ("Mul", "const", True)),
               (1e-5, ("Mul", "input", True)), (1e-3, ("Pow", None, False)),
               (1e-5, ("Mul", "const", False)), (1e-3, ("Mul", None, True))]


@st.composite
def data_anchor(draw, x=None):
    """An op that moves, normalizes or reduces data rather than computing per element:
    Softmax, Transpose, Reduce*, Flatten, Concat, Slice, Pad, LayerNormalization."""
    x = list(x) if x else draw(st.lists(st.integers(1, 11), min_size=1, max_size=4))
    rank = len(x)
    axis = draw(st.integers(-rank, rank - 1))
    op = draw(st.sampled_from(["Softmax", "Transpose", "ReduceMean", "ReduceSum", "ReduceMax",
                               "Flatten", "Concat", "Slice", "Pad", "LayerNormalization"]))
    attrs = {}
    if op == "Softmax":
        attrs = {"axis": axis}
    elif op == "Transpose":
        attrs = {"perm": draw(st.permutations(range(rank)))}
    elif op.startswith("Reduce"):
        axes = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank)))
        keep = draw(st.booleans()) or len(axes) == rank
        attrs = {"axes": axes, "keepdims": int(keep)}
    elif op == "Flatten":
        attrs = {"axis": draw(st.integers(0, rank))}
    elif op == "Concat":
        attrs = {"axis": axis, "extra": draw(st.integers(1, 5)),
                 "source": draw(st.sampled_from(["const", "input"]))}
    elif op == "Slice":
        axes = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank)))
        starts, ends, steps = [], [], []
        for a in axes:
            step = draw(st.sampled_from([1, 1, 2, -1]))
            lo = draw(st.integers(0, x[a] - 1))
            hi = draw(st.integers(lo + 1, x[a]))
            starts.append(hi - 1 if step < 0 else lo)
            ends.append(lo - 1 if step < 0 and lo > 0 else (-x[a] - 1 if step < 0 else hi))
            steps.append(step)
        attrs = {"axes": axes, "starts": starts, "ends": ends, "steps": steps}
    elif op == "Pad":
        mode = draw(st.sampled_from(["constant", "reflect", "edge"]))
        limit = [d - 1 if mode == "reflect" else 2 for d in x]
        attrs = {"mode": mode, "pads": [draw(st.integers(0, min(2, lim))) for lim in limit * 2],
                 "value": draw(st.sampled_from([0.0, 0.5]))}
    elif op == "LayerNormalization":
        # the node, or its decomposition as exporters below opset 17 write it (ReduceMean,
        # Sub, square, ReduceMean, + eps, Sqrt, Div, * gamma, + beta: passes/
        # fuse_layer_norm.py), gamma a constant, an input (which stays a Mul) or none, beta
        # or none: one draw, as the node alone took (the draws of other graphs unchanged)
        epsilon, decomposed = draw(st.sampled_from(LAYER_NORMS))
        attrs = {"axis": axis, "epsilon": epsilon}
        if decomposed:
            attrs["decomposed"] = dict(zip(("square", "gamma", "beta"), decomposed))
    return {"op": op, "x": x, "attrs": attrs}


@st.composite
def broadcast_shape(draw, shape):
    """A shape that broadcasts to ``shape``: a suffix with some dimensions set to 1."""
    keep = draw(st.integers(0, len(shape)))
    suffix = shape[len(shape) - keep:]
    return [d if draw(st.booleans()) else 1 for d in suffix]


@st.composite
def chain(draw, shape, channel_axis):
    """Elementwise steps after the anchor, each [op, attrs]; binary steps name an operand
    shape (broadcast to ``shape``), whether it is a constant or a graph input and its side."""
    steps = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["safe", "safe", "guarded", "binary"]))
        if kind == "safe":
            op = draw(st.sampled_from(sorted(SAFE_UNARY)))
            steps.append([op, draw(SAFE_UNARY[op])])
        elif kind == "guarded":
            op = draw(st.sampled_from(sorted(GUARDED_UNARY)))
            steps += [list(s) for s in GUARDED_UNARY[op]] + [[op, {}]]
        else:
            op = draw(st.sampled_from(BINARY))
            per_channel = [1] * len(shape)
            if channel_axis is not None:
                per_channel[channel_axis] = shape[channel_axis]
                per_channel = per_channel[channel_axis:]
            operand = draw(st.one_of(st.just(list(shape)), st.just([]), st.just(per_channel),
                                     broadcast_shape(shape)))
            source = "const" if op == "Div" else draw(st.sampled_from(["const", "const", "input"]))
            steps.append([op, {"shape": operand, "source": source,
                               "value_first": op == "Div" or draw(st.booleans())}])
    return steps


#: a later stage is drawn only while the tensor between stages stays this small
MAX_ELEMENTS = 20000


def stage_anchor(x=None, mode="small"):
    """The anchors that can take a tensor of shape ``x`` (None: the first stage's, any, of
    size ``mode``)."""
    if x is None and mode == "wide":
        return st.one_of(conv_anchor(mode=mode), pool_anchor(mode=mode))
    if x is None and mode == "big":
        return st.one_of(conv_anchor(mode=mode), recurrent_anchor(mode=mode))
    if x is None and mode == "narrow":
        return conv_anchor(mode=mode)
    if x is None:
        return st.one_of(conv_anchor(), gemm_anchor(), matmul_anchor(), pool_anchor(),
                         binary_anchor(), data_anchor(), st.just({"op": None}), recurrent_anchor())
    choices = [binary_anchor(x), data_anchor(x)]
    if len(x) == 3:
        choices.append(recurrent_anchor(x))
    if len(x) in (3, 4):
        choices += [conv_anchor(x), pool_anchor(x)]
    if len(x) == 2:
        choices.append(gemm_anchor(x))
    if len(x) >= 2:
        choices.append(matmul_anchor(x))
    return st.one_of(choices)


@st.composite
def specs(draw, tactics=True, stages=3, int8=False, images=False, big=False):
    """A graph of up to ``stages`` stages, each an anchor and its elementwise chain; every
    later stage ("then") reads the stage before it. A quarter are quantized (``int8``:
    all of them). ``images``: the first anchor a 2-D convolution of one image; ``big``:
    some first stages of the "big" size (``SIZES``: for native targets)."""
    anchor = draw(conv_anchor(image=True) if images else stage_anchor(mode=draw(size_mode(big))))
    if anchor["op"] is None:
        anchor["x"] = draw(st.lists(st.integers(1, 21), min_size=1, max_size=4))
    shape, channel_axis = anchor_output(anchor)
    spec = {"anchor": anchor, "chain": draw(chain(shape, channel_axis)),
            "seed": draw(st.integers(0, 2**31 - 1))}
    then = []
    for _ in range(draw(st.integers(0, stages - 1))):
        if not 0 < int(np.prod(shape)) <= MAX_ELEMENTS:
            break
        following = draw(stage_anchor(shape))
        shape, channel_axis = anchor_output(following)
        then.append({"anchor": following, "chain": draw(chain(shape, channel_axis))})
    if then:
        spec["then"] = then
    if int8 or draw(st.integers(0, 3)) == 0:  # a quarter of the graphs run int8
        spec["quant"] = {"activations": draw(st.sampled_from(["uint8", "int8"])),
                         "per_channel": draw(st.booleans())}
    if tactics:
        # the anchors' tactics, and the chains' when they are not fused away; a forced op
        # type that no node keeps makes the build refuse, which the fuzzer counts apart
        spec["fuse"] = draw(st.booleans())
        everything = [spec] + then
        anchors = [stage["anchor"] for stage in everything]
        ops = {a["op"] for a in anchors}
        if not spec["fuse"]:
            ops |= {op for stage in everything for op, _ in stage["chain"]}
        spec["tactic"] = {op: draw(st.sampled_from(tactics_for(anchors, op)))
                          for op in sorted(ops & set(TACTICS))}
        if "quant" in spec and "Conv" in ops:  # quantized, a Conv is a QLinearConv
            spec["tactic"]["QLinearConv"] = draw(st.sampled_from(tactics_for(anchors, "QLinearConv")))
        if "quant" in spec and ops & {"Gemm", "MatMul"}:  # and a Gemm or MatMul a QGemm
            spec["tactic"]["QGemm"] = draw(st.sampled_from(TACTICS["QGemm"]))
    return spec


def tactics_for(anchors, op):
    """The tactics worth forcing on ``op``: a convolution's that the structure of one of
    the graph's convolutions allows."""
    if op in CELLS:  # the reference kernels are built by opt=size
        return ["blocked"]
    convs = [a for a in anchors if a["op"] == "Conv"]
    if op not in ("Conv", "QLinearConv") or not convs:
        return TACTICS[op]

    def allowed(tactic, conv):
        """By the compiler's own rules of the convolution's structure (ops/common/spatial.py,
        ops/common/winograd.py), on any SIMD CPU."""
        g = _conv_geometry(conv)
        if tactic in ("depthwise", "depthwise_shift", "depthwise_nchwc", "depthwise_q15"):
            return is_depthwise(g)
        if tactic == "gemm_q15":
            return g["group"] == 1
        if tactic == "winograd":
            return winograd.applies(g, SIMD_CPU)
        return tactic != "gemm1x1" or is_unit_window(g)
    if op == "Conv" and any(allowed("winograd", conv) and np.prod(conv["x"][2:]) >= 400 for conv in convs):
        return ["winograd"]  # a "big" image: winograd's several tiles and chunks
    if op == "Conv" and any(allowed("depthwise", conv) and conv["x"][-1] >= 17 for conv in convs):
        return ["depthwise"]  # "wide" rows: the depthwise kernel's shuffle fill
    # (depthwise_shift is not forced: a longer list would change every later draw and
    # the seeded sample's reach of the other branches; the cost model picks it on the
    # sample's rows of several vectors, tests/test_fuzz_graphs.py REACHED)
    return [t for t in TACTICS[op] if t != "depthwise_shift" and any(allowed(t, conv) for conv in convs)]


def _conv_geometry(conv):
    """The compiler's geometry (ops/spatial.window_2d) of a Conv anchor."""
    node = types.SimpleNamespace(name="conv", op="Conv", attrs=conv["attrs"])
    g = window_2d(node, conv["x"], anchor_output(conv)[0], conv["attrs"]["kernel_shape"])
    return dict(g, group=conv["attrs"]["group"], m=conv["w"][0])


def anchor_output(anchor):
    """(the anchor's output shape, its channel axis or None)."""
    op, x, a = anchor["op"], anchor.get("x"), anchor.get("attrs", {})
    if op == "Conv":
        spatial = len(x) - 2
        out = [x[0], anchor["w"][0]]
        for d in range(spatial):
            out.append(window_count(x[2 + d] + a["pads"][d] + a["pads"][d + spatial], a["kernel_shape"][d],
                                    a["strides"][d], a["dilations"][d]))
        return out, 1
    if op in ("MaxPool", "AveragePool", "LpPool"):
        return [x[0], x[1]] + [_pool_size(x[2 + d], d, a) for d in range(len(x) - 2)], 1
    if op in CELLS:
        return recurrent_output(anchor), None
    if op in ("GlobalAveragePool", "GlobalMaxPool"):
        return x[:2] + [1] * (len(x) - 2), 1
    if op == "Gemm":
        m = x[1] if a["transA"] else x[0]
        n = anchor["w"][0] if a["transB"] else anchor["w"][1]
        return [m, n], 1
    if op == "MatMul":
        w = anchor["w"]
        batch = list(np.broadcast_shapes(tuple(x[:-2]), tuple(w[:-2])))
        return batch + [x[-2], w[-1]], len(batch) + 1
    if op in ("Add", "Sub", "Mul"):
        return list(np.broadcast_shapes(tuple(x), tuple(anchor["other"]))), None
    return data_output(op, list(x), a), None


def output_shape(spec):
    """The shape of the graph's output y (an elementwise chain keeps its stage's shape)."""
    return anchor_output((spec.get("then") or [spec])[-1]["anchor"])[0]


def data_output(op, x, a):
    """The output shape of a ``data_anchor`` op (the identity for an op of none)."""
    rank = len(x)
    if op == "Transpose":
        return [x[p] for p in a["perm"]]
    if op and op.startswith("Reduce"):
        if a["keepdims"]:
            return [1 if d in a["axes"] else n for d, n in enumerate(x)]
        return [n for d, n in enumerate(x) if d not in a["axes"]]
    if op == "Flatten":
        return [int(np.prod(x[:a["axis"]])), int(np.prod(x[a["axis"]:]))]
    if op == "Concat":
        return [n + a["extra"] if d == a["axis"] % rank else n for d, n in enumerate(x)]
    if op == "Slice":
        out = list(x)
        for axis, start, end, step in zip(a["axes"], a["starts"], a["ends"], a["steps"]):
            out[axis] = len(range(*slice(start, end, step).indices(x[axis])))
        return out
    if op == "Pad":
        return [n + a["pads"][d] + a["pads"][d + rank] for d, n in enumerate(x)]
    return x  # Softmax, LayerNormalization, no op


def spec_name(spec):
    """A short C-safe name that identifies the spec."""
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()
    return f"g{digest[:10]}"


class _Graph:
    """The nodes, inputs and constants of a model being built; names are prefixed per
    stage (none for the first), so a stage's tensors never clash with another's."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.inputs, self.inits, self.nodes = [], [], []

    def tensor_input(self, name, shape):
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        return name

    def constant(self, name, array, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype), name))
        return name

    def ints(self, name, values):
        return self.constant(name, values, np.int64)

    def weights(self, name, shape, fan_in, as_input=False):
        if as_input:
            return self.tensor_input(name, shape)
        return self.constant(name, self.rng.uniform(-1, 1, shape) / np.sqrt(max(fan_in, 1)))

    def node(self, op, inputs, output, name, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [output], name=name, **attrs))
        return output


def _anchor(g, anchor, current, p):
    """Add the stage's anchor op reading ``current``; returns its output's name."""
    op, rng = anchor["op"], g.rng
    if op == "Conv":
        w = anchor["w"]
        if "se" in anchor:
            pool = g.node("GlobalAveragePool", [current], f"{p}se_pool", f"{p}se_pool")
            scale = g.node("Sigmoid", [pool], f"{p}se_sigmoid", f"{p}se_sigmoid")
            pair = [scale, current] if anchor["se"]["scale_first"] else [current, scale]
            current = g.node("Mul", pair, f"{p}se_scale", f"{p}se_scale")
        args = [current, g.weights(f"{p}w", w, int(np.prod(w[1:])), anchor["weight_input"])]
        if anchor["bias"]:
            args.append(g.constant(f"{p}b", rng.uniform(-0.5, 0.5, [w[0]])))
        current = g.node("Conv", args, f"{p}conv", f"{p}conv", **anchor["attrs"])
        if anchor["batchnorm"]:
            m = w[0]
            bn = [g.constant(f"{p}bn_scale", rng.uniform(0.5, 1.5, [m])),
                  g.constant(f"{p}bn_bias", rng.uniform(-0.5, 0.5, [m])),
                  g.constant(f"{p}bn_mean", rng.uniform(-0.5, 0.5, [m])),
                  g.constant(f"{p}bn_var", rng.uniform(0.5, 1.5, [m]))]
            current = g.node("BatchNormalization", [current] + bn, f"{p}bn", f"{p}bn")
        return current
    if op in ("Gemm", "MatMul"):
        k = anchor["x"][0] if anchor["attrs"].get("transA") else anchor["x"][-1]
        args = [current, g.weights(f"{p}w", anchor["w"], k, anchor["weight_input"])]
        if op == "Gemm" and anchor["bias"] is not None:
            args.append(g.constant(f"{p}c", rng.uniform(-0.5, 0.5, anchor["bias"])))
        return g.node(op, args, f"{p}mm", f"{p}mm", **anchor["attrs"])
    if op in ("MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool"):
        return g.node(op, [current], f"{p}pool", f"{p}pool", **anchor["attrs"])
    if op in CELLS:
        return _recurrent(g, anchor, current, p)
    if op in ("Add", "Sub", "Mul"):
        other = g.tensor_input(f"{p}x2", anchor["other"])
        return g.node(op, [current, other], f"{p}binary", f"{p}binary")
    if op is None:
        return current
    return _data_anchor(g, anchor, current, p)


def _recurrent(g, anchor, current, p):
    """An RNN, GRU or LSTM node reading ``current``; returns the output the spec names."""
    op, a, rng = anchor["op"], anchor["attrs"], g.rng
    seq, batch, features = anchor["x"]
    hidden, gates = a["hidden_size"], CELLS[op]
    dirs = 2 if a["direction"] == "bidirectional" else 1
    args = [current, g.weights(f"{p}W", [dirs, gates * hidden, features], features),
            g.weights(f"{p}R", [dirs, gates * hidden, hidden], hidden)]
    optional = [("B", anchor["bias"], lambda: g.constant(f"{p}B", rng.uniform(-0.5, 0.5, [dirs, 2 * gates * hidden]))),
                ("lens", anchor["lens"] is not None, lambda: g.constant(f"{p}lens", anchor["lens"], np.int32))]
    for state in ("h0", "c0") if op == "LSTM" else ("h0",):
        shape = [dirs, batch, hidden]
        make = ((lambda name=f"{p}{state}", shape=shape: g.tensor_input(name, shape))
                if anchor["initial"] == "input"
                else (lambda name=f"{p}{state}", shape=shape: g.constant(name, rng.uniform(-1, 1, shape))))
        optional.append((state, anchor["initial"] != "none", make))
    if op == "LSTM":
        optional.append(("P", anchor["peepholes"], lambda: g.constant(f"{p}P", rng.uniform(-0.5, 0.5, [dirs, 3 * hidden]))))
    for _, present, make in optional:
        args.append(make() if present else "")
    while args[-1] == "":
        args.pop()
    out = f"{p}rnn"
    outputs = [out if name == anchor["output"] else "" for name in ("Y", "Y_h", "Y_c")[:2 + (op == "LSTM")]]
    g.nodes.append(helper.make_node(op, args, outputs, name=out, **a))
    return out


def _data_anchor(g, anchor, current, p):
    op, a, x = anchor["op"], anchor["attrs"], anchor["x"]
    out = f"{p}data"
    if op in ("Softmax", "Transpose", "Flatten"):
        return g.node(op, [current], out, out, **a)
    if op.startswith("Reduce"):
        axes = g.ints(f"{p}axes", a["axes"])
        return g.node(op, [current, axes], out, out, keepdims=a["keepdims"])
    if op == "Concat":
        shape = data_output("Concat", x, a)
        shape[a["axis"] % len(x)] = a["extra"]
        other = (g.tensor_input(f"{p}cat", shape) if a["source"] == "input"
                 else g.constant(f"{p}cat", g.rng.uniform(-1, 1, shape)))
        return g.node(op, [current, other], out, out, axis=a["axis"])
    if op == "Slice":
        args = [g.ints(f"{p}{k}", a[k]) for k in ("starts", "ends", "axes", "steps")]
        return g.node(op, [current] + args, out, out)
    if op == "Pad":
        args = [current, g.ints(f"{p}pads", a["pads"])]
        if a["mode"] == "constant":
            args.append(g.constant(f"{p}value", a["value"]))
        return g.node(op, args, out, out, mode=a["mode"])
    if op == "LayerNormalization" and "decomposed" in a:
        return _decomposed_layer_norm(g, a, x, current, p)
    if op == "LayerNormalization":
        shape = x[a["axis"]:]
        args = [current, g.constant(f"{p}gamma", g.rng.uniform(0.5, 1.5, shape)),
                g.constant(f"{p}beta", g.rng.uniform(-0.5, 0.5, shape))]
        return g.node(op, args, out, out, axis=a["axis"], epsilon=a["epsilon"])
    raise ValueError(f"no such anchor op {op}")


def _decomposed_layer_norm(g, a, x, x_name, p):
    """LayerNormalization over the axes from a["axis"] on, in the nodes exporters below
    opset 17 write; returns the last one's output."""
    d = a["decomposed"]
    shape, axes = x[a["axis"]:], g.ints(f"{p}ln_axes", list(range(a["axis"] % len(x), len(x))))
    mean = g.node("ReduceMean", [x_name, axes], f"{p}ln_mean", f"{p}ln_mean")
    diff = g.node("Sub", [x_name, mean], f"{p}ln_diff", f"{p}ln_diff")
    square = [diff, g.constant(f"{p}ln_two", 2.0)] if d["square"] == "Pow" else [diff, diff]
    square = g.node(d["square"], square, f"{p}ln_square", f"{p}ln_square")
    var = g.node("ReduceMean", [square, axes], f"{p}ln_var", f"{p}ln_var")
    var = g.node("Add", [var, g.constant(f"{p}ln_eps", a["epsilon"])], f"{p}ln_var_eps", f"{p}ln_var_eps")
    std = g.node("Sqrt", [var], f"{p}ln_std", f"{p}ln_std")
    out = g.node("Div", [diff, std], f"{p}ln_div", f"{p}ln_div")
    if d["gamma"]:
        gamma = (g.tensor_input(f"{p}gamma", shape) if d["gamma"] == "input"
                 else g.constant(f"{p}gamma", g.rng.uniform(0.5, 1.5, shape)))
        out = g.node("Mul", [out, gamma], f"{p}ln_gamma", f"{p}ln_gamma")
    if d["beta"]:
        out = g.node("Add", [out, g.constant(f"{p}beta", g.rng.uniform(-0.5, 0.5, shape))],
                     f"{p}data", f"{p}data")
    return out


def _chain(g, steps, current, p):
    """Add the stage's elementwise steps after ``current``; returns the last output."""
    rng = g.rng
    for k, (step, attrs) in enumerate(steps):
        out, name = f"{p}t{k}", f"{p}s{k}"
        if step in BINARY and "const" in attrs:
            operand = g.constant(f"{p}k{k}", attrs["const"])
            current = g.node(step, [current, operand], out, name)
        elif step in BINARY:
            shape = attrs["shape"]
            if attrs["source"] == "input":
                operand = g.tensor_input(f"{p}e{k}", shape)
            elif step == "Div":  # |divisor| in [0.5, 2]
                operand = g.constant(f"{p}k{k}", rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape))
            else:
                operand = g.constant(f"{p}k{k}", rng.uniform(-1, 1, shape))
            pair = [current, operand] if attrs["value_first"] else [operand, current]
            current = g.node(step, pair, out, name)
        elif step == "Clip":  # its bounds are inputs since opset 11
            bounds = [g.constant(f"{p}k{k}_{b}", attrs[b]) if b in attrs else "" for b in ("min", "max")]
            current = g.node(step, [current] + bounds, out, name)
        else:
            current = g.node(step, [current], out, name, **attrs)
    return current


def build_model(spec):
    """The ONNX model of ``spec``: graph inputs x (and any input operands), one output y;
    with ``quant``, quantized by onnxruntime's static quantizer (``quantize``)."""
    model = build_float_model(spec)
    if spec.get("quant"):
        try:
            return quantize(model, spec["quant"], spec["seed"])
        except Exception:  # noqa: BLE001 (the quantizer's own failures: e.g. a scalar Gemm bias)
            pass  # a graph it cannot quantize stays float, as it would for a user
    return model


def quantize(model, quant, seed, samples=4):
    """``model`` in QDQ form as users make it: onnxruntime's pre-processing and quantize_static with int8
    weights and ``quant["activations"]`` activations, calibrated on seeded inputs from
    verify's distribution (uniform in [-1, 1])."""
    import tempfile

    import onnxruntime as ort
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                          QuantType, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    rng = np.random.default_rng(seed)
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
    batches = iter([{k: rng.uniform(-1, 1, v).astype(np.float32) for k, v in shapes.items()}
                    for _ in range(samples)])

    class Inputs(CalibrationDataReader):
        def get_next(self):
            return next(batches, None)

    ort.set_default_logger_severity(3)
    logging.getLogger().setLevel(logging.ERROR)  # the quantizer's advice to pre-process
    with tempfile.TemporaryDirectory() as tmp:
        source, out = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "int8.onnx")
        onnx.save(model, source)
        # the pre-processing onnxruntime asks for (BatchNormalization folded, constants
        # folded); without it, its quantizer writes invalid per-channel BatchNormalizations
        quant_pre_process(source, source, skip_symbolic_shape=True)
        activations = QuantType.QUInt8 if quant["activations"] == "uint8" else QuantType.QInt8
        quantize_static(source, out, Inputs(), quant_format=QuantFormat.QDQ,
                        activation_type=activations, weight_type=QuantType.QInt8,
                        per_channel=quant["per_channel"], calibrate_method=CalibrationMethod.MinMax)
        quantized = onnx.load(out)
    quantized.producer_name, quantized.producer_version = "onnxcc-fuzz", ""
    return quantized


def build_float_model(spec):
    """The float32 ONNX model of ``spec``."""
    g = _Graph(spec["seed"])
    if "network" in spec:
        from .networks import emit  # (networks.py draws with this module's tactics)
        current = emit(g, spec)
    else:
        current = g.tensor_input("x", spec["anchor"]["x"])
        for i, stage in enumerate([spec] + spec.get("then", [])):
            prefix = f"s{i}_" if i else ""
            current = _chain(g, stage["chain"], _anchor(g, stage["anchor"], current, prefix), prefix)
    if not g.nodes:
        current = g.node("Relu", [current], "y", "s0")
    last = g.nodes[-1].output  # (a recurrent node's other outputs are unnamed)
    last[list(last).index(current)] = "y"
    graph = helper.make_graph(g.nodes, spec_name(spec), g.inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="onnxcc-fuzz")
    model.ir_version = 9
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    return model

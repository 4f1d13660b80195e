"""How close each float output of the compiled model must be to the reference.

verify compares element by element: an element passes when

    |got - want| <= atol + rtol * |want|

and an output passes when every element does (an expected inf or NaN must be matched
exactly). The bound never depends on the output's own values (its largest element, its
mean): a scale taken from the output would let a wrong small element hide behind a right
large one. It depends on the graph that computes the output, decided before the run:

* ``rtol`` is float32 rounding of a chain of operations evaluated in another order than
  onnxruntime's (other summation order, FMA contraction, libm instead of MLAS's
  approximations of exp/tanh/erf): RTOL, about 840 float32 ulps.
* ``atol`` covers the elements near zero, where a relative bound means nothing: a sum of K
  products whose result cancels to about zero still carries the rounding of its K terms.
  Rounded in a different order, the difference of two float32 sums of K terms of magnitude
  m is a random walk of about sqrt(K) * eps * m (Higham, *Accuracy and Stability of
  Numerical Algorithms*, 2nd ed., sec. 4.2, statistical bound), so atol grows with
  sqrt(K), K the longest reduction (Conv/Gemm/MatMul inner length, a Reduce* or pool
  window, a Softmax or normalization axis) on any path to the output. Example inputs are
  O(1) (uniform in [-1, 1]), so m is taken as one.
* With ``testdata=``'s output_K.pb files the expected outputs are not onnxruntime's on
  the same inputs but values written into a test's files, some by hand to four
  significant digits (ONNX's ``averagepool_2d_ceil_last_window_starts_on_pad`` expects
  0.1511 for 0.151055..., ``gridsample_bicubic`` -0.1406 for -0.140625): such a reference
  is itself off by up to 5e-4 relative, so rtol is at least TESTDATA_RTOL, the rtol of
  ONNX's own backend-test runner (still per element).
"""

import math

import numpy as np

#: relative bound: float32 rounding of a chain of ops in another order (~840 ulps)
RTOL = 1e-4
#: absolute bound of an output computed without any reduction (elementwise chains only)
ATOL = 1e-5
#: relative bound against expected outputs read from a test's files (ONNX's node tests
#: are checked with rtol 1e-3, atol 1e-7: onnx.backend.test.case.node)
TESTDATA_RTOL = 1e-3

_MATMULS = {"MatMul", "MatMulInteger", "QLinearMatMul", "FusedMatMul"}
_CONVS = {"Conv", "ConvInteger", "QLinearConv"}
#: reductions that sum or multiply (a max or min rounds nothing)
_REDUCES = {"ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum",
            "ReduceLogSumExp", "ReduceProd"}
#: ops that sum along their ``axis``
_AXIS_OPS = {"Softmax", "LogSoftmax", "LayerNormalization", "LpNormalization"}
_POOLS = {"AveragePool", "LpPool"}
_GLOBAL_POOLS = {"GlobalAveragePool", "GlobalLpPool", "InstanceNormalization", "GroupNormalization"}


def _shape(graph, name):
    """The static shape of a tensor; () when it is unknown (K then counts as 1)."""
    info = graph.tensors.get(name)
    shape = tuple(info.shape) if info is not None and info.shape else ()
    return shape if all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape) else ()


def _size(shape):
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def reduction_length(graph, node):
    """K: how many terms one output element of ``node`` sums (1: none)."""
    first = _shape(graph, node.inputs[0]) if node.inputs else ()
    if node.op in _CONVS and len(node.inputs) > 1:
        w = _shape(graph, node.inputs[3] if node.op == "QLinearConv" else node.inputs[1])
        return _size(w[1:]) if w else 1  # [M, C/group, k...]
    if node.op == "ConvTranspose":
        w = _shape(graph, node.inputs[1])  # [C, M/group, k...]: C/group * k... terms at most
        return w[0] // max(1, node.attrs.get("group", 1)) * _size(w[2:]) if w else 1
    if node.op in _MATMULS:
        b = _shape(graph, node.inputs[3] if node.op == "QLinearMatMul" else node.inputs[1])
        return b[-2] if len(b) >= 2 else (b[0] if b else 1)
    if node.op == "Gemm":
        b = _shape(graph, node.inputs[1])
        return (b[1] if node.attrs.get("transB") else b[0]) if len(b) == 2 else 1
    if node.op in _REDUCES:
        return max(1, _size(first) // max(1, _size(_shape(graph, node.outputs[0]))))
    if node.op == "CumSum" and first:
        return max(first)  # (its axis is an input: the longest one bounds it)
    if node.op in _AXIS_OPS and first:
        return first[node.attrs.get("axis", -1) % len(first)]
    if node.op in _POOLS:
        return _size(node.attrs.get("kernel_shape", ()))
    if node.op in _GLOBAL_POOLS and len(first) > 2:
        return _size(first[2:])
    return 1


def longest_reductions(graph):
    """Per graph output: the largest K of any node on a path to it (the nodes are in
    topological order, as ONNX requires)."""
    longest = {}
    for node in graph.nodes:
        k = max([reduction_length(graph, node)] + [longest.get(i, 1) for i in node.inputs if i])
        longest.update((out, k) for out in node.outputs)
    return [longest.get(name, 1) for name in graph.outputs]


def for_outputs(graph, from_files=False):
    """Per graph output: (rtol, atol) of its float comparison; ``from_files``: the expected
    outputs come from a test's files, not from onnxruntime."""
    rtol = max(RTOL, TESTDATA_RTOL) if from_files else RTOL
    return [(rtol, ATOL * math.sqrt(k)) for k in longest_reductions(graph)]

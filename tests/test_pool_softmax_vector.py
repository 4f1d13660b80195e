"""The vector tactics of MaxPool / AveragePool (an output row at a time, ops/pool.py) and
Softmax / LogSoftmax (ops/normalize.py) forced on odd shapes, edges, tails and extreme
inputs, run against onnxruntime on AVX2, NEON (armv7a, qemu) and AVX-512 where the host has it."""

import numpy as np
import pytest
from onnx import helper

from onnxcc.ops import pool
from onnxcc.targets import host_cpu_flags
from test_tactics import save_model, verify

TARGETS = ["x86_64", "armv7a",
           pytest.param("x86_64-avx512", marks=pytest.mark.skipif(
               "avx512f" not in host_cpu_flags(), reason="this host has no AVX-512"))]

P = dict
#: (op, input shape, attributes)
POOLS = [
    ("MaxPool", [1, 3, 1, 1], P(kernel_shape=[1, 1])),
    ("MaxPool", [1, 2, 2, 2], P(kernel_shape=[2, 2], strides=[2, 2])),
    ("MaxPool", [1, 2, 7, 7], P(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", [2, 3, 13, 17], P(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", [1, 3, 13, 17], P(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("MaxPool", [1, 2, 13, 17], P(kernel_shape=[2, 3], strides=[3, 3], pads=[1, 0, 0, 2])),
    ("MaxPool", [1, 2, 13, 17], P(kernel_shape=[3, 2], strides=[1, 1], pads=[2, 1, 2, 1])),
    ("MaxPool", [1, 2, 13, 17], P(kernel_shape=[3, 3], strides=[3, 3], ceil_mode=1)),
    ("MaxPool", [1, 2, 13, 17], P(kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 2, 1, 2])),
    ("MaxPool", [1, 2, 13, 40], P(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                  ceil_mode=1)),
    ("MaxPool", [1, 3, 37], P(kernel_shape=[3], strides=[2], ceil_mode=1)),
    ("MaxPool", [1, 3, 31], P(kernel_shape=[2], strides=[3], pads=[1, 1])),
    ("MaxPool", [1, 4, 50], P(kernel_shape=[3], strides=[1], pads=[1, 1], dilations=[2])),
    ("AveragePool", [1, 2, 1, 1], P(kernel_shape=[1, 1])),
    ("AveragePool", [1, 2, 7, 7], P(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("AveragePool", [1, 2, 13, 17], P(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("AveragePool", [1, 2, 13, 17], P(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                      count_include_pad=1)),
    ("AveragePool", [1, 2, 13, 17], P(kernel_shape=[2, 3], strides=[3, 1], pads=[1, 2, 0, 1],
                                      count_include_pad=1)),
    ("AveragePool", [1, 2, 13, 19], P(kernel_shape=[3, 3], strides=[3, 3], pads=[1, 0, 1, 0],
                                      ceil_mode=1)),
    ("AveragePool", [1, 2, 13, 17], P(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                      ceil_mode=1, count_include_pad=1)),
    ("AveragePool", [1, 3, 29], P(kernel_shape=[3], strides=[2], pads=[1, 1])),
    ("AveragePool", [1, 3, 30], P(kernel_shape=[2], strides=[3], pads=[1, 0],
                                  count_include_pad=1, ceil_mode=1)),
]


def pool_zoo(path):
    nodes, inputs, outputs = [], {}, {}
    for k, (op, shape, attrs) in enumerate(POOLS):
        nodes.append(helper.make_node(op, [f"x{k}"], [f"y{k}"], **attrs))
        inputs[f"x{k}"], outputs[f"y{k}"] = shape, len(shape)
    return save_model(path, nodes, inputs, outputs, {})


@pytest.mark.parametrize("target", TARGETS)
def test_vector_pools_match_onnxruntime(scons, tmp_path, target):
    model = pool_zoo(tmp_path / "pools.onnx")
    verify(scons, model, target, "MaxPool:vector,AveragePool:vector")
    kernels = (scons.build_dir / target / "pools" / "pools_kernels.c").read_text()
    assert "__builtin_shufflevector" in kernels  # the stride-2 deinterleave ran


def test_reference_pools_match_onnxruntime(scons, tmp_path):
    """The same windows (a count_include_pad window past the padded input among them)."""
    verify(scons, pool_zoo(tmp_path / "pools.onnx"), "x86_64",
           "MaxPool:reference,AveragePool:reference")


def test_row_pool_writes_over_its_input_only_where_rows_were_read():
    g = dict(h=8, w=8, oh=4, ow=4, kh=3, kw=3, sh=2, sw=2, dh=1, dw=1, pt=1, pl=1)
    assert pool._rows_overwrite_only_read_input(g)
    same = dict(g, oh=8, ow=8, sh=1, sw=1)  # row oy lands on input row oy, read by oy + 1
    assert not pool._rows_overwrite_only_read_input(same)


NEG_INF = np.float32(-np.inf)
#: (op, input shape, axis, what comes before: None, "large" (x 300) or "mask" (-inf added))
SOFTMAXES = [
    ("Softmax", [3, 1], -1, None), ("Softmax", [3, 7], -1, None), ("Softmax", [2, 8], -1, None),
    ("Softmax", [2, 9], -1, None), ("Softmax", [4, 100], -1, None),
    ("LogSoftmax", [3, 1], -1, None), ("LogSoftmax", [2, 7], -1, None),
    ("LogSoftmax", [2, 9], -1, None), ("LogSoftmax", [4, 100], -1, None),
    ("Softmax", [2, 9, 11], 1, None), ("Softmax", [5, 3], 0, None),
    ("LogSoftmax", [2, 5, 20], 1, None), ("LogSoftmax", [3, 4, 9], 0, None),
    ("Softmax", [2, 9], -1, "large"), ("LogSoftmax", [2, 100], -1, "large"),
    ("Softmax", [2, 3, 19], 1, "large"),
    ("Softmax", [2, 9], -1, "mask"), ("LogSoftmax", [2, 9], -1, "mask"),
    ("Softmax", [3, 9, 17], 1, "mask"), ("LogSoftmax", [3, 9, 17], 1, "mask"),
]


def softmax_zoo(path):
    nodes, inputs, outputs, inits = [], {}, {}, {}
    for k, (op, shape, axis, before) in enumerate(SOFTMAXES):
        src = f"x{k}"
        if before == "large":
            inits[f"big{k}"] = np.float32(300.0)
            nodes.append(helper.make_node("Mul", [src, f"big{k}"], [f"m{k}"]))
            src = f"m{k}"
        elif before == "mask":  # -inf in some places along the axis, never all of them
            mask = np.zeros(shape[axis:] if axis >= 0 else shape[axis:], np.float32)
            mask.reshape(shape[axis], -1)[1::3] = NEG_INF
            inits[f"mask{k}"] = mask
            nodes.append(helper.make_node("Add", [src, f"mask{k}"], [f"m{k}"]))
            src = f"m{k}"
        nodes.append(helper.make_node(op, [src], [f"y{k}"], axis=axis))
        inputs[f"x{k}"], outputs[f"y{k}"] = shape, len(shape)
    return save_model(path, nodes, inputs, outputs, inits)


@pytest.mark.parametrize("target", TARGETS)
def test_vector_softmax_matches_onnxruntime(scons, tmp_path, target):
    model = softmax_zoo(tmp_path / "softmax.onnx")
    verify(scons, model, target, "Softmax:vector,LogSoftmax:vector")
    kernels = (scons.build_dir / target / "softmax" / "softmax_kernels.c").read_text()
    assert "vm_exp_v" in kernels and "vm_log_" in kernels and "expf(" not in kernels


def test_softmax_keeps_the_reference_kernel_at_opt_size_and_on_scalar_cpus(scons, tmp_path):
    model = softmax_zoo(tmp_path / "softmax.onnx")
    for target, opt in (("x86_64", "size"), ("armv7", "speed")):
        r = scons(f"model={model}", f"target={target}", f"opt={opt}", "verify")
        assert r.returncode == 0, r.stdout + r.stderr
        kernels = (scons.build_dir / target / "softmax" / "softmax_kernels.c").read_text()
        assert "vm_exp_v" not in kernels and "expf(" in kernels

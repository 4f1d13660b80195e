"""Vector kernels on tensors (channels, rows, patches) shorter than one vector: no vector
loop is written where it has no iteration (simd.mako's `loop`; `i < 0u` warned under
-Wtype-limits), the vector types declared anyway do not warn, and the results match
onnxruntime. On AVX-512 (16 lanes) and NEON (4: armv7a, aarch64)."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import in_qemu, save_graph, verify_clean
from onnxcc.target import host_cpu_flags

RNG = np.random.default_rng(7)

#: (op, input shape, attributes): each kernel's vector part, empty or partly so
SHORT = [("GlobalMaxPool", [1, 2, 1, 3], {}),  # a channel of 3: no vector at all
         ("GlobalAveragePool", [1, 2, 3, 1], {}),
         ("GlobalAveragePool", [1, 2, 4, 4], {}),  # 16: one vector on AVX-512, none after it
         ("Softmax", [2, 3], dict(axis=-1)),  # a row of 3: its tail vector only
         ("LogSoftmax", [2, 3], dict(axis=-1)),
         ("Softmax", [3, 2], dict(axis=0)),  # 2 columns: none in vectors
         ("LogSoftmax", [2, 3, 2], dict(axis=1))]


def _short_ops(path):
    nodes = [helper.make_node(op, [f"x{k}"], [f"y{k}"], **attrs) for k, (op, _, attrs) in enumerate(SHORT)]
    inputs = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, shape)
              for k, (_, shape, _) in enumerate(SHORT)]
    outputs = [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT,
                                             shape[:2] + [1, 1] if op.startswith("Global") else shape)
               for k, (op, shape, _) in enumerate(SHORT)]
    return _save(path, helper.make_graph(nodes, "short", inputs, outputs))


def _patched_chain(path):
    """A convolution of one 4x4 image, then (unfused) a Sigmoid and an Add of a
    per-channel constant: 48 elements, rows of 16 -- whole vectors -- but in 2x2 patches
    a patch is 3 x 2 x 2 (rows of 4) and in 4x4 patches 3 x 1 x 1 (rows of 1)."""
    def w(name, *shape):
        return numpy_helper.from_array((RNG.standard_normal(shape) * 0.5).astype(np.float32), name)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c"], ["s"]),
             helper.make_node("Add", ["s", "b"], ["a"]),
             helper.make_node("Conv", ["a", "w2"], ["y"], kernel_shape=[1, 1])]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [w("w", 3, 3, 3, 3), w("b", 3, 1, 1), w("w2", 2, 3, 1, 1)])
    return _save(path, graph)


def _save(path, graph):
    return save_graph(path, graph)


TARGETS = ["x86_64-avx512", *in_qemu("armv7a", "aarch64")]


def _skip_without(target):
    if target == "x86_64-avx512" and "avx512f" not in host_cpu_flags():
        pytest.skip("this machine has no AVX-512 to run the x86_64-avx512 code on")


@pytest.mark.parametrize("target", TARGETS)
def test_pools_and_softmax_shorter_than_a_vector(scons, tmp_path, target):
    _skip_without(target)
    model = _short_ops(tmp_path / "shorts.onnx")
    tactic = "GlobalMaxPool:vector,GlobalAveragePool:vector,Softmax:vector,LogSoftmax:vector"
    verify_clean(scons, model, f"target={target}", f"tactic={tactic}")
    kernels = (scons.build_dir / target / "shorts" / "shorts_kernels.c").read_text()
    assert kernels.count("vector_size") >= 2 * len(SHORT)  # every node ran a vector kernel
    assert " < 0u" not in kernels


@pytest.mark.parametrize("target, patches", [("x86_64-avx512", "2x2"),
                                             *in_qemu(("armv7a", "4x4"), ("aarch64", "4x4"))])
def test_unary_and_binary_patches_shorter_than_a_vector(scons, tmp_path, target, patches):
    _skip_without(target)
    model = _patched_chain(tmp_path / "chain.onnx")
    verify_clean(scons, model, f"target={target}", "tactic=Sigmoid:vector,Add:vector", "fuse=0",
                 f"patches={patches}")
    kernels = (scons.build_dir / target / "chain" / "chain_kernels.c").read_text()
    lanes = 16 if target == "x86_64-avx512" else 4
    short = 12 if patches == "2x2" else 3  # a patch's elements
    assert short < lanes and f"{short}u" in kernels
    assert "vector_size" in kernels and " < 0u" not in kernels

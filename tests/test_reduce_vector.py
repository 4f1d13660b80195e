"""ReduceMean / ReduceSum / ReduceMax over contiguous rows in global_pool_vector's vectors
(ops/reduce.py): the last axis of odd lengths (shorter than a vector, tails, several
vectors' blocks of four), the last two, H x W of NCHW with keepdims or not, size-1 axes
-- run against onnxruntime on 16-, 8- and 4-float vectors; and the reductions that are
not rows (a leading or middle axis, int64) still the reference kernel's."""

import json

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conftest import in_qemu, save_graph, verify_clean
from onnxcc.target import host_cpu_flags

F = onnx.TensorProto.FLOAT
AVX512 = pytest.param("x86_64-avx512", marks=pytest.mark.skipif(
    "avx512f" not in host_cpu_flags(), reason="this host has no AVX-512"))

#: (op, x shape, axes, keepdims, vector: whether the rows tactic applies)
CASES = [
    ("ReduceMean", [3, 37], [-1], 1, True),
    ("ReduceMean", [2, 5, 3], [2], 0, True),
    ("ReduceMean", [1, 64, 7, 7], [2, 3], 1, True),
    ("ReduceMean", [2, 9, 5, 11], [-1, -2], 0, True),
    ("ReduceSum", [4, 70], [1], 1, True),
    ("ReduceSum", [2, 3, 4, 17], [2, 3], 1, True),
    ("ReduceMax", [5, 33], [-1], 0, True),
    ("ReduceMax", [1, 6, 9, 9], [2, 3], 1, True),
    ("ReduceMean", [2, 3, 1], [1, 2], 1, True),  # (the size-1 axis merges away)
    ("ReduceSum", [2, 128, 20], [0, 1, 2], 0, True),
    ("ReduceMean", [4, 7, 6], [1], 1, False),
    ("ReduceSum", [6, 10], [0], 0, False),
    ("ReduceMax", [2, 3, 4, 5], [1, 3], 1, False),
]


def reduce_zoo(path):
    nodes, inputs, outputs, inits = [], [], [], [numpy_helper.from_array(np.array([-1], np.int64), "a")]
    for k, (op, shape, axes, keep, _) in enumerate(CASES):
        inputs.append(helper.make_tensor_value_info(f"x{k}", F, shape))
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), f"a{k}"))
        nodes.append(helper.make_node(op, [f"x{k}", f"a{k}"], [f"y{k}"], name=f"r{k}", keepdims=keep))
        outputs.append(helper.make_tensor_value_info(f"y{k}", F, [None] * (len(shape) - (0 if keep else len(axes)))))
    # an int64 row: the reference kernel's (the vector kernel is float32's)
    nodes.append(helper.make_node("ReduceSum", ["i", "a"], ["c"], name="r_int"))
    nodes.append(helper.make_node("Cast", ["c"], ["yi"], to=F))
    inputs.append(helper.make_tensor_value_info("i", onnx.TensorProto.INT64, [2, 20]))
    graph = helper.make_graph(nodes, "rdz", inputs, outputs + [helper.make_tensor_value_info("yi", F, [2, 1])],
                              initializer=inits)
    save_graph(path, graph, 18)
    return path


@pytest.mark.parametrize("target", ["x86_64", AVX512, *in_qemu("aarch64", "armv7a")])
def test_row_reductions_match_onnxruntime(scons, tmp_path, target):
    model = reduce_zoo(tmp_path / "rdz.onnx")
    verify_clean(scons, model, f"target={target}", "tactic=ReduceMean:vector,ReduceSum:vector,ReduceMax:vector")
    chosen = json.loads((scons.build_dir / target / "rdz" / "tactics.json").read_text())
    tactics = {n["node"]: n["tactic"] for n in chosen["nodes"]}
    assert [tactics[f"r{k}"] == "vector" for k in range(len(CASES))] == [c[-1] for c in CASES]
    assert tactics["r_int"] == "reference"
    kernels = (scons.build_dir / target / "rdz" / "rdz_kernels.c").read_text()
    assert "global_pool_vector" in kernels or "vf acc" in kernels

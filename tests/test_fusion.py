"""Binary ops fused into the epilogue of the kernel before them (passes/fuse_elementwise.py),
the packed weights and the scratch memory the blocked kernels read: the graph the pass
leaves, and the numbers, compiled and run against onnxruntime."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import save_graph
from onnxcc import ops
from onnxcc.ops.common import packing
from onnxcc.plan import stage as planner
from onnxcc.tactics import stage as tactics
from onnxcc.importer.stage import import_model
from onnxcc.passes import fuse_elementwise
from onnxcc.target import Cpu

RNG = np.random.default_rng(5)
F = TensorProto.FLOAT
AVX2 = Cpu(32, 16, True, 32768, ("avx2", "fma"), l2_bytes=1 << 20)


def w(*shape):
    return (RNG.standard_normal(shape) * 0.3).astype(np.float32)


def model(tmp_path, nodes, inputs, outputs, inits, name="m"):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(n, F, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, F, s) for n, s in outputs.items()],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    path = tmp_path / f"{name}.onnx"
    save_graph(path, graph)
    return path


def residual_block(tmp_path):
    """conv -> (Sub from a shortcut computed later) -> Mul by a per-channel scale -> Relu,
    and a Div by a row-broadcast tensor the conv cannot index linearly."""
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Tanh", ["x2"], ["short"]),  # after c1: the fused conv must wait
        helper.make_node("Sub", ["short", "c1"], ["d"]),
        helper.make_node("Mul", ["d", "scale"], ["m"]),
        helper.make_node("Relu", ["m"], ["y"]),
        helper.make_node("Conv", ["x", "w3"], ["c3"], pads=[1, 1, 1, 1]),
        helper.make_node("Div", ["c3", "rows"], ["z"]),
    ]
    inits = {"w1": w(4, 3, 3, 3), "w3": w(4, 3, 3, 3), "scale": w(4, 1, 1),
             "rows": np.abs(w(1, 1, 6, 1)) + 1}
    return model(tmp_path, nodes, {"x": [1, 3, 6, 7], "x2": [1, 4, 6, 7]},
                 {"y": [1, 4, 6, 7], "z": [1, 4, 6, 7]}, inits, "block")


@pytest.mark.unit
def test_binary_chain_fuses_into_the_conv_in_its_place(tmp_path):
    g = import_model(str(residual_block(tmp_path)))
    fuse_elementwise(g)
    ops = [n.op for n in g.nodes]
    assert ops == ["Tanh", "Conv", "Conv", "Div"]  # the Div's operand is not linear: kept
    fused = next(n for n in g.nodes if n.outputs == ["y"])
    # the conv took the Sub, the Mul and the Relu, and runs after the shortcut it reads
    assert g.nodes.index(fused) > next(i for i, n in enumerate(g.nodes) if n.outputs == ["short"])
    assert fused.attrs["onnxcc_epilogue"] == [["Sub", {"value_first": False}],
                                              ["Mul", {"value_first": True}], ["Relu", {}]]
    assert fused.inputs == ["x", "w1", "short", "scale"]


@pytest.mark.slow
@pytest.mark.emulated
def test_fused_binary_ops_match_onnxruntime(scons, tmp_path):
    path = residual_block(tmp_path)
    for target in ("x86_64", "riscv32"):
        r = scons(f"model={path}", f"target={target}", "verify")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "warning" not in r.stdout + r.stderr
    kernels = (scons.build_dir / "x86_64" / "block" / "block_kernels.c").read_text()
    assert "_sub_mul_relu" in kernels  # one kernel ran the whole chain


@pytest.mark.unit
def test_panels_are_depth_major_and_zero_padded():
    a = np.arange(15, dtype=np.float32).reshape(5, 3)  # 5 rows, depth 3
    spec = packing.panels_spec(5, 3, 2)
    packed = packing.pack(a, spec).reshape(3, 3, 2)  # 3 panels of 2 rows
    assert packing.packed_size(spec) == 18
    np.testing.assert_array_equal(packed[0], a[0:2].T)
    np.testing.assert_array_equal(packed[2], np.stack([a[4], np.zeros(3)], axis=1))
    # the same matrix stored [depth][rows] ("cols"), and rows in two groups cut separately
    np.testing.assert_array_equal(packing.pack(a.T.copy(), packing.panels_spec(5, 3, 2, "cols")),
                                  packing.pack(a, spec))
    grouped = packing.pack(np.arange(24, dtype=np.float32).reshape(6, 4),
                           packing.panels_spec(6, 4, 2, "rows", groups=2)).reshape(2, 2, 4, 2)
    assert grouped[1, 0, 0].tolist() == [12.0, 16.0] and grouped[0, 1, 0].tolist() == [8.0, 0.0]


@pytest.mark.unit
def test_scratch_lives_for_its_step_only(tmp_path):
    g = import_model(str(residual_block(tmp_path)))
    conv = g.nodes[0]
    tactics.annotate(g, tactics.Selection(AVX2, {conv.name: "implicit"}))
    needed = ops.lower(conv, g).scratch_bytes  # the padded input copy
    assert needed > 0
    plan = planner.plan(g)
    buffers = plan["pools"][0]["buffers"]
    scratch = next(b for b in buffers if b["name"] == f"{conv.name}.scratch")
    step = next(e["step"] for e in plan["schedule"] if e["node"] == conv.name)
    assert scratch["first"] == scratch["last"] == step and scratch["bytes"] >= needed
    for b in buffers:
        if b is not scratch and b["first"] <= step <= b["last"]:
            assert (b["offset"] + b["bytes"] <= scratch["offset"]
                    or scratch["offset"] + scratch["bytes"] <= b["offset"])


@pytest.mark.unit
def test_a_kernel_that_would_drop_its_chain_is_refused():
    """Never silently wrong: a kernel call that does not apply every fused op of its node
    (here: one whose chain lost its last op) is refused with one line naming the ops."""
    from onnxcc.core.errors import OnnxccError
    from onnxcc.core.ir import Node

    node = Node("c1", "Conv", ["x", "w"], ["y"],
                attrs={"onnxcc_epilogue": [["Tanh", {}], ["Exp", {}]]})
    whole = ops.KernelCall("conv2d", "t", {"epilogue": [["Add", {}], ["Tanh", {}], ["Exp", {}]]},
                           [], [])
    assert ops.applies_its_chain(node, whole, "direct") is whole
    dropped = ops.KernelCall("conv2d", "t", {"epilogue": [["Add", {}], ["Tanh", {}]]}, [], [])
    with pytest.raises(OnnxccError, match="cannot apply the fused ops Tanh, Exp"):
        ops.applies_its_chain(node, dropped, "direct")

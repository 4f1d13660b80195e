"""What the importer computes at compile time so that common exports compile: an If whose
condition is a constant becomes its taken branch (importer/constant_if.py), a Cast of
float16 or bfloat16 weights becomes float32 weights (importer/constant_casts.py). Each
model runs and matches onnxruntime."""

import numpy as np
import onnx
import pytest
from conftest import onnx_model, verify_clean
from onnx import TensorProto, helper, numpy_helper
from test_errors import assert_one_clear_line

from onnxcc.importer import stage as importer

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])


def _branch(name, nodes, out, inits=()):
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT,
                                                                             [2, 4])], list(inits))


def _if_model(path, cond, nested=False):
    """y = If(cond): then: Relu(x) + a branch initializer (inside it, where ``nested``, an
    If on a Constant node's false); else: Neg(x) times a Constant node's 3."""
    k = numpy_helper.from_array(np.full([4], 0.5, np.float32), "k")
    inner = [helper.make_node("Add", ["r", "k"], "t0".split())]
    if nested:
        inner = [helper.make_node("Constant", [], ["f"], value=numpy_helper.from_array(np.array(False))),
                 helper.make_node("If", ["f"], ["t0"],
                                  then_branch=_branch("t2", [helper.make_node("Neg", ["r"], ["n2"])], "n2"),
                                  else_branch=_branch("e2", [helper.make_node("Add", ["r", "k"], ["a2"])],
                                                      "a2"))]
    then_g = _branch("then", [helper.make_node("Relu", ["x"], ["r"])] + inner, "t0", [k])
    else_g = _branch("else", [helper.make_node("Constant", [], ["three"],
                                               value=numpy_helper.from_array(np.float32(3.0))),
                              helper.make_node("Neg", ["x"], ["n"]),
                              helper.make_node("Mul", ["n", "three"], ["e0"])], "e0")
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="choose")]
    graph = helper.make_graph(nodes, "g", [X], [Y], [numpy_helper.from_array(np.array(cond), "c")])
    onnx.save(onnx_model(graph), path)
    return path


@pytest.mark.parametrize("cond, nested", [(True, False), (False, False), (True, True)])
def test_an_if_on_a_constant_runs_its_branch(scons, tmp_path, cond, nested):
    model = _if_model(tmp_path / "if.onnx", cond, nested)
    ops = [n.op for n in importer.import_model(str(model)).nodes]
    assert "If" not in ops and ("Relu" in ops) == cond
    verify_clean(scons, model)


def test_an_if_on_a_computed_condition_is_still_one_clear_line(scons, tmp_path):
    then_g = _branch("then", [helper.make_node("Relu", ["x"], ["r"])], "r")
    else_g = _branch("else", [helper.make_node("Neg", ["x"], ["n"])], "n")
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(nodes, "g", [X], [Y], [numpy_helper.from_array(np.float32(0), "zero")])
    onnx.save(onnx_model(graph, opset=13), tmp_path / "dyn.onnx")
    assert_one_clear_line(scons(f"model={tmp_path / 'dyn.onnx'}"), "holds a subgraph (control flow)")


def _bfloat16(values):
    """bfloat16 initializer bytes: float32's top 16 bits (values exact in bfloat16)."""
    bits = (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    t = onnx.TensorProto(name="w16", data_type=TensorProto.BFLOAT16, dims=list(values.shape))
    t.raw_data = bits.tobytes()
    return t


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_float16_weights_cast_to_float32_compile(scons, tmp_path, dtype):
    """A mixed-precision export's pattern: weights stored narrow, Cast, then MatMul."""
    w = np.random.default_rng(3).uniform(-1, 1, (4, 3)).astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        w = (w.view(np.uint32) & 0xFFFF0000).view(np.float32)
        init = _bfloat16(w)
    else:
        init = numpy_helper.from_array(w.astype(np.float16), "w16")
    nodes = [helper.make_node("Cast", ["w16"], ["w"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    graph = helper.make_graph(nodes, "g", [X], [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                              [2, 3])], [init])
    onnx.save(onnx_model(graph), tmp_path / "mixed.onnx")
    g = importer.import_model(str(tmp_path / "mixed.onnx"))
    assert [n.op for n in g.nodes] == ["MatMul"] and np.array_equal(g.constants["w"], w)
    verify_clean(scons, tmp_path / "mixed.onnx")

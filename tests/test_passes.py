"""Each optimization pass on a small graph: the graph it leaves, and the numbers it keeps
(checked with ONNX's reference evaluator before and after, where the result is plain ONNX)."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from conftest import onnx_model
from onnxcc.core.errors import OnnxccError
from onnxcc.importer.stage import import_model
from onnxcc.core.onnx_io import model_from_graph
from onnxcc.passes import (
    fold_batchnorm, fold_constants, fuse_elementwise, fuse_matmul_add, legacy_broadcast,
    params_to_attrs, pow_square, remove_noops)

pytestmark = pytest.mark.unit

RNG = np.random.default_rng(0)
F = TensorProto.FLOAT


def make(tmp_path, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = onnx_model(graph)
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return model, import_model(str(path))


def run(model_or_graph, feeds):
    model = model_or_graph if hasattr(model_or_graph, "graph") and not hasattr(model_or_graph, "nodes") \
        else model_from_graph(model_or_graph)
    return ReferenceEvaluator(model).run(None, feeds)


def ops(graph):
    return [n.op for n in graph.nodes]


def test_remove_noops_keeps_outputs(tmp_path):
    model, g = make(tmp_path, [helper.make_node("Identity", ["x"], ["a"]),
                               helper.make_node("Dropout", ["a"], ["b"]),
                               helper.make_node("Relu", ["b"], ["y"]),
                               helper.make_node("Identity", ["y"], ["z"])],
                    [helper.make_tensor_value_info("x", F, [2, 3])],
                    [helper.make_tensor_value_info("z", F, [2, 3])], {})
    remove_noops(g)
    # inner no-ops vanish; the one writing a graph output stays as a copy
    assert ops(g) == ["Relu", "Identity"] and g.nodes[0].inputs == ["x"] and g.outputs == ["z"]


def test_fold_constants_folds_shape_chains(tmp_path):
    shape = np.array([0], np.int64)
    model, g = make(tmp_path, [helper.make_node("Shape", ["x"], ["s"]),
                               helper.make_node("Gather", ["s", "i"], ["d"], axis=0),
                               helper.make_node("Unsqueeze", ["d", "ax"], ["du"]),
                               helper.make_node("Concat", ["m1", "du"], ["shape"], axis=0),
                               helper.make_node("Reshape", ["x", "shape"], ["y"])],
                    [helper.make_tensor_value_info("x", F, [2, 3, 4])],
                    [helper.make_tensor_value_info("y", F, [None, None])],
                    {"i": np.array(2, np.int64), "ax": shape, "m1": np.array([-1], np.int64)})
    fold_constants(g)
    assert ops(g) == ["Reshape"] and g.info("y").shape == (6, 4)
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(run(g, {"x": x})[0], run(model, {"x": x})[0])


def test_params_to_attrs_moves_clip_bounds(tmp_path):
    model, g = make(tmp_path, [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
                    [helper.make_tensor_value_info("x", F, [4])],
                    [helper.make_tensor_value_info("y", F, [4])],
                    {"lo": np.array(0, np.float32), "hi": np.array(6, np.float32)})
    params_to_attrs(g)
    assert g.nodes[0].inputs == ["x"] and g.nodes[0].attrs == {"min": 0.0, "max": 6.0}
    assert g.constants == {}


def test_fold_batchnorm_into_conv_and_standalone(tmp_path):
    c = 3
    inits = {f"{p}{k}": v.astype(np.float32) for k in ("1", "2") for p, v in
             (("s", RNG.uniform(0.5, 2, c)), ("b", RNG.standard_normal(c)),
              ("m", RNG.standard_normal(c)), ("v", RNG.uniform(0.5, 2, c)))}
    inits["w"] = RNG.standard_normal((c, c, 3, 3)).astype(np.float32)
    model, g = make(tmp_path, [helper.make_node("BatchNormalization", ["x", "s1", "b1", "m1", "v1"], ["n"]),
                               helper.make_node("Conv", ["n", "w"], ["c"], pads=[1, 1, 1, 1]),
                               helper.make_node("BatchNormalization", ["c", "s2", "b2", "m2", "v2"], ["y"])],
                    [helper.make_tensor_value_info("x", F, [1, c, 5, 5])],
                    [helper.make_tensor_value_info("y", F, [1, c, 5, 5])], inits)
    x = RNG.standard_normal((1, c, 5, 5)).astype(np.float32)
    expected = run(model, {"x": x})[0]
    fold_batchnorm(g)
    # the BN after the Conv folds into it; the one on the graph input becomes x * s + t
    assert ops(g) == ["Mul", "Add", "Conv"]
    np.testing.assert_allclose(run(g, {"x": x})[0], expected, rtol=1e-5, atol=1e-5)


def test_fuse_matmul_add_then_batchnorm_into_gemm(tmp_path):
    inits = {"w": RNG.standard_normal((4, 5)).astype(np.float32),
             "bias": RNG.standard_normal(5).astype(np.float32),
             "s": RNG.uniform(0.5, 2, 5).astype(np.float32), "b": RNG.standard_normal(5).astype(np.float32),
             "m": RNG.standard_normal(5).astype(np.float32), "v": RNG.uniform(0.5, 2, 5).astype(np.float32)}
    model, g = make(tmp_path, [helper.make_node("MatMul", ["x", "w"], ["mm"]),
                               helper.make_node("Add", ["mm", "bias"], ["a"]),
                               helper.make_node("BatchNormalization", ["a", "s", "b", "m", "v"], ["y"])],
                    [helper.make_tensor_value_info("x", F, [2, 4])],
                    [helper.make_tensor_value_info("y", F, [2, 5])], inits)
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    expected = run(model, {"x": x})[0]
    fuse_matmul_add(g)
    fold_batchnorm(g)
    assert ops(g) == ["Gemm"]
    np.testing.assert_allclose(run(g, {"x": x})[0], expected, rtol=1e-5, atol=1e-5)


def test_fuse_elementwise_chains_activations_into_producer(tmp_path):
    model, g = make(tmp_path, [helper.make_node("Add", ["x", "x"], ["a"]),
                               helper.make_node("Relu", ["a"], ["r"]),
                               helper.make_node("Clip", ["r", "", "one"], ["y"]),
                               helper.make_node("Mul", ["x", "x"], ["a2"]),
                               helper.make_node("Sigmoid", ["a2"], ["z"])],
                    [helper.make_tensor_value_info("x", F, [4])],
                    [helper.make_tensor_value_info("y", F, [4]),
                     helper.make_tensor_value_info("a2", F, [4]),
                     helper.make_tensor_value_info("z", F, [4])], {"one": np.array(1, np.float32)})
    params_to_attrs(g)
    fuse_elementwise(g)
    add = g.nodes[0]
    assert add.op == "Add" and add.outputs == ["y"]
    assert add.attrs["onnxcc_epilogue"] == [["Relu", {}], ["Clip", {"max": 1.0}]]
    # a graph output (a2) is never fused away
    assert "Sigmoid" in ops(g)


def test_params_to_attrs_moves_every_parameter_keeping_positions(tmp_path):
    model, g = make(tmp_path, [helper.make_node("Slice", ["x", "st", "en", "", "sp"], ["s"]),
                               helper.make_node("Pad", ["s", "pads", "v"], ["y"], mode="constant")],
                    [helper.make_tensor_value_info("x", F, [6, 4]),
                     helper.make_tensor_value_info("v", F, [])],
                    [helper.make_tensor_value_info("y", F, [None, None])],
                    {"st": np.array([4, 0], np.int64), "en": np.array([0, 4], np.int64),
                     "sp": np.array([-2, 1], np.int64), "pads": np.array([1, 0, 0, 2], np.int64)})
    params_to_attrs(g)
    slice_, pad = g.nodes
    assert slice_.inputs == ["x"] and slice_.attrs == {"starts": [4, 0], "ends": [0, 4], "steps": [-2, 1]}
    # a runtime constant_value stays an input, at its position
    assert pad.inputs == ["s", "", "v"] and pad.attrs["pads"] == [1, 0, 0, 2]
    assert g.constants == {}


def test_params_to_attrs_rejects_a_computed_parameter(tmp_path):
    model, g = make(tmp_path, [helper.make_node("Slice", ["x", "st", "en"], ["y"])],
                    [helper.make_tensor_value_info("x", F, [6]),
                     helper.make_tensor_value_info("st", TensorProto.INT64, [1])],
                    [helper.make_tensor_value_info("y", F, [None])],
                    {"en": np.array([4], np.int64)})
    with pytest.raises(OnnxccError, match="starts input 'st' is computed at run time"):
        params_to_attrs(g)


def test_remove_noops_gives_an_inference_dropout_an_all_true_mask(tmp_path):
    model, g = make(tmp_path, [helper.make_node("Dropout", ["x"], ["d", "mask"]),
                               helper.make_node("Relu", ["d"], ["y"])],
                    [helper.make_tensor_value_info("x", F, [2, 3])],
                    [helper.make_tensor_value_info("y", F, [2, 3]),
                     helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, 3])], {})
    remove_noops(g)
    assert ops(g) == ["Relu"] and g.constants["mask"].dtype == bool and g.constants["mask"].all()


def test_fold_constants_folds_shape_ops_that_are_graph_outputs(tmp_path):
    model, g = make(tmp_path, [helper.make_node("Shape", ["x"], ["s"], start=1),
                               helper.make_node("EyeLike", ["x"], ["e"], k=1),
                               helper.make_node("Relu", ["x"], ["y"])],
                    [helper.make_tensor_value_info("x", F, [3, 4])],
                    [helper.make_tensor_value_info("s", TensorProto.INT64, [1]),
                     helper.make_tensor_value_info("e", F, [3, 4]),
                     helper.make_tensor_value_info("y", F, [3, 4])], {})
    fold_constants(g)
    assert ops(g) == ["Relu"]
    assert g.constants["s"].tolist() == [4]
    np.testing.assert_array_equal(g.constants["e"], np.eye(3, 4, k=1, dtype=np.float32))


def test_legacy_broadcast_aligns_the_second_input_at_axis(tmp_path):
    b = RNG.standard_normal(3).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Add", ["x", "b"], ["y"], broadcast=1, axis=1)], "g",
                              [helper.make_tensor_value_info("x", F, [2, 3, 4]),
                               helper.make_tensor_value_info("b", F, [3])],  # IR 3: inits are inputs
                              [helper.make_tensor_value_info("y", F, [2, 3, 4])],
                              initializer=[numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)])
    model.ir_version = 3
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    g = import_model(str(path))
    legacy_broadcast(g)
    add = g.nodes[0]
    assert "axis" not in add.attrs and g.info(add.inputs[1]).shape == (1, 3, 1)
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(x + g.constants[add.inputs[1]], x + b[:, None])


def test_import_compiles_a_function_op_as_its_body(tmp_path):
    """SoftmaxCrossEntropyLoss has no kernel: its schema's body (LogSoftmax, then the
    NegativeLogLikelihoodLoss function, itself expanded) replaces it, same numbers."""
    model, g = make(tmp_path, [helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y"],
                                                reduction="mean")],
                    [helper.make_tensor_value_info("x", F, [3, 5]),
                     helper.make_tensor_value_info("t", TensorProto.INT64, [3])],
                    [helper.make_tensor_value_info("y", F, [])], {})
    assert "SoftmaxCrossEntropyLoss" not in ops(g) and "NegativeLogLikelihoodLoss" not in ops(g)
    assert "LogSoftmax" in ops(g)
    feeds = {"x": RNG.standard_normal((3, 5)).astype(np.float32), "t": np.array([0, 4, 2])}
    np.testing.assert_allclose(run(g, feeds)[0], run(model, feeds)[0], rtol=1e-6)


def test_fuse_elementwise_takes_a_residual_add_into_the_later_conv(tmp_path):
    inits = {"w1": RNG.standard_normal((2, 2, 3, 3)).astype(np.float32),
             "w2": RNG.standard_normal((2, 2, 1, 1)).astype(np.float32)}
    model, g = make(tmp_path, [helper.make_node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]),
                               helper.make_node("Relu", ["c"], ["r"]),
                               helper.make_node("Conv", ["x", "w2"], ["s"]),  # the shortcut
                               helper.make_node("Add", ["r", "s"], ["a"]),
                               helper.make_node("Relu", ["a"], ["y"])],
                    [helper.make_tensor_value_info("x", F, [1, 2, 4, 4])],
                    [helper.make_tensor_value_info("y", F, [1, 2, 4, 4])], inits)
    fuse_elementwise(g)
    # the shortcut conv reads the first conv's output at its own index and adds it
    assert ops(g) == ["Conv", "Conv"]
    first, shortcut = g.nodes
    assert first.outputs == ["r"] and first.attrs["onnxcc_epilogue"] == [["Relu", {}]]
    assert shortcut.inputs == ["x", "w2", "r"] and shortcut.outputs == ["y"]
    assert shortcut.attrs["onnxcc_epilogue"] == [["Add", {"value_first": False}], ["Relu", {}]]


def test_fuse_elementwise_needs_the_conv_output_used_once(tmp_path):
    inits = {"w": RNG.standard_normal((2, 2, 1, 1)).astype(np.float32)}
    model, g = make(tmp_path, [helper.make_node("Conv", ["x", "w"], ["c"]),
                               helper.make_node("Add", ["c", "x"], ["a"]),
                               helper.make_node("Mul", ["a", "c"], ["y"])],
                    [helper.make_tensor_value_info("x", F, [1, 2, 4, 4])],
                    [helper.make_tensor_value_info("y", F, [1, 2, 4, 4])], inits)
    fuse_elementwise(g)
    # c is read twice: the conv keeps it; the Mul goes into the Add's kernel instead
    assert ops(g) == ["Conv", "Add"] and g.nodes[0].outputs == ["c"]
    assert g.nodes[1].inputs == ["c", "x", "c"]


def test_pow_square_multiplies_where_the_exponent_is_two(tmp_path):
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    model, g = make(tmp_path, [helper.make_node("Pow", ["x", "two"], ["a"]),
                               helper.make_node("Pow", ["x", "twos"], ["b"]),
                               helper.make_node("Pow", ["x", "three"], ["c"]),
                               helper.make_node("Pow", ["x", "wide"], ["d"])],
                    [helper.make_tensor_value_info("x", F, [2, 3])],
                    [helper.make_tensor_value_info(n, F, [2, 3]) for n in "abc"]
                    + [helper.make_tensor_value_info("d", F, [2, 2, 3])],
                    {"two": np.array(2, np.float32), "twos": np.full(3, 2, np.int64),
                     "three": np.array(3, np.float32), "wide": np.full((2, 2, 3), 2, np.float32)})
    expected = run(model, {"x": x})
    pow_square(g)
    # a scalar or broadcast 2 of any type squares; 3, or an exponent that widens the result, not
    assert ops(g) == ["Mul", "Mul", "Pow", "Pow"] and g.nodes[0].inputs == ["x", "x"]
    assert "two" not in g.constants and "twos" not in g.constants
    for got, want in zip(run(g, {"x": x}), expected):
        np.testing.assert_array_equal(got, want)


def test_pow_square_keeps_integer_powers(tmp_path):
    model, g = make(tmp_path, [helper.make_node("Pow", ["x", "two"], ["y"])],
                    [helper.make_tensor_value_info("x", TensorProto.INT32, [4])],
                    [helper.make_tensor_value_info("y", TensorProto.INT32, [4])],
                    {"two": np.array(2, np.int32)})
    pow_square(g)
    assert ops(g) == ["Pow"]

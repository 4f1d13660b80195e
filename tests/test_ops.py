"""Each operator and its attributes, compiled alone through the whole pipeline and run
against onnxruntime (verify)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import onnx_model

RNG = np.random.default_rng(7)


def w(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def node_case(op, inputs, out_rank, inits=None, opset=17, **attrs):
    """(nodes, graph inputs {name: shape}, outputs [(name, rank)], initializers, opset)."""
    names = [n for n in inputs] + list(inits or {})
    return ([helper.make_node(op, names, ["y"], **attrs)], inputs, [("y", out_rank)],
            inits or {}, opset)


CASES = {
    "conv_same_upper": node_case("Conv", {"x": [1, 2, 7, 7]}, 4, {"w": w(3, 2, 3, 3)},
                                 auto_pad="SAME_UPPER", strides=[2, 2]),
    "conv_same_lower": node_case("Conv", {"x": [1, 2, 6, 6]}, 4, {"w": w(3, 2, 4, 4)},
                                 auto_pad="SAME_LOWER"),
    "conv_valid_bias": node_case("Conv", {"x": [1, 2, 6, 5]}, 4, {"w": w(4, 2, 3, 2), "b": w(4)},
                                 auto_pad="VALID"),
    "conv_dilated": node_case("Conv", {"x": [1, 2, 9, 9]}, 4, {"w": w(2, 2, 3, 3)},
                              dilations=[2, 2], pads=[2, 1, 2, 1]),
    "conv_groups": node_case("Conv", {"x": [2, 4, 5, 5]}, 4, {"w": w(6, 2, 3, 3)}, group=2,
                             pads=[1, 1, 1, 1]),
    "conv_1d": node_case("Conv", {"x": [1, 3, 20]}, 3, {"w": w(4, 3, 5)}, strides=[2], pads=[2, 2]),
    "gemm_transa_alpha_beta": node_case("Gemm", {"a": [3, 2]}, 2, {"b": w(3, 4), "c": w(4)},
                                        transA=1, alpha=0.5, beta=2.0),
    "gemm_bias_column": node_case("Gemm", {"a": [2, 3]}, 2, {"b": w(4, 3), "c": w(2, 1)},
                                  transB=1),
    "matmul_vector_matrix": node_case("MatMul", {"a": [4]}, 1, {"b": w(4, 3)}),
    "matmul_matrix_vector": node_case("MatMul", {"a": [3, 4]}, 1, {"b": w(4)}),
    "matmul_broadcast": node_case("MatMul", {"a": [2, 1, 3, 4], "b": [5, 4, 2]}, 4),
    "add_broadcast": node_case("Add", {"a": [2, 3, 4], "b": [3, 1]}, 3),
    "sub_scalar": node_case("Sub", {"a": [2, 3]}, 2, {"b": np.array(0.5, np.float32)}),
    "mul_channel": node_case("Mul", {"a": [1, 3, 2, 2]}, 4, {"b": w(1, 3, 1, 1)}),
    "div_both_broadcast": node_case("Div", {"a": [3, 1], "b": [1, 4]}, 2),
    "maxpool_pads_dilations": node_case("MaxPool", {"x": [1, 2, 8, 8]}, 4, kernel_shape=[3, 3],
                                        pads=[1, 1, 1, 1], dilations=[2, 2]),
    "avgpool_include_pad": node_case("AveragePool", {"x": [1, 2, 7, 7]}, 4, kernel_shape=[3, 3],
                                     strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1),
    "avgpool_ceil": node_case("AveragePool", {"x": [1, 2, 8, 8]}, 4, kernel_shape=[3, 3],
                              strides=[2, 2], ceil_mode=1),
    "global_max_pool": node_case("GlobalMaxPool", {"x": [2, 3, 4, 5]}, 4),
    "transpose": node_case("Transpose", {"x": [2, 3, 4]}, 3, perm=[2, 0, 1]),
    "concat_last_axis": ([helper.make_node("Concat", ["a", "b", "c"], ["y"], axis=-1)],
                         {"a": [2, 3, 1], "b": [2, 3, 4], "c": [2, 3, 2]}, [("y", 3)], {}, 17),
    "softmax_middle_axis": node_case("Softmax", {"x": [2, 3, 4]}, 3, axis=1),
    "softmax_opset11_coerced": node_case("Softmax", {"x": [2, 3, 4]}, 3, opset=11, axis=1),
    "layernorm_axis1_no_bias": node_case("LayerNormalization", {"x": [2, 3, 4]}, 3,
                                         {"s": w(3, 4)}, axis=1, epsilon=1e-3),
    "clip_opset6_attrs": node_case("Clip", {"x": [4, 5]}, 2, opset=6, min=-0.5, max=0.25),
    "activations_chain": ([helper.make_node("LeakyRelu", ["x"], ["a"], alpha=0.2),
                           helper.make_node("HardSigmoid", ["a"], ["b"], alpha=0.3, beta=0.4),
                           helper.make_node("HardSwish", ["x"], ["c"]),
                           helper.make_node("Sigmoid", ["c"], ["d"]),
                           helper.make_node("Tanh", ["d"], ["e"]),
                           helper.make_node("Add", ["b", "e"], ["y"])],
                          {"x": [3, 7]}, [("y", 2)], {}, 17),
    "views_to_outputs": ([helper.make_node("Flatten", ["x"], ["f"], axis=2),
                          helper.make_node("Unsqueeze", ["f", "axes"], ["u"]),
                          helper.make_node("Squeeze", ["u", "axes"], ["s"]),
                          helper.make_node("Identity", ["x"], ["i"]),
                          helper.make_node("Reshape", ["i", "shape"], ["r"])],
                         {"x": [2, 3, 4]}, [("s", 2), ("r", 2), ("f", 2)],
                         {"axes": np.array([0], np.int64), "shape": np.array([4, -1], np.int64)}, 17),
}


def save(path, case):
    nodes, inputs, outputs, inits, opset = case
    graph = helper.make_graph(
        nodes, "case",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None] * r) for n, r in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = onnx_model(graph, opset)
    onnx.checker.check_model(model)
    onnx.save(model, path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_matches_onnxruntime(scons, tmp_path, case):
    model = tmp_path / f"{case}.onnx"
    save(model, CASES[case])
    r = scons(f"model={model}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[verify]" in r.stdout and "warning" not in r.stdout + r.stderr

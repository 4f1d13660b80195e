"""int8: the requantization arithmetic, the QDQ pass, QOperator import, every integer
kernel against onnxruntime (exactly), the quantized example models on the host and in
qemu, and their size against the float build."""

import glob
import json
import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import MODELS
from onnxcc import quant, verify
from onnxcc.importer import import_model
from onnxcc.passes import optimize

INT8_MODELS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(MODELS, "int8", "*.onnx")))
RNG = np.random.default_rng(11)
F, I8, U8, I32 = TensorProto.FLOAT, TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32
NP = {I8: np.int8, U8: np.uint8, I32: np.int32, F: np.float32}


# --- the arithmetic --------------------------------------------------------------------

def test_fixed_point_requantization_rounds_exactly_like_float32():
    for _ in range(200):
        scale = np.float32(np.exp(RNG.uniform(np.log(1e-7), np.log(0.5))))
        zp = int(RNG.integers(-128, 128))
        acc = np.concatenate([RNG.integers(-2**31, 2**31 - 1, 100),
                              RNG.integers(-int(300 / scale), int(300 / scale) + 1, 300)])
        mult, shift = quant.fixed_point(scale, "test")
        assert mult * 2.0 ** -shift == scale and 2**23 <= mult < 2**24
        assert np.array_equal(quant.requantize_fixed_point(acc, mult, shift, zp, -128, 127),
                              quant.requantize_reference(acc, scale, zp, -128, 127))


def test_requantization_ties_round_to_even_and_large_accumulators_round_first():
    # 0.5 * odd numbers are exact ties; beyond 2**24 float32(acc) itself rounds
    acc = np.array([1, 3, 5, -1, -3, 2**25 + 1, 2**25 + 3, -(2**25 + 3)])
    mult, shift = quant.fixed_point(0.5, "test")
    got = quant.requantize_fixed_point(acc, mult, shift, 0, -2**31, 2**31 - 1)
    assert list(got[:5]) == [0, 2, 2, 0, -2]
    assert np.array_equal(got, quant.requantize_reference(acc, np.float32(0.5), 0, -2**31, 2**31 - 1))


def test_verify_compares_dequantized_outputs_exactly():
    exp = [np.array([0.5, 0.25], np.float32)]
    one_ulp = np.nextafter(exp[0], np.float32(1)).astype(np.float32)
    assert verify.compare(exp, [one_ulp.tobytes()], fma=False)[0][2]  # float tolerance
    assert not verify.compare(exp, [one_ulp.tobytes()], fma=False, exact=[True])[0][2]
    assert verify.compare(exp, [exp[0].tobytes()], fma=False, exact=[True])[0][2]


# --- small quantized graphs --------------------------------------------------------------

def _init(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def save(tmp_path, nodes, inputs, outputs, inits, name="q"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(m.SerializeToString())
    return str(path)


def qparams(prefix, scale, zp, elem):
    return [_init(f"{prefix}_s", np.float32(scale)), _init(f"{prefix}_z", NP[elem](zp))]


def qoperator_zoo(tmp_path, elem, name):
    """float -> Q -> QLinearConv (weight zero point) -> QLinearAveragePool (padded) ->
    QLinearAdd (per-channel broadcast) -> QLinearLeakyRelu -> QLinearSigmoid ->
    QLinearConcat (other scale) -> QLinearSoftmax -> QLinearMatMul -> DQ: every QOperator
    kernel, with awkward parameters."""
    lo, hi = (-128, 127) if elem == I8 else (0, 255)
    zp = lambda: int(RNG.integers(lo + 20, hi - 20))  # noqa: E731
    w = RNG.integers(-60, 60, (6, 3, 3, 3)).astype(np.int8)
    inits = (qparams("x", 0.02, zp(), elem) + qparams("c", 0.05, zp(), elem)
             + qparams("p", 0.04, zp(), elem) + qparams("k", 0.03, zp(), elem)
             + qparams("a", 0.06, zp(), elem) + qparams("s", 1 / 256, lo, elem)
             + qparams("m", 0.02, zp(), elem) + qparams("l", 0.05, zp(), elem)
             + qparams("g", 1 / 256, lo, elem) + [
                 _init("w", w), _init("w_s", np.float32(0.01)), _init("w_z", np.int8(3)),
                 _init("b", RNG.integers(-500, 500, 6).astype(np.int32)),
                 _init("k", RNG.integers(lo, hi, (1, 6, 1, 1)).astype(NP[elem])),
                 _init("mw", RNG.integers(-100, 100, (4, 5)).astype(np.int8)),
                 _init("mw_s", RNG.uniform(0.005, 0.02, 5).astype(np.float32)),
                 _init("mw_z", np.zeros(5, np.int8))])
    ms = "com.microsoft"
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
        helper.make_node("QLinearConv", ["xq", "x_s", "x_z", "w", "w_s", "w_z", "c_s", "c_z", "b"],
                         ["c"], pads=[1, 1, 1, 1], strides=[1, 2]),
        helper.make_node("QLinearAveragePool", ["c", "c_s", "c_z", "p_s", "p_z"], ["p"], domain=ms,
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 1]),
        helper.make_node("QLinearAdd", ["p", "p_s", "p_z", "k", "k_s", "k_z", "a_s", "a_z"], ["a"],
                         domain=ms),
        helper.make_node("QLinearLeakyRelu", ["a", "a_s", "a_z", "l_s", "l_z"], ["lr"], domain=ms,
                         alpha=0.2),
        helper.make_node("QLinearSigmoid", ["lr", "l_s", "l_z", "g_s", "g_z"], ["sg"], domain=ms),
        helper.make_node("QLinearConcat", ["a_s", "a_z", "sg", "g_s", "g_z", "p", "p_s", "p_z"],
                         ["cat"], domain=ms, axis=1),
        helper.make_node("QLinearSoftmax", ["cat", "a_s", "a_z", "s_s", "s_z"], ["sm"], domain=ms,
                         axis=-1, opset=17),
        helper.make_node("QLinearMatMul", ["sm", "s_s", "s_z", "mw", "mw_s", "mw_z", "m_s", "m_z"],
                         ["mm"]),
        helper.make_node("DequantizeLinear", ["mm", "m_s", "m_z"], ["y"]),
    ]
    return save(tmp_path, nodes, [helper.make_tensor_value_info("x", F, [1, 3, 9, 8])],
                [helper.make_tensor_value_info("y", F, [1, 12, 5, 5])], inits, name)


def qdq_float_island(tmp_path, relu_zp):
    """DQ -> MaxPool -> Q (no integer MaxPool: it stays float) and DQ -> Conv -> Relu -> Q
    (the Relu becomes the integer range)."""
    w = RNG.integers(-50, 50, (4, 2, 3, 3)).astype(np.int8)
    w_s = RNG.uniform(0.005, 0.01, 4).astype(np.float32)
    inits = (qparams("x", 0.02, 10, U8) + qparams("r", 0.03, relu_zp, U8) + [
        _init("w", w), _init("w_s", w_s),
        _init("w_z", np.zeros(4, np.int8)), _init("b", RNG.integers(-300, 300, 4).astype(np.int32)),
        _init("b_s", np.float32(0.02) * w_s), _init("b_z", np.zeros(4, np.int32))])
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xf"]),
        helper.make_node("MaxPool", ["xf"], ["mp"], kernel_shape=[2, 2]),
        helper.make_node("QuantizeLinear", ["mp", "x_s", "x_z"], ["mq"]),
        helper.make_node("DequantizeLinear", ["mq", "x_s", "x_z"], ["mf"]),
        helper.make_node("DequantizeLinear", ["w", "w_s", "w_z"], ["wf"], axis=0),
        helper.make_node("DequantizeLinear", ["b", "b_s", "b_z"], ["bf"], axis=0),
        helper.make_node("Conv", ["mf", "wf", "bf"], ["conv"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"]),
        helper.make_node("QuantizeLinear", ["relu", "r_s", "r_z"], ["rq"]),
        helper.make_node("DequantizeLinear", ["rq", "r_s", "r_z"], ["y"]),
    ]
    return save(tmp_path, nodes, [helper.make_tensor_value_info("x", F, [1, 2, 8, 8])],
                [helper.make_tensor_value_info("y", F, [1, 4, 7, 7])], inits, "island")


def test_qoperator_import_is_qdq(tmp_path):
    g = import_model(qoperator_zoo(tmp_path, I8, "zoo"))
    assert not {"QLinearConv", "QLinearAdd", "QLinearSoftmax", "QLinearMatMul"} & {n.op for n in g.nodes}
    assert {"Conv", "AveragePool", "Add", "LeakyRelu", "Sigmoid", "Concat", "Softmax",
            "MatMul"} <= {n.op for n in g.nodes}
    assert {"QuantizeLinear", "DequantizeLinear"} <= {n.op for n in g.nodes}
    # the integer tensors carry their quantization from import on
    assert g.info("xq").quant["scale"] == [pytest.approx(0.02)] and g.info("xq").dtype == "int8"


def test_qdq_to_qlinear_fuses_groups_and_keeps_quantization(tmp_path):
    g = optimize(import_model(qoperator_zoo(tmp_path, U8, "zoo")), "test")
    assert [n.op for n in g.nodes] == ["QuantizeLinear", "QLinearConv", "QLinearAveragePool",
                                       "QLinearAdd", "QLinearLeakyRelu", "QLinearSigmoid",
                                       "QLinearConcat", "QLinearSoftmax", "QGemm",
                                       "DequantizeLinear"]
    conv = g.nodes[1]
    assert g.info(conv.inputs[0]).quant["zero_point"] and g.info(conv.inputs[1]).dtype == "int8"
    assert g.info(conv.outputs[0]).quant["scale"] == [pytest.approx(0.05)]
    gemm = g.nodes[8]  # QLinearMatMul's [K, N] weights, transposed to [N, K] at compile time
    assert g.info(gemm.inputs[1]).shape == (5, 4) and g.info(gemm.inputs[1]).quant["axis"] == 0


def test_relu_becomes_the_integer_range_and_unfused_ops_stay_float(tmp_path):
    g = optimize(import_model(qdq_float_island(tmp_path, 40)), "test")
    ops = [n.op for n in g.nodes]
    assert ops == ["QuantizeLinear", "DequantizeLinear", "MaxPool", "QuantizeLinear",
                   "QLinearConv", "DequantizeLinear"]
    assert g.nodes[4].attrs["onnxcc_clamp"] == [40, 255]  # Relu: nothing below the zero point


@pytest.mark.parametrize("target", ["x86_64", "armv7"])
def test_every_integer_kernel_matches_onnxruntime_exactly(scons, tmp_path, target):
    for elem, name in ((I8, "zoo_s8"), (U8, "zoo_u8")):
        r = scons(f"target={target}", f"model={qoperator_zoo(tmp_path, elem, name)}", "verify")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "compared exactly" in r.stdout and "warning" not in r.stdout + r.stderr
    # (onnxruntime fuses the Relu group only when the Relu is redundant: zero point 0)
    r = scons(f"target={target}", f"model={qdq_float_island(tmp_path, 0)}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr


def test_non_constant_quantization_parameters_are_one_clear_error(scons, tmp_path):
    nodes = [helper.make_node("QLinearAdd", ["a", "s", "z", "a", "s", "z", "s", "z"], ["y"],
                              domain="com.microsoft")]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("a", I8, [4]),
                                  helper.make_tensor_value_info("s", F, []),
                                  helper.make_tensor_value_info("z", I8, [])],
                [helper.make_tensor_value_info("y", I8, [4])], [], "dyn")
    r = scons(f"model={path}")
    assert r.returncode != 0 and "Traceback" not in r.stdout + r.stderr
    assert "quantization parameter 's' is not a constant" in r.stdout + r.stderr


# --- the quantized example models ----------------------------------------------------------

def test_int8_examples_exist():
    names = {f"{m}_{form}.onnx" for m in ("kws", "mobilenet_v1_025", "resnet8", "fc_autoencoder")
             for form in ("qdq", "qop")}
    assert names <= set(INT8_MODELS)


@pytest.mark.parametrize("target", ["x86_64", "armv7", "riscv32"])
@pytest.mark.parametrize("model", INT8_MODELS)
def test_int8_model_matches_onnxruntime_exactly(scons, target, model):
    r = scons(f"target={target}", f"model=models/int8/{model}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    line = [l for l in r.stdout.splitlines() if l.startswith("[verify]")][0]
    assert "(1 compared exactly)" in line and "max abs error 0," in line
    assert "warning" not in r.stdout + r.stderr


@pytest.mark.parametrize("model", ["kws", "resnet8"])
def test_int8_weights_and_arena_are_a_quarter_of_float(scons, model):
    sizes = {}
    for path in (f"models/{model}.onnx", f"models/int8/{model}_qdq.onnx"):
        r = scons("target=armv7", f"model={path}")
        assert r.returncode == 0, r.stdout + r.stderr
        name = os.path.splitext(os.path.basename(path))[0]
        sizes[name] = json.loads((scons.build_dir / "armv7" / name / "size.json").read_text())
    f, q = sizes[model], sizes[f"{model}_qdq"]
    # int8 weights, plus int32 biases and 5 bytes of requantization per output channel
    assert 0.2 < q["flash"]["weights"] / f["flash"]["weights"] < 0.32
    assert 0.2 < q["ram"]["arena"] / f["ram"]["arena"] <= 0.3


def test_conv_integer_and_matmul_integer_match_onnxruntime(scons, tmp_path):
    """int32 outputs: the sums themselves (ConvInteger with per-tensor, MatMulInteger with
    per-column weight zero points)."""
    inits = [_init("w", RNG.integers(0, 255, (3, 2, 3, 3)).astype(np.uint8)),
             _init("xz", np.uint8(100)), _init("wz", np.uint8(120)),
             _init("b", RNG.integers(-128, 127, (5, 4)).astype(np.int8)),
             _init("bz", RNG.integers(-5, 5, 4).astype(np.int8))]
    nodes = [helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["c"], pads=[1, 0, 1, 0]),
             helper.make_node("MatMulInteger", ["a", "b", "", "bz"], ["m"])]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("x", U8, [1, 2, 6, 5]),
                                  helper.make_tensor_value_info("a", U8, [2, 3, 5])],
                [helper.make_tensor_value_info("c", I32, [1, 3, 6, 3]),
                 helper.make_tensor_value_info("m", I32, [2, 3, 4])], inits, "integer")
    r = scons(f"model={path}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 output(s), max abs error 0," in r.stdout and "warning" not in r.stdout + r.stderr

"""int8: the requantization arithmetic, the QDQ pass, QOperator import, every integer
kernel against onnxruntime (exactly), the quantized example models on the host and in
qemu, and their size against the float build."""

import glob
import json
import os
import sys
import zlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import MODELS, in_qemu, save_graph
from onnxcc.plan import stage as planner
from onnxcc.core import quant
from onnxcc.verbs import verify
from onnxcc.ops.qlinear import q15 as qlinear_q15
from onnxcc.importer.stage import import_model
from onnxcc.passes import optimize

INT8_MODELS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(MODELS, "int8", "*.onnx")))
RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def _draws_of_its_own(request):
    """Each test draws its weights from a generator seeded by its own name, whichever
    tests ran before it in its process: a model the test once passed on is the model it
    is built with in every run (the module's one generator made them depend on the
    order xdist handed the tests out; docs/int8.md, "QLinearSoftmax at exact ties")."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
F, I8, U8, I32 = TensorProto.FLOAT, TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32
NP = {I8: np.int8, U8: np.uint8, I32: np.int32, F: np.float32}


# --- the arithmetic --------------------------------------------------------------------

@pytest.mark.unit
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


@pytest.mark.unit
def test_requantization_ties_round_to_even_and_large_accumulators_round_first():
    # 0.5 * odd numbers are exact ties; beyond 2**24 float32(acc) itself rounds
    acc = np.array([1, 3, 5, -1, -3, 2**25 + 1, 2**25 + 3, -(2**25 + 3)])
    mult, shift = quant.fixed_point(0.5, "test")
    got = quant.requantize_fixed_point(acc, mult, shift, 0, -2**31, 2**31 - 1)
    assert list(got[:5]) == [0, 2, 2, 0, -2]
    assert np.array_equal(got, quant.requantize_reference(acc, np.float32(0.5), 0, -2**31, 2**31 - 1))


@pytest.mark.unit
def test_verify_compares_dequantized_outputs_exactly():
    exp = [np.array([0.5, 0.25], np.float32)]
    one_ulp = np.nextafter(exp[0], np.float32(1)).astype(np.float32)
    assert verify.compare(exp, [one_ulp.tobytes()])[0].ok  # float tolerance
    assert not verify.compare(exp, [one_ulp.tobytes()], exact=[True])[0].ok
    assert verify.compare(exp, [exp[0].tobytes()], exact=[True])[0].ok


# --- small quantized graphs --------------------------------------------------------------

def _init(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def save(tmp_path, nodes, inputs, outputs, inits, name="q"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    return save_graph(tmp_path / f"{name}.onnx", g, domains={"com.microsoft": 1})


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
    """DQ -> MaxPool -> Q (equal quantizations: the integer pool alone) and DQ -> Conv ->
    Relu -> Q (the Relu becomes the integer range)."""
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


@pytest.mark.unit
def test_qoperator_import_is_qdq(tmp_path):
    g = import_model(qoperator_zoo(tmp_path, I8, "zoo"))
    assert not {"QLinearConv", "QLinearAdd", "QLinearSoftmax", "QLinearMatMul"} & {n.op for n in g.nodes}
    assert {"Conv", "AveragePool", "Add", "LeakyRelu", "Sigmoid", "Concat", "Softmax",
            "MatMul"} <= {n.op for n in g.nodes}
    assert {"QuantizeLinear", "DequantizeLinear"} <= {n.op for n in g.nodes}
    # the integer tensors carry their quantization from import on
    assert g.info("xq").quant["scale"] == [pytest.approx(0.02)] and g.info("xq").dtype == "int8"


@pytest.mark.unit
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


@pytest.mark.unit
def test_relu_becomes_the_integer_range_and_max_pool_runs_on_the_integers(tmp_path):
    g = optimize(import_model(qdq_float_island(tmp_path, 40)), "test")
    ops = [n.op for n in g.nodes]
    assert ops == ["QuantizeLinear", "MaxPool", "QLinearConv", "DequantizeLinear"]
    assert g.nodes[2].attrs["onnxcc_clamp"] == [40, 255]  # Relu: nothing below the zero point


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("armv7"), *in_qemu("cortex-m0plus")])
@pytest.mark.slow
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

@pytest.mark.unit
def test_int8_examples_are_the_quantized_forms_of_the_float_ones():
    """Every model quantize_models.py makes is there (none stale), in the form its name says:
    the tests above run on exactly these."""
    sys.path.insert(0, MODELS)
    import quantize_models
    assert INT8_MODELS == sorted([f"{m}_{form}.onnx" for m in quantize_models.MODELS
                                  for form in ("qdq", "qop")]
                                 + [f"{m}_qop_int8_input.onnx" for m in quantize_models.INT8_INPUT])
    for name in INT8_MODELS:
        ops = {n.op_type for n in onnx.load(os.path.join(MODELS, "int8", name)).graph.node}
        if name.endswith("_qdq.onnx"):
            assert {"QuantizeLinear", "DequantizeLinear"} <= ops and not any(o.startswith("QLinear") for o in ops), name
        else:
            assert ops & {"QLinearConv", "QLinearMatMul", "QGemm"}, name


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("armv7", "riscv32")])
@pytest.mark.parametrize("model", INT8_MODELS)
@pytest.mark.slow
def test_int8_model_matches_onnxruntime_exactly(scons, target, model):
    r = scons(f"target={target}", f"model=models/int8/{model}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    line = [l for l in r.stdout.splitlines() if l.startswith("[verify]")][0]
    assert "(1 compared exactly)" in line and "max abs error 0," in line
    assert "warning" not in r.stdout + r.stderr


@pytest.mark.emulated
@pytest.mark.parametrize("model", ["kws_qdq.onnx", "kws_qop.onnx"])
@pytest.mark.slow
def test_int8_model_is_exact_where_the_target_allows_unsafe_float_math(scons, model):
    """armv7a compiles with -funsafe-math-optimizations (NEON float vectors): the integer
    kernels that reproduce onnxruntime's float32 steps must not be reassociated or turn a
    division into a reciprocal (they differed by one quantum at kws' output)."""
    r = scons("target=armv7a", f"model=models/int8/{model}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "max abs error 0," in r.stdout and "warning" not in r.stdout + r.stderr


@pytest.mark.parametrize("model", ["kws", "resnet8"])
@pytest.mark.slow
def test_int8_weights_and_arena_are_a_quarter_of_float(shared_build, model):
    sizes = {}
    for path in (f"models/{model}.onnx", f"models/int8/{model}_qdq.onnx"):
        r, build = shared_build("target=armv7", f"model={path}")
        assert r.returncode == 0, r.stdout + r.stderr
        name = os.path.splitext(os.path.basename(path))[0]
        sizes[name] = json.loads((build / "armv7" / name / "size.json").read_text())
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


# --- int8 kernels writing over their input ---------------------------------------------------

MS = "com.microsoft"


class QGraph:
    """A QOperator graph on integer activations: each tensor gets its own scale and zero
    point (``<name>_s``, ``<name>_z``) and every node is named after its output."""

    def __init__(self, elem):
        self.elem, self.nodes, self.inits = elem, [], []
        self.lo, self.hi = (-128, 127) if elem == I8 else (0, 255)

    def q(self, name, scale=None):
        zp = int(RNG.integers(self.lo + 30, self.hi - 30))
        self.inits += qparams(name, scale or float(RNG.uniform(0.02, 0.05)), zp, self.elem)
        return [f"{name}_s", f"{name}_z"]

    def op(self, op, ins, out, domain="", **attrs):
        """``ins``: activations (with their parameters) then ``out``'s parameters."""
        args = [a for t in ins for a in [t] + self.q_of(t)] + self.q(out)
        self.nodes.append(helper.make_node(op, args, [out], name=out, domain=domain, **attrs))
        return out

    def q_of(self, t):
        return [f"{t}_s", f"{t}_z"]

    def conv(self, x, out, cin, cout, k, group=1, per_channel=True, w_zp=0, **attrs):
        w = RNG.integers(-60, 60, (cout, cin // group, k, k)).astype(np.int8)
        scales = RNG.uniform(0.004, 0.01, cout if per_channel else 1).astype(np.float32)
        self.inits += [_init(f"{out}_w", w), _init(f"{out}_ws", scales if per_channel else scales[0]),
                       _init(f"{out}_wz", np.full(cout, w_zp, np.int8) if per_channel else np.int8(w_zp)),
                       _init(f"{out}_b", RNG.integers(-400, 400, cout).astype(np.int32))]
        args = [x] + self.q_of(x) + [f"{out}_w", f"{out}_ws", f"{out}_wz"] + self.q(out) + [f"{out}_b"]
        self.nodes.append(helper.make_node("QLinearConv", args, [out], name=out, group=group,
                                           kernel_shape=[k, k], **attrs))
        return out

    def save(self, tmp_path, name, x_shape, y, y_shape, x_elem=None, y_elem=None):
        return save(tmp_path, self.nodes,
                    [helper.make_tensor_value_info("x", x_elem or self.elem, x_shape)],
                    [helper.make_tensor_value_info(y, y_elem or self.elem, y_shape)], self.inits, name)


def in_place_chain(tmp_path, elem, name):
    """Integer in, integer out, one map size (8x6x6) all along, so that every kernel that
    can write over its input keeps the peak down: a depthwise conv (a channel of
    scratch), a 1x1 (a pixel of scratch, weight zero point), an average pool (a channel
    of scratch), an Add of a per-channel constant, LeakyRelu, Sigmoid, Softmax."""
    g = QGraph(elem)
    g.q("x")
    t = g.conv("x", "dw", 8, 8, 3, group=8, pads=[1, 1, 1, 1])
    t = g.conv(t, "pw", 8, 8, 1, per_channel=False, w_zp=5)
    t = g.op("QLinearAveragePool", [t], "pool", MS, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    g.inits += [_init("k", RNG.integers(g.lo, g.hi, (1, 8, 1, 1)).astype(NP[elem]))]
    g.q("k")
    t = g.op("QLinearAdd", [t, "k"], "add", MS)
    t = g.op("QLinearLeakyRelu", [t], "leaky", MS, alpha=0.1)
    t = g.op("QLinearSigmoid", [t], "sigmoid", MS)
    t = g.op("QLinearSoftmax", [t], "y", MS, axis=-1, opset=13)
    return g.save(tmp_path, name, [1, 8, 6, 6], t, [1, 8, 6, 6])


CHAIN_OPS = ["dw", "pw", "pool", "add", "leaky", "sigmoid", "y"]


@pytest.mark.parametrize("target, elem, io", [("x86_64", I8, "arena"), ("x86_64", U8, "caller"),
                                              *in_qemu(("armv7", U8, "arena"))])
def test_int8_kernels_write_over_their_input_and_match_onnxruntime(scons, tmp_path, target, elem, io):
    name = f"chain_{io}"
    r = scons(f"target={target}", f"model={in_place_chain(tmp_path, elem, name)}", f"io={io}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 output(s), max abs error 0," in r.stdout  # integers: compared exactly
    assert "warning" not in r.stdout + r.stderr
    plan = json.loads((scons.build_dir / target / name / "plan.json").read_text())
    over = {s["node"]: s.get("overwrites") for s in plan["schedule"]}
    # with io=caller the first reads the caller's input and the last writes the caller's output
    written_over = CHAIN_OPS if io == "arena" else CHAIN_OPS[1:-1]
    inputs = dict(zip(CHAIN_OPS, ["x"] + CHAIN_OPS))
    assert {n: over[n] for n in written_over} == {n: inputs[n] for n in written_over}
    scratch = {s["node"]: s["scratch"]["bytes"] for s in plan["schedule"] if "scratch" in s}
    # the depthwise_q15 tactic: one channel as a zero-padded int16 plane (8 x 8), a pair
    # of slack and a row of 6 int32 sums, whether or not it writes over its input
    assert scratch == {"dw": 128 + 4 + 24, **{n: b for n, b in (("pw", 8), ("pool", 36)) if n in written_over}}


def _single(kind, elem):
    """(graph, input shape, output, output shape) of one op on input x: integer (float
    for QuantizeLinear), as is the output (float for DequantizeLinear)."""
    g = QGraph(elem)
    g.q("x")
    if kind == "depthwise_strided":  # straight over x: no scratch
        return g, [1, 4, 9, 9], g.conv("x", "y", 4, 4, 3, group=4, pads=[1, 1, 1, 1],
                                       strides=[2, 2]), [1, 4, 5, 5]
    if kind == "pool_strided":
        return g, [1, 3, 7, 7], g.op("QLinearAveragePool", ["x"], "y", MS, kernel_shape=[3, 3],
                                     strides=[2, 2]), [1, 3, 3, 3]
    if kind == "global_pool":
        return g, [1, 4, 5, 5], g.op("QLinearGlobalAveragePool", ["x"], "y", MS,
                                     channels_last=0), [1, 4, 1, 1]
    if kind == "add_over_b":  # a is broadcast: only b is read at y's own index
        g.inits += [_init("k", RNG.integers(g.lo, g.hi, (3, 1)).astype(NP[elem]))]
        g.q("k")
        return g, [2, 3, 4], g.op("QLinearAdd", ["k", "x"], "y", MS), [2, 3, 4]
    if kind == "pointwise_growing":  # 4 -> 6 channels, y's extra ones past x's end
        return g, [1, 4, 3, 5], g.conv("x", "y", 4, 6, 1), [1, 6, 3, 5]
    if kind == "pointwise_batches":  # M <= C keeps batch b of y at or before batch b of x
        return g, [2, 4, 3, 3], g.conv("x", "y", 4, 3, 1, w_zp=-3), [2, 3, 3, 3]
    if kind == "quantize":  # one byte over each float, in order: over the float already read
        g.nodes.append(helper.make_node("QuantizeLinear", ["x"] + g.q("y"), ["y"], name="y"))
        return g, [1, 3, 8, 8], "y", [1, 3, 8, 8]
    if kind == "dequantize":  # four bytes over each code, from the last: over codes already read
        g.nodes.append(helper.make_node("DequantizeLinear", ["x"] + g.q_of("x"), ["y"], name="y"))
        return g, [1, 3, 8, 8], "y", [1, 3, 8, 8]
    if kind == "residual":  # y = QLinearAdd(x, conv(conv(x))): the second conv writes over x
        t = g.conv("x", "c1", 4, 4, 3, pads=[1, 1, 1, 1])
        t = g.conv(t, "c2", 4, 4, 3, pads=[1, 1, 1, 1])
        return g, [1, 4, 5, 5], g.op("QLinearAdd", ["x", t], "y", MS), [1, 4, 5, 5]
    raise ValueError(kind)


SINGLE = ["depthwise_strided", "pool_strided", "global_pool", "add_over_b", "pointwise_growing",
          "pointwise_batches", "residual", "quantize", "dequantize"]


#: scratch bytes of the kernels opt=speed picks where they differ from the reference's: the
#: q15 tactics' zero-padded plane (11 x 11 and a pair of slack, in words) and row of 5 int32
#: sums; the columns of a block of pixels (int16: all 15 of 4 taps, two by two; 12 of 36)
Q15_SCRATCH = {"depthwise_strided": 248 + 20, "pointwise_growing": 2 * 4 * 16, "residual": 2 * 36 * 12}


@pytest.mark.parametrize("opt", ["size", "speed"])
@pytest.mark.parametrize("kind", SINGLE)
def test_single_int8_kernel_writes_over_its_input_in_the_arena(scons, tmp_path, kind, opt):
    """opt=size: the reference kernels; opt=speed: the q15 tactics where they apply."""
    elem = I8 if SINGLE.index(kind) % 2 else U8
    g, x_shape, y, y_shape = _single(kind, elem)
    model = g.save(tmp_path, kind, x_shape, y, y_shape, x_elem=F if kind == "quantize" else None,
                   y_elem=F if kind == "dequantize" else None)
    r = scons(f"model={model}", "io=arena", f"opt={opt}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "max abs error 0," in r.stdout
    assert "warning" not in r.stdout + r.stderr
    plan = json.loads((scons.build_dir / "x86_64" / kind / "plan.json").read_text())
    last = plan["schedule"][-1]
    assert last["node"] == ("c2" if kind == "residual" else "y") and last["overwrites"] == "x"
    # a pixel of scratch for the 1x1s (4 channels: 4 bytes), none for the others
    expected = 4 if kind.startswith("pointwise") else None
    if opt == "speed":
        expected = Q15_SCRATCH.get(kind, expected)
    assert last.get("scratch", {}).get("bytes") == expected


@pytest.mark.unit
def test_residual_qadd_is_fused_into_the_conv_before_it(tmp_path):
    g, x_shape, y, y_shape = _single("residual", U8)
    graph = optimize(import_model(g.save(tmp_path, "residual", x_shape, y, y_shape)), "test")
    assert [n.op for n in graph.nodes] == ["QLinearConv", "QLinearConv"]
    fused = graph.nodes[1]
    assert fused.outputs == ["y"] and fused.inputs[0] == "c1" and fused.inputs[5] == "x"
    assert fused.attrs["onnxcc_residual"]["operand"] == 1  # the Add's second operand
    assert graph.nodes[0].attrs.get("onnxcc_residual") is None
    # fuse=0 keeps the Add
    graph = optimize(import_model(g.save(tmp_path, "residual", x_shape, y, y_shape)), "test",
                     fuse=False)
    assert [n.op for n in graph.nodes] == ["QLinearConv", "QLinearConv", "QLinearAdd"]


@pytest.mark.unit
def test_a_wider_output_is_never_written_over_an_unaligned_slice(tmp_path):
    """A plain Concat of integer tensors places its 3-byte first input before the second,
    which then starts at byte 3: DequantizeLinear may not put its floats there."""
    g = QGraph(U8)
    for t in ("x", "a", "b", "n"):
        g.q(t)
    g.nodes += [helper.make_node("QLinearSigmoid", ["x", "x_s", "x_z", "a_s", "a_z"], ["a"], name="a",
                                 domain=MS),
                helper.make_node("QLinearLeakyRelu", ["x", "x_s", "x_z", "b_s", "b_z"], ["b"],
                                 name="b", domain=MS),
                helper.make_node("Concat", ["a", "b"], ["cat"], name="cat", axis=1),
                helper.make_node("QLinearSigmoid", ["cat", "b_s", "b_z", "n_s", "n_z"], ["n"], name="n",
                                 domain=MS),
                helper.make_node("DequantizeLinear", ["b", "b_s", "b_z"], ["f"], name="f")]
    path = save(tmp_path, g.nodes, [helper.make_tensor_value_info("x", U8, [1, 3])],
                [helper.make_tensor_value_info("n", U8, [1, 6]),
                 helper.make_tensor_value_info("f", F, [1, 3])], g.inits, "slices")
    graph = optimize(import_model(path), "test")
    plan = planner.plan(graph, io="arena", schedule="graph")
    assert plan["tensors"]["b"]["offset"] % 4 == 3  # the concat's second slice
    assert "overwrites" not in next(s for s in plan["schedule"] if s["node"] == "f")
    for t, where in plan["tensors"].items():
        assert where["offset"] % np.dtype(graph.info(t).dtype).itemsize == 0, t


# --- the q15 tactics (ops/qlinear/q15.py) ---------------------------------------------------

@pytest.mark.unit
def test_pairs_packing_puts_two_rows_of_four_taps_side_by_side():
    from onnxcc.ops.common import packing
    w = np.arange(1, 31, dtype=np.int8).reshape(3, 2, 5)  # 3 rows of 10 taps
    spec = packing.pairs_spec(3, 10)
    packed = packing.pack(w, spec)
    assert packed.size == packing.packed_size(spec) == 4 * 12 and packed.dtype == np.int8
    words = packed.reshape(2, 3, 2, 4)  # [row pair][word][row][4]
    assert list(words[0, 0, 0]) == [1, 3, 2, 4] and list(words[0, 0, 1]) == [11, 13, 12, 14]
    assert list(words[0, 2, 0]) == [9, 0, 10, 0]  # taps 8 and 9, then the padding
    assert not words[1, :, 1].any()  # the row that makes the count even
    assert list(words[1, 1, 0]) == [25, 27, 26, 28]


@pytest.mark.unit
def test_lanes_packing_puts_a_run_of_each_row_of_a_block_in_turn():
    from onnxcc.ops.common import packing
    w = np.arange(1, 5 * 18 + 1).astype(np.int8).reshape(5, 18)  # 5 rows of 18 taps
    spec = packing.lanes_spec(5, 18, 4, 16)
    packed = packing.pack(w, spec)
    assert packed.size == packing.packed_size(spec) == 8 * 32 and packed.dtype == np.int8
    runs = packed.reshape(2, 2, 4, 16)  # [block][run][row][lane]
    assert list(runs[0, 0, 1]) == list(w[1, :16]) and list(runs[1, 0, 0]) == list(w[4, :16])
    assert list(runs[0, 1, 3]) == list(w[3, 16:]) + [0] * 14  # the depth padded with 0
    assert not runs[1, :, 1:].any()  # the rows that make the last block whole


def test_fast_requantization_gives_the_exact_results(tmp_path):
    """requantize_fast against the exact emulation, with quant.fast_requant_window's window
    (log2) for each shift it takes: random sums, sums within a few units of a tie, |acc| >= 2^23,
    every clamp; unfolded, folded (shift <= 38: the zero point in the multiply's
    accumulator) and without the range test where |acc| < 2^23 (what
    passes/accumulator_bits.py proves)."""
    from onnxcc.codegen.render import render_def
    helpers = render_def("kernels/lib/qhelpers.mako", "requantize_fast", model="t")
    windows = [quant.fast_requant_window([s]) for s in range(20, 49)]
    assert quant.fast_requant_window([19, 30]) is None and quant.fast_requant_window([30, 49]) is None
    src = tmp_path / "rq.c"
    src.write_text("#include <stdint.h>\n#include <stdio.h>\n" + helpers + r"""
static const int window[] = {""" + ", ".join(f"{w}" for w in windows) + r"""};
static uint64_t s = 88172645463325252ull;
static uint64_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }
int main(void)
{
    long bad = 0;
    for (long i = 0; i < 2000000; ++i) {
        const uint32_t mult = (1u << 23) | (uint32_t)(rnd() & 0x7fffff);
        const int shift = 20 + (int)(rnd() % 29);
        const int u8 = (int)(rnd() & 1);
        const int32_t zp = (int32_t)(rnd() % 256) - (u8 ? 0 : 128);
        const int32_t lo = (u8 ? 0 : -128) + (int32_t)(rnd() % 3 == 0 ? rnd() % 40 : 0);
        const int32_t hi = u8 ? 255 : 127;
        int32_t acc;
        switch (rnd() % 3) {
        case 0: acc = (int32_t)rnd(); break;
        case 1: acc = (int32_t)(rnd() % (1u << 25)) - (1 << 24); break;
        default: { /* near (k + 1/2) * 2^shift / mult */
            const double k = (double)(rnd() % 600) + 0.5;
            const double v = k * (double)(UINT64_C(1) << shift) / mult;
            if (v > 2e9) continue;
            acc = ((int32_t)v + (int32_t)(rnd() % 7) - 3) * (rnd() & 1 ? 1 : -1);
        }
        }
        const int32_t exact = t_requantize(acc, mult, shift, zp, lo, hi);
        const int k = window[shift - 20], fold = shift <= 38;
        bad += exact != t_requantize_fast(acc, mult, shift, k, 1, 0, zp, lo, hi);
        bad += exact != t_requantize_fast(acc, mult, shift, k, 1, fold, zp, lo, hi);
        if (acc > -(1 << 23) && acc < (1 << 23))
            bad += exact != t_requantize_fast(acc, mult, shift, k, 0, fold, zp, lo, hi);
    }
    printf("%ld\n", bad);
    return bad != 0;
}
""")
    exe = tmp_path / "rq"
    import subprocess
    for flags in ([], ["-D__ARM_ARCH_6M__"]):  # and the Cortex-M0's 16x16-bit multiplies
        subprocess.run(["cc", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", *flags, str(src),
                        "-o", str(exe)], check=True)
        assert subprocess.run([str(exe)], capture_output=True, text=True).stdout.strip() == "0"


def _weights(prefix, shape):
    """A QLinearConv's or QGemm's int8 weights (zero points 0), per-row scales and biases."""
    return [_init(prefix, RNG.integers(-127, 128, shape).astype(np.int8)),
            _init(f"{prefix}_s", RNG.uniform(0.002, 0.01, shape[0]).astype(np.float32)),
            _init(f"{prefix}_z", np.zeros(shape[0], np.int8)),
            _init(f"{prefix}_b", RNG.integers(-2000, 2000, shape[0]).astype(np.int32))]


def _qconv(x, xq, w, y, **attrs):
    """QLinearConv y of x (quantized as ``xq``) with _weights ``w``."""
    return helper.make_node("QLinearConv", [x, f"{xq}_s", f"{xq}_z", w, f"{w}_s", f"{w}_z",
                                            f"{y}_s", f"{y}_z", f"{w}_b"], [y], name=y, **attrs)


def q15_zoo(tmp_path, elem, name):
    """QLinearConvs with every awkward shape the q15 kernels have: 5 input channels (taps
    not a multiple of 4), 7 output channels (odd), 49 pixels (odd), pads, strides, a
    dilation; a depthwise conv written over its input; a 1x1 with the QLinearAdd of the
    first conv's output fused after it; a depthwise 2x5 window (odd and even rows)."""
    lo, hi = (-128, 127) if elem == I8 else (0, 255)
    zp = lambda: int(RNG.integers(lo + 20, hi - 20))  # noqa: E731
    inits = (qparams("x", 0.02, zp(), elem) + qparams("c", 0.05, zp(), elem)
             + qparams("d", 0.04, zp(), elem) + qparams("p", 0.05, zp(), elem)
             + qparams("a", 0.07, zp(), elem) + qparams("e", 0.03, zp(), elem)
             + _weights("w1", (7, 5, 3, 3)) + _weights("w2", (7, 1, 3, 3))
             + _weights("w3", (7, 7, 1, 1)) + _weights("w4", (7, 1, 2, 5)))
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
        _qconv("xq", "x", "w1", "c", pads=[1, 1, 1, 1], strides=[1, 2], dilations=[2, 1]),
        _qconv("c", "c", "w2", "d", pads=[1, 1, 1, 1], group=7),
        _qconv("d", "d", "w3", "p"),
        helper.make_node("QLinearAdd", ["p", "p_s", "p_z", "c", "c_s", "c_z", "a_s", "a_z"], ["a"],
                         name="a", domain="com.microsoft"),
        _qconv("a", "a", "w4", "e", pads=[0, 2, 0, 2], strides=[2, 2], group=7),
        helper.make_node("DequantizeLinear", ["e", "e_s", "e_z"], ["y"]),
    ]
    return save(tmp_path, nodes, [helper.make_tensor_value_info("x", F, [1, 5, 9, 13])],
                [helper.make_tensor_value_info("y", F, [1, 7, 3, 4])], inits, name)


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("armv7", "riscv32", "cortex-m0plus")])
@pytest.mark.slow
def test_q15_convolutions_match_onnxruntime_exactly(scons, tmp_path, target):
    """The DSP kernels on armv7 (inline assembly and ACLE), their C form on x86_64 and
    riscv32, ARMv6-M's assembly on cortex-m0plus: chosen by the cost model, exactly
    onnxruntime's outputs."""
    for elem, name in ((I8, "q15_s8"), (U8, "q15_u8")):
        r = scons(f"target={target}", f"model={q15_zoo(tmp_path, elem, name)}", "verify")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "max abs error 0," in r.stdout and "warning" not in r.stdout + r.stderr
        chosen = json.loads((scons.build_dir / target / name / "tactics.json").read_text())
        convs = [n["tactic"] for n in chosen["nodes"] if n["op"] == "QLinearConv"]
        assert convs == ["gemm_q15", "depthwise_q15", "gemm_q15", "depthwise_q15"], convs


def mve_zoo(tmp_path, elem, name):
    """The shapes awkward for qconv2d_mve: 1x1 convolutions of 21 inputs (not a multiple of
    16) and 13 (fewer) to 13 and 7 outputs (not multiples of 4) over 63 pixels (two blocks
    of 32 and 31: an odd last pixel), one with the QLinearAdd of another fused after it;
    then a QGemm of 7 rows of 37 to 11 columns, sums beyond 2^23 in two. Nonzero zero
    points."""
    lo, hi = (-128, 127) if elem == I8 else (0, 255)
    zp = lambda: int(RNG.integers(lo + 20, hi - 20))  # noqa: E731
    inits = (qparams("x", 0.02, zp(), elem) + qparams("c", 0.05, zp(), elem)
             + qparams("d", 0.04, zp(), elem) + qparams("p", 0.05, zp(), elem)
             + qparams("a", 0.07, zp(), elem) + qparams("g", 0.3, zp(), elem)
             + _weights("w1", (13, 21, 1, 1)) + _weights("w2", (7, 13, 1, 1))
             + _weights("w3", (7, 21, 1, 1)) + _weights("w4", (11, 37))
             + [_init("shape", np.array([7, 63], np.int64))])
    # two of the QGemm's sums beyond 2^23 (the range test's exact path)
    inits[-2] = _init("w4_b", np.array([1 << 23, -(1 << 23)] + [int(v) for v in RNG.integers(-2000, 2000, 9)],
                                       np.int32))

    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
        _qconv("xq", "x", "w1", "c"),
        _qconv("c", "c", "w2", "p"),
        _qconv("xq", "x", "w3", "d"),
        helper.make_node("QLinearAdd", ["p", "p_s", "p_z", "d", "d_s", "d_z", "a_s", "a_z"], ["a"],
                         name="a", domain="com.microsoft"),
        helper.make_node("Reshape", ["a", "shape"], ["r"]),
        helper.make_node("Slice", ["r", "s0", "s1", "s2"], ["rs"]),
        helper.make_node("QGemm", ["rs", "a_s", "a_z", "w4", "w4_s", "w4_z", "w4_b", "g_s", "g_z"],
                         ["g"], name="g", domain="com.microsoft", transB=1),
        helper.make_node("DequantizeLinear", ["g", "g_s", "g_z"], ["y"]),
    ]
    inits += [_init("s0", np.array([0], np.int64)), _init("s1", np.array([37], np.int64)),
              _init("s2", np.array([1], np.int64))]
    return save(tmp_path, nodes, [helper.make_tensor_value_info("x", F, [1, 21, 7, 9])],
                [helper.make_tensor_value_info("y", F, [7, 11])], inits, name)


@pytest.mark.parametrize("target", in_qemu("cortex-m55"))
@pytest.mark.slow
def test_mve_convolutions_match_onnxruntime_exactly(scons, tmp_path, target):
    """The Helium kernel (ops/qlinear/mve.py), chosen by the cost model for every 1x1
    convolution and the QGemm: exactly onnxruntime's outputs, without a warning."""
    for elem, name in ((I8, "mve_s8"), (U8, "mve_u8")):
        r = scons(f"target={target}", f"model={mve_zoo(tmp_path, elem, name)}", "verify")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "max abs error 0," in r.stdout and "warning" not in r.stdout + r.stderr
        chosen = json.loads((scons.build_dir / target / name / "tactics.json").read_text())
        tactics = [n["tactic"] for n in chosen["nodes"] if n["op"] in ("QLinearConv", "QGemm")]
        assert tactics == ["gemm_mve"] * 4, tactics


@pytest.mark.unit
def test_accumulator_bits_bounds_every_sum_from_the_weights(tmp_path):
    """passes/accumulator_bits.py: |bias| + max |x - x_zp| * sum |w|, per output channel,
    as a bit length; the q15 kernels drop their range test below 2^23 and keep it above."""
    w = np.array([[[[3]], [[-4]]], [[[127]], [[-127]]]], np.int8)  # sums of |w|: 7, 254
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
             helper.make_node("QLinearConv", ["xq", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z", "b"],
                              ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "y_s", "y_z"], ["y"])]
    for x_zp, bias, bits in ((-100, [5, -9], (227 * 254 + 9).bit_length()),
                             (-128, [0, 1 << 23], ((1 << 23) + 255 * 254).bit_length())):
        inits = (qparams("x", 0.02, x_zp, I8) + qparams("y", 0.05, 0, I8)
                 + [_init("w", w), _init("w_s", np.float32([0.01, 0.02])), _init("w_z", np.zeros(2, np.int8)),
                    _init("b", np.array(bias, np.int32))])
        path = save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3])], inits)
        graph = optimize(import_model(path), "test")
        conv = next(n for n in graph.nodes if n.op == "QLinearConv")
        assert conv.attrs["onnxcc_sum_bits"] == bits
        assert qlinear_q15.lower_gemm(conv, graph, None).params["wide"] == (bits > 23)


# --- issue 35: MaxPool, ReduceMean and unary tables on the integers --------------------------

class QdqChain:
    """A QDQ chain on float x: each ``op`` is DQ -> float op -> Q (its own output
    quantization unless ``same``), the last one dequantized into y."""

    def __init__(self, elem, x_shape):
        self.elem, self.nodes, self.inits = elem, [], []
        self.lo, self.hi = (-128, 127) if elem == I8 else (0, 255)
        self.x_shape, self.t = x_shape, "xq"
        self.inits += qparams("xq", 0.05, self.zp(), elem)
        self.nodes.append(helper.make_node("QuantizeLinear", ["x", "xq_s", "xq_z"], ["xq"]))

    def zp(self):
        return int(RNG.integers(self.lo + 30, self.hi - 30))

    def op(self, op, name, between=(), same=False, scale=None, extra=(), **attrs):
        """DQ -> op(x, *extra) -> between (Relu / Clip) -> Q."""
        t = self.t
        self.nodes.append(helper.make_node("DequantizeLinear", [t, f"{t}_s", f"{t}_z"], [f"{name}_in"]))
        self.nodes.append(helper.make_node(op, [f"{name}_in", *extra], [f"{name}_f"], name=name, **attrs))
        f = f"{name}_f"
        for k, act in enumerate(between):
            self.nodes.append(helper.make_node(act, [f], [f"{f}{k}"]))
            f = f"{f}{k}"
        if same:
            self.inits += [_init(f"{name}_s", numpy_helper.to_array(self._init(f"{t}_s"))),
                           _init(f"{name}_z", numpy_helper.to_array(self._init(f"{t}_z")))]
        else:
            self.inits += qparams(name, scale or float(RNG.uniform(0.02, 0.06)), self.zp(), self.elem)
        self.nodes.append(helper.make_node("QuantizeLinear", [f, f"{name}_s", f"{name}_z"], [name]))
        self.t = name
        return name

    def _init(self, name):
        return next(i for i in self.inits if i.name == name)

    def save(self, tmp_path, name, y_shape, opset=17):
        t = self.t
        self.nodes.append(helper.make_node("DequantizeLinear", [t, f"{t}_s", f"{t}_z"], ["y"]))
        g = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info("x", F, self.x_shape)],
                              [helper.make_tensor_value_info("y", F, y_shape)], initializer=self.inits)
        return save_graph(tmp_path / f"{name}.onnx", g, opset=opset)


def qdq_max_pools(tmp_path, elem, name):
    """MaxPool with x's quantization (the integer pool alone), MaxPool to another one and
    GlobalMaxPool -> Relu (a table after the pool)."""
    c = QdqChain(elem, [1, 3, 9, 8])
    c.op("MaxPool", "mp_same", same=True, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    c.op("MaxPool", "mp_other", kernel_shape=[2, 2], pads=[0, 1, 0, 1], strides=[1, 1])
    c.op("GlobalMaxPool", "gmp", between=["Relu"])
    return c.save(tmp_path, name, [1, 3, 1, 1])


@pytest.mark.unit
def test_max_pools_run_on_the_integers(tmp_path):
    g = optimize(import_model(qdq_max_pools(tmp_path, U8, "mp")), "test")
    assert [n.op for n in g.nodes] == ["QuantizeLinear", "MaxPool", "MaxPool", "QLinearRequantize",
                                       "GlobalMaxPool", "QLinearRequantize", "DequantizeLinear"]
    assert all(g.info(t).dtype == "uint8" for n in g.nodes[1:-1] for t in n.inputs + n.outputs)
    assert g.nodes[5].attrs["onnxcc_clamp"][0] == g.info("gmp").quant["zero_point"][0]  # the Relu


def qoperator_max_pool(tmp_path, elem, name):
    """onnxruntime's quantizer writes a plain MaxPool on the integer tensor of a
    QOperator model (padded: the padding is the type's lowest value, never a winner)."""
    g = QGraph(elem)
    g.q("x")
    t = g.conv("x", "c", 3, 4, 3, pads=[1, 1, 1, 1])
    g.nodes.append(helper.make_node("MaxPool", [t], ["mp"], name="mp", kernel_shape=[3, 3],
                                    pads=[1, 1, 1, 1], strides=[2, 2]))
    g.nodes.append(helper.make_node("MaxPool", ["mp"], ["y"], name="y", kernel_shape=[2, 2]))
    return g.save(tmp_path, name, [1, 3, 7, 6], "y", [1, 4, 3, 2])


@pytest.mark.unit
def test_a_range_the_kernel_cannot_apply_keeps_the_group_float(tmp_path):
    """QLinearSoftmax and QLinearConcat have no output range: a Relu / Clip that narrows
    it keeps their group float (never silently dropped)."""
    c = QdqChain(U8, [1, 2, 4])
    c.op("Softmax", "sm", between=["Relu"], axis=-1)
    c.op("Concat", "cat", between=["Relu"], axis=1)
    g = optimize(import_model(c.save(tmp_path, "ranges", [1, 2, 4])), "test")
    assert {"Softmax", "Concat"} <= {n.op for n in g.nodes}


def qdq_tables(tmp_path, elem, name):
    """Tanh, HardSigmoid, HardSwish and LeakyRelu -> Relu between DQ and Q: onnxruntime
    runs them in float, onnxcc as tables of its float32 arithmetic."""
    c = QdqChain(elem, [1, 4, 6, 7])
    c.inits[0] = _init("xq_s", np.float32(0.06))  # codes spanning about +-7.5 (tanh saturates)
    c.op("Tanh", "tanh", scale=1 / 128)
    c.op("HardSigmoid", "hsig", alpha=2.7, beta=0.4)
    c.op("HardSwish", "hswish")
    c.op("LeakyRelu", "leaky", between=["Relu"], alpha=0.3)
    return c.save(tmp_path, name, [1, 4, 6, 7])


@pytest.mark.unit
def test_unary_groups_become_tables(tmp_path):
    g = optimize(import_model(qdq_tables(tmp_path, I8, "tables")), "test")
    assert [n.op for n in g.nodes] == ["QuantizeLinear", "QLinearTanh", "QLinearHardSigmoid",
                                       "QLinearHardSwish", "QLinearLeakyRelu", "DequantizeLinear"]
    assert g.nodes[4].attrs["onnxcc_clamp"][0] == g.info("leaky").quant["zero_point"][0]


def _ort(graph, feeds):
    ort = pytest.importorskip("onnxruntime")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


TABLE_FUNCTIONS = (("Tanh", {}, quant.tanh),
                   ("HardSigmoid", {"alpha": 0.37, "beta": -0.2},
                    lambda v: quant.hard_sigmoid(v, 0.37, -0.2)),
                   ("HardSwish", {}, quant.hard_swish))


@pytest.mark.unit
def test_tables_are_onnxruntime_float32_functions():
    """Each function against onnxruntime's float kernel on random floats, and each table
    against onnxruntime's DQ -> op -> Q on all 256 codes, for random quantizations."""
    x = np.concatenate([RNG.standard_normal(20000) * 4, RNG.uniform(-12, 12, 20000)]).astype(np.float32)
    for op, attrs, fn in TABLE_FUNCTIONS:
        graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attrs)], op,
                                  [helper.make_tensor_value_info("x", F, [x.size])],
                                  [helper.make_tensor_value_info("y", F, [x.size])])
        assert np.array_equal(_ort(graph, {"x": x}), fn(x)), op
        for elem in (I8, U8) * 10:
            lo, hi = (-128, 127) if elem == I8 else (0, 255)
            xq, yq = [(np.float32(RNG.uniform(0.002, 0.1)), int(RNG.integers(lo, hi + 1)))
                      for _ in range(2)]
            inits = qparams("x", *xq, elem) + qparams("y", *yq, elem)
            nodes = [helper.make_node("DequantizeLinear", ["c", "x_s", "x_z"], ["f"]),
                     helper.make_node(op, ["f"], ["g"], **attrs),
                     helper.make_node("QuantizeLinear", ["g", "y_s", "y_z"], ["y"])]
            graph = helper.make_graph(nodes, op, [helper.make_tensor_value_info("c", elem, [256])],
                                      [helper.make_tensor_value_info("y", elem, [256])], inits)
            codes = np.arange(lo, hi + 1).astype(NP[elem])
            dtype = np.dtype(NP[elem]).name
            table = quant.lookup_table(fn, xq, yq, dtype, dtype)
            assert [table[c & 0xFF] for c in codes.tolist()] == _ort(graph, {"c": codes}).tolist(), op


def qdq_reduce_mean(tmp_path, elem, name, keepdims=1, pool="ReduceMean", shape=(4, 64, 4, 4)):
    """DQ -> ReduceMean over H x W -> Q with x's own quantization (means of codes: many
    exact ties in the integers, which onnxruntime's float sum rounds either way), as the
    TorchScript exporter's GlobalAveragePool, or as the dynamo exporter's opset-18
    ReduceMean with its axes an input (keepdims=0: then [N, C])."""
    c = QdqChain(elem, list(shape))
    if pool == "GlobalAveragePool":
        c.op(pool, "mean", same=True)
        return c.save(tmp_path, name, [shape[0], shape[1], 1, 1])
    c.inits.append(_init("axes", np.array([-2, -1], np.int64)))
    c.op("ReduceMean", "mean", same=True, extra=["axes"], keepdims=keepdims)
    return c.save(tmp_path, name, [shape[0], shape[1]] + [1, 1] * keepdims, opset=18)


@pytest.mark.unit
def test_reduce_mean_plans_as_global_average_pool(tmp_path):
    """The dynamo exporter's ReduceMean and the TorchScript exporter's GlobalAveragePool:
    one QLinearGlobalAveragePool each (ReduceMean's with onnxruntime's float steps), and
    the same memory plan."""
    plans = []
    for pool, keepdims in (("GlobalAveragePool", 1), ("ReduceMean", 1), ("ReduceMean", 0)):
        g = optimize(import_model(qdq_reduce_mean(tmp_path, U8, pool, keepdims, pool)), "test")
        ops = [n.op for n in g.nodes]
        assert ops == ["QuantizeLinear", "QLinearGlobalAveragePool"] + ["Reshape"] * (1 - keepdims) \
            + ["DequantizeLinear"], ops
        assert bool(g.nodes[1].attrs.get("onnxcc_float_mean")) == (pool == "ReduceMean")
        plan = planner.plan(g, io="arena", schedule="graph")
        plans.append((plan["arena_bytes"], [s.get("overwrites") for s in plan["schedule"]
                                            if s["code"] == "kernel"]))
    assert plans[0] == plans[1] == plans[2], plans


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("armv7")])
@pytest.mark.slow
def test_groups_onnxruntime_runs_in_float_match_it_exactly(scons, tmp_path, target):
    """The integer MaxPools (QDQ and QOperator), the tables and ReduceMean's pool: the same
    integers as onnxruntime's float ops between DQ and Q."""
    means = [lambda t, e, n: qdq_reduce_mean(t, e, n, 1), lambda t, e, n: qdq_reduce_mean(
        t, e, n, 0, shape=(2, 40, 6, 7))]
    for k, make in enumerate([qdq_max_pools, qoperator_max_pool, qdq_tables] + means):
        for elem in (I8, U8):
            name = f"case{k}_{'s8' if elem == I8 else 'u8'}"
            r = scons(f"target={target}", f"model={make(tmp_path, elem, name)}", "verify")
            assert r.returncode == 0, r.stdout + r.stderr
            assert "max abs error 0," in r.stdout and "warning" not in r.stdout + r.stderr


@pytest.mark.unit
def test_no_float_kernel_between_the_first_q_and_the_last_dq(tmp_path):
    """Every group of issue 35 runs on the integers: each tensor between the first
    QuantizeLinear and the last DequantizeLinear is int8 / uint8 (shapes constants aside)."""
    for make in (qdq_max_pools, qdq_tables, qdq_reduce_mean,
                 lambda t, e, n: qdq_reduce_mean(t, e, n, 0, shape=(2, 40, 6, 7))):
        for elem in (I8, U8):
            g = optimize(import_model(make(tmp_path, elem, "chain")), "test")
            assert g.nodes[0].op == "QuantizeLinear" and g.nodes[-1].op == "DequantizeLinear"
            for n in g.nodes[1:-1]:
                assert all(g.info(t).dtype in ("int8", "uint8") for t in n.inputs[:1] + n.outputs), n

"""Classes of ONNX backend node cases (``python -m conformance``) that crashed or were
wrong, each as a small model: a weight fed as a graph input to the tactics that pack
weights, Add/Sub/Mul/Div on integer element types, a QDQ graph whose dequantized constants
fold at an opset onnx's reference evaluator does not implement, and an output too large
for QEMU's console to pass through a pipe (Tile on armv7, in qemu)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from conftest import in_qemu, onnx_model, verify_clean

from onnxcc import ops
from onnxcc.tactics import stage as tactics
from onnxcc.core.errors import OnnxccError
from onnxcc.importer.stage import import_model
from onnxcc.passes import optimize
from onnxcc.target import Cpu

RNG = np.random.default_rng(12)
F = TensorProto.FLOAT
AVX2 = Cpu(32, 16, True, 32768, ("avx2", "fma"), l2_bytes=1 << 20)


def save(path, nodes, inputs, outputs, inits=None, opset=17):
    """A model of ``nodes``; ``inputs``/``outputs``: {name: numpy array} whose dtype and
    shape type the graph's inputs and outputs."""
    def info(name, value):
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)
    graph = helper.make_graph(nodes, "case", [info(n, v) for n, v in inputs.items()],
                              [info(n, v) for n, v in outputs.items()],
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in (inits or {}).items()])
    model = onnx_model(graph, opset)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def with_testdata(folder, model_path, inputs):
    """A test_data_set folder of ``inputs`` and the outputs onnx's reference evaluator
    (the specification) computes from them; verify compares with these."""
    model = onnx.load(model_path)
    outputs = ReferenceEvaluator(model).run(None, inputs)
    folder.mkdir()
    for kind, values, infos in (("input", list(inputs.values()), model.graph.input),
                                ("output", outputs, model.graph.output)):
        for k, (value, vi) in enumerate(zip(values, infos)):
            tensor = numpy_helper.from_array(np.asarray(value), vi.name)
            (folder / f"{kind}_{k}.pb").write_bytes(tensor.SerializeToString())
    return folder


# --- a weight fed as a graph input -------------------------------------------------------

def weights_as_inputs(path):
    """Convs (grouped 2x2, 1x1, 1-D depthwise as the causal-conv-with-state cases) and a
    MatMul and a Gemm whose weights are graph inputs, not initializers; and a Conv of
    constant weights, which a forced tactic=Conv:... still runs."""
    f = np.float32
    inputs = {"x": np.zeros([1, 6, 10, 9], f), "w": np.zeros([6, 3, 2, 2], f),
              "x1": np.zeros([1, 8, 5, 7], f), "w1": np.zeros([9, 8, 1, 1], f),
              "xs": np.zeros([1, 4, 12], f), "ws": np.zeros([4, 1, 3], f),
              "xk": np.zeros([1, 3, 6, 6], f), "a": np.zeros([5, 16], f), "b": np.zeros([16, 11], f), "bt": np.zeros([11, 16], f)}
    outputs = {"y": np.zeros([1, 6, 10, 12], f), "y1": np.zeros([1, 9, 5, 7], f),
               "ys": np.zeros([1, 4, 10], f), "ym": np.zeros([5, 11], f),
               "yg": np.zeros([5, 11], f), "yk": np.zeros([1, 4, 4, 4], f)}
    nodes = [helper.make_node("Conv", ["x", "w", "bias"], ["c"], group=2, kernel_shape=[2, 2],
                              pads=[0, 2, 1, 2]),
             helper.make_node("Relu", ["c"], ["y"]),
             helper.make_node("Conv", ["x1", "w1"], ["y1"]),
             helper.make_node("Conv", ["xs", "ws"], ["ys"], group=4),
             helper.make_node("Conv", ["xk", "wk"], ["yk"]),
             helper.make_node("MatMul", ["a", "b"], ["ym"]),
             helper.make_node("Gemm", ["a", "bt", "gb"], ["yg"], transB=1)]
    inits = {"bias": RNG.standard_normal(6).astype(f), "gb": RNG.standard_normal(11).astype(f),
             "wk": RNG.standard_normal([4, 3, 3, 3]).astype(f)}
    return save(path, nodes, inputs, outputs, inits)


@pytest.mark.unit
def test_tactics_that_pack_weights_are_no_candidates_for_a_weight_input(tmp_path):
    path = str(weights_as_inputs(tmp_path / "winputs.onnx"))
    graph = optimize(import_model(path), path)
    chosen = tactics.select(graph, AVX2, "speed")
    packing = {"gemm1x1", "im2col", "implicit"}
    constant = next(n.name for n in graph.nodes if n.outputs == ["yk"])
    for n in chosen["nodes"]:  # the Conv of constant weights may pack them
        assert bool(packing & set(n["estimated_cycles"])) == (n["node"] == constant), n
    conv = next(n for n in graph.nodes if n.op == "Conv")
    with pytest.raises(OnnxccError, match=r"cannot run node .*\(tactics that can: direct\)"):
        tactics.select(graph, AVX2, "speed", {conv.name: "implicit"})


@pytest.mark.unit
def test_a_stale_tactic_that_packs_a_weight_input_is_one_clear_error(tmp_path):
    """A tactics.json written by hand (or before the weight became an input) is refused
    in generate, not a KeyError on the packed layout."""
    path = str(weights_as_inputs(tmp_path / "winputs.onnx"))
    graph = optimize(import_model(path), path)
    conv = next(n for n in graph.nodes if n.op == "Conv")
    conv.attrs["onnxcc_tactic"] = ["implicit", AVX2.as_dict()]
    with pytest.raises(OnnxccError, match="tactic 'implicit' packs 'w' at compile time, but it "
                                          "is computed at run time"):
        ops.lower(conv, graph)


@pytest.mark.parametrize("options", [["opt=speed"], ["opt=speed", "tactic=Conv:implicit"],
                                     ["opt=speed", "tactic=Conv:winograd"], ["opt=size"]])
def test_weights_as_graph_inputs_match_onnxruntime(scons, tmp_path, options):
    verify_clean(scons, weights_as_inputs(tmp_path / "winputs.onnx"), *options)


# --- integer arithmetic -------------------------------------------------------------------

INTEGER_TYPES = ["int8", "uint8", "uint16", "uint32", "uint64", "int32", "int64"]


def test_integer_add_sub_mul_div_are_exact(scons, tmp_path):
    """Every op on every integer type, broadcast, in one model; the divisors are non-zero
    and the values such that no result overflows; Div truncates toward zero."""
    nodes, inputs, outputs, feeds = [], {}, {}, {}
    for t in INTEGER_TYPES:
        info = np.iinfo(t)
        lo, hi = max(info.min, -9), min(info.max, 9)
        a = RNG.integers(lo, hi + 1, [3, 4]).astype(t)
        b = RNG.integers(1, hi + 1, [4]).astype(t)  # positive: a - b of unsigned needs a >= b
        a = np.maximum(a, hi - 1) if info.min == 0 else a
        if info.min < 0:
            b[::2] = -b[::2]
        inputs.update({f"a_{t}": a, f"b_{t}": b})
        for op in ("Add", "Sub", "Mul", "Div"):
            nodes.append(helper.make_node(op, [f"a_{t}", f"b_{t}"], [f"{op}_{t}"]))
            outputs[f"{op}_{t}"] = np.zeros([3, 4], t)
    model = save(tmp_path / "integers.onnx", nodes, inputs, outputs)
    data = with_testdata(tmp_path / "test_data_set_0", model, inputs)
    r = verify_clean(scons, model, f"testdata={data}")
    assert f"{len(outputs)} output(s)" in r.stdout  # integers: compared exactly


# --- QDQ constants folded below opset 19 --------------------------------------------------

def qdq_constants(path, opset):
    """x * DQ(int8 scale) + DQ(int8 bias): onnxruntime's quantizer writes such
    DequantizeLinear nodes of constants (a BatchNormalization's parameters) at opset 13-17."""
    s = np.array(0.02, np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"]),
             helper.make_node("DequantizeLinear", ["bq", "s", "z"], ["b"]),
             helper.make_node("Mul", ["x", "w"], ["m"]),
             helper.make_node("Add", ["m", "b"], ["y"])]
    inits = {"wq": RNG.integers(-127, 128, [4, 1, 1]).astype(np.int8),
             "bq": RNG.integers(-127, 128, [4, 1, 1]).astype(np.int8),
             "s": s, "z": np.array(0, np.int8)}
    f = np.zeros([1, 4, 3, 5], np.float32)
    return save(path, nodes, {"x": f}, {"y": f}, inits, opset), inits


@pytest.mark.unit
@pytest.mark.parametrize("opset", [13, 17])
def test_dequantized_constants_fold_below_opset_19(tmp_path, opset):
    path, inits = qdq_constants(tmp_path / "qdq.onnx", opset)
    graph = optimize(import_model(str(path)), str(path))
    assert [n.op for n in graph.nodes if n.op == "DequantizeLinear"] == []
    folded = sorted((v for v in graph.constants.values() if v.shape == (4, 1, 1)),
                    key=lambda v: float(v.ravel()[0]))
    want = sorted((inits[k].astype(np.float32) * inits["s"] for k in ("wq", "bq")),
                  key=lambda v: float(v.ravel()[0]))
    assert len(folded) == 2
    for got, expected in zip(folded, want):
        np.testing.assert_array_equal(got, expected)


def test_dequantized_constants_below_opset_19_match_onnxruntime(scons, tmp_path):
    verify_clean(scons, qdq_constants(tmp_path / "qdq.onnx", 13)[0])


def test_dequantized_weights_of_a_matmul_match_onnxruntime_in_float(scons, tmp_path):
    """Weight-only quantization: onnxruntime's reference must not quantize the activations
    (it rewrites DequantizeLinear -> MatMul into MatMulNBits, 8-bit activations by default)."""
    nodes = [helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"]),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    inits = {"wq": RNG.integers(-127, 128, [16, 8]).astype(np.int8),
             "s": np.array(0.01, np.float32), "z": np.array(0, np.int8)}
    model = save(tmp_path / "wq.onnx", nodes, {"x": np.zeros([3, 16], np.float32)},
                 {"y": np.zeros([3, 8], np.float32)}, inits, opset=13)
    verify_clean(scons, model)


# --- large outputs from QEMU ----------------------------------------------------------------

@pytest.mark.emulated
def test_a_large_output_verifies_on_armv7(scons, tmp_path):
    """Tile of [2, 3, 4, 5] by [7, 6, 4, 2]: 160 KB of output, printed by the harness
    through QEMU's semihosting console (a pipe dropped most of it)."""
    nodes = [helper.make_node("Tile", ["x", "repeats"], ["y"])]
    inits = {"repeats": np.array([7, 6, 4, 2], np.int64)}
    model = save(tmp_path / "tile.onnx", nodes, {"x": np.zeros([2, 3, 4, 5], np.float32)},
                 {"y": np.zeros([14, 18, 16, 10], np.float32)}, inits)
    verify_clean(scons, model, "target=armv7")


# --- global pools of one vector per channel -------------------------------------------------

def _verify_global_pools(scons, tmp_path, target, shapes):
    """GlobalMaxPool and GlobalAveragePool of inputs of ``shapes``, forced `vector`, verified."""
    nodes, inputs, outputs = [], {}, {}
    for k, shape in enumerate(shapes):
        inputs[f"x{k}"] = np.zeros(shape, np.float32)
        for op in ("GlobalMaxPool", "GlobalAveragePool"):
            nodes.append(helper.make_node(op, [f"x{k}"], [f"{op}{k}"]))
            outputs[f"{op}{k}"] = np.zeros(shape[:2] + [1, 1], np.float32)
    model = save(tmp_path / "gpools.onnx", nodes, inputs, outputs)
    r = verify_clean(scons, model, f"target={target}", "tactic=GlobalMaxPool:vector,"
                                                 "GlobalAveragePool:vector")
    assert f"{len(outputs)} output(s)" in r.stdout


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("aarch64")])
def test_global_pools_of_one_vector_per_channel_compile(scons, tmp_path, target):
    """Channels of 9, 8 and 5 elements: one vector (of 8 or 4 floats) and maybe a tail,
    no vector loop (its integer vector type was not declared: test_globalmaxpool_precomputed)."""
    _verify_global_pools(scons, tmp_path, target, [[1, 2, 3, 3], [1, 3, 2, 4], [2, 2, 1, 5]])


@pytest.mark.parametrize("target", ["x86_64", "x86_64-avx512", *in_qemu("aarch64")])
def test_global_pools_of_many_vectors_per_channel(scons, tmp_path, target):
    """Channels of 4 vectors on (four accumulators, then the lane sum's halves): 63, 67 and
    70 elements leave whole vectors after the blocks of four and a tail on every width, 16,
    32 and 64 are one block exactly on 4, 8 and 16 lanes; the inputs are random, so that a
    block or lane left out of the sum shows."""
    _verify_global_pools(scons, tmp_path, target, [[1, 3, 7, 9], [2, 5, 1, 67], [1, 2, 4, 4],
                                                   [1, 2, 4, 8], [1, 2, 8, 8], [1, 3, 7, 10]])

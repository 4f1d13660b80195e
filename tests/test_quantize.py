"""quantize=int8 (float model in, int8 library out) and validate (a data set run on the
target, measured against the float and int8 models under onnxruntime)."""

import json
import os
import shutil
import sys

import numpy as np
import onnx
import pytest
from conftest import MODELS, REPO, in_qemu
from onnx import numpy_helper
from test_errors import assert_one_clear_line

from onnxcc.core import dataset
from onnxcc.core.errors import OnnxccError
from onnxcc.core.onnx_io import load_graph

KWS = os.path.join(MODELS, "kws.onnx")
KWS_SHAPE = (1, 1, 49, 10)


def _write_sets(folder, calibration=24, validation=100, seed=1):
    """A calibration folder in every form a data set takes (a batched .npy, one-sample
    .npy files, a test_data_set_N folder) and a validation set with labels."""
    rng = np.random.default_rng(seed)

    def draw(*n):
        return rng.uniform(-1, 1, (*n, *KWS_SHAPE[1:])).astype(np.float32)
    calib = folder / "calib"
    calib.mkdir()
    np.save(calib / "batch.npy", draw(calibration - 3))
    for k in range(2):
        np.save(calib / f"one_{k}.npy", draw(1))
    case = calib / "test_data_set_0"
    case.mkdir()
    (case / "input_0.pb").write_bytes(numpy_helper.from_array(draw(1)).SerializeToString())
    val = folder / "val"
    val.mkdir()
    np.savez(val / "samples.npz", input=draw(validation))
    np.save(val / "labels.npy", rng.integers(0, 12, validation))
    return calib, val


@pytest.mark.parametrize("target", in_qemu("armv7"))
def test_quantize_then_validate_on_the_target(scons, tmp_path, target):
    """The float keyword spotter, quantized on a calibration folder, runs 100 samples in
    qemu: the C model equals the int8 model under onnxruntime on every sample, is close to
    the float model, and the per-layer table names the quantized activations."""
    calib, val = _write_sets(tmp_path)
    args = (f"target={target}", f"model={KWS}", "quantize=int8", f"calibration={calib}",
            f"data={val}")
    r = scons(*args, "validate")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[quantize] kws: int8 (QDQ, per-channel weights), minmax calibration on 24 samples of calib" in r.stdout
    assert f"[validate] kws on {target}: 100 samples, labelled" in r.stdout
    assert "per layer, int8 against float under onnxruntime, worst first" in r.stdout
    folder = scons.build_dir / target / "kws"
    report = json.loads((folder / "validate" / "validate.json").read_text())
    out = report["outputs"][0]
    assert report["samples"] == 100 and out["shape"] == [1, 12]
    exact = out["against"]["int8 (onnxruntime)"]
    assert exact["rmse"] == 0 and exact["top1_agreement"] == 1.0 and exact["cosine"] == 1.0
    close = out["against"]["float (onnxruntime)"]
    assert 0 < close["l2r"] < 0.1 and close["cosine"] > 0.99
    assert out["accuracy"]["c"] == out["accuracy"]["int8"]
    assert len(report["layers"]) > 5 and all(row["l2r"] < 0.2 for row in report["layers"])
    assert "Validation" in (folder / "report.html").read_text()
    quantized = onnx.load(folder / "quantized.onnx")
    ops = {n.op_type for n in quantized.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    # nothing changed: the quantized model is not made again
    again = scons(*args)
    assert again.returncode == 0 and "[quantize]" not in again.stdout, again.stdout


def test_quantize_reruns_when_its_data_or_options_change(scons, tmp_path):
    calib, _ = _write_sets(tmp_path, calibration=8)
    args = (f"model={KWS}", "quantize=int8", f"calibration={calib}")
    assert "[quantize] kws" in scons(*args).stdout
    model = scons.build_dir / "x86_64" / "kws" / "quantized.onnx"
    first = model.read_bytes()
    assert "[quantize]" not in scons(*args).stdout
    r = scons(*args, "calibrate=percentile")
    assert "percentile calibration" in r.stdout, r.stdout + r.stderr
    np.save(calib / "one_0.npy", np.full((1, *KWS_SHAPE[1:]), 3.0, np.float32))
    r = scons(*args)
    assert "minmax calibration on 8 samples" in r.stdout, r.stdout + r.stderr
    assert model.read_bytes() != first  # a wider range: other scales
    r = scons(f"model={KWS}", "quantize=int8", "verify")  # no data: random, and says so
    assert r.returncode == 0, r.stdout + r.stderr
    assert "16 random inputs: give calibration=FOLDER of real inputs" in r.stdout


def test_validate_finds_a_scale_off_by_ten(scons, tmp_path):
    """An int8 model whose one DequantizeLinear scale is 10 times too large validates
    against its float model (reference=) with a large error, that layer first."""
    calib, val = _write_sets(tmp_path, calibration=8, validation=20)
    good = scons(f"model={KWS}", "quantize=int8", f"calibration={calib}", f"data={val}",
                 "validate")
    assert good.returncode == 0, good.stdout + good.stderr
    folder = scons.build_dir / "x86_64" / "kws"
    good_l2r = json.loads((folder / "validate" / "validate.json").read_text())[
        "outputs"][0]["against"]["float (onnxruntime)"]["l2r"]
    model = onnx.load(folder / "quantized.onnx")
    dq = next(n for n in model.graph.node if n.op_type == "DequantizeLinear"
              and n.input[0].startswith("relu_4"))
    scale = next(i for i in model.graph.initializer if i.name == dq.input[1])
    wrong = numpy_helper.from_array(numpy_helper.to_array(scale) * 10, "wrong_scale")
    model.graph.initializer.append(wrong)
    dq.input[1] = "wrong_scale"
    bad = tmp_path / "bad.onnx"
    onnx.save(model, bad)
    r = scons(f"model={bad}", f"reference={KWS}", f"data={val}", "validate")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads((scons.build_dir / "x86_64" / "bad" / "validate" / "validate.json").read_text())
    bad_l2r = report["outputs"][0]["against"]["float (onnxruntime)"]["l2r"]
    assert bad_l2r > 10 * good_l2r and bad_l2r > 0.3, (good_l2r, bad_l2r)
    assert report["layers"][0]["tensor"] == "relu_4" and report["layers"][0]["l2r"] > 1


def test_validate_of_a_float_model_measures_c_against_onnxruntime(scons, tmp_path):
    _, val = _write_sets(tmp_path, calibration=4, validation=10)
    r = scons(f"model={KWS}", f"data={val}", "samples=4", "validate")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[validate] kws on x86_64: 4 samples, labelled" in r.stdout
    report = json.loads((scons.build_dir / "x86_64" / "kws" / "validate" / "validate.json").read_text())
    m = report["outputs"][0]["against"]["float (onnxruntime)"]
    assert m["l2r"] < 1e-5 and list(report["outputs"][0]["against"]) == ["float (onnxruntime)"]
    assert report["layers"] == []


@pytest.mark.parametrize("args, needles", [
    (("quantize=int4",), ("quantize=int4 is not one of int8",)),
    (("quantize=int8", "calibrate=best"), ("calibrate=best is not one of minmax, entropy, percentile",)),
    (("validate",), ("validate needs data=FOLDER",)),
    (("quantize=int8", "keep_float=nope"), ("keep_float= names 'nope'", "no node")),
    (("quantize=int8", "calibration=nowhere"), ("nowhere: no such data folder or file",)),
    (("samples=few", "data=models", "validate"), ("samples=few is not a whole number",)),
])
def test_bad_quantize_and_validate_options_are_one_line(scons, args, needles):
    assert_one_clear_line(scons(f"model={KWS}", *args), *needles)


def test_quantizing_an_int8_model_or_validating_on_bad_data_is_one_line(scons, tmp_path):
    assert_one_clear_line(scons(f"model={MODELS}/int8/kws_qdq.onnx", "quantize=int8"),
                          "kws_qdq.onnx: is already quantized", "give the float model")
    np.save(tmp_path / "x.npy", np.zeros((3, 1, 49, 11), np.float32))
    assert_one_clear_line(scons(f"model={KWS}", f"data={tmp_path / 'x.npy'}", "validate"),
                          "x.npy: input 0 ('input') is float32 of shape [3, 1, 49, 11]",
                          "a leading count")
    assert not (scons.build_dir / "x86_64" / "kws" / "validate").exists()


# --- data sets ---------------------------------------------------------------------------

SPEC = [dataset.Input("x", "float32", (1, 3))]


@pytest.mark.unit
def test_a_data_set_is_files_and_folders_in_name_order(tmp_path):
    rows = np.arange(30, dtype=np.float32).reshape(10, 1, 3)
    np.save(tmp_path / "s10.npy", rows[9])           # one sample, shape (1, 3)
    np.save(tmp_path / "s2.npy", rows[1:9])          # eight, [N, 1, 3]
    np.save(tmp_path / "s1.npy", rows[0].reshape(3)[None])  # one, [1, 3]
    (tmp_path / "notes.txt").write_text("not data")
    found, labels = dataset.samples(str(tmp_path), SPEC)
    assert labels is None
    assert np.array_equal(np.stack([s[0] for s in found]), rows)  # s1, s2, s10
    assert len(dataset.samples(str(tmp_path), SPEC, limit=3)[0]) == 3
    np.save(tmp_path / "labels.npy", np.arange(10))
    assert list(dataset.samples(str(tmp_path), SPEC)[1]) == list(range(10))
    np.save(tmp_path / "labels.npy", np.arange(4))
    with pytest.raises(OnnxccError, match="holds 4 int64 values for 10 samples"):
        dataset.samples(str(tmp_path), SPEC)


@pytest.mark.unit
def test_a_data_set_refuses_what_does_not_fit(tmp_path):
    with pytest.raises(OnnxccError, match="holds no samples"):
        dataset.samples(str(tmp_path), SPEC)
    np.savez(tmp_path / "two.npz", x=np.zeros((2, 3), np.float32), y=np.zeros((2, 3)))
    with pytest.raises(OnnxccError, match="holds 'x', 'y'; the model's inputs are 'x'"):
        dataset.samples(str(tmp_path / "two.npz"), SPEC)
    two = [dataset.Input("a", "float32", (2,)), dataset.Input("b", "float32", (2,))]
    np.savez(tmp_path / "uneven.npz", a=np.zeros((3, 2), np.float32), b=np.zeros((4, 2), np.float32))
    with pytest.raises(OnnxccError, match="different numbers of samples"):
        dataset.samples(str(tmp_path / "uneven.npz"), two)
    shutil.rmtree(tmp_path)


# --- io_dtype=int8: the caller quantizes the inputs and dequantizes the outputs ----------

def test_integer_io_takes_int8_and_says_its_scales(scons, tmp_path):
    """quantize=int8 io_dtype=int8: the C API takes int8 buffers, the header gives the
    scales and zero points, verify is exact, and validate quantizes the float data set
    the way a caller would (and measures in real values)."""
    calib, val = _write_sets(tmp_path, calibration=8, validation=20)
    r = scons(f"model={KWS}", "quantize=int8", "io_dtype=int8", f"calibration={calib}",
              f"data={val}", "verify", "validate")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "int8 inputs and outputs" in r.stdout and "max abs error 0," in r.stdout
    folder = scons.build_dir / "x86_64" / "kws"
    header = (folder / "kws.h").read_text()
    assert '#define KWS_INPUT0_BYTES 490u /* "input": int8 [1, 1, 49, 10] */' in header
    for macro in ("KWS_INPUT0_SCALE", "KWS_INPUT0_ZERO_POINT", "KWS_OUTPUT0_SCALE",
                  "KWS_OUTPUT0_ZERO_POINT"):
        assert f"#define {macro} " in header
    report = json.loads((folder / "validate" / "validate.json").read_text())
    against = report["outputs"][0]["against"]
    assert against["int8 (onnxruntime)"]["rmse"] == 0
    assert against["float (onnxruntime)"]["l2r"] < 0.1 and report["layers"]


def test_integer_io_of_a_model_that_is_not_quantized_is_one_line(scons):
    assert_one_clear_line(scons(f"model={KWS}", "io_dtype=int8"),
                          "io_dtype=int8: input 'input' is not read by QuantizeLinear",
                          "quantize=int8 makes one")
    assert_one_clear_line(scons(f"model={KWS}", "io_dtype=int4"),
                          "io_dtype=int4 is not one of float, int8")


# --- real int8 networks: both torch exporters' op patterns, quantized by the build --------

NETWORKS = ["mobilenet_v2_035_96_ts13", "mobilenet_v2_035_96_dyn18",
            "mobilenet_v3_small_96_ts14", "mobilenet_v3_small_96_dyn18"]


@pytest.fixture(scope="module")
def networks(tmp_path_factory):
    """The zoo's MobileNets (benchmarks/zoo_models.py) and a calibration set for them."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import zoo_models
    folder = tmp_path_factory.mktemp("networks")
    paths = dict(zip(NETWORKS, zoo_models.write(str(folder), NETWORKS)))
    rng = np.random.default_rng(0)
    np.save(folder / "calibration.npy", (rng.standard_normal((8, 1, 3, 96, 96)) * 0.6).astype(np.float32))
    return paths, folder / "calibration.npy"


#: each network natively and on one emulated target, each emulated target both families
#: (the two exporters' forms compile to the same graph: test_both_exporters_forms_plan_the_same;
#: benchmarks/int8_networks.py runs all four on armv7)
NETWORK_TARGETS = [(n, "x86_64") for n in NETWORKS] + in_qemu(
    *zip(NETWORKS, ["armv7", "riscv32", "riscv32", "armv7"]))


@pytest.mark.slow
@pytest.mark.parametrize("network, target", NETWORK_TARGETS)
def test_int8_networks_are_exact_and_integer_only(scons, networks, network, target):
    """MobileNetV2 0.35 and MobileNetV3-small (hard-swish, squeeze-excitation), from the
    dynamo and the TorchScript exporter, quantized by quantize=int8: exact against
    onnxruntime, and every kernel between the first QuantizeLinear and the last
    DequantizeLinear an integer one."""
    paths, calib = networks
    r = scons(f"target={target}", f"model={paths[network]}", "quantize=int8",
              f"calibration={calib}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 compared exactly), max abs error 0," in r.stdout
    folder = scons.build_dir / target / network
    g = load_graph(str(folder / "optimized.onnx"), with_values=False)
    assert g.nodes[0].op == "QuantizeLinear" and g.nodes[-1].op == "DequantizeLinear"
    for n in g.nodes[1:-1]:
        assert all(g.info(t).dtype in ("int8", "uint8") for t in n.inputs[:1] + n.outputs), n


@pytest.mark.slow
@pytest.mark.parametrize("family", ["mobilenet_v2_035_96", "mobilenet_v3_small_96"])
def test_both_exporters_forms_plan_the_same(scons, networks, family):
    """The dynamo form (ReduceMean, Reshape, BatchNormalization) and the TorchScript form
    (GlobalAveragePool, Flatten, folded BatchNorm) of a network: the same kernels, arena."""
    paths, calib = networks
    plans = []
    for form in ("ts13" if "v2" in family else "ts14", "dyn18"):
        name = f"{family}_{form}"
        r = scons(f"model={paths[name]}", "quantize=int8", f"calibration={calib}")
        assert r.returncode == 0, r.stdout + r.stderr
        plan = json.loads((scons.build_dir / "x86_64" / name / "plan.json").read_text())
        plans.append(([p["bytes"] for p in plan["pools"]],
                      sorted(s["op"] for s in plan["schedule"] if s["op"] not in ("Reshape", "Flatten"))))
    assert plans[0] == plans[1]


def _shared_tensor_groups(path, elem, op):
    """x -> Q -> DQ (read by two groups: ``op`` with a Conv's output, and the Conv): the
    pattern of a residual block. On x86 onnxruntime fuses the ``op`` group only when the
    types its QDQS8ToU8 transform leaves agree: with int8 it runs the float ops."""
    from onnx import TensorProto as T
    from onnx import helper as h
    rng = np.random.default_rng(5)
    zp = np.int8 if elem == T.INT8 else np.uint8
    inits = [numpy_helper.from_array(np.array(s, np.float32), n) for n, s in
             (("xs", 0.031), ("cs", 0.027), ("ys", 0.043), ("ws", 0.011))]
    inits += [numpy_helper.from_array(np.array(z, zp), n) for n, z in
              (("xz", 3 if zp is np.int8 else 131), ("cz", -5 if zp is np.int8 else 120),
               ("yz", 7 if zp is np.int8 else 128))]
    inits += [numpy_helper.from_array(rng.integers(-100, 100, (4, 4, 1, 1)).astype(np.int8), "w"),
              numpy_helper.from_array(np.array(0, np.int8), "wz")]
    nodes = [h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             h.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"]),
             h.make_node("Conv", ["xd", "wd"], ["c"]),
             h.make_node("QuantizeLinear", ["c", "cs", "cz"], ["cq"]),
             h.make_node("DequantizeLinear", ["cq", "cs", "cz"], ["cd"]),
             *([h.make_node("GlobalAveragePool", ["xd"], ["p"]),
                h.make_node("QuantizeLinear", ["p", "cs", "cz"], ["pq"]),
                h.make_node("DequantizeLinear", ["pq", "cs", "cz"], ["pd"]),
                h.make_node("Mul", ["cd", "pd"], ["s"])] if op == "GlobalAveragePool"
              else [h.make_node(op, ["cd", "xd"], ["s"])]),
             h.make_node("QuantizeLinear", ["s", "ys", "yz"], ["yq"]),
             h.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 6, 6])],
                         [h.make_tensor_value_info("y", T.FLOAT, [1, 4, 6, 6])], initializer=inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("op", ["Add", "Mul", "GlobalAveragePool"])
def test_groups_onnxruntime_leaves_unfused_compute_its_float_steps(scons, tmp_path, op):
    """int8: the Add / Mul / GlobalAveragePool (squeeze-excitation's) of a shared tensor
    computes onnxruntime's float ops on the codes (and stays an integer kernel); uint8:
    its fused QLinearAdd / QLinearMul / QLinearGlobalAveragePool."""
    from onnx import TensorProto as T
    for elem, steps in ((T.INT8, True), (T.UINT8, False)):
        model = _shared_tensor_groups(tmp_path / f"net{elem}.onnx", elem, op)
        for seed in range(3):
            x = np.random.default_rng(seed).uniform(-4, 4, (1, 4, 6, 6)).astype(np.float32)
            np.save(tmp_path / "x.npy", x)
            r = scons(f"model={model}", f"testdata={tmp_path / 'x.npy'}", "verify")
            assert r.returncode == 0, r.stdout + r.stderr
            assert "max abs error 0," in r.stdout
        kernels = (scons.build_dir / "x86_64" / f"net{elem}" / f"net{elem}_kernels.c").read_text()
        marker = "qglobal_avgpool_s8_4x36_f32" if op == "GlobalAveragePool" else f"qbinary_{op.lower()}_f32_"
        assert (marker in kernels) == steps, kernels[:3000]


def _two_input_group(path, op):
    """x -> Q -> DQ and z -> Q -> DQ into ``op`` -> Q -> DQ, int8: onnxruntime fuses the
    group on uint8 codes (its QDQS8ToU8 transform) and adds zero points in float."""
    from onnx import TensorProto as T
    from onnx import helper as h
    inits = [numpy_helper.from_array(np.array(s, np.float32), n) for n, s in
             (("xs", 0.0231), ("zs", 0.0187), ("ys", 0.0297 if op == "Add" else 0.0123))]
    inits += [numpy_helper.from_array(np.array(z, np.int8), n) for n, z in
              (("xz", 3), ("zz", -21), ("yz", 9))]
    nodes = [h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             h.make_node("QuantizeLinear", ["z", "zs", "zz"], ["zq"]),
             h.make_node("DequantizeLinear", ["zq", "zs", "zz"], ["zd"]),
             h.make_node(op, ["xd", "zd"], ["s"]),
             h.make_node("QuantizeLinear", ["s", "ys", "yz"], ["yq"]),
             h.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    io = [h.make_tensor_value_info(n, T.FLOAT, [4, 64, 64]) for n in ("x", "z", "y")]
    model = h.make_model(h.make_graph(nodes, "g", io[:2], io[2:], initializer=inits),
                         opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("op", ["Add", "Mul"])
def test_int8_groups_onnxruntime_fuses_on_uint8_codes_match_it(scons, tmp_path, op):
    """16,384 outputs per seed, uniform over the codes: any rounding difference of the
    zero points' float arithmetic shows."""
    model = _two_input_group(tmp_path / "net.onnx", op)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        np.savez(tmp_path / "x.npz", x=rng.uniform(-3, 3, (4, 64, 64)).astype(np.float32),
                 z=rng.uniform(-2.4, 2.4, (4, 64, 64)).astype(np.float32))
        r = scons(f"model={model}", f"testdata={tmp_path / 'x.npz'}", "verify")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "max abs error 0," in r.stdout
    kernels = (scons.build_dir / "x86_64" / "net" / "net_kernels.c").read_text()
    assert f"qbinary_{op.lower()}_u8_s8" in kernels

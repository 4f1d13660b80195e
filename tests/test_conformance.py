"""ONNX's backend node tests through the whole pipeline (python -m conformance): a sample
of every operator family on the host and a smaller one on armv7 in qemu (the full runs
are documented commands, see README.md), cases onnxcc must refuse with their reason, and
the runner's own pieces."""

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import REPO

sys.path.insert(0, REPO)
from conformance import cases as suites  # noqa: E402
from conformance import runner  # noqa: E402
from conformance.report import classify, summary_markdown, tally  # noqa: E402

HOST_SAMPLE = """
    slice_neg_steps gather_negative_indices split_variable_parts_2d_opset18 tile
    expand_dim_changed where_long_example cast_FLOAT_to_DOUBLE constantofshape_int_zeros
    shape_start_1_end_negative_1 range_float_type_positive_delta
    resize_downsample_scales_cubic_antialias resize_upsample_sizes_nearest_floor_align_corners
    reduce_log_sum_exp_do_not_keepdims_random reduce_sum_empty_set
    argmax_negative_axis_keepdims_random_select_last_index erf round isinf_negative
    pow_types_int64_float32 mod_mixed_sign_int8 bitshift_right_uint16 equal_bcast
    and_bcast4v4d prelu_broadcast gelu_tanh_2 mish clip_default_int8_min sum_example
    logsoftmax_axis_1 hardmax_example instancenorm_epsilon group_normalization_example lrn
    lpnormalization_default batchnorm_epsilon layer_normalization_3d_axis1_epsilon
    rms_normalization_3d_axis1_epsilon convtranspose_pads depthtospace_crd_mode_example
    lppool_2d_pads cumsum_1d_reverse_exclusive top_k_smallest einsum_batch_diagonal
    lstm_with_peepholes gru_seq_length simple_rnn_batchwise reflect_pad tril_neg
    onehot_negative_indices scatternd_add gathernd_example_int32_batch_dim1
    dropout_default_mask eyelike_with_dtype sce_mean_weight center_crop_pad_crop_and_pad
    hannwindow attention_4d bitcast_float32_to_int32 reversesequence_time gridsample_bicubic
    dft_irfft col2im_pads det_nd
""".split()
ARMV7_SAMPLE = """
    slice_neg_steps gather_negative_indices resize_upsample_scales_linear
    reduce_log_sum_exp_do_not_keepdims_random argmax_negative_axis_keepdims_random_select_last_index
    convtranspose_pads cumsum_1d_reverse_exclusive einsum_batch_diagonal lstm_with_peepholes
    mod_mixed_sign_int8 sce_mean_weight top_k_smallest
""".split()
#: cases onnxcc must refuse, and what the reason says
REFUSED = {
    "nonzero_example": "output shape depends on input values",
    "cast_FLOAT_to_FLOAT16": "element type float16",
    "if": "control flow",
    "adam": "out of scope (training)",
    "bernoulli": "out of scope (random)",
}


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("conformance")


def conformance(work, target, names):
    """Run python -m conformance on node tests ``names``; (exit status, {name: result})."""
    r = subprocess.run([sys.executable, "-m", "conformance", "--suite", "node", "--target", target,
                        "--cases", f"node/test_({'|'.join(names)})$", "--work", str(work)],
                       cwd=REPO, capture_output=True, text=True, timeout=1800)
    with open(work / target / "results.json") as f:
        results = json.load(f)
    return r, {name: results[f"node/test_{name}"] for name in names}


@pytest.mark.slow
def test_host_sample_passes(work):
    r, results = conformance(work, "x86_64", HOST_SAMPLE)
    failed = {n: v["message"] for n, v in results.items() if v["status"] != "pass"}
    assert not failed and r.returncode == 0, failed or r.stdout + r.stderr
    assert "[conformance]" in r.stdout and "pass" in (work / "x86_64" / "summary.md").read_text()


@pytest.mark.slow
@pytest.mark.emulated
def test_armv7_sample_passes_in_qemu(work):
    r, results = conformance(work, "armv7", ARMV7_SAMPLE)
    failed = {n: v["message"] for n, v in results.items() if v["status"] != "pass"}
    assert not failed and r.returncode == 0, failed or r.stdout + r.stderr


def test_refused_cases_say_why(work):
    r, results = conformance(work, "x86_64", list(REFUSED))
    assert r.returncode == 0, r.stdout + r.stderr  # no crash, nothing untracked
    for name, why in REFUSED.items():
        op = suites.case_op("node", f"test_{name}", str(work / "generated" / "node"))
        status, reason = classify(f"node/test_{name}", op, results[name], [])
        assert status == "unsupported" and why in reason, (name, reason)


def _write_case(folder, nodes, inputs, outputs, values):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    folder.mkdir()
    onnx.save(model, folder / "model.onnx")
    data = folder / "test_data_set_0"
    data.mkdir()
    for k, (name, value) in enumerate(values.items()):
        (data / f"input_{k}.pb").write_bytes(numpy_helper.from_array(value, name).SerializeToString())


@pytest.mark.unit
def test_bind_parameters_makes_parameter_inputs_constants(tmp_path):
    _write_case(tmp_path / "src",
                [helper.make_node("Slice", ["x", "starts", "ends"], ["s"]),
                 helper.make_node("Add", ["s", "ends_as_data"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"]),
                 helper.make_tensor_value_info("starts", TensorProto.INT64, [1]),
                 helper.make_tensor_value_info("ends", TensorProto.INT64, [1]),
                 helper.make_tensor_value_info("ends_as_data", TensorProto.FLOAT, [2])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                {"x": np.arange(5, dtype=np.float32), "starts": np.array([1]),
                 "ends": np.array([3]), "ends_as_data": np.ones(2, np.float32)})
    bound, shapes = suites.bind_parameters(str(tmp_path / "src"), str(tmp_path / "dst"))
    model = onnx.load(tmp_path / "dst" / "model.onnx")
    # starts and ends feed Slice's parameters: constants now; the others stay inputs
    assert bound == ["starts", "ends"] and shapes == "x:5"
    assert [i.name for i in model.graph.input] == ["x", "ends_as_data"]
    assert {i.name: numpy_helper.to_array(i).tolist() for i in model.graph.initializer} == \
        {"starts": [1], "ends": [3]}
    data = sorted(p.name for p in (tmp_path / "dst" / "test_data_set_0").iterdir())
    assert data == ["input_0.pb", "input_1.pb"]
    second = onnx.load_tensor(str(tmp_path / "dst" / "test_data_set_0" / "input_1.pb"))
    assert second.name == "ends_as_data"


@pytest.mark.unit
@pytest.mark.parametrize("message, status, start", [
    ("internal error in onnxcc's plan stage: KeyError: 'x'", "crash", "internal error"),
    ("m.onnx: node 'a' uses op Det, which onnxcc does not support (supported ops: Add, Sub)",
     "unsupported", "unsupported op: m.onnx: node 'a' uses op Det"),
    ("[verify] m on x86_64: 1 output(s): MISMATCH in output(s) 0", "fail", "UNTRACKED"),
])
def test_classify(message, status, start):
    got_status, reason = classify("node/test_x", "Det", {"status": "error", "message": message}, [])
    assert got_status == status and reason.startswith(start) and "supported ops" not in reason


@pytest.mark.unit
def test_classify_names_a_tracked_defect():
    defects = [{"name": "rounded test data", "cases": ["node/test_avg*"]}]
    status, reason = classify("node/test_avgpool", "AveragePool",
                              {"status": "error", "message": "MISMATCH"}, defects)
    assert status == "fail" and reason.startswith("known defect 'rounded test data'")


@pytest.mark.unit
def test_summary_counts_per_op_and_total():
    cases = [suites.Case("node", name, "", op=op, bound=bound) for name, op, bound in
             (("test_a", "Relu", []), ("test_b", "Relu", ["k"]), ("test_c", "Det", []))]
    results = {"node/test_a": {"status": "pass"}, "node/test_b": {"status": "pass"},
               "node/test_c": {"status": "error", "message": "m.onnx: node 'd' uses op Det, "
                                                             "which onnxcc does not support"}}
    per_op, rows = tally(cases, results, [])
    text = summary_markdown("t", ["node"], {"node": per_op}, rows, [])
    assert "| Relu | 2 | 0 | 0 | 0 | 2 |" in text and "| Det | 0 | 1 | 0 | 0 | 1 |" in text
    assert "| **total** | **2** | **1** | **0** | **0** | **3** |" in text
    assert "1 of the passing cases had parameter inputs bound" in text


@pytest.mark.unit
def test_runner_resumes_without_running_what_has_results(tmp_path):
    cases = [suites.Case("node", "test_a", str(tmp_path))]
    results = {"node/test_a": {"status": "pass"}}
    saved = []
    runner.run(cases, "x86_64", str(tmp_path / "build"), results, 2, 24,
               lambda: saved.append(1), lambda *a: None)
    assert saved == [] and results == {"node/test_a": {"status": "pass"}}

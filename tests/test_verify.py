"""verify itself: the per-element comparison, the tolerance it derives from the graph, and
the harness's guards around every buffer (a model that writes outside them fails)."""

import fake_model
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper, save

from conftest import save_graph
from onnxcc.verbs import tolerance, verify
from onnxcc.core.errors import OnnxccError
from onnxcc.importer.stage import import_model
from test_errors import assert_one_clear_line, files_under


def _check(want, got, **kw):
    return verify.compare([np.asarray(want, np.float32)],
                          [np.asarray(got, np.float32).tobytes()], **kw)[0]


@pytest.mark.unit
def test_a_wrong_small_element_beside_large_ones_fails():
    want = np.array([1000.0, 0.001, -3.0], np.float32)
    got = want.copy()
    got[1] = 0.002  # 0.1 % of the largest value: the old rule (rtol * largest) let it pass
    check = _check(want, got)
    assert not check.ok
    assert check.worst == ((1,), pytest.approx(0.002), pytest.approx(0.001))
    assert "output 0[1] is 0.002" in check.describe(0)


@pytest.mark.unit
def test_float32_rounding_passes_and_the_bound_is_per_element():
    want = np.array([1000.0, 0.001, -3.0, 0.0], np.float32)
    assert _check(want, want * np.float32(1 + 5e-5)).ok  # relative part: 1e-4 * |want|
    assert _check(want, want + np.float32(9e-6) * (want == 0)).ok  # absolute part near zero
    assert not _check(want, want + np.float32(2e-5) * (want == 0)).ok
    assert not _check(want, want * np.float32(1 + 2e-4)).ok


@pytest.mark.unit
def test_special_values_must_match_exactly():
    assert _check([np.inf, np.nan, 1.0], [np.inf, np.nan, 1.0]).ok
    assert not _check([np.inf, 1.0], [3e38, 1.0]).ok
    assert not _check([1.0, 2.0], [1.0, np.nan]).ok
    assert not _check([0.0], [np.inf]).ok


@pytest.mark.unit
def test_integer_outputs_and_wrong_sizes():
    exp = [np.array([1, -2, 3], np.int8)]
    assert verify.compare(exp, [exp[0].tobytes()])[0].ok
    bad = verify.compare(exp, [np.array([1, -1, 3], np.int8).tobytes()])[0]
    assert not bad.ok and bad.worst == ((1,), -1, -2)
    short = verify.compare(exp, [b"\x01"])[0]
    assert not short.ok and "1 bytes printed, 3 expected" in short.describe(0)


@pytest.mark.unit
def test_a_mismatch_is_onnxruntimes_own_only_where_each_element_is_one_of_its_values():
    """The fuzzer's graph ga69531f914 (an int8 2x2 AveragePool of ties): onnxruntime with
    and without its graph optimizations differ on two elements, and onnxcc gives one of
    their values on each: onnxruntime disagrees with itself. An element neither gave, or a
    wrong size, is onnxcc's."""
    optimized = [np.array([[0, 56, 3]], np.int8)]
    plain = [np.array([[-1, 57, 3]], np.int8)]
    exact = [True]
    tol = [(1e-5, 1e-6)]
    assert verify.matches_either(optimized, plain, [np.array([[-1, 56, 3]], np.int8).tobytes()], tol, exact)
    assert not verify.matches_either(optimized, plain, [np.array([[-1, 56, 4]], np.int8).tobytes()], tol, exact)
    assert not verify.matches_either(optimized, plain, [b"\x00"], tol, exact)
    assert not verify.matches_either(optimized, [], [optimized[0].tobytes()], tol, exact)


def _matmul_model(path, k):
    w = numpy_helper.from_array(np.ones((k, 3), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["x"], ["r"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, k])],
        [helper.make_tensor_value_info("m", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, k])], [w])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


@pytest.mark.unit
def test_tolerance_grows_with_the_reduction_length_not_with_values(tmp_path):
    graph = import_model(_matmul_model(tmp_path / "m.onnx", 400))
    (rtol_m, atol_m), (rtol_r, atol_r) = tolerance.for_outputs(graph)
    assert rtol_m == rtol_r == tolerance.RTOL
    assert atol_r == tolerance.ATOL  # Relu: no sum
    assert atol_m == pytest.approx(tolerance.ATOL * 20)  # sqrt(400) terms


# --- the guards around the buffers -------------------------------------------------------

FAULTS = {0: None, 1: "wrote past the end of the arena pool (up to 3 bytes after it)",
          2: "wrote before the start of the arena pool (up to 1 bytes before it)",
          3: "wrote past the end of the output 0 (up to 4 bytes after it)",
          4: "wrote into input 0 (the C API takes the inputs const)"}


@pytest.fixture(scope="module")
def fake_case(tmp_path_factory):
    return fake_model.make(tmp_path_factory.mktemp("canary"))


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_harness_guards_catch_writes_outside_the_buffers(fake_case, fault):
    run = fake_model.build(fake_case, fault)
    if FAULTS[fault] is None:
        assert "1 output(s)" in verify.run(*run)
        return
    with pytest.raises(OnnxccError) as e:
        verify.run(*run)
    assert f"the model {FAULTS[fault]} on x86_64" in str(e.value)
    assert "\n" not in str(e.value)


# --- testdata=: a test_data_set_N folder, a .npy or a .npz file ----------------------------

def _two_in_two_out(path):
    """y = x + b, z = Relu(x): two inputs (float32 [2, 3]) and two outputs."""
    f = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "xbyz"]
    graph = helper.make_graph([helper.make_node("Add", ["x", "b"], ["y"]),
                               helper.make_node("Relu", ["x"], ["z"])], "g", f[:2], f[2:])
    return save_graph(path, graph)


def _inputs():
    rng = np.random.default_rng(1)
    return [rng.uniform(-1, 1, (2, 3)).astype(np.float32) for _ in range(2)]


def _pb(folder, name, array):
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(numpy_helper.from_array(array).SerializeToString())


def _verified(scons, model, testdata):
    r = scons(f"model={model}", f"testdata={testdata}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[verify] net on x86_64: 2 output(s)" in r.stdout
    return r


def _refused(scons, model, testdata, *needles):
    r = scons(f"model={model}", f"testdata={testdata}", "verify")
    assert_one_clear_line(r, *needles)
    case = scons.build_dir / "x86_64" / "net" / "verify"
    assert not [p for p in case.glob("*") if p.name.startswith(("harness.c", "verify_data.c",
                                                                "expected.npz"))]


@pytest.mark.slow
def test_testdata_folder_without_outputs_takes_onnxruntimes(scons, tmp_path):
    """input_K.pb alone: onnxruntime computes the expected outputs from them; some outputs
    given and some not is one line naming what is there."""
    model = _two_in_two_out(tmp_path / "net.onnx")
    data = tmp_path / "test_data_set_0"
    x, b = _inputs()
    _pb(data, "input_0.pb", x)
    _pb(data, "input_1.pb", b)
    _verified(scons, model, data)
    expected = np.load(scons.build_dir / "x86_64" / "net" / "verify" / "expected.npz")
    assert np.array_equal(expected["arr_0"], x + b) and np.array_equal(expected["arr_1"], np.maximum(x, 0))
    _pb(data, "output_0.pb", x + b)  # the second is missing
    _refused(scons, model, data, "test_data_set_0", "has output_0.pb for the model's 2 output(s)",
             "output_1.pb")
    _pb(data, "output_1.pb", np.maximum(x, 0))
    _verified(scons, model, data)
    (data / "input_1.pb").unlink()
    _refused(scons, model, data, "has input_0.pb for the model's 2 input(s) (x, b)")


@pytest.mark.slow
def test_testdata_npy_and_npz_files_are_inputs(scons, tmp_path):
    """A .npz of the inputs by name or arr_0, arr_1 (a .npy for a one-input model) verifies
    against onnxruntime; an edit of it rebuilds the case."""
    model = _two_in_two_out(tmp_path / "net.onnx")
    x, b = _inputs()
    by_name, in_order = tmp_path / "named.npz", tmp_path / "ordered.npz"
    np.savez(by_name, b=b, x=x)
    np.savez(in_order, x, b)
    _verified(scons, model, by_name)
    data_c = scons.build_dir / "x86_64" / "net" / "verify" / "verify_data.c"
    first = data_c.read_text()
    _verified(scons, model, in_order)
    assert data_c.read_text() == first  # the same inputs in the same order
    np.savez(in_order, x, b + 1)  # an edit of the file makes a new case
    _verified(scons, model, in_order)
    assert data_c.read_text() != first
    one = tmp_path / "relu.onnx"
    save_graph(one, helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])]))
    np.save(tmp_path / "x.npy", np.array([-1, 2, -3, 4], np.float32))
    r = scons(f"model={one}", f"testdata={tmp_path / 'x.npy'}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[verify] relu on x86_64: 1 output(s)" in r.stdout


@pytest.mark.parametrize("arrays, needles", [
    ({"x": np.zeros((2, 3)), "b": np.zeros((2, 3), np.float32)},
     ("input 0 ('x') is float64 of shape [2, 3]; the model takes float32 of shape [2, 3]",)),
    ({"arr_0": np.zeros((2, 3), np.float32), "arr_1": np.zeros((3, 2), np.float32)},
     ("input 1 ('b') is float32 of shape [3, 2]; the model takes float32 of shape [2, 3]",)),
    ({"x": np.zeros((2, 3), np.float32)}, ("holds 'x'; the model's inputs are 'x', 'b'",)),
    ({"x": np.zeros((2, 3), np.float32), "bias": np.zeros((2, 3), np.float32)},
     ("holds 'bias', 'x'", "arr_0, arr_1")),
])
def test_testdata_npz_that_does_not_fit_the_model_is_one_line(scons, tmp_path, arrays, needles):
    model = _two_in_two_out(tmp_path / "net.onnx")
    np.savez(tmp_path / "bad.npz", **arrays)
    _refused(scons, model, tmp_path / "bad.npz", "bad.npz", *needles)


def test_testdata_that_is_not_there_or_not_data_is_one_line(scons, tmp_path):
    model = _two_in_two_out(tmp_path / "net.onnx")
    np.save(tmp_path / "x.npy", np.zeros((2, 3), np.float32))
    (tmp_path / "notes.txt").write_text("inputs")
    for testdata, needles in [
            ("nope", ("no such data folder or file", "a test_data_set_N folder")),
            ("notes.txt", ("not a test data folder, .npy or .npz file", "a test_data_set_N folder")),
            ("x.npy", ("a .npy file holds one array; the model takes 2 inputs (x, b)",
                       "numpy.savez"))]:
        _refused(scons, model, tmp_path / testdata, testdata, *needles)
    assert files_under(scons.build_dir / "x86_64" / "net" / "verify") == []

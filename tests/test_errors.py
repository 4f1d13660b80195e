"""Bad input gets one clear line, a non-zero exit, no traceback and nothing half-written."""

import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import run_scons, save_graph


def save(path, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return save_graph(path, graph)


def files_under(folder):
    """The outputs a build left in ``folder``: not SCons' signatures nor the compiler's
    import-graph cache (build/.onnxcc/), bookkeeping that no failed stage half-writes."""
    return [os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs
            if not f.startswith(".sconsign") and os.path.basename(d) != ".onnxcc"]


def assert_one_clear_line(r, *needles):
    assert r.returncode != 0
    text = r.stdout + r.stderr
    assert "Traceback" not in text
    errors = [l for l in text.splitlines() if l.startswith(("onnxcc: error:", "scons: ***"))]
    assert len(errors) == 1, text
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def test_missing_model(scons):
    r = scons("model=no/such.onnx")
    assert_one_clear_line(r, "no/such.onnx", "no such model file")


def test_a_build_dir_that_is_a_file(tmp_path):
    (tmp_path / "out").write_text("notes")
    r = run_scons(f"build_dir={tmp_path / 'out'}", "model=models/tiny_cnn.onnx")
    assert_one_clear_line(r, "out", "build_dir= names a file, not a folder")


def test_not_onnx(scons, tmp_path):
    bad = tmp_path / "junk.onnx"
    bad.write_bytes(b"this is not a protobuf \xff\xfe")
    r = scons(f"model={bad}")
    assert_one_clear_line(r, "junk.onnx", "not an ONNX model")
    assert files_under(scons.build_dir) == []


def test_unsupported_op_names_node_and_supported_ops(scons, tmp_path):
    model = save(tmp_path / "net.onnx",
                 [helper.make_node("Relu", ["x"], ["r"], name="first"),
                  helper.make_node("RandomUniformLike", ["r"], ["y"], name="the_coin")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 3])])
    r = scons(f"model={model}")
    line = assert_one_clear_line(r, "net.onnx", "'the_coin'", "RandomUniformLike", "supported ops:", "Conv")
    assert "Relu" in line
    assert files_under(scons.build_dir) == []


@pytest.mark.slow
def test_symbolic_dimension_needs_input_shape(scons, tmp_path):
    model = save(tmp_path / "dyn.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    r = scons(f"model={model}")
    assert_one_clear_line(r, "input 'x'", "batch", "input_shape=x:")
    assert files_under(scons.build_dir) == []
    r = scons(f"model={model}", "input_shape=x:2x4", "verify")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("shape, needle", [("x:2", "input has 2"), ("q:2x4", "'q'"),
                                           ("x:2by4", "NAME:DxDx")])
def test_bad_input_shape(scons, tmp_path, shape, needle):
    model = save(tmp_path / "dyn.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    assert_one_clear_line(scons(f"model={model}", f"input_shape={shape}"), needle)


def test_input_shape_must_agree_with_static_dimensions(scons, tmp_path):
    """input_shape= fixes symbolic dimensions; one that contradicts a static dimension of
    the model is refused, naming the input, the dimension and both sizes."""
    model = save(tmp_path / "audio.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4000])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4000])])
    assert_one_clear_line(scons(f"model={model}", "input_shape=x:1x1x2000"), "audio.onnx",
                          "'x' dimension 2", "2000", "fixes it at 4000")
    assert files_under(scons.build_dir) == []
    r = scons(f"model={model}", "input_shape=x:1x1x4000")  # the model's own size is fine
    assert r.returncode == 0, r.stdout + r.stderr


def test_unknown_target_lists_known_ones(scons):
    assert_one_clear_line(scons("target=pdp11"), "unknown target 'pdp11'", "armv7", "x86_64")


def test_unknown_option(scons):
    assert_one_clear_line(scons("colour=red"), "unknown option", "colour")


def test_verify_reports_mismatch(scons, tmp_path):
    """A harness whose numbers differ from onnxruntime fails verify with the error sizes."""
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    model = save(tmp_path / "mm.onnx", [helper.make_node("MatMul", ["x", "w"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    data = tmp_path / "test_data_set_0"
    data.mkdir()
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    (data / "input_0.pb").write_bytes(numpy_helper.from_array(x).SerializeToString())
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(x @ np.ones((4, 4), np.float32) + 1).SerializeToString())
    assert_one_clear_line(scons(f"model={model}", f"testdata={data}", "verify"),
                          "MISMATCH", "max abs error 1")
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(x @ np.ones((4, 4), np.float32)).SerializeToString())
    r = scons(f"model={model}", f"testdata={data}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr


def test_unsupported_element_type_is_one_clear_line(scons, tmp_path):
    model = save(tmp_path / "half.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4])])
    line = assert_one_clear_line(scons(f"model={model}", "verify"), "half.onnx", "tensor 'x'",
                                 "element type float16 is not supported", "float32")
    assert "Traceback" not in line


def test_sequence_input_is_one_clear_line(scons, tmp_path):
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [2])
    model = save(tmp_path / "seq.onnx", [helper.make_node("SequenceLength", ["s"], ["n"])],
                 [seq], [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    assert_one_clear_line(scons(f"model={model}"), "seq.onnx", "input 's' is not a plain tensor")


def test_value_dependent_shape_is_one_clear_line(scons, tmp_path):
    model = save(tmp_path / "nz.onnx", [helper.make_node("NonZero", ["x"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                 [helper.make_tensor_value_info("y", TensorProto.INT64, [1, None])])
    assert_one_clear_line(scons(f"model={model}"), "nz.onnx", "node 'NonZero_0' (op NonZero)",
                          "depends on the values of its inputs")

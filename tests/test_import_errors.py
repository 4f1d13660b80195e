"""Untrusted model files: each class of malformed model the import stage refuses gets one
clear line (an OnnxccError naming the file and what is wrong), never a traceback.

Most cases call the stages in-process (as fuzz/malformed.py does); two run SCons like a
user and check the exit code, the single line and that build/ holds nothing afterwards.
"""

import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import onnx_model
from onnxcc.importer import stage as importer
from onnxcc.core import limits
from onnxcc.passes import stage as optimizer
from onnxcc.plan import stage as planner
from onnxcc.core.errors import OnnxccError
from test_errors import assert_one_clear_line, files_under


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def make(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return onnx_model(graph, opset)


def relu_with_weight(shape=(4,)):
    """y = Relu(x + w): a model with one initializer to play with."""
    w = numpy_helper.from_array(np.arange(np.prod(shape), dtype=np.float32).reshape(shape), "w")
    return make([helper.make_node("Add", ["x", "w"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
                [f32("x", list(shape))], [f32("y", list(shape))], [w])


def save(model, path):
    onnx.save(model, str(path))
    return str(path)


def refused(path, *needles):
    """import_model(path) raises one OnnxccError line naming the file and the needles."""
    with pytest.raises(OnnxccError) as info:
        importer.import_model(str(path))
    line = str(info.value)
    assert "\n" not in line
    assert os.path.basename(str(path)) in line
    for needle in needles:
        assert needle in line, line
    return line


def external(model, location, offset=0, length=None, name="w"):
    """Point initializer ``name`` at external data ``location``."""
    init = next(i for i in model.graph.initializer if i.name == name)
    init.ClearField("raw_data")
    init.ClearField("float_data")
    init.data_location = TensorProto.EXTERNAL
    entries = {"location": location, "offset": offset}
    if length is not None:
        entries["length"] = length
    for key, value in entries.items():
        e = init.external_data.add()
        e.key, e.value = key, str(value)
    return model


WEIGHT_BYTES = np.arange(4, dtype=np.float32).tobytes()


# --- external data ---------------------------------------------------------------------------

@pytest.mark.unit
def test_external_data_inside_the_folder_is_read(tmp_path):
    (tmp_path / "w.bin").write_bytes(b"\0" * 8 + WEIGHT_BYTES)
    path = save(external(relu_with_weight(), "w.bin", offset=8, length=16), tmp_path / "m.onnx")
    graph = importer.import_model(path)
    np.testing.assert_array_equal(graph.constants["w"], np.arange(4, dtype=np.float32))


@pytest.mark.unit
def test_external_data_through_a_symlink_inside_the_folder_is_read(tmp_path):
    (tmp_path / "w.bin").write_bytes(WEIGHT_BYTES)
    os.symlink("w.bin", tmp_path / "link.bin")
    path = save(external(relu_with_weight(), "link.bin"), tmp_path / "m.onnx")
    np.testing.assert_array_equal(importer.import_model(path).constants["w"], np.arange(4))


@pytest.mark.unit
def test_external_data_may_not_leave_the_folder_with_dotdot(tmp_path):
    (tmp_path / "w.bin").write_bytes(WEIGHT_BYTES)
    (tmp_path / "sub").mkdir()
    path = save(external(relu_with_weight(), "../w.bin"), tmp_path / "sub" / "m.onnx")
    refused(path, "tensor 'w'", "'../w.bin'", "leaves the model's folder")


@pytest.mark.unit
def test_external_data_may_not_be_an_absolute_path(tmp_path):
    (tmp_path / "w.bin").write_bytes(WEIGHT_BYTES)
    path = save(external(relu_with_weight(), str(tmp_path / "w.bin")), tmp_path / "m.onnx")
    refused(path, "tensor 'w'", "is an absolute path")


@pytest.mark.unit
def test_external_data_may_not_be_a_symlink_out_of_the_folder(tmp_path):
    (tmp_path / "secret").write_bytes(WEIGHT_BYTES)
    (tmp_path / "model").mkdir()
    os.symlink(tmp_path / "secret", tmp_path / "model" / "w.bin")
    path = save(external(relu_with_weight(), "w.bin"), tmp_path / "model" / "m.onnx")
    refused(path, "tensor 'w'", "'w.bin'", "resolves outside the model's folder")


@pytest.mark.unit
@pytest.mark.parametrize("make_location, needle", [
    (lambda folder: "missing.bin", "does not exist"),
    (lambda folder: os.mkdir(folder / "d") or "d", "not a regular file"),
    (lambda folder: os.symlink("/dev/zero", folder / "zero") or "zero", "outside"),
    (lambda folder: "w\0.bin", "NUL character"),
    (lambda folder: "w" * 5000, "does not exist"),
    (lambda folder: ".", "not a regular file"),
])
def test_external_data_must_be_an_existing_regular_file(tmp_path, make_location, needle):
    path = save(external(relu_with_weight(), make_location(tmp_path)), tmp_path / "m.onnx")
    refused(path, "tensor 'w'", needle)


@pytest.mark.unit
def test_external_data_file_too_short(tmp_path):
    (tmp_path / "w.bin").write_bytes(WEIGHT_BYTES)
    path = save(external(relu_with_weight(), "w.bin", offset=8, length=16), tmp_path / "m.onnx")
    refused(path, "tensor 'w'", "'w.bin' is too short", "16 bytes", "bytes 8 to 24")


@pytest.mark.unit
def test_external_data_length_must_match_dims(tmp_path):
    (tmp_path / "w.bin").write_bytes(WEIGHT_BYTES)
    path = save(external(relu_with_weight(), "w.bin", length=8), tmp_path / "m.onnx")
    refused(path, "initializer 'w'", "holds 8 bytes", "need 16")


def test_missing_side_file_through_scons_is_one_line_and_builds_nothing(scons, tmp_path):
    path = save(external(relu_with_weight(), "weights.bin"), tmp_path / "m.onnx")
    r = scons(f"model={path}")
    assert r.returncode == 2
    assert_one_clear_line(r, "m.onnx", "tensor 'w'", "'weights.bin' does not exist")
    assert files_under(scons.build_dir) == []


# --- limits ----------------------------------------------------------------------------------

@pytest.mark.unit
def test_huge_initializer_dims_without_data(tmp_path):
    model = relu_with_weight()
    init = model.graph.initializer[0]
    init.ClearField("raw_data")
    del init.dims[:]
    init.dims.extend([2 ** 20, 2 ** 20])
    refused(save(model, tmp_path / "m.onnx"), "initializer 'w'", str(2 ** 40 * 4), "2 GiB")


@pytest.mark.unit
def test_huge_input_dim_is_refused_before_anything_is_allocated(tmp_path):
    model = make([helper.make_node("Relu", ["x"], ["y"])], [f32("x", [2 ** 31, 4])],
                 [f32("y", [2 ** 31, 4])])
    refused(save(model, tmp_path / "m.onnx"), "tensor 'x'", "more than the limit")


@pytest.mark.unit
def test_constant_node_with_huge_dims_and_no_data(tmp_path):
    value = TensorProto(data_type=TensorProto.FLOAT, dims=[2 ** 40])
    model = make([helper.make_node("Constant", [], ["c"], value=value),
                  helper.make_node("Add", ["x", "c"], ["y"])],
                 [f32("x", [1])], [f32("y", [1])])
    refused(save(model, tmp_path / "m.onnx"), "a tensor attribute of a node", "more than the limit")


@pytest.mark.unit
def test_huge_dim_of_an_empty_tensor(tmp_path):
    model = make([helper.make_node("Relu", ["x"], ["y"])], [f32("x", [0, 2 ** 40])],
                 [f32("y", [0, 2 ** 40])])
    refused(save(model, tmp_path / "m.onnx"), "tensor 'x'", "a dimension of more than the limit")


@pytest.mark.unit
def test_negative_dim(tmp_path):
    model = make([helper.make_node("Relu", ["x"], ["y"])], [f32("x", [2, 4])], [f32("y", [2, 4])])
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -3
    refused(save(model, tmp_path / "m.onnx"), "tensor 'x'", "negative dimension")


@pytest.mark.unit
def test_initializer_data_shorter_than_dims(tmp_path):
    model = relu_with_weight()
    model.graph.initializer[0].raw_data = WEIGHT_BYTES[:12]
    refused(save(model, tmp_path / "m.onnx"), "initializer 'w'", "holds 12 bytes", "need 16")


@pytest.mark.unit
def test_too_many_nodes(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_NODES", 10)
    nodes = [helper.make_node("Relu", [f"t{k}"], [f"t{k + 1}"]) for k in range(11)]
    model = make(nodes, [f32("t0", [2])], [f32("t11", [2])])
    refused(save(model, tmp_path / "m.onnx"), "11 nodes", "limit of 10")


@pytest.mark.unit
def test_expand_to_a_huge_constant_is_refused(tmp_path):
    """A constant subgraph that would fold into gigabytes fails before numpy allocates."""
    shape = numpy_helper.from_array(np.array([2 ** 16, 2 ** 16], np.int64), "s")
    one = numpy_helper.from_array(np.ones([1], np.float32), "one")
    model = make([helper.make_node("Expand", ["one", "s"], ["e"]),
                  helper.make_node("Add", ["x", "e"], ["y"])],
                 [f32("x", [1])], [f32("y", [2 ** 16, 2 ** 16])], [one, shape])
    refused(save(model, tmp_path / "m.onnx"), "tensor 'y'", "[65536, 65536]", "more than the limit")


@pytest.mark.unit
def test_fold_size_guard_in_the_optimizer(tmp_path, monkeypatch):
    """Below the import limits, above the folding limit: the optimizer refuses it."""
    monkeypatch.setattr(sys.modules["onnxcc.passes.fold_constants"], "MAX_FOLD_BYTES", 1000)
    shape = numpy_helper.from_array(np.array([40, 40], np.int64), "s")
    model = make([helper.make_node("ConstantOfShape", ["s"], ["z"]),
                  helper.make_node("Add", ["x", "z"], ["y"])],
                 [f32("x", [40, 40])], [f32("y", [40, 40])], [shape])
    path = save(model, tmp_path / "m.onnx")
    importer.run(path, str(tmp_path / "i.onnx"), str(tmp_path / "i.bin"))
    with pytest.raises(OnnxccError, match=r"^m.onnx: .*ConstantOfShape.*1600 elements.*limit of 1000 bytes"):
        optimizer.run(str(tmp_path / "i.onnx"), str(tmp_path / "o.onnx"), str(tmp_path / "o.bin"),
                      source="m.onnx")
    assert not (tmp_path / "o.onnx").exists()


@pytest.mark.unit
@pytest.mark.parametrize("op", ["ConstantOfShape", "Tile"])
def test_fold_size_is_estimated_before_shapes_are_known(tmp_path, op):
    """A size that only folding reveals (from a Cast shape inference does not follow) is
    estimated from the input values before the reference evaluator allocates it."""
    sizes = numpy_helper.from_array(np.array([2 ** 16, 2 ** 16], np.float32), "f")
    one = numpy_helper.from_array(np.ones([1, 1], np.float32), "one")
    made = (helper.make_node("ConstantOfShape", ["s"], ["z"]) if op == "ConstantOfShape"
            else helper.make_node("Tile", ["one", "s"], ["z"]))
    model = make([helper.make_node("Cast", ["f"], ["s"], to=TensorProto.INT64), made,
                  helper.make_node("Add", ["x", "z"], ["y"])],
                 [f32("x", [1])], [f32("y", ["a", "b"])], [sizes, one])
    path = save(model, tmp_path / "m.onnx")
    importer.run(path, str(tmp_path / "i.onnx"), str(tmp_path / "i.bin"))
    with pytest.raises(OnnxccError, match=rf"node '{op}_1' \(op {op}\) would make a constant of "
                                          f"{2 ** 32} elements"):
        optimizer.run(str(tmp_path / "i.onnx"), str(tmp_path / "o.onnx"), str(tmp_path / "o.bin"))


@pytest.mark.unit
def test_arena_larger_than_ram_fails_in_the_plan_with_the_numbers(tmp_path):
    model = make([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Relu", ["r"], ["y"])],
                 [f32("x", [256, 256])], [f32("y", [256, 256])])
    path = save(model, tmp_path / "m.onnx")
    importer.run(path, str(tmp_path / "i.onnx"), str(tmp_path / "i.bin"))
    with pytest.raises(OnnxccError) as info:
        planner.run(str(tmp_path / "i.onnx"), str(tmp_path / "plan.json"), "m.onnx",
                    ram_bytes=64 * 1024)
    assert "256.0 KiB of arena + 512.0 KiB of inputs and outputs" in str(info.value)
    assert "the target's 64.0 KiB of RAM" in str(info.value)
    assert not (tmp_path / "plan.json").exists()
    planner.run(str(tmp_path / "i.onnx"), str(tmp_path / "plan.json"), "m.onnx",
                ram_bytes=4 << 20)
    assert (tmp_path / "plan.json").exists()


def test_arena_over_ram_through_scons_is_one_line(scons):
    r = scons("target=armv7", "model=models/tiny_cnn.onnx", "ram=1K")
    assert r.returncode == 2
    assert_one_clear_line(r, "tiny_cnn.onnx", "of arena", "the target's 1.0 KiB of RAM", "ram=")
    assert not os.path.exists(os.path.join(scons.build_dir, "armv7", "tiny_cnn", "plan.json"))


# --- structure, text and attributes ----------------------------------------------------------

def conv_model(group=1, weight=(4, 2, 3, 3), **attrs):
    w = numpy_helper.from_array(np.ones(weight, np.float32), "w")
    return make([helper.make_node("Conv", ["x", "w"], ["y"], group=group, **attrs)],
                [f32("x", [1, 4, 8, 8])], [f32("y", ["n"] * 4)], [w])


@pytest.mark.unit
@pytest.mark.parametrize("group", [0, -2, 3])
def test_conv_group_must_divide_the_channels(tmp_path, group):
    refused(save(conv_model(group=group), tmp_path / "m.onnx"), "node 'Conv_0' (op Conv)", "group")


@pytest.mark.unit
@pytest.mark.parametrize("attrs", [{"strides": [0, 1]}, {"pads": [1, -1, 1, 1]}, {"dilations": [1]},
                                   {"kernel_shape": [0, 3]}])
def test_conv_window_attributes(tmp_path, attrs):
    """(ONNX shape inference names most of these; the validation table the rest)"""
    refused(save(conv_model(group=2, **attrs), tmp_path / "m.onnx"), "Conv", *attrs)


@pytest.mark.unit
def test_conv_weight_must_take_the_inputs_channels(tmp_path):
    refused(save(conv_model(weight=(4, 3, 3, 3)), tmp_path / "m.onnx"), "the input has 4 channels")


@pytest.mark.unit
def test_conv_kernel_shape_must_be_the_weights_window(tmp_path):
    refused(save(conv_model(group=2, kernel_shape=[2, 3]), tmp_path / "m.onnx"),
            "kernel_shape=[2, 3] is not the weight's window [3, 3]")


@pytest.mark.unit
def test_pool_window_larger_than_its_input(tmp_path):
    model = make([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2])],
                 [f32("x", [1, 1, 1, 8])], [f32("y", ["n"] * 4)])
    refused(save(model, tmp_path / "m.onnx"), "(op MaxPool)", "is empty")


@pytest.mark.unit
def test_gemm_flags_and_shapes(tmp_path):
    w = numpy_helper.from_array(np.ones((5, 8), np.float32), "w")
    model = make([helper.make_node("Gemm", ["x", "w"], ["y"], transB=7)],
                 [f32("x", [2, 8])], [f32("y", ["m", "n"])], [w])
    refused(save(model, tmp_path / "m.onnx"), "(op Gemm)", "transB=7")


def test_invalid_utf8_name_through_scons(scons, tmp_path):
    data = relu_with_weight().SerializeToString().replace(b"Relu", b"Relu", 1)
    data = data.replace(b"\n\x01s", b"\n\x01\xff")  # the tensor name 's' becomes byte 0xff
    assert b"\xff" in data
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    r = scons(f"model={path}")
    assert r.returncode == 2
    assert_one_clear_line(r, "m.onnx", "not valid UTF-8")
    assert files_under(scons.build_dir) == []


@pytest.mark.unit
def test_invalid_utf8_attribute_text(tmp_path):
    model = make([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2], auto_pad="VALID")],
                 [f32("x", [1, 1, 4])], [f32("y", ["n"] * 3)])
    model.graph.node[0].attribute[0].s = b"\xffVALID"
    refused(save(model, tmp_path / "m.onnx"), "'auto_pad' is not UTF-8")


@pytest.mark.unit
@pytest.mark.parametrize("edit, needle", [
    (lambda m: m.ClearField("opset_import"), "no opset of the default ONNX domain"),
    (lambda m: setattr(m.opset_import[0], "version", 999), "opset 999"),
    (lambda m: setattr(m, "ir_version", 99), "IR version 99"),
    (lambda m: setattr(m.graph.output[0], "name", ""), "graph output has no name"),
    (lambda m: m.graph.output.add().CopyFrom(m.graph.output[0]), "listed twice"),
    (lambda m: m.graph.node[0].input.__setitem__(0, ""), "required input 0 (A) is empty"),
    (lambda m: m.graph.node[0].attribute.append(helper.make_attribute("onnxcc_tactic", "x")),
     "reserved for onnxcc"),
    (lambda m: onnx.helper.set_model_props(m, {"onnxcc_quant": "{"}), "metadata key 'onnxcc_quant'"),
])
def test_structure(tmp_path, edit, needle):
    model = relu_with_weight()
    edit(model)
    refused(save(model, tmp_path / "m.onnx"), needle)


@pytest.mark.unit
@pytest.mark.parametrize("edit", [
    lambda m: m.graph.node[1].output.__setitem__(0, "x"),        # writes a graph input
    lambda m: m.graph.node[0].input.__setitem__(0, "y"),         # a cycle
    lambda m: m.graph.node[0].input.__setitem__(0, "nowhere"),   # a missing input
    lambda m: m.graph.node.add().CopyFrom(m.graph.node[1]),      # two nodes make 'y'
])
def test_graph_shape_errors(tmp_path, edit):
    model = relu_with_weight()
    edit(model)
    refused(save(model, tmp_path / "m.onnx"), "invalid ONNX model")


@pytest.mark.unit
def test_duplicate_node_names_are_made_unique(tmp_path):
    model = relu_with_weight()
    for node in model.graph.node:
        node.name = "same"
    graph = importer.import_model(save(model, tmp_path / "m.onnx"))
    assert [n.name for n in graph.nodes] == ["same", "same_1"]


"""Patch-based execution (plan/patches.py): which layers run in patches and with what
pads, that the RAM budget chooses it, that it is exact, and its errors."""

import json
import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxcc.plan import stage as planner
from onnxcc.core.errors import OnnxccError
from onnxcc.importer.stage import import_model
from onnxcc.plan import patches
from onnxcc.passes import optimize
from conftest import run_scons, save_graph
from test_errors import assert_one_clear_line

RNG = np.random.default_rng(16)


def _save(path, nodes, x_shape, y_shape, inits, domains=()):
    """An opset-17 model of one float input x and output y, saved at ``path``."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    return save_graph(path, graph, domains={d: 1 for d in domains})


def _model(path):
    """Every kind of node a stage takes: a strided, padded conv with a fused Relu; a
    depthwise conv; a MaxPool with ceil_mode and padding; a channel Concat of a 1x1 and a
    dilated 3x3 branch; a Mul by a per-channel constant; then a global pool that ends the
    stage. 1x3x23x21: no side divides evenly."""
    def w(name, *shape):
        return numpy_helper.from_array((RNG.standard_normal(shape) * 0.3).astype(np.float32), name)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], strides=[2, 2], pads=[1, 0, 1, 2],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], group=6, pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("MaxPool", ["c2"], ["p"], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 0, 0],
                         ceil_mode=1),
        helper.make_node("Conv", ["p", "w3"], ["e1"], kernel_shape=[1, 1]),
        helper.make_node("Conv", ["p", "w4"], ["e3"], kernel_shape=[3, 3], pads=[2, 2, 2, 2],
                         dilations=[2, 2]),
        helper.make_node("Concat", ["e1", "e3"], ["cat"], axis=1),
        helper.make_node("Mul", ["cat", "scale"], ["m"]),
        helper.make_node("GlobalAveragePool", ["m"], ["y"]),
    ]
    inits = [w("w1", 6, 3, 3, 3), w("b1", 6), w("w2", 6, 1, 3, 3), w("w3", 4, 6, 1, 1),
             w("w4", 5, 6, 3, 3), w("scale", 9, 1, 1)]
    return _save(path, nodes, [1, 3, 23, 21], [1, 9, 1, 1], inits)


@pytest.mark.unit
def test_the_stage_and_each_patch_s_pads(tmp_path):
    graph = optimize(import_model(_model(tmp_path / "m.onnx")), "test")
    nodes, joins = patches.stage(graph)
    assert [graph.nodes[k].op for k in nodes] == ["Conv", "Conv", "MaxPool", "Conv", "Conv", "Concat", "Mul"]
    assert joins == [1, 2, 3, 6, 7]  # not inside the branches (p is read by two nodes)
    g = patches.rewrite(graph, nodes[:3], (2, 2))
    by_name = {n.name: n for n in g.nodes}
    first = [n for n in g.nodes if n.op == "Conv" and "__p0" in n.name][0]
    last = [n for n in g.nodes if n.op == "Conv" and "__p3" in n.name][0]
    # the top-left patch keeps the image's top and left pads, the bottom-right its others
    assert first.attrs["pads"][:2] == [1, 0] and first.attrs["pads"][2:] == [0, 0]
    assert last.attrs["pads"][:2] == [0, 0] and last.attrs["pads"][3] == 2
    joins_made = [n for n in g.nodes if n.op == patches.JOIN]
    assert len(joins_made) == 4 and joins_made[-1].outputs == [graph.nodes[nodes[2]].outputs[0]]
    assert [len(n.inputs) for n in joins_made] == [1, 2, 2, 2]  # then each over the one before
    assert all(g.info(n.inputs[0]).shape[2:] != (23, 21) for n in g.nodes if n.op == "Conv")
    assert "x__p0_slice0" in by_name  # the input's region, never all of it
    p = patches.patched(graph, nodes[:3], (2, 2), sum(patches.graph_macs(graph).values()))
    assert p.extra_macs > 0 and p.kernels >= 4


@pytest.mark.parametrize("grid,opt", [("2", "speed"), ("3", "speed"), ("3", "size")])
@pytest.mark.slow
def test_patched_builds_verify_on_x86(tmp_path, grid, opt):
    """Forced patches over every stage kind verify against onnxruntime. With the reference
    kernels (opt=size) they give the very outputs of the layer-by-layer build: each
    element is computed by the same arithmetic. (The vector kernels' tails can round a
    patch's edge pixels differently, within verify's tolerance: docs/memory.md.)"""
    model = _model(tmp_path / "patchy.onnx")
    reports = {}
    for setting in (grid, "off"):
        r = run_scons(f"model={model}", f"patches={setting}", f"opt={opt}", f"build_dir={tmp_path / setting}",
                      "verify")
        assert r.returncode == 0, r.stdout + r.stderr
        folder = tmp_path / setting / "x86_64" / "patchy"
        with open(folder / "verify" / "report.json") as f:
            reports[setting] = json.load(f)["outputs"][0]
        with open(folder / "plan.json") as f:
            plan = json.load(f)
        assert ("patches" in plan) == (setting != "off")
    assert reports[grid]["ok"]
    if opt == "size":
        assert reports[grid]["max_abs_error"] == reports["off"]["max_abs_error"]
        assert reports[grid]["worst"] == reports["off"]["worst"]


@pytest.mark.slow
@pytest.mark.emulated
def test_the_ram_budget_chooses_patches_on_armv7(scons):
    """The issue's bar: MobileNetV1-0.25 96x96 (float32) in at most 0.55 times its
    layer-by-layer arena, chosen from ram= alone, verified in qemu."""
    r = scons("target=armv7", "model=models/mobilenet_v1_025.onnx", "ram=192K", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "patches of the first" in r.stdout
    with open(os.path.join(scons.build_dir, "armv7", "mobilenet_v1_025", "plan.json")) as f:
        plan = json.load(f)
    assert plan["arena_bytes"] <= 0.55 * plan["patches"]["arena_bytes_without"]
    assert plan["patches"]["extra_macs"] < 0.05 * plan["patches"]["macs"]
    with open(os.path.join(scons.build_dir, "armv7", "mobilenet_v1_025", "report.html")) as f:
        page = f.read()
    assert "Patch-based execution: the first 4 nodes" in page and "conv1__p0" in page


@pytest.mark.emulated
@pytest.mark.slow
def test_the_int8_camera_model_fits_64k_on_armv7(scons):
    """Its int8 version with an int8 input: arena, I/O, data and stack in 64 KB."""
    r = scons("target=armv7", "model=models/int8/mobilenet_v1_025_qop_int8_input.onnx", "ram=64K",
              "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "compared exactly" in r.stdout and "max abs error 0" in r.stdout
    with open(os.path.join(scons.build_dir, "armv7", "mobilenet_v1_025_qop_int8_input", "size.json")) as f:
        assert json.load(f)["ram"]["total"] <= 64 * 1024


@pytest.mark.unit
def test_when_nothing_fits_the_error_names_the_smallest_arena(tmp_path):
    path = _model(tmp_path / "m.onnx")
    graph = optimize(import_model(path), "test")
    layer_by_layer = planner.plan(graph)
    ram = layer_by_layer["io_bytes"] + 64  # no arena fits in 64 bytes
    with pytest.raises(OnnxccError) as info:
        planner.check_fits_ram(planner.plan_with_patches(graph, "auto", ram), ram)
    assert "with patches the smallest arena is" in info.value.message
    assert "more multiply-accumulates" in info.value.message
    with pytest.raises(OnnxccError) as info:
        planner.check_fits_ram(planner.plan_with_patches(graph, "off", ram), ram)
    assert "with patches" not in info.value.message
    fits = planner.plan_with_patches(graph, "auto", ram + 10 ** 6)  # fits: no patches
    assert "patches" not in fits and fits["arena_bytes"] == layer_by_layer["arena_bytes"]


def test_bad_patches_setting_is_one_line(scons):
    r = scons("model=models/tiny_cnn.onnx", "patches=many")
    assert r.returncode == 2
    assert_one_clear_line(r, "patches=many is not known", "patches= takes")


def test_a_constant_that_varies_over_pixels_keeps_its_node_out_of_the_stage(tmp_path):
    """A Mul by a [1, C, H, W] constant, fused into the convolution's epilogue: a patch
    would need a slice of it, so the stage stops before (found by the fuzzer: the kernel
    generator failed on the patch's operand)."""
    inits = [numpy_helper.from_array(RNG.standard_normal((3, 2, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(RNG.standard_normal((1, 3, 9, 8)).astype(np.float32), "k")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("Mul", ["c", "k"], ["y"])]
    path = _save(tmp_path / "k.onnx", nodes, [1, 2, 9, 8], [1, 3, 9, 8], inits)
    graph = optimize(import_model(path), "test")
    assert [n.op for n in graph.nodes] == ["Conv"] and graph.nodes[0].attrs.get("onnxcc_epilogue")
    assert patches.stage(graph) == ([], [])
    r = run_scons(f"model={path}", "patches=2", f"build_dir={tmp_path / 'b'}")
    assert_one_clear_line(r, "patches=2x2", patches.NO_STAGE)


def test_a_grid_whose_patch_reads_only_padding_is_skipped(tmp_path):
    """Pads of 2 with stride 3 and a 1x1 window: the first output row reads only padding,
    so a patch of it alone would have an empty input (found by the fuzzer: a tensor of
    -1 rows). Such a grid is no candidate (every row split here); a column split is."""
    w = numpy_helper.from_array(RNG.standard_normal((6, 2, 1, 1)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], group=2, kernel_shape=[1, 1], pads=[2, 0, 2, 0],
                              strides=[3, 3]),
             helper.make_node("Sin", ["c"], ["y"])]
    path = _save(tmp_path / "pad.onnx", nodes, [1, 4, 5, 5], [1, 6, 3, 2], [w])
    graph = optimize(import_model(path), "test")
    nodes_, _ = patches.stage(graph)
    with pytest.raises(OnnxccError, match="reads no pixel"):
        patches.rewrite(graph, nodes_[:1], (3, 1))
    r = run_scons(f"model={path}", "patches=3x1", f"build_dir={tmp_path / 'b'}")
    assert_one_clear_line(r, "patches=3x1", patches.NO_STAGE)
    r = run_scons(f"model={path}", "patches=1x2", f"build_dir={tmp_path / 'c'}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow
def test_a_layer_s_tactic_that_cannot_run_a_patch_keeps_the_grid_out(tmp_path):
    """A patch node keeps its layer's tactic: depthwise_s2 loads whole vectors of a row,
    so a patch narrower than a vector (6 of 24 columns, 8 lanes) cannot run it (found in
    review: its edge loads started before the row). Its lowering refuses such rows, so
    the forced grid is refused in one line and a grid of whole rows builds and verifies.
    (Tactics' ``applies`` also say where a tactic is worth it -- vector kernels run short
    patches right, test_short_vectors -- so lowering does not re-check them.)"""
    w = numpy_helper.from_array(RNG.standard_normal((16, 1, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], group=16, kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["y"])]
    path = _save(tmp_path / "s2.onnx", nodes, [1, 16, 24, 24], [1, 16, 12, 12], [w])
    forced = ["target=x86_64", "tactic=Conv:depthwise_s2"]
    r = run_scons(f"model={path}", *forced, "patches=1x4", f"build_dir={tmp_path / 'b'}")
    assert_one_clear_line(r, "patches=1x4", patches.NO_STAGE)
    r = run_scons(f"model={path}", *forced, "patches=2x1", f"build_dir={tmp_path / 'c'}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    plan = json.loads(next((tmp_path / "c").glob("x86_64/*/plan.json")).read_text())
    assert plan["patches"]["grid"] == [2, 1]


def _branchy(path):
    """SqueezeNet-style: a Fire module whose two expand branches each widen (1x1 to 32
    channels) then narrow (3x3 to 8), exported in the order an exporter often writes them:
    both widening convolutions first. Then a MaxPool, a 1x1 and a global pool."""
    def w(name, *shape):
        return numpy_helper.from_array((RNG.standard_normal(shape) * 0.3).astype(np.float32), name)
    conv = helper.make_node
    nodes = [conv("Conv", ["x", "w0"], ["c0"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             conv("Relu", ["c0"], ["r0"]),
             conv("Conv", ["r0", "wa1"], ["a1"], kernel_shape=[1, 1]),
             conv("Conv", ["r0", "wb1"], ["b1"], kernel_shape=[1, 1]),
             conv("Conv", ["a1", "wa2"], ["a2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             conv("Conv", ["b1", "wb2"], ["b2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             conv("Concat", ["a2", "b2"], ["cat"], axis=1),
             conv("MaxPool", ["cat"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             conv("Conv", ["p", "w3"], ["c3"], kernel_shape=[1, 1]),
             conv("GlobalAveragePool", ["c3"], ["y"])]
    inits = [w("w0", 8, 3, 3, 3), w("wa1", 32, 8, 1, 1), w("wb1", 32, 8, 1, 1), w("wa2", 8, 32, 3, 3),
             w("wb2", 8, 32, 3, 3), w("w3", 4, 16, 1, 1)]
    return _save(path, nodes, [1, 3, 24, 24], [1, 4, 1, 1], inits)


@pytest.mark.slow
def test_concatenated_branches_need_less_from_the_schedule_then_from_patches(tmp_path):
    """The issue's SqueezeNet-style bar: the memory-aware schedule alone cuts the peak
    (each branch narrows before the other widens), patches cut it further (each patch
    follows that schedule), and the patched build verifies."""
    path = _branchy(tmp_path / "branchy.onnx")
    graph = optimize(import_model(path), "test")
    in_order = planner.plan(graph, schedule="graph")["arena_bytes"]
    scheduled = planner.plan(graph)["arena_bytes"]
    patched = planner.plan_with_patches(graph, (2, 2), 0)
    assert patched["arena_bytes"] < scheduled < in_order
    names = patched["patches"]["nodes"]
    assert names.index("Conv_4") < names.index("Conv_3")  # a branch narrows before b widens
    ram = patched["arena_bytes"] + patched["io_bytes"] + planner.RESERVED_RAM + 1024
    r = run_scons(f"model={path}", f"ram={ram}", f"build_dir={tmp_path / 'b'}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "patches of the first" in r.stdout


def test_an_int8_conv_with_a_constant_residual_stays_out_of_the_stage(tmp_path):
    """A QLinearAdd of a constant [1, C, H, W] tensor fused into the QLinearConv before it
    (passes/fuse_residual_qadd.py): a patch would read the whole residual at its own
    offsets. Found by the armv7 image campaign as a mismatch; the stage now ends before."""
    def init(name, value):
        return numpy_helper.from_array(np.asarray(value), name)
    ms = "com.microsoft"
    inits = [init("x_s", np.float32(0.02)), init("x_z", np.int8(0)), init("c_s", np.float32(0.05)),
             init("c_z", np.int8(3)), init("k_s", np.float32(0.04)), init("k_z", np.int8(-2)),
             init("a_s", np.float32(0.06)), init("a_z", np.int8(1)),
             init("w", RNG.integers(-60, 60, (4, 2, 3, 3)).astype(np.int8)),
             init("w_s", np.float32(0.01)), init("w_z", np.int8(0)),
             init("k", RNG.integers(-100, 100, (1, 4, 8, 8)).astype(np.int8))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
             helper.make_node("QLinearConv", ["xq", "x_s", "x_z", "w", "w_s", "w_z", "c_s", "c_z"], ["c"],
                              pads=[1, 1, 1, 1]),
             helper.make_node("QLinearAdd", ["c", "c_s", "c_z", "k", "k_s", "k_z", "a_s", "a_z"], ["a"],
                              domain=ms),
             helper.make_node("DequantizeLinear", ["a", "a_s", "a_z"], ["y"])]
    path = _save(tmp_path / "qres.onnx", nodes, [1, 2, 8, 8], [1, 4, 8, 8], inits, domains=[ms])
    g = optimize(import_model(path), "test")
    conv = next(n for n in g.nodes if n.op == "QLinearConv")
    assert "onnxcc_residual" in conv.attrs  # the Add is fused, its constant the residual
    nodes_, _ = patches.stage(g)
    assert [g.nodes[k].op for k in nodes_] == ["QuantizeLinear"]
    r = run_scons(f"model={path}", "patches=2", f"build_dir={tmp_path / 'b'}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "compared exactly" in r.stdout


def test_every_elementwise_op_of_the_registry_runs_in_patches(tmp_path):
    """The stage takes the ops the registry calls elementwise (ops.ELEMENTWISE, one list:
    patches kept a copy of its own that had drifted), here ones no epilogue fuses: a
    Floor and a Where of a comparison between two convolutions, built in patches and
    verified."""
    from onnxcc import ops
    assert {"Floor", "Where", "Greater", "Cos"} <= ops.ELEMENTWISE
    inits = [numpy_helper.from_array((RNG.standard_normal((4, 2, 3, 3)) * 0.3).astype(np.float32), "w1"),
             numpy_helper.from_array((RNG.standard_normal((3, 4, 3, 3)) * 0.3).astype(np.float32), "w2"),
             numpy_helper.from_array(np.float32([0.25]).reshape(1, 1, 1, 1), "t")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("Floor", ["c1"], ["f"]),
             helper.make_node("Greater", ["c1", "t"], ["g"]),
             helper.make_node("Where", ["g", "c1", "f"], ["e"]),
             helper.make_node("Cos", ["e"], ["k"]),
             helper.make_node("Conv", ["k", "w2"], ["c2"], strides=[2, 2], kernel_shape=[3, 3]),
             helper.make_node("GlobalAveragePool", ["c2"], ["y"])]
    path = _save(tmp_path / "elementwise.onnx", nodes, [1, 2, 19, 17], [1, 3, 1, 1], inits)
    graph = optimize(import_model(path), "test")
    stage, _ = patches.stage(graph)
    assert {"Floor", "Greater", "Where", "Cos"} <= {graph.nodes[k].op for k in stage}
    r = run_scons(f"model={path}", "patches=2", "opt=size", f"build_dir={tmp_path / 'b'}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    with open(tmp_path / "b" / "x86_64" / "elementwise" / "plan.json") as f:
        assert "patches" in json.load(f)

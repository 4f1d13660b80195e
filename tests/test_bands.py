"""Row bands through interior blocks (plan/bands.py): which stages, that they start at
an interior tensor and verify on odd shapes on x86 and in qemu, when auto chooses them,
and that opt=size and cache-less targets never get them."""

import json

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxcc.plan import stage as planner
from onnxcc.tactics import stage as tactics
from onnxcc.importer.stage import import_model
from onnxcc.plan import bands, patches
from onnxcc.passes import optimize
from onnxcc.target import host_cpu_flags, load_target
from conftest import in_qemu, run_scons, save_graph, slow
from test_errors import assert_one_clear_line

RNG = np.random.default_rng(14)


def _w(name, *shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.3).astype(np.float32), name)


def _save(path, nodes, x_shape, y_shape, inits):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    return save_graph(path, graph)


def _inverted_residuals(path, h=23, w=19, c=5, wide=30, group=None):
    """A stem, then two MobileNetV2 blocks (expand 1x1 + Clip, depthwise 3x3, project
    1x1): the first stride 1 with its residual Add, the second stride 2 with uneven pads;
    then a global pool. 23x19: no band divides evenly. ``group=1``: the 3x3s dense."""
    group = wide if group is None else group
    n = helper.make_node
    nodes = [n("Conv", ["x", "ws"], ["s"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             n("Relu", ["s"], ["s_r"]),
             n("Conv", ["s_r", "we1", "be1"], ["e1"], kernel_shape=[1, 1]),
             n("Clip", ["e1", "lo", "hi"], ["e1_r"]),
             n("Conv", ["e1_r", "wd1"], ["d1"], kernel_shape=[3, 3], group=group, pads=[1, 1, 1, 1]),
             n("Clip", ["d1", "lo", "hi"], ["d1_r"]),
             n("Conv", ["d1_r", "wp1"], ["p1"], kernel_shape=[1, 1]),
             n("Add", ["p1", "s_r"], ["a1"]),
             n("Conv", ["a1", "we2"], ["e2"], kernel_shape=[1, 1]),
             n("Clip", ["e2", "lo", "hi"], ["e2_r"]),
             n("Conv", ["e2_r", "wd2", "bd2"], ["d2"], kernel_shape=[3, 3], group=group, strides=[2, 2],
               pads=[1, 0, 0, 1]),
             n("Clip", ["d2", "lo", "hi"], ["d2_r"]),
             n("Conv", ["d2_r", "wp2"], ["p2"], kernel_shape=[1, 1]),
             n("GlobalAveragePool", ["p2"], ["y"])]
    inits = [_w("ws", c, 3, 3, 3), _w("we1", wide, c, 1, 1), _w("be1", wide), _w("wd1", wide, wide // group, 3, 3),
             _w("wp1", c, wide, 1, 1), _w("we2", wide, c, 1, 1), _w("wd2", wide, wide // group, 3, 3), _w("bd2", wide),
             _w("wp2", 7, wide, 1, 1), numpy_helper.from_array(np.float32(0), "lo"),
             numpy_helper.from_array(np.float32(6), "hi")]
    return _save(path, nodes, [1, 3, h, w], [1, 7, 1, 1], inits)


@pytest.mark.unit
def test_forced_bands_start_at_interior_tensors(tmp_path):
    graph = optimize(import_model(_inverted_residuals(tmp_path / "ir.onnx")), "test")
    banded, described = bands.choose(graph, 3, 0)
    # from the stem on, the longest stage from each node (of up to MAX_NODES nodes)
    assert [d["source"] for d in described][0] == "x"
    interior = [d for d in described if d["source"] != "x"]
    assert interior and all(d["bands"] == 3 for d in described)
    covered = [name for d in described for name in d["nodes"]]
    assert len(covered) == len(set(covered))  # stages never overlap
    slices = [n for n in banded.nodes if n.op == "Slice"]
    assert any(n.inputs[0] == d["source"] for d in interior for n in slices)  # an arena tensor's rows
    assert sum(n.op == patches.JOIN for n in banded.nodes) == 3 * len(described)
    # the banded graph is planned in the order written: each Slice after its source is made
    made = set(banded.inputs) | set(banded.constants)
    for node in banded.nodes:
        assert all(not t or t in made for t in node.inputs), node.name
        made.update(node.outputs)


@pytest.mark.unit
def test_copied_bytes_are_the_slices_and_pieces_written(tmp_path):
    """A stage's ``copied_bytes`` are the bytes of the Slices its bands run (a one-channel
    source's rows are views: none) and of the pieces its joins write."""
    for c in (5, 1):
        graph = optimize(import_model(_inverted_residuals(tmp_path / f"ir{c}.onnx", c=c)), "test")
        banded, described = bands.choose(graph, 3, 0)
        plan = planner.plan(banded)
        code = {s["node"]: s["code"] for s in plan["schedule"]}
        written = sum(banded.info(n.inputs[-1] if n.op == patches.JOIN else n.outputs[0]).nbytes
                      for n in banded.nodes
                      if n.op == patches.JOIN or (n.op == "Slice" and code[n.name] == "kernel"))
        assert sum(d["copied_bytes"] for d in described) == written > 0
        sliced = [s for s in plan["schedule"] if s["op"] == "Slice"]
        assert any(s["code"] == ("none" if c == 1 else "kernel") for s in sliced)


@pytest.mark.unit
def test_auto_bands_only_a_block_whose_wide_tensor_outgrows_the_cache(tmp_path):
    """MobileNetV2's 56x56 blocks (24 -> 144 channels: 1.8 MB expanded), costed with
    x86_64's tactics: a 1 MiB cache bands both (the fewest bands whose tensors fit half
    of it, the halos' estimated cycles below the bytes' worth), a 4 MiB one (nothing
    outgrows it) and none at all (Cortex-M) band nothing."""
    path = _inverted_residuals(tmp_path / "ir.onnx", h=56, w=56, c=24, wide=144)
    graph = optimize(import_model(path), "test")
    tactics.annotate(graph, tactics.Selection(load_target("x86_64").cpu, {
        n["node"]: n["tactic"] for n in tactics.select(graph, load_target("x86_64").cpu)["nodes"]}))
    _, described = bands.choose(graph, "auto", 1 << 20)
    # each block whole, from its expansion to its projection (the stem's output is small)
    assert [d["nodes"] for d in described] == [["Conv_2", "Conv_4", "Conv_6"], ["Conv_8", "Conv_10", "Conv_12"]]
    for d in described:
        assert d["bands"] >= 2 and 0 < d["extra_cycles"] < d["saved_bytes"] * bands.CYCLES_PER_BYTE
    assert bands.choose(graph, "auto", 4 << 20)[1] == []
    assert bands.choose(graph, "auto", 0)[1] == []
    assert "bands" not in planner.plan_with_bands(graph, "auto", 0, "auto", 0)


@pytest.mark.unit
def test_auto_bands_no_stage_without_a_depthwise_reading_its_wide_tensor(tmp_path):
    """The same blocks with dense 3x3s: the wide tensor outgrows the cache just the same,
    but such stages measured no gain in bands (SqueezeNet, ResNet-18, RegNetX): none."""
    path = _inverted_residuals(tmp_path / "dense.onnx", h=56, w=56, c=24, wide=144, group=1)
    graph = optimize(import_model(path), "test")
    tactics.annotate(graph, tactics.Selection(load_target("x86_64").cpu, {
        n["node"]: n["tactic"] for n in tactics.select(graph, load_target("x86_64").cpu)["nodes"]}))
    assert bands.choose(graph, "auto", 1 << 20)[1] == []


def _verify(tmp_path, model, target, setting, opt="speed"):
    r = run_scons(f"model={model}", f"target={target}", f"bands={setting}", f"opt={opt}",
                  f"build_dir={tmp_path / setting}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "MISMATCH" not in r.stdout and "warning" not in r.stdout + r.stderr
    folder = tmp_path / setting / target / "ir"
    with open(folder / "plan.json") as f:
        plan = json.load(f)
    with open(folder / "verify" / "report.json") as f:
        report = json.load(f)["outputs"][0]
    return plan, report, (folder / "ir.c").read_text()


@pytest.mark.parametrize("target,setting,c", [
    ("x86_64", "2", 5), ("x86_64", "5", 5), *slow(*in_qemu(("aarch64", "3", 5))), *in_qemu(("armv7a", "4", 5)),
    ("x86_64", "3", 1), *in_qemu(("aarch64", "4", 1)),
    pytest.param("x86_64-avx512", "3", 5, marks=pytest.mark.skipif(
        "avx512f" not in host_cpu_flags(), reason="this host has no AVX-512"))])
def test_forced_bands_verify(tmp_path, target, setting, c):
    """Every stage in N bands (tails: 23 and 12 rows never divide evenly; the stride-2
    block's uneven pads; the fused residual read from the stage's source; with one
    channel, the sources' rows read in place) matches onnxruntime, and the band kernels
    are the ones called."""
    model = _inverted_residuals(tmp_path / "ir.onnx", c=c)
    plan, report, code = _verify(tmp_path, model, target, setting)
    assert report["ok"] and plan["bands"] and all(d["bands"] == int(setting) for d in plan["bands"])
    assert "__p1" in code or "_p1" in code
    views = [s for s in plan["schedule"] if s["op"] == "Slice" and s["code"] == "none"]
    assert bool(views) == (c == 1)


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("armv7")])
def test_int8_bands_match_exactly(tmp_path, target):
    """An int8 network (a one-channel input: its first stage's rows are views) in 3 bands
    per block gives onnxruntime's codes exactly."""
    r = run_scons("model=models/int8/kws_qop.onnx", f"target={target}", "ram=1M", "bands=3",
                  f"build_dir={tmp_path}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "max abs error 0," in r.stdout and "row bands (3, 3, 3 bands" in r.stdout
    plan = json.loads((tmp_path / target / "kws_qop" / "plan.json").read_text())
    assert any(s["op"] == "Slice" and s["code"] == "none" for s in plan["schedule"])


def test_bands_with_the_reference_kernels_give_the_same_outputs(tmp_path):
    """opt=size kernels compute every element by the same arithmetic in a band."""
    model = _inverted_residuals(tmp_path / "ir.onnx")
    banded = _verify(tmp_path, model, "x86_64", "3", opt="size")
    plain = _verify(tmp_path, model, "x86_64", "off", opt="size")
    assert "bands" in banded[0] and "bands" not in plain[0]
    assert banded[1]["max_abs_error"] == plain[1]["max_abs_error"]
    assert banded[1]["worst"] == plain[1]["worst"]


def test_opt_size_and_cortex_m_plans_band_nothing_by_default(tmp_path):
    """bands=auto on a big block: x86_64 bands it with opt=speed; opt=size, and
    Cortex-M4 (no cache), do not."""
    model = _inverted_residuals(tmp_path / "ir.onnx", h=96, w=96, c=8, wide=48)  # 1.8 MB wide
    plans = {}
    for name, options in (("speed", ["target=x86_64"]), ("size", ["target=x86_64", "opt=size"]),
                          ("m4", ["target=armv7", "ram=64M", "flash=64M"])):
        plan = tmp_path / name / ("armv7" if name == "m4" else "x86_64") / "ir" / "plan.json"
        r = run_scons(f"model={model}", *options, f"build_dir={tmp_path / name}", str(plan))
        assert r.returncode == 0, r.stdout + r.stderr
        with open(plan) as f:
            plans[name] = json.load(f)
    assert plans["speed"].get("bands")
    assert "bands" not in plans["size"] and "bands" not in plans["m4"]


def test_bad_bands_setting_is_one_line(tmp_path):
    r = run_scons("model=models/tiny_cnn.onnx", "bands=1", f"build_dir={tmp_path}")
    assert r.returncode == 2
    assert_one_clear_line(r, "bands=1 is not known", "bands= takes")


def test_forced_bands_on_a_graph_without_a_block_is_one_line(tmp_path):
    path = _save(tmp_path / "g.onnx", [helper.make_node("Relu", ["x"], ["y"])], [1, 2, 4, 4], [1, 2, 4, 4], [])
    r = run_scons(f"model={path}", "bands=2", f"build_dir={tmp_path}")
    assert r.returncode == 2
    assert_one_clear_line(r, "bands=2", bands.NO_BLOCK)

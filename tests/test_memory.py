"""Memory forwarding, in-place kernels, scratch, scheduling, pools and io=arena: what the
plan decides on small graphs, and end-to-end verify of a model that exercises all of it."""

import json
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import in_qemu, onnx_model, verify_clean
from onnxcc import ops
from onnxcc.plan import stage as planner
from onnxcc.importer.stage import import_model
from onnxcc.plan import liveness
from onnxcc.plan.forwarding import forward
from onnxcc.plan.algorithms import ALGORITHMS, auto
from onnxcc.plan.problem import Problem, collisions
from onnxcc.passes import optimize
from onnxcc.target import host_cpu_flags

RNG = np.random.default_rng(11)
F = TensorProto.FLOAT


def w(*shape):
    return (RNG.standard_normal(shape) * 0.3).astype(np.float32)


def save(path, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, F, [None] * r) for n, r in outputs],
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = onnx_model(graph)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return str(path)


def node(op, inputs, output, **attrs):
    """A node named after its output."""
    return helper.make_node(op, inputs, [output], name=output, **attrs)


def conv(x, y, wname, cin, cout, k, stride=1, group=1, inits=None):
    inits[wname] = w(cout, cin // group, k, k)
    inits[wname + "_b"] = w(cout)
    return node("Conv", [x, wname, wname + "_b"], y, kernel_shape=[k, k],
                strides=[stride, stride], pads=[k // 2] * 4, group=group)


def memory_mix(path):
    """Every kind of forwarding in one model. Most layers work on one map size (16x12x12),
    so every kernel that writes over its input keeps the peak down and the planner keeps
    it: depthwise and pooling with a channel of scratch, 1x1 with a pixel of it,
    elementwise ops, Softmax and LayerNormalization, then a strided depthwise straight
    over its input; smaller: a Concat whose producers write their slices, a residual Add
    fused into a Conv, a Flatten into the caller's output and a Concat written straight
    into the caller's output."""
    i = {"scale": w(1, 16, 1, 1), "ln_s": w(12), "ln_b": w(12)}
    nodes = [
        conv("x", "c0", "w_c0", 8, 16, 3, inits=i),  # 16x12x12 (x is the caller's)
        conv("c0", "dw1", "w_dw1", 16, 16, 3, group=16, inits=i),  # over c0, with scratch
        node("Relu", ["dw1"], "dw1r"),  # (fused into dw1)
        conv("dw1r", "pw1", "w_pw1", 16, 16, 1, inits=i),  # with a pixel of scratch
        node("MaxPool", ["pw1"], "mp1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),  # scratch
        node("Sigmoid", ["mp1"], "sg"),
        node("Mul", ["sg", "scale"], "mul"),
        node("Softmax", ["mul"], "sm", axis=1),
        node("LayerNormalization", ["sm", "ln_s", "ln_b"], "ln", axis=-1),
        conv("ln", "dw2", "w_dw2", 16, 16, 3, stride=2, group=16, inits=i),  # 6x6, straight
        conv("dw2", "pw2", "w_pw2", 16, 32, 1, inits=i),  # 1x1 growing 16 -> 32
        node("MaxPool", ["pw2"], "mp2", kernel_shape=[2, 2], strides=[2, 2]),  # 32x3x3
        conv("mp2", "a", "w_a", 32, 8, 1, inits=i),
        conv("mp2", "b", "w_b", 32, 8, 3, inits=i),
        node("Concat", ["a", "b"], "cat", axis=1),  # slices, 16x3x3
        conv("cat", "c1", "w_c1", 16, 16, 3, inits=i),
        conv("c1", "c", "w_c", 16, 16, 3, inits=i),
        node("Add", ["c", "cat"], "res"),  # fused into conv c, which may write over cat
        node("GlobalAveragePool", ["res"], "gap"),
        node("Flatten", ["gap"], "out0", axis=1),  # into the caller's output
    ]
    i["g1"], i["g2"] = w(16, 5), w(16, 3)
    nodes += [node("Flatten", ["gap"], "flat", axis=1),
              node("MatMul", ["flat", "g1"], "h1"),
              node("MatMul", ["flat", "g2"], "h2"),
              node("Concat", ["h1", "h2"], "out1", axis=1)]  # into the caller's output
    return save(path, nodes, [("x", [1, 8, 12, 12])], [("out0", 2), ("out1", 2)], i)


def planned(path, **options):
    graph = optimize(import_model(path), path)
    return graph, planner.plan(graph, **options)


def step(plan, node):
    return next(s for s in plan["schedule"] if s["node"] == node)


def check_plan(graph, plan):
    """The plan's offsets, checked against buffers recomputed from its schedule: no two
    share a byte at a step where both are live, offsets are aligned, no pool below its
    lower bound."""
    order = [s["index"] for s in plan["schedule"]]
    f = forward(graph, order, plan["io"] == "arena",
                in_place={s["index"] for s in plan["schedule"] if "overwrites" in s})
    assert {graph.nodes[k].name: x for k, x in f.overwrites.items()} == \
        {s["node"]: s["overwrites"] for s in plan["schedule"] if "overwrites" in s}
    buffers = {p.buffer.name: p.buffer for p in liveness.buffers(graph, order, f, plan["alignment"])}
    for pool in plan["pools"]:
        names = [b["name"] for b in pool["buffers"]]
        assert collisions([buffers[n] for n in names], [b["offset"] for b in pool["buffers"]]) == []
        assert pool["bytes"] >= pool["lower_bound_bytes"]
    assert sum(len(p["buffers"]) for p in plan["pools"]) == len(buffers)


@pytest.mark.unit
def test_forwarding_decisions(tmp_path):
    graph, plan = planned(memory_mix(tmp_path / "m.onnx"))
    check_plan(graph, plan)
    t = plan["tensors"]
    map_bytes = 16 * 12 * 12 * 4
    # every layer on the big map writes over its input, as long as the caller's is not it
    assert "overwrites" not in step(plan, "c0")
    for name, over, scratch in (("dw1", "c0", map_bytes // 16), ("pw1", "dw1r", 16 * 4),
                                ("mp1", "pw1", map_bytes // 16), ("sg", "mp1", None),
                                ("mul", "sg", None), ("sm", "mul", None), ("ln", "sm", None),
                                ("dw2", "ln", None)):
        assert step(plan, name)["overwrites"] == over, name
        assert step(plan, name).get("scratch", {}).get("bytes") == scratch, name
    # the peak: one map and one channel of scratch
    assert plan["arena_bytes"] == plan["lower_bound_bytes"] == map_bytes + map_bytes // 16
    # the Concat needs no code: its producers write into their slices
    assert step(plan, "cat")["code"] == "none"
    assert t["a"]["offset"] == t["cat"]["offset"] and t["b"]["offset"] == t["cat"]["offset"] + 8 * 9 * 4
    # the residual Add is fused into conv c (which takes the Add's output name)
    assert "Add" not in [s["op"] for s in plan["schedule"]] and "res" in t
    # the Flatten to out0 moves gap into the caller's output; out1's slices are in the caller's too
    assert step(plan, "out0")["code"] == "none" and t["gap"] == {"output": 0, "offset": 0}
    assert t["h1"] == {"output": 1, "offset": 0} and t["h2"] == {"output": 1, "offset": 20}
    # every scratch buffer lives during its own step only
    scratch = [b for p in plan["pools"] for b in p["buffers"] if b["name"].endswith(".scratch")]
    assert scratch and all(b["first"] == b["last"] for b in scratch)
    assert plan["arena_bytes"] < plan["graph_lower_bound_bytes"]


@pytest.mark.unit
def test_writing_over_inputs_wherever_possible(tmp_path):
    """What forwarding does with in-place kernels allowed everywhere, following the schedule."""
    graph = optimize(import_model(memory_mix(tmp_path / "m.onnx")), "m")
    order = list(range(len(graph.nodes)))
    f = forward(graph, order, io_in_arena=False)
    over = {graph.nodes[k].name: x for k, x in f.overwrites.items()}
    assert over["pw2"] == "dw2" and over["mp2"] == "pw2"  # 1x1 growing, pool straight over
    assert over["c"] == "cat"  # conv c, with the residual Add fused, over the residual
    assert "c0" not in over and "a" not in over  # x is the caller's; mp2 is read by b later
    assert all(x != "x" for x in over.values())


@pytest.mark.unit
def test_in_place_only_where_it_keeps_the_peak_down(tmp_path):
    """A chain of Fire modules: writing each squeeze over the concat before it leaves the
    small output at the bottom of a large buffer, and the next concat cannot fit beside it;
    the planner keeps only in-place kernels that lower the peak, and reaches the bound."""
    i, nodes, x, c = {}, [], "x", 16
    for k in range(6):
        nodes += [conv(x, f"s{k}", f"ws{k}", c, 8, 1, inits=i),
                  conv(f"s{k}", f"e{k}", f"we{k}", 8, 16, 1, inits=i),
                  conv(f"s{k}", f"f{k}", f"wf{k}", 8, 16, 3, inits=i),
                  node("Concat", [f"e{k}", f"f{k}"], f"cat{k}", axis=1)]
        x, c = f"cat{k}", 32
    path = save(tmp_path / "fire.onnx", nodes, [("x", [1, 16, 8, 8])], [(x, 4)], i)
    graph = optimize(import_model(path), path)
    plan = planner.plan(graph, schedule="graph")
    check_plan(graph, plan)
    assert plan["arena_bytes"] == plan["lower_bound_bytes"]
    order = list(range(len(graph.nodes)))
    f = forward(graph, order, io_in_arena=False)
    everywhere = [p.buffer for p in liveness.buffers(graph, order, f, 16)]
    assert auto(Problem(everywhere)).bytes > plan["arena_bytes"]


@pytest.mark.unit
def test_in_place_needs_the_input_to_die(tmp_path):
    # r is read by both Sigmoid and Add: Sigmoid cannot write over it; Add can (r dies there)
    path = save(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["r"]),
                                     helper.make_node("Sigmoid", ["r"], ["s"]),
                                     helper.make_node("Add", ["s", "r"], ["y"]),
                                     helper.make_node("Tanh", ["y"], ["z"])],
                [("x", [4, 8])], [("z", 2)], {})
    graph = import_model(path)  # unoptimized: nothing fused
    plan = planner.plan(graph)
    assert "overwrites" not in step(plan, graph.nodes[1].name)
    assert step(plan, graph.nodes[2].name)["overwrites"] in ("s", "r")
    assert plan["tensors"]["s"]["offset"] != plan["tensors"]["r"]["offset"]


@pytest.mark.unit
def test_kernel_writing_over_its_input_drops_restrict(tmp_path):
    from onnxcc.codegen.lowering import lower_graph
    path = memory_mix(tmp_path / "m.onnx")
    graph, plan = planned(path)
    steps, kernels = lower_graph(graph, "m", path, plan)
    shared = [k for k in kernels if k.call.overwrites]
    assert shared
    for k in shared:
        sig = k.signature(graph)
        for out, inp in k.call.overwrites.items():
            assert f"*{out}" in sig and f"*{inp}" in sig  # no restrict on either
    assert all("restrict" in k.signature(graph) for k in kernels if not k.call.overwrites)


@pytest.mark.unit
def test_declared_scratch_is_planned(tmp_path, monkeypatch):
    """A kernel that declares scratch (as an im2col tactic would) gets it in the arena,
    live during its own step only, and it never overlaps what that step reads or writes."""
    path = save(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["r"]),
                                     helper.make_node("Tanh", ["r"], ["y"])],
                [("x", [64])], [("y", 1)], {})
    graph = import_model(path)
    lower_unary = ops.LOWERINGS["Tanh"]
    monkeypatch.setitem(ops.LOWERINGS, "Tanh", lambda node, g: dataclass_replace(
        lower_unary(node, g), scratch_bytes=100))
    plan = planner.plan(graph, schedule="graph")
    tanh = step(plan, graph.nodes[1].name)
    (buf,) = [b for b in plan["pools"][0]["buffers"] if b["name"].endswith(".scratch")]
    assert tanh["scratch"] == {"pool": "arena", "offset": buf["offset"], "bytes": 100}
    assert buf["bytes"] == 112 and buf["first"] == buf["last"] == 1
    r = plan["tensors"]["r"]["offset"]
    assert buf["offset"] >= r + 256 or buf["offset"] + 112 <= r


def dataclass_replace(call, **changes):
    from dataclasses import replace
    return replace(call, **changes)


@pytest.mark.unit
def test_memory_aware_schedule_runs_the_freeing_branch_first(tmp_path):
    # the graph's order keeps a and b (big) alive together; finishing a's branch first
    # frees a before b is made
    i = {"w1": w(64, 2), "w2": w(64, 2)}
    path = save(tmp_path / "s.onnx", [
        node("Tanh", ["x"], "a"),  # [1,64]
        node("Sigmoid", ["x"], "b"),  # [1,64]
        node("MatMul", ["a", "w1"], "a2"),  # [1,2]: a dies here
        node("MatMul", ["b", "w2"], "b2"),  # [1,2]: b dies here
        node("Add", ["a2", "b2"], "y")], [("x", [1, 64])], [("y", 2)], i)
    graph = import_model(path)
    in_order = planner.plan(graph, schedule="graph")
    aware = planner.plan(graph, schedule="memory")
    assert aware["lower_bound_bytes"] < in_order["lower_bound_bytes"]
    assert [s["node"] for s in aware["schedule"]][:2] in (["a", "a2"], ["b", "b2"])
    check_plan(graph, aware)


@pytest.mark.unit
@pytest.mark.parametrize("name", ["auto", "greedy_by_size", "greedy_by_conflicts", "greedy_by_start",
                                  "annealing", "exact"])
def test_planners_on_a_model(tmp_path, name):
    path = memory_mix(tmp_path / "m.onnx")
    graph, plan = planned(path, planner=name)
    check_plan(graph, plan)
    pool = plan["pools"][0]
    if name != "auto":
        assert pool["algorithm"] == name
        return
    # auto names the algorithm whose placement it kept, and none of them does better
    others = {a: planned(path, planner=a)[1]["pools"][0]["bytes"] for a in ALGORITHMS if a != "auto"}
    assert pool["algorithm"] in others
    assert pool["bytes"] <= min(others.values())


@pytest.mark.unit
def test_plan_is_deterministic(tmp_path):
    path = memory_mix(tmp_path / "m.onnx")
    plans = [json.dumps(planned(path, planner="annealing", io="arena")[1]) for _ in range(2)]
    assert plans[0] == plans[1]


@pytest.mark.unit
def test_io_in_arena_has_accessors_and_may_write_over_inputs(tmp_path):
    graph, plan = planned(memory_mix(tmp_path / "m.onnx"), io="arena")
    check_plan(graph, plan)
    assert plan["io_bytes"] == 0 and plan["arena_bytes"] < plan["graph_lower_bound_bytes"]
    assert {"pool", "offset"} <= set(plan["tensors"]["x"])
    # outputs outlive the run: they are planned apart from each other
    assert plan["tensors"]["out0"]["offset"] != plan["tensors"]["out1"]["offset"]
    path = save(tmp_path / "e.onnx", [node("Relu", ["x"], "r"), node("Tanh", ["r"], "y")],
                [("x", [64])], [("y", 1)], {})
    graph = import_model(path)
    plan = planner.plan(graph, io="arena")
    assert step(plan, "r")["overwrites"] == "x"
    assert plan["arena_bytes"] == 256  # input, r and output in one place


def test_plan_of_kws_is_consistent(scons):
    # (opt=size: the reference kernels, which write over their inputs; docs/speed.md)
    r = scons("model=models/kws.onnx", "opt=size")
    assert r.returncode == 0, r.stderr
    plan = json.loads((scons.build_dir / "x86_64" / "kws" / "plan.json").read_text())
    assert plan["arena_bytes"] >= plan["lower_bound_bytes"] > 0
    assert plan["arena_bytes"] + plan["io_bytes"] < plan["graph_lower_bound_bytes"]
    assert "[plan] kws: arena" in r.stdout and "liveness lower bound of the graph" in r.stdout
    assert [s["op"] for s in plan["schedule"]][0] == "Conv"
    header = (scons.build_dir / "x86_64" / "kws" / "kws.h").read_text()
    assert f"#define KWS_ARENA_BYTES {plan['arena_bytes']}u" in header
    # Flatten is a view of the pool's output: no code, no memory of its own
    assert step(plan, "flatten")["code"] == "none"
    assert plan["tensors"]["flatten"] == plan["tensors"]["avgpool"]


OPTIONS = ["", "io=arena", "pools=fast:1K,slow", "io=arena pools=fast:2K,slow:64K",
           "planner=exact schedule=graph", "planner=annealing", "fuse=0"]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.slow
def test_verify_memory_mix(scons, tmp_path, options):
    r = scons(f"model={memory_mix(tmp_path / 'mix.onnx')}", *options.split(), "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[verify] mix on x86_64" in r.stdout and "warning" not in r.stdout + r.stderr


@pytest.mark.emulated
@pytest.mark.parametrize("options", ["", "io=arena pools=fast:2K,slow"])
@pytest.mark.slow
def test_verify_memory_mix_on_armv7(scons, tmp_path, options):
    r = scons("target=armv7", f"model={memory_mix(tmp_path / 'mix.onnx')}", *options.split(),
              "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[verify] mix on armv7" in r.stdout and "warning" not in r.stdout + r.stderr



def growing_1x1(path, residual=False):
    """A 1x1 expansion (6 -> 22 channels, 13x11 pixels: tails in both) written over its
    input, the peak of the graph: y's channels 0..5 land on x and wait in the scratch
    block, 6..21 lie past x's end and are stored straight (a row block of tiles straddles
    the two). Its epilogue Swish, or (``residual``) Relu then an Add of a tensor read
    later again."""
    i = {}
    nodes = [conv("x", "c0", "w_c0", 5, 6, 3, inits=i), node("Relu", ["c0"], "c0r"),
             conv("c0r", "e", "w_e", 6, 22, 1, inits=i)]
    if residual:
        nodes += [conv("x", "r", "w_r", 5, 22, 3, inits=i), node("Relu", ["e"], "er"),
                  node("Add", ["er", "r"], "s"), node("Mul", ["s", "r"], "a")]
    else:
        nodes += [node("Sigmoid", ["e"], "es"), node("Mul", ["e", "es"], "a")]
    nodes.append(node("GlobalAveragePool", ["a"], "out"))
    return save(path, nodes, [("x", [1, 5, 13, 11])], [("out", 4)], i)


@pytest.mark.parametrize("target", ["x86_64", "x86_64-avx512", *in_qemu("aarch64")])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.slow
def test_growing_1x1_over_its_input(scons, tmp_path, target, residual):
    """The expansion runs gemm1x1's pixel tiles over its input with a block of only the
    channels that land on x (the others stored straight), and matches onnxruntime."""
    if target == "x86_64-avx512" and "avx512f" not in host_cpu_flags():
        pytest.skip("this host has no AVX-512")
    model = growing_1x1(tmp_path / "grow.onnx", residual)
    verify_clean(scons, model, f"target={target}", "tactic=e:gemm1x1")
    out = scons.build_dir / target / "grow"
    plan = json.loads((out / "plan.json").read_text())
    assert step(plan, "e")["overwrites"] == "c0r"
    kernels = (out / "grow_kernels.c").read_text()
    grow = next(k for k in kernels.split("\n}\n") if "conv2d_1x1_f32_t" in k and "blk" in k)
    assert "? blk + " in grow and "r < 6; ++r" in grow  # 6 channels held, the rest straight


PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include "mix.h"

static _Alignas(MIX_FAST_ALIGN) uint8_t fast[MIX_FAST_BYTES + 1];
static _Alignas(MIX_SLOW_ALIGN) uint8_t slow[MIX_SLOW_BYTES + 1];

int main(void)
{
    float *x = mix_input0(fast, slow);
    for (unsigned i = 0; i < MIX_INPUT0_BYTES / sizeof(float); ++i)
        x[i] = (float)((int)(i % 13u) - 6) / 6.0f;
    if (mix_run(fast + 1, slow) == 0)  /* a misaligned pool is refused */
        return 2;
    if (mix_run(fast, slow) != 0)
        return 1;
    const float *y0 = mix_output0(fast, slow), *y1 = mix_output1(fast, slow);
    for (unsigned i = 0; i < MIX_OUTPUT0_BYTES / sizeof(float); ++i)
        printf("%.9g\n", y0[i]);
    for (unsigned i = 0; i < MIX_OUTPUT1_BYTES / sizeof(float); ++i)
        printf("%.9g\n", y1[i]);
    return 0;
}
"""


@pytest.mark.slow
def test_pools_and_io_in_arena_through_the_c_api(scons, tmp_path):
    import onnxruntime as ort
    model = memory_mix(tmp_path / "mix.onnx")
    r = scons(f"model={model}", "io=arena", "pools=fast:2K,slow")
    assert r.returncode == 0, r.stderr
    out = scons.build_dir / "x86_64" / "mix"
    header = (out / "mix.h").read_text()
    assert "int mix_run(void *fast, void *slow);" in header
    (tmp_path / "main.c").write_text(PROGRAM)
    cc = subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{out}",
                         str(tmp_path / "main.c"), str(out / "libmix.a"), "-lm",
                         "-o", str(tmp_path / "main")], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True)
    assert run.returncode == 0, run.returncode
    got = np.array([float(v) for v in run.stdout.split()], np.float32)
    x = ((np.arange(8 * 12 * 12) % 13 - 6) / 6).astype(np.float32).reshape(1, 8, 12, 12)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # one thread: the reference's sums in one order
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    expected = np.concatenate([o.reshape(-1) for o in session.run(None, {"x": x})])
    # verify's float32 agreement (the kernels' sums fuse multiply-adds and run in tiles)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    plan = json.loads((out / "plan.json").read_text())
    assert [p["name"] for p in plan["pools"]] == ["fast", "slow"]
    assert plan["pools"][0]["bytes"] <= 2048 and plan["pools"][1]["bytes"] > 0


@pytest.mark.parametrize("options, message", [
    ("planner=magic", "planner=magic is not known"), ("schedule=random", "schedule=random"),
    ("io=heap", "io=heap"), ("pools=a:64,b:64", "pools too small"), ("pools=Fast", "pool name")])
def test_bad_memory_options(scons, options, message):
    r = scons("model=models/tiny_cnn.onnx", options)
    assert r.returncode != 0
    assert message in r.stdout + r.stderr and "Traceback" not in r.stdout + r.stderr


IN_PLACE_CASES = {
    "global_average_pool": ([node("GlobalAveragePool", ["x"], "y")], [1, 4, 5, 5], 4, {}),
    "max_pool_stride_1": ([node("MaxPool", ["x"], "y", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
                          [1, 3, 6, 6], 4, {}),
    "average_pool_strided": ([node("AveragePool", ["x"], "y", kernel_shape=[3, 3], strides=[2, 2])],
                             [1, 3, 7, 7], 4, {}),
    "softmax": ([node("Softmax", ["x"], "y", axis=1)], [2, 5, 3], 3, {}),
    "layer_norm": ([node("LayerNormalization", ["x", "s"], "y", axis=-1)], [3, 8], 2, {"s": w(8)}),
    "sub_broadcast": ([node("Sub", ["x", "b"], "y")], [2, 3, 4], 3, {"b": w(3, 1)}),
    "tanh": ([node("Tanh", ["x"], "y")], [3, 7], 2, {}),
    "depthwise_dilated": ([node("Conv", ["x", "wd"], "y", group=3, pads=[2, 2, 2, 2],
                                dilations=[2, 2])], [1, 3, 6, 6], 4, {"wd": w(3, 1, 3, 3)}),
    "pointwise_batches": ([node("Conv", ["x", "wp"], "y")], [2, 4, 3, 3], 4, {"wp": w(3, 4, 1, 1)}),
}


@pytest.mark.parametrize("case", sorted(IN_PLACE_CASES))
def test_single_op_writes_over_its_input_in_the_arena(scons, tmp_path, case):
    nodes, shape, rank, inits = IN_PLACE_CASES[case]
    path = save(tmp_path / f"{case}.onnx", nodes, [("x", shape)], [("y", rank)], inits)
    # (opt=size: the reference kernels, which write over their inputs; docs/speed.md)
    r = scons(f"model={path}", "io=arena", "opt=size", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[verify]" in r.stdout and "warning" not in r.stdout + r.stderr
    plan = json.loads((scons.build_dir / "x86_64" / case / "plan.json").read_text())
    assert plan["schedule"][0]["overwrites"] == "x"


def slice_node(x, y, inits, starts, ends, axes, steps=None):
    names = [f"{y}_{k}" for k in ("starts", "ends", "axes", "steps")][:4 if steps else 3]
    for n, v in zip(names, (starts, ends, axes, steps)):
        inits[n] = np.array(v, np.int64)
    return helper.make_node("Slice", [x] + names, [y], name=y)


def slices_mix(path):
    """Slices and Splits whose outputs are contiguous runs of their input (a channel range
    of one image, a one-channel image's rows, a channel split of the caller's input) next
    to ones that are not (every other channel, rows of several channels, a split into the
    caller's output), and a Relu that may write over
    the sliced tensor only once its slice is read."""
    i = {}
    nodes = [
        node("Split", ["x"], "unused", axis=1),  # replaced below: two outputs
        conv("x0", "c0", "w_c0", 3, 4, 3, inits=i),
        conv("x", "t", "w_t", 8, 6, 3, inits=i),  # 6x6x5
        slice_node("t", "ch", i, [2], [5], [1]),  # channels 2..4: a view
        slice_node("t", "odd", i, [1], [6], [1], [2]),  # a copy
        slice_node("t", "rows", i, [1], [4], [2]),  # rows of 6 channels: a copy
        node("Relu", ["t"], "tr"),  # may write over t only after ch is read
        conv("ch", "cc", "w_cc", 3, 4, 1, inits=i),
        conv("x", "one", "w_one", 8, 1, 3, inits=i),  # one channel
        slice_node("one", "band", i, [2], [-1], [2]),  # rows 2..4: a view
        conv("band", "bc", "w_bc", 1, 4, 3, inits=i),
        node("GlobalAveragePool", ["tr"], "g1"),
        node("GlobalAveragePool", ["odd"], "g2"),
        node("GlobalAveragePool", ["rows"], "g3"),
        node("GlobalAveragePool", ["bc"], "g4"),
        node("Concat", ["g1", "g2", "g3", "g4"], "gs", axis=1),
        node("Add", ["cc", "c0"], "sum"),
        node("Concat", ["sum", "h1"], "cat", axis=1),
    ]
    nodes[0] = helper.make_node("Split", ["x", "sizes"], ["x0", "x1"], name="split_x", axis=1)
    nodes.insert(1, helper.make_node("Split", ["x1", "sizes2"], ["out_a", "h1"], name="split_out", axis=1))
    i["sizes"], i["sizes2"] = np.array([3, 5], np.int64), np.array([1, 4], np.int64)
    return save(path, nodes, [("x", [1, 8, 6, 5])], [("gs", 4), ("cat", 4), ("out_a", 4)], i)


@pytest.mark.unit
def test_contiguous_slices_and_splits_are_views(tmp_path):
    graph, plan = planned(slices_mix(tmp_path / "s.onnx"))
    check_plan(graph, plan)
    t = plan["tensors"]
    code = {s["node"]: s["code"] for s in plan["schedule"]}
    # a channel split of the caller's input: both parts inside it
    assert code["split_x"] == "none"
    assert t["x0"] == {"input": 0, "offset": 0} and t["x1"] == {"input": 0, "offset": 3 * 30 * 4}
    # channels 2..4 of t, and rows 2..4 of a one-channel image: inside their input
    assert code["ch"] == "none" and t["ch"]["offset"] == t["t"]["offset"] + 2 * 30 * 4
    assert code["band"] == "none" and t["band"]["offset"] == t["one"]["offset"] + 2 * 5 * 4
    # steps, rows of several channels, a part the caller owns: copies
    assert code["odd"] == code["rows"] == code["split_out"] == "kernel"
    # a Relu writing over t waits for ch (its view) to be read
    assert step(plan, "tr")["overwrites"] == "t" and step(plan, "tr")["step"] > step(plan, "cc")["step"]


@pytest.mark.parametrize("target,options", [("x86_64", ""), ("x86_64", "io=arena"),
                                            *in_qemu(("armv7", ""), ("aarch64", "io=arena"))])
def test_verify_slices_mix(scons, tmp_path, target, options):
    r = scons(f"target={target}", f"model={slices_mix(tmp_path / 's.onnx')}", *options.split(), "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"[verify] s on {target}" in r.stdout and "warning" not in r.stdout + r.stderr

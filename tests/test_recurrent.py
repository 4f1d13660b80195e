"""RNN, GRU and LSTM through both tactics: every ONNX backend node case of the three ops
with the blocked tactic forced (their weights made constants: the tactic packs them),
and models that combine what those cases leave apart -- bidirectional with sequence
lengths and initial states, GRU's two reset orders, clip with peepholes, hidden
sizes that are no whole number of vectors, custom activations -- against onnxruntime on
the host and on the Cortex-M4 (qemu); and the packing of the gate panels."""

import os
import sys
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import REPO, in_qemu, onnx_model, save_graph, slow, verify_clean
from onnxcc import ops
from onnxcc.ops.common import packing
from onnxcc.tactics import stage as tactics
from onnxcc.core.errors import OnnxccError
from onnxcc.importer.stage import import_model
from onnxcc.passes import optimize
from onnxcc.target import Cpu

sys.path.insert(0, REPO)
from conformance import cases as suites  # noqa: E402
from conformance import runner  # noqa: E402

F = TensorProto.FLOAT
AVX2 = Cpu(32, 16, True, 32768, ("avx2", "fma"), l2_bytes=1 << 20)
CORTEX_M4 = Cpu(0, 32, True, 0, ("dsp",))
CELLS = ("RNN", "GRU", "LSTM")


# --- the ONNX node cases, the blocked tactic forced -----------------------------------------

def node_cases(work):
    """[Case] of every node test of RNN, GRU and LSTM, W, R, B and P bound as constants."""
    import onnx.backend.test.case.node as generators
    found = []
    with warnings.catch_warnings():  # the generators warn about numpy casts they mean
        warnings.simplefilter("ignore")
        generated = generators.collect_testcases(None)
    for case in generated:
        op = case.model.graph.node[0].op_type if case.kind == "node" else None
        if op not in CELLS or "_expanded" in case.name:
            continue
        raw = os.path.join(work, "generated", case.name)
        suites._write_node_case(case, raw)
        folder = os.path.join(work, "cases", "node", case.name)
        c = suites.Case("node", case.name, folder, op)
        c.bound, c.input_shape = suites.bind_parameters(raw, folder, also={"W", "R", "B", "P"})
        found.append(c)
    return found


@pytest.mark.parametrize("target", [*slow("x86_64"), *in_qemu("armv7")])
def test_blocked_tactic_passes_every_recurrent_node_case(tmp_path, target):
    cases = node_cases(str(tmp_path))
    assert len(cases) >= 18 and {c.op for c in cases} == set(CELLS)
    build = str(tmp_path / "build")
    os.makedirs(build)
    results = {}
    for op in CELLS:  # a forced op type must run somewhere: one batch per op
        mine = [c for c in cases if c.op == op]
        results.update(runner.run_batch(mine, target, build, os.path.join(build, f".sconsign{op}"),
                                        jobs=2, tactic=f"{op}:blocked"))
    failed = {k: v["message"] for k, v in results.items() if v["status"] != "pass"}
    assert not failed, failed
    for c in cases:  # the tactic ran: the forced choice is in tactics.json
        with open(os.path.join(build, "node", target, c.name, "tactics.json")) as f:
            assert '"tactic": "blocked"' in f.read(), c.name


# --- models that combine the attributes ---------------------------------------------------

def _weights(rng, name, shape, scale=0.5):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def mixed_model(path):
    """A bidirectional LSTM (sequence lengths, initial h and c, peepholes, clip; 20 units:
    no whole number of vectors), GRUs with linear_before_reset 0 (initial h) and 1
    (reverse, clip), an LSTM with input_forget and custom activations, and a bidirectional
    RNN of an activation with alpha -- all on one input. (onnxruntime runs no layout 1:
    the node cases above cover it.)"""
    rng = np.random.default_rng(7)
    S, B, I = 5, 3, 7
    inits, nodes, outputs = [], [], []

    def out(name, shape):
        outputs.append(helper.make_tensor_value_info(name, F, shape))
        return name

    def cell(op, name, hidden, directions):
        gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
        inits.extend([_weights(rng, f"{name}_w", [directions, gates * hidden, I]),
                      _weights(rng, f"{name}_r", [directions, gates * hidden, hidden]),
                      _weights(rng, f"{name}_b", [directions, 2 * gates * hidden])])
        return ["x", f"{name}_w", f"{name}_r", f"{name}_b"]

    # bidirectional LSTM, every optional input
    H = 20
    inputs = cell("LSTM", "l", H, 2) + ["lens", "h0", "c0", "l_p"]
    inits += [numpy_helper.from_array(np.array([5, 2, 4], np.int32), "lens"),
              _weights(rng, "l_p", [2, 3 * H])]
    nodes.append(helper.make_node("LSTM", inputs, [out("l_y", [S, 2, B, H]), out("l_yh", [2, B, H]),
                                                   out("l_yc", [2, B, H])],
                                  hidden_size=H, direction="bidirectional", clip=1.5))
    # GRU, reset before the product, initial state
    inputs = cell("GRU", "g0", 12, 1) + ["", "gh0"]
    nodes.append(helper.make_node("GRU", inputs, [out("g0_y", [S, 1, B, 12]), out("g0_yh", [1, B, 12])],
                                  hidden_size=12, linear_before_reset=0))
    # GRU, reset after the product, reverse, clip
    inputs = cell("GRU", "g1", 9, 1)
    nodes.append(helper.make_node("GRU", inputs, [out("g1_y", [S, 1, B, 9]), ""],
                                  hidden_size=9, direction="reverse", linear_before_reset=1, clip=0.8))
    # LSTM: input_forget, custom activations, only Y_h
    inputs = cell("LSTM", "f", 16, 1)
    nodes.append(helper.make_node("LSTM", inputs, ["", out("f_yh", [1, B, 16])], hidden_size=16,
                                  input_forget=1,
                                  activations=["HardSigmoid", "ScaledTanh", "Affine"],
                                  activation_alpha=[0.3, 0.9, 0.5], activation_beta=[0.4, 1.2, 0.1]))
    # bidirectional RNN, one activation per direction with alpha
    inputs = cell("RNN", "n", 8, 2)
    nodes.append(helper.make_node("RNN", inputs, [out("n_y", [S, 2, B, 8]), out("n_yh", [2, B, 8])],
                                  hidden_size=8, direction="bidirectional",
                                  activations=["LeakyRelu", "Tanh"], activation_alpha=[0.2]))
    graph_inputs = [helper.make_tensor_value_info("x", F, [S, B, I]),
                    helper.make_tensor_value_info("h0", F, [2, B, H]),
                    helper.make_tensor_value_info("c0", F, [2, B, H]),
                    helper.make_tensor_value_info("gh0", F, [1, B, 12])]
    return _save(helper.make_graph(nodes, "mixed", graph_inputs, outputs, inits), path)


def _save(graph, path):
    """``graph`` as a checked opset-14 model at ``path``; the path."""
    model = onnx_model(graph, 14)
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return str(path)


def zero_length_model(path):
    """Every cell with sequence lengths [3, 0, 2] (an entry of no steps between two that
    run) and initial states: a bidirectional LSTM, GRUs with both reset orders (one
    reverse) and an RNN; Y, Y_h and Y_c all outputs. onnxruntime gives the entry of no
    steps zeros in Y_h and Y_c, not its initial state (the specification names neither)."""
    rng = np.random.default_rng(11)
    S, B, I = 3, 3, 5
    inits = [numpy_helper.from_array(np.array([3, 0, 2], np.int32), "lens")]
    inputs, nodes, outputs = [helper.make_tensor_value_info("x", F, [S, B, I])], [], []
    cells = [("LSTM", 2, {"direction": "bidirectional"}), ("GRU", 1, {"linear_before_reset": 0}),
             ("GRU", 1, {"linear_before_reset": 1, "direction": "reverse"}), ("RNN", 1, {})]
    for k, (op, directions, attrs) in enumerate(cells):
        gates, hidden, name = {"RNN": 1, "GRU": 3, "LSTM": 4}[op], 10, f"{op.lower()}{k}"
        inits += [_weights(rng, f"{name}_w", [directions, gates * hidden, I]),
                  _weights(rng, f"{name}_r", [directions, gates * hidden, hidden]),
                  _weights(rng, f"{name}_b", [directions, 2 * gates * hidden])]
        states = ["h0"] + (["c0"] if op == "LSTM" else [])
        for s in states:
            inputs.append(helper.make_tensor_value_info(f"{name}_{s}", F, [directions, B, hidden]))
        node_outputs = [f"{name}_y", f"{name}_yh"] + ([f"{name}_yc"] if op == "LSTM" else [])
        outputs += [helper.make_tensor_value_info(o, F, None) for o in node_outputs]
        nodes.append(helper.make_node(op, ["x", f"{name}_w", f"{name}_r", f"{name}_b", "lens"]
                                      + [f"{name}_{s}" for s in states], node_outputs,
                                      hidden_size=hidden, **attrs))
    return _save(helper.make_graph(nodes, "zero_length", inputs, outputs, inits), path)


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("armv7")])
@pytest.mark.parametrize("tactic", ["blocked", "reference"])
@pytest.mark.parametrize("make", [mixed_model, zero_length_model], ids=["mixed", "zero_length"])
def test_recurrent_models_match_onnxruntime(scons, tmp_path, target, tactic, make):
    """The mixed model, and the one whose batch entry of no steps must end in zero states."""
    model = make(tmp_path / "model.onnx")
    r = verify_clean(scons, model, f"target={target}", f"tactic=RNN:{tactic},GRU:{tactic},LSTM:{tactic}")
    if tactic == "blocked":
        assert "LSTM:blocked" in r.stdout and "GRU:blocked" in r.stdout


def test_constant_lengths_beyond_the_sequence_are_refused(scons, tmp_path):
    """sequence_lens [4, 0, 2] of a 3-step X: one line, no kernel that reads past X."""
    model = onnx.load(zero_length_model(tmp_path / "zero_length.onnx"))
    lens = next(t for t in model.graph.initializer if t.name == "lens")
    lens.CopyFrom(numpy_helper.from_array(np.array([4, 0, 2], np.int32), "lens"))
    path = tmp_path / "too_long.onnx"
    onnx.save(model, path)
    r = scons(f"model={path}")
    assert r.returncode != 0
    assert "sequence_lens [4, 0, 2] lie outside 0 .. 3 (the sequence length)" in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.unit
@pytest.mark.parametrize("activations,alphas", [(["Affine"], []), (["ThresholdedRelu"], []),
                                                (["ScaledTanh"], [0.5])])
def test_an_activation_default_onnxruntime_reads_otherwise_is_refused(tmp_path, activations, alphas):
    """Affine, ScaledTanh and ThresholdedRelu without their alpha (beta): onnxruntime takes
    0 (an RNN of Affine outputs zeros), the specification the op's default (Affine's alpha
    1): both tactics refuse in one line; with them given, they run (the mixed model)."""
    rng = np.random.default_rng(0)
    node = helper.make_node("RNN", ["x", "w", "r"], ["y"], hidden_size=4, activations=activations,
                            **({"activation_alpha": alphas} if alphas else {}))
    graph = helper.make_graph([node], "rnn", [helper.make_tensor_value_info("x", F, [3, 1, 2])],
                              [helper.make_tensor_value_info("y", F, [3, 1, 1, 4])],
                              [_weights(rng, "w", [1, 4, 2]), _weights(rng, "r", [1, 4, 4])])
    path = save_graph(tmp_path / "rnn.onnx", graph, 14)
    graph = optimize(import_model(path), path)
    for tactic in ops.TACTICS["RNN"]:
        with pytest.raises(OnnxccError, match=f"activation {activations[0]} without its (alpha|beta)"):
            tactic.lower(graph.nodes[0], graph, AVX2)


@pytest.mark.unit
def test_speed_chooses_the_blocked_tactic_and_size_the_reference(tmp_path):
    """opt=speed: the blocked tactic for the big LSTM on both CPUs, and for every node on
    the Cortex-M4 (the tiny GRU of 9 units is padded to 16 in AVX2 vectors: estimated
    slower there); opt=size: the reference kernels."""
    path = mixed_model(tmp_path / "mixed.onnx")
    graph = optimize(import_model(path), path)
    for cpu in (AVX2, CORTEX_M4):
        chosen = {n["node"]: n["tactic"] for n in tactics.select(graph, cpu, "speed")["nodes"]}
        assert chosen["LSTM_0"] == "blocked"
    assert set(chosen.values()) == {"blocked"}, chosen
    assert {n["tactic"] for n in tactics.select(graph, AVX2, "size")["nodes"]} == {"reference"}


def lstm_model(path, steps, hidden, features=40):
    rng = np.random.default_rng(3)
    inits = [_weights(rng, "w", [1, 4 * hidden, features]), _weights(rng, "r", [1, 4 * hidden, hidden])]
    node = helper.make_node("LSTM", ["x", "w", "r"], ["", "yh"], hidden_size=hidden)
    graph = helper.make_graph([node], "lstm", [helper.make_tensor_value_info("x", F, [steps, 1, features])],
                              [helper.make_tensor_value_info("yh", F, [1, 1, hidden])], inits)
    return save_graph(path, graph, 14)


@pytest.mark.unit
@pytest.mark.parametrize("hidden", [32, 512])
def test_a_microcontroller_projects_one_tile_of_steps_at_a_time(tmp_path, hidden):
    """Without a cache the projection's scratch is one row tile of steps, not the whole
    sequence; on the host the whole sequence, unless it outgrows a quarter of the L2 cache."""
    path = lstm_model(tmp_path / "lstm.onnx", 49, hidden)
    graph = optimize(import_model(path), path)
    lstm = graph.nodes[0]
    host = ops.TACTICS["LSTM"][1].lower(lstm, graph, AVX2)
    mcu = ops.TACTICS["LSTM"][1].lower(lstm, graph, CORTEX_M4)
    assert mcu.params["chunk"] == mcu.params["rows"] < 49
    if hidden == 32:
        assert host.params["chunk"] == 49
    else:
        chunk = host.params["chunk"]
        assert chunk < 49 and chunk % host.params["rows"] == 0
        assert chunk * 4 * hidden * 4 <= AVX2.l2_bytes // 4 < (chunk + host.params["rows"]) * 4 * hidden * 4
    assert mcu.scratch_bytes < 4 * 4 * hidden * (mcu.params["rows"] + 5)


# --- packing ------------------------------------------------------------------------------

@pytest.mark.unit
def test_gate_panels_put_every_gate_of_a_block_side_by_side():
    """2 directions, 3 gates of 3 units, blocks of 2 (padded to 4 units), GRU's grouping
    [[z, r], [h]]: each panel is [depth][its gates x 2 units], zero where a unit is padding."""
    d, g, h, depth = 2, 3, 3, 2
    values = np.arange(d * g * h * depth, dtype=np.float32).reshape(d, g * h, depth) + 1
    spec = packing.gates_spec(d, g, h, 2, [[0, 1], [2]], depth)
    packed = packing.pack(values, spec).reshape(d, -1)
    assert packing.packed_size(spec) == packed.size == d * g * 4 * depth
    order = packing.gate_rows(spec)
    assert list(order) == [0, 1, 3, 4, 2, -1, 5, -1, 6, 7, 8, -1]
    first_panel = packed[1, :depth * 4].reshape(depth, 4)  # direction 1, z and r of units 0, 1
    np.testing.assert_array_equal(first_panel, values[1][[0, 1, 3, 4]].T)
    uniform = packing.gates_spec(d, g, h, 2, [[0, 1], [2]], depth, width=8)
    assert packing.packed_size(uniform) == d * 2 * 8 * depth  # 12 rows in 2 panels of 8


@pytest.mark.unit
def test_gate_bias_folds_wb_and_rb_but_keeps_an_apart_gate_separate():
    h = 2
    wb, rb = np.arange(6, dtype=np.float32), 100 * np.arange(1, 7, dtype=np.float32)
    values = np.concatenate([wb, rb])[None]
    spec = packing.gate_bias_spec(1, 3, h, 2, [[0, 1, 2]], apart=2)
    packed = packing.pack(values, spec)
    np.testing.assert_array_equal(packed, [wb[0] + rb[0], wb[1] + rb[1], wb[2] + rb[2],
                                           wb[3] + rb[3], wb[4], wb[5], rb[4], rb[5]])

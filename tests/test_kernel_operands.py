"""A kernel template handed an operand that it never reads computes without it, and gcc
only warns: generate stops in one line naming the template, the node and the operand
(codegen.sources.unread_parameters); the example models' kernels all read theirs."""

import glob
import os

import pytest
from mako.lookup import TemplateLookup
from onnx import helper

from conftest import MODELS
from onnxcc.plan import stage as planner
from onnxcc.tactics import stage as tactics
from onnxcc.codegen import render
from onnxcc.codegen.stage import kernel_sources, unread_parameters
from onnxcc.core.errors import OnnxccError
from onnxcc.importer.stage import import_model
from onnxcc.passes import optimize
from onnxcc.core.paths import TEMPLATES_DIR
from onnxcc.target import load_target
from test_tactics import save_model

SIGNATURE = "void m_k(const float *restrict x, const float *restrict s, float *restrict y)"


@pytest.mark.unit
@pytest.mark.parametrize("body, unread", [
    ("{ y[0] = x[0] * s[0]; }", []),
    ("{ (void)s; y[0] = x[0]; }", []),  # a parameter meaningless by design says so
    ("{ y[0] = x[0]; /* times s[0] */ }", ["s"]),  # a comment reads nothing
    ("{ // s[0]\n    y[0] = x[0]; }", ["s"]),
    ("{ const float xs = x[0], scale = 2.0f; y[0] = xs * scale; }", ["s"]),  # whole words
    ("{ { y[0] = 1.0f; } }\nstatic float after(const float *x) { return x[0]; }", ["x", "s"]),
])
def test_unread_parameters(body, unread):
    helper_first = "static float s_of(const float *s) { return s[0]; }\n"
    assert unread_parameters(SIGNATURE, helper_first + SIGNATURE + "\n" + body) == unread


def _lowered(path, target="x86_64", opt="speed", io="caller"):
    """``path``'s graph with its tactics for ``target`` and its plan."""
    graph = optimize(import_model(path), path)
    cpu = load_target(target).cpu
    chosen = tactics.select(graph, cpu, opt)["nodes"]
    tactics.annotate(graph, tactics.Selection(cpu, {n["node"]: n["tactic"] for n in chosen}))
    return graph, planner.plan(graph, io=io)


def test_a_template_that_drops_an_operand_stops_generate(tmp_path, monkeypatch):
    """binary.c.mako computing a OP a, b named in a comment only: the real render path
    (the lookup finds the broken copy first) gives the one-line error."""
    real = open(os.path.join(TEMPLATES_DIR, "kernels", "binary.c.mako")).read()
    line = "${ind}float v = a[${ia}] ${p['op']} b[${ib}];"
    assert line in real
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "binary.c.mako").write_text(real.replace(
        line, "${ind}float v = a[${ia}] ${p['op']} a[${ia}]; /* b[${ib}] */"))
    monkeypatch.setattr(render, "_lookup", TemplateLookup(
        directories=[str(tmp_path), TEMPLATES_DIR], strict_undefined=True, input_encoding="utf-8"))
    path = str(save_model(tmp_path / "net.onnx",
                          [helper.make_node("Sub", ["x", "z"], ["d"], name="the_sub"),
                           helper.make_node("Tanh", ["d"], ["y"])],
                          {"x": [3, 5], "z": [1, 5]}, {"y": 2}, {}))
    graph, plan = _lowered(path, opt="size")
    with pytest.raises(OnnxccError) as error:
        kernel_sources(graph, plan, "net", "net.onnx")
    message = str(error.value)
    assert message.startswith("net.onnx: internal kernel bug: template binary does not read "
                              "its operand 'b' (node 'the_sub', op Sub)"), message
    assert "\n" not in message
    monkeypatch.undo()  # the templates as they are: the same graph generates
    assert "void net_binary" in kernel_sources(graph, plan, "net", "net.onnx")["c"]


@pytest.mark.parametrize("target", ["x86_64-avx512", "armv7"])
@pytest.mark.parametrize("opt, io", [("speed", "caller"), ("size", "arena")])
def test_every_example_kernel_reads_its_operands(target, opt, io):
    """The float and int8 example models, with the cost model's kernels and with the
    reference ones writing over their inputs: generate passes (it checks every kernel)."""
    models = sorted(glob.glob(os.path.join(MODELS, "*.onnx")) +
                    glob.glob(os.path.join(MODELS, "int8", "*_qdq.onnx")))
    assert len(models) >= 10
    for path in models:
        graph, plan = _lowered(path, target, opt, io)
        assert "\nvoid " in kernel_sources(graph, plan, "m", path)["c"]

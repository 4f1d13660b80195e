"""autotune=1: choose each node's tactic by running its candidates on the target.

The cost model (tactics/stage.py) only estimates. Round r compiles the model with every node's
r-th applicable tactic (its last one when it has fewer) and a profiling program that
times each step -- on the host the median of many runs in ns, on an emulated target the
instructions under qemu -icount (exact, see verbs/bench.py) -- and each node keeps its cheapest
candidate. The choice is written to a tactic file next to the model,
``<model>.tactics.<target>.json``, which later builds read (tactics/stage.py: ``tuned``), so a
build stays reproducible without measuring again. Entries for nodes a later model no
longer has are ignored; autotune again after editing the model.
"""

import json
import os
import statistics
import subprocess
import tempfile

from onnxcc import ops
from onnxcc.codegen.render import render
from onnxcc.codegen.stage import kernel_sources, run_function, weights_binary
from onnxcc.core.errors import OnnxccError
from onnxcc.core.files import write_files, write_text
from onnxcc.core.onnx_io import load_graph
from onnxcc.core.paths import RUNTIME_DIR
from onnxcc.plan.stage import plan
from onnxcc.tactics.stage import Selection, annotate
from onnxcc.target import run_captured

from .bench import MARK, command, settings

RUNS = {"monotonic": 30}  # exact counters need one run


def record_path(model_path, target_name):
    """Where the choice of ``model_path`` on ``target_name`` is recorded."""
    return f"{os.path.splitext(str(model_path))[0]}.tactics.{target_name}.json"


def candidates(graph, cpu):
    """node name -> its applicable tactics, for the nodes that have a choice."""
    result = {}
    for node in graph.nodes:
        if node.op in ops.ALIASES or node.op == "Identity":
            continue
        names = [t.name for t in ops.applicable(node, graph, cpu)]
        if len(names) > 1:
            result[node.name] = names
    return result


def _profile(graph, selection, name, target, folder):
    """Per node, what its step cost in one run (the median over the runs)."""
    clock = settings(target)["clock"]
    runs = RUNS.get(clock, 1)
    annotate(graph, selection)
    layout = plan(graph, planner="greedy_by_size")
    values = run_function(graph, layout, name, name)
    kernels = kernel_sources(graph, layout, name, name)
    blob, asm = weights_binary(graph, name, name, vector_bytes=target.cpu.simd_bytes)
    files = {f"{name}.h": render("model.h.mako", **values),
             f"{name}_kernels.c": kernels["c"], f"{name}_kernels.h": kernels["h"],
             f"{name}_weights.S": asm, f"{name}_weights.bin": blob,
             "profile.c": render("profile.c.mako", clock=clock, runs=runs, warmup=1, mark=MARK,
                                  total=False, verify_inputs=False, **values)}
    write_files({os.path.join(folder, file): content for file, content in files.items()})
    tc = target.toolchain
    elf = os.path.join(folder, "profile")
    sources = [os.path.join(folder, f) for f in ("profile.c", f"{name}_kernels.c",
                                                 f"{name}_weights.S")]
    cmd = ([tc.tool("gcc")] + tc.cflags + target.cflags + ["-std=c99", f"-I{folder}",
                                                          f"-I{RUNTIME_DIR}"]
           + sources + target.harness_sources + ["-o", elf] + tc.linkflags + target.linkflags
           + [f"-l{lib}" for lib in tc.libs])
    built = subprocess.run(cmd, capture_output=True, text=True)
    if built.returncode != 0:
        raise OnnxccError(f"autotune: the profiling program does not compile: "
                          f"{(built.stderr.strip().splitlines() or ['?'])[0]}")
    ran = run_captured(command(target, elf), timeout=1800)
    rows = [[int(v) for v in line.split()[2:]] for line in ran.stdout.splitlines()
            if line.startswith(f"{MARK} PROFILE")]
    if ran.returncode != 0 or len(rows) != runs:
        raise OnnxccError(f"autotune: the profiling program failed on {target.name} "
                          f"(exit {ran.returncode})")
    costs = {}
    for k, call in enumerate(values["calls"]):
        if call["node"] is not None:
            costs[call["node"].name] = statistics.median(row[k] for row in rows)
    return costs


def tune(graph_path, name, target):
    """{node name: fastest tactic} of the nodes that have a choice, measured on ``target``."""
    graph = load_graph(graph_path)
    cpu = target.cpu
    choices = candidates(graph, cpu)
    measured = {node: {} for node in choices}
    rounds = max((len(c) for c in choices.values()), default=0)
    with tempfile.TemporaryDirectory(prefix="onnxcc-autotune-") as folder:
        for r in range(rounds):
            selection = Selection(cpu, {n: c[min(r, len(c) - 1)] for n, c in choices.items()})
            costs = _profile(graph, selection, name, target, folder)
            for node, tactic in selection.tactics.items():
                measured[node].setdefault(tactic, costs[node])
    return {node: min(c, key=lambda t: (measured[node][t], c.index(t)))
            for node, c in choices.items()}


def run(graph_path, record, name, target):
    """Measure, and write the record (a tactic file: node name -> tactic)."""
    chosen = tune(graph_path, name, target)
    write_text(record, json.dumps(chosen, indent=1, sort_keys=True) + "\n")
    return chosen

"""bench: run a model many times on its target and report the median cost of one inference.

How a target counts is its target file's ``[bench]`` table:

  clock = "monotonic"   the host: nanoseconds of CLOCK_MONOTONIC around each run
  clock = "systick"     Cortex-M under QEMU with -icount shift=0 (one instruction per
                        virtual ns): SysTick on the processor clock ticks once per
                        ``instructions_per_tick`` instructions, deterministically
  clock = "minstret"    RISC-V: the retired-instruction counter (exact under -icount)

``runner_args`` are added to the target's runner (the -icount flags); ``runs`` and
``warmup`` override the defaults (many runs where time is noisy, few where counts are exact).
"""

import json
import os
import statistics
import subprocess

from onnxcc.codegen.render import render
from onnxcc.core.cgen import c_type
from onnxcc.core.errors import OnnxccError
from onnxcc.core.files import write_text
from onnxcc.core.onnx_io import load_graph
from onnxcc.target import CLOCKS, run_captured

from . import cycles

MARK = "ONNXCC"


def settings(target):
    """The target's bench table with defaults filled in; OnnxccError when it cannot bench."""
    b = dict(target.bench)
    if b.get("clock") not in CLOCKS:
        benchable = "targets whose target file has a [bench] clock"
        raise OnnxccError(f"target {target.name} cannot bench: it has no way to count time or "
                          "instructions (qemu-user runs do not count them)",
                          hint=f"bench on the host (x86_64) or on {benchable}")
    exact = b["clock"] != "monotonic"
    # counted runs are exact: three agree to a tick; one where every instruction is traced
    # for the cycle estimate (verbs/cycles.py), which costs time in proportion
    b.setdefault("runs", (1 if target.cycles else 3) if exact else 200)
    b.setdefault("warmup", (0 if target.cycles else 1) if exact else 20)
    b.setdefault("instructions_per_tick", 1)
    b.setdefault("runner_args", [])
    return b


def make_harness(graph_path, c_path, name, target, pools=("arena",), io_in_arena=False):
    """bench.c, for the API that ``pools`` and ``io_in_arena`` give (as verify's harness)."""
    graph = load_graph(graph_path, with_values=False)
    b = settings(target)
    text = render("bench.c.mako", name=name, NAME=name.upper(), mark=MARK, clock=b["clock"],
                  runs=b["runs"], warmup=b["warmup"],
                  inputs=[c_type(graph.info(t).dtype) for t in graph.inputs],
                  outputs=[c_type(graph.info(t).dtype) for t in graph.outputs],
                  pools=list(pools), io_in_arena=io_in_arena)
    write_text(c_path, text)


def command(target, elf, runs=None, warmup=None):
    """The command line that runs the bench harness ``elf`` on ``target``; a timed (host)
    harness takes other counts of runs and of warm-up runs as its arguments (benchmark
    scripts call it in many short chunks: a big model need not warm up 20 times a chunk)."""
    b = settings(target)
    cmd = target.run_command(elf)
    cmd = cmd[:1] + list(b["runner_args"]) + cmd[1:]
    if b["clock"] != "monotonic" or not runs:
        return cmd
    return cmd + [str(runs)] + ([str(warmup)] if warmup is not None else [])


def parse(text):
    """The per-run costs the harness printed."""
    lines = text.splitlines()
    try:
        start = next(k for k, line in enumerate(lines) if line.startswith(f"{MARK} BENCH "))
    except StopIteration:
        return []
    count = int(lines[start].split()[2])
    return [int(v) for v in lines[start + 1:start + 1 + count] if v.strip().isdigit()]


def runs_text(n):
    return "one run" if n == 1 else f"median of {n} runs"


def run(target, elf, report_path, name, timeout=1800):
    """Run the harness, write the report (JSON) and return the line to print. On a target
    with instruction timings (``[cycles]``) the run is traced, and the report adds the
    cycles they estimate (verbs/cycles.py)."""
    b = settings(target)
    try:
        traced = cycles.estimate(command(target, elf), target.cycles, timeout) \
            if target.cycles else None
        proc = traced.process if traced else run_captured(command(target, elf), timeout)
    except subprocess.TimeoutExpired:
        raise OnnxccError(f"the bench harness did not finish in {timeout} s on {target.name}",
                          where=elf) from None
    costs = parse(proc.stdout)
    if proc.returncode != 0 or len(costs) != b["runs"]:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise OnnxccError(f"the bench harness failed on {target.name} (exit {proc.returncode}): "
                          f"{tail[0]}", where=elf)
    estimate = traced.cycles / traced.instructions if traced else None
    unit = CLOCKS[b["clock"]]
    costs = [round(c * b["instructions_per_tick"]) for c in costs] if b["clock"] == "systick" else costs
    median = statistics.median(costs)
    report = {"model": name, "target": target.name, "unit": unit, "runs": len(costs),
              "median": median, "min": min(costs), "max": max(costs)}
    if estimate is not None:
        report.update(cycles_per_instruction=round(estimate, 4),
                      cycles_estimate=round(median * estimate))
    tmp = report_path + ".tmp"
    os.makedirs(os.path.dirname(os.path.abspath(report_path)), exist_ok=True)
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, report_path)
    if unit == "ns":
        return (f"[bench] {name} on {target.name}: {median / 1000:.1f} us per inference "
                f"(median of {len(costs)} runs, min {min(costs) / 1000:.1f} us)")
    line = (f"[bench] {name} on {target.name}: {median:,.0f} instructions per inference "
            f"({runs_text(len(costs))} under qemu -icount)")
    if estimate is not None:
        line += (f"; about {report['cycles_estimate']:,} cycles ({estimate:.2f} per instruction, "
                 "estimated from the core's instruction timings)")
    return line

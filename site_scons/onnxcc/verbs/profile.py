"""profile: what each step of a model's run costs on its target (profile.json and a table).

The instrumented variant is a program of its own (``profile/profile.c``, from
templates/profile.c.mako): it repeats the run function's kernel calls, each between two
readings of the clock, and links the very objects of the shipping library (``<name>.o``,
the kernels, the weights, the runtime), which profiling never changes. Before every
instrumented run it times one call of the uninstrumented ``<name>_run``, so the steps'
sum can be held against the whole inference.

How a target counts:

* a target with a ``[bench]`` clock counts as ``bench`` does (verbs/bench.py): nanoseconds of
  CLOCK_MONOTONIC on the host, instructions under ``qemu -icount`` on Cortex-M (SysTick)
  and RISC-V (minstret), where a few runs suffice (the counts are exact);
* a Linux target run in QEMU's user mode (``qemu-aarch64``, ``qemu-arm``) counts the
  nanoseconds of CPU time of the emulating thread (CLOCK_THREAD_CPUTIME_ID, which QEMU
  passes to the host): the emulated code is slow (ms per step), so a busy machine would
  preempt it within the timed steps, which CPU time does not count. Good for shares, not
  for speed.

Each step's cost is its median over the runs less what reading the clock costs (the
median of an empty step), and the total is the median of the uninstrumented runs.
"""

import hashlib
import json
import os
import statistics
import subprocess

from onnxcc.codegen.render import render
from onnxcc.codegen.stage import planned_graph, run_function
from onnxcc.core.errors import OnnxccError, one_line
from onnxcc.core.files import write_text
from onnxcc.core.macs import graph_macs
from onnxcc.plan import patches as patching
from onnxcc.plan.stage import live_at_steps
from onnxcc.target import run_captured

from . import bench, cycles

#: runs of a timed (not counted) profile in QEMU's user mode, which is slow
EMULATED_RUNS = 30
#: what a clock counts
UNITS = dict(bench.CLOCKS, cputime="ns")


def _user_mode_emulator(target):
    return bool(target.runner) and os.path.basename(target.runner[0]).startswith("qemu-") \
        and not os.path.basename(target.runner[0]).startswith("qemu-system-")


def settings(target):
    """How ``target`` counts: bench's table, or CLOCK_MONOTONIC under QEMU's user mode;
    OnnxccError when it cannot count at all."""
    if target.bench.get("clock") in bench.CLOCKS:
        return bench.settings(target)
    if _user_mode_emulator(target):
        return {"clock": "cputime", "runs": EMULATED_RUNS, "warmup": 3,
                "instructions_per_tick": 1, "runner_args": []}
    raise OnnxccError(f"target {target.name} cannot profile: it has no way to count time or "
                      "instructions", hint="profile on x86_64, aarch64, armv7, cortex-m7 or riscv32")


def digest(path):
    """The SHA-256 of a file's bytes (profile.json names the plan and tactics it measured)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _load_json(path):
    with open(path) as f:
        return json.load(f)


def make_program(graph_path, plan_path, tactics_path, c_path, name, target):
    """profile.c: the run function's steps, each timed, and the uninstrumented run."""
    s = settings(target)
    plan = _load_json(plan_path)
    graph = planned_graph(graph_path, tactics_path, plan)
    values = run_function(graph, plan, name, name)
    write_text(c_path, render("profile.c.mako", clock=s["clock"], runs=s["runs"],
                              warmup=s["warmup"], mark=bench.MARK, total=True,
                              verify_inputs=True, **values))


def _parse(text, steps):
    """(totals, rows) printed by the program: one total and one row of step costs a run."""
    totals, rows = [], []
    for line in text.splitlines():
        fields = line.split()
        if fields[:2] == [bench.MARK, "TOTAL"] and len(fields) == 3 and fields[2].isdigit():
            totals.append(int(fields[2]))
        elif fields[:2] == [bench.MARK, "PROFILE"] and len(fields) == 2 + steps \
                and all(f.isdigit() for f in fields[2:]):
            rows.append([int(f) for f in fields[2:]])
    return totals, rows


def measure(target, elf, graph_path, plan_path, tactics_path, name, timeout=1800):
    """Run the profile program; the profile (what profile.json holds)."""
    s = settings(target)
    plan = _load_json(plan_path)
    chosen = {n["node"]: n["tactic"] for n in _load_json(tactics_path)["nodes"]}
    graph = planned_graph(graph_path, tactics_path, plan)
    schedule = plan["schedule"]
    cmd = target.run_command(elf)
    cmd = cmd[:1] + list(s["runner_args"]) + cmd[1:]
    try:  # traced where the core's timings are known: each step's cycles too
        traced = cycles.estimate(cmd, target.cycles, timeout, marker=f"{bench.MARK.lower()}_step") \
            if target.cycles else None
        proc = traced.process if traced else run_captured(cmd, timeout)
    except subprocess.TimeoutExpired:
        raise OnnxccError(f"the profile program did not finish in {timeout} s on {target.name}",
                          where=elf) from None
    steps = _steps_of(proc.stdout)  # the calls, and the empty step
    totals, rows = _parse(proc.stdout, steps) if steps else ([], [])
    if proc.returncode != 0 or len(totals) != s["runs"] or len(rows) != s["runs"] \
            or steps <= len(schedule):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise OnnxccError(f"the profile program failed on {target.name} (exit "
                          f"{proc.returncode}): {one_line(tail[0])}", where=elf)
    scale = s["instructions_per_tick"] if s["clock"] == "systick" else 1
    overhead = statistics.median(row[-1] for row in rows) * scale
    cost = [max(0, statistics.median(row[k] for row in rows) * scale - overhead)
            for k in range(steps - 1)]
    total = statistics.median(totals) * scale
    live = live_at_steps(plan)
    macs = graph_macs(graph)
    steps_sum = sum(cost)
    step_cycles = _step_cycles(traced, steps) if traced else None
    nodes = []
    for k, entry in enumerate(schedule):
        nodes.append({"step": entry["step"], "node": entry["node"], "op": entry["op"],
                      "tactic": chosen.get(entry["node"], chosen.get(patching.origin(entry["node"]), "-"))
                      if entry["code"] == "kernel"
                      else entry["code"],
                      "macs": macs.get(entry["node"], 0), "cost": cost[k],
                      **({"cycles": step_cycles[k]} if step_cycles else {}),
                      "share": cost[k] / steps_sum if steps_sum else 0.0,
                      "live_bytes": live[k]})
    estimate = {"cycles_per_instruction": round(traced.cycles / traced.instructions, 4),
                "total_cycles": round(total * traced.cycles / traced.instructions)} \
        if traced else {}
    return {"model": name, "target": target.name, "clock": s["clock"], **estimate,
            "unit": UNITS[s["clock"]], "runs": s["runs"],
            "total": total, "steps_sum": steps_sum,
            "output_copies": sum(cost[len(schedule):]), "clock_overhead": overhead,
            "ratio": steps_sum / total if total else 0.0,
            "arena_bytes": plan["arena_bytes"],
            "plan_sha256": digest(plan_path), "tactics_sha256": digest(tactics_path),
            "nodes": nodes}


def _step_cycles(traced, steps):
    """Each step's estimated cycles from the traced run: what ran between its marker and
    the next, less what the empty last step took (reading the clock), as the counts are."""
    if len(traced.steps) != steps:
        raise OnnxccError(f"the traced profile split into {len(traced.steps)} steps, not {steps}")
    empty = traced.steps[-1][1]
    return [round(max(0.0, c - empty)) for _, c in traced.steps[:-1]]


def _steps_of(text):
    """How many costs a PROFILE row has: the program's calls (the schedule, then any copy
    of constant outputs), then the empty step."""
    for line in text.splitlines():
        fields = line.split()
        if fields[:2] == [bench.MARK, "PROFILE"]:
            return len(fields) - 2
    return 0


def _cost(value, unit):
    if unit == "ns":
        return f"{value / 1000:.1f} us" if value >= 1000 else f"{value:.0f} ns"
    return f"{value:,.0f}"


def format_table(profile):
    """The table ``profile`` prints: a row per step, then both totals and their ratio."""
    unit = profile["unit"]
    names = [one_line(n["node"])[:32] for n in profile["nodes"]]
    width = max([4] + [len(n) for n in names])
    time_head = "time" if unit == "ns" else "instructions"
    estimated = "total_cycles" in profile
    lines = [f"{'step':>4}  {'node':<{width}}  {'op':<18} {'tactic':<12} {'MACs':>11} "
             f"{time_head:>13}" + (f" {'cycles (est.)':>13}" if estimated else "")
             + f" {'%':>6} {'arena live':>11}"]
    for n, label in zip(profile["nodes"], names):
        lines.append(f"{n['step']:>4}  {label:<{width}}  {one_line(n['op'])[:18]:<18} "
                     f"{one_line(n['tactic'])[:12]:<12} {n['macs']:>11,} "
                     f"{_cost(n['cost'], unit):>13}"
                     + (f" {n['cycles']:>13,}" if estimated else "")
                     + f" {100 * n['share']:>6.1f} {n['live_bytes']:>11,}")
    how = (bench.runs_text(profile["runs"]) + (" under qemu -icount" if unit != "ns" else "")
           + (", CPU time" if profile["clock"] == "cputime" else ""))
    lines.append(f"steps sum {_cost(profile['steps_sum'], unit)}, whole inference "
                 f"(uninstrumented) {_cost(profile['total'], unit)} {'' if unit == 'ns' else unit}"
                 .rstrip() + f": ratio {profile['ratio']:.3f} ({how})")
    if estimated:
        lines.append(f"about {profile['total_cycles']:,} cycles "
                     f"({profile['cycles_per_instruction']:.2f} per instruction), estimated from "
                     "the core's instruction timings")
    return "\n".join(lines)


def run(target, elf, graph_path, plan_path, tactics_path, json_path, name):
    """Measure, write profile.json, and return the lines to print."""
    profile = measure(target, elf, graph_path, plan_path, tactics_path, name)
    write_text(json_path, json.dumps(profile, indent=1) + "\n")
    unit = "ns" if profile["unit"] == "ns" else "instructions"
    return (f"[profile] {name} on {target.name}: {len(profile['nodes'])} steps, {unit}\n"
            + format_table(profile))

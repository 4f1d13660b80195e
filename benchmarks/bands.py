#!/usr/bin/env python3
"""Row bands through inverted residual blocks (memory/bands.py): each zoo network built
with bands=off and bands=auto (and, with --base, by another checkout's code), timed side
by side in interleaved rounds (medians of wall time, and in parentheses of CPU time:
perf stat's task-clock, which a shared machine's load disturbs less), and, with --profile,
the banded blocks' time per block from `scons ... profile` of both builds.

    .venv/bin/python benchmarks/bands.py --only mobilenet_v2,mnasnet0_5,efficientnet_b0
    .venv/bin/python benchmarks/bands.py --targets x86_64-avx512 --profile --base /tmp/base
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCHMARKS)

import speed  # noqa: E402
import zoo_models  # noqa: E402
from onnxcc.memory.patches import origin  # noqa: E402

MODELS = ("mobilenet_v2", "mnasnet0_5", "efficientnet_b0")


def profile_blocks(path, target, build_dir, bands, groups):
    """{block (its nodes joined by '+'): ns} of a build's profile; ``groups``: the banded
    build's plan["bands"] (the same nodes summed in both builds)."""
    name = os.path.splitext(os.path.basename(path))[0]
    speed.scons(f"model={path}", f"target={target}", f"bands={bands}", f"build_dir={build_dir}", "profile")
    with open(os.path.join(build_dir, target, name, "profile.json")) as f:
        prof = json.load(f)
    block_of = {n: "+".join(g["nodes"]) for g in groups for n in g["nodes"]}
    cost = collections.Counter()
    for n in prof["nodes"]:
        node = origin(n["node"])
        if node in block_of:
            cost[block_of[node]] += n["cost"]
        elif n["op"] in ("Slice", "PatchJoin") and "__p" in n["node"]:
            cost["(slices and joins)"] += n["cost"]
    return cost


def cpu_us(elf, runs):
    """CPU microseconds of one run of a host harness: ``perf stat``'s task-clock of
    ``runs`` + 5 runs less that of 5 (start-up and weights loading cancel out). Unlike
    wall time, it leaves out the time the process waits for a core (the machine is
    shared)."""
    def clock(n):
        r = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", elf, str(n), "1"],
                           capture_output=True, text=True, check=True)
        return float(r.stderr.strip().splitlines()[-1].split(",")[0])  # ms
    return (clock(runs + 5) - clock(5)) / runs * 1000


def interleave(elfs, target, rounds, chunk):
    """{key: (median wall us, median CPU us)} of the harnesses ``elfs``, timed in
    ``rounds`` rounds of ``chunk`` runs each (and a CPU-time measure of 4 * ``chunk``
    runs), taking turns at running first."""
    wall, cpu = {k: [] for k in elfs}, {k: [] for k in elfs}
    keys = list(elfs)
    for r in range(rounds):
        for key in keys[r % len(keys):] + keys[:r % len(keys)]:
            wall[key] += speed.time_harness(elfs[key], chunk, target)
            cpu[key].append(cpu_us(elfs[key], 4 * chunk))
    return {k: (statistics.median(wall[k]) / 1000, statistics.median(cpu[k])) for k in elfs}


def profile_costs(path, target, build_dir, repo, part_of):
    """{part: ns} of the build's `scons ... profile`, its nodes summed by ``part_of(node)``
    (a profile.json entry; None: left out)."""
    name = os.path.splitext(os.path.basename(path))[0]
    speed.scons(f"model={path}", f"target={target}", f"build_dir={build_dir}", "profile", repo=repo)
    with open(os.path.join(build_dir, target, name, "profile.json")) as f:
        prof = json.load(f)
    cost = collections.Counter()
    for n in prof["nodes"]:
        part = part_of(n)
        if part is not None:
            cost[part] += n["cost"]
    return cost


def versus_base(description, models, build_dir, label, part_of, what):
    """The main of a benchmark of this checkout (``label``) against --base's: per zoo model
    and target, both harnesses timed interleaved; with --profile, both builds' profiles
    summed by ``part_of`` (profile_costs), part by part (``what``: the parts' help text)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--only", default=models)
    parser.add_argument("--targets", default="x86_64-avx512,x86_64")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help=f"{what} of both builds")
    parser.add_argument("--base", required=True, help="a checkout of the code to compare with")
    parser.add_argument("--build-dir", default=os.path.join(speed.REPO, "build", build_dir))
    args = parser.parse_args()
    if not os.path.isdir(zoo_models.DEFAULT_OUT):
        zoo_models.write()
    print(f"| model | target | base us | {label} us | {label}/base |")
    print("| --- | --- | ---: | ---: | ---: |")
    for model in args.only.split(","):
        path = os.path.join(zoo_models.DEFAULT_OUT, f"{model}.onnx")
        for target in args.targets.split(","):
            repos = {"base": args.base, label: speed.REPO}
            elfs = {k: speed.harness(path, os.path.join(args.build_dir, k), target, ["opt=speed"],
                                     repo=repo)[0] for k, repo in repos.items()}
            t = interleave(elfs, target, args.rounds, args.chunk)
            print(f"| {model} | {target} | {t['base'][0]:.0f} ({t['base'][1]:.0f}) | "
                  f"{t[label][0]:.0f} ({t[label][1]:.0f}) | {t[label][0] / t['base'][0]:.3f} "
                  f"({t[label][1] / t['base'][1]:.3f}) |", flush=True)
            if args.profile:
                parts = {k: profile_costs(path, target, os.path.join(args.build_dir, k), repo, part_of)
                         for k, repo in repos.items()}
                for part in sorted(set(parts["base"]) | set(parts[label])):
                    a, b = parts["base"].get(part, 0), parts[label].get(part, 0)
                    print(f"|   {part} | | {a / 1000:.1f} | {b / 1000:.1f} | "
                          f"{b / a if a else float('nan'):.2f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(MODELS))
    parser.add_argument("--targets", default="x86_64-avx512,x86_64")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="per-block time of both builds")
    parser.add_argument("--base", help="a checkout of the code to compare with (e.g. main's)")
    parser.add_argument("--build-dir", default=os.path.join(speed.REPO, "build", "bands-bench"))
    args = parser.parse_args()
    if not os.path.isdir(zoo_models.DEFAULT_OUT):
        zoo_models.write()
    base = " base us | auto/base |" if args.base else ""
    print(f"| model | target | bands | off us | auto us | auto/off |{base}")
    print("| --- | --- | --- | ---: | ---: | ---: |" + (" ---: | ---: |" if args.base else ""))
    for model in args.only.split(","):
        path = os.path.join(zoo_models.DEFAULT_OUT, f"{model}.onnx")
        for target in args.targets.split(","):
            elfs = {}
            for bands in ("off", "auto"):
                elfs[bands], out = speed.harness(path, os.path.join(args.build_dir, bands), target,
                                                 ["opt=speed", f"bands={bands}"], also=["plan.json"])
            with open(os.path.join(out, "plan.json")) as f:
                groups = json.load(f).get("bands", [])
            if args.base:
                elfs["base"], _ = speed.harness(path, os.path.join(args.build_dir, "base"), target,
                                                ["opt=speed"], repo=args.base)
            t = interleave(elfs, target, args.rounds, args.chunk)

            def cell(k):
                return f"{t[k][0]:.0f} ({t[k][1]:.0f})"

            def ratio(a, b):
                return f"{t[a][0] / t[b][0]:.3f} ({t[a][1] / t[b][1]:.3f})"
            row = (f"| {model} | {target} | {', '.join(str(g['bands']) for g in groups) or '-'} | "
                   f"{cell('off')} | {cell('auto')} | {ratio('auto', 'off')} |")
            if args.base:
                row += f" {cell('base')} | {ratio('auto', 'base')} |"
            print(row, flush=True)
            if args.profile and groups:
                costs = {b: profile_blocks(path, target, os.path.join(args.build_dir, b), b, groups)
                         for b in ("off", "auto")}
                for block in sorted(set(costs["off"]) | set(costs["auto"])):
                    a, b = costs["off"].get(block, 0), costs["auto"].get(block, 0)
                    print(f"|   {block} | | | {a / 1000:.0f} | {b / 1000:.0f} | "
                          f"{b / a if a else float('nan'):.2f} |", flush=True)


if __name__ == "__main__":
    main()

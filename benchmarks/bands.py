#!/usr/bin/env python3
"""Row bands through inverted residual blocks (plan/bands.py): each zoo network built
with bands=off and bands=auto (and, with --base, by another checkout's code), timed side
by side in interleaved rounds (medians of wall time, and in parentheses of CPU time:
perf stat's task-clock, which a shared machine's load disturbs less), and, with --profile,
the banded blocks' time per block from `scons ... profile` of both builds.

    .venv/bin/python benchmarks/bands.py --only mobilenet_v2,mnasnet0_5,efficientnet_b0
    .venv/bin/python benchmarks/bands.py --targets x86_64-avx512 --profile --base /tmp/base
"""

import argparse
import json
import os
import sys

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCHMARKS)

import speed  # noqa: E402
import zoo_models  # noqa: E402
from onnxcc.plan.patches import origin  # noqa: E402
from versus import interleave, profile_costs  # noqa: E402

MODELS = ("mobilenet_v2", "mnasnet0_5", "efficientnet_b0")


def profile_blocks(path, target, build_dir, bands, groups):
    """{block (its nodes joined by '+'): ns} of a build's profile; ``groups``: the banded
    build's plan["bands"] (the same nodes summed in both builds)."""
    block_of = {n: "+".join(g["nodes"]) for g in groups for n in g["nodes"]}

    def part_of(n):
        node = origin(n["node"])
        if node in block_of:
            return block_of[node]
        return "(slices and joins)" if n["op"] in ("Slice", "PatchJoin") and "__p" in n["node"] else None
    return profile_costs(path, target, build_dir, speed.REPO, part_of, [f"bands={bands}"])


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

#!/usr/bin/env python3
"""A squeeze-excitation's scale fused into its project convolution (passes/
fuse_channel_scale.py) against another checkout's code (--base: main's, without it):
each network timed side by side in interleaved rounds (medians of wall time, and in
parentheses of CPU time, perf stat's task-clock), and, with --profile, each block's
se_scale Mul + project Conv from both builds' `scons ... profile`.

    .venv/bin/python benchmarks/channel_scale.py --base /tmp/base --profile
"""

import argparse
import collections
import json
import os
import re
import sys

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCHMARKS)

import bands  # noqa: E402
import speed  # noqa: E402
import zoo_models  # noqa: E402


def block_costs(path, target, build_dir, repo):
    """{block number: ns} of its se_scale Mul and project Conv in a build's profile."""
    name = os.path.splitext(os.path.basename(path))[0]
    speed.scons(f"model={path}", f"target={target}", f"build_dir={build_dir}", "profile", repo=repo)
    with open(os.path.join(build_dir, target, name, "profile.json")) as f:
        prof = json.load(f)
    cost = collections.Counter()
    for n in prof["nodes"]:
        found = re.fullmatch(r"(se_scale|project)(?:_(\d+))?", n["node"])
        if found:
            cost[int(found.group(2) or 0)] += n["cost"]
    return cost


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="efficientnet_b0")
    parser.add_argument("--targets", default="x86_64-avx512,x86_64")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="per-block time of both builds")
    parser.add_argument("--base", required=True, help="a checkout of the code to compare with")
    parser.add_argument("--build-dir", default=os.path.join(speed.REPO, "build", "scale-bench"))
    args = parser.parse_args()
    if not os.path.isdir(zoo_models.DEFAULT_OUT):
        zoo_models.write()
    print("| model | target | base us | fused us | fused/base |")
    print("| --- | --- | ---: | ---: | ---: |")
    for model in args.only.split(","):
        path = os.path.join(zoo_models.DEFAULT_OUT, f"{model}.onnx")
        for target in args.targets.split(","):
            repos = {"base": args.base, "fused": speed.REPO}
            elfs = {k: speed.harness(path, os.path.join(args.build_dir, k), target, ["opt=speed"],
                                     repo=repo)[0] for k, repo in repos.items()}
            t = bands.interleave(elfs, target, args.rounds, args.chunk)
            print(f"| {model} | {target} | {t['base'][0]:.0f} ({t['base'][1]:.0f}) | "
                  f"{t['fused'][0]:.0f} ({t['fused'][1]:.0f}) | {t['fused'][0] / t['base'][0]:.3f} "
                  f"({t['fused'][1] / t['base'][1]:.3f}) |", flush=True)
            if args.profile:
                costs = {k: block_costs(path, target, os.path.join(args.build_dir, k), repo)
                         for k, repo in repos.items()}
                for block in sorted(costs["base"]):
                    a, b = costs["base"][block], costs["fused"].get(block, 0)
                    print(f"|   block {block}: se_scale + project | | {a / 1000:.1f} | "
                          f"{b / 1000:.1f} | {b / a if a else float('nan'):.2f} |", flush=True)


if __name__ == "__main__":
    main()

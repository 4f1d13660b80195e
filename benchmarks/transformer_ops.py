#!/usr/bin/env python3
"""The transformers' and ShuffleNet's non-GEMM ops (the fused LayerNorm pattern, passes/
fuse_layer_norm.py) against another checkout's code (--base: main's): each network timed
side by side in interleaved rounds (medians of wall time, and in parentheses of CPU time,
perf stat's task-clock), and, with --profile, each op's time summed over its nodes in
both builds' `scons ... profile`.

    .venv/bin/python benchmarks/transformer_ops.py --base /tmp/base --profile
"""

import argparse
import collections
import json
import os
import sys

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCHMARKS)

import bands  # noqa: E402
import speed  # noqa: E402
import zoo_models  # noqa: E402

MODELS = ("transformer_ts13", "transformer_dyn18", "shufflenet_v2_x0_5")


def op_costs(path, target, build_dir, repo):
    """{op (tactic): ns} summed over a build's profile."""
    name = os.path.splitext(os.path.basename(path))[0]
    speed.scons(f"model={path}", f"target={target}", f"build_dir={build_dir}", "profile", repo=repo)
    with open(os.path.join(build_dir, target, name, "profile.json")) as f:
        prof = json.load(f)
    cost = collections.Counter()
    for n in prof["nodes"]:
        cost[f"{n['op']} ({n.get('tactic') or '-'})"] += n["cost"]
    return cost


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(MODELS))
    parser.add_argument("--targets", default="x86_64-avx512,x86_64")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="per-op time of both builds")
    parser.add_argument("--base", required=True, help="a checkout of the code to compare with")
    parser.add_argument("--build-dir", default=os.path.join(speed.REPO, "build", "xformer-bench"))
    args = parser.parse_args()
    if not os.path.isdir(zoo_models.DEFAULT_OUT):
        zoo_models.write()
    print("| model | target | base us | new us | new/base |")
    print("| --- | --- | ---: | ---: | ---: |")
    for model in args.only.split(","):
        path = os.path.join(zoo_models.DEFAULT_OUT, f"{model}.onnx")
        for target in args.targets.split(","):
            repos = {"base": args.base, "new": speed.REPO}
            elfs = {k: speed.harness(path, os.path.join(args.build_dir, k), target, ["opt=speed"],
                                     repo=repo)[0] for k, repo in repos.items()}
            t = bands.interleave(elfs, target, args.rounds, args.chunk)
            print(f"| {model} | {target} | {t['base'][0]:.0f} ({t['base'][1]:.0f}) | "
                  f"{t['new'][0]:.0f} ({t['new'][1]:.0f}) | {t['new'][0] / t['base'][0]:.3f} "
                  f"({t['new'][1] / t['base'][1]:.3f}) |", flush=True)
            if args.profile:
                costs = {k: op_costs(path, target, os.path.join(args.build_dir, k), repo)
                         for k, repo in repos.items()}
                for op in sorted(set(costs["base"]) | set(costs["new"])):
                    a, b = costs["base"].get(op, 0), costs["new"].get(op, 0)
                    print(f"|   {op} | | {a / 1000:.1f} | {b / 1000:.1f} | |", flush=True)


if __name__ == "__main__":
    main()

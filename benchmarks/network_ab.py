#!/usr/bin/env python3
"""A whole zoo network built by this checkout and by another (--base, e.g. main's from
`git archive`), both opt=speed, timed side by side in interleaved rounds: medians of wall
time and, in parentheses, of CPU time (bands.cpu_us: perf stat's task-clock), and their
ratios -- a kernel or cost-model change's before and after on a shared machine.

    .venv/bin/python benchmarks/network_ab.py --base /tmp/base --only regnet_x_400mf \\
        --targets x86_64-avx512,x86_64
"""

import argparse
import os
import sys

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCHMARKS)

import bands  # noqa: E402
import speed  # noqa: E402
import zoo_models  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="a checkout of the code to compare with")
    parser.add_argument("--only", default="regnet_x_400mf")
    parser.add_argument("--targets", default="x86_64-avx512,x86_64")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=5)
    parser.add_argument("--build-dir", default=os.path.join(speed.REPO, "build", "network-ab"))
    args = parser.parse_args()
    if not os.path.isdir(zoo_models.DEFAULT_OUT):
        zoo_models.write()
    print("| model | target | new us | base us | new/base |")
    print("| --- | --- | ---: | ---: | ---: |")
    for model in args.only.split(","):
        path = os.path.join(zoo_models.DEFAULT_OUT, f"{model}.onnx")
        for target in args.targets.split(","):
            elfs = {"new": speed.harness(path, os.path.join(args.build_dir, "new"), target,
                                         ["opt=speed"])[0],
                    "base": speed.harness(path, os.path.join(args.build_dir, "base"), target,
                                          ["opt=speed"], repo=args.base)[0]}
            t = bands.interleave(elfs, target, args.rounds, args.chunk)
            new, base = t["new"], t["base"]
            print(f"| {model} | {target} | {new[0]:.0f} ({new[1]:.0f}) | {base[0]:.0f} ({base[1]:.0f}) | "
                  f"{new[0] / base[0]:.3f} ({new[1] / base[1]:.3f}) |", flush=True)


if __name__ == "__main__":
    main()

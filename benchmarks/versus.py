#!/usr/bin/env python3
"""Two builds of a zoo network timed side by side: CPU time of a host harness (speed.cpu_us,
which a shared machine's load disturbs less than wall time), interleaved
rounds, per-part profile sums, and the main of a benchmark of this checkout against
another's (--base). benchmarks/bands.py, channel_scale.py and transformer_ops.py use it;
run alone, it compares any zoo networks, their profiles summed by op and tactic:

    .venv/bin/python benchmarks/versus.py --base /tmp/base --only resnet18,squeezenet1_1 \
        --targets x86_64-avx512 --rounds 8 --profile
    .venv/bin/python benchmarks/versus.py --base /tmp/base --only models/resnet8.onnx   # any ONNX file
"""

import argparse
import collections
import json
import os
import statistics
import sys

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCHMARKS)

import speed  # noqa: E402
import zoo_models  # noqa: E402


@speed.one_cpu()
def interleave(elfs, target, rounds, chunk):
    """{key: (median wall us, median CPU us)} of the harnesses ``elfs``, timed in
    ``rounds`` rounds of ``chunk`` runs each (and a CPU-time measure of 4 * ``chunk``
    runs), taking turns at running first, all on one CPU (speed.one_cpu: this VM's two
    vCPUs ran up to 40% apart for minutes)."""
    wall, cpu = {k: [] for k in elfs}, {k: [] for k in elfs}
    keys = list(elfs)
    for r in range(rounds):
        for key in keys[r % len(keys):] + keys[:r % len(keys)]:
            wall[key] += speed.time_harness(elfs[key], chunk, target)
            cpu[key].append(speed.cpu_us(elfs[key], 4 * chunk))
    return {k: (statistics.median(wall[k]) / 1000, statistics.median(cpu[k])) for k in elfs}


def profile_costs(path, target, build_dir, repo, part_of, options=()):
    """{part: ns} of the build's `scons ... profile` (with ``options``), its nodes summed
    by ``part_of(node)`` (a profile.json entry; None: left out)."""
    name = os.path.splitext(os.path.basename(path))[0]
    speed.scons(f"model={path}", f"target={target}", f"build_dir={build_dir}", *options, "profile",
                repo=repo)
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
        # (a zoo model's name, or an ONNX file: models/resnet8.onnx)
        path = model if model.endswith(".onnx") else os.path.join(zoo_models.DEFAULT_OUT, f"{model}.onnx")
        model = os.path.splitext(os.path.basename(path))[0]
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


def by_op_and_tactic(node):
    return f"{node['op']} {node['tactic']}"


def main():
    versus_base(__doc__.splitlines()[0], ",".join(zoo_models.MODELS), "versus", "this", by_op_and_tactic,
                "each op and tactic's time")


if __name__ == "__main__":
    main()

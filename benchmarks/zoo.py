#!/usr/bin/env python3
"""onnxcc vs onnxruntime on the model zoo: the networks people export (benchmarks/zoo_models.py).

    .venv/bin/python benchmarks/zoo.py                          # every zoo model, x86_64 and native
    .venv/bin/python benchmarks/zoo.py --only resnet18,lstm_kws --profile

The script writes the zoo models (build/zoo/), then for each model and each host target:
builds it from scratch with opt=speed (and prints how long the build took), runs `verify`
(every network must match onnxruntime), and builds the bench harness. Then it times the
builds and onnxruntime (one intra-op and one inter-op thread) side by side in interleaved
rounds, as benchmarks/speed.py does (its functions: medians, onnxruntime's Python call
overhead subtracted), and prints a markdown table: medians, the ratio onnxcc /
onnxruntime per target (below 1: onnxcc is faster), their geometric mean and the worst;
in parentheses the same of CPU time, measured in the same rounds (speed.cpu_us: the
harness's CPU time, onnxruntime's calling thread's), which a shared or virtual machine's
load moves far less than wall time.
`--profile` adds, per build, where the time goes: `scons ... profile`'s steps summed by op
type and tactic. The targets are x86_64 and target=native (the best of this machine:
x86_64-avx512 on Intel's AVX-512, x86_64-zen4 on AMD's); a target whose features the CPU
lacks is skipped with a note.
"""

import argparse
import collections
import json
import os
import shutil
import statistics
import sys
import time

import onnx

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCHMARKS)

import speed  # noqa: E402
import zoo_models  # noqa: E402
from make_models import param_count  # noqa: E402
from onnxcc.target import NATIVE, load_target  # noqa: E402

#: x86_64 (runs on any x86-64 of the last decade) and the best host target of this machine
#: (target=native: x86_64-avx512 on Intel's AVX-512, x86_64-zen4 on AMD's, else x86_64)
TARGETS = ("x86_64", NATIVE)
OPT = "speed"
#: share of a build's steps (summed by op type and tactic) below which --profile stops listing
PROFILE_FLOOR = 0.01


def out_dir(build_dir, target, name):
    return os.path.join(build_dir, OPT, target, name)


def options(path, target, build_dir):
    return [f"model={path}", f"target={target}", f"opt={OPT}", f"build_dir={os.path.join(build_dir, OPT)}"]


def build_and_verify(path, target, build_dir, fresh):
    """Build the library (from scratch when ``fresh``), verify it, build its bench
    harness: (seconds the library took, the verify line, the harness ELF)."""
    name = os.path.splitext(os.path.basename(path))[0]
    out = out_dir(build_dir, target, name)
    if fresh:
        shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    speed.scons(*options(path, target, build_dir), os.path.join(out, f"lib{name}.a"))
    seconds = time.perf_counter() - start
    lines = speed.scons(*options(path, target, build_dir), "verify").splitlines()
    verified = next((line for line in lines if line.startswith("[verify]")), "[verify] no line printed")
    elf, _ = speed.build(path, OPT, build_dir, target)
    return seconds, verified, elf


def profile_by_op(path, target, build_dir):
    """`scons ... profile` of the build: its profile.json, and its steps' costs summed per
    (op type, tactic), largest first."""
    name = os.path.splitext(os.path.basename(path))[0]
    speed.scons(*options(path, target, build_dir), "profile")
    with open(os.path.join(out_dir(build_dir, target, name), "profile.json")) as f:
        prof = json.load(f)
    groups = collections.defaultdict(lambda: [0, 0, 0.0])  # nodes, MACs, cost
    for n in prof["nodes"]:
        g = groups[(n["op"], n["tactic"])]
        g[0] += 1
        g[1] += n["macs"]
        g[2] += n["cost"]
    return prof, sorted(groups.items(), key=lambda kv: -kv[1][2])


def ort_profile_by_op(path, build_dir, runs=20):
    """onnxruntime's own profile of its last ``runs`` of ``2 * runs`` runs: each node's
    median time, summed per op type (its fused ops, e.g. FusedConv, as it runs them), in
    ns, largest first."""
    model = onnx.load(path)
    model.ir_version = min(model.ir_version, 10)
    (_, feeds), _ = speed.ort_engines(path)
    prefix = os.path.join(build_dir, "ort_profile", os.path.splitext(os.path.basename(path))[0])
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    session = speed.ort_session(model.SerializeToString(), profile_prefix=prefix)
    speed.time_session(session, feeds, 2 * runs)
    with open(session.end_profiling()) as f:
        events = json.load(f)
    starts = sorted(e["ts"] for e in events if e.get("name") == "model_run")
    nodes = collections.defaultdict(list)  # (op, node): its durations
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] >= starts[-runs]:
            nodes[(e["args"]["op_name"], e["name"])].append(e["dur"] * 1000)
    by_op = collections.Counter()
    for (op, _), durations in nodes.items():
        by_op[op] += statistics.median(durations)
    return by_op.most_common()


def print_ort_profile(model, by_op):
    total = sum(cost for _, cost in by_op) or 1
    shown = [f"{op} {cost / 1000:.1f} us ({100 * cost / total:.0f}%)" for op, cost in by_op
             if cost / total >= PROFILE_FLOOR]
    print(f"\n{model} on onnxruntime: nodes sum {total / 1000:.1f} us: {', '.join(shown)}")


def print_profile(model, target, prof, groups):
    total = prof["steps_sum"] or 1
    print(f"\n{model} on {target}: steps sum {prof['steps_sum'] / 1000:.1f} us, whole run "
          f"{prof['total'] / 1000:.1f} us\n")
    print("| op | tactic | nodes | MMACs | us | % | GMAC/s |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    rest = [0, 0, 0.0]
    for (op, tactic), (count, macs, cost) in groups:
        if cost / total < PROFILE_FLOOR:
            rest = [rest[0] + count, rest[1] + macs, rest[2] + cost]
            continue
        rate = f"{macs / cost:.1f}" if macs and cost else ""
        print(f"| {op} | {tactic} | {count} | {macs / 1e6:.1f} | {cost / 1000:.1f} | "
              f"{100 * cost / total:.1f} | {rate} |")
    if rest[0]:
        print(f"| (rest) | | {rest[0]} | {rest[1] / 1e6:.1f} | {rest[2] / 1000:.1f} | "
              f"{100 * rest[2] / total:.1f} | |")


def params(path):
    model = onnx.load(path, load_external_data=False)
    return param_count(model), model.opset_import[0].version


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated zoo models (default: all): "
                        + ", ".join(zoo_models.MODELS))
    parser.add_argument("--targets", default=",".join(TARGETS), help="host targets to build for")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds")
    parser.add_argument("--chunk", type=int, default=10, help="runs per engine per round")
    parser.add_argument("--warmup", type=int, default=2, help="warm-up runs of a harness per chunk")
    parser.add_argument("--profile", action="store_true", help="per-op time breakdown of each build")
    parser.add_argument("--models-dir", default=zoo_models.DEFAULT_OUT)
    parser.add_argument("--build-dir", default=os.path.join(speed.REPO, "build", "zoo-bench"))
    parser.add_argument("--reuse", action="store_true",
                        help="keep earlier builds (the build times then say what scons redid)")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(zoo_models.MODELS)
    unknown = [n for n in names if n not in zoo_models.MODELS]
    if unknown:
        parser.error(f"unknown zoo model {unknown[0]!r} (known: {', '.join(zoo_models.MODELS)})")
    targets = speed.host_targets(args.targets.split(","))
    paths = zoo_models.write(args.models_dir, names)
    try:
        results = compare(paths, targets, args)
        if args.profile:
            for path in paths:
                name = os.path.splitext(os.path.basename(path))[0]
                for target in targets:
                    print_profile(name, target, *profile_by_op(path, target, args.build_dir))
                print_ort_profile(name, ort_profile_by_op(path, args.build_dir))
    except speed.BuildFailed as e:
        sys.exit(f"zoo.py: {e}")
    return results


def compare(paths, targets, args):
    """Build, verify and time every model; print the table as it goes, then the summary."""
    heads = " | ".join(f"onnxcc {t} (us)" for t in targets)
    ratio_heads = " | ".join(f"ratio {t}" for t in targets)
    build_heads = " | ".join(f"build {t} (s)" for t in targets)
    print(f"| model | opset | params (M) | {heads} | onnxruntime (us) | {ratio_heads} | {build_heads} |")
    print("| --- | ---: | ---: |" + " ---: |" * (3 * len(targets) + 1))
    ratios, cpu_ratios = {t: {} for t in targets}, {t: {} for t in targets}
    verified = []
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        harnesses, seconds = {}, {}
        for target in targets:
            seconds[target], line, elf = build_and_verify(path, target, args.build_dir, not args.reuse)
            harnesses[target] = (elf, target)
            verified.append(line)
        med, cpu = speed.interleave(harnesses, path, args.rounds, args.chunk, args.warmup, cpu=True)
        ort, ort_cpu = med["ort"] - med["idle"], cpu["ort"] - cpu["idle"]
        count, opset = params(path)
        for t in targets:
            ratios[t][name] = med[t] / ort
            cpu_ratios[t][name] = cpu[t] / ort_cpu
        print(f"| {name} | {opset} | {count / 1e6:.2f} | "
              + " | ".join(f"{med[t]:.1f} ({cpu[t]:.1f})" for t in targets)
              + f" | {ort:.1f} ({ort_cpu:.1f}; call {med['idle']:.1f}) | "
              + " | ".join(f"{ratios[t][name]:.2f} ({cpu_ratios[t][name]:.2f})" for t in targets) + " | "
              + " | ".join(f"{seconds[t]:.1f}" for t in targets) + " |", flush=True)
    print()
    for t in targets:
        for clock, by_model in (("wall time", ratios[t]), ("CPU time", cpu_ratios[t])):
            worst = max(by_model, key=by_model.get)
            print(f"{t}: geometric mean of onnxcc / onnxruntime ({clock}) over {len(by_model)} "
                  f"models {speed.geometric_mean(list(by_model.values())):.2f}, worst {worst} "
                  f"{by_model[worst]:.2f}")
    print()
    print("\n".join(verified))
    return ratios


if __name__ == "__main__":
    main()

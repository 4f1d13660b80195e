#!/usr/bin/env python3
"""RAM of every model in models/: what onnxcc plans against a plain liveness planner.

For each model (imported and optimized as the build does, activations fused) it prints:

* naive: every tensor in memory of its own, inputs and outputs included, no reuse;
* greedy: TFLite-Micro-style: the same tensors, each live from its producer to its last
  reader, placed greedy by size (views share memory, as TFLite Micro's do);
* lower bound: of that same problem, the most bytes live at once: what any planner
  without forwarding needs at least (the bar of the memory planner's issue);
* onnxcc io=arena: the arena of the default plan with inputs and outputs inside it
  (comparable to the two above, which hold them too);
* onnxcc io=caller: the default API: the arena plus the caller's input/output buffers;
* vs greedy: how much smaller onnxcc io=arena is;
* plan time: the median wall time of planning io=arena (schedule, forwarding, placement).

    .venv/bin/python benchmarks/memory.py [--repeat N] [MODEL.onnx ...]
"""

import argparse
import glob
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "site_scons"))

from onnxcc.plan import stage as planner  # noqa: E402
from onnxcc.importer.stage import import_model  # noqa: E402
from onnxcc.plan import liveness  # noqa: E402
from onnxcc.plan.algorithms import greedy_by_size  # noqa: E402
from onnxcc.plan.forwarding import forward  # noqa: E402
from onnxcc.plan.problem import Problem  # noqa: E402
from onnxcc.passes import optimize  # noqa: E402

#: the models of the memory planner's bar (MLPerf Tiny class, and concatenated branches)
BAR = ("kws", "mobilenet_v1_025", "resnet8", "fc_autoencoder", "squeezenet_mini")


def plain_liveness_problem(graph):
    """Every tensor but views in memory of its own, io included, in the graph's order."""
    order = list(range(len(graph.nodes)))
    f = forward(graph, order, io_in_arena=True, in_place=False, concat=False)
    return Problem([p.buffer for p in liveness.buffers(graph, order, f, planner.ALIGNMENT)])


def measure(path, repeat):
    graph = optimize(import_model(path), path)
    plain = plain_liveness_problem(graph)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        in_arena = planner.plan(graph, io="arena")
        times.append(time.perf_counter() - start)
    caller = planner.plan(graph)
    return {
        "model": os.path.splitext(os.path.basename(path))[0],
        "naive": sum(b.size for b in plain.buffers),
        "greedy": greedy_by_size(plain).bytes,
        "lower_bound": plain.lower_bound,
        "arena": in_arena["arena_bytes"],
        "caller": caller["arena_bytes"] + caller["io_bytes"],
        "algorithm": in_arena["pools"][0]["algorithm"],
        "seconds": statistics.median(times),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help="default: models/*.onnx")
    ap.add_argument("--repeat", type=int, default=5, help="plans per model for the median time")
    args = ap.parse_args(argv)
    paths = args.models or sorted(glob.glob(os.path.join(ROOT, "models", "*.onnx")))
    rows = [measure(p, args.repeat) for p in paths]
    print("| model | naive | greedy | lower bound | onnxcc io=arena | vs greedy | vs lower bound "
          "| onnxcc io=caller (arena + io) | algorithm | plan time |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for r in rows:
        print(f"| {r['model']} | {r['naive']} | {r['greedy']} | {r['lower_bound']} | {r['arena']} "
              f"| {100 * (r['arena'] / r['greedy'] - 1):+.1f}% "
              f"| {100 * (r['arena'] / r['lower_bound'] - 1):+.1f}% | {r['caller']} "
              f"| {r['algorithm']} | {1000 * r['seconds']:.0f} ms |")
    bar = [r for r in rows if r["model"] in BAR]
    if bar:
        saving = statistics.mean(1 - r["arena"] / r["greedy"] for r in bar)
        print(f"\nio=arena against greedy by size, mean over {', '.join(r['model'] for r in bar)}: "
              f"{100 * saving:.1f}% smaller; at or below the lower bound: "
              f"{sum(r['arena'] <= r['lower_bound'] for r in bar)} of {len(bar)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

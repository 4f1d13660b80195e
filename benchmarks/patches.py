#!/usr/bin/env python3
"""Arena without and with patch-based execution (plan/patches.py), per example model,
next to a TFLite-Micro-style plan.

For each model (imported and optimized as the build does; reference kernels) it prints,
in bytes:

* TFLM-style: every tensor live from its producer to its last reader, placed greedy by
  size, inputs and outputs included (TFLite Micro's arena holds them; benchmarks/memory.py's
  *greedy*);
* layer by layer: onnxcc's arena without patches, and its I/O (io=caller, the default
  API: patches read the input from the caller's buffer);
* the smallest arena with patches that recompute at most 5% more multiply-accumulates,
  and the smallest with any number (up to 8 rows of patches), each with its ratio to the
  layer-by-layer arena, grid, join and extra MACs; '-' where no patching beats the
  layer-by-layer arena.

Every join and grid is costed by its liveness lower bound (what the planner places these
plans at); the last two columns are then planned for real.

    .venv/bin/python benchmarks/patches.py [MODEL.onnx ...]
"""

import argparse
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "site_scons"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from memory import plain_liveness_problem  # noqa: E402
from onnxcc.plan import stage as planner  # noqa: E402
from onnxcc.importer.stage import import_model  # noqa: E402
from onnxcc.plan import patches  # noqa: E402
from onnxcc.plan.algorithms import greedy_by_size  # noqa: E402
from onnxcc.passes import optimize  # noqa: E402

CHEAP = 0.05


def candidates(graph):
    """(arena lower bound, Patched) of every join and grid."""
    return [(planner.order_lower_bound(p.graph, list(range(len(p.graph.nodes))), False), p)
            for at_join in patches.candidates(graph) for p in at_join]


def cell(choice, layered):
    if choice is None or choice[0] >= layered:
        return "-"
    _, p = choice
    arena = planner.plan(p.graph)["arena_bytes"]
    pct = patches.overhead_percent(p.describe())
    return f"{arena} ({arena / layered:.2f}x; {p.grid[0]}x{p.grid[1]} to '{p.join}', +{pct} MACs)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help="default: models/*.onnx")
    args = ap.parse_args(argv)
    paths = args.models or sorted(glob.glob(os.path.join(ROOT, "models", "*.onnx")))
    print("| model | TFLM-style (with I/O) | layer by layer: arena + I/O | with patches, at most +5% MACs "
          "| with patches, smallest |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for path in paths:
        graph = optimize(import_model(path), path)
        tflm = greedy_by_size(plain_liveness_problem(graph)).bytes
        plan = planner.plan(graph)
        layered = plan["arena_bytes"]
        found = candidates(graph)
        cheap = [c for c in found if c[1].extra_macs <= CHEAP * (c[1].macs - c[1].extra_macs)]
        smallest = min(found, key=lambda c: (c[0], c[1].extra_macs), default=None)
        best_cheap = min(cheap, key=lambda c: (c[0], c[1].extra_macs), default=None)
        name = os.path.splitext(os.path.basename(path))[0]
        print(f"| {name} | {tflm} | {layered} + {plan['io_bytes']} | {cell(best_cheap, layered)} "
              f"| {cell(smallest, layered)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

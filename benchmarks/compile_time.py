#!/usr/bin/env python3
"""Compile time against graph size: each Python stage of the pipeline (import, optimize,
tactics, plan, generate) on generated graphs of growing length, to show how it scales.

Two shapes of graph, each N nodes long on a small [1, 16] tensor (so the time is the
compiler's bookkeeping, not arithmetic on weights):

* chain: MatMul, Add, Relu, Mul, Tanh, ... one after the other (elementwise runs fuse);
* residual: blocks of MatMul -> Relu -> Add(block input), the shape of exported
  ResNets and transformers, whose long-lived tensors the planner must place.

For each it prints the median seconds per stage and, for every N after the first, how
much longer it took than the N before (x2.5 for 2.5 times the nodes: linear; x6 quadratic).

    .venv/bin/python benchmarks/compile_time.py [--sizes 500,2000,5000] [--repeat 3]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "site_scons"))

from onnxcc import importer, optimizer, planner, tactics  # noqa: E402
from onnxcc.codegen import sources as codegen  # noqa: E402
from onnxcc.targets import load_target  # noqa: E402

WIDTH = 16
UNARY = ["Relu", "Tanh", "Sigmoid", "Neg"]


def chain_model(n, residual):
    """A graph of about ``n`` nodes (see the module's doc)."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    current = "x"

    def weight(k):
        name = f"w{k}"
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((WIDTH, WIDTH)) / WIDTH).astype(np.float32), name))
        return name

    k = 0
    while len(nodes) < n:
        if residual:
            block_in = current
            nodes.append(helper.make_node("MatMul", [current, weight(k)], [f"m{k}"], f"mm{k}"))
            nodes.append(helper.make_node("Relu", [f"m{k}"], [f"r{k}"], f"relu{k}"))
            nodes.append(helper.make_node("Add", [f"r{k}", block_in], [f"a{k}"], f"add{k}"))
            current = f"a{k}"
        else:
            step = k % 6
            if step == 0:
                nodes.append(helper.make_node("MatMul", [current, weight(k)], [f"t{k}"], f"n{k}"))
            elif step == 1:
                inits.append(numpy_helper.from_array(np.full(WIDTH, 0.1, np.float32), f"b{k}"))
                nodes.append(helper.make_node("Add", [current, f"b{k}"], [f"t{k}"], f"n{k}"))
            else:
                op = UNARY[k % len(UNARY)]
                nodes.append(helper.make_node(op, [current], [f"t{k}"], f"n{k}"))
            current = f"t{k}"
        k += 1
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, WIDTH])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def stage_times(model_path, folder, cpu):
    """Seconds of each stage, run as the build runs them (files in, files out)."""
    at = lambda name: os.path.join(folder, name)  # noqa: E731
    stages = [
        ("import", lambda: importer.run(model_path, at("imported.onnx"), at("imported.bin"))),
        ("optimize", lambda: optimizer.run(at("imported.onnx"), at("optimized.onnx"),
                                           at("optimized.bin"))),
        ("tactics", lambda: tactics.run(at("optimized.onnx"), at("tactics.json"), cpu, "speed", "")),
        ("plan", lambda: planner.run(at("optimized.onnx"), at("plan.json"),
                                     tactics_path=at("tactics.json"))),
        ("generate", lambda: (
            codegen.run_model(at("optimized.onnx"), at("plan.json"), at("tactics.json"),
                              at("m.h"), at("m.c"), "m", "m.onnx"),
            codegen.run_kernels(at("optimized.onnx"), at("plan.json"), at("tactics.json"),
                                at("k.c"), at("k.h"), "m", "m.onnx"))),
    ]
    times = {}
    for name, run in stages:
        start = time.perf_counter()
        run()
        times[name] = time.perf_counter() - start
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500,2000,5000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--target", default="x86_64")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    cpu = load_target(args.target).cpu
    names = ["import", "optimize", "tactics", "plan", "generate"]
    print(f"{'graph':<9} {'nodes':>6} " + " ".join(f"{n:>14}" for n in names) + f" {'total':>14}")
    for residual in (False, True):
        previous = None
        for n in sizes:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "m.onnx")
                onnx.save(chain_model(n, residual), path)
                runs = [stage_times(path, tmp, cpu) for _ in range(args.repeat)]
            median = {k: statistics.median(r[k] for r in runs) for k in names}
            median["total"] = sum(median.values())
            cells = []
            for k in names + ["total"]:
                grow = f" x{median[k] / previous[k]:.1f}" if previous and previous[k] > 0 else ""
                cells.append(f"{median[k]:>8.2f}{grow:>6}")
            print(f"{'residual' if residual else 'chain':<9} {n:>6} " + " ".join(cells))
            previous = median


if __name__ == "__main__":
    main()

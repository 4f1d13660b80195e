#!/usr/bin/env python3
"""Compile time against graph size: each Python stage of the pipeline (import, optimize,
tactics, plan, generate) on generated graphs of growing length, to show how it scales.

Four shapes of graph, each about N nodes long on small tensors (so the time is the
compiler's bookkeeping, not arithmetic on weights):

* chain: MatMul, Add, Relu, Mul, Tanh, ... one after the other (elementwise runs fuse);
* residual: blocks of MatMul -> Relu -> Add(block input), the shape of exported
  ResNets, whose long-lived tensors the planner must place;
* transformer: post-LN encoder layers as exporters write them (Q, K and V projections
  side by side, heads split by Reshape and Transpose, Softmax attention, a Gelu FFN,
  LayerNormalization), 33 nodes a layer on a [1, 4, 16] sequence;
* qdq: an int8 QDQ chain (QuantizeLinear -> DequantizeLinear -> MatMul with per-channel
  int8 weights), each MatMul becoming a QGemm with its own requantization tables.

For each it prints the median seconds per stage and, for every N after the first, how
much longer it took than the N before (x2.5 for 2.5 times the nodes: linear; x6 quadratic).

    .venv/bin/python benchmarks/compile_time.py [--sizes 2000,5000,10000] [--repeat 3]
        [--graphs chain,residual,transformer,qdq]
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

from onnxcc.importer import stage as importer
from onnxcc.passes import stage as optimizer
from onnxcc.plan import stage as planner
from onnxcc.tactics import stage as tactics  # noqa: E402
from onnxcc.codegen import stage as codegen  # noqa: E402
from onnxcc.target import load_target  # noqa: E402

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
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def transformer_model(n):
    """About ``n`` nodes of post-LN encoder layers (see the module's doc)."""
    rng = np.random.default_rng(0)
    seq, d, heads, ffn = 4, WIDTH, 2, 2 * WIDTH
    nodes, inits = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name, **attrs))
        return name

    def dense(x, nin, nout, name):
        w = const(f"{name}.w", (rng.standard_normal((nin, nout)) / nin).astype(np.float32))
        b = const(f"{name}.b", np.full(nout, 0.01, np.float32))
        return node("Add", [node("MatMul", [x, w], f"{name}.mm"), b], f"{name}.add")

    def layernorm(x, name):
        scale = const(f"{name}.scale", np.ones(d, np.float32))
        bias = const(f"{name}.bias", np.zeros(d, np.float32))
        return node("LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=1e-5)

    split = const("split_heads", np.array([1, seq, heads, d // heads], np.int64))
    merge = const("merge_heads", np.array([1, seq, d], np.int64))
    root = const("inv_sqrt_dh", np.array(1 / np.sqrt(d // heads), np.float32))
    half, one = const("half", np.array(0.5, np.float32)), const("one", np.array(1, np.float32))
    sqrt2 = const("sqrt2", np.array(np.sqrt(2), np.float32))
    x, k = "x", 0
    while len(nodes) < n:
        p = f"l{k}"
        qkv = {}
        for h, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
            t = node("Reshape", [dense(x, d, d, f"{p}.{h}"), split], f"{p}.{h}.split")
            qkv[h] = node("Transpose", [t], f"{p}.{h}.t", perm=perm)
        s = node("Mul", [node("MatMul", [qkv["q"], qkv["k"]], f"{p}.scores"), root], f"{p}.scale")
        a = node("MatMul", [node("Softmax", [s], f"{p}.softmax", axis=-1), qkv["v"]], f"{p}.ctx")
        a = node("Reshape", [node("Transpose", [a], f"{p}.ctx.t", perm=[0, 2, 1, 3]), merge],
                 f"{p}.merge")
        x = layernorm(node("Add", [x, dense(a, d, d, f"{p}.o")], f"{p}.res1"), f"{p}.ln1")
        h = dense(x, d, ffn, f"{p}.ffn1")  # exact Gelu as exported: x * 0.5 * (1 + erf(x / sqrt 2))
        g = node("Add", [node("Erf", [node("Div", [h, sqrt2], f"{p}.gelu.div")], f"{p}.gelu.erf"),
                         one], f"{p}.gelu.add")
        g = node("Mul", [node("Mul", [h, g], f"{p}.gelu.mul"), half], f"{p}.gelu.half")
        x = layernorm(node("Add", [x, dense(g, ffn, d, f"{p}.ffn2")], f"{p}.res2"), f"{p}.ln2")
        k += 1
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(
        nodes, "transformer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, d])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def qdq_model(n):
    """About ``n`` nodes of an int8 QDQ chain (see the module's doc)."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q0"], "quant0")]
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
             numpy_helper.from_array(np.array(128, np.uint8), "zp"),
             numpy_helper.from_array(np.full(WIDTH, 0.01, np.float32), "ws"),
             numpy_helper.from_array(np.zeros(WIDTH, np.int8), "wzp")]
    k = 0
    while len(nodes) < n:
        inits.append(numpy_helper.from_array(
            rng.integers(-127, 128, (WIDTH, WIDTH)).astype(np.int8), f"w{k}"))
        nodes += [
            helper.make_node("DequantizeLinear", [f"q{k}", "s", "zp"], [f"x{k}"], f"dq{k}"),
            helper.make_node("DequantizeLinear", [f"w{k}", "ws", "wzp"], [f"wf{k}"], f"dqw{k}",
                             axis=1),
            helper.make_node("MatMul", [f"x{k}", f"wf{k}"], [f"m{k}"], f"mm{k}"),
            helper.make_node("QuantizeLinear", [f"m{k}", "s", "zp"], [f"q{k + 1}"], f"q{k}")]
        k += 1
    nodes.append(helper.make_node("DequantizeLinear", [f"q{k}", "s", "zp"], ["y"], "dq_out"))
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, WIDTH])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


GRAPHS = {"chain": lambda n: chain_model(n, False), "residual": lambda n: chain_model(n, True),
          "transformer": transformer_model, "qdq": qdq_model}


def stages(model_path, folder, cpu):
    """[(name, function)] of the stages, in order, run as the build runs them (files in,
    files out, in ``folder``)."""
    at = lambda name: os.path.join(folder, name)  # noqa: E731
    return [
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


def stage_times(model_path, folder, cpu):
    """Seconds of each stage."""
    times = {}
    for name, run in stages(model_path, folder, cpu):
        start = time.perf_counter()
        run()
        times[name] = time.perf_counter() - start
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000,5000,10000")
    parser.add_argument("--graphs", default=",".join(GRAPHS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--target", default="x86_64")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    cpu = load_target(args.target).cpu
    names = ["import", "optimize", "tactics", "plan", "generate"]
    print(f"{'graph':<11} {'nodes':>6} " + " ".join(f"{n:>14}" for n in names) + f" {'total':>14}")
    for graph in args.graphs.split(","):
        previous = None
        for n in sizes:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "m.onnx")
                onnx.save(GRAPHS[graph](n), path)
                runs = [stage_times(path, tmp, cpu) for _ in range(args.repeat)]
            median = {k: statistics.median(r[k] for r in runs) for k in names}
            median["total"] = sum(median.values())
            cells = []
            for k in names + ["total"]:
                grow = f" x{median[k] / previous[k]:.1f}" if previous and previous[k] > 0 else ""
                cells.append(f"{median[k]:>8.2f}{grow:>6}")
            print(f"{graph:<11} {n:>6} " + " ".join(cells))
            previous = median


if __name__ == "__main__":
    main()

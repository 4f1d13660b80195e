#!/usr/bin/env python3
"""MatMul layers alone (the zoo transformers' shapes): onnxcc vs onnxruntime (and another checkout).

    .venv/bin/python benchmarks/matmul_layers.py [--target x86_64-avx512] [--only dyn_in,dyn_ffn1]
        [--baseline DIR]   # also a checkout at DIR (`git archive main | tar -x -C DIR`)

Each layer is a MatMul with its fused epilogue as the exporters write it (a constant B,
then Add of the bias and Relu, or Add of the bias and of the residual), or the
attention's batched product of two computed matrices, built with opt=speed and timed
interleaved with onnxruntime on one thread (speed.interleave: medians, onnxruntime's call
overhead subtracted); GMAC/s are multiply-adds per nanosecond.
"""

import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pool_softmax_layers  # noqa: E402
import speed  # noqa: E402

LAYERS = {  # name: (A shape, B shape, B constant, epilogue: "", "relu", "residual")
    "dyn_in": ([1, 64, 256], [256, 768], True, ""),
    "dyn_out": ([1, 64, 256], [256, 256], True, "residual"),
    "dyn_ffn1": ([1, 64, 256], [256, 1024], True, "relu"),
    "dyn_ffn2": ([1, 64, 1024], [1024, 256], True, "residual"),
    "dyn_qk": ([1, 4, 64, 64], [1, 4, 64, 64], False, ""),
    "ts_in": ([1, 128, 256], [256, 768], True, ""),
    "ts_ffn2": ([1, 128, 1024], [1024, 256], True, "residual"),
    "ts_qk": ([1, 4, 128, 64], [1, 4, 64, 128], False, ""),
    "ts_av": ([1, 4, 128, 128], [1, 4, 128, 64], False, ""),
}


def layer(sa, sb, const, epilogue):
    rng = np.random.default_rng(0)
    inputs = [helper.make_tensor_value_info("a", 1, sa)]
    inits = []
    if const:
        w = (rng.standard_normal(sb) / np.sqrt(sb[0])).astype(np.float32)
        inits.append(numpy_helper.from_array(w, "b"))
    else:
        inputs.append(helper.make_tensor_value_info("b", 1, sb))
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y" if not const else "m"])]
    if const:
        bias = rng.standard_normal(sb[-1]).astype(np.float32)
        inits.append(numpy_helper.from_array(bias, "bias"))
        last = "y" if not epilogue else "t"
        nodes.append(helper.make_node("Add", ["m", "bias"], [last]))
        if epilogue == "relu":
            nodes.append(helper.make_node("Relu", ["t"], ["y"]))
        elif epilogue == "residual":
            inputs.append(helper.make_tensor_value_info("r", 1, sa[:-1] + [sb[-1]]))
            nodes.append(helper.make_node("Add", ["t", "r"], ["y"]))
    graph = helper.make_graph(nodes, "matmul", inputs,
                              [helper.make_tensor_value_info("y", 1, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def macs(sa, sb):
    batches = int(np.prod(np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2]))))
    return batches * sa[-2] * sa[-1] * sb[-1]


def main():
    args = pool_softmax_layers.baseline_parser(__doc__).parse_args()
    names = args.only.split(",") if args.only else list(LAYERS)
    work = tempfile.mkdtemp(prefix="matmul_layers")
    pool_softmax_layers.table_header(args, "A x B", "us (GMAC/s)")
    for name in names:
        sa, sb, const, epilogue = LAYERS[name]
        path = os.path.join(work, f"{name}.onnx")
        onnx.save(layer(sa, sb, const, epilogue), path)
        med = speed.interleave(pool_softmax_layers.engines(path, work, args), path, args.rounds,
                               args.chunk)
        ort, n = med["ort"] - med["idle"], macs(sa, sb)
        shape = " ".join(["x".join(map(str, sa)), "x".join(map(str, sb)), "const" * const, epilogue])
        row = (f"| {name} | {shape} | {med['cc']:.1f} ({n / med['cc'] / 1e3:.0f}) | {ort:.1f} "
               f"({n / ort / 1e3:.0f}) | {med['cc'] / ort:.2f} |")
        if args.baseline:
            row += f" {med['base']:.1f} | {med['cc'] / med['base']:.2f} |"
        print(row, flush=True)


if __name__ == "__main__":
    main()

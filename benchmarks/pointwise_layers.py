#!/usr/bin/env python3
"""onnxcc vs onnxruntime on single 1x1 convolutions with the epilogues the zoo fuses into them.

    .venv/bin/python benchmarks/pointwise_layers.py --target x86_64-avx512 --only mb_e56,mb_p7
    .venv/bin/python benchmarks/pointwise_layers.py --base /tmp/base   # A/B against another checkout

The shapes are MobileNetV2's, EfficientNet-B0's and RegNetX's pointwise convolutions (image
56x56 .. 7x7: columns 3136 .. 49; K input channels, M output channels), each with its
epilogue: `clip` (ReLU6), `swish` (x * Sigmoid(x)), `add` (a residual, a second input),
`relu` or `none`. Each is a one-node model built with opt=speed; the bench harnesses (this checkout,
and with --base the same layer built by another checkout) and an onnxruntime session (one
thread) run interleaved in rounds; medians, GMAC/s and ratios are printed, with the tactic
and kernel each build chose.
"""

import os
import re
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import speed  # noqa: E402

LAYERS = {  # name: (K input channels, image side, M output channels, epilogue)
    "mb_e112": (16, 112, 96, "clip"),
    "mb_e56": (24, 56, 144, "clip"),
    "mb_p56": (144, 56, 24, "add"),
    "mb_e28": (32, 28, 192, "clip"),
    "mb_p28": (192, 28, 32, "add"),
    "mb_e14": (96, 14, 576, "clip"),
    "mb_p14": (576, 14, 96, "add"),
    "mb_p14b": (384, 14, 64, "add"),
    "mb_p14c": (192, 14, 64, "none"),
    "mn_p14": (240, 14, 48, "none"),
    "ef_p14": (240, 14, 80, "none"),
    "sq_e13": (64, 13, 256, "relu"),
    "sq_cls": (512, 13, 1000, "relu"),
    "mb_e7": (160, 7, 960, "clip"),
    "mb_p7": (960, 7, 160, "add"),
    "mb_head": (320, 7, 1280, "clip"),
    "ef_e56": (24, 56, 144, "swish"),
    "ef_e14": (80, 14, 480, "swish"),
    "ef_e7": (192, 7, 1152, "swish"),
    "ef_p7": (1152, 7, 192, "add"),
    "ef_se1": (1152, 1, 48, "swish"),
    "ef_se2": (48, 1, 1152, "swish"),
    "rg_pw56": (32, 56, 32, "relu"),
    "rg_pw7": (400, 7, 400, "relu"),
}


def model(K, H, M, epilogue):
    """The layer's model and its multiply-adds."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((M, K, 1, 1)) / np.sqrt(K)).astype(np.float32)
    b = rng.standard_normal(M).astype(np.float32) * 0.1
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, K, H, H])]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 1])]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    if epilogue == "clip":
        inits += [numpy_helper.from_array(np.float32(0), "lo"), numpy_helper.from_array(np.float32(6), "hi")]
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
    elif epilogue == "swish":
        nodes += [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])]
    elif epilogue == "add":
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, M, H, H]))
        nodes.append(helper.make_node("Add", ["c", "r"], ["y"]))
    elif epilogue == "relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    else:
        nodes[0].output[0] = "y"
    graph = helper.make_graph(nodes, "pw", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, M, H, H])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, K * M * H * H


def kernel(out):
    """The Conv kernel's name in a build folder (its tile in the tag)."""
    name = os.path.basename(out)
    with open(os.path.join(out, f"{name}.c")) as f:
        found = re.search(rf"{name}_(conv2d_\w+?)_g1_", f.read())
    return found.group(1) if found else "?"


def main():
    ap = speed.layer_parser(__doc__)
    ap.add_argument("--base", help="a checkout to build the same layers with, timed beside this one")
    ap.add_argument("--build-dir", default="/tmp/pointwise_layers")
    a = ap.parse_args()
    os.makedirs(a.build_dir, exist_ok=True)
    trees = {"new": speed.REPO, **({"base": os.path.abspath(a.base)} if a.base else {})}
    for n in (a.only.split(",") if a.only else LAYERS):
        m, macs = model(*LAYERS[n])
        path = os.path.join(a.build_dir, f"{n}.onnx")
        onnx.save(m, path)
        elfs, kernels = {}, {}
        for key, repo in trees.items():
            elf, out = speed.harness(path, os.path.join(a.build_dir, key), a.target, ["opt=speed"], repo=repo)
            elfs[key], kernels[key] = (elf, a.target), kernel(out)
        med = speed.interleave(elfs, path, a.rounds, a.chunk)
        cells = " ".join(f"{k} {med[k]:8.1f} us ({macs / med[k] / 1e3:5.1f})" for k in (*trees, "ort"))
        ratios = f"new/ort {med['new'] / med['ort']:.2f}"
        if a.base:
            ratios += f" new/base {med['new'] / med['base']:.2f}"
        print(f"{n:8s} {cells}  {ratios}  {' | '.join(kernels.values())}", flush=True)


if __name__ == "__main__":
    main()

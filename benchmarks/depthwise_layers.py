#!/usr/bin/env python3
"""Depthwise convolution layers alone: onnxcc vs onnxruntime, GMAC/s side by side.

    .venv/bin/python benchmarks/depthwise_layers.py [--target x86_64] [--only mb_dw,eff_5x5]
        [--tactics depthwise,depthwise_shift,depthwise_nchwc] [--base /tmp/base]

Each layer is one depthwise Conv (padding k//2) and its fused activation (Relu, or Swish
as x * Sigmoid(x), EfficientNet's), built with opt=speed and timed interleaved with
onnxruntime on one thread (speed.interleave: medians, onnxruntime's call overhead
subtracted). The shapes are MobileNetV2's and EfficientNet-B0's. With ``--tactics`` each
layer is also built with each of those Conv tactics forced, all timed in the same rounds;
with ``--base``, also by another checkout's code (e.g. main's, `git archive`), its own choice.
"""

import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speed  # noqa: E402

LAYERS = {  # name: (channels, image, kernel, stride, activation)
    "mb_dw": (144, 56, 3, 1, "relu"),
    "mb_dw_s2": (144, 56, 3, 2, "relu"),
    "mb_112_s2": (96, 112, 3, 2, "relu"),
    "mb_14": (384, 14, 3, 1, "relu"),
    "mb_14_s2": (576, 14, 3, 2, "relu"),
    "mb_7": (960, 7, 3, 1, "relu"),
    "eff_112": (32, 112, 3, 1, "swish"),
    "eff_s2": (96, 112, 3, 2, "swish"),
    "eff_5x5": (240, 28, 5, 1, "swish"),
    "eff_5x5_s2": (144, 56, 5, 2, "swish"),
    "eff_14": (672, 14, 5, 1, "swish"),
    "eff_7": (1152, 7, 5, 1, "swish"),
    "eff_7_3x3": (1152, 7, 3, 1, "swish"),
    "eff_7_relu": (1152, 7, 5, 1, "relu"),
    "eff_14_relu": (672, 14, 5, 1, "relu"),
}


def layer(c, h, k, s, act):
    """The model and its multiply-accumulates."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((c, 1, k, k)) / k).astype(np.float32)
    b = (rng.standard_normal(c) * 0.1).astype(np.float32)
    o = (h + 2 * (k // 2) - k) // s + 1
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k],
                              strides=[s, s], pads=[k // 2] * 4, group=c)]
    if act == "swish":
        nodes += [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])]
    else:
        nodes += [helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "dw", [helper.make_tensor_value_info("x", 1, [1, c, h, h])],
                              [helper.make_tensor_value_info("y", 1, [1, c, o, o])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, c * k * k * o * o


def main():
    ap = speed.layer_parser(__doc__)
    ap.add_argument("--tactics", default="", help="comma-separated Conv tactics also timed, forced")
    ap.add_argument("--base", help="a checkout of the code to compare with (e.g. main's)")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(LAYERS)
    tactics = [t for t in args.tactics.split(",") if t]
    work = tempfile.mkdtemp(prefix="dwlayers")
    forced = "".join(f" {t} us |" for t in tactics) + (" base us | cc/base |" if args.base else "")
    print(f"| layer | C x HxW k s | onnxcc us | GMAC/s | onnxruntime us | GMAC/s | ratio |{forced}")
    print("|---|---|---|---|---|---|---|" + "---|" * (len(tactics) + 2 * bool(args.base)))
    for name in names:
        c, h, k, s, act = LAYERS[name]
        m, macs = layer(c, h, k, s, act)
        path = os.path.join(work, f"{name}.onnx")
        onnx.save(m, path)
        elfs = {"cc": (speed.build(path, "speed", os.path.join(work, "build"), args.target)[0],
                       args.target)}
        for t in tactics:
            elfs[t] = (speed.build(path, "speed", os.path.join(work, t), args.target,
                                   [f"tactic=Conv:{t}"])[0], args.target)
        if args.base:
            elfs["base"] = (speed.harness(path, os.path.join(work, "base"), args.target, ["opt=speed"],
                                          repo=args.base)[0], args.target)
        med = speed.interleave(elfs, path, args.rounds, args.chunk)
        base = f" {med['base']:.1f} | {med['cc'] / med['base']:.2f} |" if args.base else ""
        ort = med["ort"] - med["idle"]
        print(f"| {name} | {c} x {h}x{h} {k}x{k} s{s} {act} | {med['cc']:.1f} | "
              f"{macs / med['cc'] / 1e3:.1f} | {ort:.1f} | {macs / ort / 1e3:.1f} | "
              f"{med['cc'] / ort:.2f} |" + "".join(f" {med[t]:.1f} |" for t in tactics) + base, flush=True)


if __name__ == "__main__":
    main()

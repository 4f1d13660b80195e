#!/usr/bin/env python3
"""onnxcc vs onnxruntime on single Conv+Relu layers (ResNet-18, MobileNetV2, RegNetX shapes).

    .venv/bin/python benchmarks/conv_layers.py x86_64-avx512 r18_64,r18_512 [--tactic implicit]

Each layer is a one-node model built with opt=speed (or the tactic forced); the bench
harness and an onnxruntime session (one thread) run interleaved in rounds, and the
medians, GFLOP/s and their ratio (onnxcc / onnxruntime) are printed, with the tactic the
select stage chose (benchmarks/speed.py's builds and rounds; onnxruntime's time includes its
Python call, small beside a layer's).
`--base DIR` also builds each layer in another checkout (e.g. `git archive main | tar -x -C
DIR`) and times it in the same rounds: a kernel change's before and after.
"""

import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import speed  # noqa: E402

LAYERS = {  # name: (C, H, K, kernel, stride, group)
    "r18_c1": (3, 224, 64, 7, 2, 1),
    "r18_64": (64, 56, 64, 3, 1, 1),
    "r18_128": (128, 28, 128, 3, 1, 1),
    "r18_256": (256, 14, 256, 3, 1, 1),
    "r18_512": (512, 7, 512, 3, 1, 1),
    "r18_s2": (64, 56, 128, 3, 2, 1),
    "r18_s2b": (128, 28, 256, 3, 2, 1),
    "r18_s2c": (256, 14, 512, 3, 2, 1),
    "x512_8": (512, 8, 512, 3, 1, 1),
    "x256_7": (256, 7, 256, 3, 1, 1),
    "sq_e3": (16, 55, 64, 3, 1, 1),
    "sq_e3m": (32, 27, 128, 3, 1, 1),
    "sq_e3b": (64, 13, 256, 3, 1, 1),
    "sq_e3c": (48, 13, 192, 3, 1, 1),
    "mb_pw": (32, 112, 16, 1, 1, 1),
    "mb_exp": (24, 56, 144, 1, 1, 1),
    "mb_dw": (144, 56, 144, 3, 1, 144),
    "mb_dw_s2": (144, 56, 144, 3, 2, 144),
    "rg_b": (32, 112, 32, 3, 2, 2),
    "rg_b1": (64, 56, 64, 3, 2, 4),
    "rg_b2": (64, 28, 64, 3, 1, 4),
    "rg_b3": (160, 28, 160, 3, 2, 10),
    "rg_14": (160, 14, 160, 3, 1, 10),
    "rg_b10": (400, 14, 400, 3, 2, 25),
    "rg_7": (400, 7, 400, 3, 1, 25),
    "rg_stem": (3, 224, 32, 3, 2, 1),
    "sq_c1": (3, 224, 64, 3, 2, 1),
    "rg_proj": (32, 112, 32, 1, 2, 1),
    "rg_pw14": (160, 14, 160, 1, 1, 1),
    "rg_pw7": (400, 7, 400, 1, 1, 1),
    "rg_pw56": (32, 56, 32, 1, 1, 1),
    "rg_pw28": (64, 28, 64, 1, 1, 1),
}


def model(C, H, K, k, s, g):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((K, C // g, k, k)) / np.sqrt(C // g * k * k)).astype(np.float32)
    b = rng.standard_normal(K).astype(np.float32) * 0.1
    node = helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], strides=[s, s],
                            pads=[k // 2] * 4, group=g)
    relu = helper.make_node("Relu", ["c"], ["y"])
    Ho = (H + 2 * (k // 2) - k) // s + 1
    gr = helper.make_graph([node, relu], "c", [helper.make_tensor_value_info("x", 1, [1, C, H, H])],
                           [helper.make_tensor_value_info("y", 1, [1, K, Ho, Ho])],
                           [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, 2 * K * (C // g) * k * k * Ho * Ho


def build(path, target, build_dir, tactic, repo=speed.REPO):
    elf, out = speed.harness(path, build_dir, target,
                             ["opt=speed"] + ([f"tactic=Conv:{tactic}"] if tactic else []), repo=repo)
    with open(os.path.join(out, "tactics.json")) as f:
        return elf, [n["tactic"] for n in json.load(f)["nodes"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target", nargs="?", default="x86_64")
    ap.add_argument("layers", nargs="?", default=",".join(LAYERS))
    ap.add_argument("--tactic", help="force this Conv tactic")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--build-dir", default="/tmp/conv_layers")
    ap.add_argument("--base", help="another checkout (e.g. `git archive main`) also timed, "
                                   "interleaved: before/after of a kernel change")
    a = ap.parse_args()
    os.makedirs(a.build_dir, exist_ok=True)
    for n in a.layers.split(","):
        m, flops = model(*LAYERS[n])
        path = os.path.join(a.build_dir, f"{n}.onnx")
        onnx.save(m, path)
        bdir = os.path.join(a.build_dir, a.tactic or "speed")
        elf, tactics = build(path, a.target, bdir, a.tactic)
        engines = {"onnxcc": (elf, a.target)}
        if a.base:
            engines["base"] = (build(path, a.target, bdir + "_base", a.tactic, a.base)[0], a.target)
        med = speed.interleave(engines, path, a.rounds, 10)
        mo, mt = med["onnxcc"], med["ort"]
        base = f" base {med['base']:9.1f} us, onnxcc/base {mo / med['base']:5.2f}" if a.base else ""
        print(f"{n:10s} onnxcc {mo:9.1f} us ({flops / mo / 1e3:6.1f} GF/s) ort {mt:9.1f} us "
              f"({flops / mt / 1e3:6.1f} GF/s) ratio {mo / mt:5.2f}{base} {tactics}", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Instructions per multiply-accumulate on the Cortex-M4 (or another Cortex-M target):
float32 against int8, and int8 against Arm's CMSIS-NN.

For each example, builds ``models/<m>.onnx`` and ``models/int8/<m>_<form>.onnx`` (per-channel
int8 from onnxruntime's quantizer) with ``profile`` for ``--target`` (default armv7:
qemu-system-arm -M mps2-an386 -icount shift=0, deterministic), the int8 one twice:
``opt=speed`` (the q15 tactics on the DSP extension) and ``opt=size`` (the reference
kernels). Prints the instructions of one inference and per MAC, the int8 kernels' flash (MACs over conv,
depthwise and FC output elements times kernel volume, the issue's count), the CMSIS-NN
figures of issue 13 next to them, then each int8 build's per-layer breakdown.
Prints Markdown (docs/int8.md shows its output).

    .venv/bin/python benchmarks/cortex_m_int8.py [--target armv7] [--models kws,resnet8] [--form qop] [--layers]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["kws", "resnet8", "mobilenet_v1_025", "fc_autoencoder"]
#: CMSIS-NN on the Cortex-M4 (gcc -O2, with and without the DSP extension), instructions
#: per MAC, as issue 13 measured them under the same qemu board and count
CMSIS_NN = {"kws": (2.90, 3.95), "resnet8": (2.39, 3.35)}


def profile(build_dir, target, model, *options):
    """profile.json of the build, with its kernels' flash bytes (size.json) added."""
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", f"build_dir={build_dir}",
                        f"target={target}", f"model={model}", *options, "profile", "."],
                       cwd=REPO, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"profile of {model} {' '.join(options)} failed:\n{r.stdout}{r.stderr}")
    folder = os.path.join(build_dir, target, os.path.splitext(os.path.basename(model))[0])
    with open(os.path.join(folder, "profile.json")) as f:
        result = json.load(f)
    with open(os.path.join(folder, "size.json")) as f:
        result["kernel_bytes"] = json.load(f)["flash"]["kernels"]
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="armv7")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--form", default="qdq", choices=["qdq", "qop"],
                    help="the int8 examples' form: QDQ (uint8 activations) or QOperator (int8)")
    ap.add_argument("--layers", action="store_true", help="also print each int8 build's layers")
    args = ap.parse_args(argv)
    rows, layers = [], {}
    with tempfile.TemporaryDirectory(prefix="onnxcc-cortexm-") as build_dir:
        for m in args.models.split(","):
            f32 = profile(build_dir, args.target, f"models/{m}.onnx")
            fast = profile(build_dir, args.target, f"models/int8/{m}_{args.form}.onnx")
            small = profile(build_dir, args.target, f"models/int8/{m}_{args.form}.onnx", "opt=size")
            macs = sum(n["macs"] for n in fast["nodes"])
            rows.append((m, macs, f32["total"], small["total"], fast["total"],
                         small["kernel_bytes"], fast["kernel_bytes"]))
            layers[m] = fast["nodes"]
    print(f"Instructions of one inference on {args.target} (qemu -icount shift=0), and per MAC; "
          f"int8: models/int8/*_{args.form}.onnx\n")
    print("| model | MACs | float32 | int8 reference (opt=size) | int8 q15 (opt=speed) "
          "| int8 / float32 | CMSIS-NN (DSP / no DSP) | onnxcc / CMSIS-NN |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for m, macs, f32, small, fast, _, _ in rows:
        cmsis = CMSIS_NN.get(m)
        print(f"| {m} | {macs:,} | {f32:,} ({f32 / macs:.2f}) | {small:,} ({small / macs:.2f}) "
              f"| {fast:,} ({fast / macs:.2f}) | {fast / f32:.2f} "
              f"| {f'{cmsis[0]:.2f} / {cmsis[1]:.2f}' if cmsis else '-'} "
              f"| {f'{fast / macs / cmsis[0]:.2f}' if cmsis else '-'} |")
    print("\nint8 kernels' flash (bytes): opt=size (reference kernels), opt=speed (q15)\n")
    print("| model | opt=size | opt=speed |")
    print("| --- | ---: | ---: |")
    for m, *_, small_bytes, fast_bytes in rows:
        print(f"| {m} | {small_bytes:,} | {fast_bytes:,} |")
    if args.layers:
        for m, nodes in layers.items():
            print(f"\n{m}_{args.form}, opt=speed, per layer:\n")
            print("| node | op | tactic | MACs | instructions | per MAC |")
            print("| --- | --- | --- | ---: | ---: | ---: |")
            for n in nodes:
                if n["cost"]:
                    per = f"{n['cost'] / n['macs']:.2f}" if n["macs"] else "-"
                    print(f"| {n['node']} | {n['op']} | {n['tactic']} | {n['macs']:,} "
                          f"| {n['cost']:,} | {per} |")


if __name__ == "__main__":
    main()

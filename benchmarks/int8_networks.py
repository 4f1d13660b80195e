#!/usr/bin/env python3
"""Float model in, int8 firmware out, on the Cortex-M4: instructions per MAC of real
network shapes, their float32 build against the build `quantize=int8` makes of it.

The networks are the keyword spotter of models/ and the MobileNetV2 0.35 / MobileNetV3-
small 96x96 networks of benchmarks/zoo_models.py, in both torch exporters' op patterns
(dynamo, TorchScript). Each is calibrated on a seeded data set (models/make_datasets.py's
distribution), quantized by `quantize=int8`, verified in qemu (exact against onnxruntime)
and profiled (qemu -icount shift=0: deterministic); prints Markdown (docs/int8.md).

    .venv/bin/python benchmarks/int8_networks.py [--target armv7] [--networks a,b]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
sys.path.insert(0, os.path.join(REPO, "models"))

import zoo_models  # noqa: E402
from make_datasets import _inputs  # noqa: E402

NETWORKS = ["kws", "mobilenet_v2_035_96_ts13", "mobilenet_v2_035_96_dyn18",
            "mobilenet_v3_small_96_ts14", "mobilenet_v3_small_96_dyn18"]
#: MLPerf Tiny v1.3, ST X-CUBE-AI 10.2 on a Cortex-M4 (STM32L4R5): cycles per MAC
MLPERF = {"kws": "1.96 (keyword spotting, DS-CNN)",
          "mobilenet_v2_035_96_ts13": "1.43 (visual wake words, MobileNetV1 0.25)"}


def scons(build_dir, target, model, *options):
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", f"build_dir={build_dir}",
                        f"target={target}", f"model={model}", *options],
                       cwd=REPO, capture_output=True, text=True)
    return r.returncode == 0, r.stdout + r.stderr


def measure(build_dir, target, model, *options):
    """(instructions, MACs, verify line) of one build, or (None, None, why)."""
    ok, out = scons(build_dir, target, model, *options, "verify", "profile")
    if not ok:
        why = [line for line in out.splitlines() if "***" in line or "error" in line]
        if any("does not fit" in line for line in why):
            return None, None, f"does not fit {target}'s flash"
        return None, None, (why or ["failed"])[0][-160:]
    folder = os.path.join(build_dir, target, os.path.splitext(os.path.basename(model))[0])
    with open(os.path.join(folder, "profile.json")) as f:
        p = json.load(f)
    verified = "exact" if "max abs error 0," in out else "within tolerance"
    return p["total"], sum(n["macs"] for n in p["nodes"]), verified


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="armv7")
    ap.add_argument("--networks", default=",".join(NETWORKS))
    ap.add_argument("--calibration", type=int, default=32, help="calibration samples")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="onnxcc-int8-networks-") as tmp:
        for name in args.networks.split(","):
            if name in zoo_models.MODELS:
                (path,) = zoo_models.write(tmp, [name])
            else:
                path = os.path.join(REPO, "models", f"{name}.onnx")
            calib = os.path.join(tmp, f"{name}_calibration.npy")
            arrays = _inputs(onnx.load(path), args.calibration, np.random.default_rng(0))
            np.save(calib, next(iter(arrays.values())))
            f32, macs, f32_note = measure(os.path.join(tmp, "f32"), args.target, path)
            q, qmacs, q_note = measure(os.path.join(tmp, "int8"), args.target, path,
                                       "quantize=int8", f"calibration={calib}")
            rows.append((name, macs or qmacs, f32, f32_note, q, q_note))
    print(f"Instructions of one inference on {args.target} (qemu -icount shift=0) and per MAC: "
          "the float32 model and its quantize=int8 build\n")
    print("| network | MACs | float32 | int8 | int8 / float32 | int8 verify | MLPerf Tiny, X-CUBE-AI, cycles/MAC |")
    print("| --- | ---: | ---: | ---: | ---: | --- | --- |")
    for name, macs, f32, f32_note, q, q_note in rows:
        def cell(n, note):
            return f"{n:,} ({n / macs:.2f})" if n and macs else f"- ({note})"
        ratio = f"{q / f32:.2f}" if q and f32 else "-"
        print(f"| {name} | {macs or 0:,} | {cell(f32, f32_note)} | {cell(q, q_note)} | {ratio} "
              f"| {q_note if q else '-'} | {MLPERF.get(name, '-')} |")


if __name__ == "__main__":
    main()

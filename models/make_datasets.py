#!/usr/bin/env python3
"""Write a calibration set and a labelled validation set for example models, the data
sets `quantize=int8 calibration=` and `validate data=` take (docs/int8.md).

The example models are seeded, not trained, and the machine has no real recordings or
images: the inputs are drawn from a seeded normal distribution (MFCC-like: a few large
coefficients, many small ones), and each validation sample's label is the float model's
own top class (onnxruntime), so the float model scores 100% by construction and the
accuracy of the int8 build says how often quantization changes the decision.

    <out>/<name>/calibration/inputs.npy        N calibration inputs, [N, *input shape]
    <out>/<name>/validation/inputs.npz         M validation inputs, by input name
    <out>/<name>/validation/labels.npy         M class indices

Usage:
    python models/make_datasets.py [-o OUT] [--calibration N] [--validation M] [MODEL ...]
"""

import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(os.path.dirname(HERE), "build", "datasets")


def _inputs(model, n, rng):
    """``n`` inputs per graph input, stacked: [n, *shape]."""
    inits = {i.name for i in model.graph.initializer}
    arrays = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        # a decaying spread along the last axis, as cepstral coefficients have
        spread = 1.0 / (1.0 + np.arange(shape[-1], dtype=np.float64)) ** 0.5
        arrays[vi.name] = (rng.standard_normal((n, *shape)) * spread * 0.6).astype(np.float32)
    return arrays


def write(name, out, calibration=64, validation=200, seed=0):
    """Write the two data sets of the example ``name``; return their folders."""
    path = os.path.join(HERE, f"{name}.onnx")
    model = onnx.load(path)
    rng = np.random.default_rng(seed)
    calib_dir = os.path.join(out, name, "calibration")
    val_dir = os.path.join(out, name, "validation")
    os.makedirs(calib_dir, exist_ok=True)
    os.makedirs(val_dir, exist_ok=True)
    calib = _inputs(model, calibration, rng)
    if len(calib) == 1:
        np.save(os.path.join(calib_dir, "inputs.npy"), next(iter(calib.values())))
    else:
        np.savez(os.path.join(calib_dir, "inputs.npz"), **calib)
    val = _inputs(model, validation, rng)
    np.savez(os.path.join(val_dir, "inputs.npz"), **val)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    labels = [int(np.argmax(session.run(None, {k: v[i] for k, v in val.items()})[0]))
              for i in range(validation)]
    np.save(os.path.join(val_dir, "labels.npy"), np.array(labels, np.int64))
    return calib_dir, val_dir


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=["kws"], help="example names (default: kws)")
    parser.add_argument("-o", "--out", default=DEFAULT_OUT)
    parser.add_argument("--calibration", type=int, default=64, help="calibration samples")
    parser.add_argument("--validation", type=int, default=200, help="validation samples")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for name in args.models:
        for folder in write(name, args.out, args.calibration, args.validation, args.seed):
            print(f"wrote {os.path.relpath(folder)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

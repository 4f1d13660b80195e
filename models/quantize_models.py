#!/usr/bin/env python3
"""Quantize the example float models to int8 with onnxruntime's static quantization.

Each model is first pre-processed as the build's quantize=int8 does it
(site_scons/onnxcc/quantize/prepare.py), then calibrated on seeded random inputs (uniform in
[-1, 1], the distribution onnxcc's verify feeds) and quantized twice, into models/int8/:

    <name>_qdq.onnx    QDQ form, uint8 activations (onnxruntime's choice for x86: its
                       U8S8 kernels take every group, so it runs the model all-integer)
    <name>_qop.onnx    QOperator form (QLinearConv, QGemm, QLinearAdd, ...), int8 activations

and, for the camera model (mobilenet_v1_025), ``<name>_qop_int8_input.onnx``: the QOperator
model without its first QuantizeLinear, so that its input is the int8 image a camera
pipeline delivers (the memory docs' 64 KB example).

Weights are int8 per output channel (symmetric), biases int32. The files are
reproducible: same onnxruntime version, same bytes.

Usage:
    python models/quantize_models.py [-o OUT_DIR] [--samples N] [MODEL ...]
"""

import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quantize_static)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "site_scons"))
from onnxcc.quantize.prepare import prepare  # noqa: E402

ort.set_default_logger_severity(3)
HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["kws", "mobilenet_v1_025", "resnet8", "fc_autoencoder"]
#: the models also written with an int8 input
INT8_INPUT = ["mobilenet_v1_025"]
#: suffix -> (format, activation type)
FORMATS = {"qdq": (QuantFormat.QDQ, QuantType.QUInt8), "qop": (QuantFormat.QOperator, QuantType.QInt8)}


class SeededInputs(CalibrationDataReader):
    """``samples`` random inputs per graph input, uniform in [-1, 1], from ``seed``."""

    def __init__(self, model_path, samples, seed):
        session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(seed)
        self.batches = iter([
            {i.name: rng.uniform(-1.0, 1.0, i.shape).astype(np.float32)
             for i in session.get_inputs()} for _ in range(samples)])

    def get_next(self):
        return next(self.batches, None)


def quantize(name, out_dir, samples=16, seed=0):
    """Write ``<name>_qdq.onnx`` and ``<name>_qop.onnx`` into ``out_dir``; return their paths."""
    source = name if name.endswith(".onnx") else os.path.join(HERE, f"{name}.onnx")
    name = os.path.splitext(os.path.basename(name))[0]
    written = []
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        prepared = os.path.join(tmp, f"{name}.pre.onnx")
        prepare(source, prepared)
        for suffix, (fmt, activations) in FORMATS.items():
            out = os.path.join(out_dir, f"{name}_{suffix}.onnx")
            quantize_static(prepared, out, SeededInputs(prepared, samples, seed),
                            quant_format=fmt, activation_type=activations,
                            weight_type=QuantType.QInt8, per_channel=True,
                            calibrate_method=CalibrationMethod.MinMax)
            model = onnx.load(out)
            model.producer_name, model.producer_version = "onnxcc/models/quantize_models.py", ""
            onnx.save(model, out)
            written.append(out)
    if name in INT8_INPUT:
        out = os.path.join(out_dir, f"{name}_qop_int8_input.onnx")
        onnx.save(int8_input(onnx.load(os.path.join(out_dir, f"{name}_qop.onnx"))), out)
        written.append(out)
    return written


def int8_input(model):
    """``model`` whose QuantizeLinear of its graph input is gone: its output, the int8
    codes, becomes the graph input."""
    g = model.graph
    source = g.input[0].name
    quantize = next(n for n in g.node if n.op_type == "QuantizeLinear" and n.input[0] == source)
    codes = quantize.output[0]
    g.node.remove(quantize)
    dims = [d.dim_value for d in g.input[0].type.tensor_type.shape.dim]
    del g.input[0]
    g.input.insert(0, onnx.helper.make_tensor_value_info(codes, onnx.TensorProto.INT8, dims))
    used = {i for n in g.node for i in n.input}
    for init in [i for i in g.initializer if i.name not in used]:
        g.initializer.remove(init)
    onnx.checker.check_model(model)
    return model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=MODELS, help=f"example names or .onnx files (default: {' '.join(MODELS)}); "
                             "for your own model, scons quantize=int8 (docs/int8.md)")
    parser.add_argument("-o", "--out-dir", default=os.path.join(HERE, "int8"))
    parser.add_argument("--samples", type=int, default=16, help="calibration inputs per model")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for name in args.models:
        for path in quantize(name, args.out_dir, args.samples, args.seed):
            print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Quantize the example float models to int8 with onnxruntime's static quantization.

Each model is first pre-processed the way onnxruntime recommends (its basic graph
optimizations: BatchNormalization folded into Conv, constants folded; no symbolic shape
inference, which would need sympy; a BatchNormalization after a Gemm, which onnxruntime
does not fold, is folded here), then calibrated on seeded random inputs (uniform in
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
from onnx import numpy_helper
from onnxruntime.quantization.shape_inference import quant_pre_process

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


def fold_gemm_batchnorm(model):
    """Gemm -> BatchNormalization becomes one Gemm (scaled weights and bias)."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    producers = {o: n for n in g.node for o in n.output}
    for bn in [n for n in g.node if n.op_type == "BatchNormalization"]:
        gemm = producers.get(bn.input[0])
        if gemm is None or gemm.op_type != "Gemm" or len(gemm.input) < 3:
            continue
        trans_b = any(a.name == "transB" and a.i for a in gemm.attribute)
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        scale, beta, mean, var = (numpy_helper.to_array(inits[i]).astype(np.float64) for i in bn.input[1:5])
        k = scale / np.sqrt(var + eps)
        w = numpy_helper.to_array(inits[gemm.input[1]]).astype(np.float64)
        b = numpy_helper.to_array(inits[gemm.input[2]]).astype(np.float64)
        w = w * (k[:, None] if trans_b else k[None, :])
        inits[gemm.input[1]].CopyFrom(numpy_helper.from_array(w.astype(np.float32), gemm.input[1]))
        inits[gemm.input[2]].CopyFrom(numpy_helper.from_array(((b - mean) * k + beta).astype(np.float32), gemm.input[2]))
        gemm.output[0] = bn.output[0]
        g.node.remove(bn)
    used = {i for n in g.node for i in n.input}
    for init in [i for i in g.initializer if i.name not in used]:
        g.initializer.remove(init)
    return model


def quantize(name, out_dir, samples=16, seed=0):
    """Write ``<name>_qdq.onnx`` and ``<name>_qop.onnx`` into ``out_dir``; return their paths."""
    source = os.path.join(HERE, f"{name}.onnx")
    written = []
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        prepared = os.path.join(tmp, f"{name}.pre.onnx")
        quant_pre_process(source, prepared, skip_symbolic_shape=True)
        model = fold_gemm_batchnorm(onnx.load(prepared))
        keep = {"", "ai.onnx"}  # the pre-processing lists every domain onnxruntime knows
        imports = [o for o in model.opset_import if o.domain in keep]
        del model.opset_import[:]
        model.opset_import.extend(imports)
        onnx.save(model, prepared)
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
    parser.add_argument("models", nargs="*", default=MODELS, help=f"default: {' '.join(MODELS)}")
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

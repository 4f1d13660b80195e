"""The quantize stage: float model + calibration data -> QDQ model (quantized.onnx), and
integer inputs and outputs (integer_io.py).

Microcontroller defaults, as CMSIS-NN and TFLite Micro expect them: int8 activations
(asymmetric), int8 weights symmetric (zero point 0) and per output channel, int32 biases;
QDQ form, which onnxcc's optimizer turns into integer kernels (docs/int8.md). The scales
come from onnxruntime's calibration (``calibrate=``) on the user's data set, or on random
inputs when there is none, which gives poor scales for real data (one line says so).
"""

import os

import numpy as np
import onnx

from onnxcc.core import dataset
from onnxcc.core.errors import OnnxccError, one_line
from onnxcc.core.files import staged_outputs
from onnxcc.importer.stage import read_model

from .integer_io import IO_DTYPES, integer_io

#: quantize= values
SCHEMES = ("", "int8")
#: calibrate= values -> onnxruntime's CalibrationMethod names
METHODS = {"minmax": "MinMax", "entropy": "Entropy", "percentile": "Percentile"}
#: calibration inputs drawn when no data set is given
RANDOM_SAMPLES = 16


def check_options(quantize, calibrate, keep_float, io_dtype="float"):
    """One line for a quantize=, calibrate=, keep_float= or io_dtype= the stage cannot
    take; the node names of keep_float."""
    if io_dtype not in IO_DTYPES:
        raise OnnxccError(f"io_dtype={io_dtype} is not one of {', '.join(IO_DTYPES)}")
    if quantize not in SCHEMES:
        raise OnnxccError(f"quantize={quantize} is not one of int8 (or empty: as the model is)")
    if calibrate not in METHODS:
        raise OnnxccError(f"calibrate={calibrate} is not one of {', '.join(METHODS)}")
    return [n for n in (keep_float or "").split(",") if n]


class _Reader:
    """onnxruntime's CalibrationDataReader over a list of samples."""

    def __init__(self, names, samples):
        self.batches = iter([dict(zip(names, s)) for s in samples])

    def get_next(self):
        return next(self.batches, None)

    def __iter__(self):
        return iter(self.get_next, None)


def calibration_samples(model, data, seed, input_shapes=None):
    """The samples calibration runs on, and how to describe them: the data set ``data``,
    or seeded random ones (dataset.random_sample, what verify feeds) when it is empty."""
    specs = dataset.model_inputs(model, input_shapes)
    if data:
        found, _ = dataset.samples(data, specs)
        return found, f"{len(found)} samples of {one_line(os.path.basename(os.path.normpath(data)))}"
    rng = np.random.default_rng(seed)
    found = [dataset.random_sample(specs, rng) for _ in range(RANDOM_SAMPLES)]
    return found, (f"{RANDOM_SAMPLES} random inputs: give calibration=FOLDER of real inputs, "
                   "random data gives poor scales")


def run(source, out, quantize, io_dtype, data, seed, calibrate="minmax", per_channel=True,
        keep_float=(), input_shapes=None):
    """Write the model as onnxcc compiles it: the model file ``source`` quantized
    (``quantize``) and/or with integer inputs and outputs (``io_dtype``) to ``out``; the
    line to print."""
    with staged_outputs([out]) as (staged,):
        if quantize:
            line = _quantize(source, staged, data, seed, calibrate, per_channel, keep_float,
                             input_shapes)
            model = onnx.load(staged)
        else:
            line, model = "quantized as given", read_model(source)
        if io_dtype == "int8":
            integer_io(model, source)
            line += "; int8 inputs and outputs (the header gives their scales and zero points)"
        model.producer_name, model.producer_version = "onnxcc quantize", ""
        onnx.save(model, staged)
    return line


def _quantize(source, out, data, seed, calibrate, per_channel, keep_float, input_shapes):
    """Write the QDQ model of the float model file ``source`` to ``out``; what was done."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    from .prepare import prepare
    model = read_model(source)  # checked as an untrusted file before onnxruntime reads it
    if any(n.op_type in ("QuantizeLinear", "DequantizeLinear", "QLinearConv")
           for n in model.graph.node):
        raise OnnxccError("is already quantized", where=source,
                          hint="drop quantize=int8, or give the float model")
    unknown = [n for n in keep_float if n not in {node.name for node in model.graph.node}]
    if unknown:
        raise OnnxccError(f"keep_float= names {', '.join(map(repr, unknown))}, which the model "
                          "has no node of", where=source, hint="give node names, comma-separated")
    samples, described = calibration_samples(model, data, seed, input_shapes)
    names = [s.name for s in dataset.model_inputs(model, input_shapes)]
    prepared = os.path.join(os.path.dirname(out), "prepared.onnx")
    try:
        prepare(source, prepared)
        quantize_static(
            prepared, out, _Reader(names, samples),
            quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8, per_channel=per_channel,
            calibrate_method=getattr(CalibrationMethod, METHODS[calibrate]),
            nodes_to_exclude=list(keep_float),
            extra_options={"ActivationSymmetric": False, "WeightSymmetric": True})
    except Exception as e:  # onnxruntime's quantizer raises many types
        raise OnnxccError(f"onnxruntime's quantizer failed: {type(e).__name__}: "
                          f"{(str(e).splitlines() or [''])[0]}", where=source,
                          hint="keep_float=NODE,... keeps the nodes it cannot quantize "
                               "in float") from None
    return (f"int8 (QDQ, {'per-channel' if per_channel else 'per-tensor'} weights), "
            f"{calibrate} calibration on {described}")

"""validate: the compiled model's accuracy on a data set, on the target.

verify asks whether the C code computes what onnxruntime computes; validate asks what the
whole way from the float model costs. The harness of verify runs every sample of
``data=`` (linked in as data) on the target; per output, the C model's results are
measured against the float model under onnxruntime (the model as the user gave it) and,
for a quantize=int8 build, against the int8 model under onnxruntime (which it should
match exactly): agreement of the top class, accuracy when the data set has labels, rmse,
mae, relative L2 error and cosine similarity. Then per layer: each quantized activation
of the int8 model (its DequantizeLinear's output) against the float model's tensor of the
same name, both under onnxruntime (the C model's own tensors equal the int8 model's, as
verify checks), worst first: where the accuracy goes.
"""

import dataclasses
import json
import os
import tempfile

import numpy as np
import onnx

from onnxcc.core import dataset
from onnxcc.core.errors import OnnxccError, one_line
from onnxcc.core.files import write_files, write_text
from onnxcc.core.onnxruntime_session import session
from onnxcc.core.report import human_bytes
from onnxcc.importer.stage import read_model
from onnxcc.quantize.integer_io import io_quant

from . import verify

#: the layers the printed table shows (validate.json has them all)
SHOWN_LAYERS = 10


def _outputs(model, samples):
    """onnxruntime's outputs of ``model`` (a ModelProto) for each sample, stacked per
    output: [samples, *shape]."""
    runs = verify.reference_runs(model, samples)
    return [np.stack([np.asarray(r[k]) for r in runs]) for k in range(len(runs[0]))]


def layer_errors(float_path, quant_path, samples, quant_samples=None):
    """Per quantized activation of the QDQ model ``quant_path`` that the float model has
    by name: its relative L2 error and signal-to-quantization-noise ratio against the float
    tensor over all samples (``quant_samples``: the QDQ model's, when it takes others),
    worst first."""
    from onnxruntime.quantization.qdq_loss_debug import \
        modify_model_output_intermediate_tensors as save_intermediates
    from onnxruntime.quantization.quant_utils import DEQUANT_OUTPUT_SUFFIX
    saved = "_ReshapedSavedOutput"  # the suffix of the outputs save_intermediates adds
    sums = {}
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for k, path in enumerate((float_path, quant_path)):
            out = os.path.join(tmp, f"{k}.onnx")
            save_intermediates(path, out)
            runs.append(session(onnx.load(out), optimize=False))
        names = [[i.name for i in r.get_inputs()] for r in runs]
        for x, xq in zip(samples, quant_samples or samples):
            floats, quants = ({o.name: v for o, v in zip(r.get_outputs(), r.run(None, dict(zip(n, feed))))}
                              for r, n, feed in zip(runs, names, (x, xq)))
            for name, q in quants.items():
                base = name[:-len(saved)] if name.endswith(saved) else ""
                tensor = base[:-len(DEQUANT_OUTPUT_SUFFIX)] if base.endswith(DEQUANT_OUTPUT_SUFFIX) else ""
                f = floats.get(tensor + saved)
                if not tensor or f is None or f.shape != q.shape:
                    continue
                f, q = f.astype(np.float64), q.astype(np.float64)
                acc = sums.setdefault(tensor, [0.0, 0.0])
                acc[0] += float(np.sum((q - f) ** 2))
                acc[1] += float(np.sum(f ** 2))
    rows = []
    for tensor, (noise, signal) in sums.items():
        l2r = float(np.sqrt(noise / signal)) if signal else (0.0 if not noise else float("inf"))
        sqnr = float(10 * np.log10(signal / noise)) if noise and signal else None
        rows.append({"tensor": tensor, "l2r": l2r, "sqnr_db": sqnr})
    return sorted(rows, key=lambda r: -r["l2r"])


def make_case(model_path, float_path, name, harness_c, data_c, reference_npz, data, input_shapes,
              limit, flash_bytes, pools=("arena",), io_in_arena=False):
    """Write the harness running every sample of ``data`` (at most ``limit``; 0: all), the
    samples, and the references: onnxruntime's outputs of the compiled model
    ``model_path`` and of the float model ``float_path`` (None: the same model), the
    labels and the per-layer errors."""
    model = read_model(model_path)
    io = io_quant(model)  # io_dtype=int8: the data set stays float, the harness gets int8
    declared = dataset.model_inputs(model, input_shapes)
    specs = [dataclasses.replace(s, dtype="float32") if s.name in io else s for s in declared]
    floats_in, labels = dataset.samples(data, specs, limit or None)
    found = [[quantize(x, io[s.name], s.dtype) if s.name in io else x for x, s in zip(sample, declared)]
             for sample in floats_in]
    total = sum(x.nbytes for sample in found for x in sample)
    if flash_bytes and total > flash_bytes // 2:
        raise OnnxccError(f"its {len(found)} samples take {human_bytes(total)}, more than the "
                          f"half of the target's {human_bytes(flash_bytes)} of flash the "
                          "validate program may give them", where=data,
                          hint="validate on fewer: samples=N")
    compiled = _outputs(model, found)
    floats = _outputs(read_model(float_path), floats_in) if float_path else compiled
    layers = layer_errors(float_path, model_path, floats_in, found) if float_path else []
    harness, text = verify.harness_sources(name, found, [y.dtype for y in compiled], pools,
                                           io_in_arena)
    with tempfile.TemporaryDirectory() as tmp:
        npz = os.path.join(tmp, "reference.npz")
        np.savez(npz, **{f"compiled_{k}": y for k, y in enumerate(compiled)},
                 **{f"float_{k}": y for k, y in enumerate(floats)},
                 labels=labels if labels is not None else np.zeros(0, np.int64),
                 quantized=np.array(bool(float_path)), layers=np.array(json.dumps(layers)),
                 names=np.array(json.dumps([o.name for o in model.graph.output])),
                 io=np.array(json.dumps(io)))
        with open(npz, "rb") as f:
            reference = f.read()
    write_files({harness_c: harness, data_c: text, reference_npz: [reference]})


def quantize(x, params, dtype):
    """``x`` as QuantizeLinear gives it: x / scale rounded half to even, plus the zero
    point, saturated (what the caller of an io_dtype=int8 model does)."""
    scale, zero_point = params
    info = np.iinfo(np.dtype(dtype))
    q = np.rint(np.asarray(x, np.float32) / np.float32(scale)) + zero_point
    return np.clip(q, info.min, info.max).astype(dtype)


def dequantize(q, params):
    scale, zero_point = params
    return (q.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)


def metrics(got, ref):
    """How far ``got`` is from ``ref`` (both [samples, ...]): rmse, mae, relative L2
    error, mean cosine similarity per sample, and the share of samples whose top class
    (argmax) agrees, for an output of more than one element."""
    g = got.reshape(len(got), -1).astype(np.float64)
    r = ref.reshape(len(ref), -1).astype(np.float64)
    d = g - r
    norm = float(np.linalg.norm(r))
    gn, rn = np.linalg.norm(g, axis=1), np.linalg.norm(r, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where((gn == 0) & (rn == 0), 1.0, np.sum(g * r, axis=1) / (gn * rn))
    out = {"rmse": float(np.sqrt(np.mean(d ** 2))) if d.size else 0.0,
           "mae": float(np.mean(np.abs(d))) if d.size else 0.0,
           "l2r": float(np.linalg.norm(d)) / norm if norm else float(np.linalg.norm(d) != 0),
           "cosine": float(np.mean(np.nan_to_num(cos)))}
    if g.shape[1] > 1:
        out["top1_agreement"] = float(np.mean(np.argmax(g, 1) == np.argmax(r, 1)))
    return out


def accuracy(values, labels):
    """The share of samples whose top class is their label."""
    top = np.argmax(values.reshape(len(values), -1), 1)
    return float(np.mean(top == labels))


def _table(report):
    lines = []
    columns = ("top-1", "rmse", "mae", "l2r", "cosine")
    for out in report["outputs"]:
        lines.append(f"output {out['index']} {one_line(repr(out['name']))} {out['shape']}"
                     + (f", accuracy on the labels: C {out['accuracy']['c']:.1%}, float "
                        f"{out['accuracy']['float']:.1%}" + (
                            f", int8 {out['accuracy']['int8']:.1%}" if "int8" in out["accuracy"]
                            else "") if "accuracy" in out else ""))
        lines.append(f"  {'C model against':<22}" + "".join(f"{c:>11}" for c in columns))
        for ref, m in out["against"].items():
            top = f"{m['top1_agreement']:.1%}" if "top1_agreement" in m else "-"
            lines.append(f"  {ref:<22}{top:>11}" + "".join(
                f"{m[c]:>11.4g}" for c in ("rmse", "mae", "l2r", "cosine")))
    if report["layers"]:
        lines.append(f"per layer, int8 against float under onnxruntime, worst first "
                     f"({min(SHOWN_LAYERS, len(report['layers']))} of {len(report['layers'])}):")
        lines.append(f"  {'tensor':<40}{'l2r':>11}{'sqnr dB':>11}")
        for row in report["layers"][:SHOWN_LAYERS]:
            sqnr = "-" if row["sqnr_db"] is None else f"{row['sqnr_db']:.1f}"
            lines.append(f"  {one_line(row['tensor'])[:40]:<40}{row['l2r']:>11.4g}{sqnr:>11}")
    return "\n".join(lines)


def run(target, elf, reference_npz, report_path, name, timeout=1800):
    """Run every sample on the target, measure, write validate.json; the table to print."""
    with np.load(reference_npz) as f:
        n = sum(1 for key in f.files if key.startswith("compiled_"))
        compiled = [f[f"compiled_{k}"] for k in range(n)]
        floats = [f[f"float_{k}"] for k in range(n)]
        labels = f["labels"] if f["labels"].size else None
        quantized, layers = bool(f["quantized"]), json.loads(str(f["layers"]))
        output_names, io = json.loads(str(f["names"])), json.loads(str(f["io"]))
    status, got = verify.run_harness(target, elf, timeout)
    if status != 0:
        raise OnnxccError(f"{name}_run returned {status}", where=elf)
    samples = len(compiled[0]) if compiled else 0
    report = {"model": name, "target": target.name, "samples": samples, "outputs": [],
              "layers": layers}
    for k, (want, flt) in enumerate(zip(compiled, floats)):
        raw = got.get(k, b"")
        if len(raw) != want.nbytes:
            raise OnnxccError(f"output {k}: {len(raw)} bytes printed, {want.nbytes} expected",
                              where=elf)
        c = np.frombuffer(raw, dtype=want.dtype).reshape(want.shape)
        if output_names[k] in io:  # measured in real values, as the float model gives them
            c, want = dequantize(c, io[output_names[k]]), dequantize(want, io[output_names[k]])
        against = {"float (onnxruntime)": metrics(c, flt)}
        if quantized:
            against["int8 (onnxruntime)"] = metrics(c, want)
        out = {"index": k, "name": output_names[k],
               "shape": list(want.shape[1:]), "against": against}
        if labels is not None and k == 0:
            out["accuracy"] = {"c": accuracy(c, labels), "float": accuracy(flt, labels)}
            if quantized:
                out["accuracy"]["int8"] = accuracy(want, labels)
        report["outputs"].append(out)
    write_text(report_path, json.dumps(report, indent=1) + "\n")
    return (f"[validate] {name} on {target.name}: {samples} samples"
            f"{', labelled' if labels is not None else ''}\n" + _table(report))

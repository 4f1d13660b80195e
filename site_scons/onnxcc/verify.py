"""verify: run the compiled model on the target and compare with onnxruntime.

The inputs (seeded random, or a test_data_set_N folder) and the expected outputs are
fixed at build time; the inputs are linked into the harness as data, so a bare-metal
target needs no file system, and the harness prints its outputs as hex bytes on stdout.
"""

import glob
import json
import os
import subprocess

import numpy as np
import onnx
from onnx import numpy_helper

from .cgen import c_array_body, c_type
from .codegen.render import render
from .errors import OnnxccError
from .files import write_texts
from .importer import read_model
from .targets import run_captured

#: float32 agreement: |got - expected| <= ATOL + RTOL * |expected|
RTOL, ATOL = 1e-4, 1e-5
#: targets that contract a*b+c into fused multiply-adds round differently in the last bits
FMA_FACTOR = 10
MARK = "ONNXCC"


def random_inputs(model, input_shapes, seed):
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    arrays = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        shape = input_shapes.get(vi.name) or [d.dim_value for d in t.shape.dim]
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.elem_type))
        if dtype.kind == "f":
            arrays.append(rng.uniform(-1.0, 1.0, shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 10, shape).astype(dtype))
    return arrays


def read_test_data(folder):
    """Inputs and expected outputs of an ONNX ``test_data_set_N`` folder."""
    def load(kind):
        paths = sorted(glob.glob(os.path.join(folder, f"{kind}_*.pb")),
                       key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
        arrays = []
        for p in paths:
            t = onnx.TensorProto()
            with open(p, "rb") as f:
                t.ParseFromString(f.read())
            arrays.append(numpy_helper.to_array(t))
        return arrays
    if not os.path.isdir(folder):
        raise OnnxccError("no such test data folder", where=folder,
                          hint="testdata= takes a test_data_set_N folder")
    inputs, outputs = load("input"), load("output")
    if not inputs and not outputs:
        raise OnnxccError("no input_K.pb / output_K.pb files", where=folder)
    return inputs, outputs


def reference_outputs(model_path, inputs):
    import onnxruntime as ort  # imported late: only verify needs it
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    model = onnx.load(model_path)
    # onnxruntime trails onnx: a model saved by a newer onnx may carry an IR version it
    # does not know yet although it uses nothing new; IR 10 covers every opset up to 21
    model.ir_version = min(model.ir_version, 10)
    try:
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        feeds = {i.name: x for i, x in zip(session.get_inputs(), inputs)}
        return session.run(None, feeds)
    except Exception as e:  # onnxruntime raises its own exception types
        raise OnnxccError(f"onnxruntime cannot run the model: {str(e).splitlines()[0]}",
                          where=model_path) from None


def exact_outputs(model):
    """Per graph output: whether it must match exactly. Integer outputs do, and so do the
    float outputs of a DequantizeLinear: multiples of its scale, from integers that match."""
    producers = {o: n for n in model.graph.node for o in n.output}
    return [getattr(producers.get(o.name), "op_type", None) == "DequantizeLinear"
            for o in model.graph.output]


def make_case(model_path, name, harness_c, data_c, expected_npz, input_shapes, seed, testdata,
              pools=("arena",), io_in_arena=False):
    """Write the harness (for the API that ``pools`` and ``io_in_arena`` give), its input
    data and the expected outputs."""
    model = read_model(model_path)
    if testdata:
        inputs, expected = read_test_data(testdata)
    else:
        inputs = random_inputs(model, input_shapes, seed)
        expected = reference_outputs(model_path, inputs)
    inputs = [np.array(x, order="C") for x in inputs]
    data = render("verify_data.c.mako", name=name, inputs=[
        {"symbol": f"verify_input{k}", "ctype": c_type(x.dtype), "size": max(1, x.size),
         "body": c_array_body(x if x.size else np.zeros(1, x.dtype))} for k, x in enumerate(inputs)])
    harness = render("harness.c.mako", name=name, NAME=name.upper(), mark=MARK,
                     inputs=[c_type(x.dtype) for x in inputs],
                     outputs=[c_type(np.asarray(y).dtype) for y in expected],
                     pools=list(pools), io_in_arena=io_in_arena)
    tmp = expected_npz + ".tmp.npz"
    np.savez(tmp, *[np.asarray(y) for y in expected], exact=np.array(exact_outputs(model)))
    write_texts({harness_c: harness, data_c: data})
    os.replace(tmp, expected_npz)


def parse_outputs(text):
    """Outputs the harness printed: ``ONNXCC OUTPUT k nbytes`` then hex lines."""
    outputs, current, status = {}, None, None
    for line in text.splitlines():
        if line.startswith(f"{MARK} OUTPUT "):
            current = int(line.split()[2])
            outputs[current] = []
        elif line.startswith(f"{MARK} STATUS "):
            status = int(line.split()[2])
            current = None
        elif current is not None and line.strip():
            outputs[current].append(bytes.fromhex(line.strip()))
    return status, {k: b"".join(v) for k, v in outputs.items()}


def compare(expected, got, fma, exact=()):
    """Per output (max abs error, max relative error, ok); relative to the output's largest
    expected magnitude, so values near zero do not inflate it. Outputs flagged in ``exact``
    (and integer outputs) must be equal."""
    rtol = RTOL * (FMA_FACTOR if fma else 1)
    results = []
    exact = list(exact) + [False] * (len(expected) - len(exact))
    for exp, raw, must_equal in zip(expected, got, exact):
        exp = np.asarray(exp)
        if len(raw) != exp.nbytes:
            results.append((float("inf"), float("inf"), False))
            continue
        out = np.frombuffer(raw, dtype=exp.dtype).reshape(exp.shape)
        if exp.dtype.kind != "f":
            err = float(np.max(np.abs(out.astype(np.int64) - exp.astype(np.int64)), initial=0))
            results.append((err, err, err == 0))
            continue
        if must_equal:
            err = float(np.max(np.abs(out.astype(np.float64) - exp.astype(np.float64)), initial=0))
            scale = max(float(np.max(np.abs(exp), initial=0.0)), 1e-30)
            results.append((err, err / scale, bool(np.array_equal(out, exp))))
            continue
        out64, exp64 = out.astype(np.float64), exp.astype(np.float64)
        same = (out64 == exp64) | (np.isnan(out64) & np.isnan(exp64))  # inf == inf, nan ~ nan
        with np.errstate(invalid="ignore"):
            diff = np.nan_to_num(np.where(same, 0.0, np.abs(out64 - exp64)), nan=np.inf)
        finite = np.abs(exp64[np.isfinite(exp64)])
        scale = max(float(np.max(finite, initial=0.0)), 1e-30)
        with np.errstate(invalid="ignore"):
            ok = bool(np.all(diff <= ATOL + rtol * np.abs(exp64))
                      or np.max(diff, initial=0) <= rtol * scale)
        special_ok = bool(np.all(same | np.isfinite(exp64)))  # an inf or NaN expected: exactly
        results.append((float(np.max(diff, initial=0.0)), float(np.max(diff, initial=0.0)) / scale,
                        ok and special_ok))
    return results


def run(target, elf, expected_npz, report_path, name, timeout=600):
    """Run the harness on the target, compare, write a JSON report; OnnxccError on mismatch."""
    try:
        proc = run_captured(target.run_command(elf), timeout)
    except subprocess.TimeoutExpired:
        raise OnnxccError(f"the harness did not finish in {timeout} s on {target.name}",
                          where=elf) from None
    status, got = parse_outputs(proc.stdout)
    with np.load(expected_npz) as f:
        expected = [f[f"arr_{k}"] for k in range(len(f.files) - 1)]
        exact = list(f["exact"])
    if status is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise OnnxccError(f"the harness crashed on {target.name} (exit {proc.returncode}): {tail[0]}",
                          where=elf)
    if status != 0:
        raise OnnxccError(f"{name}_run returned {status}", where=elf)
    results = compare(expected, [got.get(k, b"") for k in range(len(expected))], target.fma, exact)
    report = {"model": name, "target": target.name, "outputs": [
        {"index": k, "max_abs_error": a, "max_rel_error": r, "ok": ok, "exact": bool(x)}
        for k, ((a, r, ok), x) in enumerate(zip(results, exact))]}
    report["ok"] = all(o["ok"] for o in report["outputs"])
    abs_err = max((a for a, _, _ in results), default=0.0)
    rel_err = max((r for _, r, _ in results), default=0.0)
    exactly = f" ({sum(map(bool, exact))} compared exactly)" if any(exact) else ""
    line = (f"[verify] {name} on {target.name}: {len(results)} output(s){exactly}, "
            f"max abs error {abs_err:.3g}, max rel error {rel_err:.3g}")
    if not report["ok"]:
        bad = [str(o["index"]) for o in report["outputs"] if not o["ok"]]
        raise OnnxccError(f"{line}: MISMATCH in output(s) {', '.join(bad)}")
    tmp = report_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, report_path)
    return line


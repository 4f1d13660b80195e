"""verify: run the compiled model on the target and compare with onnxruntime.

The inputs (seeded random, or ``testdata=``: a test_data_set_N folder, a .npy or a .npz
file) and the expected outputs (the folder's output_K.pb, else onnxruntime's) are fixed
at build time; the inputs are linked into the harness as data, so a bare-metal target
needs no file system, and the harness prints its outputs as hex bytes on stdout.
It also guards every buffer it gives the model with canaries and reports any it finds
damaged. Outputs are compared element by element, within bounds decided from the graph
(``tolerance``); any damage, sanitizer report (``sanitize``) or mismatch fails in one line.
"""

import json
import math
import os
import subprocess
from dataclasses import dataclass

import numpy as np
import onnx

from onnxcc.codegen.render import render
from onnxcc.core import dataset
from onnxcc.core.cgen import c_array_body, c_type
from onnxcc.core.errors import OnnxccError
from onnxcc.core.files import write_texts
from onnxcc.core.onnxruntime_session import session
from onnxcc.importer.stage import import_model, read_model
from onnxcc.target import run_captured

from . import sanitize, tolerance
from .tolerance import ATOL, RTOL

MARK = "ONNXCC"


def random_inputs(model, input_shapes, seed):
    return dataset.random_sample(dataset.model_inputs(model, input_shapes), np.random.default_rng(seed))


def read_test_data(path, graph):
    """Inputs and expected outputs of ``testdata=path`` for the imported ``graph``: a
    test_data_set_N folder's .pb files, or a .npy or .npz file of inputs alone (or the
    first sample of a data set: core/dataset.py). No expected outputs (an empty list) when
    none are given: onnxruntime computes them. The inputs must have the element types and
    shapes of the graph's inputs."""
    specs = [dataset.Input(n, graph.info(n).dtype, tuple(graph.info(n).shape)) for n in graph.inputs]
    if dataset.is_test_case(path):
        inputs, outputs = dataset.read_folder(path, (graph.inputs, graph.outputs))
        return dataset.check_sample(path, inputs, specs), outputs
    return dataset.samples(path, specs, limit=1)[0][0], []


#: what a mismatch adds when each element onnxcc gives is one of onnxruntime's, with or
#: without its graph optimizations (matches_either)
UNOPTIMIZED_AGREES = "it matches onnxruntime with its graph optimizations off where they differ"


def reference_runs(model, samples, optimize=True, where=None):
    """onnxruntime's outputs of ``model`` (a ModelProto) for each of ``samples`` (one array
    per input)."""
    try:
        reference = session(model, optimize)
        names = [i.name for i in reference.get_inputs()]
        return [reference.run(None, dict(zip(names, x))) for x in samples]
    except Exception as e:  # onnxruntime raises its own exception types
        raise OnnxccError(f"onnxruntime cannot run the model: {str(e).splitlines()[0]}",
                          where=where) from None


def reference_outputs(model_path, inputs, optimize=True):
    return reference_runs(onnx.load(model_path), [inputs], optimize, where=model_path)[0]


def exact_outputs(model):
    """Per graph output: whether it must match exactly. Integer outputs do, and so do the
    float outputs of a DequantizeLinear: multiples of its scale, from integers that match."""
    producers = {o: n for n in model.graph.node for o in n.output}
    return [getattr(producers.get(o.name), "op_type", None) == "DequantizeLinear"
            for o in model.graph.output]


def harness_sources(name, samples, output_dtypes, pools, io_in_arena):
    """The text of harness.c (for the API that ``pools`` and ``io_in_arena`` give) and of
    the data file holding ``samples`` (each one array per input), which it runs in order."""
    inputs = [np.array(np.stack([s[k] for s in samples]), order="C")
              for k in range(len(samples[0]))]
    data = render("verify_data.c.mako", name=name, inputs=[
        {"symbol": f"verify_input{k}", "ctype": c_type(x.dtype), "size": max(1, x.size),
         "body": c_array_body(x if x.size else np.zeros(1, x.dtype))} for k, x in enumerate(inputs)])
    harness = render("harness.c.mako", name=name, NAME=name.upper(), mark=MARK,
                     inputs=[c_type(x.dtype) for x in inputs],
                     outputs=[c_type(dtype) for dtype in output_dtypes],
                     pools=list(pools), io_in_arena=io_in_arena, samples=len(samples))
    return harness, data


def make_case(model_path, name, harness_c, data_c, expected_npz, input_shapes, seed, testdata,
              pools=("arena",), io_in_arena=False):
    """Write the harness (for the API that ``pools`` and ``io_in_arena`` give), its input
    data and the expected outputs."""
    model = read_model(model_path)
    graph = import_model(model_path, input_shapes)
    if testdata:
        inputs, expected = read_test_data(testdata, graph)
    else:
        inputs, expected = random_inputs(model, input_shapes, seed), []
    from_files = bool(expected)
    if not from_files:
        expected = reference_outputs(model_path, inputs)
    # onnxruntime's optimizer may change a model's results (docs/trust.md): its plain
    # evaluation is kept beside, to say so if onnxcc's results match that one instead
    plain = [] if from_files else reference_outputs(model_path, inputs, optimize=False)
    if all(np.array_equal(a, b, equal_nan=np.asarray(a).dtype.kind == "f")
           for a, b in zip(plain, expected)):
        plain = []
    harness, data = harness_sources(name, [inputs], [np.asarray(y).dtype for y in expected],
                                    pools, io_in_arena)
    tmp = expected_npz + ".tmp.npz"
    np.savez(tmp, *[np.asarray(y) for y in expected], exact=np.array(exact_outputs(model)),
             **{f"plain_{k}": np.asarray(y) for k, y in enumerate(plain)},
             tolerance=np.array(tolerance.for_outputs(graph, from_files=from_files)))
    write_texts({harness_c: harness, data_c: data})
    os.replace(tmp, expected_npz)


def parse_outputs(text):
    """What the harness printed: its status, its outputs (``ONNXCC OUTPUT k nbytes`` then
    hex lines) and the damage it found (``ONNXCC OVERRUN <buffer> before|after <bytes>``,
    ``ONNXCC INPUT_WRITTEN k``), as sentences."""
    outputs, damage, current, status = {}, [], None, None
    for line in text.splitlines():
        words = line.split()
        if line.startswith(f"{MARK} OUTPUT "):
            current = int(words[2])
            outputs.setdefault(current, [])  # (one OUTPUT line per sample: concatenated)
        elif line.startswith(f"{MARK} STATUS "):
            status = int(words[2])
            current = None
        elif line.startswith(f"{MARK} OVERRUN "):
            buffer, side, reach = " ".join(words[2:-2]), words[-2], words[-1]
            damage.append(f"wrote {'before the start' if side == 'before' else 'past the end'} "
                          f"of the {buffer} (up to {reach} bytes {side} it)")
        elif line.startswith(f"{MARK} INPUT_WRITTEN "):
            damage.append(f"wrote into input {words[2]} (the C API takes the inputs const)")
        elif current is not None and line.strip():
            outputs[current].append(bytes.fromhex(line.strip()))
    return status, {k: b"".join(v) for k, v in outputs.items()}, damage


@dataclass
class Check:
    """One output's comparison: ``worst`` is the element furthest out of (or nearest to)
    its bound, as (index, got, want); ``used`` is its error over its bound (1: at it)."""
    ok: bool
    max_abs: float
    max_rel: float
    used: float
    worst: tuple = None
    problem: str = ""

    def describe(self, k):
        """The mismatch in one clause: which element, what it is and what it should be."""
        if self.problem:
            return f"output {k}: {self.problem}"
        index, got, want = self.worst
        return (f"output {k}[{', '.join(map(str, index))}] is {got!r}, expected {want!r} "
                f"({self.used:.3g} times its tolerance)")


def _errors(exp, out):
    """Per element: |got - want| (inf where only one is NaN) and whether they are the same
    (inf == inf, NaN ~ NaN)."""
    wide = np.float64 if exp.dtype.kind == "f" else np.int64
    got, want = out.astype(wide), exp.astype(wide)
    same = (got == want) | (np.isnan(got) & np.isnan(want)) if wide is np.float64 else got == want
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(got - want).astype(np.float64)
    return np.nan_to_num(np.where(same, 0.0, diff), nan=np.inf), same


def _used(exp, out, tol, exact):
    """Per element: (its error over its bound -- above 1 fails --, |got - want|, the
    relative error)."""
    diff, same = _errors(exp, out)
    rtol, atol = tol
    want = np.abs(exp.astype(np.float64))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        bound = np.where(np.isfinite(want), atol + rtol * want, 0.0)
        if exact or exp.dtype.kind != "f":
            bound = np.zeros_like(want)
        return np.where(same, 0.0, diff / bound), diff, diff / np.maximum(want, atol / rtol)


def compare_output(exp, raw, tol=(RTOL, ATOL), exact=False):
    """Compare one output element by element (module docstring of ``tolerance``); integer
    outputs and those flagged ``exact`` must be equal, and so must expected infs and NaNs."""
    exp = np.asarray(exp)
    if len(raw) != exp.nbytes:
        return Check(False, math.inf, math.inf, math.inf,
                     problem=f"{len(raw)} bytes printed, {exp.nbytes} expected")
    if not exp.size:
        return Check(True, 0.0, 0.0, 0.0)
    out = np.frombuffer(raw, dtype=exp.dtype).reshape(exp.shape)
    used, diff, rel = _used(exp, out, tol, exact)
    flat = int(np.argmax(used))
    index = np.unravel_index(flat, exp.shape) if exp.shape else ()
    return Check(bool(np.all(used <= 1.0)), float(np.max(diff)), float(np.max(rel)),
                 float(used.flat[flat]),
                 (tuple(int(i) for i in index), out.flat[flat].item(), exp.flat[flat].item()))


def compare(expected, got, tolerances=(), exact=()):
    """One :class:`Check` per output; ``tolerances`` (rtol, atol) and ``exact`` per output
    (missing ones: the defaults, not exact)."""
    n = len(expected)
    tolerances = list(tolerances) + [(RTOL, ATOL)] * (n - len(tolerances))
    exact = list(exact) + [False] * (n - len(exact))
    return [compare_output(e, g, t, x) for e, g, t, x in zip(expected, got, tolerances, exact)]


def matches_either(expected, plain, got, tolerances, exact):
    """Whether every element of every output matches onnxruntime's optimized evaluation
    (``expected``) or its plain one: where the two differ (an integer on a rounding
    boundary that the optimizer's kernels and the specification's float ops round apart),
    onnxcc gave one of onnxruntime's own values."""
    for exp, alt, raw, tol, x in zip(expected, plain, got, tolerances, exact):
        exp, alt = np.asarray(exp), np.asarray(alt)
        if len(raw) != exp.nbytes or alt.shape != exp.shape:
            return False
        out = np.frombuffer(raw, dtype=exp.dtype).reshape(exp.shape)
        if not np.all((_used(exp, out, tol, x)[0] <= 1.0) | (_used(alt, out, tol, x)[0] <= 1.0)):
            return False
    return len(plain) == len(expected)


def load_plain(expected_npz):
    """onnxruntime's outputs without graph optimizations, where they differ from the
    expected ones (else an empty list)."""
    with np.load(expected_npz) as f:
        return [f[f"plain_{k}"] for k in range(sum(1 for key in f.files if key.startswith("plain_")))]


def load_expected(expected_npz):
    """The expected outputs, which must match exactly, and their float tolerances."""
    with np.load(expected_npz) as f:
        n = sum(1 for key in f.files if key.startswith("arr_"))
        return ([f[f"arr_{k}"] for k in range(n)], [bool(x) for x in f["exact"]],
                [tuple(map(float, t)) for t in f["tolerance"]])


def run_harness(target, elf, timeout):
    """The harness's status and printed outputs; OnnxccError when it did not finish, a
    sanitizer reported, or the model wrote outside its buffers."""
    try:
        proc = run_captured(target.run_command(elf), timeout, env=sanitize.RUN_OPTIONS)
    except subprocess.TimeoutExpired:
        raise OnnxccError(f"the harness did not finish in {timeout} s on {target.name}",
                          where=elf) from None
    found = sanitize.report(proc.stderr)
    if found:
        raise OnnxccError(f"the sanitizers stopped the harness on {target.name}: {found}", where=elf,
                          hint="a bug in onnxcc's generated code or runtime: please report it")
    status, got, damage = parse_outputs(proc.stdout)
    if status is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        exit_status = target.program_status(proc.returncode)
        how = "no exit status" if exit_status is None else f"exit {exit_status}"
        raise OnnxccError(f"the harness crashed on {target.name} ({how}): {tail[0]}", where=elf)
    if damage:
        raise OnnxccError(f"the model {'; '.join(damage)} on {target.name}", where=elf,
                          hint="a bug in onnxcc's generated code: please report it")
    return status, got


def run(target, elf, expected_npz, report_path, name, timeout=600):
    """Run the harness on the target, compare, write a JSON report; OnnxccError on mismatch."""
    status, got = run_harness(target, elf, timeout)
    if status != 0:
        raise OnnxccError(f"{name}_run returned {status}", where=elf)
    expected, exact, tolerances = load_expected(expected_npz)
    checks = compare(expected, [got.get(k, b"") for k in range(len(expected))], tolerances, exact)
    report = {"model": name, "target": target.name, "outputs": [
        {"index": k, "max_abs_error": c.max_abs, "max_rel_error": c.max_rel, "ok": c.ok,
         "exact": x, "rtol": t[0], "atol": t[1], "tolerance_used": c.used,
         "worst": {"index": list(c.worst[0]), "got": c.worst[1], "expected": c.worst[2]}
         if c.worst else None}
        for k, (c, x, t) in enumerate(zip(checks, exact, tolerances))]}
    report["ok"] = all(c.ok for c in checks)
    exactly = f" ({sum(exact)} compared exactly)" if any(exact) else ""
    line = (f"[verify] {name} on {target.name}: {len(checks)} output(s){exactly}, "
            f"max abs error {max((c.max_abs for c in checks), default=0.0):.3g}, "
            f"max rel error {max((c.max_rel for c in checks), default=0.0):.3g}, "
            f"{max((c.used for c in checks), default=0.0):.2g} of tolerance")
    bad = [c.describe(k) for k, c in enumerate(checks) if not c.ok]
    if bad:
        plain = load_plain(expected_npz)
        if plain and matches_either(expected, plain, [got.get(k, b"") for k in range(len(expected))],
                                    tolerances, exact):
            bad.append(f"{UNOPTIMIZED_AGREES}: onnxruntime's optimizer changes this model's "
                       "results (docs/trust.md)")
        raise OnnxccError(f"{line}: MISMATCH in {'; '.join(bad)}", where=elf)
    tmp = report_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, report_path)
    return line

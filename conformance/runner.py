"""Verify cases through the SCons pipeline: batches of cases per SCons run, several runs
in parallel, every result saved as soon as its batch ends (so a run can resume).

Every SCons run pays its start-up (Python, SCons, onnx) before any work; declaring a
batch of cases in one SCons run pays it once per batch (``benchmarks/conformance_batching.py``
measures the time per case both ways).
"""

import json
import os
import queue
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "site_scons"))  # the compiler package, as SCons finds it
from onnxcc.build import scons_batch  # noqa: E402
from onnxcc.verbs.sanitize import build_folder  # noqa: E402  (the folder of a sanitized build)

SCONSTRUCT = os.path.join(REPO, "conformance", "SConstruct")
#: the harness must not hang: seconds per batch, plus this per case
BATCH_TIMEOUT, CASE_TIMEOUT = 120, 30


def _stage_rank(target):
    """Pipeline order of the step that wrote ``target``: the earliest failure is the cause
    (verify's own steps run beside the compiler's and fail too when the model is bad)."""
    if os.sep + "verify" + os.sep in target:
        return 4
    return {"imported.onnx": 0, "optimized.onnx": 1, "plan.json": 2}.get(os.path.basename(target), 3)


def _verifications(case, build_dir):
    """One verify per test data set: (C name, build folder, data set folder)."""
    out = []
    for k, data in enumerate(case.data_sets):
        name = case.name if k == 0 else f"{case.name}_set{k}"
        out.append((name, os.path.join(build_dir, case.suite), data))
    return out


def _case_dir(build_dir, target, case, name):
    return os.path.join(build_dir, case.suite, target, name)


def _result(case, build_dir, target, failures, diagnostics, timed_out):
    """pass (with the largest errors) or the first reason this case did not pass."""
    worst = {"max_abs_error": 0.0, "max_rel_error": 0.0}
    verifications = _verifications(case, build_dir)
    if not verifications:
        return {"status": "error", "message": "the case has no test_data_set_N folder"}
    for name, _, _ in verifications:
        folder = _case_dir(build_dir, target, case, name) + os.sep
        mine = [m for t, m in sorted(failures, key=lambda f: _stage_rank(f[0]))
                if (t + os.sep).startswith(folder)]
        errors = [d for f, d in diagnostics if f.startswith(folder)]
        report = os.path.join(folder, "verify", "report.json")
        if mine:
            compile_error = next((d for d in errors if d.startswith("error:")), None)
            return {"status": "error", "message": compile_error and f"C compiler {compile_error}"
                    or mine[0]}
        if not os.path.exists(report):
            return {"status": "error", "message": f"verify did not finish in {timed_out} s"
                    if timed_out else "verify did not run (no error reported)"}
        warning = next((d for d in errors if d.startswith("warning:")), None)
        if warning:
            return {"status": "error", "message": f"C compiler {warning}"}
        with open(report) as f:
            for output in json.load(f)["outputs"]:
                for key in worst:
                    worst[key] = max(worst[key], output[key])
    return dict(status="pass", **worst)


def run_batch(cases, target, build_dir, sconsign, jobs=1, sanitize=False, tactic=""):
    """{case key: result} of one SCons run over ``cases``; ``sconsign``: SCons' signature
    database, which no other SCons run may use at the same time; ``sanitize``: built with
    ASan and UBSan (x86_64); ``tactic``: forced tactics (the tactic= option)."""
    batch = {"target": target, "sconsign": sconsign, "cases": [], "sanitize": sanitize}
    folder = build_folder(target, sanitize)  # the folder OnnxModel builds the cases in
    for case in cases:
        for name, case_build, data in _verifications(case, build_dir):
            report = os.path.join(_case_dir(build_dir, folder, case, name), "verify", "report.json")
            if os.path.exists(report):
                os.remove(report)  # a stale pass must not count
            batch["cases"].append({"name": name, "model": case.model, "build_dir": case_build,
                                   "testdata": data, "input_shape": case.input_shape,
                                   "tactic": tactic})
    timeout = BATCH_TIMEOUT + CASE_TIMEOUT * len(cases)
    text, killed = scons_batch.run(SCONSTRUCT, batch, build_dir, jobs, timeout)
    timed_out = timeout if killed else None
    failures, diagnostics = [], []
    for line in text.splitlines():
        m = scons_batch.FAILURE.match(line)
        if m:
            failures.append((os.path.abspath(m["target"]), m["message"]))
        m = scons_batch.DIAGNOSTIC.match(line)
        if m:
            diagnostics.append((os.path.abspath(m["file"]), f"{m['kind']}: {m['text']}"))
    return {case.key: _result(case, build_dir, folder, failures, diagnostics, timed_out)
            for case in cases}


def run(cases, target, build_dir, results, workers, batch_size, save, progress, sanitize=False):
    """Verify every case not in ``results`` yet; ``save()`` after each batch."""
    todo = [c for c in cases if c.key not in results]
    batches = [todo[i:i + batch_size] for i in range(0, len(todo), batch_size)]
    start, done = time.monotonic(), 0
    os.makedirs(build_dir, exist_ok=True)
    slots = queue.Queue()
    for k in range(workers):
        slots.put(os.path.join(build_dir, f".sconsign{k}"))

    def run_in_slot(batch):
        slot = slots.get()
        try:
            return run_batch(batch, target, build_dir, slot, sanitize=sanitize)
        finally:
            slots.put(slot)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_in_slot, b) for b in batches]
        for future in as_completed(futures):
            results.update(future.result())
            done += len(future.result())
            save()
            progress(done, len(todo), time.monotonic() - start)
    return results

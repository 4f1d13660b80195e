"""Differential fuzzer: random valid graphs, compiled under many configurations, each run
on the target and compared with onnxruntime.

    python -m fuzz.graphs [--target T] [--graphs N] [--seed S] [--batch B] [--jobs J]

Hypothesis draws batches of graph specs (fuzz/spec.py: an anchor -- Conv, Gemm, MatMul,
a pooling or broadcasting binary op -- and an elementwise chain of any length, over
shapes with tails); every graph is built through the SCons pipeline (fuzz/SConstruct)
in each configuration of ``configurations``: the cost model's tactics (opt=speed), the
reference kernels (opt=size) and tactics forced at random with fusion on or off; verify
runs each on the target (natively or in qemu) and compares it with onnxruntime element by
element. A batch is one SCons run, so the start-up is paid once per batch.

On a mismatch Hypothesis shrinks the batch to one minimal graph, which is written to
tests/fuzz_regressions/ as a JSON spec; tests/test_fuzz_graphs.py replays every file
there, and runs a fixed seeded sample on x86_64, armv7 and riscv32 in CI.
"""

import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from .spec import build_model, spec_name, specs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCONSTRUCT = os.path.join(REPO, "fuzz", "SConstruct")
REGRESSIONS = os.path.join(REPO, "tests", "fuzz_regressions")
#: SCons' one-line report of a failed build step: "scons: *** [target] message"
FAILURE = re.compile(r"^scons: \*\*\* \[(?P<target>[^\]]+)\] (?P<message>.*)$")
#: a C compiler diagnostic (any warning fails: the generated C must compile clean)
DIAGNOSTIC = re.compile(r"^(?P<file>[^\s:]+\.[ch]):\d+:\d+: (?P<kind>error|warning): (?P<text>.*)$")
#: a forced op-type tactic that no node of the graph can run is a refusal, not a failure
INAPPLICABLE = "chose nothing: no node of that name or op type it can run"
BATCH_TIMEOUT, CASE_TIMEOUT = 120, 60


def configurations(spec, target):
    """(name, opt, fuse, tactic) of every build of ``spec``: the cost model's choice, the
    reference kernels, and the spec's forced tactics with its fusion setting."""
    forced = ",".join(f"{op}:{t}" for op, t in sorted(spec.get("tactic", {}).items()))
    configs = [("speed", "speed", True, ""), ("size", "size", True, "")]
    if forced or not spec.get("fuse", True):
        configs.append(("forced", "speed", spec.get("fuse", True), forced))
    if target not in ("x86_64", "x86_64-avx512"):  # emulated: the fast paths only
        configs = [c for c in configs if c[0] != "size"]
    return configs


def check(batch, target, workdir, jobs=1, sanitize=False):
    """Build and verify every spec of ``batch`` in every configuration, in one SCons run.
    Returns one result per (spec, configuration): {name, config, status, message}, status
    pass, fail, refused (a forced tactic no node can run) or discarded (onnxruntime's own
    output is not finite)."""
    models = os.path.join(workdir, "models")
    os.makedirs(models, exist_ok=True)
    cases, expected = [], []
    for spec in batch:
        name = spec_name(spec)
        path = os.path.join(models, f"{name}.onnx")
        onnx.save(build_model(spec), path)
        for config, opt, fuse, tactic in configurations(spec, target):
            build_dir = os.path.join(workdir, config)
            out = os.path.join(build_dir, target, name)
            for stale in ("verify/report.json", "verify/expected.npz"):
                if os.path.exists(os.path.join(out, stale)):
                    os.remove(os.path.join(out, stale))
            cases.append({"name": name, "model": path, "build_dir": build_dir, "opt": opt,
                          "fuse": fuse, "tactic": tactic, "seed": spec["seed"] % 1000})
            expected.append((name, config, out))
    sconsign = os.path.join(workdir, ".sconsign")
    with tempfile.NamedTemporaryFile("w", suffix=".json", dir=workdir, delete=False) as f:
        json.dump({"target": target, "sconsign": sconsign, "cases": cases,
                   "sanitize": sanitize}, f)
    command = [sys.executable, "-m", "SCons", "-Q", "-k", f"-j{jobs}", "-f", SCONSTRUCT,
               f"--site-dir={os.path.join(REPO, 'site_scons')}", f"batch={f.name}"]
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    timeout = BATCH_TIMEOUT + CASE_TIMEOUT * len(batch)
    timed_out = False
    try:
        text, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the SCons run and the programs it started
        text, _ = proc.communicate()
        timed_out = True
    finally:
        os.remove(f.name)
    failures = collections.defaultdict(list)
    for line in text.splitlines():
        m = FAILURE.match(line) or DIAGNOSTIC.match(line)
        if m:
            where = os.path.abspath(m["target"] if "target" in m.groupdict() else m["file"])
            message = m["message"] if "message" in m.groupdict() else f"C compiler {m['kind']}: {m['text']}"
            failures[where].append(message)
    results = []
    for name, config, out in expected:
        mine = [msg for where, msgs in failures.items() for msg in msgs
                if (where + os.sep).startswith(out + os.sep)]
        report = os.path.join(out, "verify", "report.json")
        if timed_out and not os.path.exists(report):
            mine.append(f"the batch did not finish in {timeout} s")
        if mine and all(INAPPLICABLE in msg for msg in mine):
            status, message = "refused", mine[0]
        elif _reference_not_finite(os.path.join(out, "verify", "expected.npz")):
            status, message = "discarded", "onnxruntime's output is not finite"
        elif mine:
            status, message = "fail", mine[0]
        elif not os.path.exists(report):
            status, message = "fail", "verify did not run (no error reported)"
        else:
            status, message = "pass", ""
        results.append({"name": name, "config": config, "status": status, "message": message})
    return results


def _reference_not_finite(npz):
    if not os.path.exists(npz):
        return False
    with np.load(npz) as f:
        return any(not np.all(np.isfinite(f[k])) for k in f.files
                   if k != "exact" and f[k].dtype.kind == "f")


def save_regression(spec, result, target, folder=REGRESSIONS):
    """Write a failing spec as a regression case that tests/test_fuzz_graphs.py replays."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{spec_name(spec)}.json")
    with open(path, "w") as f:
        json.dump({"target": target, "config": result["config"], "found": result["message"],
                   "spec": spec}, f, indent=1, sort_keys=True)
        f.write("\n")
    return path


def campaign(target, graphs, seed, batch, jobs, workdir, progress=print, sanitize=False,
             regressions=REGRESSIONS, shrink=True):
    """Draw batches until ``graphs`` graphs were checked (or one failed, shrunk and saved).
    Returns (counts per status, graphs checked, the failing result or None, regression path)."""
    counts, seen = collections.Counter(), set()
    last_failure = {}
    start = time.monotonic()

    @settings(max_examples=10**9, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), print_blob=False, report_multiple_bugs=False,
              phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate])
    @hypothesis_seed(seed)
    @given(st.lists(specs(), min_size=1, max_size=batch))
    def prop(batch_specs):
        if len(seen) >= graphs and not last_failure:
            return  # done: every later example passes at once
        results = check(batch_specs, target, workdir, jobs, sanitize)
        shrinking = bool(last_failure)  # shrunk variants do not count as graphs
        fresh = [] if shrinking else [s for s in batch_specs if spec_name(s) not in seen]
        seen.update(spec_name(s) for s in fresh)
        fresh_names = {spec_name(s) for s in fresh}
        counts.update(r["status"] for r in results if r["name"] in fresh_names)
        bad = [r for r in results if r["status"] == "fail"]
        if fresh:
            progress(f"[fuzz] {target}: {len(seen)} graphs, {counts['pass']} builds passed, "
                     f"{counts['fail']} failed, {counts['refused']} refused, "
                     f"{counts['discarded']} discarded ({time.monotonic() - start:.0f} s)")
        if bad:
            by_name = {spec_name(s): s for s in batch_specs}
            last_failure["result"] = bad[0]
            last_failure["spec"] = by_name[bad[0]["name"]]
            raise AssertionError(f"{bad[0]['name']} [{bad[0]['config']}]: {bad[0]['message']}")

    try:
        prop()
    except AssertionError:
        spec, result = last_failure["spec"], last_failure["result"]
        path = save_regression(spec, result, target, regressions) if regressions else None
        return counts, len(seen), result, path
    return counts, len(seen), None, None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fuzz.graphs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="x86_64")
    parser.add_argument("--graphs", type=int, default=200, help="graphs to check (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=16, help="most graphs per SCons run")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--workdir", default=os.path.join(REPO, "build", "fuzz"))
    parser.add_argument("--sanitize", action="store_true",
                        help="x86_64: build with AddressSanitizer and UBSan")
    parser.add_argument("--no-shrink", action="store_true", help="report a failure unshrunk")
    parser.add_argument("--summary", help="append the campaign's result to this file")
    args = parser.parse_args(argv)
    workdir = os.path.join(os.path.abspath(args.workdir), args.target)
    if os.path.isdir(workdir):
        shutil.rmtree(workdir)  # models of an earlier campaign must not count
    os.makedirs(workdir)
    started = time.monotonic()
    counts, checked, failure, path = campaign(args.target, args.graphs, args.seed, args.batch,
                                              args.jobs, workdir, sanitize=args.sanitize,
                                              shrink=not args.no_shrink)
    minutes = (time.monotonic() - started) / 60
    line = (f"{args.target}, seed {args.seed}: {checked} graphs, {sum(counts.values())} builds: "
            f"{counts['pass']} passed, {counts['fail']} failed, {counts['refused']} refused "
            f"(a forced tactic no node can run), {counts['discarded']} discarded "
            f"(onnxruntime not finite); {minutes:.0f} min")
    print(f"[fuzz] {line}")
    if failure:
        print(f"[fuzz] FAILURE {failure['name']} [{failure['config']}]: {failure['message']}")
        if path:
            print(f"[fuzz] minimal reproducer written to {os.path.relpath(path, REPO)}")
    if args.summary:
        with open(args.summary, "a") as f:
            f.write(f"- {line}{' -- FAILED: ' + failure['message'] if failure else ''}\n")
    return 1 if failure else 0


if __name__ == "__main__":
    sys.exit(main())

"""python -m conformance: ONNX's backend tests through onnxcc, with a report.

    python -m conformance                           every suite on x86_64
    python -m conformance --target armv7 --cases 'node/test_(relu|add)$'
    python -m conformance --summary docs/conformance.md

Results are saved after every batch under <work>/<target>/results.json; a run resumes
where the last one stopped (--rerun starts over). Exit status 1 when a case crashed or
failed without a tracked defect.
"""

import argparse
import json
import os
import re
import sys

from . import cases as case_suites
from . import report, runner


def _parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m conformance", description=__doc__.split("\n")[0])
    p.add_argument("--target", default="x86_64", help="the onnxcc target (default x86_64)")
    p.add_argument("--suite", action="append", choices=case_suites.SUITES,
                   help="a suite to run (repeatable; default: all)")
    p.add_argument("--cases", metavar="REGEX", help="only cases whose 'suite/name' matches")
    p.add_argument("--jobs", type=int, default=os.cpu_count(), help="SCons runs in parallel")
    p.add_argument("--batch", type=int, default=24, help="cases per SCons run")
    p.add_argument("--work", default=os.path.join(runner.REPO, "build", "conformance"),
                   help="where cases, builds and results go")
    p.add_argument("--rerun", action="store_true", help="run again the cases that have results")
    p.add_argument("--sanitize", action="store_true",
                   help="build with AddressSanitizer + UBSan (x86_64); a report fails the case")
    p.add_argument("--summary", metavar="FILE", help="also write the summary here (docs/conformance.md)")
    return p.parse_args(argv)


def main(argv=None):
    args = _parse_args(argv)
    suites = args.suite or list(case_suites.SUITES)
    pattern = re.compile(args.cases) if args.cases else None
    work = os.path.abspath(args.work)
    out = os.path.join(work, runner.build_folder(args.target, args.sanitize))
    os.makedirs(out, exist_ok=True)
    print(f"[conformance] preparing cases of {', '.join(suites)} under {work}", flush=True)
    cases = case_suites.prepare(work, suites, pattern.search if pattern else None)
    results_path = os.path.join(out, "results.json")
    results = {}
    if os.path.exists(results_path):
        with open(results_path) as f:
            results = json.load(f)
    if args.rerun:
        for case in cases:
            results.pop(case.key, None)

    def save():
        tmp = results_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(results, f, indent=0, sort_keys=True)
        os.replace(tmp, results_path)

    def progress(done, total, seconds):
        passed = sum(1 for c in cases if results.get(c.key, {}).get("status") == "pass")
        eta = seconds / done * (total - done)
        print(f"[conformance] {done}/{total} run, {passed} of {len(cases)} pass, "
              f"{seconds:.0f} s, eta {eta:.0f} s", flush=True)

    todo = sum(1 for c in cases if c.key not in results)
    print(f"[conformance] {len(cases)} cases, {todo} to run on {args.target} "
          f"({args.jobs} SCons runs of {args.batch} cases in parallel)", flush=True)
    runner.run(cases, args.target, os.path.join(out, "build"), results, args.jobs, args.batch,
               save, progress, sanitize=args.sanitize)

    defects = report.load_known_defects()
    per_suite, rows = {}, []
    for suite in suites:
        per_op, suite_rows = report.tally([c for c in cases if c.suite == suite], results, defects)
        per_suite[suite] = per_op
        rows += suite_rows
    title = f"onnxcc conformance on {args.target}"
    intro = [f"ONNX's backend test suites (onnx {case_suites.onnx.__version__}) compiled and "
             f"verified with `python -m conformance --target {args.target}`.", "",
             *report.INTRO]
    summary = report.summary_markdown(title, suites, per_suite, rows, intro)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(report.full_markdown(title + ": every case", rows))
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(summary)
    if args.summary:
        with open(args.summary, "w") as f:
            f.write(summary)
    bad = [(key, status, reason) for _, key, status, reason, _ in rows
           if status == "crash" or reason.startswith("UNTRACKED")]
    print(summary.splitlines()[-1])
    print(f"[conformance] report: {os.path.join(out, 'report.md')}")
    for key, status, reason in bad:
        print(f"[conformance] {status}: {key}: {reason}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

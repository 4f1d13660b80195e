"""Differential fuzzer: random valid graphs, compiled under many configurations, each run
on the target and compared with onnxruntime.

    python -m fuzz.graphs [--target T] [--graphs N] [--seed S] [--batch B] [--jobs J]

Hypothesis draws batches of graph specs (fuzz/spec.py: an anchor -- Conv, Gemm, MatMul,
a pooling, RNN/GRU/LSTM or broadcasting binary op -- and an elementwise chain of any
length, over shapes with tails, wide rows and, on native targets, big images and long
sequences); every graph is built through the SCons pipeline (fuzz/SConstruct)
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
import random
import re
import shutil
import sys
import time

import numpy as np
import onnx
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from . import networks as network_specs
from .networks import anchors_of
from .spec import build_model, spec_name, specs
from .verdict import (as_accurate_as_onnxruntime, closer_to_the_specification, onnxruntime_overflows,
                      reproduces, within_quantization_jitter)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from onnxcc.build import scons_batch
from onnxcc.verbs import verify  # noqa: E402
from onnxcc.core.ctext import model_c_name  # noqa: E402
from onnxcc.plan.algorithms import ALGORITHMS  # noqa: E402
from onnxcc.plan.bands import NO_BLOCK  # noqa: E402
from onnxcc.plan.patches import NO_STAGE  # noqa: E402
from onnxcc.verbs.sanitize import build_folder  # noqa: E402  (the folder of a sanitized build)

SCONSTRUCT = os.path.join(REPO, "fuzz", "SConstruct")
REGRESSIONS = os.path.join(REPO, "tests", "fuzz_regressions")
#: a forced op-type tactic that no node of the graph can run is a refusal, not a failure
INAPPLICABLE = "chose nothing: no node of that name or op type it can run"
#: onnxruntime itself cannot run the model (its quantizer writes some it cannot run):
#: there is nothing to compare with
REFERENCE_FAILED = "onnxruntime cannot run the model"
BATCH_TIMEOUT, CASE_TIMEOUT = 120, 60
#: a mismatch the harness does not give again when it is run again: a failure all the same
NOT_REPRODUCED = "nondeterministic: run again, the harness gave other outputs"
#: a case with neither a report nor an error line of its own (built once more)
UNREPORTED = "verify did not run (no error reported)"
#: the targets that run on the build machine: every configuration, and "big" graphs
NATIVE = ("x86_64", "x86_64-avx512", "x86_64-zen4")
#: how long Hypothesis may shrink one failure; then the smallest found so far is saved
SHRINK_SECONDS = 600


#: the memory and code options every build draws (build_options); a first pool this
#: small ("fast") spills most buffers to the second, as a TCM does
PLANNERS = sorted(ALGORITHMS)
FIRST_POOL_BYTES = (64, 512, 2048)


#: a build's outcomes (campaign counts them beside the configurations run in patches, bands)
STATUSES = ("pass", "fail", "refused", "discarded", "ill-conditioned", "onnxruntime-disagrees")
OPTION_KEYS = ("io", "schedule", "planner", "pools", "weights_format", "name")


def build_options(spec, config):
    """The options that change generated code or memory layout, drawn for one build
    (configuration ``config``) of ``spec``: io, schedule, planner, pools, weights_format
    and the C name. They come from the spec's seed, so a saved spec replays them, or from
    ``spec["options"][config]`` where a regression file pinned them."""
    pinned = spec.get("options", {}).get(config)
    if pinned is not None:
        return dict(pinned)
    rng = random.Random(f"{spec['seed']}:{config}")
    name = spec_name(spec)
    return {"io": rng.choice(["caller", "arena"]),
            "schedule": rng.choice(["memory", "graph"]),
            "planner": rng.choice(PLANNERS),
            "pools": rng.choice(["", "", f"fast:{rng.choice(FIRST_POOL_BYTES)},slow"]),
            "weights_format": rng.choice(["bin", "bin", "c"]),
            # a model file's odd names: punctuation, a leading digit, one cut to a digest
            "name": rng.choice([name, name, f"{name}-v2.1", f"9{name}", name * 14])}


def _image_first(spec):
    """Whether the graph starts with a 2-D convolution of one image: a stage to run in
    patches and row bands."""
    if "network" in spec:
        return spec["x"][0] == 1 and spec["network"][0]["block"] in ("conv", "inverted", "fire", "residual")
    x = spec["anchor"].get("x") or []
    return spec["anchor"]["op"] == "Conv" and len(x) == 4 and x[0] == 1


def configurations(spec, target):
    """The builds of ``spec``, each {config, opt, fuse, tactic, patches, bands} and its
    drawn ``build_options``: the cost model's choice, the reference kernels (opt=size,
    what microcontroller users pick first), the spec's forced tactics with its fusion
    setting, and where the graph starts with a 2-D convolution of one image the forced
    tactics run patch by patch (2x1 or 2x2 patches: plan/patches.py) and in row bands
    from each convolution on (2 or 3: plan/bands.py)."""
    forced = ",".join(f"{op}:{t}" for op, t in sorted(spec.get("tactic", {}).items()))
    fuse = spec.get("fuse", True)
    configs = [("speed", "speed", True, "", "auto", "auto"), ("size", "size", True, "", "auto", "auto")]
    if forced or not fuse:
        configs.append(("forced", "speed", fuse, forced, "auto", "auto"))
    if _image_first(spec):
        configs.append(("patches", "speed", fuse, forced, ("2x1", "2")[spec["seed"] % 2], "auto"))
        configs.append(("bands", "speed", fuse, forced, "off", ("2", "3")[spec["seed"] % 2]))
    keys = ("config", "opt", "fuse", "tactic", "patches", "bands")
    return [dict(zip(keys, c), **build_options(spec, c[0])) for c in configs]


def check(batch, target, workdir, jobs=1, sanitize=False, keep=False, builds=None):
    """Build and verify every spec of ``batch`` in every configuration, in one SCons run.
    Returns one result per (spec, configuration): {name, config, status, message}, status
    pass, fail, refused (no forced tactic can run any node) or discarded (onnxruntime
    cannot run the model or its output is not finite). A forced tactic that no node can run
    is dropped and the build retried with the others, so the rest are still crossed. The
    build folders of passing cases are removed unless ``keep``. ``builds(spec, target)``:
    the builds of a spec (default ``configurations``)."""
    models = os.path.join(workdir, "models")
    os.makedirs(models, exist_ok=True)
    cases = []
    batch = list({spec_name(s): s for s in batch}.values())  # each distinct graph once
    for spec in batch:
        name = spec_name(spec)
        path = os.path.join(models, f"{name}.onnx")
        onnx.save(build_model(spec), path)
        for options in (builds or configurations)(spec, target):
            build_dir = os.path.join(workdir, options["config"])
            out = os.path.join(build_dir, build_folder(target, sanitize), model_c_name(options["name"]))
            cases.append(dict(options, spec=name, model=path, build_dir=build_dir, out=out,
                              seed=spec["seed"] % 1000))
    results, pending = {}, cases
    # a forced build is retried once per tactic it refuses (each refusal names one), and a
    # case with no report is built once more
    for attempt in range(2 + max((len(c["tactic"].split(",")) for c in cases), default=0)):
        outcome = _build(pending, target, workdir, jobs, sanitize)
        retry = []
        for case, result in zip(pending, outcome):
            results[case["out"]] = result
            m = re.search(r"tactic=([^:\s]+):(\S+) " + re.escape(INAPPLICABLE), result["message"])
            if result["status"] == "refused" and m:
                left = [t for t in case["tactic"].split(",") if t and t != f"{m[1]}:{m[2]}"]
                if left:
                    retry.append(dict(case, tactic=",".join(left)))
            elif result["message"] == UNREPORTED and attempt == 0:
                retry.append(case)  # its one-line error got mixed with a parallel job's output
        if not retry:
            break
        pending = retry
    specs_by_name = {spec_name(spec): spec for spec in batch}
    for case in cases:
        result = results[case["out"]]
        if result["status"] != "fail" or "MISMATCH" not in result["message"]:
            continue
        if not reproduces(case, target):
            result.update(message=f"{NOT_REPRODUCED}: {result['message']}")
        elif verify.UNOPTIMIZED_AGREES in result["message"]:
            # onnxruntime disagrees with itself: its optimizer rewrote the graph into
            # something the specification does not compute (docs/trust.md); counted apart
            result.update(status="onnxruntime-disagrees")
        elif onnxruntime_overflows(case, target):
            result.update(status="discarded", message=f"onnxruntime overflows inside the graph; {result['message']}")
        elif ((within_quantization_jitter(case, target) or closer_to_the_specification(case, target))
              if specs_by_name[case["spec"]].get("quant") else as_accurate_as_onnxruntime(case, target)):
            result.update(status="ill-conditioned")
    for case in cases:  # a long campaign keeps only what failed (a build is a few MB)
        if not keep and results[case["out"]]["status"] in ("pass", "refused"):
            shutil.rmtree(case["out"], ignore_errors=True)
    return [results[case["out"]] for case in cases]


def _build(cases, target, workdir, jobs, sanitize):
    """One SCons run over ``cases``; a result per case."""
    for case in cases:
        # built afresh: a replayed case (Hypothesis re-runs a failure) must show its
        # compiler warnings again, and no stale report may count as a pass
        shutil.rmtree(case["out"], ignore_errors=True)
    batch = {"target": target, "sconsign": os.path.join(workdir, ".sconsign"), "cases": cases,
             "sanitize": sanitize}
    timeout = BATCH_TIMEOUT + CASE_TIMEOUT * len({c["spec"] for c in cases})
    text, timed_out = scons_batch.run(SCONSTRUCT, batch, workdir, jobs, timeout)
    failures = collections.defaultdict(list)
    for line in text.splitlines():
        m = scons_batch.FAILURE.match(line) or scons_batch.DIAGNOSTIC.match(line)
        if m:
            where = os.path.abspath(m["target"] if "target" in m.groupdict() else m["file"])
            message = m["message"] if "message" in m.groupdict() else f"C compiler {m['kind']}: {m['text']}"
            failures[where].append(message)
    results = []
    for case in cases:
        out = case["out"]
        mine = [msg for where, msgs in failures.items() for msg in msgs
                if (where + os.sep).startswith(out + os.sep) or where == case["model"]]
        report = os.path.join(out, "verify", "report.json")
        if timed_out and not os.path.exists(report):
            mine.append(f"the batch did not finish in {timeout} s")
        if mine and all(INAPPLICABLE in msg or NO_STAGE in msg or NO_BLOCK in msg for msg in mine):
            status, message = "refused", mine[0]
        elif any(REFERENCE_FAILED in msg for msg in mine):
            status, message = "discarded", next(msg for msg in mine if REFERENCE_FAILED in msg)
        elif _reference_not_finite(os.path.join(out, "verify", "expected.npz")):
            status, message = "discarded", "onnxruntime's output is not finite"
        elif mine:
            status, message = "fail", mine[0]
        elif not os.path.exists(report):
            status, message = "fail", UNREPORTED
        else:
            status, message = "pass", ""
        results.append({"name": case["spec"], "config": case["config"], "status": status,
                        "message": message})
    return results


def _reference_not_finite(npz):
    if not os.path.exists(npz):
        return False
    with np.load(npz) as f:
        return any(not np.all(np.isfinite(f[k])) for k in f.files
                   if k != "exact" and f[k].dtype.kind == "f")


def save_regression(spec, result, target, folder=REGRESSIONS):
    """Write a failing spec as a regression case that tests/test_fuzz_graphs.py replays,
    every build's drawn options pinned (a later change of the draws replays them still)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{spec_name(spec)}.json")
    spec = dict(spec, options={c["config"]: {k: c[k] for k in OPTION_KEYS}
                               for c in configurations(spec, target)})
    with open(path, "w") as f:
        json.dump({"target": target, "config": result["config"], "found": result["message"],
                   "spec": spec}, f, indent=1, sort_keys=True)
        f.write("\n")
    return path


def signature(result, spec):
    """What kind of failure ``result`` is, so that one bug found many times is shrunk and
    saved once: an internal error by its stage and exception type; a mismatch by the
    configuration and the graph's anchor ops; anything else by the words of its message
    (numbers, names and paths left out)."""
    message = result["message"]
    m = re.search(r"internal error in onnxcc's (\w+) stage: (\w+)", message)
    if m:
        return f"internal:{m[1]}:{m[2]}"
    if "MISMATCH" in message:
        anchors = sorted(set(anchors_of(spec)) if "network" in spec
                         else {str(s["anchor"]["op"]) for s in [spec] + spec.get("then", [])})
        return f"mismatch:{result['config']}:{'+'.join(anchors)}" + (":int8" if spec.get("quant") else "")
    words = re.sub(r"'[^']*'|\S*\d\S*|/\S+", "", message.split(": ", 1)[-1].lower())
    return f"error:{' '.join(words.split())[:60]}"


def campaign(target, graphs, seed, batch, jobs, workdir, progress=print, sanitize=False,
             regressions=REGRESSIONS, shrink=True, stop_on_failure=False, int8=False, images=False,
             networks=False):
    """Draw batches until ``graphs`` graphs were checked. Each new kind of failure
    (``signature``) is shrunk by Hypothesis to a minimal graph that fails the same way and
    saved as a regression; known kinds are counted and the campaign goes on (or stops at
    the first, with ``stop_on_failure``); ``int8``: every graph quantized; ``images``: every
    graph starts with a 2-D convolution of one image (its patched builds run). Returns (counts per status, graphs checked,
    [(failing result, regression path or None)] one per kind)."""
    counts, seen, found = collections.Counter(), set(), {}
    start = time.monotonic()
    round_seed = seed
    while len(seen) < graphs:
        before = len(seen)
        new = _one_round(target, graphs, round_seed, batch, jobs, workdir, progress, sanitize,
                         shrink, counts, seen, set(found), start, int8, images, networks)
        round_seed += 1
        if new is None:
            if len(seen) == before:
                break  # a round that draws no new graph: nothing more to find
            continue
        kind, spec, result = new
        path = save_regression(spec, result, target, regressions) if regressions else None
        found[kind] = (result, path)
        progress(f"[fuzz] new failure {kind}: {result['name']} [{result['config']}]: "
                 f"{result['message']}" + (f" -> {os.path.relpath(path, REPO)}" if path else ""))
        if stop_on_failure:
            break
    return counts, len(seen), list(found.values())


def drawing(target, int8=False, images=False, networks=False):
    """The strategy of one graph spec of a campaign."""
    if networks:
        return network_specs.networks(int8=int8)
    return specs(int8=int8, images=images, big=target in NATIVE)


def _round(target, graphs, seed, batch, int8=False, images=False, shrink=False, networks=False):
    """The Hypothesis decorators of one round of a campaign (its test gets lists of
    ``batch`` specs): enough batches for ``graphs`` graphs, with a margin -- Hypothesis
    starts from the simplest batch and repeats some graphs (the campaign goes on with
    another round, from the next seed)."""
    def wrap(test):
        return settings(max_examples=2 * -(-graphs // batch) + 3, deadline=None, database=None,
                        derandomize=False, suppress_health_check=list(HealthCheck), print_blob=False,
                        report_multiple_bugs=False,
                        phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate])(
            hypothesis_seed(seed)(given(st.lists(drawing(target, int8, images, networks),
                                                 min_size=batch, max_size=batch))(test)))
    return wrap


def drawn(target, graphs, seed, batch=16, int8=False, images=False, networks=False):
    """The first ``graphs`` graphs (specs, in order) a campaign of these arguments checks
    while none fails, without building them: its rounds, their batches, each graph once."""
    seen = {}
    while len(seen) < graphs:
        before = len(seen)

        @_round(target, graphs - len(seen), seed, batch, int8, images, networks=networks)
        def collect(batch_specs):
            for spec in batch_specs:
                if len(seen) < graphs:
                    seen.setdefault(spec_name(spec), spec)
        collect()
        seed += 1
        if len(seen) == before:
            break  # a round that draws no new graph: nothing more to draw
    return list(seen.values())


def _one_round(target, graphs, seed, batch, jobs, workdir, progress, sanitize, shrink,
               counts, seen, known, start, int8=False, images=False, networks=False):
    """One Hypothesis run from ``seed``: generates until ``seen`` holds ``graphs`` graphs or
    a failure of a kind not in ``known`` appears; then (``shrink``) shrinks that failure,
    raising only for the same kind. Returns (kind, minimal spec, its result) or None."""
    pinned, cache = {}, {}

    def results_of(batch_specs):
        """Every build of the batch's graphs; a graph is built once per round (shrinking
        changes one graph at a time: the others' results are reused)."""
        todo = [s for s in batch_specs if spec_name(s) not in cache]
        for r in check(todo, target, workdir, jobs, sanitize) if todo else []:
            cache.setdefault(r["name"], []).append(r)
        names = dict.fromkeys(spec_name(s) for s in batch_specs)
        return [r for name in names for r in cache[name]], len(todo)

    @_round(target, graphs - len(seen), seed, batch, int8, images, shrink, networks)
    def prop(batch_specs):
        if len(seen) >= graphs and not pinned:
            return  # done: the rest of this round's examples pass at once
        by_name = {spec_name(s): s for s in batch_specs}
        if pinned and time.monotonic() - pinned["since"] > SHRINK_SECONDS:
            # out of shrinking time: only the smallest failure found so far fails
            if pinned["result"]["name"] in by_name:
                raise AssertionError(pinned["result"]["message"])
            return
        results, built = results_of(batch_specs)
        if not pinned:  # generating: count fresh graphs, look for a new kind of failure
            fresh = {name for name in by_name if name not in seen}
            seen.update(fresh)
            counts.update(r["status"] for r in results if r["name"] in fresh)
            for r in results:  # each excused mismatch named, for an audit of the verdicts
                if r["name"] in fresh and r["status"] in ("ill-conditioned", "onnxruntime-disagrees"):
                    progress(f"[fuzz] {r['status']}: {r['name']} [{r['config']}]: {r['message'][:300]}")
            counts.update(r["config"] for r in results if r["name"] in fresh and r["status"] == "pass"
                          and r["config"] in ("patches", "bands"))
            progress(f"[fuzz] {target}: {len(seen)} graphs, {counts['pass']} builds passed "
                     f"({counts['patches']} run in patches, {counts['bands']} in row bands), "
                     f"{counts['fail']} failed, {counts['refused']} refused, "
                     f"{counts['discarded']} discarded, {counts['ill-conditioned']} ill-conditioned, "
                     f"{counts['onnxruntime-disagrees']} where onnxruntime disagrees with itself "
                     f"({time.monotonic() - start:.0f} s)")
        elif built:
            pinned["steps"] += 1
            if pinned["steps"] % 10 == 0:
                progress(f"[fuzz] shrinking {pinned['kind']}: {pinned['steps']} steps, "
                         f"{time.monotonic() - pinned['since']:.0f} s")
        for r in results:
            if r["status"] != "fail":
                continue
            kind = signature(r, by_name[r["name"]])
            if kind in known or (pinned and kind != pinned["kind"]):
                continue
            if not pinned:
                progress(f"[fuzz] found {kind} ({r['name']} [{r['config']}]: {r['message']}); "
                         f"shrinking it")
            pinned.setdefault("since", time.monotonic())
            pinned.setdefault("steps", 0)
            pinned.update(kind=kind, spec=by_name[r["name"]], result=r)  # smaller each time
            raise AssertionError(f"{kind}: {r['name']} [{r['config']}]: {r['message']}")

    try:
        prop()
    except Exception:  # noqa: BLE001 (the failure raised above, or Hypothesis' report of it)
        if not pinned:
            raise
        return pinned["kind"], pinned["spec"], pinned["result"]
    return None


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
    parser.add_argument("--no-shrink", action="store_true", help="report failures unshrunk")
    parser.add_argument("--stop-on-failure", action="store_true",
                        help="stop at the first failure (default: shrink each new kind, go on)")
    parser.add_argument("--summary", help="append the campaign's result to this file")
    parser.add_argument("--int8", action="store_true",
                        help="every graph quantized (else a quarter): the integer kernels' campaign")
    parser.add_argument("--images", action="store_true",
                        help="every graph starts with a 2-D convolution of one image: the campaign "
                             "of patch-based execution")
    parser.add_argument("--networks", action="store_true",
                        help="every graph a small CNN of MCU blocks (fuzz/networks.py): SE, "
                             "inverted residuals, fire modules, shuffles, residual blocks, heads")
    args = parser.parse_args(argv)
    workdir = os.path.join(os.path.abspath(args.workdir), args.target)
    if os.path.isdir(workdir):
        shutil.rmtree(workdir)  # models of an earlier campaign must not count
    os.makedirs(workdir)
    started = time.monotonic()
    counts, checked, failures = campaign(args.target, args.graphs, args.seed, args.batch,
                                         args.jobs, workdir, sanitize=args.sanitize,
                                         shrink=not args.no_shrink,
                                         stop_on_failure=args.stop_on_failure, int8=args.int8,
                                         images=args.images, networks=args.networks)
    minutes = (time.monotonic() - started) / 60
    kinds = "".join(f" {k}" for k in ("int8", "images", "networks") if getattr(args, k))
    builds = sum(counts[k] for k in STATUSES)
    line = (f"{args.target}{kinds}, seed {args.seed}: {checked} graphs, {builds} builds: "
            f"{counts['pass']} passed, {counts['fail']} failed, {counts['refused']} refused "
            f"(a forced tactic no node can run), {counts['discarded']} discarded "
            f"(onnxruntime not finite or cannot run it), {counts['ill-conditioned']} ill-conditioned "
            f"(onnxcc at least as close as onnxruntime to a float64 evaluation), {counts['onnxruntime-disagrees']} "
            f"where onnxcc matches onnxruntime without its graph optimizations; {minutes:.0f} min")
    print(f"[fuzz] {line}")
    for failure, path in failures:
        print(f"[fuzz] FAILURE {failure['name']} [{failure['config']}]: {failure['message']}")
        if path:
            print(f"[fuzz] minimal reproducer written to {os.path.relpath(path, REPO)}")
    if args.summary:
        with open(args.summary, "a") as f:
            f.write(f"- {line}; {len(failures)} kind(s) of failure\n")
            f.writelines(f"  - {r['name']} [{r['config']}]: {r['message']}\n" for r, _ in failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

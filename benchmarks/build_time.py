#!/usr/bin/env python3
"""Build time of a big model: ``scons model=M`` from scratch, and after a weights-only edit.

For ResNet-18 (11.7 M float32 parameters, 45 MB: the zoo's, benchmarks/zoo_models.py,
saved here in one file) and for kws
(models/kws.onnx), with ``weights=bin`` (the default: the weights as one binary file,
included by an assembler file) and ``weights=c`` (C array literals), it prints the median
seconds of

* scratch: the default target (library, Make/CMake fragments, footprint ELF, size
  report, report.html) into an empty build folder;
* weights edit: every weight scaled (the same graph), built again; it also checks, with
  SCons' --debug=explain, that only the import, optimize and weights stages, the
  weights' compile and the links and reports after them ran (never the plan, the
  kernels or the run function).

    .venv/bin/python benchmarks/build_time.py [--repeat 3] [--models resnet18,kws]
        [--weights bin,c] [--target x86_64] [--jobs 2]
"""

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

import speed
import zoo_models

EXPLAIN = re.compile(r"^scons: (?:re)?building `([^']+)' because", re.M)
#: what a weights-only edit may rebuild (file names in the model's build folder)
WEIGHTS_ONLY = re.compile(r"(imported|optimized)\.(onnx|bin)|\w+_weights\.(c|S|bin|o|su)"
                          r"|lib\w+\.[ao]|fit\.json|size\.json|report\.html"
                          r"|footprint/\w+_footprint")


def scale_weights(path, factor):
    """The same graph with every float weight tensor scaled: a weights-only edit."""
    model = onnx.load(path)
    for init in model.graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype == np.float32 and a.ndim > 1:
            init.CopyFrom(numpy_helper.from_array(a * np.float32(factor), init.name))
    onnx.save(model, path)


def scons(folder, model, target, weights, jobs, explain=False):
    """Seconds of one ``scons`` run in the repository building into ``folder``, and the
    build folder's files SCons rebuilt (with ``explain``)."""
    start = time.perf_counter()
    out = speed.scons(f"-j{jobs}", f"model={model}", f"target={target}",
                      f"weights_format={weights}", f"build_dir={folder}",
                      *(["--debug=explain"] if explain else []))
    seconds = time.perf_counter() - start
    stem = os.path.splitext(os.path.basename(model))[0]
    built = {p.split(f"/{stem}/", 1)[-1] for p in EXPLAIN.findall(out) if f"/{stem}/" in p}
    return seconds, built


def measure(model, target, weights, repeat, jobs, work):
    """(median seconds from scratch, median seconds after a weights-only edit)."""
    scratch, edit = [], []
    for run in range(repeat):
        folder = os.path.join(work, f"build-{weights}-{run}")
        scratch.append(scons(folder, model, target, weights, jobs)[0])
        scale_weights(model, 1.01)
        seconds, built = scons(folder, model, target, weights, jobs, explain=True)
        edit.append(seconds)
        stray = sorted(b for b in built if not WEIGHTS_ONLY.fullmatch(b))
        if stray:
            sys.exit(f"a weights-only edit of {model} rebuilt {', '.join(stray)}")
        stem = os.path.splitext(os.path.basename(model))[0]
        if f"{stem}_weights.o" not in built:
            sys.exit(f"a weights-only edit of {model} did not rebuild the weights")
        shutil.rmtree(folder)
    return statistics.median(scratch), statistics.median(edit)


def run(args):
    """Print the table."""
    with tempfile.TemporaryDirectory(prefix="onnxcc-build-time-") as work:
        print(f"target {args.target}, scons -j{args.jobs}, median of {args.repeat} runs (s); "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start")
        print(f"{'model':<10} {'weights':<8} {'MB':>6} {'scratch':>8} {'weights edit':>13}")
        for name in args.models.split(","):
            model = os.path.join(work, f"{name}.onnx")
            if name == "resnet18":
                onnx.save(zoo_models.resnet18(), model)
            else:
                shutil.copy(os.path.join(speed.REPO, "models", f"{name}.onnx"), model)
            megabytes = sum(numpy_helper.to_array(t).nbytes
                            for t in onnx.load(model).graph.initializer) / 1e6
            for weights in args.weights.split(","):
                scratch, edit = measure(model, args.target, weights, args.repeat, args.jobs, work)
                print(f"{name:<10} {weights:<8} {megabytes:>6.1f} {scratch:>8.1f} {edit:>13.1f}",
                      flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", default="resnet18,kws")
    parser.add_argument("--weights", default="bin,c")
    parser.add_argument("--target", default="x86_64")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    try:
        run(args)
    except speed.BuildFailed as e:
        sys.exit(f"build_time.py: {e}")

if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""float32 against int8 builds of the MLPerf-Tiny-class examples: flash, RAM, host latency.

For each model, builds ``models/<m>.onnx`` and ``models/int8/<m>_qdq.onnx`` through
SCons for a size target (default armv7, the Cortex-M4F board) and reads their
``size.json``; then builds both for x86_64, links each library into a small timing
program and reports the median time of one inference over ``--repeats`` batches.
Prints a Markdown table (docs/int8.md shows its output).

    .venv/bin/python benchmarks/int8_vs_float.py [--target armv7] [--repeats 15]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["kws", "mobilenet_v1_025", "resnet8", "fc_autoencoder"]

TIMER_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "@name@.h"

/* both builds take the float input (the int8 model quantizes it) */
static float input[@NAME@_INPUT0_BYTES / sizeof(float)];
static unsigned char output[@NAME@_OUTPUT0_BYTES];
static unsigned char arena[@NAME@_ARENA_BYTES + 1] __attribute__((aligned(16)));

int main(int argc, char **argv)
{
    const int runs = atoi(argc > 1 ? argv[1] : "100");
    const void *inputs[] = {input};
    void *outputs[] = {output};
    for (unsigned i = 0; i < sizeof input / sizeof input[0]; ++i)
        input[i] = (float)((int)(i * 37u % 200u) - 100) / 100.0f;  /* in [-1, 1] */
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (int r = 0; r < runs; ++r)
        @name@_run(inputs, outputs, arena);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    printf("%.3f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / runs);
    return 0;
}
"""


def scons(build_dir, *args):
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", f"build_dir={build_dir}", *args],
                       cwd=REPO, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"scons {' '.join(args)} failed:\n{r.stdout}{r.stderr}")


def sizes(build_dir, target, model):
    scons(build_dir, f"target={target}", f"model={model}")
    name = os.path.splitext(os.path.basename(model))[0]
    with open(os.path.join(build_dir, target, name, "size.json")) as f:
        return json.load(f)


def timer(build_dir, model):
    """A host program that runs ``model`` N times (its argument) and prints us per run."""
    scons(build_dir, "target=x86_64", f"model={model}")
    name = os.path.splitext(os.path.basename(model))[0]
    out = os.path.join(build_dir, "x86_64", name)
    src = os.path.join(out, "timer.c")
    with open(src, "w") as f:
        f.write(TIMER_C.replace("@NAME@", name.upper()).replace("@name@", name))
    exe = os.path.join(out, "timer")
    subprocess.run(["gcc", "-O2", "-I", out, "-I", os.path.join(REPO, "site_scons", "onnxcc", "runtime"), src,
                    os.path.join(out, f"lib{name}.a"), "-lm", "-o", exe], check=True)
    return exe


def latencies_us(exes, repeats, runs):
    """Median microseconds per inference of each program, their batches interleaved so
    that a busy machine slows them alike."""
    times = [[] for _ in exes]
    for _ in range(repeats):
        for t, exe in zip(times, exes):
            t.append(float(subprocess.run([exe, str(runs)], capture_output=True, text=True,
                                          check=True).stdout))
    return [statistics.median(t) for t in times]


def kib(n):
    return f"{n / 1024:.1f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="armv7", help="target of the size columns")
    parser.add_argument("--repeats", type=int, default=15, help="timed batches per model")
    parser.add_argument("--runs", type=int, default=50, help="inferences per batch")
    parser.add_argument("models", nargs="*", default=MODELS)
    args = parser.parse_args(argv)
    print(f"Sizes on {args.target} (KiB), host latency on x86_64 (median of {args.repeats} "
          f"batches of {args.runs} inferences, microseconds per inference)\n")
    print("| model | build | weights | kernels | flash total | arena | RAM total | host latency (us) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as build:
        for m in args.models:
            paths = {"float32": f"models/{m}.onnx", "int8": f"models/int8/{m}_qdq.onnx"}
            us = latencies_us([timer(build, p) for p in paths.values()], args.repeats, args.runs)
            rows = {kind: (sizes(build, args.target, path), t)
                    for (kind, path), t in zip(paths.items(), us)}
            for kind, (s, us) in rows.items():
                print(f"| {m} | {kind} | {kib(s['flash']['weights'])} | {kib(s['flash']['kernels'])} "
                      f"| {kib(s['flash']['total'])} | {kib(s['ram']['arena'])} "
                      f"| {kib(s['ram']['total'])} | {us:.0f} |")
            (f, fus), (q, qus) = rows["float32"], rows["int8"]
            print(f"| {m} | int8 / float32 | {q['flash']['weights'] / f['flash']['weights']:.2f} "
                  f"| {q['flash']['kernels'] / f['flash']['kernels']:.2f} "
                  f"| {q['flash']['total'] / f['flash']['total']:.2f} "
                  f"| {q['ram']['arena'] / f['ram']['arena']:.2f} "
                  f"| {q['ram']['total'] / f['ram']['total']:.2f} | {qus / fus:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

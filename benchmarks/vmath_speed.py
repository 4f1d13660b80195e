#!/usr/bin/env python3
"""The vector math functions alone: nanoseconds per vector of each vm_<name>_v<lanes>
(templates/kernels/lib/vmath.mako), compiled with each x86 host target's flags and FMA
contraction (as the blocked kernels' epilogues are), timed on independent vectors (the
throughput an epilogue sees). Medians of interleaved rounds on one CPU (speed.one_cpu);
``--baseline DIR`` times another checkout's functions in the same rounds.

    .venv/bin/python benchmarks/vmath_speed.py
    .venv/bin/python benchmarks/vmath_speed.py --baseline /tmp/main   # git archive main | tar -x -C /tmp/main

Each target's widest vectors (x86_64: 8 floats, x86_64-avx512: 16); a target whose CPU
features this machine lacks is skipped with a note (speed.host_targets).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speed  # noqa: E402

REPO = speed.REPO
FUNCTIONS = {"exp": "", "sigmoid": "", "swish": ", 1.0f", "tanh": "", "gelu_tanh": "", "gelu": "",
             "mish": "", "softplus": "", "elu": ", 1.0f"}
TARGETS = ["x86_64", "x86_64-avx512"]


def _functions(repo, calls):
    """vmath's C for ``calls``, rendered by the checkout at ``repo``."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from onnxcc.codegen.vmath import functions; "
            "print(functions(sys.argv[2]))")
    return subprocess.run([sys.executable, "-c", code, os.path.join(repo, "site_scons"), calls],
                          capture_output=True, text=True, check=True).stdout


def program(repo, lanes, cflags, folder, tag):
    """A program that prints the best ns per vector of each function over its argument's
    count of repetitions."""
    calls = " ".join(f"vm_{n}_v{lanes}(" for n in FUNCTIONS)
    cases = "\n".join(f"""    t0 = now();
    for (int k = 0; k < reps; ++k)
        for (int i = 0; i < N; i += {lanes}) {{
            vm_f{lanes} v; memcpy(&v, in + i, sizeof v); v = vm_{n}_v{lanes}(v{a}); memcpy(out + i, &v, sizeof v);
        }}
    printf("{n} %.3f\\n", (now() - t0) * 1e9 / ((double)reps * N / {lanes}));""" for n, a in FUNCTIONS.items())
    source = f"""#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
{_functions(repo, calls)}
static double now(void) {{ struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }}
#define N 2048  /* 2 x 8 KiB: in the level-1 cache */
static float in[N], out[N];
int main(int argc, char **argv)
{{
    const int reps = atoi(argv[1]);
    double t0;
    for (int i = 0; i < N; ++i) in[i] = (float)(i % 200 - 100) * 0.05f;  /* [-5, 5): sigmoid's working range */
{cases}
    return out[7] > 1e30f;
}}
"""
    c = os.path.join(folder, f"{tag}.c")
    with open(c, "w") as f:
        f.write(source)
    exe = c[:-2]
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wno-psabi", *cflags, "-ffp-contract=fast", c, "-o", exe],
                   check=True)
    return exe


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="another onnxcc checkout to time side by side")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds")
    parser.add_argument("--reps", type=int, default=40, help="passes over the buffer per round")
    args = parser.parse_args()
    repos = {"onnxcc": REPO, **({"baseline": args.baseline} if args.baseline else {})}
    with tempfile.TemporaryDirectory() as folder, speed.one_cpu():
        for name in speed.host_targets(TARGETS):
            target = speed.load_target(name)
            lanes = target.cpu.simd_bytes // 4
            exes = {r: program(path, lanes, target.cflags, folder, f"{name}_{r}") for r, path in repos.items()}
            samples = {r: {n: [] for n in FUNCTIONS} for r in repos}
            for _ in range(args.rounds):
                for r, exe in exes.items():
                    out = subprocess.run([exe, str(args.reps)], capture_output=True, text=True, check=True).stdout
                    for line in out.splitlines():
                        n, ns = line.split()
                        samples[r][n].append(float(ns))
            print(f"\n{name} (vectors of {lanes} floats), ns per vector:\n")
            print("| function | " + " | ".join(repos) + (" | onnxcc / baseline |" if args.baseline else " |"))
            print("| --- |" + " ---: |" * (len(repos) + bool(args.baseline)))
            for n in FUNCTIONS:
                med = {r: statistics.median(samples[r][n]) for r in repos}
                ratio = f" {med['onnxcc'] / med['baseline']:.2f} |" if args.baseline else ""
                print(f"| {n} | " + " | ".join(f"{med[r]:.2f}" for r in repos) + f" |{ratio}", flush=True)


if __name__ == "__main__":
    main()

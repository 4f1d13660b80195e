#!/usr/bin/env python3
"""This machine's roofline: the multiply-add peak of each host target's vectors, and how
fast one core reads a buffer of each size (the level-1, level-2 and level-3 caches, then
memory). The numbers the zoo's ratios are read against (docs/speed.md): a network's
GMAC/s over its target's peak says how much of the vector unit a kernel used, and the
read rates say when streaming the weights, not the multiply-adds, sets the time.

    .venv/bin/python benchmarks/roofline.py
    .venv/bin/python benchmarks/roofline.py --rounds 9 --sizes 32K,1M,16M,256M

Each program is compiled with its target's flags (a target whose CPU features this
machine lacks is skipped) and runs on one CPU (speed.one_cpu), in interleaved rounds;
the tables print medians. Peak: independent chains of vector multiply-adds (more than
the units' latency keeps busy), GMAC/s = float multiply-adds per second. Read: the sum
of a buffer of vectors, passes over it until 0.2 s have gone, GB/s of the best pass of
a round (the prefetchers at their best, as in a kernel's streams).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speed  # noqa: E402

from onnxcc.target import load_target  # noqa: E402

TARGETS = ["x86_64", "x86_64-avx512"]
#: independent multiply-add chains: two units of four cycles' latency need 8; 12 fit
#: AVX2's 16 registers with the two operands
CHAINS = 12
#: vectors a step of the read loop adds to sums of their own (more than the adds' latency)
READS = 8
DEFAULT_SIZES = "16K,256K,1M,4M,16M,64M,256M"


def _bytes(text):
    """'16K', '4M', '1G' or a count of bytes."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def source(lanes):
    """C (GCC vector extensions) of a program that prints its peak multiply-add rate
    (``peak <GMAC/s>``) and, for each size in bytes of its arguments, its best read rate
    (``read <bytes> <GB/s>``)."""
    chains = range(CHAINS)
    init = " ".join(f"v a{i} = b * {i + 1}.0f;" for i in chains)
    step = " ".join(f"a{i} = a{i} * b + c;" for i in chains)
    total = " + ".join(f"a{i}" for i in chains)
    sums = "v " + ", ".join(f"s{j} = {{0}}" for j in range(READS)) + ";"
    adds = " ".join(f"s{j} += a[i + {j}];" for j in range(READS))
    sum_all = " + ".join(f"s{j}" for j in range(READS))
    return f"""#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef float v __attribute__((vector_size({4 * lanes})));
static double now(void) {{ struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }}
static volatile float sink, one = 0.999f, tiny = 0.001f;  /* unknown to the compiler */

static void peak(void)
{{
    v b, c;
    for (int i = 0; i < {lanes}; ++i) {{ b[i] = one; c[i] = tiny; }}
    {init}
    const long steps = 50000000;
    double t0 = now();
    for (long k = 0; k < steps; ++k) {{
        {step}
    }}
    double t = now() - t0;
    v s = {total};
    sink = s[0];
    printf("peak %.2f\\n", (double)steps * {CHAINS} * {lanes} / t * 1e-9);
}}

static void read_rate(size_t bytes)
{{
    size_t n = bytes / sizeof(v);
    v *a = aligned_alloc(64, n * sizeof(v));
    if (!a) {{ perror("aligned_alloc"); exit(1); }}
    memset(a, 0, n * sizeof(v));
    {sums}
    double best = 1e30, spent = 0;
    while (spent < 0.2) {{
        double t0 = now();
        for (size_t i = 0; i + {READS} <= n; i += {READS}) {{
            {adds}
        }}
        double t = now() - t0;
        spent += t;
        if (t < best) best = t;
    }}
    v s = {sum_all};
    sink = s[0];
    free(a);
    printf("read %zu %.2f\\n", bytes, (double)(n - n % {READS}) * sizeof(v) / best * 1e-9);
}}

int main(int argc, char **argv)
{{
    peak();
    for (int i = 1; i < argc; ++i) read_rate((size_t)strtoull(argv[i], 0, 10));
    return 0;
}}
"""


def program(target, folder):
    """The program for ``target``, built with its flags (as its kernels are)."""
    c = os.path.join(folder, f"roofline_{target.name}.c")
    with open(c, "w") as f:
        f.write(source(target.cpu.simd_bytes // 4))
    exe = c[:-2]
    subprocess.run(["gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-Wno-psabi", *target.cflags,
                    "-ffp-contract=fast", c, "-o", exe], check=True)
    return exe


@speed.one_cpu()
def measure(exes, sizes, rounds):
    """{target: (peak samples, {size: read samples})}, interleaved rounds."""
    samples = {t: ([], {s: [] for s in sizes}) for t in exes}
    for _ in range(rounds):
        for name, exe in exes.items():
            out = subprocess.run([exe, *map(str, sizes)], capture_output=True, text=True,
                                 check=True).stdout
            for line in out.splitlines():
                kind, *values = line.split()
                if kind == "peak":
                    samples[name][0].append(float(values[0]))
                else:
                    samples[name][1][int(values[0])].append(float(values[1]))
    return samples


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--sizes", default=DEFAULT_SIZES,
                        help=f"buffer sizes to read (default {DEFAULT_SIZES})")
    args = parser.parse_args()
    sizes = [_bytes(s) for s in args.sizes.split(",")]
    targets = [load_target(name) for name in speed.host_targets(TARGETS)]
    with tempfile.TemporaryDirectory() as folder:
        exes = {t.name: program(t, folder) for t in targets}
        samples = measure(exes, sizes, args.rounds)
    print(f"\nMultiply-add peak, median of {args.rounds} rounds:\n")
    print("| target | vector floats | GMAC/s |")
    print("| --- | ---: | ---: |")
    for t in targets:
        print(f"| {t.name} | {t.cpu.simd_bytes // 4} | {statistics.median(samples[t.name][0]):.1f} |")
    print(f"\nRead rate of one core (GB/s), median of {args.rounds} rounds:\n")
    print("| buffer | " + " | ".join(t.name for t in targets) + " |")
    print("| ---: |" + " ---: |" * len(targets))
    for s in sizes:
        label = f"{s >> 20} MiB" if s >= 1 << 20 else f"{s >> 10} KiB"
        print(f"| {label} | " + " | ".join(f"{statistics.median(samples[t.name][1][s]):.1f}"
                                           for t in targets) + " |")


if __name__ == "__main__":
    main()

"""How long verifying conformance cases takes: one SCons run per case (the top-level
SConstruct, as a user runs it) against one SCons run for a batch of cases
(conformance/SConstruct, as `python -m conformance` runs them).

    python benchmarks/conformance_batching.py [--cases 12] [--repeat 3]

Prints seconds per case of each way (median of the repeats, each from empty build
folders) and their ratio. Both run one case at a time (-j1), so the ratio is the start-up
cost a batch saves, independent of the machine's cores.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from conformance import cases as suites  # noqa: E402
from conformance import runner  # noqa: E402

SAMPLE = ["test_relu", "test_add_bcast", "test_slice", "test_gather_0", "test_reduce_mean_keepdims_example",
          "test_softmax_axis_1", "test_transpose_default", "test_conv_with_strides_padding",
          "test_resize_upsample_scales_linear", "test_cumsum_2d_axis_1", "test_where_example",
          "test_concat_3d_axis_1", "test_exp", "test_tile", "test_argmax_keepdims_example",
          "test_lrn"]


def one_run_per_case(cases, build):
    for case in cases:
        data = case.data_sets[0]
        r = subprocess.run([sys.executable, "-m", "SCons", "-Q", f"model={case.model}",
                            f"name={case.name}", f"build_dir={build}", f"testdata={data}",
                            "verify"], cwd=REPO, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"{case.name} failed:\n{r.stdout}{r.stderr}")


def one_batch(cases, build):
    results = runner.run_batch(cases, "x86_64", build, os.path.join(build, ".sconsign"))
    bad = [k for k, v in results.items() if v["status"] != "pass"]
    if bad:
        raise SystemExit(f"cases failed in the batch: {bad}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", type=int, default=12)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        names = set(SAMPLE[:args.cases])
        cases = suites.prepare(work, ["node"], lambda key: key.split("/")[1] in names)
        timings = {"one SCons run per case": [], "one SCons run per batch": []}
        for k in range(args.repeat):
            for j, (label, fn) in enumerate((("one SCons run per case", one_run_per_case),
                                             ("one SCons run per batch", one_batch))):
                build = os.path.join(work, f"build-{k}-{j}")
                os.makedirs(build)
                start = time.perf_counter()
                fn(cases, build)
                timings[label].append((time.perf_counter() - start) / len(cases))
        medians = {label: statistics.median(t) for label, t in timings.items()}
        for label, seconds in medians.items():
            print(f"{label:26s} {seconds:6.3f} s per case (median of {args.repeat})")
        ratio = medians["one SCons run per case"] / medians["one SCons run per batch"]
        print(f"a batch is {ratio:.1f}x faster per case ({len(cases)} cases)")


if __name__ == "__main__":
    main()

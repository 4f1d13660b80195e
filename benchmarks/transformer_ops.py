#!/usr/bin/env python3
"""The transformers' and ShuffleNet's non-GEMM ops (the fused LayerNorm pattern, passes/
fuse_layer_norm.py) against another checkout's code (--base: main's): each network timed
side by side in interleaved rounds (medians of wall time, and in parentheses of CPU time,
perf stat's task-clock), and, with --profile, each op's time summed over its nodes in
both builds' `scons ... profile`.

    .venv/bin/python benchmarks/transformer_ops.py --base /tmp/base --profile
"""

import os
import sys

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCHMARKS)

import versus  # noqa: E402

MODELS = ("transformer_ts13", "transformer_dyn18", "shufflenet_v2_x0_5")


def main():
    versus.versus_base(__doc__.splitlines()[0], ",".join(MODELS), "xformer-bench", "new",
                      lambda n: f"{n['op']} ({n.get('tactic') or '-'})", "per-op time")


if __name__ == "__main__":
    main()

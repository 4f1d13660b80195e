#!/usr/bin/env python3
"""A squeeze-excitation's scale fused into its project convolution (passes/
fuse_channel_scale.py) against another checkout's code (--base: main's, without it):
each network timed side by side in interleaved rounds (medians of wall time, and in
parentheses of CPU time, perf stat's task-clock), and, with --profile, each block's
se_scale Mul + project Conv from both builds' `scons ... profile`.

    .venv/bin/python benchmarks/channel_scale.py --base /tmp/base --profile
"""

import os
import re
import sys

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCHMARKS)

import versus  # noqa: E402


def block(node):
    """The block of a profile entry that is a se_scale Mul or a project Conv, else None."""
    found = re.fullmatch(r"(se_scale|project)(?:_(\d+))?", node["node"])
    return f"block {int(found.group(2) or 0):2d}: se_scale + project" if found else None


def main():
    versus.versus_base(__doc__.splitlines()[0], "efficientnet_b0", "scale-bench", "fused", block,
                      "per-block time")


if __name__ == "__main__":
    main()

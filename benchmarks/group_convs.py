#!/usr/bin/env python3
"""RegNetX's group convolutions (3x3, 16 channels a group) against another checkout's code
(--base): the network timed side by side in interleaved rounds (medians of wall time, and
in parentheses of CPU time, perf stat's task-clock), and, with --profile, the summed time
of its group convolutions and of its other steps by tactic, from both builds' `scons ...
profile`.

    .venv/bin/python benchmarks/group_convs.py --base /tmp/base --targets x86_64 --profile
"""

import os
import re
import sys

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCHMARKS)

import versus  # noqa: E402


def part(node):
    """RegNetX's group convolutions (its blocks' `b` Convs) as one part, the rest by tactic."""
    if node["op"] == "Conv" and re.fullmatch(r"b(_\d+)?", node["node"]):
        return f"group convs ({node['tactic']})"
    return f"{node['op']} {node['tactic']}"


def main():
    versus.versus_base(__doc__.splitlines()[0], "regnet_x_400mf", "group-bench", "this", part,
                       "group convolutions' and other steps' time")


if __name__ == "__main__":
    main()

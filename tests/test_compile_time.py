"""Every Python stage grows linearly with the graph (docs/speed.md, "Compile time on long
graphs"). Measured by the lines of onnxcc's own code that run, not by seconds: the count
does not depend on the machine or on what else runs on it. Each stage, on the graphs of
benchmarks/compile_time.py at N and 4N nodes, must run at most LIMIT times the lines;
linear is 4, and every stage that was quadratic ran 4.7 to 9 times as many (the
memory-aware schedule, the forwarding of a residual stream written in place, the
placement of a buffer live across the graph, the names of the int8 requantization
tables)."""

import os
import sys

import onnx
import pytest

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import compile_time  # noqa: E402
import onnxcc  # noqa: E402
from onnxcc.ops.common import tiling  # noqa: E402
from onnxcc.target import load_target  # noqa: E402

pytestmark = pytest.mark.unit

N = 250
LIMIT = 4.5
PACKAGE = os.path.dirname(onnxcc.__file__)


def lines_per_stage(graph, n, folder):
    """stage -> lines of onnxcc run by it, compiling the ``graph`` shape of ``n`` nodes."""
    path = os.path.join(folder, "m.onnx")
    onnx.save(compile_time.GRAPHS[graph](n), path)
    counts = {}

    def in_onnxcc(frame, event, arg):
        return count_lines if frame.f_code.co_filename.startswith(PACKAGE) else None

    def count_lines(frame, event, arg):
        if event == "line":
            counts[stage] += 1
        return count_lines

    tiling.best_tile.cache_clear()  # (else the smaller graph would find the tiles first)
    previous = sys.gettrace()
    for stage, run in compile_time.stages(path, folder, load_target("x86_64").cpu):
        counts[stage] = 0
        sys.settrace(in_onnxcc)
        try:
            run()
        finally:
            sys.settrace(previous)
    return counts


@pytest.mark.parametrize("graph", sorted(compile_time.GRAPHS))
def test_stages_run_linearly_many_lines(graph, tmp_path):
    (tmp_path / "small").mkdir()
    (tmp_path / "large").mkdir()
    small = lines_per_stage(graph, N, str(tmp_path / "small"))
    large = lines_per_stage(graph, 4 * N, str(tmp_path / "large"))
    ratios = {stage: round(large[stage] / small[stage], 2) for stage in small}
    assert all(r <= LIMIT for r in ratios.values()), ratios

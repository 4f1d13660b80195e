"""benchmarks/roofline.py's program: built with a host target's flags it compiles without a
warning and prints a multiply-add rate and a read rate per buffer (the numbers docs/speed.md
reads the zoo against)."""

import os
import subprocess
import sys

import pytest
from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import roofline  # noqa: E402
from onnxcc.target import host_cpu_flags, load_target  # noqa: E402


@pytest.mark.skipif(not {"avx2", "fma"} <= host_cpu_flags(), reason="this host runs no x86_64 code")
def test_the_roofline_program_builds_clean_and_prints_its_rates(tmp_path):
    target = load_target("x86_64")
    exe = roofline.program(target, str(tmp_path))  # -Wall -Wextra -Werror
    out = subprocess.run([exe, "65536", "1048576"], capture_output=True, text=True, check=True).stdout
    lines = [line.split() for line in out.splitlines()]
    assert [line[0] for line in lines] == ["peak", "read", "read"]
    assert [int(line[1]) for line in lines[1:]] == [65536, 1048576]
    assert float(lines[0][1]) > 0.5 and all(float(line[2]) > 0.5 for line in lines[1:])
    assert roofline._bytes("16K") == 16384 and roofline._bytes("4M") == 4 << 20 and roofline._bytes("100") == 100

"""The markers' promise: a test marked unit builds nothing (tests/conftest.py fails one that
starts SCons, a compiler or qemu), so that ``pytest -m unit`` needs no toolchain."""

import subprocess
import sys

import pytest

from conftest import SCONS, builds

pytestmark = pytest.mark.unit


def test_builds_names_scons_compilers_and_emulators():
    for argv in (SCONS + ["-Q", "verify"], ["gcc", "-c", "k.c"], ["/usr/bin/arm-none-eabi-gcc"],
                 ["qemu-system-arm", "-M", "mps2-an386"], "make -C examples/firmware run",
                 ["cmake", "--build", "b"]):
        assert builds(argv), argv
    for argv in ([sys.executable, "-c", "pass"], ["git", "ls-files"], ["objdump", "-h", "a.o"]):
        assert not builds(argv), argv


def test_a_unit_test_that_runs_scons_fails():
    with pytest.raises(pytest.fail.Exception, match="a test marked unit runs"):
        subprocess.run(SCONS + ["-h"], capture_output=True)
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # other programs run

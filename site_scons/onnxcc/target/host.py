"""The machine onnxcc runs on: its CPU, and running a program on it (natively or in an
emulator)."""

import os
import subprocess
import tempfile


def run_captured(command, timeout, env=None):
    """Run ``command`` (a program, natively or in an emulator), with the variables ``env``
    added to the environment; CompletedProcess with text stdout and stderr. They go to
    files, not pipes: QEMU's semihosting console loses the end of a long output (a verify
    harness prints every output in hex) when a pipe fills while the machine is busy.
    subprocess.TimeoutExpired after ``timeout`` seconds."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.run(command, stdout=out, stderr=err, timeout=timeout,
                              stdin=subprocess.DEVNULL, env=dict(os.environ, **(env or {})))
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode,
                                           out.read().decode(errors="replace"),
                                           err.read().decode(errors="replace"))



def _cpuinfo(keys):
    """{key: value} of the first processor's ``keys`` in /proc/cpuinfo (those it has)."""
    found = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in keys and key not in found:
                    found[key] = value.strip()
                if line.strip() == "":  # the first processor's block ends
                    break
    except OSError:
        pass
    return found


def host_cpu_flags():
    """The ISA extensions of the machine we run on (/proc/cpuinfo 'flags'); empty when unknown."""
    info = _cpuinfo(("flags", "Features"))
    return set(info.get("flags", info.get("Features", "")).split())


def host_cpu_id():
    """(vendor_id, cpu family) of the machine we run on, from /proc/cpuinfo (for
    ``[native]`` tables); ("", -1) when unknown."""
    info = _cpuinfo(("vendor_id", "cpu family"))
    family = info.get("cpu family", "")
    return info.get("vendor_id", ""), int(family) if family.isdigit() else -1

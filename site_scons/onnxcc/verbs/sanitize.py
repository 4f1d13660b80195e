"""sanitize=1: the generated code, the runtime and the verify harness built with
AddressSanitizer and UndefinedBehaviorSanitizer, and verify failing on any report.

The sanitizers' runtimes (gcc's libasan and libubsan) run on the build machine only, so
only host targets (the host's own gcc, run natively) can be sanitized. Every report stops
the program (-fno-sanitize-recover=all): UBSan's "runtime error" would otherwise be printed
and the run would go on to a plausible result.
"""

import os
import re
import subprocess

from onnxcc.core.errors import OnnxccError

#: the runtimes gcc links for FLAGS, and the Debian package of each (gcc 12)
RUNTIMES = {"libasan.so": "libasan8", "libubsan.so": "libubsan1"}
FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
#: the sanitizers' run-time options: no leak check (the code allocates nothing, and LSan
#: cannot run under ptrace, as in some CI containers); exit with a status, not a core dump
RUN_OPTIONS = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:halt_on_error=1",
               "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
#: the first line of a report: ASan's "ERROR: AddressSanitizer: <kind> ..." or UBSan's
#: "<file>:<line>:<col>: runtime error: <what>"
_REPORT = re.compile(r"(ERROR: \w+Sanitizer: .*|\S+: runtime error: .*)")
#: a stack frame: "#1 0x... in <function> <file>:<line>" (no file:line without -g)
_FRAME = re.compile(r"#\d+ 0x[0-9a-f]+ in (\S+)(?: ([^\s()]+:\d+))?")


def build_folder(target_name, sanitize):
    """The folder under build_dir of a target's builds: sanitized builds apart, so that a
    plain library is never one built with sanitizers, and switching rebuilds nothing."""
    return f"{target_name}-sanitize" if sanitize else target_name


def check(target):
    """OnnxccError unless ``target`` runs natively with the host's gcc, which has the
    sanitizers' runtimes (else the link would fail with "cannot find -lasan")."""
    if target.toolchain.prefix or target.runner:
        raise OnnxccError(f"sanitize=1 works only on host targets (x86_64), not on {target.name}",
                          hint="AddressSanitizer and UBSan run on the build machine; "
                               "verify the same model with target=x86_64 sanitize=1")
    gcc = target.toolchain.tool("gcc")
    for lib, package in RUNTIMES.items():
        found = subprocess.run([gcc, f"-print-file-name={lib}"], capture_output=True, text=True)
        if not os.path.isabs(found.stdout.strip()):
            raise OnnxccError(f"sanitize=1: {gcc} has no {lib}",
                              hint=f"install the sanitizer runtime, e.g. apt-get install {package}")


def report(stderr):
    """The sanitizer report in a program's ``stderr`` as one line (its first line and the
    first frame outside the sanitizers' own runtime), or None when there is none."""
    match = _REPORT.search(stderr)
    if not match:
        return None
    first = match[1].split(" at pc ")[0].strip()  # (ASan: registers follow)
    frames = (f for f in _FRAME.finditer(stderr, match.end())
              if not f[1].startswith("__") and "sanitizer" not in (f[2] or ""))
    frame = next(frames, None)
    if frame is None:
        return first
    return f"{first} (in {frame[1]}{f' at {frame[2]}' if frame[2] else ''})"

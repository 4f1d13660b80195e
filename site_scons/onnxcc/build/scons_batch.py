"""One SCons run over a batch of model builds, for the harnesses that drive the pipeline
in bulk (conformance/, fuzz/): the batch is a JSON file their SConstruct reads, a run that
outlives its time is killed with everything it started, and what it printed is read for
SCons' one-line failures and the C compiler's diagnostics."""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile

from onnxcc.core.paths import REPO_ROOT

#: SCons' one-line report of a failed build step: "scons: *** [target] message"
FAILURE = re.compile(r"^scons: \*\*\* \[(?P<target>[^\]]+)\] (?P<message>.*)$")
#: a C compiler diagnostic: "file.c:12:5: error: ..." (any warning fails a build)
DIAGNOSTIC = re.compile(r"^(?P<file>[^\s:]+\.[ch]):\d+:\d+: (?P<kind>error|warning): (?P<text>.*)$")


def run(sconstruct, batch, folder, jobs, timeout):
    """Run SCons on ``sconstruct`` with ``batch`` (JSON-able, written to a file in
    ``folder``) and ``jobs`` parallel jobs, for at most ``timeout`` seconds. Returns
    (everything it printed, whether it was killed for taking longer)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", dir=folder, delete=False) as f:
        json.dump(batch, f)
    command = [sys.executable, "-m", "SCons", "-Q", "-k", f"-j{jobs}", "-f", sconstruct,
               f"--site-dir={os.path.join(REPO_ROOT, 'site_scons')}", f"batch={f.name}"]
    # stdout and stderr apart: SCons' stdout to a pipe is block-buffered, so a chunk of it
    # can end mid-line and a failure line on a shared pipe would land inside another line
    proc = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        return "\n".join(proc.communicate(timeout=timeout)), False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the SCons run and the programs it started
        return "\n".join(proc.communicate()), True
    finally:
        os.remove(f.name)

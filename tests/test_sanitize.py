"""sanitize=1: the example models and a seeded sample of ONNX's node tests run under
AddressSanitizer and UBSan on x86_64 without a single report, and a report does fail
verify (an out-of-bounds read and a signed overflow, injected in a stand-in model).

Cost: the 15 example models about 70 s (and the float ones with opt=size 22 s more), the
16 conformance cases about 30 s on 2 idle cores; the file took 264 s (before opt=size was
added) on 2 cores shared with four other test runs.
"""

import glob
import json
import os
import random
import subprocess
import sys

import fake_model
import pytest

from conftest import MODELS, REPO, slow
from onnxcc.verbs import sanitize, verify
from onnxcc.core.errors import OnnxccError
from test_conformance import HOST_SAMPLE

EXAMPLES = sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(MODELS, "*.onnx"))
                  + glob.glob(os.path.join(MODELS, "int8", "*.onnx")))


#: every example with the fast kernels, and the float ones with the reference kernels too
BUILDS = [(m, "speed") for m in EXAMPLES] + [(m, "size") for m in EXAMPLES if "int8" not in m]
#: the builds that take more than about 20 s
SLOW_BUILDS = [("models/mobilenet_v1_025.onnx", "speed"), ("models/resnet8.onnx", "speed")]


@pytest.mark.parametrize("model, opt", [slow(b)[0] if b in SLOW_BUILDS else b for b in BUILDS])
@pytest.mark.slow
def test_example_models_are_clean_under_sanitizers(scons, model, opt):
    r = scons(f"model={model}", f"opt={opt}", "sanitize=1", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[verify]" in r.stdout and "warning" not in r.stdout + r.stderr
    name = os.path.splitext(os.path.basename(model))[0]
    lib = scons.build_dir / "x86_64-sanitize" / name / f"lib{name}.a"
    symbols = subprocess.run(["nm", "-u", str(lib)], capture_output=True, text=True).stdout
    assert "__asan_" in symbols and "__ubsan_" in symbols  # it really was instrumented
    assert not (scons.build_dir / "x86_64").exists()  # apart from plain builds


@pytest.mark.slow
def test_conformance_sample_is_clean_under_sanitizers(tmp_path):
    names = random.Random(12).sample(HOST_SAMPLE, 16)
    r = subprocess.run([sys.executable, "-m", "conformance", "--suite", "node", "--sanitize",
                        "--cases", f"node/test_({'|'.join(names)})$", "--work", str(tmp_path)],
                       cwd=REPO, capture_output=True, text=True, timeout=1800)
    with open(tmp_path / "x86_64-sanitize" / "results.json") as f:
        results = json.load(f)
    failed = {k: v.get("message") for k, v in results.items() if v["status"] != "pass"}
    assert len(results) == 16 and not failed and r.returncode == 0, failed or r.stdout + r.stderr


def test_sanitize_is_refused_on_emulated_targets(scons):
    r = scons("target=armv7", "sanitize=1")
    assert r.returncode != 0
    errors = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(errors) == 1 and "sanitize=1 works only on host targets (x86_64), not on armv7" in errors[0]
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.parametrize("fault, report", [
    (5, "ERROR: AddressSanitizer: global-buffer-overflow on address"),
    (6, "runtime error: signed integer overflow")])
def test_a_sanitizer_report_fails_verify(tmp_path, fault, report):
    folder = fake_model.make(tmp_path)
    clean = fake_model.build(folder, 0, sanitize.FLAGS)
    assert "1 output(s)" in verify.run(*clean)
    run = fake_model.build(folder, fault, sanitize.FLAGS)
    with pytest.raises(OnnxccError) as e:
        verify.run(*run)
    message = str(e.value)
    assert "the sanitizers stopped the harness on x86_64: " in message and report in message
    assert "(in m_run" in message and "\n" not in message  # where, in one line


def test_a_missing_sanitizer_runtime_is_one_clear_line(monkeypatch):
    """gcc answers -print-file-name=libasan.so with the bare name when it has no libasan."""
    from onnxcc.target import load_target
    sanitize.check(load_target("x86_64"))  # this machine has them

    def without_runtimes(command, **kw):
        return subprocess.CompletedProcess(command, 0, command[-1].split("=", 1)[1] + "\n", "")
    monkeypatch.setattr(sanitize.subprocess, "run", without_runtimes)
    with pytest.raises(OnnxccError, match=r"sanitize=1: gcc has no libasan.so .*apt-get install libasan8"):
        sanitize.check(load_target("x86_64"))

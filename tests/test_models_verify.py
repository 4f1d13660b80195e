"""Every example model compiles through the whole SCons pipeline and matches onnxruntime."""

import glob
import os
import sys

import pytest

from conftest import MODELS

EXAMPLES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(MODELS, "*.onnx")))


@pytest.mark.unit
def test_examples_are_exactly_what_make_models_builds():
    """The verify tests below run on the models in models/: those must be every model the
    script makes, byte for byte (none missing, none stale, none edited by hand)."""
    sys.path.insert(0, MODELS)
    import make_models
    assert EXAMPLES == sorted(f"{name}.onnx" for name in make_models.MODELS)
    for name in make_models.MODELS:
        with open(os.path.join(MODELS, f"{name}.onnx"), "rb") as f:
            assert f.read() == make_models.build_model(name).SerializeToString(), name


@pytest.mark.parametrize("model", EXAMPLES)
@pytest.mark.slow
def test_verify_on_host(shared_build, model):
    r, _ = shared_build(f"model=models/{model}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    line = [l for l in r.stdout.splitlines() if l.startswith("[verify]")]
    assert line and "of tolerance" in line[0]
    used = float(line[0].rsplit(", ", 1)[1].split()[0])
    assert used < 0.1  # every element far inside its bound: float32 rounding, not a near miss
    # the generated C compiled without a single warning under -Wall -Wextra
    assert "warning" not in r.stdout + r.stderr

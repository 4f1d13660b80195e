"""Every example model compiles through the whole SCons pipeline and matches onnxruntime."""

import glob
import os

import pytest

from conftest import MODELS

EXAMPLES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(MODELS, "*.onnx")))


def test_examples_exist():
    assert {"kws.onnx", "mobilenet_v1_025.onnx", "resnet8.onnx", "fc_autoencoder.onnx",
            "squeezenet_mini.onnx", "transformer_block.onnx"} <= set(EXAMPLES)


@pytest.mark.parametrize("model", EXAMPLES)
def test_verify_on_host(scons, model):
    r = scons(f"model=models/{model}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    line = [l for l in r.stdout.splitlines() if l.startswith("[verify]")]
    assert line and "max rel error" in line[0]
    rel = float(line[0].rsplit("max rel error", 1)[1])
    assert rel < 1e-4  # float32 rounding level
    # the generated C compiled without a single warning under -Wall -Wextra
    assert "warning" not in r.stdout + r.stderr

"""The model zoo's writer (benchmarks/zoo_models.py): every network is a valid ONNX model
that onnxruntime runs to its declared output shape with bounded outputs, and big models
go to a side file as torch writes them. No onnxcc build here (benchmarks/zoo.py does it)."""

import os
import sys

import numpy as np
import onnx
import pytest

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import zoo_models  # noqa: E402
from onnxcc.core.onnxruntime_session import session as ort_session  # noqa: E402

pytestmark = pytest.mark.unit

#: the zoo networks small enough to run here (ResNet-18 is 45 MB of weights)
SMALL = [n for n in zoo_models.MODELS if n != "resnet18"]


def shape(value_info):
    return [d.dim_value for d in value_info.type.tensor_type.shape.dim]


@pytest.mark.parametrize("name", SMALL)
def test_zoo_model_is_valid_and_runs(name):
    model = zoo_models.build(name)
    onnx.checker.check_model(model, full_check=True)  # with shape inference
    sess = ort_session(model)
    x = np.random.default_rng(0).uniform(-1, 1, shape(model.graph.input[0])).astype(np.float32)
    (y,) = sess.run(None, {model.graph.input[0].name: x})
    assert list(y.shape) == shape(model.graph.output[0])
    assert np.all(np.isfinite(y)) and np.abs(y).max() < 1e3, "activations must stay bounded"


def test_resnet18_has_the_torchvision_parameter_count():
    model = zoo_models.resnet18()
    count = sum(int(np.prod(t.dims)) for t in model.graph.initializer
                if t.data_type == onnx.TensorProto.FLOAT)
    # torchvision's 11,689,512 and BatchNorm's running statistics (2 x 4,800)
    assert count == 11_689_512 + 9_600


def test_side_file_is_written_afresh(tmp_path, monkeypatch):
    monkeypatch.setattr(zoo_models, "EXTERNAL_DATA", {"gru_kws"})
    sizes = []
    for _ in range(2):  # onnx appends to a side file that exists: the writer removes it
        (path,) = zoo_models.write(str(tmp_path), ["gru_kws"])
        sizes.append(os.path.getsize(path + ".data"))
    weights = sum(4 * int(np.prod(t.dims)) for t in zoo_models.gru_kws().graph.initializer
                  if t.data_type == onnx.TensorProto.FLOAT)
    assert sizes[0] == sizes[1] and 0.9 * weights < sizes[1] <= weights  # tiny tensors stay inline
    assert os.path.getsize(path) < 10_000
    model = onnx.load(path)
    assert ort_session(model).run(None, {"input": np.zeros((1, 49, 40), np.float32)})

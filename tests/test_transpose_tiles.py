"""Transpose in blocks of lanes x lanes floats (ops/transpose.py, transpose_tiles.c.mako):
rows and columns with tails and without, batches walked at odd strides, a transformer's
K^T, 2-D and 3-D -- run against onnxruntime on 16-, 8- and 4-float vectors (forced, and
by the cost model); and the Transposes that are not tiles (y's rows contiguous in x, too
narrow for a block, int64) still the strided walk."""

import json

import onnx
import pytest
from onnx import helper

from conftest import in_qemu, save_graph, verify_clean
from onnxcc.target import host_cpu_flags

F = onnx.TensorProto.FLOAT
AVX512 = pytest.param("x86_64-avx512", marks=pytest.mark.skipif(
    "avx512f" not in host_cpu_flags(), reason="this host has no AVX-512"))

#: (x shape, perm, tiles: whether the tiles tactic applies on 4-float vectors at least)
CASES = [
    ([1, 37, 3, 20], [0, 2, 3, 1], True),  # K^T of 3 heads: rows 20, columns 37
    ([19, 40], [1, 0], True),
    ([16, 16], [1, 0], True),
    ([17, 3, 33], [2, 1, 0], True),
    ([2, 5, 35, 18], [1, 0, 3, 2], True),
    ([3, 24, 2, 9], [0, 3, 2, 1], True),  # columns 24 at x stride 18
    ([1, 6, 4, 64], [0, 2, 1, 3], False),  # rows copied whole
    ([3, 40], [1, 0], False),  # fewer than a vector of columns
]


def transpose_zoo(path):
    nodes, inputs, outputs = [], [], []
    for k, (shape, perm, _) in enumerate(CASES):
        inputs.append(helper.make_tensor_value_info(f"x{k}", F, shape))
        nodes.append(helper.make_node("Transpose", [f"x{k}"], [f"y{k}"], name=f"t{k}", perm=perm))
        outputs.append(helper.make_tensor_value_info(f"y{k}", F, [shape[p] for p in perm]))
    inputs.append(helper.make_tensor_value_info("i", onnx.TensorProto.INT64, [20, 20]))
    nodes.append(helper.make_node("Transpose", ["i"], ["ti"], name="t_int", perm=[1, 0]))
    nodes.append(helper.make_node("Cast", ["ti"], ["yi"], to=F))
    outputs.append(helper.make_tensor_value_info("yi", F, [20, 20]))
    graph = helper.make_graph(nodes, "trz", inputs, outputs)
    save_graph(path, graph)
    return path


def _tactics(scons, target):
    chosen = json.loads((scons.build_dir / target / "trz" / "tactics.json").read_text())
    return {n["node"]: n["tactic"] for n in chosen["nodes"]}


@pytest.mark.parametrize("target", ["x86_64", AVX512, *in_qemu("aarch64", "armv7a")])
def test_transpose_tiles_match_onnxruntime(scons, tmp_path, target):
    model = transpose_zoo(tmp_path / "trz.onnx")
    verify_clean(scons, model, f"target={target}", "tactic=Transpose:tiles")
    tactics = _tactics(scons, target)
    lanes = 16 if target.endswith("avx512") else 8 if target == "x86_64" else 4
    # rows: x's last axis; columns: y's last
    wide = [min(s[-1], s[perm[-1]]) >= lanes for s, perm, _ in CASES]
    assert [tactics[f"t{k}"] == "tiles" for k in range(len(CASES))] == \
        [tiles and w for (_, _, tiles), w in zip(CASES, wide)]
    assert tactics["t_int"] == "reference"


def test_cost_model_picks_tiles_for_columns(scons, tmp_path):
    model = transpose_zoo(tmp_path / "trz.onnx")
    verify_clean(scons, model, "target=x86_64")
    tactics = _tactics(scons, "x86_64")
    assert tactics["t0"] == tactics["t1"] == "tiles" and tactics["t6"] == "reference"

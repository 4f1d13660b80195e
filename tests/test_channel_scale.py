"""A per-channel Mul fused into the 1x1 convolution after it (passes/fuse_channel_scale.py):
squeeze-excitation blocks of odd channel counts (vector tails), 1-D convolutions, the
rule's boundary, a bias or none, the scale on either side of the Mul, a residual and an
activation after the Conv, two images -- run against onnxruntime with the tactics the
cost model picks, and forced to gemm1x1 and to direct, on CPUs of 16-, 8-, 4- and
1-float vectors; and the Muls the rule keeps (4 M > H W, a strided, padded or grouped
Conv, a scale that varies per pixel or per image, x * s read twice) still there."""

import json

import numpy as np
import pytest
from onnx import helper

from conftest import in_qemu, verify_clean
from onnxcc.target import host_cpu_flags
from test_tactics import save_model

RNG = np.random.default_rng(14)
AVX512 = pytest.param("x86_64-avx512", marks=pytest.mark.skipif(
    "avx512f" not in host_cpu_flags(), reason="this host has no AVX-512"))

#: (name, x shape, output channels, Conv attributes, options); options: "s_first" (Mul(s,
#: x)), "bias", "residual", "relu", "s_const", "s_per_image", "s_per_pixel", "twice" (x * s
#: also an output); the cases of a name starting with "kept" keep their Mul
CASES = [
    ("se13", [1, 13, 6, 7], 5, {}, {"bias"}),
    ("se19", [1, 19, 5, 9], 9, {}, {"s_first", "residual", "relu"}),
    ("se17", [1, 17, 12, 12], 33, {}, {"bias"}),
    ("se1d", [1, 10, 37], 7, {}, {"bias", "relu"}),
    ("se_rule", [1, 6, 2, 2], 1, {}, {"bias"}),  # (4 M = H W: fused)
    ("se2img", [2, 5, 7, 9], 12, {}, {"residual", "s_const"}),
    ("se40", [1, 40, 14, 14], 24, {}, {"bias", "residual"}),
    ("kept_rule", [1, 8, 1, 7], 2, {}, {"bias"}),  # (4 M > H W)
    ("kept_strided", [1, 8, 6, 6], 4, dict(strides=[2, 2]), {"bias"}),
    ("kept_padded", [1, 8, 6, 6], 4, dict(pads=[1, 1, 1, 1]), set()),
    ("kept_grouped", [1, 8, 6, 6], 4, dict(group=2), {"bias"}),
    ("kept_per_pixel", [1, 8, 6, 6], 4, {}, {"s_per_pixel"}),
    ("kept_per_image", [2, 8, 6, 6], 4, {}, {"s_per_image"}),
    ("kept_twice", [1, 8, 6, 6], 4, {}, {"twice"}),
]


def _scale(k, xs, options, nodes, inputs, outputs, inits):
    """The Mul's second operand: a SE block's sigmoid of the pooled x; or a constant per
    channel (or per image), or an input per pixel, x then an output too (read twice, so
    that no other fusion takes the Mul)."""
    c, ones = xs[1], [1] * (len(xs) - 2)
    if options & {"s_const", "s_per_image", "s_per_pixel"}:
        outputs[f"x{k}"] = len(xs)
        if "s_per_pixel" in options:
            inputs[f"s{k}"] = xs
        else:
            images = xs[0] if "s_per_image" in options else 1
            inits[f"s{k}"] = RNG.standard_normal([images, c] + ones).astype(np.float32)
        return f"s{k}"
    if len(xs) == 3:
        nodes.append(helper.make_node("ReduceMean", [f"x{k}"], [f"p{k}"], axes=[2]))
    else:
        nodes.append(helper.make_node("GlobalAveragePool", [f"x{k}"], [f"p{k}"]))
    inits[f"sw{k}"] = (RNG.standard_normal([c, c] + ones) * 0.5).astype(np.float32)
    nodes.append(helper.make_node("Conv", [f"p{k}", f"sw{k}"], [f"q{k}"]))
    nodes.append(helper.make_node("Sigmoid", [f"q{k}"], [f"s{k}"]))
    return f"s{k}"


def _case(k, name, xs, m, attrs, options, nodes, inputs, outputs, inits):
    c, ones = xs[1], [1] * (len(xs) - 2)
    inputs[f"in{k}"] = xs
    # x: read by the pool and the Mul, as a depthwise conv's output in a SE block
    nodes.append(helper.make_node("Abs", [f"in{k}"], [f"x{k}"]))
    s = _scale(k, xs, options, nodes, inputs, outputs, inits)
    pair = [s, f"x{k}"] if "s_first" in options else [f"x{k}", s]
    nodes.append(helper.make_node("Mul", pair, [f"xs{k}"], name=f"mul_{name}"))
    if "twice" in options:
        nodes.append(helper.make_node("Neg", [f"xs{k}"], [f"n{k}"]))
        outputs[f"n{k}"] = len(xs)
    inits[f"w{k}"] = (RNG.standard_normal([m, c // attrs.get("group", 1)] + ones) * 0.4).astype(np.float32)
    conv = [f"xs{k}", f"w{k}"]
    if "bias" in options:
        inits[f"b{k}"] = (RNG.standard_normal(m) * 0.3).astype(np.float32)
        conv.append(f"b{k}")
    y = f"y{k}"
    nodes.append(helper.make_node("Conv", conv, [f"c{k}"], name=f"project_{name}", **attrs))
    last = f"c{k}"
    if "residual" in options:
        inputs[f"r{k}"] = [xs[0], m] + xs[2:]
        nodes.append(helper.make_node("Add", [last, f"r{k}"], [f"a{k}"]))
        last = f"a{k}"
    nodes.append(helper.make_node("Relu" if "relu" in options else "Identity", [last], [y]))
    outputs[y] = len(xs)


def scale_zoo(path, cases=CASES):
    nodes, inputs, outputs, inits = [], {}, {}, {}
    for k, case in enumerate(cases):
        _case(k, *case, nodes, inputs, outputs, inits)
    return save_model(path, nodes, inputs, outputs, inits)


def _built(scons, target):
    chosen = json.loads((scons.build_dir / target / "sez" / "tactics.json").read_text())
    return {n["node"]: n["tactic"] for n in chosen["nodes"]}


def _check_fusions(tactics):
    """The Muls the rule keeps are there, the others gone."""
    kept = {n for n in tactics if n.startswith("mul_")}
    assert kept == {f"mul_{name}" for name, *_ in CASES if name.startswith("kept")}


@pytest.mark.parametrize("target", ["x86_64", AVX512, *in_qemu("aarch64", "armv7a", "riscv32")])
@pytest.mark.slow
def test_fused_scale_matches_onnxruntime(scons, tmp_path, target):
    model = scale_zoo(tmp_path / "sez.onnx")
    verify_clean(scons, model, f"target={target}")
    _check_fusions(_built(scons, target))
    kernels = (scons.build_dir / target / "sez" / "sez_kernels.c").read_text()
    assert "the packed weights times s" in kernels


@pytest.mark.parametrize("target,tactic", [
    ("x86_64", "gemm1x1"), *in_qemu(("aarch64", "gemm1x1")), ("x86_64", "direct"),
    pytest.param("x86_64-avx512", "gemm1x1", marks=AVX512.marks)])
@pytest.mark.slow
def test_fused_scale_forced_tactics(scons, tmp_path, target, tactic):
    model = scale_zoo(tmp_path / "sez.onnx")
    verify_clean(scons, model, f"target={target}", f"tactic=Conv:{tactic}")
    tactics = _built(scons, target)
    _check_fusions(tactics)
    fused = [f"project_{name}" for name, *_ in CASES if not name.startswith("kept")]
    assert all(tactics[n] == tactic for n in fused)

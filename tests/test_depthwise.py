"""The depthwise Conv tactic forced on odd shapes -- tiny and odd images, 3x3, 5x5 and 2x2
kernels, strides 1 and 2 (the stride-2 rows split into column phases by vector shuffles
where whole vector pairs fit, one by one at the edges), asymmetric pads, dilation, odd
channel counts, rows shorter than a vector, fused Relu, Clip, Swish and a residual -- run against onnxruntime on CPUs
with 8-, 4- and 1-float vectors (and 16 where the host has AVX-512); the same and more
forced on depthwise_shift (row tails, 7x7 kernels, column strides 2 and 3),
depthwise_nchwc (channel tails of every block width, 1x1 to 15x15 images, 7x7 kernels) and
depthwise_s2 (column stride 2 read from x without planes: row edges, column blocks; x86
only), which scalar CPUs refuse."""

import json

import numpy as np
import pytest
from onnx import helper

from conftest import in_qemu, slow, verify_clean
from onnxcc.target import host_cpu_flags
from test_tactics import _out_spatial, save_model

RNG = np.random.default_rng(5)
AVX512 = pytest.param("x86_64-avx512", marks=pytest.mark.skipif(
    "avx512f" not in host_cpu_flags(), reason="this host has no AVX-512"))
#: NEON CPUs (4-float vectors), in qemu
NEON = in_qemu("aarch64", "armv7a")

#: (channels, image, kernel, attributes, what follows)
CASES = [
    (3, [1, 1], [3, 3], dict(pads=[1, 1, 1, 1]), "relu"),
    (17, [2, 3], [3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2]), "swish"),
    (17, [7, 7], [5, 5], dict(pads=[2, 2, 2, 2]), "swish"),
    (3, [13, 17], [3, 3], dict(pads=[1, 0, 0, 1], strides=[2, 2]), "relu"),
    (3, [13, 17], [5, 5], dict(pads=[2, 2, 2, 2], strides=[2, 2]), "clip"),
    (5, [40, 37], [3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2]), "clip"),
    (3, [35, 36], [5, 5], dict(pads=[2, 2, 1, 2], strides=[2, 2]), "residual"),
    (4, [20, 41], [3, 3], dict(strides=[2, 2]), "swish"),
    # stride-2 rows split by half vectors (4 lanes) after or instead of whole ones
    (5, [14, 14], [3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2]), "relu"),
    (3, [9, 29], [5, 5], dict(pads=[2, 2, 2, 2], strides=[2, 2]), "swish"),
    (3, [19, 23], [3, 3], dict(pads=[2, 2, 2, 2], strides=[2, 2], dilations=[2, 2]), "relu"),
    (3, [18, 34], [2, 2], dict(strides=[2, 2]), None),
    (6, [33, 70], [3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 1]), "residual"),
    # column stride 2 split by shuffles under a row stride of 1 or 3
    (3, [9, 40], [3, 3], dict(pads=[1, 1, 1, 1], strides=[1, 2]), "relu"),
    (3, [20, 40], [3, 3], dict(pads=[1, 1, 1, 1], strides=[3, 2]), None),
    (40, [7, 7], [5, 5], dict(pads=[2, 2, 2, 2]), "swish"),
    (17, [14, 14], [3, 3], dict(pads=[1, 1, 1, 1]), "residual"),
    # rows shorter than a vector, stored as whole vectors into the next rows
    (5, [9, 3], [3, 3], dict(pads=[1, 1, 1, 1]), "residual"),
    (5, [11, 6], [3, 3], dict(pads=[1, 1, 1, 1]), "relu"),
]


def depthwise_zoo(path, cases=CASES):
    nodes, inputs, outputs, inits = [], {}, {}, {}
    for k, (c, image, kernel, attrs, then) in enumerate(cases):
        xs, ws = [1, c] + image, [c, 1] + kernel
        inputs[f"x{k}"] = xs
        inits[f"w{k}"] = (RNG.standard_normal(ws) * 0.3).astype(np.float32)
        inits[f"b{k}"] = (RNG.standard_normal(c) * 0.3).astype(np.float32)
        conv = f"c{k}" if then else f"y{k}"
        nodes.append(helper.make_node("Conv", [f"x{k}", f"w{k}", f"b{k}"], [conv], group=c, **attrs))
        if then == "relu":
            nodes.append(helper.make_node("Relu", [conv], [f"y{k}"]))
        elif then == "clip":
            inits[f"lo{k}"], inits[f"hi{k}"] = np.float32(0.0), np.float32(0.6)
            nodes.append(helper.make_node("Clip", [conv, f"lo{k}", f"hi{k}"], [f"y{k}"]))
        elif then == "swish":
            nodes.append(helper.make_node("Sigmoid", [conv], [f"s{k}"]))
            nodes.append(helper.make_node("Mul", [conv, f"s{k}"], [f"y{k}"]))
        elif then == "residual":  # computed and the sum read again, so that the sum
            inputs[f"r{k}"] = [1, c] + _out_spatial(xs, ws, attrs)  # may be written over it
            nodes.append(helper.make_node("Abs", [f"r{k}"], [f"a{k}"]))
            nodes.append(helper.make_node("Add", [conv, f"a{k}"], [f"s{k}"]))
            nodes.append(helper.make_node("Transpose", [f"s{k}"], [f"y{k}"], perm=[0, 1, 3, 2]))
        elif then == "scale":  # a per-channel Mul, then Relu
            inits[f"m{k}"] = RNG.standard_normal([1, c, 1, 1]).astype(np.float32)
            nodes.append(helper.make_node("Mul", [conv, f"m{k}"], [f"s{k}"]))
            nodes.append(helper.make_node("Relu", [f"s{k}"], [f"y{k}"]))
        outputs[f"y{k}"] = 4
    return save_model(path, nodes, inputs, outputs, inits)


def forced_kernels(scons, tmp_path, target, tactic, cases, name):
    """The generated kernels of ``cases`` built with every Conv forced to ``tactic``,
    verified clean against onnxruntime, each Conv having run ``tactic``."""
    model = depthwise_zoo(tmp_path / f"{name}.onnx", cases)
    verify_clean(scons, model, f"target={target}", f"tactic=Conv:{tactic}")
    chosen = json.loads((scons.build_dir / target / name / "tactics.json").read_text())
    convs = [n for n in chosen["nodes"] if n["op"] == "Conv"]
    assert len(convs) == len(cases) and all(n["tactic"] == tactic for n in convs)
    return (scons.build_dir / target / name / f"{name}_kernels.c").read_text()


@pytest.mark.parametrize("target", ["x86_64", *slow(*NEON), AVX512, *in_qemu("riscv32")])
@pytest.mark.slow
def test_depthwise_tactic_matches_onnxruntime(scons, tmp_path, target):
    kernels = forced_kernels(scons, tmp_path, target, "depthwise", CASES, "dws")
    # stride-2 rows wide enough for a vector pair were split by shuffles (on SIMD CPUs)
    assert ("__builtin_shuffle" in kernels) == (target != "riscv32")
    assert ("(vi4)" in kernels) == (target != "riscv32")
    assert ("land in the next rows" in kernels) == (target != "riscv32")


#: depthwise_shift: every row of the planes read as aligned vectors, the taps over shuffled
#: out of two -- stride-1 rows of widths around 1, 2 and 3 vectors (tails), 5x5 and 7x7
#: kernels (taps a whole vector over at 4 lanes), dilation, column strides 2 and 3 (taps in
#: other column phases), and what CASES has
SHIFT_CASES = CASES + [
    (3, [6, 33], [3, 3], dict(pads=[1, 1, 1, 1]), "relu"),
    (2, [5, 47], [5, 5], dict(pads=[2, 2, 2, 2]), "swish"),
    (3, [4, 16], [3, 3], dict(pads=[0, 1, 2, 1]), "residual"),
    (2, [9, 31], [7, 7], dict(pads=[3, 3, 3, 3]), "clip"),
    (2, [8, 40], [3, 3], dict(pads=[2, 2, 2, 2], dilations=[2, 2]), "residual"),
    (3, [12, 50], [5, 5], dict(pads=[2, 1, 2, 1], strides=[1, 3]), "relu"),
    (2, [11, 65], [3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2]), "residual"),
]


@pytest.mark.parametrize("target", ["x86_64", *slow(*NEON), AVX512])
@pytest.mark.slow
def test_depthwise_shift_matches_onnxruntime(scons, tmp_path, target):
    kernels = forced_kernels(scons, tmp_path, target, "depthwise_shift", SHIFT_CASES, "dwt")
    assert "(vi){1, 2, 3" in kernels and "land in the next rows" in kernels


#: depthwise_s2: column stride 2 without planes -- odd and even widths from one vector
#: (16 on AVX-512) up, row tails of every column block, odd heights, asymmetric pads (and
#: none), 2x2 to 7x7 kernels (taps a unit or two over), dilation, row strides 1, 2 and 3,
#: Relu, Clip (Relu6's form), Swish and a residual written over
S2_CASES = [
    (3, [13, 17], [3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2]), "relu"),
    (5, [40, 37], [3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2]), "clip"),
    (3, [35, 36], [5, 5], dict(pads=[2, 2, 1, 2], strides=[2, 2]), "residual"),
    (4, [20, 41], [3, 3], dict(strides=[2, 2]), "swish"),
    (3, [9, 29], [5, 5], dict(pads=[2, 2, 2, 2], strides=[2, 2]), "swish"),
    (3, [19, 23], [3, 3], dict(pads=[2, 2, 2, 2], strides=[2, 2], dilations=[2, 2]), "relu"),
    (3, [18, 34], [2, 2], dict(strides=[2, 2]), None),
    (3, [9, 40], [3, 3], dict(pads=[1, 1, 1, 1], strides=[1, 2]), "relu"),
    (3, [20, 40], [3, 3], dict(pads=[1, 1, 1, 1], strides=[3, 2]), None),
    (2, [11, 65], [3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2]), "residual"),
    (2, [7, 113], [5, 5], dict(pads=[2, 2, 2, 2], strides=[2, 2]), "swish"),
    (3, [16, 16], [3, 3], dict(pads=[0, 1, 1, 0], strides=[2, 2]), "relu"),
    (2, [5, 70], [7, 7], dict(pads=[3, 3, 3, 3], strides=[2, 2]), "clip"),
    (6, [33, 64], [3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2]), "swish"),
]


@pytest.mark.parametrize("target", ["x86_64", AVX512])
@pytest.mark.slow
def test_depthwise_s2_matches_onnxruntime(scons, tmp_path, target):
    kernels = forced_kernels(scons, tmp_path, target, "depthwise_s2", S2_CASES, "dw2")
    # no planes: the rows split in registers, edges shuffled with zeros, a zero row
    assert "the zero row" in kernels and "(vf){0}, (vi){" in kernels
    assert "pc + " not in kernels


@pytest.mark.parametrize("target", ["x86_64", "aarch64"])
def test_depthwise_s2_refused_where_rows_are_short(scons, tmp_path, target):
    """A row narrower than a vector (its edge loads would leave it), a column stride
    other than 2, or NEON (not measured there): the tactic does not apply."""
    model = depthwise_zoo(tmp_path / "dwn.onnx", CASES[:2] if target == "x86_64" else S2_CASES[:1])
    r = scons(f"model={model}", f"target={target}", "tactic=Conv:depthwise_s2", "verify")
    assert r.returncode != 0 and "depthwise_s2" in r.stdout + r.stderr


#: depthwise_nchwc: channel counts around the block (4, 8, 16 lanes: full blocks and
#: tails), images from 1x1 to 15x15, 3x3 to 7x7 kernels, stride 2, asymmetric pads,
#: dilation, pads past the window's reach, a residual, a per-channel Mul and activation chains
NCHWC_CASES = CASES + [
    (16, [7, 7], [3, 3], dict(pads=[1, 1, 1, 1]), "relu"),
    (33, [14, 14], [5, 5], dict(pads=[2, 2, 2, 2]), "swish"),
    (20, [1, 1], [3, 3], dict(pads=[1, 1, 1, 1]), "residual"),
    (9, [2, 2], [1, 1], {}, "scale"),
    (24, [15, 14], [7, 7], dict(pads=[3, 2, 3, 4], strides=[2, 2]), "clip"),
    (13, [14, 14], [3, 3], dict(pads=[0, 1, 1, 0], strides=[2, 2]), "residual"),
    (8, [6, 9], [3, 3], dict(pads=[3, 3, 3, 3], dilations=[2, 2]), "swish"),
    (35, [28, 28], [3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2]), "scale"),
]


@pytest.mark.parametrize("target", ["x86_64", *NEON, AVX512])
@pytest.mark.slow
def test_depthwise_nchwc_matches_onnxruntime(scons, tmp_path, target):
    kernels = forced_kernels(scons, tmp_path, target, "depthwise_nchwc", NCHWC_CASES, "dwc")
    assert "__builtin_shuffle" in kernels and "(vi)" in kernels


@pytest.mark.parametrize("tactic", ["depthwise_shift", "depthwise_nchwc"])
def test_lane_tactics_refused_on_scalar_cpus(scons, tmp_path, tactic):
    model = depthwise_zoo(tmp_path / "dwc.onnx", CASES[:1])
    r = scons(f"model={model}", "target=riscv32", f"tactic=Conv:{tactic}", "verify")
    assert r.returncode != 0 and tactic in r.stdout + r.stderr

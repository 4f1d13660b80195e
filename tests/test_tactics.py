"""Kernel tactics: every tactic of Conv, Gemm and MatMul forced on many shapes and run
against onnxruntime on CPUs with 8-, 4- and 1-float vectors; how the select stage chooses;
opt=size never bigger than the kernels before tactics; bench."""

import json
from dataclasses import replace
import os
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import REPO, in_qemu, slow
from onnxcc import ops
from onnxcc.tactics import stage as tactics
from onnxcc.core.errors import OnnxccError
from onnxcc.importer.stage import import_model
from onnxcc.passes import optimize
from onnxcc.target import Cpu, host_cpu_flags, load_target

RNG = np.random.default_rng(11)
F = TensorProto.FLOAT
AVX2 = Cpu(32, 16, True, 32768, ("avx2", "fma"), l2_bytes=1 << 20)
#: (target, vector floats): AVX2, NEON and the scalar fallback (and AVX-512 where the host has it)
TARGETS = [("x86_64", 8), *in_qemu(("aarch64", 4), ("riscv32", 1)),
           pytest.param("x86_64-avx512", 16, marks=pytest.mark.skipif(
               "avx512f" not in host_cpu_flags(), reason="this host has no AVX-512"))]


def w(*shape):
    return (RNG.standard_normal(shape) * 0.3).astype(np.float32)


def save_model(path, nodes, inputs, outputs, inits):
    graph = helper.make_graph(
        nodes, "zoo", [helper.make_tensor_value_info(n, F, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, F, [None] * rank) for n, rank in outputs.items()],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


#: (input shape, weight shape, attributes, what follows: None, "relu" or "residual")
CONVS = [
    ([1, 3, 11, 13], [5, 3, 3, 3], dict(pads=[1, 1, 1, 1]), "relu"),
    ([1, 4, 12, 10], [7, 4, 3, 3], dict(pads=[1, 0, 2, 1], strides=[2, 2]), None),
    ([2, 4, 9, 9], [6, 2, 3, 3], dict(pads=[1, 1, 1, 1], group=2), "relu"),
    ([1, 2, 9, 9], [3, 2, 3, 3], dict(pads=[2, 1, 2, 1], dilations=[2, 2]), None),
    ([1, 8, 6, 7], [9, 8, 1, 1], {}, "relu"),
    ([1, 8, 6, 7], [9, 8, 1, 1], dict(strides=[2, 2]), None),
    ([1, 6, 10, 11], [6, 1, 3, 3], dict(pads=[1, 1, 1, 1], group=6), "relu"),
    ([1, 6, 10, 11], [6, 1, 3, 3], dict(pads=[0, 0, 1, 1], strides=[2, 2], group=6), None),
    ([1, 5, 7, 20], [5, 1, 5, 3], dict(pads=[2, 1, 2, 1], group=5, dilations=[1, 2]), "relu"),
    ([1, 1, 49, 10], [10, 1, 10, 4], dict(pads=[4, 1, 5, 1], strides=[2, 2]), "relu"),
    ([1, 3, 20], [4, 3, 5], dict(strides=[2], pads=[2, 2]), None),
    ([1, 16, 33, 35], [17, 16, 3, 3], dict(pads=[1, 1, 1, 1]), "residual"),
    # few pixels, many channels: tiles with their vectors along the channels
    ([1, 32, 3, 3], [40, 32, 1, 1], {}, "residual"),
    ([1, 16, 4, 5], [27, 16, 3, 3], dict(pads=[1, 1, 1, 1]), "relu"),
    ([1, 8, 3, 3], [12, 4, 1, 1], dict(group=2), None),
    # 13 pixels, read in place: 8 + 4 + 1 (AVX2: a vector, half a vector, a float)
    ([1, 4, 1, 13], [3, 4, 1, 1], {}, "relu"),
    # 3x3 stride 1 (winograd's): images not a multiple of its 4x4 tiles, of 2x2 and 1x1
    # pixels, unpadded and unevenly padded, 1 and 17 channels, two images
    ([1, 1, 2, 2], [3, 1, 3, 3], dict(pads=[1, 1, 1, 1]), "relu"),
    ([1, 17, 1, 1], [4, 17, 3, 3], dict(pads=[1, 1, 1, 1]), None),
    ([2, 17, 9, 6], [19, 17, 3, 3], {}, "residual"),
    ([1, 3, 6, 10], [8, 3, 3, 3], dict(pads=[0, 1, 2, 0]), "relu"),
    # group convolutions (RegNet's): channels a group not a multiple of the vector, stride
    # 2 rows split into column phases by shuffles (whole, half vectors, floats), one phase
    # only (1x1, even dilation), a stride along one axis, bands of rows refilled per group
    ([1, 12, 15, 17], [9, 4, 3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2], group=3), "residual"),
    ([2, 10, 20, 37], [10, 2, 3, 3], dict(pads=[0, 1, 2, 1], strides=[2, 2], group=5), "relu"),
    ([1, 6, 9, 41], [4, 3, 1, 1], dict(strides=[2, 2], group=2), None),
    ([1, 4, 11, 40], [6, 2, 3, 3], dict(pads=[2, 2, 2, 2], strides=[2, 2], dilations=[2, 2],
                                        group=2), "relu"),
    ([1, 4, 8, 19], [4, 2, 3, 3], dict(pads=[1, 1, 1, 1], strides=[1, 2], group=2), None),
    ([1, 48, 30, 30], [24, 16, 3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2], group=3), "residual"),
    # stride 4 along the row: split into its four column phases by shuffles (whole and
    # half vectors, floats), and into three (the fourth read by no tap) for a depthwise
    ([1, 3, 9, 45], [5, 3, 3, 5], dict(pads=[1, 1, 1, 2], strides=[2, 4]), "relu"),
    ([1, 6, 7, 70], [6, 1, 3, 3], dict(pads=[1, 1, 1, 1], strides=[1, 4], group=6), None),
    # (BANDED_STORE) implicit's channel-vector tiles on an image whose panel outgrows half
    # the L1: stored through a scratch band of rows, each band transposed back once summed
    # -- channels and pixels not a multiple of the vector, a leftover band, uneven pads and
    # two images, a residual; Swish (stride 1 only: ops/conv/implicit.py's _store_rows)
    ([2, 24, 20, 14], [37, 24, 3, 3], dict(pads=[1, 0, 2, 1]), "residual"),
    ([1, 24, 21, 13], [37, 24, 3, 3], dict(pads=[1, 1, 1, 1]), "swish"),
    # 3x3 with few pixels, many channels (TRANSPOSED_IMPLICIT): implicit's channel-vector
    # tiles stored through a scratch panel, transposed back lanes x lanes at a time --
    # pixels and channels (a group's) not a multiple of the vector, stride 2 with uneven
    # pads, two groups, two images, Swish; whole-row groups and leftover rows, a residual
    ([2, 48, 5, 6], [50, 24, 3, 3], dict(pads=[1, 0, 1, 1], strides=[2, 2], group=2), "swish"),
    ([2, 40, 5, 7], [37, 40, 3, 3], dict(pads=[1, 1, 1, 1]), "residual"),
    # 1x1 with few pixels, many channels (TRANSPOSED_1X1): the channel-vector tiles' sums
    # transposed back lanes x lanes at a time: pixels and channels not a multiple of the
    # vector, two groups, two images, Swish and a residual run on the pixel vectors; one
    # pixel (a squeeze-excitation's): the tiles stored straight, the chain on channel vectors
    ([1, 96, 3, 5], [130, 48, 1, 1], dict(group=2), "swish"),
    ([2, 64, 2, 7], [90, 64, 1, 1], {}, "residual"),
    ([2, 40, 1, 1], [37, 40, 1, 1], {}, "residual"),
    # (K_BLOCKED_1X1) a sum longer than AVX2's block of input channels (ops/conv/gemm.py
    # _k_block: 128 a panel of 16 channels): a first block, a second resumed from the
    # scratch, a shorter last one; two images, channels not a multiple of the vector
    ([2, 300, 3, 5], [37, 300, 1, 1], {}, "residual"),
]
#: the CONVS that run gemm1x1 in the transposed orientation on every SIMD target
TRANSPOSED_1X1 = (len(CONVS) - 4, len(CONVS) - 3, len(CONVS) - 2, len(CONVS) - 1)
#: the CONVS whose transposed gemm1x1 sums run in blocks of input channels on AVX2
K_BLOCKED_1X1 = (len(CONVS) - 1,)
#: the CONVS that run implicit in the transposed orientation on every SIMD target
TRANSPOSED_IMPLICIT = (len(CONVS) - 6, len(CONVS) - 5)
#: the CONVS that run implicit's channel-vector tiles stored in bands of rows (SIMD targets)
BANDED_STORE = (len(CONVS) - 8, len(CONVS) - 7)


def conv_zoo(path):
    nodes, inputs, outputs, inits = [], {}, {}, {}
    for k, (xs, ws, attrs, then) in enumerate(CONVS):
        inputs[f"x{k}"] = xs
        inits[f"w{k}"], inits[f"b{k}"] = w(*ws), w(ws[0])
        conv = f"c{k}" if then else f"y{k}"
        nodes.append(helper.make_node("Conv", [f"x{k}", f"w{k}", f"b{k}"], [conv], **attrs))
        if then == "relu":
            nodes.append(helper.make_node("Relu", [conv], [f"y{k}"]))
        elif then == "residual":  # a second input of the output's shape, fused in the epilogue
            inputs[f"r{k}"] = [xs[0], ws[0]] + _out_spatial(xs, ws, attrs)
            nodes.append(helper.make_node("Add", [conv, f"r{k}"], [f"s{k}"]))
            nodes.append(helper.make_node("Relu", [f"s{k}"], [f"y{k}"]))
        elif then == "swish":
            nodes.append(helper.make_node("Sigmoid", [conv], [f"s{k}"]))
            nodes.append(helper.make_node("Mul", [conv, f"s{k}"], [f"y{k}"]))
        outputs[f"y{k}"] = len(xs)
    return save_model(path, nodes, inputs, outputs, inits)


def _out_spatial(xs, ws, attrs):
    sizes = []
    spatial = len(xs) - 2
    pads = attrs.get("pads", [0] * 2 * spatial)
    for i in range(spatial):
        s = attrs.get("strides", [1] * spatial)[i]
        d = attrs.get("dilations", [1] * spatial)[i]
        sizes.append((xs[2 + i] + pads[i] + pads[spatial + i] - d * (ws[2 + i] - 1) - 1) // s + 1)
    return sizes


def gemm_zoo(path):
    inputs = {"a": [5, 19], "v": [19], "m3": [2, 7, 19], "q": [2, 3, 6, 5], "k": [2, 1, 5, 13],
              "r": [2, 7, 21], "long": [13, 1200], "lb": [1200, 21]}
    inits = {"w": w(19, 21), "wt": w(21, 19), "c": w(21), "cm": w(5, 1), "w2": w(19, 3),
             "w3": w(1200, 37) * 0.1}
    nodes = [
        helper.make_node("Gemm", ["a", "wt", "c"], ["g1"], transB=1),
        helper.make_node("Relu", ["g1"], ["y1"]),
        helper.make_node("Gemm", ["a", "w", "cm"], ["y2"]),
        helper.make_node("MatMul", ["v", "w"], ["y3"]),  # a vector times a matrix
        helper.make_node("MatMul", ["m3", "w"], ["mm"]),  # batch folded into rows, + bias + residual
        helper.make_node("Add", ["mm", "c"], ["mb"]),
        helper.make_node("Add", ["r", "mb"], ["y4"]),
        helper.make_node("MatMul", ["q", "k"], ["y5"]),  # both computed, broadcast batches
        helper.make_node("MatMul", ["a", "w2"], ["y6"]),  # fewer columns than a vector
        helper.make_node("Gemm", ["a", "wt", "c"], ["y7"], transB=1, alpha=0.5),  # reference only
        # a sum too long for a panel in L1: in chunks (on CPUs with a cache)
        helper.make_node("MatMul", ["long", "w3"], ["l8"]),
        helper.make_node("Relu", ["l8"], ["y8"]),
        helper.make_node("MatMul", ["long", "lb"], ["y9"]),
    ]
    outputs = {"y1": 2, "y2": 2, "y3": 1, "y4": 3, "y5": 4, "y6": 2, "y7": 2, "y8": 2, "y9": 2}
    return save_model(path, nodes, inputs, outputs, inits)


def optimized_zoo(tmp_path):
    path = str(conv_zoo(tmp_path / "convs.onnx"))
    return optimize(import_model(path), path)


def verify(scons, model, target, tactic):
    r = scons(f"model={model}", f"target={target}", f"tactic={tactic}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[verify]" in r.stdout and "warning" not in r.stdout + r.stderr
    return r


@pytest.mark.parametrize("target, lanes", TARGETS)
@pytest.mark.parametrize("tactic", ["direct", *slow("gemm1x1", "im2col", "implicit", "depthwise",
                                                   "winograd")])
@pytest.mark.slow
def test_every_conv_tactic_matches_onnxruntime(scons, tmp_path, target, lanes, tactic):
    model = conv_zoo(tmp_path / "convs.onnx")
    if tactic == "winograd" and lanes == 1:  # not on a scalar CPU: its RAM is worth more
        r = scons(f"model={model}", f"target={target}", f"tactic=Conv:{tactic}", "verify")
        assert r.returncode != 0 and "tactic=Conv:winograd chose nothing" in r.stdout + r.stderr
        return
    verify(scons, model, target, f"Conv:{tactic}")
    chosen = json.loads((scons.build_dir / target / "convs" / "tactics.json").read_text())
    assert tactic in {n["tactic"] for n in chosen["nodes"]}
    kernels = (scons.build_dir / target / "convs" / "convs_kernels.c").read_text()
    assert ("vector_size" in kernels) == (lanes > 1 and tactic != "direct")
    if lanes > 1 and tactic in ("gemm1x1", "implicit"):  # both orientations ran
        template = {"gemm1x1": "conv2d_1x1", "implicit": "conv2d_implicit"}[tactic]
        tiles = set(re.findall(rf"_{template}_f32_([ct])\d+x\d+", kernels))
        assert tiles == {"c", "t"}, tiles
    if lanes >= 8 and tactic == "gemm1x1":  # the 4-float tail: half (AVX2), quarter (AVX-512)
        assert "vector_size(16)" in kernels
    if lanes > 1 and tactic == "gemm1x1":  # a panel's tiles prefetched the next panel
        ones = [k for k in kernels.split("\n}\n") if "_conv2d_1x1_f32_c" in k]
        assert any("__builtin_prefetch" in k for k in ones), kernels
    if lanes == 8 and tactic == "gemm1x1":  # a long sum in blocks resumed from the scratch
        assert any("for (int k0 = " in k for k in ones), kernels


@pytest.mark.parametrize("target, lanes", TARGETS)
@pytest.mark.parametrize("tactic", ["reference", "blocked"])
def test_every_matmul_tactic_matches_onnxruntime(scons, tmp_path, target, lanes, tactic):
    model = gemm_zoo(tmp_path / "gemms.onnx")
    verify(scons, model, target, f"Gemm:{tactic},MatMul:{tactic}")
    kernels = (scons.build_dir / target / "gemms" / "gemms_kernels.c").read_text()
    if lanes == 8 and tactic == "blocked":  # 13 computed columns: 8 + 4 + 1
        assert "vector_size(16)" in kernels
    if lanes == 4 and tactic == "blocked":  # the long sums ran in cached chunks
        assert "for (int k0 = " in kernels  # (AVX2's and AVX-512's tiles sum whole)


def tall_zoo(path):
    """MatMuls of more rows than a tall tile (AVX-512: 13-14) with tails everywhere: rows,
    columns (packed, and computed: vectors, half vectors, floats), odd sums; a bias, Relu
    and a residual fused; transposed weights; batches broadcast both ways; A's rows 4 KiB
    apart (one L1 set: at most 8 rows); weights too big for the level 2, their next panel
    prefetched (x86: 29 rows, 300 columns)."""
    inputs = {"x": [1, 31, 23], "r": [1, 31, 45], "g": [33, 17], "p": [3, 29, 17],
              "q": [3, 17, 45], "s": [2, 1, 27, 9], "t": [1, 3, 9, 20], "z": [1, 21, 1024],
              "v": [1, 29, 256]}
    inits = {"w": w(23, 45), "c": w(45), "wt": w(37, 17), "ct": w(37), "wz": w(1024, 37),
             "wv": w(256, 300), "cv": w(300)}
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m1"]),
        helper.make_node("Add", ["m1", "c"], ["b1"]),
        helper.make_node("Relu", ["b1"], ["y1"]),
        helper.make_node("MatMul", ["x", "w"], ["m2"]),
        helper.make_node("Add", ["m2", "c"], ["b2"]),
        helper.make_node("Add", ["b2", "r"], ["y2"]),
        helper.make_node("Gemm", ["g", "wt", "ct"], ["g3"], transB=1),
        helper.make_node("Relu", ["g3"], ["y3"]),
        helper.make_node("MatMul", ["p", "q"], ["y4"]),
        helper.make_node("MatMul", ["s", "t"], ["m5"]),
        helper.make_node("Mul", ["m5", "m5"], ["y5"]),
        helper.make_node("MatMul", ["z", "wz"], ["m6"]),
        helper.make_node("Add", ["m6", "ct"], ["b6"]),
        helper.make_node("Relu", ["b6"], ["y6"]),
        helper.make_node("MatMul", ["v", "wv"], ["m7"]),
        helper.make_node("Add", ["m7", "cv"], ["y7"]),
    ]
    outputs = {"y1": 3, "y2": 3, "y3": 2, "y4": 3, "y5": 4, "y6": 3, "y7": 3}
    return save_model(path, nodes, inputs, outputs, inits)


@pytest.mark.parametrize("target, lanes", TARGETS[:2] + TARGETS[3:])
def test_tall_matmul_tiles_match_onnxruntime(scons, tmp_path, target, lanes):
    model = tall_zoo(tmp_path / "tall.onnx")
    verify(scons, model, target, "Gemm:blocked,MatMul:blocked")
    kernels = (scons.build_dir / target / "tall" / "tall_kernels.c").read_text()
    rows = {int(r) for r in re.findall(r"gemm_blocked_t(\d+)x", kernels)}
    aliased = {int(r) for r in re.findall(r"gemm_blocked_t(\d+)x\d+p_f32_21x1024x37n", kernels)}
    assert aliased and max(aliased) <= 8  # (and 21 rows leave a row tail)
    ahead = [f for f in kernels.split("\n}\n") if "_f32_29x256x300n" in f]
    assert len(ahead) == 1 and ("__builtin_prefetch" in ahead[0]) == (lanes >= 8)
    if lanes == 16:  # tall tiles, whole sums, with a row tail
        assert max(rows) > 8 and "for (int k0 = " not in kernels
    else:
        assert max(rows) <= 8
    if lanes > 4:  # the bias stays out of the registers that tall tiles need (not on NEON's 32)
        assert '__asm__ volatile("" : "+r"(e0));' in kernels


POOLS = [("MaxPool", [1, 3, 11, 13], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
         ("MaxPool", [1, 2, 9, 9], dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 0, 1, 0],
                                        ceil_mode=1)),
         ("MaxPool", [2, 4, 16, 16], dict(kernel_shape=[2, 2], strides=[2, 2])),
         ("AveragePool", [1, 3, 12, 10], dict(kernel_shape=[3, 2], strides=[1, 2])),
         ("AveragePool", [1, 3, 7, 7], dict(kernel_shape=[3, 3], strides=[2, 2],
                                            pads=[1, 1, 1, 1], count_include_pad=1)),
         ("AveragePool", [1, 3, 8, 8], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
         ("AveragePool", [1, 64, 25, 5], dict(kernel_shape=[25, 5])),  # a global pool
         ("MaxPool", [1, 5, 3, 7], dict(kernel_shape=[3, 7])),
         ("MaxPool", [1, 3, 20], dict(kernel_shape=[3], strides=[2])),
         ("GlobalAveragePool", [1, 6, 5, 5], {}), ("GlobalMaxPool", [2, 3, 4, 5], {}),
         ("GlobalAveragePool", [1, 3, 2, 1], {})]


def pool_and_elementwise_zoo(path):
    nodes, inputs, outputs = [], {}, {}
    for k, (op, shape, attrs) in enumerate(POOLS):
        nodes.append(helper.make_node(op, [f"x{k}"], [f"y{k}"], **attrs))
        inputs[f"x{k}"], outputs[f"y{k}"] = shape, len(shape)
    nodes += [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["e0"]),
              helper.make_node("Mul", ["a", "c"], ["e1"]),  # a per-row broadcast
              helper.make_node("Sub", ["d", "a"], ["t"]),
              helper.make_node("Clip", ["t", "lo", "hi"], ["e2"]),
              helper.make_node("Div", ["a", "half"], ["e3"]),
              helper.make_node("HardSwish", ["a"], ["h"]),
              helper.make_node("LeakyRelu", ["h"], ["e4"], alpha=0.3),
              helper.make_node("HardSigmoid", ["e"], ["e5"]),
              helper.make_node("Add", ["e", "row"], ["e6"])]
    inputs.update(a=[2, 3, 19], b=[2, 3, 19], d=[3, 19], e=[5, 3])
    outputs.update(e0=3, e1=3, e2=3, e3=3, e4=3, e5=2, e6=2)
    inits = {"c": w(3, 1), "half": np.array(0.5, np.float32), "row": w(3),
             "lo": np.array(-0.3, np.float32), "hi": np.array(0.4, np.float32)}
    return save_model(path, nodes, inputs, outputs, inits)


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("aarch64")])
@pytest.mark.parametrize("tactic", ["reference", "vector"])
def test_pooling_and_elementwise_tactics_match_onnxruntime(scons, tmp_path, target, tactic):
    model = pool_and_elementwise_zoo(tmp_path / "pools.onnx")
    ops_ = ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Add", "Mul", "Sub",
            "Div", "HardSwish", "HardSigmoid")
    verify(scons, model, target, ",".join(f"{op}:{tactic}" for op in ops_))
    kernels = (scons.build_dir / target / "pools" / "pools_kernels.c").read_text()
    assert ("vector_size" in kernels) == (tactic == "vector")


@pytest.mark.unit
def test_orientations_both_appear_in_the_conv_zoo(tmp_path):
    graph = optimized_zoo(tmp_path)
    ones = [n for n in graph.nodes
            if n.op == "Conv" and ops.applicable(n, graph, AVX2)[1].name == "gemm1x1"]
    tactics.annotate(graph, tactics.Selection(AVX2, {n.name: "gemm1x1" for n in ones}))
    assert {ops.lower(n, graph).params["transposed"] for n in ones} == {True, False}


def zoo_cases(tmp_path, target, indices, tactic):
    """(graph, cpu, nodes) of the optimized conv zoo's CONVS ``indices``, annotated with
    ``tactic`` on ``target``."""
    graph = optimized_zoo(tmp_path)
    cpu = load_target(target).cpu
    convs = {n.inputs[0]: n for n in graph.nodes if n.op == "Conv"}
    cases = [convs[f"x{k}"] for k in indices]
    tactics.annotate(graph, tactics.Selection(cpu, {n.name: tactic for n in cases}))
    return graph, cpu, cases


@pytest.mark.unit
@pytest.mark.parametrize("target", ["x86_64", "x86_64-avx512", "aarch64", "armv7a"])
def test_transposed_1x1_cases_run_the_transposed_tiles(tmp_path, target):
    """The conv zoo's TRANSPOSED_1X1 cases reach that orientation (and its scratch panel) on
    every SIMD target, so the verify tests above run its transposes and tails."""
    graph, cpu, cases = zoo_cases(tmp_path, target, TRANSPOSED_1X1, "gemm1x1")
    for node in cases:
        call = ops.lower(node, graph)
        p = call.params
        assert p["transposed"], node.name
        pixels = p["oh"] * p["ow"]
        assert call.scratch_bytes == (4 * pixels * p["vecs"] * p["lanes"] if pixels > 1 else 0)


@pytest.mark.unit
@pytest.mark.parametrize("target, blocked", [("x86_64", True), ("x86_64-avx512", False),
                                              ("aarch64", False), ("armv7a", False)])
def test_long_transposed_1x1_sums_run_in_blocks_on_avx2(tmp_path, target, blocked):
    """The K_BLOCKED_1X1 case sums in blocks of input channels on AVX2 alone (the verify
    tests above run them there), the others in one block: their C as before."""
    graph, cpu, cases = zoo_cases(tmp_path, target, K_BLOCKED_1X1, "gemm1x1")
    for node in cases:
        p = ops.lower(node, graph).params
        assert p["transposed"], node.name
        assert bool(p["kblock"]) == blocked, p["kblock"]
        if blocked:  # a first block, one resumed in the loop, a shorter last one
            assert p["c"] // p["kblock"] >= 2 and p["c"] % p["kblock"], p["kblock"]


@pytest.mark.unit
@pytest.mark.parametrize("target", ["x86_64", "x86_64-avx512", "aarch64", "armv7a"])
def test_transposed_implicit_cases_run_the_transposed_tiles(tmp_path, target):
    """The conv zoo's TRANSPOSED_IMPLICIT cases reach implicit's channel-vector tiles, their
    scratch panel after the planes, and both tiles over groups of whole rows and tiles
    of one row."""
    graph, cpu, cases = zoo_cases(tmp_path, target, TRANSPOSED_IMPLICIT, "implicit")
    grouped = single = False
    for node in cases:
        call = ops.lower(node, graph)
        p = call.params
        assert p["transposed"] and p["panel_store"], node.name
        planes = p["c"] // p["group"] * p["channel_stride"] + p["slack"]
        assert call.scratch_bytes == 4 * (planes + p["oh"] * p["ow"] * p["vecs"] * p["lanes"])
        grouped |= p["row_group"] > 1
        single |= p["row_group"] == 1 or p["oh"] % p["row_group"] > 0
    assert grouped and single


@pytest.mark.unit
@pytest.mark.parametrize("target", ["x86_64", "x86_64-avx512", "aarch64"])
def test_banded_store_cases_store_bands_of_rows(tmp_path, target):
    """The conv zoo's BANDED_STORE cases (verified with the implicit tactic above) run
    implicit's channel-vector tiles through a scratch of fewer rows than the image's,
    with a leftover band: their panel of the whole image outgrows half the L1."""
    graph, cpu, cases = zoo_cases(tmp_path, target, BANDED_STORE, "implicit")
    for node in cases:
        call = ops.lower(node, graph)
        p = call.params
        assert p["transposed"] and p["panel_store"], node.name
        assert 1 <= p["store_rows"] < p["oh"] and p["oh"] % p["store_rows"], node.name
        assert 4 * p["oh"] * p["ow"] * p["vecs"] * p["lanes"] > cpu.l1d_bytes // 2
        planes = p["c"] // p["group"] * p["channel_stride"] + p["slack"]
        band = p["store_rows"] * p["ow"] * p["vecs"] * p["lanes"]
        assert call.scratch_bytes == 4 * (planes + band)


@pytest.mark.unit
def test_winograd_runs_on_256_bit_vectors_where_wider_ones_gain_no_multiply_adds():
    """On a 512-bit target whose multiply-adds run no faster on 512-bit vectors (Zen 4's
    double-pumped AVX-512: [cpu] fma_bytes = 64) winograd is planned on 256-bit vectors
    (ops/conv/winograd.py's WINOGRAD_VECTOR_BYTES) and its estimate divided by how many times tiling.py
    over-counts 512-bit multiply-adds there (2): ResNet-18's 256 -> 256 3x3 on 14x14 runs
    F(4x4) in the tiles and chunks of x86_64's (AVX-512VL's 32 registers allow taller
    ones) at about half x86_64's estimate. Intel's AVX-512 (two 512-bit units) and
    narrower targets plan on their own vectors."""
    from onnxcc.ops.conv import winograd as conv
    g = dict(n=1, c=256, h=14, w=14, m=256, group=1, kh=3, kw=3, sh=1, sw=1, dh=1, dw=1,
             pt=1, pl=1, pb=1, pr=1, oh=14, ow=14, bias=True, epilogue=[])
    zen4, intel = load_target("x86_64-zen4").cpu, load_target("x86_64-avx512").cpu
    narrow = load_target("x86_64").cpu
    assert conv._winograd_cpu(zen4) == (replace(zen4, simd_bytes=32), 2)
    assert conv._winograd_cpu(intel) == (intel, 1)
    assert conv._winograd_cpu(narrow) == (narrow, 1)
    cycles, size, rows, vecs, cols = conv._winograd_plan(g, zen4)
    assert (size, vecs, cols) == conv._winograd_plan(g, narrow)[1:2] + (2, 16)
    assert cycles == conv._winograd_cost(g, replace(zen4, simd_bytes=32), size)[0] / 2
    assert conv._winograd_plan(g, intel)[1:] == conv._winograd_cost(g, intel, size)[1:]
    assert conv._winograd_plan(g, load_target("aarch64").cpu)[1] == 4


@pytest.mark.slow
@pytest.mark.skipif("avx512f" not in host_cpu_flags(), reason="this host has no AVX-512")
def test_winograd_on_256_bit_vectors_of_a_512_bit_target_matches_onnxruntime(scons, tmp_path):
    """x86_64-zen4 builds winograd's kernel on 256-bit vectors inside AVX-512 code (the
    other kernels on 512-bit ones): the conv zoo's 3x3 cases, tails and chunks, verified."""
    model = conv_zoo(tmp_path / "convs.onnx")
    verify(scons, model, "x86_64-zen4", "Conv:winograd")
    kernels = (scons.build_dir / "x86_64-zen4" / "convs" / "convs_kernels.c").read_text()
    widths = {int(w) for w in re.findall(r"_wino\d_\d+x(\d+)_", kernels)}  # tiles' columns
    assert widths and all(w % 8 == 0 for w in widths) and any(w % 16 for w in widths)


@pytest.mark.unit
def test_opt_size_runs_the_reference_kernels_and_speed_the_cheapest(tmp_path):
    graph = optimized_zoo(tmp_path)
    small = tactics.select(graph, AVX2, "size")
    assert {n["tactic"] for n in small["nodes"]} == {"direct"}
    fast = tactics.select(graph, AVX2, "speed")
    for n in fast["nodes"]:
        costs = n["estimated_cycles"]
        assert costs[n["tactic"]] == min(costs.values())
        assert costs[n["tactic"]] < costs["direct"]  # SIMD and tiles beat the naive loop


@pytest.mark.unit
def test_forced_tactics_by_op_and_node(tmp_path):
    graph = optimized_zoo(tmp_path)
    node = next(n for n in graph.nodes if n.op == "Conv")
    chosen = tactics.select(graph, AVX2, "speed", {"Conv": "im2col", node.name: "direct"})
    by_node = {n["node"]: n for n in chosen["nodes"]}
    assert by_node[node.name]["tactic"] == "direct" and by_node[node.name]["by"] == "forced"
    assert {n["tactic"] for n in chosen["nodes"] if n["node"] != node.name} == {"im2col"}
    # gemm1x1 runs only the 1x1 convolutions: forced there, chosen by cost elsewhere
    some = tactics.select(graph, AVX2, "speed", {"Conv": "gemm1x1"})
    assert {n["by"] for n in some["nodes"]} == {"forced", "speed"}


@pytest.mark.unit
@pytest.mark.parametrize("forced, message", [
    ({"Conv": "fft"}, "op Conv has no tactic 'fft'"),
    ({"Softmax": "blocked"}, "op Softmax has no tactic 'blocked'"),
    ({"Gemm": "blocked"}, "chose nothing"),
])
def test_bad_forced_tactics_are_one_line_errors(tmp_path, forced, message):
    graph = optimized_zoo(tmp_path)
    with pytest.raises(OnnxccError, match=message):
        tactics.select(graph, AVX2, "speed", forced)


@pytest.mark.unit
def test_forcing_a_tactic_on_a_node_it_cannot_run_names_those_that_can(tmp_path):
    graph = optimized_zoo(tmp_path)
    node = next(n for n in graph.nodes if n.op == "Conv")  # a 3x3 convolution
    with pytest.raises(OnnxccError, match="cannot run node .*tactics that can: direct, im2col, implicit"):
        tactics.select(graph, AVX2, "speed", {node.name: "gemm1x1"})


@pytest.mark.unit
def test_tactic_option_forms(tmp_path):
    assert tactics.parse_forced("Conv:im2col, fc1:reference") == {"Conv": "im2col",
                                                                 "fc1": "reference"}
    path = tmp_path / "t.json"
    path.write_text('{"Conv": "direct"}')
    assert tactics.parse_forced(str(path)) == {"Conv": "direct"}
    path.write_text('["Conv"]')
    with pytest.raises(OnnxccError, match="must map op types or node names"):
        tactics.parse_forced(str(path))
    with pytest.raises(OnnxccError, match="is not OP:TACTIC"):
        tactics.parse_forced("im2col")


def test_bad_options_fail_in_one_line(scons):
    r = scons("model=models/tiny_cnn.onnx", "opt=fast")
    assert r.returncode != 0 and "opt=fast is not one of speed, size" in r.stderr
    r = scons("model=models/tiny_cnn.onnx", "tactic=Conv:nope")
    assert r.returncode != 0 and "op Conv has no tactic 'nope'" in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.slow
def test_tactic_file_is_a_dependency(scons, tmp_path):
    choice = tmp_path / "choice.json"
    choice.write_text('{"Conv": "direct"}')
    r = scons("model=models/tiny_cnn.onnx", f"tactic={choice}")
    assert r.returncode == 0, r.stdout + r.stderr
    choice.write_text('{"Conv": "im2col"}')
    r = scons("model=models/tiny_cnn.onnx", f"tactic={choice}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Conv:im2col" in r.stdout  # the select stage ran again on the edited file


BEFORE = json.loads(open(os.path.join(REPO, "tests", "data",
                                      "model_code_before_tactics.json")).read())["code_bytes"]


@pytest.mark.parametrize("model", sorted(BEFORE["armv7"]))
def test_opt_size_is_never_bigger_than_before_tactics(scons, model):
    for target in ("armv7", "x86_64"):
        r = scons(f"model=models/{model}.onnx", f"target={target}", "opt=size")
        assert r.returncode == 0, r.stdout + r.stderr
        sizes = json.loads((scons.build_dir / target / model / "size.json").read_text())
        assert sizes["flash"]["kernels"] + sizes["flash"]["model"] <= BEFORE[target][model]


def test_bench_on_the_host_prints_the_median(scons):
    r = scons("model=models/tiny_cnn.onnx", "bench")
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(l for l in r.stdout.splitlines() if l.startswith("[bench]"))
    assert "us per inference (median of 200 runs" in line
    report = json.loads((scons.build_dir / "x86_64" / "tiny_cnn" / "bench" / "bench.json").read_text())
    assert report["unit"] == "ns" and 0 < report["min"] <= report["median"] <= report["max"]


def test_host_bench_harness_takes_runs_and_warmup(scons):
    """Benchmark scripts run the harness in short chunks with few warm-up runs."""
    import subprocess
    from onnxcc.verbs import bench
    from onnxcc.target import load_target
    assert scons("model=models/tiny_cnn.onnx", "bench").returncode == 0
    elf = str(scons.build_dir / "x86_64" / "tiny_cnn" / "bench" / "tiny_cnn_bench")
    cmd = bench.command(load_target("x86_64"), elf, 7, 0)
    assert cmd[-2:] == ["7", "0"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert len(bench.parse(out)) == 7


@pytest.mark.emulated
def test_bench_on_cortex_m_counts_instructions_exactly(scons):
    counts = {}
    for opt in ("size", "speed"):
        r = scons("model=models/kws.onnx", "target=armv7", f"opt={opt}", "bench")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "instructions per inference" in r.stdout
        report = json.loads((scons.build_dir / "armv7" / "kws" / "bench" / "bench.json").read_text())
        # deterministic under -icount, to one SysTick tick (where a run starts within one)
        assert report["max"] - report["min"] <= 40
        counts[opt] = report["median"]
    assert counts["speed"] < counts["size"] / 2  # register tiles pay on a scalar FPU too


def test_bench_names_the_targets_that_can(scons):
    r = scons("model=models/tiny_cnn.onnx", "target=aarch64", "bench")
    assert r.returncode != 0
    assert "target aarch64 cannot bench" in r.stderr and "Traceback" not in r.stderr


def test_weights_are_packed_for_their_kernel(scons):
    r = scons("model=models/fc_autoencoder.onnx", "tactic=Gemm:blocked")
    assert r.returncode == 0, r.stdout + r.stderr
    out = scons.build_dir / "x86_64" / "fc_autoencoder"
    weights = (out / "fc_autoencoder_weights.S").read_text()
    run = (out / "fc_autoencoder.c").read_text()
    packed = [l.split()[-1] for l in weights.splitlines() if l.startswith("\t.globl") and "_p" in l]
    assert packed and all(symbol in run for symbol in packed)
    # a weight read only packed is not in flash twice
    assert weights.count("packed panels") == len(packed) == 10
    assert "fc_autoencoder_w_fc1_weight_bn:" not in weights


@pytest.mark.slow
@pytest.mark.emulated
def test_autotune_measures_records_and_later_builds_reuse(scons, tmp_path):
    model = tmp_path / "kws.onnx"
    model.write_bytes(open(os.path.join(REPO, "models", "kws.onnx"), "rb").read())
    args = (f"model={model}", "target=armv7", "bench")
    r = scons(*args)  # the cost model's choice
    assert r.returncode == 0, r.stdout + r.stderr
    bench = scons.build_dir / "armv7" / "kws" / "bench" / "bench.json"
    estimated = json.loads(bench.read_text())["median"]
    r = scons(*args, "autotune=1")
    assert r.returncode == 0, r.stdout + r.stderr
    record = tmp_path / "kws.tactics.armv7.json"
    tuned = json.loads(record.read_text())
    assert tuned["conv1"] in ("direct", "im2col", "implicit") and "pw1" in tuned
    measured = json.loads(bench.read_text())["median"]
    # instruction counts add up step by step: the measured choice is never worse
    assert measured <= estimated + 40
    r = scons(*args)  # a later build reuses the record without measuring
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"measured ({record})" in r.stdout
    chosen = json.loads((scons.build_dir / "armv7" / "kws" / "tactics.json").read_text())
    assert {n["node"]: n["tactic"] for n in chosen["nodes"] if n["node"] in tuned} == tuned


#: narrow images of many channels: the transposed implicit tile over groups of whole
#: output rows -- odd row counts (a leftover row), stride 2 with uneven pads, channels
#: not a multiple of the tile's vectors, groups, two images, bias, ReLU and a residual
ROW_GROUPS = [
    ([2, 16, 7, 7], [40, 16, 3, 3], dict(pads=[1, 1, 1, 1]), "residual"),
    ([1, 24, 6, 5], [36, 24, 3, 3], dict(pads=[1, 0, 2, 1], strides=[2, 2]), "relu"),
    ([1, 32, 3, 3], [48, 32, 3, 3], dict(pads=[1, 1, 1, 1]), "relu"),
    ([1, 20, 5, 4], [72, 10, 3, 3], dict(pads=[1, 1, 1, 1], group=2), None),
    ([1, 16, 14, 14], [72, 16, 3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2]), "residual"),
]


def cases_model(path, cases):
    """One model of independent Convs (input shape, weight shape, attributes, what follows:
    None, "relu" or "residual"), each with a bias."""
    nodes, inputs, outputs, inits = [], {}, {}, {}
    for k, (shape, wshape, attrs, after) in enumerate(cases):
        inputs[f"x{k}"], inits[f"w{k}"], inits[f"b{k}"] = shape, w(*wshape), w(wshape[0])
        nodes.append(helper.make_node("Conv", [f"x{k}", f"w{k}", f"b{k}"], [f"c{k}"], **attrs))
        if after == "relu":
            nodes.append(helper.make_node("Relu", [f"c{k}"], [f"y{k}"]))
        elif after == "residual":
            nodes.append(helper.make_node("Add", [f"c{k}", f"c{k}"], [f"y{k}"]))
        else:
            nodes[-1].output[0] = f"y{k}"
        outputs[f"y{k}"] = 4
    return save_model(path, nodes, inputs, outputs, inits)


@pytest.mark.parametrize("target, lanes", TARGETS[:2] + TARGETS[3:])  # (not the scalar riscv32)
@pytest.mark.slow
def test_implicit_row_groups_match_onnxruntime(scons, tmp_path, target, lanes):
    model = cases_model(tmp_path / "groups.onnx", ROW_GROUPS)
    verify(scons, model, target, "Conv:implicit")
    kernels = (scons.build_dir / target / "groups" / "groups_kernels.h").read_text()
    assert re.search(r"conv2d_implicit_f32_c\d+x\d+r[2-9]_", kernels), kernels


#: group convolutions whose groups' few outputs take long channel-vector tiles on
#: AVX-512 (conv._group_lanes): row groups with a leftover row and two images, 12 outputs
#: a group (part of a vector) at stride 2 with uneven pads, 20 (two vectors, stored float
#: by float), a row split into two tiles, dilation, 15x15 at stride 2; bias, ReLU and a
#: residual fused; the last two take row groups of two vectors, a group's one panel, on
#: aarch64 and x86_64 (the next group's panel prefetched)
GROUP_LANES = [
    ([2, 32, 7, 7], [32, 16, 3, 3], dict(pads=[1, 1, 1, 1], group=2), "residual"),
    ([1, 36, 13, 11], [36, 12, 3, 3], dict(pads=[1, 0, 2, 1], strides=[2, 2], group=3), "relu"),
    ([1, 40, 9, 10], [40, 20, 3, 3], dict(pads=[1, 1, 1, 1], group=2), None),
    ([1, 32, 4, 34], [32, 16, 3, 3], dict(pads=[1, 1, 1, 1], group=2), "relu"),
    ([1, 48, 12, 12], [48, 16, 3, 3], dict(pads=[2, 2, 2, 2], dilations=[2, 2], group=3), "residual"),
    ([1, 32, 30, 30], [32, 16, 3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2], group=2), "relu"),
    ([1, 16, 5, 5], [16, 8, 3, 3], dict(pads=[1, 1, 1, 1], group=2), "residual"),
    ([1, 16, 3, 3], [32, 8, 3, 3], dict(pads=[1, 1, 1, 1], group=2), "relu"),
]


@pytest.mark.unit
@pytest.mark.parametrize("target", ["x86_64", "aarch64", "x86_64-avx512"])
def test_group_lanes_take_long_channel_tiles_on_avx512(tmp_path, target):
    """GROUP_LANES run implicit's channel-vector tiles of more than MAX_ROWS pixels, a
    group's outputs in as few vectors as hold them, on AVX-512; elsewhere conv._group_lanes
    offers none (measured on 512-bit vectors only)."""
    from onnxcc.ops.conv import implicit as conv
    from onnxcc.ops.common import conv_geometry
    from onnxcc.ops.common.tiling import MAX_ROWS
    path = str(cases_model(tmp_path / "lanes.onnx", GROUP_LANES))
    graph = optimize(import_model(path), path)
    cpu = load_target(target).cpu
    cases = [n for n in graph.nodes if n.op == "Conv"]
    tactics.annotate(graph, tactics.Selection(cpu, {n.name: "implicit" for n in cases}))
    for node in cases:
        g = conv_geometry.geometry(node, graph)[0]
        mg, k, _ = conv.gemm_shape(g)
        if cpu.simd_bytes < 64:
            assert conv._group_lanes(g, cpu, mg, k, {"blocks": True}) is None
            continue
        p = ops.lower(node, graph).params
        assert p["transposed"] and p["vecs"] == -(-mg // p["lanes"]), node.name
        assert max(p["rows"], p["row_group"] * p["ow"]) > MAX_ROWS, (node.name, p["rows"])


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("aarch64"), pytest.param("x86_64-avx512", marks=pytest.mark.skipif(
    "avx512f" not in host_cpu_flags(), reason="this host has no AVX-512"))])
@pytest.mark.slow
def test_group_lanes_match_onnxruntime(scons, tmp_path, target):
    verify(scons, cases_model(tmp_path / "lanes.onnx", GROUP_LANES), target, "Conv:implicit")


#: group convolutions whose images outgrow a panel store of half the L1 (their flat tiles
#: store float by float: two images, uneven pads, a residual), a dilated one and one of
#: 15 outputs a group at row stride 2 (conv._flat_tiles)
FLAT_TILES = [
    ([1, 32, 20, 20], [32, 16, 3, 3], dict(pads=[1, 1, 1, 1], group=2), "relu"),
    ([2, 48, 24, 23], [48, 16, 3, 3], dict(pads=[1, 0, 1, 1], group=3), "residual"),
    ([1, 32, 9, 9], [32, 16, 3, 3], dict(pads=[2, 2, 2, 2], dilations=[2, 2], group=2), "relu"),
    ([1, 30, 11, 9], [30, 15, 3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 1], group=2), "residual"),
]


@pytest.mark.unit
@pytest.mark.parametrize("target", ["x86_64", "x86_64-avx512", "aarch64", "armv7a"])
def test_flat_tiles_run_across_rows_on_avx2(tmp_path, target):
    """On AVX2, GROUP_LANES and FLAT_TILES run implicit's channel-vector tiles over runs of
    the image's pixels across its rows (conv._flat_tiles), storing through the panel and
    float by float, in tiles of rows and of rows - 1 pixels; on no other target."""
    path = str(cases_model(tmp_path / "flat.onnx", GROUP_LANES + FLAT_TILES))
    graph = optimize(import_model(path), path)
    cpu = load_target(target).cpu
    cases = [n for n in graph.nodes if n.op == "Conv"]
    tactics.annotate(graph, tactics.Selection(cpu, {n.name: "implicit" for n in cases}))
    stores, sizes = set(), set()
    for node in cases:
        p = ops.lower(node, graph).params
        if not p.get("flat"):
            continue
        assert p["transposed"] and p["row_group"] == 1, node.name
        stores.add(p["panel_store"])
        pixels = p["oh"] * p["ow"]
        sizes |= {p["rows"]} if pixels % p["rows"] == 0 else {p["rows"], p["rows"] - 1}
    if cpu.simd_bytes != 32:
        assert not stores
        return
    assert stores == {True, False} and {5, 6} <= sizes, (stores, sizes)


def test_flat_tiles_match_onnxruntime(scons, tmp_path):
    verify(scons, cases_model(tmp_path / "flat.onnx", FLAT_TILES), "x86_64", "Conv:implicit")


#: wide stride-2 group convolutions whose pixel tiles read planes of bands of several
#: output rows on x86 (conv.GROUP_BAND_L1S): whole bands, a leftover band with two images,
#: uneven pads and a residual, and (AVX-512) 31 rows in bands of 16
GROUP_BANDS = [
    ([1, 32, 41, 112], [32, 16, 3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2], group=2), "relu"),
    ([2, 32, 23, 110], [32, 16, 3, 3], dict(pads=[1, 0, 1, 1], strides=[2, 2], group=2), "residual"),
    ([1, 32, 62, 58], [32, 16, 3, 3], dict(pads=[1, 1, 1, 1], strides=[2, 2], group=2), "relu"),
]


@pytest.mark.unit
@pytest.mark.parametrize("target", ["x86_64", "x86_64-avx512"])
def test_group_bands_take_several_rows_on_x86(tmp_path, target):
    """GROUP_BANDS' pixel tiles run over bands of several output rows, one band left over."""
    path = str(cases_model(tmp_path / "bands.onnx", GROUP_BANDS))
    graph = optimize(import_model(path), path)
    cases = [n for n in graph.nodes if n.op == "Conv"]
    tactics.annotate(graph, tactics.Selection(load_target(target).cpu,
                                              {n.name: "implicit" for n in cases}))
    leftover = False
    for node in cases:
        p = ops.lower(node, graph).params
        if p["transposed"]:
            continue
        assert 1 < p["band"] < p["oh"], (node.name, p["band"])
        leftover |= p["oh"] % p["band"] > 0
    assert leftover


@pytest.mark.parametrize("target", ["x86_64", pytest.param("x86_64-avx512", marks=pytest.mark.skipif(
    "avx512f" not in host_cpu_flags(), reason="this host has no AVX-512"))])
@pytest.mark.slow
def test_group_bands_match_onnxruntime(scons, tmp_path, target):
    verify(scons, cases_model(tmp_path / "bands.onnx", GROUP_BANDS), target, "Conv:implicit")

#!/usr/bin/env python3
"""The model zoo: the networks people export from torchvision and torch.nn, written with
onnx.helper in the op patterns torch.onnx.export emits (torch is not needed).

    .venv/bin/python benchmarks/zoo_models.py [-o build/zoo] [NAME ...]

Each architecture has its real layer shapes (channels, kernels, strides, groups, blocks)
and batch 1; the weights are random, drawn from a seeded numpy generator (He scales,
BatchNormalization with plausible statistics so activations stay bounded), so the files
are reproducible and compute nothing meaningful. Two exporters are imitated:

* "dynamo" (``torch.onnx.export(..., dynamo=True)``, opset 18): BatchNormalization kept,
  ``mean`` as ReduceMean with its axes as an input, flatten as Reshape, linear layers on
  3-D inputs as MatMul + Add, LayerNormalization as one op;
* "torchscript" (opset 13/14): BatchNormalization folded into the convolutions, adaptive
  pooling as GlobalAveragePool + Flatten, ``mean`` as ReduceMean with an axes attribute,
  chunk as Split, LayerNormalization decomposed (ReduceMean, Sub, Pow, Sqrt, Div), the
  RNNs as ONNX LSTM/GRU nodes between Transpose and Squeeze.

ResNet-18 (45 MB of weights) is written with its weights in a side file
(``resnet18.onnx.data``), as torch does for big models. The .onnx files are build
products: never commit them.
"""

import argparse
import os
import sys

import numpy as np
import onnx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "models"))

from make_models import GraphBuilder, fire  # noqa: E402

DEFAULT_OUT = os.path.join(REPO, "build", "zoo")
#: models whose weights go to a side file ``<name>.onnx.data``
EXTERNAL_DATA = {"resnet18"}
TORCH_EPS = 1e-5
#: weight gain of the last layer of a residual branch (see Zoo.cba)
RESIDUAL_GAIN = 0.1


# ---------------------------------------------------------------------------
# Shared blocks
# ---------------------------------------------------------------------------

class Zoo(GraphBuilder):
    """GraphBuilder with the blocks torchvision networks are made of, exported at
    ``opset``: ``keep_bn`` for the dynamo exporter, BatchNorm folded for TorchScript."""

    def __init__(self, name, seed, opset, keep_bn):
        super().__init__(name, seed)
        self.opset, self.keep_bn = opset, keep_bn

    def cba(self, x, cin, cout, k, stride=1, group=1, act="relu", name="conv", gain=None):
        """Conv -> BatchNorm -> activation as the exporter leaves it: a bias-free Conv and
        a BatchNormalization (dynamo), or one Conv with the BatchNorm folded in. Weights
        keep the variance through a ReLU (gain 2) or a linear layer (gain 1); the last
        layer of a residual branch passes a small gain, as trained networks have, so that
        a deep stack of residual Adds does not grow the activations without bound."""
        gain = gain if gain is not None else (2.0 if act else 1.0)
        y = self.conv(x, cin, cout, k, stride, group=group, bias=not self.keep_bn, name=name,
                      gain=gain)
        if self.keep_bn:
            y = self.bn(y, cout, name=name + "_bn", epsilon=TORCH_EPS)
        return self.activation(y, act)

    def activation(self, x, kind):
        if kind == "silu":  # torch exports SiLU as x * sigmoid(x)
            return self.op("Mul", [x, self.op("Sigmoid", [x])], name="silu")
        if kind == "hardswish":  # one op from opset 14 on, in both exporters
            return self.op("HardSwish", [x])
        if kind == "hardsigmoid":  # relu6(x + 3) / 6
            return self.op("HardSigmoid", [x], alpha=1.0 / 6.0, beta=0.5)
        return self.act(x, kind)

    def conv1d(self, x, cin, cout, k, stride=1, name="conv1d"):
        """An unpadded Conv1d: a Conv with one spatial axis, bias-free before a BatchNorm."""
        name = self.uniq(name)
        w = self.const(name + ".weight", self.normal((cout, cin, k), np.sqrt(2.0 / (cin * k))))
        inputs = [x, w] if self.keep_bn else [x, w, self.const(name + ".bias", self.normal((cout,), 0.05))]
        return self.op("Conv", inputs, name=name, reserved=True, kernel_shape=[k],
                       strides=[stride], pads=[0, 0])

    def ints(self, name, values):
        return self.shared_const("const." + name, np.array(values, np.int64))

    def mean(self, x, axes, keepdims):
        """``x.mean(axes)``: axes an input from opset 18 on, an attribute before."""
        if self.opset >= 18:
            axes_name = self.ints("axes_" + "_".join(str(a).replace("-", "m") for a in axes), axes)
            return self.op("ReduceMean", [x, axes_name], keepdims=keepdims)
        return self.op("ReduceMean", [x], axes=list(axes), keepdims=keepdims)

    def split(self, x, sizes, axis):
        """``torch.chunk`` / ``split``: a Split with its sizes as an input (opset 13+)."""
        sizes_name = self.ints("split_" + "_".join(map(str, sizes)), sizes)
        return self.op("Split", [x, sizes_name], n_out=len(sizes), axis=axis)

    def squeeze(self, x, axes):
        return self.op("Squeeze", [x, self.ints("squeeze_" + "_".join(map(str, axes)), axes)])

    def residual(self, x, y, cin, cout, stride, name, shortcut_first=False):
        """relu(y + shortcut): x itself, or a 1x1 conv + BN where the shape changes
        (``name``); the Add's operands in the order the network's code writes them."""
        short = (self.cba(x, cin, cout, 1, stride, act=None, name=name)
                 if stride != 1 or cin != cout else x)
        return self.act(self.op("Add", [short, y] if shortcut_first else [y, short],
                                name="residual"), "relu")

    def pool(self, x):
        """``adaptive_avg_pool2d(x, 1)``: ReduceMean keeping the axes (dynamo) or
        GlobalAveragePool (TorchScript)."""
        return self.mean(x, [-1, -2], 1) if self.keep_bn else self.op("GlobalAveragePool", [x])

    def pool_flatten(self, x):
        """``adaptive_avg_pool2d(x, 1)`` + ``flatten(x, 1)``: ReduceMean + Reshape (dynamo)
        or GlobalAveragePool + Flatten (TorchScript)."""
        if self.keep_bn:
            return self.op("Reshape", [self.mean(x, [-1, -2], 1), self.ints("flat", [1, -1])])
        return self.op("Flatten", [self.op("GlobalAveragePool", [x])], axis=1)

    def classifier(self, x, nin, nout):
        """The last Linear, named so that the graph's output is ``output``."""
        return self.rename_output(self.dense(x, nin, nout, "gemm_t", name="fc", gain=1.0), "output")

    def finish(self, shape, out_shape, doc):
        m = self.model([("input", shape)], [("output", out_shape)],
                       doc + "; random seeded weights, not trained.")
        m.opset_import[0].version = self.opset
        return m


def make_divisible(v, divisor=8):
    """torchvision's _make_divisible: channels rounded to a multiple of 8."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def inverted_residual(g, x, cin, cout, k, stride, expand, act, se=False):
    """MobileNetV2 / MnasNet / EfficientNet block: expand 1x1, depthwise kxk, optional
    squeeze-excitation, project 1x1, residual when the shape allows."""
    mid = cin * expand
    y = g.cba(x, cin, mid, 1, act=act, name="expand") if expand != 1 else x
    y = g.cba(y, mid, mid, k, stride, group=mid, act=act, name="dw")
    if se:  # GlobalAveragePool -> Conv -> SiLU -> Conv -> Sigmoid -> Mul
        sq = max(1, cin // 4)
        s = g.op("GlobalAveragePool", [y], name="se_pool")
        s = g.activation(g.conv(s, mid, sq, 1, name="se_reduce"), "silu")
        s = g.op("Sigmoid", [g.conv(s, sq, mid, 1, name="se_expand", gain=1.0)], name="se_gate")
        y = g.op("Mul", [y, s], name="se_scale")
    residual = stride == 1 and cin == cout
    y = g.cba(y, mid, cout, 1, act=None, name="project", gain=RESIDUAL_GAIN if residual else None)
    return g.op("Add", [x, y], name="residual") if residual else y


# ---------------------------------------------------------------------------
# Networks
# ---------------------------------------------------------------------------

def mobilenet_v2(seed=11):
    """torchvision mobilenet_v2 (width 1.0), 224x224, dynamo exporter (opset 18)."""
    g = Zoo("mobilenet_v2", seed, 18, keep_bn=True)
    x = g.cba("input", 3, 32, 3, 2, act="relu6", name="stem")
    cin = 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            x = inverted_residual(g, x, cin, c, 3, s if i == 0 else 1, t, "relu6")
            cin = c
    x = g.pool_flatten(g.cba(x, cin, 1280, 1, act="relu6", name="head"))
    g.classifier(x, 1280, 1000)
    return g.finish([1, 3, 224, 224], [1, 1000], "MobileNetV2 1.0")


def mobilenet_v2_035_96(name, seed, opset, keep_bn):
    """torchvision mobilenet_v2(width_mult=0.35), 96x96, two classes (visual wake words)."""
    g = Zoo(name, seed, opset, keep_bn=keep_bn)
    cin = make_divisible(32 * 0.35)
    x = g.cba("input", 3, cin, 3, 2, act="relu6", name="stem")
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        c = make_divisible(c * 0.35)
        for i in range(n):
            x = inverted_residual(g, x, cin, c, 3, s if i == 0 else 1, t, "relu6")
            cin = c
    x = g.pool_flatten(g.cba(x, cin, 1280, 1, act="relu6", name="head"))
    g.classifier(x, 1280, 2)
    return g.finish([1, 3, 96, 96], [1, 2], "MobileNetV2 0.35, 96x96")


def mobilenet_v2_035_96_dyn18(seed=23):
    """MobileNetV2 0.35 96x96 from the dynamo exporter (opset 18)."""
    return mobilenet_v2_035_96("mobilenet_v2_035_96_dyn18", seed, 18, True)


def mobilenet_v2_035_96_ts13(seed=23):
    """MobileNetV2 0.35 96x96 from the TorchScript exporter (opset 13)."""
    return mobilenet_v2_035_96("mobilenet_v2_035_96_ts13", seed, 13, False)


def mobilenet_v3_small_96(name, seed, opset, keep_bn):
    """torchvision mobilenet_v3_small, 96x96, two classes: hard-swish, and squeeze-
    excitation (pool, 1x1 conv, ReLU, 1x1 conv, hard-sigmoid, Mul) in most blocks."""
    g = Zoo(name, seed, opset, keep_bn=keep_bn)
    x = g.cba("input", 3, 16, 3, 2, act="hardswish", name="stem")
    cin = 16
    for k, mid, cout, se, act, stride in [
            (3, 16, 16, True, "relu", 2), (3, 72, 24, False, "relu", 2),
            (3, 88, 24, False, "relu", 1), (5, 96, 40, True, "hardswish", 2),
            (5, 240, 40, True, "hardswish", 1), (5, 240, 40, True, "hardswish", 1),
            (5, 120, 48, True, "hardswish", 1), (5, 144, 48, True, "hardswish", 1),
            (5, 288, 96, True, "hardswish", 2), (5, 576, 96, True, "hardswish", 1),
            (5, 576, 96, True, "hardswish", 1)]:
        y = g.cba(x, cin, mid, 1, act=act, name="expand") if mid != cin else x
        y = g.cba(y, mid, mid, k, stride, group=mid, act=act, name="dw")
        if se:
            sq = make_divisible(mid // 4)
            s = g.act(g.conv(g.pool(y), mid, sq, 1, name="se_fc1"), "relu")
            s = g.activation(g.conv(s, sq, mid, 1, name="se_fc2", gain=1.0), "hardsigmoid")
            y = g.op("Mul", [y, s], name="se_scale")
        residual = stride == 1 and cin == cout
        y = g.cba(y, mid, cout, 1, act=None, name="project",
                  gain=RESIDUAL_GAIN if residual else None)
        x = g.op("Add", [x, y], name="residual") if residual else y
        cin = cout
    x = g.pool_flatten(g.cba(x, cin, 576, 1, act="hardswish", name="head"))
    x = g.activation(g.dense(x, 576, 1024, "gemm_t", name="fc1"), "hardswish")
    g.classifier(x, 1024, 2)
    return g.finish([1, 3, 96, 96], [1, 2], "MobileNetV3-small, 96x96")


def mobilenet_v3_small_96_dyn18(seed=24):
    """MobileNetV3-small 96x96 from the dynamo exporter (opset 18)."""
    return mobilenet_v3_small_96("mobilenet_v3_small_96_dyn18", seed, 18, True)


def mobilenet_v3_small_96_ts14(seed=24):
    """MobileNetV3-small 96x96 from the TorchScript exporter (opset 14: HardSwish)."""
    return mobilenet_v3_small_96("mobilenet_v3_small_96_ts14", seed, 14, False)


def squeezenet1_1(seed=12):
    """torchvision squeezenet1_1, 224x224, TorchScript exporter (opset 13)."""
    g = Zoo("squeezenet1_1", seed, 13, keep_bn=False)
    x = g.act(g.conv("input", 3, 64, 3, 2, pads=[0, 0, 0, 0], name="conv1"), "relu")
    c = 64
    for stage in ([(16, 64), (16, 64)], [(32, 128), (32, 128)],
                  [(48, 192), (48, 192), (64, 256), (64, 256)]):
        x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
        for squeeze, expand in stage:
            x, c = fire(g, x, c, squeeze, expand, g.uniq("fire"))
    x = g.act(g.conv(x, c, 1000, 1, pads=[0, 0, 0, 0], name="classifier", gain=1.0), "relu")
    g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1, outputs=["output"])
    return g.finish([1, 3, 224, 224], [1, 1000], "SqueezeNet 1.1")


def shufflenet_v2_x0_5(seed=13):
    """torchvision shufflenet_v2_x0_5, 224x224, TorchScript exporter (opset 14): chunk
    as Split, channel shuffle as Reshape -> Transpose -> Reshape."""
    g = Zoo("shufflenet_v2_x0_5", seed, 14, keep_bn=False)

    def shuffle(x, c, hw):
        x = g.op("Reshape", [x, g.ints(f"shuffle_{c}_{hw}", [1, 2, c // 2, hw, hw])])
        x = g.op("Transpose", [x], perm=[0, 2, 1, 3, 4])
        return g.op("Reshape", [x, g.ints(f"merge_{c}_{hw}", [1, c, hw, hw])])

    def branch(x, cin, bf, stride):
        y = g.cba(x, cin, bf, 1, name="pw1")
        y = g.cba(y, bf, bf, 3, stride, group=bf, act=None, name="dw")
        return g.cba(y, bf, bf, 1, name="pw2")

    x = g.cba("input", 3, 24, 3, 2, name="conv1")
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin, hw = 24, 56
    for repeats, cout in ((4, 48), (8, 96), (4, 192)):
        bf, hw = cout // 2, hw // 2
        left = g.cba(x, cin, cin, 3, 2, group=cin, act=None, name="down_dw")
        left = g.cba(left, cin, bf, 1, name="down_pw")
        x = shuffle(g.op("Concat", [left, branch(x, cin, bf, 2)], axis=1), cout, hw)
        for _ in range(repeats - 1):
            a, b = g.split(x, [bf, bf], axis=1)
            x = shuffle(g.op("Concat", [a, branch(b, bf, bf, 1)], axis=1), cout, hw)
        cin = cout
    x = g.mean(g.cba(x, cin, 1024, 1, name="conv5"), [2, 3], 0)
    g.classifier(x, 1024, 1000)
    return g.finish([1, 3, 224, 224], [1, 1000], "ShuffleNetV2 x0.5")


def mnasnet0_5(seed=14):
    """torchvision mnasnet0_5, 224x224, dynamo exporter (opset 18)."""
    g = Zoo("mnasnet0_5", seed, 18, keep_bn=True)
    d = [16, 8, 16, 24, 40, 48, 96, 160]  # _get_depths(0.5)
    x = g.cba("input", 3, d[0], 3, 2, name="stem")
    x = g.cba(x, d[0], d[0], 3, group=d[0], name="stem_dw")
    x = g.cba(x, d[0], d[1], 1, act=None, name="stem_pw")
    for (cin, cout), (k, s, e, n) in zip(zip(d[1:], d[2:]), [(3, 2, 3, 3), (5, 2, 3, 3), (5, 2, 6, 3),
                                                               (3, 1, 6, 2), (5, 2, 6, 4), (3, 1, 6, 1)]):
        for i in range(n):
            x = inverted_residual(g, x, cin if i == 0 else cout, cout, k, s if i == 0 else 1, e, "relu")
    x = g.mean(g.cba(x, d[7], 1280, 1, name="head"), [2, 3], 0)
    g.classifier(x, 1280, 1000)
    return g.finish([1, 3, 224, 224], [1, 1000], "MnasNet 0.5")


def efficientnet_b0(seed=15):
    """torchvision efficientnet_b0, 224x224, TorchScript exporter (opset 13): SiLU as
    Sigmoid + Mul, squeeze-excitation in every block."""
    g = Zoo("efficientnet_b0", seed, 13, keep_bn=False)
    x = g.cba("input", 3, 32, 3, 2, act="silu", name="stem")
    for e, k, s, cin, cout, n in [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
                                  (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3),
                                  (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]:
        for i in range(n):
            x = inverted_residual(g, x, cin if i == 0 else cout, cout, k, s if i == 0 else 1, e,
                                  "silu", se=True)
    x = g.pool_flatten(g.cba(x, 320, 1280, 1, act="silu", name="head"))
    g.classifier(x, 1280, 1000)
    return g.finish([1, 3, 224, 224], [1, 1000], "EfficientNet-B0")


def resnet18(seed=16):
    """torchvision resnet18 (11.7M parameters), 224x224, dynamo exporter (opset 18);
    written with its weights in a side file."""
    g = Zoo("resnet18", seed, 18, keep_bn=True)
    x = g.cba("input", 3, 64, 7, 2, name="conv1")
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for i in range(2):
            s = stride if i == 0 else 1
            y = g.cba(x, cin, cout, 3, s, name="conv_a")
            y = g.cba(y, cout, cout, 3, act=None, name="conv_b", gain=RESIDUAL_GAIN)
            x = g.residual(x, y, cin, cout, s, "downsample")
            cin = cout
    g.classifier(g.pool_flatten(x), 512, 1000)
    return g.finish([1, 3, 224, 224], [1, 1000], "ResNet-18")


def regnet_x_400mf(seed=17):
    """torchvision regnet_x_400mf, 224x224, dynamo exporter (opset 18): bottlenecks with
    group convolutions of 16 channels a group."""
    g = Zoo("regnet_x_400mf", seed, 18, keep_bn=True)
    x = g.cba("input", 3, 32, 3, 2, name="stem")
    cin = 32
    for width, depth in ((32, 1), (64, 2), (160, 7), (400, 12)):
        for i in range(depth):
            s = 2 if i == 0 else 1
            y = g.cba(x, cin, width, 1, name="a")
            y = g.cba(y, width, width, 3, s, group=width // 16, name="b")
            y = g.cba(y, width, width, 1, act=None, name="c", gain=RESIDUAL_GAIN)
            x = g.residual(x, y, cin, width, s, "proj", shortcut_first=True)
            cin = width
    g.classifier(g.pool_flatten(x), 400, 1000)
    return g.finish([1, 3, 224, 224], [1, 1000], "RegNetX-400MF")


def transformer(name, seed, opset, layers, seq, act, norm_first, d=256, heads=4, ffn=1024):
    """nn.TransformerEncoder of ``layers`` nn.TransformerEncoderLayer (batch_first): one
    in-projection split into Q, K, V, heads by Reshape/Transpose, Softmax attention, the
    FFN with ``act`` (gelu: the exact Erf form), LayerNormalization (opset 18) or its
    decomposition (opset 13)."""
    g = Zoo(name, seed, opset, keep_bn=True)
    dh = d // heads
    split = g.ints("split_heads", [1, seq, heads, dh])
    merge = g.ints("merge_heads", [1, seq, d])

    def scalar(value):
        return g.shared_const(f"const.{value:.6g}", np.array(value, np.float32))

    def norm(x):
        name = g.uniq("norm")
        scale = g.const(name + ".weight", g.uniform((d,), 0.8, 1.2))
        bias = g.const(name + ".bias", g.normal((d,), 0.05))
        if opset >= 17:
            return g.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=TORCH_EPS)
        c = g.op("Sub", [x, g.mean(x, [-1], 1)])
        var = g.mean(g.op("Pow", [c, scalar(2.0)]), [-1], 1)
        y = g.op("Div", [c, g.op("Sqrt", [g.op("Add", [var, scalar(TORCH_EPS)])])])
        return g.op("Add", [g.op("Mul", [y, scale]), bias])

    def attention(x):
        q, k, v = g.split(g.dense(x, d, 3 * d, "matmul", name="in_proj", gain=1.0), [d] * 3, axis=-1)
        q, k, v = (g.op("Transpose", [g.op("Reshape", [t, split])], perm=perm)
                   for t, perm in ((q, [0, 2, 1, 3]), (k, [0, 2, 3, 1]), (v, [0, 2, 1, 3])))
        s = g.op("Softmax", [g.op("Mul", [g.op("MatMul", [q, k]), scalar(1 / np.sqrt(dh))])], axis=-1)
        o = g.op("Transpose", [g.op("MatMul", [s, v])], perm=[0, 2, 1, 3])
        return g.dense(g.op("Reshape", [o, merge]), d, d, "matmul", name="out_proj", gain=RESIDUAL_GAIN)

    def feed_forward(x):
        h = g.dense(x, d, ffn, "matmul", name="linear1")
        if act == "gelu":  # x * 0.5 * (1 + erf(x / sqrt 2))
            e = g.op("Erf", [g.op("Div", [h, scalar(np.sqrt(2.0))])])
            h = g.op("Mul", [g.op("Mul", [h, g.op("Add", [e, scalar(1.0)])]), scalar(0.5)])
        else:
            h = g.act(h, act)
        return g.dense(h, ffn, d, "matmul", name="linear2", gain=RESIDUAL_GAIN)

    x = "input"
    for _ in range(layers):
        if norm_first:
            x = g.op("Add", [x, attention(norm(x))])
            x = g.op("Add", [x, feed_forward(norm(x))])
        else:
            x = norm(g.op("Add", [x, attention(x)]))
            x = norm(g.op("Add", [x, feed_forward(x)]))
    g.rename_output(x, "output")
    return g.finish([1, seq, d], [1, seq, d], f"Transformer encoder ({layers} layers, d_model {d}, "
                    f"{heads} heads, seq {seq}, {act})")


def transformer_ts13(seed=18):
    """4 post-LN layers, seq 128, Gelu, TorchScript exporter (opset 13, LayerNorm decomposed)."""
    return transformer("transformer_ts13", seed, 13, 4, 128, "gelu", norm_first=False)


def transformer_dyn18(seed=19):
    """2 pre-LN layers, seq 64, Relu, dynamo exporter (opset 18, LayerNormalization)."""
    return transformer("transformer_dyn18", seed, 18, 2, 64, "relu", norm_first=True)


def speech_rnn(name, seed, cell, hidden=128, layers=2, steps=49, features=40, classes=12):
    """A keyword spotter: nn.LSTM / nn.GRU (batch_first) over 49 frames of 40 features,
    then a Linear on the last step. TorchScript exporter (opset 14): Transpose to
    time-major, one ONNX LSTM/GRU node per layer (zero initial state as a constant,
    torch's gates reordered), Squeeze of the direction axis, Gather of the last step."""
    g = Zoo(name, seed, 14, keep_bn=False)
    gates = {"LSTM": 4, "GRU": 3}[cell]
    attrs = {"linear_before_reset": 1} if cell == "GRU" else {}
    bound = 1 / np.sqrt(hidden)
    x = g.op("Transpose", ["input"], perm=[1, 0, 2])
    nin = features
    for layer in range(layers):
        p = f"{cell.lower()}_l{layer}"
        w = g.const(p + ".W", g.uniform((1, gates * hidden, nin), -bound, bound))
        r = g.const(p + ".R", g.uniform((1, gates * hidden, hidden), -bound, bound))
        b = g.const(p + ".B", g.uniform((1, 2 * gates * hidden), -bound, bound))
        state = [g.const(p + f".initial_{s}", np.zeros((1, 1, hidden), np.float32))
                 for s in ("h", "c")[:2 if cell == "LSTM" else 1]]
        outs = g.op(cell, [x, w, r, b, ""] + state, name=p, n_out=len(state) + 1,
                    hidden_size=hidden, **attrs)
        x = g.squeeze(outs[0], [1])  # [steps, 1, hidden]
        nin = hidden
    last = g.op("Gather", [x, g.const("last_step", np.array(steps - 1, np.int64))], axis=0)
    g.classifier(last, hidden, classes)
    return g.finish([1, steps, features], [1, classes], f"{cell} keyword spotter ({layers} layers, "
                    f"hidden {hidden})")


def lstm_kws(seed=20):
    return speech_rnn("lstm_kws", seed, "LSTM")


def gru_kws(seed=21):
    return speech_rnn("gru_kws", seed, "GRU")


def m5_audio(seed=22):
    """M5 (Dai et al., torchaudio's speech-command tutorial) on 1 s of 16 kHz audio:
    Conv1d/BatchNorm1d/ReLU/MaxPool1d x4, average over time, Linear, LogSoftmax.
    Dynamo exporter (opset 18)."""
    g = Zoo("m5_audio", seed, 18, keep_bn=True)
    x, cin = "input", 1
    for k, (cout, kernel, stride) in enumerate(((64, 80, 16), (64, 3, 1), (128, 3, 1), (128, 3, 1))):
        x = g.act(g.bn(g.conv1d(x, cin, cout, kernel, stride), cout, epsilon=TORCH_EPS), "relu")
        x = g.op("MaxPool", [x], kernel_shape=[4], strides=[4])
        cin = cout
    x = g.op("AveragePool", [x], kernel_shape=[3], strides=[3])  # F.avg_pool1d(x, x.shape[-1])
    x = g.op("Transpose", [x], perm=[0, 2, 1])  # [1, 1, 128]
    x = g.dense(x, cin, 35, "matmul", name="fc", gain=1.0)
    g.op("LogSoftmax", [x], axis=-1, outputs=["output"])
    return g.finish([1, 1, 16000], [1, 1, 35], "M5 Conv1d audio classifier")


MODELS = {f.__name__: f for f in (
    mobilenet_v2, squeezenet1_1, shufflenet_v2_x0_5, mnasnet0_5, efficientnet_b0, resnet18,
    regnet_x_400mf, transformer_ts13, transformer_dyn18, lstm_kws, gru_kws, m5_audio,
    mobilenet_v2_035_96_dyn18, mobilenet_v2_035_96_ts13, mobilenet_v3_small_96_dyn18,
    mobilenet_v3_small_96_ts14)}


def build(name):
    """The named zoo model, checked."""
    model = MODELS[name]()
    onnx.checker.check_model(model)
    return model


def write(out_dir=DEFAULT_OUT, names=None):
    """Write the named models (default: all) to ``out_dir``; their paths. ResNet-18's
    weights go to ``resnet18.onnx.data`` beside it."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name in names or MODELS:
        path = os.path.join(out_dir, name + ".onnx")
        model = build(name)
        if name in EXTERNAL_DATA:
            if os.path.exists(path + ".data"):  # onnx appends to a side file that exists
                os.remove(path + ".data")
            onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=name + ".onnx.data", size_threshold=1024)
        else:
            onnx.save_model(model, path)
        paths.append(path)
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="models (default: all): " + ", ".join(MODELS))
    parser.add_argument("-o", "--out-dir", default=DEFAULT_OUT)
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model {unknown[0]!r} (known: {', '.join(MODELS)})")
    for path in write(args.out_dir, args.names):
        print(path)


if __name__ == "__main__":
    main()

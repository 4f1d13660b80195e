#!/usr/bin/env python3
"""Generate the example ONNX models used by onnxcc.

These are small, MLPerf-Tiny-class float32 networks built directly with
``onnx.helper``.  They are GENERATED, NOT TRAINED: every weight is drawn from a
seeded ``numpy.random.default_rng`` (He / Xavier-style scales, BatchNorm with
random but plausible mean/var/scale/bias), so the files are byte-for-byte
reproducible and the activations stay in a sensible range, but the models
compute nothing meaningful.  They exist to exercise the compiler on real
network topologies.

All models: opset 17 (ai.onnx), IR version 8, static shapes, batch 1, NCHW,
weights stored as initializers, input named "input", output named "output".

Models
------
kws               DS-CNN keyword spotting (MLPerf Tiny KWS): [1,1,49,10] -> [1,12]
mobilenet_v1_025  MobileNetV1 alpha=0.25, visual wake words: [1,3,96,96] -> [1,2]
resnet8           MLPerf Tiny ResNet-8 for CIFAR-10: [1,3,32,32] -> [1,10]
fc_autoencoder    MLPerf Tiny anomaly-detection FC autoencoder: [1,640] -> [1,640]
squeezenet_mini   SqueezeNet-style net with 3 Fire modules: [1,3,32,32] -> [1,10]
transformer_block One pre-LN transformer encoder block, 2 heads: [1,16,32] -> [1,16,32]
tiny_cnn          Very small CNN with two outputs ("output" [1,5], "aux" [1,4]),
                  for fast tests.

Usage
-----
    python models/make_models.py [-o OUT_DIR] [MODEL ...]

OUT_DIR defaults to the directory containing this script; with no MODEL names
all models are written.  Importable: ``build_model(name)`` returns a
``onnx.ModelProto``.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
PRODUCER = "onnxcc/models/make_models.py"


# ---------------------------------------------------------------------------
# Graph builder helpers
# ---------------------------------------------------------------------------

class GraphBuilder:
    """Accumulates nodes and initializers; draws weights from a seeded RNG."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self._init_names = set()
        self._counts = {}
        self._used = set()

    # -- naming ------------------------------------------------------------
    def uniq(self, prefix):
        """Reserve and return a fresh name: prefix, prefix_1, prefix_2, ..."""
        n = self._counts.get(prefix, 0)
        name = prefix if n == 0 else "%s_%d" % (prefix, n)
        while name in self._used:
            n += 1
            name = "%s_%d" % (prefix, n)
        self._counts[prefix] = n + 1
        self._used.add(name)
        return name

    # -- tensors -----------------------------------------------------------
    def const(self, name, array):
        """Add an initializer (name must be unique); returns its name."""
        if name in self._init_names:
            raise ValueError("duplicate initializer %r" % name)
        self._init_names.add(name)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def shared_const(self, name, array):
        """Add an initializer once; later calls reuse it."""
        if name not in self._init_names:
            self.const(name, array)
        return name

    def normal(self, shape, std):
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def uniform(self, shape, lo, hi):
        return self.rng.uniform(lo, hi, shape).astype(np.float32)

    # -- nodes -------------------------------------------------------------
    def op(self, op_type, inputs, name=None, outputs=None, n_out=1, reserved=False, **attrs):
        """Append a node; returns its output name(s).  The node name (also the
        default output name) is made unique unless reserved=True, meaning the
        caller already got it from uniq()."""
        if not reserved:
            name = self.uniq(name or op_type.lower())
        if outputs is None:
            outputs = [name] if n_out == 1 else ["%s_out%d" % (name, i) for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs), name=name, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    # -- layers ------------------------------------------------------------
    def conv(self, x, cin, cout, k, stride=1, pads=None, group=1, bias=True,
             dilation=None, name="conv", gain=2.0):
        """Conv with He-initialised weights.  dilation=None omits the attribute."""
        kh, kw = (k, k) if isinstance(k, int) else k
        d = dilation or 1
        if pads is None:  # symmetric "same" for odd kernels
            pads = [(kh - 1) // 2 * d, (kw - 1) // 2 * d] * 2
        name = self.uniq(name)
        fan_in = (cin // group) * kh * kw
        w = self.const(name + ".weight", self.normal((cout, cin // group, kh, kw), np.sqrt(gain / fan_in)))
        inputs = [x, w]
        if bias:
            inputs.append(self.const(name + ".bias", self.normal((cout,), 0.05)))
        attrs = dict(kernel_shape=[kh, kw], strides=[stride, stride], pads=list(pads))
        if group != 1:
            attrs["group"] = group
        if dilation is not None:
            attrs["dilations"] = [d, d]
        return self.op("Conv", inputs, name=name, reserved=True, **attrs)

    def bn(self, x, c, name="bn", epsilon=1e-3):
        name = self.uniq(name)
        scale = self.const(name + ".scale", self.uniform((c,), 0.6, 1.4))
        bias = self.const(name + ".bias", self.normal((c,), 0.1))
        mean = self.const(name + ".mean", self.normal((c,), 0.1))
        var = self.const(name + ".var", self.uniform((c,), 0.5, 1.5))
        return self.op("BatchNormalization", [x, scale, bias, mean, var], name=name, reserved=True,
                       epsilon=epsilon)

    def act(self, x, kind):
        if kind is None:
            return x
        if kind == "relu":
            return self.op("Relu", [x])
        if kind == "relu6":
            lo = self.shared_const("relu6.min", np.array(0.0, np.float32))
            hi = self.shared_const("relu6.max", np.array(6.0, np.float32))
            return self.op("Clip", [x, lo, hi], name="relu6")
        raise ValueError(kind)

    def conv_bn_act(self, x, cin, cout, k, stride=1, pads=None, group=1,
                    act="relu", bias=True, name="conv"):
        y = self.conv(x, cin, cout, k, stride, pads, group, bias, name=name)
        y = self.bn(y, cout, name=name + "_bn")
        return self.act(y, act)

    def dense(self, x, nin, nout, style="gemm_t", name="fc", gain=2.0):
        """Fully connected layer. style: gemm_t (transB=1), gemm (transB=0), matmul (MatMul+Add)."""
        name = self.uniq(name)
        std = np.sqrt(gain / nin)
        b = self.normal((nout,), 0.05)
        if style == "gemm_t":
            w = self.const(name + ".weight", self.normal((nout, nin), std))
            return self.op("Gemm", [x, w, self.const(name + ".bias", b)], name=name, reserved=True, transB=1)
        w = self.const(name + ".weight", self.normal((nin, nout), std))
        if style == "gemm":
            return self.op("Gemm", [x, w, self.const(name + ".bias", b)], name=name, reserved=True)
        if style == "matmul":
            y = self.op("MatMul", [x, w], name=name + "_matmul")
            return self.op("Add", [y, self.const(name + ".bias", b)], name=name + "_add")
        raise ValueError(style)

    # -- finish ------------------------------------------------------------
    def model(self, inputs, outputs, doc):
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            initializer=self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name=PRODUCER, producer_version="1", doc_string=doc)
        m.ir_version = IR_VERSION
        return m

    def rename_output(self, tensor, new_name):
        """Make the node producing `tensor` write `new_name` instead."""
        for n in self.nodes:
            for i, o in enumerate(n.output):
                if o == tensor:
                    n.output[i] = new_name
                    return new_name
        raise KeyError(tensor)


def tf_same_pads(size, k, stride):
    """TF 'SAME' padding for one spatial dim: (begin, end)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + k - size, 0)
    return total // 2, total - total // 2


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

def build_kws(seed=1):
    """DS-CNN (MLPerf Tiny keyword spotting), 64 channels."""
    g = GraphBuilder("kws_ds_cnn", seed)
    C = 64
    ph = tf_same_pads(49, 10, 2)  # (4, 5)
    pw = tf_same_pads(10, 4, 2)   # (1, 1)
    x = g.conv_bn_act("input", 1, C, (10, 4), stride=2, pads=[ph[0], pw[0], ph[1], pw[1]], name="conv1")
    # -> [1, 64, 25, 5]
    for i in range(4):
        x = g.conv_bn_act(x, C, C, 3, group=C, name="dw%d" % (i + 1))
        x = g.conv_bn_act(x, C, C, 1, name="pw%d" % (i + 1))
    ratio = g.const("dropout.ratio", np.array(0.4, np.float32))
    x = g.op("Dropout", [x, ratio], name="dropout")
    x = g.op("AveragePool", [x], name="avgpool", kernel_shape=[25, 5], strides=[1, 1])
    x = g.op("Flatten", [x], axis=1)
    x = g.dense(x, C, 12, "gemm_t", name="fc", gain=1.0)
    g.op("Softmax", [x], outputs=["output"], axis=-1)
    return g.model([("input", [1, 1, 49, 10])], [("output", [1, 12])],
                   "DS-CNN keyword spotting (MLPerf Tiny KWS topology); random seeded weights, not trained.")


def build_mobilenet_v1_025(seed=2):
    """MobileNetV1 alpha=0.25 (visual wake words), 96x96 input, ReLU6 as Clip."""
    g = GraphBuilder("mobilenet_v1_025", seed)
    # TF/Keras-style asymmetric padding for stride-2 3x3 convs on even sizes.
    s2 = [0, 0, 1, 1]
    x = g.conv_bn_act("input", 3, 8, 3, stride=2, pads=s2, act="relu6", bias=False, name="conv1")
    blocks = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2),
              (128, 1), (128, 1), (128, 1), (128, 1), (128, 1), (256, 2), (256, 1)]
    cin = 8
    for i, (cout, stride) in enumerate(blocks):
        pads = s2 if stride == 2 else [1, 1, 1, 1]
        x = g.conv_bn_act(x, cin, cin, 3, stride=stride, pads=pads, group=cin, act="relu6",
                          bias=False, name="dw%d" % (i + 1))
        x = g.conv_bn_act(x, cin, cout, 1, act="relu6", bias=False, name="pw%d" % (i + 1))
        cin = cout
    x = g.op("GlobalAveragePool", [x], name="gap")
    x = g.op("Flatten", [x], axis=1)
    x = g.dense(x, cin, 2, "gemm_t", name="fc", gain=1.0)
    g.op("Softmax", [x], outputs=["output"], axis=1)
    return g.model([("input", [1, 3, 96, 96])], [("output", [1, 2])],
                   "MobileNetV1 alpha=0.25 visual wake words; random seeded weights, not trained.")


def build_resnet8(seed=3):
    """MLPerf Tiny ResNet-8 (CIFAR-10)."""
    g = GraphBuilder("resnet8", seed)
    x = g.conv_bn_act("input", 3, 16, 3, name="conv1")
    cin = 16
    for i, (cout, stride) in enumerate([(16, 1), (32, 2), (64, 2)]):
        s = "stage%d" % (i + 1)
        y = g.conv_bn_act(x, cin, cout, 3, stride=stride, name=s + "_conv1")
        y = g.conv_bn_act(y, cout, cout, 3, act=None, name=s + "_conv2")
        if stride != 1 or cin != cout:
            sc = g.conv(x, cin, cout, 1, stride=stride, pads=[0, 0, 0, 0], name=s + "_shortcut", gain=1.0)
        else:
            sc = x
        x = g.op("Add", [y, sc], name=s + "_add")
        x = g.op("Relu", [x], name=s + "_relu")
        cin = cout
    x = g.op("AveragePool", [x], name="avgpool", kernel_shape=[8, 8], strides=[8, 8])
    x = g.op("Flatten", [x], axis=1)
    g.rename_output(g.dense(x, 64, 10, "gemm_t", name="fc", gain=1.0), "output")
    return g.model([("input", [1, 3, 32, 32])], [("output", [1, 10])],
                   "ResNet-8 for CIFAR-10 (MLPerf Tiny IC topology); random seeded weights, not trained.")


def build_fc_autoencoder(seed=4):
    """MLPerf Tiny anomaly-detection FC autoencoder (640-128x4-8-128x4-640)."""
    g = GraphBuilder("fc_autoencoder", seed)
    sizes = [640, 128, 128, 128, 128, 8, 128, 128, 128, 128]
    styles = ["gemm_t", "matmul", "gemm"]
    x = "input"
    for i in range(len(sizes) - 1):
        x = g.dense(x, sizes[i], sizes[i + 1], styles[i % 3], name="fc%d" % (i + 1))
        x = g.bn(x, sizes[i + 1], name="bn%d" % (i + 1))
        x = g.op("Relu", [x])
    y = g.dense(x, 128, 640, "matmul", name="fc_out", gain=1.0)
    g.rename_output(y, "output")
    return g.model([("input", [1, 640])], [("output", [1, 640])],
                   "FC autoencoder (MLPerf Tiny anomaly detection topology); random seeded weights, not trained.")


def fire(g, x, cin, squeeze, expand, name):
    s = g.conv(x, cin, squeeze, 1, pads=[0, 0, 0, 0], name=name + "_squeeze")
    s = g.op("Relu", [s], name=name + "_squeeze_relu")
    e1 = g.conv(s, squeeze, expand, 1, pads=[0, 0, 0, 0], name=name + "_expand1x1")
    e1 = g.op("Relu", [e1], name=name + "_expand1x1_relu")
    e3 = g.conv(s, squeeze, expand, 3, pads=[1, 1, 1, 1], name=name + "_expand3x3")
    e3 = g.op("Relu", [e3], name=name + "_expand3x3_relu")
    return g.op("Concat", [e1, e3], name=name + "_concat", axis=1), 2 * expand


def build_squeezenet_mini(seed=5):
    """SqueezeNet-style CNN with three Fire modules for 32x32 input."""
    g = GraphBuilder("squeezenet_mini", seed)
    x = g.conv("input", 3, 32, 3, stride=2, pads=[1, 1, 1, 1], name="conv1")  # 16x16
    x = g.op("Relu", [x], name="conv1_relu")
    x = g.op("MaxPool", [x], name="pool1", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)  # 8x8
    x, c = fire(g, x, 32, 8, 16, "fire1")
    x, c = fire(g, x, c, 8, 16, "fire2")
    x = g.op("MaxPool", [x], name="pool2", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)  # 4x4
    x, c = fire(g, x, c, 16, 32, "fire3")
    x = g.conv(x, c, 10, 1, pads=[0, 0, 0, 0], name="conv_final", gain=1.0)
    x = g.op("Relu", [x], name="conv_final_relu")
    x = g.op("GlobalAveragePool", [x], name="gap")
    x = g.op("Flatten", [x], axis=1)
    g.op("Softmax", [x], outputs=["output"], axis=1)
    return g.model([("input", [1, 3, 32, 32])], [("output", [1, 10])],
                   "SqueezeNet-style CNN (3 Fire modules); random seeded weights, not trained.")


def build_transformer_block(seed=6):
    """One pre-LN transformer encoder block: seq 16, d_model 32, 2 heads, FFN 64."""
    g = GraphBuilder("transformer_block", seed)
    S, D, H, F = 16, 32, 2, 64
    Dh = D // H

    def layernorm(x, name):
        sc = g.const(name + ".scale", g.uniform((D,), 0.8, 1.2))
        b = g.const(name + ".bias", g.normal((D,), 0.05))
        return g.op("LayerNormalization", [x, sc, b], name=name, axis=-1, epsilon=1e-5)

    x = g.op("Identity", ["input"], name="residual0")
    h = layernorm(x, "ln1")
    split_shape = g.const("shape.split_heads", np.array([1, S, H, Dh], np.int64))
    merge_shape = g.const("shape.merge_heads", np.array([1, S, D], np.int64))
    heads = {}
    for p, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        t = g.dense(h, D, D, "matmul", name="attn_" + p, gain=1.0)
        t = g.op("Reshape", [t, split_shape], name="attn_%s_reshape" % p)
        heads[p] = g.op("Transpose", [t], name="attn_%s_transpose" % p, perm=perm)
    s = g.op("MatMul", [heads["q"], heads["k"]], name="attn_scores")  # [1,2,16,16]
    scale = g.const("attn.scale", np.array(1.0 / np.sqrt(Dh), np.float32))
    s = g.op("Mul", [s, scale], name="attn_scale")
    p_ = g.op("Softmax", [s], name="attn_softmax", axis=-1)
    o = g.op("MatMul", [p_, heads["v"]], name="attn_context")  # [1,2,16,16]
    o = g.op("Transpose", [o], name="attn_context_transpose", perm=[0, 2, 1, 3])
    o = g.op("Reshape", [o, merge_shape], name="attn_context_reshape")
    o = g.dense(o, D, D, "matmul", name="attn_out", gain=1.0)
    x = g.op("Add", [x, o], name="residual1")

    h = layernorm(x, "ln2")
    h = g.dense(h, D, F, "matmul", name="ffn1", gain=1.0)
    k = g.const("gelu.k", np.array(1.702, np.float32))
    a = g.op("Mul", [h, k], name="gelu_scale")
    a = g.op("Sigmoid", [a], name="gelu_sigmoid")
    h = g.op("Mul", [h, a], name="gelu_mul")
    h = g.dense(h, F, D, "matmul", name="ffn2", gain=1.0)
    g.op("Add", [x, h], name="residual2", outputs=["output"])
    return g.model([("input", [1, S, D])], [("output", [1, S, D])],
                   "Pre-LN transformer encoder block (2 heads); random seeded weights, not trained.")


def build_tiny_cnn(seed=7):
    """Very small two-output CNN for fast tests."""
    g = GraphBuilder("tiny_cnn", seed)
    c1 = g.conv("input", 2, 4, 3, pads=[1, 1, 1, 1], name="conv1")  # [1,4,8,8]
    x = g.bn(c1, 4, name="bn1")
    x = g.op("LeakyRelu", [x], alpha=0.1)
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])  # [1,4,4,4]
    x = g.conv(x, 4, 6, 3, pads=[0, 0, 0, 0], dilation=1, name="conv2")  # [1,6,2,2]
    x = g.op("HardSwish", [x])
    x = g.op("Transpose", [x], perm=[0, 2, 3, 1])  # [1,2,2,6]
    x = g.op("Reshape", [x, g.const("shape.flat", np.array([1, -1], np.int64))])  # [1,24]
    x = g.dense(x, 24, 5, "gemm_t", name="fc", gain=1.0)
    g.op("Tanh", [x], outputs=["output"])
    # aux branch straight off the first conv; HardSigmoid with default alpha/beta
    a = g.op("GlobalAveragePool", [c1])
    a = g.op("Flatten", [a], name="aux_flatten", axis=1)
    g.op("HardSigmoid", [a], outputs=["aux"])
    return g.model([("input", [1, 2, 8, 8])], [("output", [1, 5]), ("aux", [1, 4])],
                   "Tiny two-output CNN for fast tests; random seeded weights, not trained.")


MODELS = {
    "kws": build_kws,
    "mobilenet_v1_025": build_mobilenet_v1_025,
    "resnet8": build_resnet8,
    "fc_autoencoder": build_fc_autoencoder,
    "squeezenet_mini": build_squeezenet_mini,
    "transformer_block": build_transformer_block,
    "tiny_cnn": build_tiny_cnn,
}


def build_model(name):
    """Build the named model and return a checked onnx.ModelProto."""
    try:
        builder = MODELS[name]
    except KeyError:
        raise KeyError("unknown model %r (known: %s)" % (name, ", ".join(MODELS))) from None
    m = builder()
    onnx.checker.check_model(m, full_check=True)
    return m


def param_count(model):
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer)


def op_types(model):
    return sorted({n.op_type for n in model.graph.node})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out-dir", default=os.path.dirname(os.path.abspath(__file__)),
                    help="output directory (default: this script's directory)")
    ap.add_argument("models", nargs="*", metavar="MODEL",
                    help="models to build (default: all): " + ", ".join(MODELS))
    args = ap.parse_args(argv)
    names = args.models or list(MODELS)
    for n in names:
        if n not in MODELS:
            ap.error("unknown model %r (known: %s)" % (n, ", ".join(MODELS)))
    os.makedirs(args.out_dir, exist_ok=True)
    for n in names:
        m = build_model(n)
        onnx.save(m, os.path.join(args.out_dir, n + ".onnx"))
        print("%-18s params=%-7d ops=%s" % (n, param_count(m), ",".join(op_types(m))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

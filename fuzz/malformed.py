"""Malformed-model fuzzer: mutated model files, each compiled like a user would.

    python -m fuzz.malformed [--variants N] [--seed S] [--timeout T] [--save DIR]
                             [--only I] [--verbose]

Every variant is a mutation of a seed model (the shipped examples in models/ and small
graphs made here with onnx.helper): truncations and byte flips of the file, and
protobuf-level edits -- a dim, an attribute's value or type, an op type, an input or output
name, a dropped or duplicated node or initializer, huge or negative dims, data shorter than
the dims, bad element type codes, external data that points out of the model's folder,
names that are not UTF-8, absent or absurd opsets ... (``PROTO_MUTATIONS``,
``BYTE_MUTATIONS``). Each variant is
compiled for x86_64 through the stage functions the SCons tool calls (import, optimize,
tactics, plan with the target's RAM, generate), in a forked child with a time and memory
limit, and ends in one of:

  ok             compiled
  clear error    an OnnxccError: the one line a user sees -- and the failing stage left
                 none of its outputs and no staging folder behind
  internal error any other exception (a traceback would reach the user), or a clear
                 error that left a half-written output
  timeout        over the time limit (or killed: out of memory)

Variant ``i`` of seed ``S`` is drawn from ``random.Random(f"{S}:{i}")`` alone, so any
variant replays from its numbers (``--only I``); the failing ones are also saved, model
file and side files, under ``--save`` (fuzz/malformed_failures/ by default). (Plain seeded
draws rather than Hypothesis: a campaign counts outcomes over every variant instead of
stopping at the first failure, and a failing variant is one small file already -- there
is nothing to shrink.)
"""

import argparse
import collections
import multiprocessing
import os
import random
import resource
import shutil
import sys
import tempfile
import time
import traceback

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from onnxcc.importer import stage as importer
from onnxcc.passes import stage as optimizer
from onnxcc.plan import stage as planner
from onnxcc.tactics import stage as tactics  # noqa: E402
from onnxcc.codegen import stage as codegen  # noqa: E402
from onnxcc.core.errors import OnnxccError  # noqa: E402
from onnxcc.target import load_target  # noqa: E402

#: shipped example models used as seeds (the big ones are slower per variant)
EXAMPLE_MODELS = ["tiny_cnn.onnx", "kws.onnx", "squeezenet_mini.onnx",
                  "transformer_block.onnx", "int8/kws_qdq.onnx", "int8/kws_qop.onnx"]
OUTCOMES = ("ok", "clear error", "internal error", "timeout")
MEMORY_LIMIT = 4 << 30  # bytes of address space a variant may use


# --- seed models -------------------------------------------------------------------------

def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _f(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _w(name, shape, seed=0):
    return numpy_helper.from_array(
        np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def _i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def small_graphs():
    """name -> ModelProto: one small graph per op family with structural attributes."""
    conv = _model([helper.make_node("Conv", ["x", "w", "b"], ["c"], group=2, pads=[1, 1, 1, 1],
                                    strides=[1, 1], dilations=[1, 1], kernel_shape=[3, 3]),
                   helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                   helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[2, 2], pads=[0, 0, 1, 1])],
                  [_f("x", [1, 4, 8, 8])], [_f("y", [1, 4, 4, 4])],
                  [_w("w", [4, 2, 3, 3]), _w("b", [4])])
    convt = _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2],
                                     kernel_shape=[2, 2], group=1)],
                   [_f("x", [1, 2, 3, 3])], [_f("y", [1, 3, 6, 6])], [_w("w", [2, 3, 2, 2])])
    gemm = _model([helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1, alpha=1.0),
                   helper.make_node("Relu", ["g"], ["r"]),
                   helper.make_node("MatMul", ["r", "m"], ["y"])],
                  [_f("x", [2, 8])], [_f("y", [2, 3])],
                  [_w("w", [5, 8]), _w("b", [5]), _w("m", [5, 3])])
    shapes = _model([helper.make_node("Reshape", ["x", "s"], ["r"]),
                     helper.make_node("Slice", ["r", "st", "en", "ax"], ["sl"]),
                     helper.make_node("Gather", ["sl", "idx"], ["ga"], axis=1),
                     helper.make_node("Transpose", ["ga"], ["t"], perm=[1, 0]),
                     helper.make_node("Concat", ["t", "t"], ["c"], axis=0),
                     helper.make_node("Softmax", ["c"], ["y"], axis=-1)],
                    [_f("x", [2, 3, 4])], [_f("y", [4, 2])],
                    [_i64("s", [2, 12]), _i64("st", [0]), _i64("en", [6]), _i64("ax", [1]),
                     _i64("idx", [0, 5])])
    expand = _model([helper.make_node("Expand", ["x", "s"], ["e"]),
                     helper.make_node("Tile", ["e", "r"], ["t"]),
                     helper.make_node("ReduceMean", ["t"], ["y"], axes=[1], keepdims=0)],
                    [_f("x", [1, 3])], [_f("y", [2])], [_i64("s", [2, 3]), _i64("r", [1, 2])],
                    opset=13)
    folded = _model([helper.make_node("ConstantOfShape", ["s"], ["z"]),
                     helper.make_node("Add", ["x", "z"], ["y"])],
                    [_f("x", [2, 3])], [_f("y", [2, 3])], [_i64("s", [2, 3])])
    return {"conv": conv, "convtranspose": convt, "gemm": gemm, "shapes": shapes,
            "expand": expand, "folded": folded}


def seed_models(models_dir=os.path.join(REPO, "models")):
    """name -> serialized model: the examples first, then the small graphs."""
    seeds = {}
    for rel in EXAMPLE_MODELS:
        path = os.path.join(models_dir, rel)
        if os.path.exists(path):
            with open(path, "rb") as f:
                seeds[rel] = f.read()
    for name, model in small_graphs().items():
        seeds[name] = model.SerializeToString()
    return seeds


# --- mutations ---------------------------------------------------------------------------
# Each takes (model: ModelProto, rng, folder) and edits the model in place (folder: where
# side files go); a byte mutation takes and returns the serialized file instead.

INTERESTING_INTS = [-(2 ** 63), -(2 ** 31), -7, -2, -1, 0, 1, 2, 3, 5, 7, 255, 2 ** 31 - 1,
                    2 ** 31, 2 ** 32 + 1, 2 ** 40, 2 ** 62]
OP_TYPES = ["Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm",
            "MatMul", "Reshape", "Slice", "Gather", "Transpose", "Concat", "Softmax", "Add",
            "Relu", "Expand", "Tile", "ConstantOfShape", "Split", "Squeeze", "Unsqueeze",
            "Flatten", "Pad", "Resize", "ReduceMean", "LayerNormalization", "BatchNormalization",
            "QuantizeLinear", "DequantizeLinear", "If", "Loop", "NoSuchOp", ""]


def _nodes(model):
    return list(model.graph.node)


def _pick(rng, items):
    return rng.choice(items) if items else None


def _value_infos(model):
    g = model.graph
    return list(g.input) + list(g.output) + list(g.value_info)


def mutate_dim(model, rng, folder):
    vi = _pick(rng, [v for v in _value_infos(model) if v.type.tensor_type.shape.dim])
    if vi is None:
        return
    dim = rng.choice(vi.type.tensor_type.shape.dim)
    dim.Clear()
    dim.dim_value = rng.choice([0, 1, 2, 3, 17, -1, -5, 2 ** 31, 2 ** 40])


def mutate_initializer_dims(model, rng, folder):
    init = _pick(rng, list(model.graph.initializer))
    if init is None:
        return
    choice = rng.randrange(4)
    if choice == 0 and init.dims:
        init.dims[rng.randrange(len(init.dims))] = rng.choice(INTERESTING_INTS)
    elif choice == 1:
        init.dims.append(rng.choice([1, 2, 2 ** 20, 2 ** 40]))
    elif choice == 2 and init.dims:
        del init.dims[-1]
    else:
        del init.dims[:]
        init.dims.extend([2 ** 20] * rng.randrange(2, 5))


def mutate_initializer_data(model, rng, folder):
    """Data shorter or longer than the dims say, or in the wrong field."""
    init = _pick(rng, list(model.graph.initializer))
    if init is None:
        return
    if init.raw_data:
        cut = rng.randrange(len(init.raw_data) + 1)
        init.raw_data = init.raw_data[:cut] if rng.random() < 0.7 else init.raw_data + b"\0" * 3
    elif init.float_data:
        del init.float_data[rng.randrange(len(init.float_data)):]
    elif init.int64_data:
        init.int64_data.append(1)
    else:
        init.raw_data = b"\x01\x02\x03"


def mutate_dtype(model, rng, folder):
    code = rng.choice([0, 8, 10, 16, 17, 19, 21, 23, 24, 25, 31, 99, -1])
    if rng.random() < 0.5 and model.graph.initializer:
        rng.choice(model.graph.initializer).data_type = code
    else:
        vi = _pick(rng, _value_infos(model))
        if vi is not None:
            vi.type.tensor_type.elem_type = code


def _random_ints(rng, length):
    return [rng.choice(INTERESTING_INTS) if rng.random() < 0.4 else rng.randrange(-2, 5)
            for _ in range(length)]


def mutate_attribute_value(model, rng, folder):
    node = _pick(rng, [n for n in _nodes(model) if n.attribute])
    if node is None:
        return
    attr = rng.choice(node.attribute)
    if attr.type == onnx.AttributeProto.INT:
        attr.i = rng.choice(INTERESTING_INTS)
    elif attr.type == onnx.AttributeProto.INTS:
        n = len(attr.ints) + rng.choice([-1, 0, 0, 1, 2])
        del attr.ints[:]
        attr.ints.extend(_random_ints(rng, max(n, 0)))
    elif attr.type == onnx.AttributeProto.FLOAT:
        attr.f = rng.choice([0.0, -1.0, float("nan"), float("inf"), 1e30])
    elif attr.type == onnx.AttributeProto.STRING:
        attr.s = rng.choice([b"", b"NOTSET", b"\xff\xfe", b"SAME_UPPER", b"x" * 300])
    elif attr.type == onnx.AttributeProto.TENSOR:
        attr.t.dims.append(2 ** 33)


def nudge_attribute(model, rng, folder):
    """A small, often still valid change of an integer attribute (a stride, a pad, an axis,
    a group): such models pass import and reach the later stages."""
    node = _pick(rng, [n for n in _nodes(model) if any(
        a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS) for a in n.attribute)])
    if node is None:
        return
    attr = rng.choice([a for a in node.attribute
                       if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS)])
    if attr.type == onnx.AttributeProto.INT:
        attr.i = max(attr.i + rng.choice([-1, 1, 2]), -1)
    elif attr.ints:
        k = rng.randrange(len(attr.ints))
        attr.ints[k] = max(attr.ints[k] + rng.choice([-1, 1, 2]), -1)


def nudge_input_dim(model, rng, folder):
    """An input dimension a little smaller or larger (the rest of the graph unchanged)."""
    vi = _pick(rng, [v for v in model.graph.input if v.type.tensor_type.shape.dim])
    if vi is None:
        return
    dim = rng.choice(vi.type.tensor_type.shape.dim)
    if dim.HasField("dim_value"):
        dim.dim_value = max(rng.choice([dim.dim_value - 1, dim.dim_value + 1, 2 * dim.dim_value, 1]), 0)


def mutate_attribute_type(model, rng, folder):
    node = _pick(rng, [n for n in _nodes(model) if n.attribute])
    if node is None:
        return
    attr = rng.choice(node.attribute)
    attr.type = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 13])


def add_attribute(model, rng, folder):
    """An attribute the op may or may not have: a group, axes, a nested graph ..."""
    node = _pick(rng, _nodes(model))
    if node is None:
        return
    kind = rng.randrange(5)
    if kind == 0:
        body = helper.make_graph([helper.make_node("Relu", ["a"], ["b"])], "body",
                                 [_f("a", [1])], [_f("b", [1])])
        node.attribute.append(helper.make_attribute(rng.choice(["then_branch", "body", "g"]), body))
    else:
        name = rng.choice(["group", "axis", "axes", "kernel_shape", "pads", "strides",
                           "dilations", "perm", "transA", "auto_pad"])
        value = ([rng.choice(INTERESTING_INTS)] * rng.randrange(1, 5) if name in
                 ("axes", "kernel_shape", "pads", "strides", "dilations", "perm")
                 else (b"VALID" if name == "auto_pad" else rng.choice(INTERESTING_INTS)))
        for a in list(node.attribute):
            if a.name == name:
                node.attribute.remove(a)
        node.attribute.append(helper.make_attribute(name, value))


def mutate_op_type(model, rng, folder):
    node = _pick(rng, _nodes(model))
    if node is not None:
        node.op_type = rng.choice(OP_TYPES)
        if rng.random() < 0.1:
            node.domain = rng.choice(["com.microsoft", "ai.onnx.ml", "x"])


def _tensor_names(model):
    g = model.graph
    names = [i.name for i in g.input] + [i.name for i in g.initializer]
    return names + [o for n in g.node for o in n.output]


def mutate_input_name(model, rng, folder):
    """An input that does not exist, is empty, comes later (a cycle) or is another tensor."""
    node = _pick(rng, [n for n in _nodes(model) if n.input])
    if node is None:
        return
    k = rng.randrange(len(node.input))
    node.input[k] = rng.choice(["", "nowhere", node.output[0] if node.output else "",
                                _pick(rng, _tensor_names(model)) or "x"])


def mutate_output_name(model, rng, folder):
    """An output named like another node's output, a graph input, an initializer or ''."""
    node = _pick(rng, [n for n in _nodes(model) if n.output])
    if node is None:
        return
    node.output[rng.randrange(len(node.output))] = rng.choice(
        ["", _pick(rng, _tensor_names(model)) or "x", model.graph.input[0].name
         if model.graph.input else "x"])


def drop_node(model, rng, folder):
    if model.graph.node:
        del model.graph.node[rng.randrange(len(model.graph.node))]


def duplicate_node(model, rng, folder):
    node = _pick(rng, _nodes(model))
    if node is not None:
        copy = model.graph.node.add()
        copy.CopyFrom(node)
        if rng.random() < 0.5:  # a node before its producer
            model.graph.node.insert(0, onnx.NodeProto())
            model.graph.node[0].CopyFrom(model.graph.node[-1])
            del model.graph.node[-1]


def drop_initializer(model, rng, folder):
    if model.graph.initializer:
        del model.graph.initializer[rng.randrange(len(model.graph.initializer))]


def duplicate_initializer(model, rng, folder):
    init = _pick(rng, list(model.graph.initializer))
    if init is not None:
        model.graph.initializer.add().CopyFrom(init)


def mutate_graph_io(model, rng, folder):
    """Drop or duplicate a graph input or output, or name an output that nothing makes."""
    g = model.graph
    kind = rng.randrange(4)
    if kind == 0 and g.input:
        del g.input[rng.randrange(len(g.input))]
    elif kind == 1 and g.output:
        del g.output[rng.randrange(len(g.output))]
    elif kind == 2 and g.output:
        g.output.add().CopyFrom(g.output[0])
    elif g.output:
        g.output[0].name = rng.choice(["", "nothing_makes_me", g.input[0].name if g.input else "x"])


def mutate_opset(model, rng, folder):
    kind = rng.randrange(5)
    if kind == 0:
        del model.opset_import[:]
    elif kind == 1:
        model.opset_import[0].version = rng.choice([0, 1, 6, 25, 999, -3, 2 ** 40])
    elif kind == 2:
        model.opset_import.add().CopyFrom(helper.make_opsetid("", 12))
    elif kind == 3:
        model.opset_import[0].domain = rng.choice(["ai.onnx.ml", "foo", "\u00e9"])
    else:
        model.ir_version = rng.choice([0, 1, 2, 3, 12, 99, -1, 2 ** 40])


def mutate_names(model, rng, folder):
    """Empty, clashing, control-character or enormous names."""
    node = _pick(rng, _nodes(model))
    if node is not None:
        node.name = rng.choice(["", "*/ int x; /*", "a\nb", "\u00e9\u4e2d", "n" * 5000,
                                model.graph.node[0].name])
    if rng.random() < 0.3:
        model.graph.name = rng.choice(["", "\\", "x" * 10000])


def mutate_metadata(model, rng, folder):
    """Metadata and doc strings: the compiler's own key, odd text, a lot of it."""
    prop = model.metadata_props.add()
    prop.key, prop.value = rng.choice([("onnxcc_quant", "{not json"), ("onnxcc_quant", '{"x": 1}'),
                                       ("author", "*/ */ \\\n"), ("k" * 1000, "v" * 100000)])
    if rng.random() < 0.5:
        model.graph.doc_string = rng.choice(["*/", "\n#include <stdio.h>", "\u0000"])


def _externalize(model, rng):
    init = _pick(rng, [i for i in model.graph.initializer if i.raw_data or i.float_data])
    if init is None:
        return None, b""
    data = init.raw_data or np.array(init.float_data, np.float32).tobytes()
    init.ClearField("raw_data")
    init.ClearField("float_data")
    init.data_location = TensorProto.EXTERNAL
    return init, data


def _set_external(init, **entries):
    del init.external_data[:]
    for key, value in entries.items():
        e = init.external_data.add()
        e.key, e.value = key, str(value)


def external_data(model, rng, folder):
    """Move a weight to a side file, then point at it well or badly."""
    init, data = _externalize(model, rng)
    if init is None:
        return
    kind = rng.choice(["good", "missing", "short", "dotdot", "absolute", "symlink_out",
                       "symlink_in", "directory", "device", "offset", "length", "no_location",
                       "bad_number", "checksum", "odd_name"])
    stem = f"ext{len(os.listdir(folder))}"  # a fresh name per call: each call adds a file
    side = os.path.join(folder, stem + ".bin")
    with open(side, "wb") as f:
        f.write(b"\0" * 8 + data)
    location, extra = stem + ".bin", {"offset": 8, "length": len(data)}
    if kind == "missing":
        location = "not_there.bin"
    elif kind == "short":
        extra["length"] = len(data) + 64
    elif kind == "dotdot":
        location = "../" + os.path.basename(folder) + "/" + location
    elif kind == "absolute":
        location = side
    elif kind == "symlink_out":
        os.symlink("/etc/hostname", os.path.join(folder, stem + ".link"))
        location = stem + ".link"
    elif kind == "symlink_in":
        os.symlink(location, os.path.join(folder, stem + ".link"))
        location = stem + ".link"
    elif kind == "directory":
        os.mkdir(os.path.join(folder, stem))
        location = stem
    elif kind == "device":
        location = "/dev/zero"
    elif kind == "offset":
        extra["offset"] = rng.choice([-1, 2 ** 40, len(data) + 9])
    elif kind == "length":
        extra["length"] = rng.choice([-8, 0, 2 ** 40])
    elif kind == "bad_number":
        extra["offset"] = "eight"
    elif kind == "odd_name":
        location = rng.choice(["w\0.bin", "x" * 5000, "./" + location, "a/../" + location, "."])
    elif kind == "checksum":
        extra["checksum"] = "0" * 40
    entries = dict(extra) if kind == "no_location" else {"location": location, **extra}
    _set_external(init, **entries)


def many_nodes(model, rng, folder):
    """A long chain of cheap nodes after the first graph output."""
    g = model.graph
    if not g.output:
        return
    last = g.output[0].name
    count = rng.choice([1000, 100_001])  # the second is over the node limit
    for k in range(count):
        g.node.add().CopyFrom(helper.make_node("Identity", [last], [f"chain_{k}"]))
        last = f"chain_{k}"
    g.output[0].name = last


PROTO_MUTATIONS = {f.__name__: f for f in (
    mutate_dim, mutate_initializer_dims, mutate_initializer_data, mutate_dtype,
    mutate_attribute_value, nudge_attribute, nudge_input_dim, mutate_attribute_type, add_attribute, mutate_op_type,
    mutate_input_name, mutate_output_name, drop_node, duplicate_node, drop_initializer,
    duplicate_initializer, mutate_graph_io, mutate_opset, mutate_names, mutate_metadata,
    external_data,
    many_nodes)}
#: relative weights: many_nodes makes slow variants, so it is rarer
WEIGHTS = {name: 1.0 for name in PROTO_MUTATIONS} | {"many_nodes": 0.05, "nudge_attribute": 3.0,
                                                     "nudge_input_dim": 2.0}


def truncate(data, rng, names):
    return data[:rng.randrange(len(data))]


def flip_bytes(data, rng, names):
    data = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 8])):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def invalid_utf8_name(data, rng, names):
    """A name's bytes with one byte made 0xff (protobuf strings must be UTF-8)."""
    for name in rng.sample(names, min(len(names), 8)):
        encoded = name.encode()
        at = data.find(encoded)
        if encoded and at >= 0:
            k = at + rng.randrange(len(encoded))
            return data[:k] + rng.choice([b"\xff", b"\xc3", b"\xed"]) + data[k + 1:]
    return data


BYTE_MUTATIONS = {f.__name__: f for f in (truncate, flip_bytes, invalid_utf8_name)}


def _names(model):
    g = model.graph
    return [n.name for n in g.node] + _tensor_names(model) + [g.name]


def apply(name, model, rng, folder):
    """Apply mutation ``name``; False when it does not apply to this model (an edit that
    needs something the model, as mutated so far, lacks)."""
    try:
        PROTO_MUTATIONS[name](model, rng, folder)
    except (IndexError, ValueError, TypeError):
        return False
    return True


def make_variant(seeds, seed, index, folder):
    """Write variant ``index`` of ``seed`` into ``folder``; (seed model, mutation names)."""
    rng = random.Random(f"{seed}:{index}")
    base = rng.choice(sorted(seeds))
    model = onnx.ModelProto.FromString(seeds[base])
    applied = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        name = rng.choices(sorted(PROTO_MUTATIONS), [WEIGHTS[n] for n in sorted(PROTO_MUTATIONS)])[0]
        if apply(name, model, rng, folder):
            applied.append(name)
    data = model.SerializeToString()
    if rng.random() < 0.25:
        name = rng.choice(sorted(BYTE_MUTATIONS))
        data = BYTE_MUTATIONS[name](data, rng, _names(model)) or data
        applied.append(name)
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(data)
    return base, applied


# --- compiling a variant -----------------------------------------------------------------

def stages(model, out, target):
    """(stage name, outputs, call) of every stage the SCons tool runs for a model, in order."""
    def at(name):
        return os.path.join(out, name)
    imported, optimized, chosen, plan = at("imported.onnx"), at("optimized.onnx"), at("tactics.json"), at("plan.json")
    return [
        ("import", [imported, at("imported.bin")],
         lambda: importer.run(model, imported, at("imported.bin"))),
        ("optimize", [optimized, at("optimized.bin")],
         lambda: optimizer.run(imported, optimized, at("optimized.bin"), source="model.onnx")),
        ("tactics", [chosen], lambda: tactics.run(optimized, chosen, target.cpu, "speed", "")),
        ("plan", [plan], lambda: planner.run(optimized, plan, "model.onnx", tactics_path=chosen,
                                             ram_bytes=target.ram_bytes)),
        ("generate", [at("m.h"), at("m.c")],
         lambda: codegen.run_model(optimized, plan, chosen, at("m.h"), at("m.c"), "m", "model.onnx")),
        ("generate", [at("m_kernels.c"), at("m_kernels.h")],
         lambda: codegen.run_kernels(optimized, plan, chosen, at("m_kernels.c"), at("m_kernels.h"),
                                     "m", "model.onnx")),
        ("generate", [at("m_weights.S"), at("m_weights.bin")],
         lambda: codegen.run_weights(optimized, chosen, plan, [at("m_weights.S"), at("m_weights.bin")],
                                     "m", "model.onnx")),
    ]


def _left_behind(out, outputs):
    """The failing stage's outputs and staging folders that a failed build left behind."""
    staging = [os.path.join(out, d) for d in os.listdir(out) if d.startswith(".staging-")]
    return [p for p in outputs if os.path.exists(p)] + staging


def compile_variant(folder, target):
    """(outcome, detail) of compiling ``folder``/model.onnx into ``folder``/build."""
    model = os.path.join(folder, "model.onnx")
    out = os.path.join(folder, "build")
    os.makedirs(out, exist_ok=True)
    for stage, outputs, call in stages(model, out, target):
        try:
            call()
        except OnnxccError as e:
            line = str(e)
            left = _left_behind(out, outputs)
            if left:
                return "internal error", f"half-written: {stage} failed and left {left[0]}: {line}"
            if "\n" in line.strip():
                return "internal error", f"more than one line: {line!r}"
            return "clear error", f"{stage}: {line}"
        except BaseException as e:  # anything else would be a traceback for a user
            where = traceback.extract_tb(e.__traceback__)[-1]
            return "internal error", (f"{stage}: {type(e).__name__}: {str(e)[:200]} "
                                      f"(at {os.path.relpath(where.filename, REPO)}:{where.lineno})")
    return "ok", ""


def _child(folder, target_name, conn):
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    try:
        conn.send(compile_variant(folder, load_target(target_name)))
    except BaseException as e:  # a failure to report is itself a finding
        conn.send(("internal error", f"harness: {type(e).__name__}: {e}"))
    finally:
        conn.close()


def run_variant(folder, target_name="x86_64", timeout=20.0):
    """compile_variant in a forked child with a time and memory limit."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(folder, target_name, send))
    child.start()
    send.close()
    result = ("timeout", f"no result within {timeout:g} s")
    if receive.poll(timeout):
        try:
            result = receive.recv()
        except EOFError:
            result = ("timeout", f"the compiler died (exit code {child.exitcode}; out of memory?)")
    child.join(1)
    if child.is_alive():
        child.kill()
        child.join()
    return result


# --- the campaign ------------------------------------------------------------------------

def campaign(variants, seed, timeout=20.0, save_dir=None, only=None, progress=None):
    """Counts per outcome and the failures [(index, base, mutations, outcome, detail)]."""
    seeds = seed_models()
    counts = collections.Counter({o: 0 for o in OUTCOMES})
    failures = []
    indices = [only] if only is not None else range(variants)
    with tempfile.TemporaryDirectory(prefix="onnxcc-malformed-") as work:
        for i in indices:
            folder = os.path.join(work, f"v{i}")
            os.makedirs(folder)
            base, applied = make_variant(seeds, seed, i, folder)
            outcome, detail = run_variant(folder, timeout=timeout)
            counts[outcome] += 1
            if outcome in ("internal error", "timeout"):
                failures.append((i, base, applied, outcome, detail))
                if save_dir:
                    _save(folder, os.path.join(save_dir, f"seed{seed}-{i}"), base, applied,
                          outcome, detail)
            if progress:
                progress(i, base, applied, outcome, detail)
            shutil.rmtree(folder, ignore_errors=True)
    return counts, failures


def _save(folder, dest, base, applied, outcome, detail):
    """The variant's model and side files (without build outputs), and what happened."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(folder, dest, symlinks=True, ignore=shutil.ignore_patterns("build"))
    with open(os.path.join(dest, "outcome.txt"), "w") as f:
        f.write(f"seed model: {base}\nmutations: {', '.join(applied)}\n{outcome}: {detail}\n")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fuzz.malformed", description=__doc__.split("\n")[0])
    parser.add_argument("--variants", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per variant")
    parser.add_argument("--save", default=os.path.join(REPO, "fuzz", "malformed_failures"),
                        help="folder for failing variants ('' : do not save)")
    parser.add_argument("--only", type=int, help="replay variant ONLY of --seed")
    parser.add_argument("--verbose", action="store_true", help="one line per variant")
    args = parser.parse_args(argv)
    start = time.monotonic()
    stages_hit = collections.Counter()  # which stage gave each clear error

    def progress(i, base, applied, outcome, detail):
        if outcome == "clear error":
            stages_hit[detail.split(":")[0]] += 1
        if args.verbose or outcome in ("internal error", "timeout") or args.only is not None:
            print(f"{i:6d} {base} [{'+'.join(applied)}] {outcome}: {detail}", flush=True)
        elif (i + 1) % 500 == 0:
            print(f"{i + 1} variants, {time.monotonic() - start:.0f} s", flush=True)

    counts, failures = campaign(args.variants, args.seed, args.timeout, args.save or None,
                                args.only, progress)
    total = sum(counts.values())
    print(f"seed {args.seed}: {total} variants in {time.monotonic() - start:.0f} s: "
          + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES))
    print("clear errors by stage: " + ", ".join(f"{stage} {n}" for stage, n in stages_hit.most_common()))
    kinds = collections.Counter(detail.split(" (at ")[0][:120] for *_, detail in failures)
    for kind, n in kinds.most_common(20):
        print(f"  {n:5d} x {kind}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

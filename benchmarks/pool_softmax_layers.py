#!/usr/bin/env python3
"""Pooling and Softmax layers alone: onnxcc vs onnxruntime (and another checkout), side by side.

    .venv/bin/python benchmarks/pool_softmax_layers.py [--target x86_64] [--only sq_pool1,tf_softmax]
        [--baseline DIR]   # also a checkout of onnxcc at DIR (e.g. `git archive main | tar -x -C DIR`)

Each layer is one op of the model zoo's shapes (SqueezeNet's ceil_mode MaxPools,
ShuffleNet's and ResNet-18's padded one, M5's MaxPool1d, the transformer's attention
Softmax, M5's LogSoftmax), built with opt=speed and timed interleaved with onnxruntime on
one thread (speed.interleave: medians, onnxruntime's call overhead subtracted).
"""

import os
import subprocess
import sys
import tempfile

import onnx
from onnx import helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speed  # noqa: E402

LAYERS = {  # name: (op, input shape, attributes)
    "sq_pool1": ("MaxPool", [1, 64, 111, 111], dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    "sq_pool2": ("MaxPool", [1, 128, 55, 55], dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    "sq_pool3": ("MaxPool", [1, 256, 27, 27], dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    "shuf_pool": ("MaxPool", [1, 24, 112, 112], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    "r18_pool": ("MaxPool", [1, 64, 112, 112], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    "m5_pool1": ("MaxPool", [1, 64, 996], dict(kernel_shape=[4], strides=[4])),
    "m5_pool2": ("MaxPool", [1, 64, 247], dict(kernel_shape=[4], strides=[4])),
    "avg_3x3": ("AveragePool", [1, 64, 56, 56], dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])),
    "tf_softmax": ("Softmax", [1, 4, 128, 128], dict(axis=-1)),
    "kws_softmax": ("Softmax", [1, 1000], dict(axis=-1)),
    "m5_logsoftmax": ("LogSoftmax", [1, 1, 35], dict(axis=-1)),
    "ch_softmax": ("Softmax", [1, 21, 64, 64], dict(axis=1)),
}


def layer(op, shape, attrs):
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info("x", 1, shape)],
                              [helper.make_tensor_value_info("y", 1, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def build_at(repo, model, build_dir, target):
    """The bench harness of ``model`` built (opt=speed) by the onnxcc checkout at ``repo``."""
    name = os.path.splitext(os.path.basename(model))[0]
    elf = os.path.join(build_dir, target, name, "bench", f"{name}_bench")
    subprocess.run([sys.executable, "-m", "SCons", "-Q", f"model={model}", f"target={target}",
                    "opt=speed", f"build_dir={build_dir}", elf], cwd=repo, check=True,
                   capture_output=True)
    return elf


def baseline_parser(doc):
    """speed.layer_parser's options and --baseline."""
    ap = speed.layer_parser(doc, chunk=20)
    ap.add_argument("--baseline", help="another onnxcc checkout to time alongside")
    return ap


def table_header(args, shape_column, unit="us"):
    """The markdown header of a layer table (the baseline's columns with --baseline)."""
    base = " | baseline us | onnxcc / baseline" if args.baseline else ""
    print(f"| layer | {shape_column} | onnxcc {unit} | onnxruntime {unit} "
          f"| onnxcc / onnxruntime{base} |")
    print("|---|---|---:|---:|---:|" + ("---:|---:|" if args.baseline else ""))


def engines(path, work, args):
    """The bench harnesses of the model at ``path`` to time: this checkout's (cc) and, with
    --baseline, that checkout's (base)."""
    out = {"cc": (build_at(speed.REPO, path, os.path.join(work, "cc"), args.target), args.target)}
    if args.baseline:
        out["base"] = (build_at(args.baseline, path, os.path.join(work, "base"), args.target),
                       args.target)
    return out


def main():
    args = baseline_parser(__doc__).parse_args()
    names = args.only.split(",") if args.only else list(LAYERS)
    work = tempfile.mkdtemp(prefix="poolsoftmax")
    table_header(args, "op, input")
    for name in names:
        op, shape, attrs = LAYERS[name]
        path = os.path.join(work, f"{name}.onnx")
        onnx.save(layer(op, shape, attrs), path)
        med = speed.interleave(engines(path, work, args), path, args.rounds, args.chunk)
        ort = med["ort"] - med["idle"]
        row = f"| {name} | {op} {'x'.join(map(str, shape))} | {med['cc']:.1f} | {ort:.1f} | {med['cc'] / ort:.2f} |"
        if args.baseline:
            row += f" {med['base']:.1f} | {med['cc'] / med['base']:.2f} |"
        print(row, flush=True)


if __name__ == "__main__":
    main()

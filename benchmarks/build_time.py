#!/usr/bin/env python3
"""Build time of a big model: ``scons model=M`` from scratch, and after a weights-only edit.

For ResNet-18 (11.7 M float32 parameters, 45 MB, written here with onnx.helper: the
torchvision layout with BatchNormalization nodes, random weights) and for kws
(models/kws.onnx), with ``weights=bin`` (the default: the weights as one binary file,
included by an assembler file) and ``weights=c`` (C array literals), it prints the median
seconds of

* scratch: the default target (library, Make/CMake fragments, footprint ELF, size
  report, report.html) into an empty build folder;
* weights edit: every weight scaled (the same graph), built again; it also checks, with
  SCons' --debug=explain, that only the import, optimize and weights stages, the
  weights' compile and the links and reports after them ran (never the plan, the
  kernels or the run function).

    .venv/bin/python benchmarks/build_time.py [--repeat 3] [--models resnet18,kws]
        [--weights bin,c] [--target x86_64] [--jobs 2]
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPLAIN = re.compile(r"^scons: (?:re)?building `([^']+)' because", re.M)
#: what a weights-only edit may rebuild (file names in the model's build folder)
WEIGHTS_ONLY = re.compile(r"(imported|optimized)\.(onnx|bin)|\w+_weights\.(c|S|bin|o|su)"
                          r"|lib\w+\.[ao]|fit\.json|size\.json|report\.html"
                          r"|footprint/\w+_footprint")


def resnet18(seed=0):
    """ResNet-18 for 1x3x224x224 images, 1000 classes: conv 7x7/2, BatchNorm, Relu,
    max pool, 4 stages of 2 basic blocks (64, 128, 256, 512 channels; a 1x1/2
    convolution + BatchNorm on the shortcut where the shape changes), global average pool,
    Gemm."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    def conv_bn(x, cin, cout, k, stride, name, relu=True):
        w = const(f"{name}.w", rng.standard_normal((cout, cin, k, k)) * np.sqrt(2 / (cin * k * k)))
        nodes.append(helper.make_node("Conv", [x, w], [f"{name}.conv"], f"{name}.conv",
                                      kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4))
        bn = [const(f"{name}.{p}", v) for p, v in (
            ("gamma", rng.uniform(0.5, 1.5, cout)), ("beta", rng.uniform(-0.1, 0.1, cout)),
            ("mean", rng.uniform(-0.1, 0.1, cout)), ("var", rng.uniform(0.5, 1.5, cout)))]
        nodes.append(helper.make_node("BatchNormalization", [f"{name}.conv"] + bn,
                                      [f"{name}.bn"], f"{name}.bn", epsilon=1e-5))
        if not relu:
            return f"{name}.bn"
        nodes.append(helper.make_node("Relu", [f"{name}.bn"], [f"{name}.relu"], f"{name}.relu"))
        return f"{name}.relu"

    x = conv_bn("input", 3, 64, 7, 2, "conv1")
    nodes.append(helper.make_node("MaxPool", [x], ["pool1"], "pool1", kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = "pool1", 64
    for stage, cout in enumerate((64, 128, 256, 512), 1):
        for block in range(2):
            name = f"layer{stage}.{block}"
            stride = 2 if stage > 1 and block == 0 else 1
            y = conv_bn(x, cin, cout, 3, stride, f"{name}.a")
            y = conv_bn(y, cout, cout, 3, 1, f"{name}.b", relu=False)
            shortcut = (conv_bn(x, cin, cout, 1, stride, f"{name}.down", relu=False)
                        if stride != 1 or cin != cout else x)
            nodes.append(helper.make_node("Add", [y, shortcut], [f"{name}.add"], f"{name}.add"))
            nodes.append(helper.make_node("Relu", [f"{name}.add"], [f"{name}.out"], f"{name}.out"))
            x, cin = f"{name}.out", cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], "gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], "flat"))
    fc_w = const("fc.w", rng.standard_normal((1000, 512)) / np.sqrt(512))
    fc_b = const("fc.b", np.zeros(1000))
    nodes.append(helper.make_node("Gemm", ["flat", fc_w, fc_b], ["logits"], "fc", transB=1))
    graph = helper.make_graph(
        nodes, "resnet18",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def scale_weights(path, factor):
    """The same graph with every float weight tensor scaled: a weights-only edit."""
    model = onnx.load(path)
    for init in model.graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype == np.float32 and a.ndim > 1:
            init.CopyFrom(numpy_helper.from_array(a * np.float32(factor), init.name))
    onnx.save(model, path)


def scons(folder, model, target, weights, jobs, explain=False):
    """Seconds of one ``scons`` run in the repository building into ``folder``, and the
    build folder's files SCons rebuilt (with ``explain``)."""
    cmd = [sys.executable, "-m", "SCons", "-Q", f"-j{jobs}", f"model={model}",
           f"target={target}", f"weights_format={weights}", f"build_dir={folder}"]
    if explain:
        cmd.append("--debug=explain")
    start = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    if r.returncode != 0:
        sys.exit(f"build failed: {' '.join(cmd)}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    stem = os.path.splitext(os.path.basename(model))[0]
    built = {p.split(f"/{stem}/", 1)[-1] for p in EXPLAIN.findall(r.stdout)
             if f"/{stem}/" in p}
    return seconds, built


def measure(model, target, weights, repeat, jobs, work):
    """(median seconds from scratch, median seconds after a weights-only edit)."""
    scratch, edit = [], []
    for run in range(repeat):
        folder = os.path.join(work, f"build-{weights}-{run}")
        scratch.append(scons(folder, model, target, weights, jobs)[0])
        scale_weights(model, 1.01)
        seconds, built = scons(folder, model, target, weights, jobs, explain=True)
        edit.append(seconds)
        stray = sorted(b for b in built if not WEIGHTS_ONLY.fullmatch(b))
        if stray:
            sys.exit(f"a weights-only edit of {model} rebuilt {', '.join(stray)}")
        stem = os.path.splitext(os.path.basename(model))[0]
        if f"{stem}_weights.o" not in built:
            sys.exit(f"a weights-only edit of {model} did not rebuild the weights")
        shutil.rmtree(folder)
    return statistics.median(scratch), statistics.median(edit)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", default="resnet18,kws")
    parser.add_argument("--weights", default="bin,c")
    parser.add_argument("--target", default="x86_64")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="onnxcc-build-time-") as work:
        print(f"target {args.target}, scons -j{args.jobs}, median of {args.repeat} runs (s); "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start")
        print(f"{'model':<10} {'weights':<8} {'MB':>6} {'scratch':>8} {'weights edit':>13}")
        for name in args.models.split(","):
            model = os.path.join(work, f"{name}.onnx")
            if name == "resnet18":
                onnx.save(resnet18(), model)
            else:
                shutil.copy(os.path.join(ROOT, "models", f"{name}.onnx"), model)
            megabytes = sum(numpy_helper.to_array(t).nbytes
                            for t in onnx.load(model).graph.initializer) / 1e6
            for weights in args.weights.split(","):
                scratch, edit = measure(model, args.target, weights, args.repeat, args.jobs, work)
                print(f"{name:<10} {weights:<8} {megabytes:>6.1f} {scratch:>8.1f} {edit:>13.1f}",
                      flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Activations: onnxcc vs onnxruntime (one thread) on models that are mostly
transcendental activations, measured side by side (interleaved rounds, medians).

    .venv/bin/python benchmarks/activations.py                       # host, markdown table
    .venv/bin/python benchmarks/activations.py --baseline /tmp/main  # and another checkout
    .venv/bin/python benchmarks/activations.py --cortex-m            # Cortex-M4 instructions

The models are written here with onnx.helper, as exporters write them (SiLU as
x * Sigmoid(x), GELU as x * 0.5 * (1 + Erf(x / sqrt 2)), ...):

- ``mbconv``: two EfficientNet-B0 style blocks: 1x1 expand conv + SiLU, depthwise 3x3 +
  SiLU, squeeze-excitation (GlobalAveragePool, 1x1 conv + SiLU, 1x1 conv + Sigmoid, Mul),
  1x1 projection;
- ``silu``, ``sigmoid``, ``tanh``, ``gelu``, ``mish``, ``softplus``, ``elu``, ``exp``:
  that activation alone over a 64x56x56 tensor.

``--baseline DIR`` builds the same models with the compiler checked out in DIR (e.g.
``git archive main | tar -x -C /tmp/main``) and times it in the same rounds: the
before/after of a change. The onnxruntime column has its Python call overhead (the same
call on a model that computes nothing) subtracted, as benchmarks/speed.py does; the last
column is that call, which for the one-op models (memory-bound, output as large as the
input) includes returning an output of the same size: there the subtraction flatters
onnxruntime.
"""

import argparse
import math
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speed  # noqa: E402
from speed import REPO  # noqa: E402

F = TensorProto.FLOAT
RNG = np.random.default_rng(0)


def _save(path, nodes, x_shape, y_shape, inits, opset=17):
    graph = helper.make_graph(nodes, os.path.basename(path)[:-5],
                              [helper.make_tensor_value_info("x", F, x_shape)],
                              [helper.make_tensor_value_info("y", F, y_shape)],
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def _silu(x, y, tag):
    return [helper.make_node("Sigmoid", [x], [f"{tag}_s"]), helper.make_node("Mul", [x, f"{tag}_s"], [y])]


def _w(*shape):
    return (RNG.standard_normal(shape) * (2.0 / math.prod(shape[1:])) ** 0.5).astype(np.float32)


def mbconv(path, c=24, expand=6, hw=56, blocks=2):
    """EfficientNet-B0's MBConv blocks (batch norms folded: convs with biases)."""
    nodes, inits, x = [], {}, "x"
    e, squeeze = c * expand, max(1, c // 4)
    for b in range(blocks):
        t = f"b{b}"
        inits.update({f"{t}_we": _w(e, c, 1, 1), f"{t}_be": _w(e), f"{t}_wd": _w(e, 1, 3, 3),
                      f"{t}_bd": _w(e), f"{t}_w1": _w(squeeze, e, 1, 1), f"{t}_b1": _w(squeeze),
                      f"{t}_w2": _w(e, squeeze, 1, 1), f"{t}_b2": _w(e),
                      f"{t}_wp": _w(c, e, 1, 1), f"{t}_bp": _w(c)})
        nodes += [helper.make_node("Conv", [x, f"{t}_we", f"{t}_be"], [f"{t}_e"])]
        nodes += _silu(f"{t}_e", f"{t}_ea", f"{t}_1")
        nodes += [helper.make_node("Conv", [f"{t}_ea", f"{t}_wd", f"{t}_bd"], [f"{t}_d"],
                                   group=e, pads=[1, 1, 1, 1])]
        nodes += _silu(f"{t}_d", f"{t}_da", f"{t}_2")
        nodes += [helper.make_node("GlobalAveragePool", [f"{t}_da"], [f"{t}_g"]),
                  helper.make_node("Conv", [f"{t}_g", f"{t}_w1", f"{t}_b1"], [f"{t}_q"])]
        nodes += _silu(f"{t}_q", f"{t}_qa", f"{t}_3")
        nodes += [helper.make_node("Conv", [f"{t}_qa", f"{t}_w2", f"{t}_b2"], [f"{t}_r"]),
                  helper.make_node("Sigmoid", [f"{t}_r"], [f"{t}_s"]),
                  helper.make_node("Mul", [f"{t}_da", f"{t}_s"], [f"{t}_se"]),
                  helper.make_node("Conv", [f"{t}_se", f"{t}_wp", f"{t}_bp"], [f"{t}_p"]),
                  helper.make_node("Add", [f"{t}_p", x], ["y" if b == blocks - 1 else f"{t}_y"])]
        x = f"{t}_y"
    return _save(path, nodes, [1, c, hw, hw], [1, c, hw, hw], inits)


def unary(path, op, shape=(1, 64, 56, 56)):
    """One activation over ``shape``, written as exporters write it."""
    inits = {}
    if op == "silu":
        nodes = _silu("x", "y", "a")
    elif op == "gelu":
        inits = {"sqrt2": np.float32(math.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5)}
        nodes = [helper.make_node("Div", ["x", "sqrt2"], ["t"]), helper.make_node("Erf", ["t"], ["e"]),
                 helper.make_node("Add", ["e", "one"], ["u"]), helper.make_node("Mul", ["x", "u"], ["m"]),
                 helper.make_node("Mul", ["m", "half"], ["y"])]
    elif op == "mish":
        nodes = [helper.make_node("Softplus", ["x"], ["sp"]), helper.make_node("Tanh", ["sp"], ["t"]),
                 helper.make_node("Mul", ["x", "t"], ["y"])]
    else:
        nodes = [helper.make_node(op.capitalize(), ["x"], ["y"])]
    return _save(path, nodes, list(shape), list(shape), inits)


UNARY = ["silu", "sigmoid", "tanh", "gelu", "mish", "softplus", "elu", "exp"]


def _repos(args):
    """The checkouts to time: this one, and --baseline's."""
    return {"onnxcc": REPO, **({"baseline": args.baseline} if args.baseline else {})}


def host(models, args, folder):
    names = list(_repos(args))
    print(f"| model | {' | '.join(f'{n} (us)' for n in names)} | onnxruntime (us) | "
          f"{' | '.join(f'{n} / ort' for n in names)} | onnxruntime call (us) |")
    print("| --- |" + " ---: |" * (2 * len(names) + 2))
    for model in models:
        engines = {n: (speed.harness(model, os.path.join(folder, n), options=["opt=speed"],
                                     repo=repo)[0], "x86_64") for n, repo in _repos(args).items()}
        med = speed.interleave(engines, model, args.rounds, args.chunk)
        ort = med["ort"] - med["idle"]
        times = " | ".join(f"{med[n]:.1f}" for n in names)
        ratios = " | ".join(f"{med[n] / ort:.2f}" for n in names)
        print(f"| {os.path.basename(model)[:-5]} | {times} | {ort:.1f} | {ratios} | "
              f"{med['idle']:.1f} |", flush=True)


def cortex_m(models, args, folder):
    """Instructions per inference on the Cortex-M4 (QEMU -icount: deterministic)."""
    repos = _repos(args)
    columns = [(r, opt) for r in repos for opt in ("speed", "size")]
    print("| model | " + " | ".join(f"{r} opt={opt}" for r, opt in columns) + " |")
    print("| --- |" + " ---: |" * len(columns))
    for model in models:
        name, counts = os.path.basename(model)[:-5], []
        for r, opt in columns:
            counts.append(speed.cortex_m_bench(model, os.path.join(folder, f"m4-{r}-{opt}"),
                                               [f"opt={opt}"], repo=repos[r])[0])
        print(f"| {name} | " + " | ".join(f"{c:,}" for c in counts) + " |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="another onnxcc checkout to time side by side")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds")
    parser.add_argument("--chunk", type=int, default=20, help="runs per engine per round")
    parser.add_argument("--cortex-m", action="store_true", help="Cortex-M4 instruction counts instead")
    parser.add_argument("--only", nargs="*", help="model names (default: all)")
    args = parser.parse_args()
    folder = os.path.join(REPO, "build", "activations")
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        small = args.cortex_m  # QEMU: smaller tensors
        models = [mbconv(os.path.join(tmp, "mbconv.onnx"), hw=16 if small else 56)]
        models += [unary(os.path.join(tmp, f"{op}.onnx"), op, (1, 16, 16, 16) if small else (1, 64, 56, 56))
                   for op in UNARY]
        models = [m for m in models if not args.only or os.path.basename(m)[:-5] in args.only]
        try:
            (cortex_m if args.cortex_m else host)(models, args, folder)
        except speed.BuildFailed as e:
            sys.exit(f"activations.py: {e}")


if __name__ == "__main__":
    main()

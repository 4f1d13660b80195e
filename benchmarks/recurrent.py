#!/usr/bin/env python3
"""Recurrent speech models: onnxcc's recurrent tactics vs its reference kernel vs
onnxruntime (one thread), median latency measured side by side.

    .venv/bin/python benchmarks/recurrent.py                 # host table
    .venv/bin/python benchmarks/recurrent.py --cortex-m      # and Cortex-M4 instructions

The models are written here with onnx.helper (seeded weights): 49 steps of 40 features
(batch 1) through one or two LSTM or GRU layers of 128 units, then a Gemm classifier of
the last hidden state into 12 classes -- the shape of a keyword spotter on MFCC frames.
Each is built twice at opt=speed: as the tactics stage chooses, and with every recurrent
node forced to its reference kernel (``tactic=LSTM:reference``: the code before the
recurrent tactics existed). Timing and onnxruntime's call overhead are benchmarks/speed.py's.
--cortex-m counts instructions (QEMU -icount, exact) of a small LSTM and GRU (hidden 32)
on the Cortex-M4 both ways, with their arena.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speed  # noqa: E402

STEPS, FEATURES, CLASSES = 49, 40, 12
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def speech_model(path, cell, layers, hidden, seed=0):
    """X[49, 1, 40] -> ``layers`` x ``cell``(hidden) -> last hidden state -> Gemm -> [1, 12]."""
    rng = np.random.default_rng(seed)
    scale = 1 / np.sqrt(hidden)
    inits, nodes, x, width = [], [], "x", FEATURES
    for k in range(layers):
        g = GATES[cell]
        for name, shape in ((f"w{k}", [1, g * hidden, width]), (f"r{k}", [1, g * hidden, hidden]),
                            (f"b{k}", [1, 2 * g * hidden])):
            value = rng.uniform(-scale, scale, shape).astype(np.float32)
            inits.append(numpy_helper.from_array(value, name))
        outputs = [f"y{k}", f"h{k}"]
        nodes.append(helper.make_node(cell, [x, f"w{k}", f"r{k}", f"b{k}"], outputs,
                                      hidden_size=hidden, name=f"{cell.lower()}{k}"))
        nodes.append(helper.make_node("Squeeze", [f"y{k}", "axis1"], [f"s{k}"]))
        x, width = f"s{k}", hidden
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "axis1"))
    inits.append(numpy_helper.from_array(np.array([1, hidden], np.int64), "flat"))
    inits.append(numpy_helper.from_array(
        rng.uniform(-scale, scale, [hidden, CLASSES]).astype(np.float32), "fc"))
    inits.append(numpy_helper.from_array(np.zeros(CLASSES, np.float32), "fcb"))
    nodes.append(helper.make_node("Reshape", [f"h{layers - 1}", "flat"], ["last"]))
    nodes.append(helper.make_node("Gemm", ["last", "fc", "fcb"], ["logits"]))
    graph = helper.make_graph(
        nodes, os.path.splitext(os.path.basename(path))[0],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [STEPS, 1, FEATURES])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, CLASSES])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def reference_option(cell):
    return [f"tactic={cell}:reference"]


def host(models, args):
    """The host table: fast and reference builds and onnxruntime, interleaved in rounds."""
    print("| model | onnxcc (us) | onnxcc reference kernel (us) | onnxruntime (us) | ratio | "
          "ratio before | speedup |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for path, cell in models:
        elfs = {"fast": speed.build(path, "speed", os.path.join(args.build_dir, "fast"))[0],
                "reference": speed.build(path, "speed", os.path.join(args.build_dir, "reference"),
                                         options=reference_option(cell))[0]}
        med = speed.interleave({kind: (elf, "x86_64") for kind, elf in elfs.items()}, path,
                               args.rounds, args.chunk)
        ort = med["ort"] - med["idle"]
        name = os.path.splitext(os.path.basename(path))[0]
        print(f"| {name} | {med['fast']:.1f} | {med['reference']:.1f} | {ort:.1f} "
              f"(call {med['idle']:.1f}) | {med['fast'] / ort:.2f} | {med['reference'] / ort:.2f} | "
              f"{med['reference'] / med['fast']:.1f}x |", flush=True)


def cortex_m(models, args):
    """Cortex-M4 instructions per inference (and arena) of each model, both ways."""
    print("| model | Cortex-M4 instructions | reference kernel | speedup | arena / reference (KiB) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for path, cell in models:
        name = os.path.splitext(os.path.basename(path))[0]
        (fast, sizes), (ref, ref_sizes) = (
            speed.cortex_m_bench(path, os.path.join(args.build_dir, kind), options)
            for kind, options in (("fast", []), ("reference", reference_option(cell))))
        arena, ref_arena = sizes["ram"]["arena"], ref_sizes["ram"]["arena"]
        print(f"| {name} | {fast:,.0f} | {ref:,.0f} | {ref / fast:.2f}x | "
              f"{arena / 1024:.1f} / {ref_arena / 1024:.1f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds")
    parser.add_argument("--chunk", type=int, default=20, help="runs per engine per round")
    parser.add_argument("--build-dir", default=os.path.join(speed.REPO, "build", "recurrent"))
    parser.add_argument("--cortex-m", action="store_true", help="add Cortex-M4 instruction counts")
    parser.add_argument("--no-host", action="store_true", help="skip the host comparison")
    args = parser.parse_args()
    folder = os.path.join(args.build_dir, "models")
    os.makedirs(folder, exist_ok=True)
    if not args.no_host:
        host([(speech_model(os.path.join(folder, f"{cell.lower()}{layers}.onnx"), cell, layers, 128),
               cell) for cell in ("LSTM", "GRU") for layers in (1, 2)], args)
    if args.cortex_m:
        print()
        cortex_m([(speech_model(os.path.join(folder, f"{cell.lower()}_small.onnx"), cell, 1, 32),
                   cell) for cell in ("LSTM", "GRU")], args)


if __name__ == "__main__":
    main()

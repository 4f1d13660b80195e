#!/usr/bin/env python3
"""onnxcc vs onnxruntime: median latency of every model in models/, measured side by side.

    .venv/bin/python benchmarks/speed.py                  # all models, markdown table on stdout
    .venv/bin/python benchmarks/speed.py --cortex-m       # and Cortex-M4 instruction counts

For each model the script builds onnxcc's bench harness twice (opt=speed and opt=size, on
the host target) and opens an onnxruntime session on one thread. Then it interleaves the
engines in rounds -- a chunk of runs of each, every round -- so that both see the same
machine load, and takes the median of every run of each. onnxruntime is called from
Python: the median of the same call on a model that computes nothing (the same inputs and
outputs) is its call overhead, and is subtracted. The ratio is onnxcc / onnxruntime
(below 1: onnxcc is faster); the summary is the geometric mean of the ratios of the
workload models (not TEST_MODELS).
Flash is the model code (kernels + run function) and weights of the host build
(size.json); --cortex-m adds `scons bench` instruction counts on the Cortex-M4 (QEMU
-icount, deterministic) and its flash.
"""

import argparse
import contextlib
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "site_scons"))

from onnxcc.verbs import bench, verify  # noqa: E402
from onnxcc.importer.stage import read_model  # noqa: E402
from onnxcc.target import host_cpu_flags, load_target  # noqa: E402

OPTS = ("speed", "size")
#: models in models/ that exist to test onnxcc, not as workloads: out of the summary
TEST_MODELS = {"tiny_cnn"}


class BuildFailed(Exception):
    """A scons run failed; the message has the tail of its output."""


def scons(*args, repo=REPO):
    """Run scons with ``args`` in the checkout ``repo``; its output (BuildFailed if it failed)."""
    cmd = [sys.executable, "-m", "SCons", "-Q", *args]
    r = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise BuildFailed(f"{' '.join(args)} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r.stdout


def harness(model, build_dir, target="x86_64", options=(), also=(), repo=REPO):
    """Build the bench harness of ``model`` into ``build_dir`` with SCons ``options`` (and the
    files ``also`` of the model's build folder, e.g. size.json); (its ELF, that folder)."""
    name = os.path.splitext(os.path.basename(model))[0]
    out = os.path.join(build_dir, target, name)
    elf = os.path.join(out, "bench", f"{name}_bench")
    scons(f"model={model}", f"target={target}", *options, f"build_dir={build_dir}", elf,
          *(os.path.join(out, f) for f in also), repo=repo)
    return elf, out


def build(model, opt, build_dir, target="x86_64", options=()):
    """The bench harness ELF and size.json of ``model`` built with ``opt`` (and more SCons
    ``options``, e.g. tactic=...)."""
    elf, out = harness(model, os.path.join(build_dir, opt), target, [f"opt={opt}", *options],
                       also=["size.json"])
    with open(os.path.join(out, "size.json")) as f:
        return elf, json.load(f)


def ort_session(model_or_bytes, profile_prefix=None):
    """onnxruntime on one thread; with ``profile_prefix``, recording each node's time
    (onnxruntime's profiler writes ``<prefix>_<date>.json``)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    return ort.InferenceSession(model_or_bytes, options, providers=["CPUExecutionProvider"])


def overhead_model(model):
    """A model with ``model``'s inputs and outputs that computes nothing: each output is a
    constant of its shape (the inputs are fed and ignored)."""
    session = ort_session(model.SerializeToString())
    nodes, outputs = [], []
    for k, o in enumerate(session.get_outputs()):
        out = next(v for v in model.graph.output if v.name == o.name)
        elem = out.type.tensor_type.elem_type
        dtype = helper.tensor_dtype_to_np_dtype(elem)
        shape = [d if isinstance(d, int) else 1 for d in o.shape]
        value = helper.make_tensor(f"c{k}", elem, shape, np.zeros(shape, dtype).flatten().tolist())
        nodes.append(helper.make_node("Constant", [], [o.name], value=value))
        outputs.append(helper.make_tensor_value_info(o.name, elem, shape))
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    graph = helper.make_graph(nodes, "overhead", inputs, outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def time_session(session, feeds, runs, cpu=None):
    """Nanoseconds of each of ``runs`` calls of ``session``; with a list ``cpu``, each
    call's CPU time is appended to it too (onnxruntime on one thread computes on the
    calling thread: its thread's CPU time is the call's)."""
    names = [o.name for o in session.get_outputs()]
    costs = []
    for _ in range(runs):
        start, start_cpu = time.perf_counter_ns(), time.thread_time_ns()
        session.run(names, feeds)
        costs.append(time.perf_counter_ns() - start)
        if cpu is not None:
            cpu.append(time.thread_time_ns() - start_cpu)
    return costs


def time_harness(elf, runs, target, warmup=None):
    r = subprocess.run(bench.command(load_target(target), elf, runs, warmup), capture_output=True,
                       text=True, check=True)
    return bench.parse(r.stdout)


def cpu_us(elf, runs):
    """CPU microseconds of one run of a host bench harness: the CPU time (user and system,
    from the kernel's accounting of the child) of ``runs`` + 5 runs less that of 5, so
    that start-up and loading the weights cancel out. Unlike wall time it leaves out the
    time the process waits for a core, or a virtual machine for its host: on a shared
    machine it moves far less from run to run."""
    def seconds(n):
        proc = subprocess.Popen([elf, str(n), "1"], stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, elf)
        return usage.ru_utime + usage.ru_stime
    return (seconds(runs + 5) - seconds(5)) / runs * 1e6


def ort_engines(model_path):
    """onnxruntime on one thread: (session, feeds) of the model on verify's inputs (those
    the bench harness runs on), and of its overhead model (see overhead_model)."""
    model = read_model(model_path)
    inputs = verify.random_inputs(model, {}, 0)
    ort_model = onnx.load(model_path)
    ort_model.ir_version = min(ort_model.ir_version, 10)
    engines = []
    for session in (ort_session(ort_model.SerializeToString()), ort_session(overhead_model(ort_model))):
        engines.append((session, {i.name: x for i, x in zip(session.get_inputs(), inputs)}))
    return engines


def host_targets(requested):
    """The requested host targets' names, native resolved to this machine's target file,
    each once; a target whose [cpu] features this CPU lacks is skipped with a note."""
    flags, targets = host_cpu_flags(), []
    for name in requested:
        target = load_target(name)
        missing = [f for f in target.cpu.features if f not in flags]
        if missing:
            print(f"{os.path.basename(sys.argv[0])}: this CPU has no {', '.join(missing)} "
                  f"(/proc/cpuinfo): {target.name} skipped\n")
        elif target.name not in targets:
            targets.append(target.name)
    return targets


@contextlib.contextmanager
def one_cpu():
    """Run the block on one CPU: this thread, onnxruntime's calls on it (one thread:
    onnxruntime computes on the calling thread) and the harnesses it starts, which
    inherit the mask. On a shared virtual machine one vCPU can run 40% slower than the
    other for minutes (its host core's other thread busy): measured, SqueezeNet 8044 us
    and onnxruntime 7323 us pinned to one, 5509 and 5456 us pinned to the other. Left
    free, the long-lived Python process sits on one vCPU while each harness process lands
    on either, and the ratio measures the two vCPUs as much as the two engines. The
    last CPU the process may use is chosen (the kernel's housekeeping favours the
    first); without sched_setaffinity nothing is pinned."""
    if not hasattr(os, "sched_setaffinity"):
        yield None
        return
    allowed = os.sched_getaffinity(0)
    chosen = max(allowed)
    os.sched_setaffinity(0, {chosen})
    try:
        yield chosen
    finally:
        os.sched_setaffinity(0, allowed)


@one_cpu()
def interleave(harnesses, model_path, rounds, chunk, warmup=None, cpu=False):
    """Median microseconds of one run of each bench harness (``{key: (elf, target)}``) and
    of onnxruntime (``ort``) and its call overhead (``idle``), timed in ``rounds`` rounds
    of ``chunk`` runs of each engine, so that all see the same machine load. The harnesses
    take turns at running first after onnxruntime (measured: the first one there ran up to
    20% slower, ResNet-18 new/old 1.21 in one order and 0.95 in the other). With ``cpu``
    (host targets), also the medians of CPU time, in the same rounds (a harness's from
    4 * ``chunk`` more runs each round, cpu_us): (wall, cpu). All on one CPU (one_cpu)."""
    (session, feeds), (idle, idle_feeds) = ort_engines(model_path)
    samples = {k: [] for k in ("ort", "idle", *harnesses)}
    cpus = {k: [] for k in samples} if cpu else {}
    time_session(session, feeds, chunk)  # warm up
    time_session(idle, idle_feeds, chunk)
    keys = list(harnesses)
    for r in range(rounds):
        for key in keys[r % len(keys):] + keys[:r % len(keys)]:
            elf, target = harnesses[key]
            samples[key] += time_harness(elf, chunk, target, warmup)
            if cpu:
                cpus[key].append(cpu_us(elf, 4 * chunk) * 1000)
        samples["ort"] += time_session(session, feeds, chunk, cpus.get("ort"))
        samples["idle"] += time_session(idle, idle_feeds, chunk, cpus.get("idle"))
    wall = {k: statistics.median(v) / 1000 for k, v in samples.items()}
    return (wall, {k: statistics.median(v) / 1000 for k, v in cpus.items()}) if cpu else wall


def measure(model_path, build_dir, rounds, chunk, target):
    elfs, sizes = {}, {}
    for opt in OPTS:
        elfs[opt], sizes[opt] = build(model_path, opt, build_dir, target)
    med = interleave({opt: (elfs[opt], target) for opt in OPTS}, model_path, rounds, chunk)
    return med, sizes


def layer_parser(doc, chunk=10):
    """The options of a benchmark of single layers (--target, --only, --rounds, --chunk),
    for it to add its own to."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--target", default="x86_64")
    ap.add_argument("--only", help="comma-separated layer names")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--chunk", type=int, default=chunk)
    return ap


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def cortex_m_bench(model_path, build_dir, options=(), repo=REPO):
    """(instructions per inference on the Cortex-M4, QEMU -icount: deterministic, and
    size.json) of ``model_path`` built into ``build_dir`` with SCons ``options``."""
    name = os.path.splitext(os.path.basename(model_path))[0]
    out = os.path.join(build_dir, "armv7", name)
    scons(f"model={model_path}", "target=armv7", *options, f"build_dir={build_dir}", "bench",
          os.path.join(out, "size.json"), repo=repo)
    with open(os.path.join(out, "bench", "bench.json")) as f:
        instructions = json.load(f)["median"]
    with open(os.path.join(out, "size.json")) as f:
        return instructions, json.load(f)


def cortex_m(model_path, build_dir):
    """Instructions per inference on the Cortex-M4 and size.json, per opt."""
    return {opt: cortex_m_bench(model_path, os.path.join(build_dir, opt), [f"opt={opt}"])
            for opt in OPTS}


def code_bytes(sizes):
    return sizes["flash"]["kernels"] + sizes["flash"]["model"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help="ONNX files (default: models/*.onnx)")
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds")
    parser.add_argument("--chunk", type=int, default=25, help="runs per engine per round")
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build", "speed"))
    parser.add_argument("--target", default="x86_64", help="the host target (x86_64-avx512 too)")
    parser.add_argument("--cortex-m", action="store_true", help="add Cortex-M4 instruction counts")
    parser.add_argument("--no-host", action="store_true", help="skip the host comparison")
    args = parser.parse_args()
    models = args.models or sorted(glob.glob(os.path.join(REPO, "models", "*.onnx")))
    try:
        if not args.no_host:
            host(models, args)
        if args.cortex_m:
            cortex_m_table(models, args)
    except BuildFailed as e:
        sys.exit(f"speed.py: {e}")


def host(models, args):

    print("| model | onnxcc speed (us) | onnxcc size (us) | onnxruntime (us) | ratio speed | "
          "ratio size | code speed / size (KiB) | weights speed / size (KiB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    ratios = []
    for path in models:
        med, sizes = measure(path, args.build_dir, args.rounds, args.chunk, args.target)
        ort = med["ort"] - med["idle"]
        ratio = {opt: med[opt] / ort for opt in OPTS}
        name = os.path.splitext(os.path.basename(path))[0]
        if name not in TEST_MODELS:
            ratios.append(ratio["speed"])
        print(f"| {name} | {med['speed']:.1f} | {med['size']:.1f} | {ort:.1f} "
              f"(call {med['idle']:.1f}) | {ratio['speed']:.2f} | {ratio['size']:.2f} | "
              f"{code_bytes(sizes['speed']) / 1024:.1f} / {code_bytes(sizes['size']) / 1024:.1f} | "
              f"{sizes['speed']['flash']['weights'] / 1024:.1f} / "
              f"{sizes['size']['flash']['weights'] / 1024:.1f} |", flush=True)
    if ratios:
        geomean = geometric_mean(ratios)
        print(f"\ngeometric mean of onnxcc (opt=speed) / onnxruntime over {len(ratios)} models"
              f"{' (not ' + ', '.join(sorted(TEST_MODELS)) + ')' if TEST_MODELS else ''}: "
              f"{geomean:.2f}\n")


def cortex_m_table(models, args):
    print("| model | Cortex-M4 instructions speed | size | speedup | code speed / size (KiB) | "
          "flash speed / size (KiB) | arena speed / size (KiB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for path in models:
        r = cortex_m(path, args.build_dir)
        (fast, s_fast), (small, s_small) = r["speed"], r["size"]
        name = os.path.splitext(os.path.basename(path))[0]
        print(f"| {name} | {fast:,.0f} | {small:,.0f} | {small / fast:.1f}x | "
              f"{code_bytes(s_fast) / 1024:.1f} / {code_bytes(s_small) / 1024:.1f} | "
              f"{s_fast['flash']['total'] / 1024:.1f} / {s_small['flash']['total'] / 1024:.1f} | "
              f"{s_fast['ram']['arena'] / 1024:.1f} / {s_small['ram']['arena'] / 1024:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()

"""SCons tool ``onnxcc``: one build rule per compiler stage.

    env = Environment(tools=['default', 'onnxcc'])
    model = env.OnnxModel('models/kws.onnx', target='x86_64')
    # model.lib (lib<name>.a), model.include (folder of <name>.h), model.verify (alias)

Every stage's outputs are files that SCons signs by content, so a stage runs again only
when what it reads changed: a weights-only edit re-generates the weights file and re-links,
without re-planning memory or re-generating kernels. The compiler itself is the ``onnxcc``
package beside this folder; this module only declares builders over it.
"""

import glob
import importlib.util
import json
import os
import sys
import traceback
from types import SimpleNamespace

import SCons.Action
import SCons.Builder
import SCons.Errors
import SCons.Scanner

_SITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _SITE not in sys.path:  # the tool may be loaded with toolpath= from another tree
    sys.path.insert(0, _SITE)
# SCons registers a tool module as sys.modules[<tool name>] while loading it (with
# site_tools/ first on sys.path), and this tool shares its name with the compiler package:
# load the package under its own name from its own folder.
if getattr(sys.modules.get("onnxcc"), "__path__", None) is None:
    _spec = importlib.util.spec_from_file_location(
        "onnxcc", os.path.join(_SITE, "onnxcc", "__init__.py"))
    sys.modules["onnxcc"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["onnxcc"])

from onnxcc import autotune as autotuner  # noqa: E402
from onnxcc import bench, importer, optimizer, planner, tactics, verify  # noqa: E402
from onnxcc.cgen import c_ident  # noqa: E402
from onnxcc.codegen import sources as codegen  # noqa: E402
from onnxcc.errors import OnnxccError  # noqa: E402
from onnxcc.files import write_text  # noqa: E402
from onnxcc.paths import REPO_ROOT, RUNTIME_DIR, TEMPLATES_DIR  # noqa: E402
from onnxcc import footprint  # noqa: E402
from onnxcc.report import human_bytes  # noqa: E402
from onnxcc.targets import load_target, with_memory  # noqa: E402

_PACKAGE_FILES = sorted(glob.glob(os.path.join(_SITE, "onnxcc", "**", "*.py"), recursive=True))


def _stage(label, fn, varlist=()):
    """A Python action: ``fn(targets, sources, env)`` returns the line to print.

    A user error becomes one line (``scons: *** [target] what, where, what to do``);
    anything else is a bug in onnxcc, reported as such (the traceback with verbose=1).
    """
    def action(target, source, env):
        try:
            line = fn([str(t) for t in target], [str(s) for s in source], env)
        except OnnxccError as e:
            raise SCons.Errors.BuildError(errstr=str(e), exitstatus=2) from None
        except Exception as e:
            if env.get("ONNXCC_VERBOSE"):
                traceback.print_exc()
            raise SCons.Errors.BuildError(
                errstr=f"internal error in onnxcc's {label} stage: {type(e).__name__}: {e} "
                       "(please report it; verbose=1 shows where)", exitstatus=3) from None
        if line:
            print(line)
        return 0

    def show(target, source, env):
        if env.get("ONNXCC_VERBOSE"):
            return (f"[{label}] {fn.__name__}({', '.join(map(str, source))}) -> "
                    f"{', '.join(map(str, target))}")
        return None

    return SCons.Action.Action(action, strfunction=show, varlist=list(varlist))


# --- the stages ---------------------------------------------------------------------------

def _import(targets, sources, env):
    graph = importer.run(sources[0], targets[0], targets[1],
                         importer.parse_input_shapes(env["ONNXCC_INPUT_SHAPE"]))
    return f"[import] {env['ONNXCC_NAME']}: {len(graph.nodes)} nodes from {sources[0]}"


def _optimize(targets, sources, env):
    graph = optimizer.run(sources[0], targets[0], targets[1], fuse=env["ONNXCC_FUSE"])
    return f"[optimize] {env['ONNXCC_NAME']}: {len(graph.nodes)} nodes"


def _select(targets, sources, env):
    """tactics.json; with autotune, first the measured choices (targets[1]); a recorded
    measurement of an earlier build is ONNXCC_TUNED."""
    tuned = env["ONNXCC_TUNED"] or None
    if env["ONNXCC_AUTOTUNE"]:
        autotuner.run(sources[0], targets[1], env["ONNXCC_NAME"], env["ONNXCC_TARGET"])
        tuned = targets[1]
    result = tactics.run(sources[0], targets[0], env["ONNXCC_TARGET"].cpu, env["ONNXCC_OPT"],
                         env["ONNXCC_TACTIC"], tuned)
    chosen = sorted({f"{n['op']}:{n['tactic']}" for n in result["nodes"]
                     if n["tactic"] != "reference"})
    return (f"[tactics] {env['ONNXCC_NAME']}: opt={env['ONNXCC_OPT']}"
            + (f", measured ({tuned})" if tuned else "")
            + (f", {', '.join(chosen)}" if chosen else ", reference kernels"))


def _plan(targets, sources, env):
    p = planner.run(sources[0], targets[0], tactics.load(sources[1]))
    return (f"[plan] {env['ONNXCC_NAME']}: arena {human_bytes(p['arena_bytes'])}, "
            f"lower bound {human_bytes(p['lower_bound_bytes'])}")


def _generate_model(targets, sources, env):
    codegen.run_model(sources[0], sources[1], sources[2], targets[0], targets[1],
                      env["ONNXCC_NAME"], env["ONNXCC_SOURCE"])
    return f"[generate] {env['ONNXCC_NAME']}: {os.path.basename(targets[1])}"


def _generate_kernels(targets, sources, env):
    n = codegen.run_kernels(sources[0], sources[1], targets[0], targets[1], env["ONNXCC_NAME"],
                            env["ONNXCC_SOURCE"])
    return f"[generate] {env['ONNXCC_NAME']}: {os.path.basename(targets[0])} ({n} kernels)"


def _generate_weights(targets, sources, env):
    n = codegen.run_weights(sources[0], sources[2], targets[0], env["ONNXCC_NAME"],
                            env["ONNXCC_SOURCE"])
    return f"[generate] {env['ONNXCC_NAME']}: {os.path.basename(targets[0])} ({human_bytes(n)})"


def _footprint_main(targets, sources, env):
    codegen.run_footprint_main(sources[0], targets[0], env["ONNXCC_NAME"])
    return None


def _report(targets, sources, env):
    """size.json from the footprint ELF (sources[0]) and the .su files; fails a model
    that does not fit the target."""
    target = env["ONNXCC_TARGET"]
    sizes = footprint.measure(sources[0], env["ONNXCC_NAME"], sources[1:])
    footprint.check_fits(sizes, target.flash_bytes, target.ram_bytes, target.name)
    write_text(targets[0], json.dumps(sizes, indent=1) + "\n")
    return None


def _print_report(targets, sources, env):
    with open(sources[0]) as f:
        sizes = json.load(f)
    return (f"[report] {env['ONNXCC_NAME']} on {env['ONNXCC_TARGET'].name}: "
            f"flash {human_bytes(sizes['flash']['total'])}, ram {human_bytes(sizes['ram']['total'])}\n"
            + footprint.format_table(sizes))


def _size_baseline(targets, sources, env):
    with open(sources[0]) as f:
        footprint.write_baseline(env["ONNXCC_BASELINE"], json.load(f))
    return f"[size] baseline written to {env['ONNXCC_BASELINE']}"


def _size_check(targets, sources, env):
    with open(sources[0]) as f:
        current = json.load(f)
    ok, lines = footprint.compare(footprint.read_baseline(env["ONNXCC_BASELINE"]), current,
                                  float(env["ONNXCC_TOLERANCE"]))
    text = "\n".join(lines)
    if not ok:
        raise OnnxccError(f"{env['ONNXCC_NAME']} grew beyond {env['ONNXCC_TOLERANCE']}% of "
                          f"{env['ONNXCC_BASELINE']}:\n{text}")
    return f"[size] {env['ONNXCC_NAME']} within {env['ONNXCC_TOLERANCE']}% of {env['ONNXCC_BASELINE']}\n{text}"


def _verify_case(targets, sources, env):
    verify.make_case(sources[0], env["ONNXCC_NAME"], targets[0], targets[1], targets[2],
                     importer.parse_input_shapes(env["ONNXCC_INPUT_SHAPE"]),
                     int(env["ONNXCC_SEED"]), env["ONNXCC_TESTDATA"] or None)
    return None


def _verify_run(targets, sources, env):
    return verify.run(env["ONNXCC_TARGET"], sources[0], sources[1], targets[0],
                      env["ONNXCC_NAME"])


def _bench_harness(targets, sources, env):
    bench.make_harness(sources[0], targets[0], env["ONNXCC_NAME"], env["ONNXCC_TARGET"])
    return None


def _bench_run(targets, sources, env):
    return bench.run(env["ONNXCC_TARGET"], sources[0], targets[0], env["ONNXCC_NAME"])


def _scan_kernel_templates(node, env, path):
    """The kernel templates a model uses: found by lowering its (built) optimized graph
    with its (built) tactics.json, the scanned node."""
    graph = os.path.join(os.path.dirname(str(node)), "optimized.onnx")
    if not str(node).endswith("tactics.json") or not os.path.exists(str(node)):
        return []
    try:
        return env.File(codegen.used_kernel_templates(graph, str(node), env["ONNXCC_NAME"]))
    except OnnxccError:
        return []  # the generate stage itself reports it


def _python_builder(label, fn, varlist=(), **kw):
    return SCons.Builder.Builder(action=_stage(label, fn, varlist), **kw)


BUILDERS = {
    "OnnxccImport": _python_builder("import", _import, ["ONNXCC_INPUT_SHAPE"]),
    "OnnxccOptimize": _python_builder("optimize", _optimize, ["ONNXCC_FUSE"]),
    "OnnxccSelect": _python_builder("tactics", _select, ["ONNXCC_OPT", "ONNXCC_TACTIC",
                                                         "ONNXCC_CPU", "ONNXCC_AUTOTUNE",
                                                         "ONNXCC_TUNED"]),
    "OnnxccPlan": _python_builder("plan", _plan),
    "OnnxccGenerateModel": _python_builder("generate", _generate_model, ["ONNXCC_NAME", "ONNXCC_SOURCE"]),
    "OnnxccGenerateKernels": _python_builder(
        "generate", _generate_kernels, ["ONNXCC_NAME", "ONNXCC_SOURCE"],
        source_scanner=SCons.Scanner.Scanner(_scan_kernel_templates, name="onnxcc_kernels")),
    "OnnxccGenerateWeights": _python_builder("generate", _generate_weights, ["ONNXCC_NAME", "ONNXCC_SOURCE"]),
    "OnnxccVerifyCase": _python_builder("verify", _verify_case,
                                        ["ONNXCC_NAME", "ONNXCC_SEED", "ONNXCC_TESTDATA", "ONNXCC_INPUT_SHAPE"]),
    "OnnxccVerifyRun": _python_builder("verify", _verify_run),
    "OnnxccBenchHarness": _python_builder("bench", _bench_harness, ["ONNXCC_NAME", "ONNXCC_BENCH"]),
    "OnnxccBenchRun": _python_builder("bench", _bench_run),
    "OnnxccFootprintMain": _python_builder("report", _footprint_main, ["ONNXCC_NAME"]),
    "OnnxccReport": _python_builder("report", _report, ["ONNXCC_NAME", "ONNXCC_FLASH", "ONNXCC_RAM"]),
}


# --- the pseudo-builder --------------------------------------------------------------------

def _target_env(env, target, verbose):
    """A clone of ``env`` that compiles for ``target`` with its toolchain."""
    tc = target.toolchain
    e = env.Clone()
    e.Replace(CC=tc.tool("gcc"), LINK=tc.tool("gcc"), AR=tc.tool("ar"), RANLIB=tc.tool("ranlib"))
    e.Replace(CCFLAGS=tc.cflags + target.cflags + ["-Wall", "-Wextra"], CFLAGS=["-std=c99"],
              LINKFLAGS=tc.cflags + target.cflags + tc.linkflags + target.linkflags)
    if not verbose:
        e.Replace(CCCOMSTR="[compile] $SOURCE", ARCOMSTR="[archive] $TARGET", RANLIBCOMSTR="",
                  LINKCOMSTR="[link] $TARGET")
    return e


def OnnxModel(env, model, target="x86_64", name=None, build_dir="build", input_shape="",
              fuse=True, seed=0, testdata=None, verbose=False, need_runner=False, flash=None,
              ram=None, opt="speed", tactic="", autotune=False):
    """Declare every stage for one model; returns (lib, include, verify, size, ...)."""
    tgt = with_memory(load_target(target), flash, ram)
    tgt.check_tools(need_runner)
    if opt not in tactics.OPT_MODES:
        raise OnnxccError(f"opt={opt} is not one of {', '.join(tactics.OPT_MODES)}")
    tactics.parse_forced(tactic)  # a malformed tactic= fails now, in one line
    record = autotuner.record_path(model, tgt.name)
    if autotune_on := bool(autotune):
        bench.settings(tgt)  # it measures like bench: one line when the target cannot
        tgt.check_tools(True)
    tuned = record if not autotune_on and not tactic and os.path.exists(record) else ""
    name = c_ident(name or os.path.splitext(os.path.basename(str(model)))[0])
    out = os.path.join(str(build_dir), tgt.name, name)
    e = _target_env(env, tgt, verbose)
    e.Replace(ONNXCC_FLASH=tgt.flash_bytes, ONNXCC_RAM=tgt.ram_bytes, ONNXCC_NAME=name, ONNXCC_SOURCE=os.path.basename(str(model)),
              ONNXCC_INPUT_SHAPE=input_shape or "", ONNXCC_FUSE=bool(fuse),
              ONNXCC_SEED=int(seed), ONNXCC_TESTDATA=testdata or "", ONNXCC_VERBOSE=bool(verbose),
              ONNXCC_TARGET=tgt, ONNXCC_OPT=opt, ONNXCC_TACTIC=tactic or "",
              ONNXCC_CPU=json.dumps(tgt.cpu.as_dict(), sort_keys=True),
              ONNXCC_BENCH=json.dumps(tgt.bench, sort_keys=True), ONNXCC_AUTOTUNE=autotune_on,
              ONNXCC_TUNED=tuned)
    e.Append(BUILDERS=BUILDERS, CPPPATH=[out, RUNTIME_DIR])
    if opt == "size":  # the reference kernels, and the compiler's smallest code for them
        e.Append(CCFLAGS=["-Os"])

    def at(*parts):
        return os.path.join(out, *parts)

    imported = e.OnnxccImport([at("imported.onnx"), at("imported.bin")], model)
    optimized = e.OnnxccOptimize([at("optimized.onnx"), at("optimized.bin")], imported)
    if autotune_on:  # measures the candidates (with the weights), records the choice
        chosen = e.OnnxccSelect([at("tactics.json"), record], optimized)[:1]
    else:
        chosen = e.OnnxccSelect(at("tactics.json"), [optimized[0]] + (
            [tactic] if str(tactic or "").endswith(".json") else []) + ([tuned] if tuned else []))
    plan = e.OnnxccPlan(at("plan.json"), [optimized[0], chosen])
    header_c = e.OnnxccGenerateModel([at(f"{name}.h"), at(f"{name}.c")],
                                     [optimized[0], plan, chosen])
    kernels = e.OnnxccGenerateKernels([at(f"{name}_kernels.c"), at(f"{name}_kernels.h")],
                                      [optimized[0], chosen])
    weights = e.OnnxccGenerateWeights(at(f"{name}_weights.c"), optimized + chosen)
    stages = imported + optimized + chosen + plan + header_c + kernels + weights
    e.Depends(stages, _PACKAGE_FILES)
    e.Depends(header_c, [os.path.join(TEMPLATES_DIR, t) for t in ("model.h.mako", "model.c.mako")])
    e.Depends(kernels, [os.path.join(TEMPLATES_DIR, t)
                        for t in ("model_kernels.c.mako", "model_kernels.h.mako")])
    e.Depends(weights, os.path.join(TEMPLATES_DIR, "model_weights.c.mako"))

    # the library's objects, each with gcc's stack usage (.su) for the size report
    lib_sources = [header_c[1], kernels[0], weights[0], os.path.join(RUNTIME_DIR, "onnxcc_runtime.c")]
    objects, stack_usage = [], []
    for src in lib_sources:
        stem = at(os.path.splitext(os.path.basename(str(src)))[0])
        obj, su = e.Object([stem + ".o", stem + ".su"], src,
                           CCFLAGS=e["CCFLAGS"] + ["-fstack-usage"])
        objects.append(obj)
        stack_usage.append(su)
    lib = e.StaticLibrary(at(f"lib{name}"), objects)
    startup = [e.Object(at("startup", os.path.splitext(os.path.basename(s))[0] + ".o"), s)
               for s in tgt.harness_sources]

    footprint_c = e.OnnxccFootprintMain(at("footprint", f"{name}_footprint.c"), optimized[0])
    e.Depends(footprint_c, _PACKAGE_FILES + [os.path.join(TEMPLATES_DIR, "footprint_main.c.mako")])
    footprint_elf = e.Program(at("footprint", f"{name}_footprint"), footprint_c + startup,
                              LIBS=[lib] + tgt.toolchain.libs)
    size = e.OnnxccReport(at("size.json"), footprint_elf + stack_usage)
    e.Depends(size, _PACKAGE_FILES)
    # the table is printed at the end of every build, also when nothing changed
    show_size = e.Alias(f"size-table-{tgt.name}-{name}", size, _stage("report", _print_report))
    e.AlwaysBuild(show_size)

    case_sources = [model] + (sorted(glob.glob(os.path.join(testdata, "*.pb"))) if testdata else [])
    case = e.OnnxccVerifyCase([at("verify", "harness.c"), at("verify", "verify_data.c"),
                               at("verify", "expected.npz")], case_sources)
    e.Depends(case, _PACKAGE_FILES + [os.path.join(TEMPLATES_DIR, t)
                                      for t in ("harness.c.mako", "verify_data.c.mako")])
    harness = e.Program(at("verify", f"{name}_harness"), case[:2] + startup,
                        LIBS=[lib] + tgt.toolchain.libs)
    report = e.OnnxccVerifyRun(at("verify", "report.json"), [harness[0], case[2]])
    e.AlwaysBuild(report)

    timing = None
    if tgt.bench:  # the harness runs the model many times on the verify inputs
        bench_c = e.OnnxccBenchHarness(at("bench", "bench.c"), optimized[0])
        e.Depends(bench_c, _PACKAGE_FILES + [os.path.join(TEMPLATES_DIR, t)
                                             for t in ("bench.c.mako", "clock.mako")])
        bench_elf = e.Program(at("bench", f"{name}_bench"), bench_c + case[1:2] + startup,
                              LIBS=[lib] + tgt.toolchain.libs)
        timing = e.OnnxccBenchRun(at("bench", "bench.json"), bench_elf)
        e.AlwaysBuild(timing)
    return SimpleNamespace(lib=lib, include=e.Dir(out), verify=report, size=size, bench=timing,
                           show_size=show_size, name=name, dir=out, target=tgt, env=e)


def OnnxSizeGate(env, model, baseline, tolerance=0.0, write=False):
    """size-baseline (``write``) or size-check of ``model`` (from OnnxModel) against
    the JSON file ``baseline``; runs every time it is asked for."""
    e = model.env.Clone(ONNXCC_BASELINE=str(baseline), ONNXCC_TOLERANCE=float(tolerance))
    kind = "baseline" if write else "check"
    action = _stage("size", _size_baseline if write else _size_check)
    node = e.Alias(f"size-{kind}-{model.target.name}-{model.name}", model.size, action)
    e.AlwaysBuild(node)
    return node


def generate(env):
    env.AddMethod(OnnxModel, "OnnxModel")
    env.AddMethod(OnnxSizeGate, "OnnxSizeGate")
    env.SetDefault(ONNXCC_REPO=REPO_ROOT)


def exists(env):
    return True

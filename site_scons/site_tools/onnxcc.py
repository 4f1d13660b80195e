"""SCons tool ``onnxcc``: one build rule per compiler stage.

    env.Tool('onnxcc', toolpath=['path/to/onnxcc/site_scons/site_tools'])
    lib, include = env.OnnxModel('kws', 'models/kws.onnx', target='armv7')
    env.Program('firmware.elf', sources, CPPPATH=[include], LIBS=[lib, 'm'])

``OnnxModel`` returns an :class:`OnnxModelNodes` (``lib``, ``include``, the Make/CMake
fragments, ``size``, ``verify`` ...) that unpacks as ``lib, include``; ``OnnxSharedArena``
declares one arena for several models; ``OnnxSizeGate`` the CI size gate.

Every stage's outputs are files that SCons signs by content, so a stage runs again only
when what it reads changed: a weights-only edit re-generates the weights file and re-links,
without re-planning memory or re-generating kernels. The compiler itself is the ``onnxcc``
package beside this folder; this module only declares builders over it.
"""

import functools
import importlib.metadata
import importlib.util
import json
import os
import sys
import traceback
from dataclasses import dataclass

import SCons.Action
import SCons.Builder
import SCons.Errors
import SCons.Scanner
import SCons.Subst
import SCons.Util

# SCons runs a tool module as sys.modules[<tool name>], and this tool is named like the
# compiler package beside it: whether it is loaded by onnxcc's own SConstruct or, with
# toolpath=, by another project's, sys.modules["onnxcc"] is this module at this point (again
# each time the tool is loaded). Put the package back under its name, from its own folder;
# its submodules are then found through the package's path, whatever sys.path holds (SCons
# restores sys.path after loading a tool).
_SITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if getattr(sys.modules.get("onnxcc"), "__path__", None) is None:
    _spec = importlib.util.spec_from_file_location(
        "onnxcc", os.path.join(_SITE, "onnxcc", "__init__.py"))
    sys.modules["onnxcc"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["onnxcc"])

# (plain Python: these load without onnxcc's dependencies)
from onnxcc.core.errors import OnnxccError, one_line  # noqa: E402
from onnxcc.build.module_deps import files_of, keep_cache_in, modules_used_by  # noqa: E402
from onnxcc.core.paths import REPO_ROOT, RUNTIME_DIR, TEMPLATES_DIR  # noqa: E402
try:
    from onnxcc.verbs import autotune as autotuner
    from onnxcc.verbs import bench
    from onnxcc.importer import stage as importer
    from onnxcc.verbs import integration
    from onnxcc.passes import stage as optimizer
    from onnxcc.plan import stage as planner
    from onnxcc.verbs import sanitize as sanitizer
    from onnxcc.tactics import stage as tactics
    from onnxcc.verbs import verify
    from onnxcc.core.ctext import model_c_name
    from onnxcc.plan.pools import parse_pools
    from onnxcc.plan.stage import check_options as check_plan_options
    from onnxcc.plan.patches import check_grid as check_patches
    from onnxcc.plan.bands import check_bands
    from onnxcc.codegen import stage as codegen
    from onnxcc.core.files import write_text
    from onnxcc import footprint
    from onnxcc.verbs import html_report, profile as profiler
    from onnxcc.footprint import fit, size_gate
    from onnxcc.core.report import format_gate, format_table, human_bytes
    from onnxcc.target import (
        NATIVE, UNUSED_ERRORS, WARNINGS, check_env_flags, load_target, with_memory)
except ImportError as e:  # a missing Python package: exists() says no, generate() which
    _IMPORT_ERROR = e
else:
    _IMPORT_ERROR = None

#: the Python packages (distributions) the stages run, whose versions sign every Python
#: stage: a build cache shared by machines never hands one's outputs to another whose
#: onnx or onnxruntime would have computed different ones
PYTHON_DEPS = ("onnx", "onnxruntime", "numpy", "Mako", "pyelftools")



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
            what = one_line(f"{type(e).__name__}: {e}")
            raise SCons.Errors.BuildError(
                errstr=f"internal error in onnxcc's {label} stage: {what} "
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
    return f"[import] {env['ONNXCC_NAME']}: {len(graph.nodes)} nodes from {one_line(sources[0])}"


def _optimize(targets, sources, env):
    graph = optimizer.run(sources[0], targets[0], targets[1], fuse=env["ONNXCC_FUSE"],
                          source=env["ONNXCC_SOURCE"])
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
    p = planner.run(sources[0], targets[0], str(env["ONNXCC_SOURCE"]), planner=env["ONNXCC_PLANNER"],
                    schedule=env["ONNXCC_SCHEDULE"], pools=env["ONNXCC_POOLS"], io=env["ONNXCC_IO"],
                    tactics_path=sources[1], ram_bytes=env["ONNXCC_TARGET"].ram_bytes,
                    patches=env["ONNXCC_PATCHES"], bands=env["ONNXCC_BANDS"],
                    cache_bytes=env["ONNXCC_L2"])
    return f"[plan] {env['ONNXCC_NAME']}: {planner.summary(p)}"


def _generate_model(targets, sources, env):
    codegen.run_model(sources[0], sources[1], sources[2], targets[0], targets[1],
                      env["ONNXCC_NAME"], str(env["ONNXCC_SOURCE"]))
    return f"[generate] {env['ONNXCC_NAME']}: {os.path.basename(targets[1])}"


def _generate_kernels(targets, sources, env):
    n = codegen.run_kernels(sources[0], sources[1], sources[2], targets[0], targets[1],
                            env["ONNXCC_NAME"], str(env["ONNXCC_SOURCE"]))
    return f"[generate] {env['ONNXCC_NAME']}: {os.path.basename(targets[0])} ({n} kernels)"


def _generate_weights(targets, sources, env):
    n = codegen.run_weights(sources[0], sources[2], sources[3], targets, env["ONNXCC_NAME"],
                            str(env["ONNXCC_SOURCE"]), env["ONNXCC_WEIGHTS_SECTION"],
                            env["ONNXCC_WEIGHTS_FORMAT"])
    return f"[generate] {env['ONNXCC_NAME']}: {os.path.basename(targets[0])} ({human_bytes(n)})"


def _fragments(targets, sources, env):
    integration.run_fragments(sources[0], sources[1], *targets, env["ONNXCC_NAME"],
                              env["ONNXCC_TARGET"].name, env["ONNXCC_SYSTEM_LIBS"],
                              env["ONNXCC_TARGET_CFLAGS"], env["ONNXCC_WEIGHTS_SECTION"])
    return None


def _shared_arena(targets, sources, env):
    integration.run_shared_arena(targets[0], targets[1], env["ONNXCC_ARENA"],
                                 env["ONNXCC_ARENA_MODELS"])
    return f"[generate] {env['ONNXCC_ARENA']}: shared by {', '.join(env['ONNXCC_ARENA_MODELS'])}"


def _footprint_main(targets, sources, env):
    codegen.run_footprint_main(sources[0], targets[0], env["ONNXCC_NAME"], _pool_names(env),
                               env["ONNXCC_IO"] == "arena")
    return None


def _budget(env, tactics_path):
    target = env["ONNXCC_TARGET"]
    return fit.Budget(target.name, target.flash_bytes, target.ram_bytes, env["ONNXCC_OPT"],
                      fit.is_quantized(tactics_path))


def _fit(targets, sources, env):
    """fit.json: the model's library (sources[0]) with its plan (sources[1]) and stack (the
    .su files after tactics.json, sources[2]) fits the target; checked before any link."""
    name = env["ONNXCC_NAME"]
    with open(sources[1]) as f:
        plan = json.load(f)
    stack, _ = footprint.stack_usage(name, sources[3:])
    budget = _budget(env, sources[2])
    flash, ram = fit.check_library(name, sources[0], plan, stack, budget)
    write_text(targets[0], json.dumps({"model": name, "flash": flash, "ram": ram,
                                       "flash_bytes": budget.flash_bytes,
                                       "ram_bytes": budget.ram_bytes}, indent=1) + "\n")
    return None


def _report(targets, sources, env):
    """size.json from the footprint ELF (sources[0]), then tactics.json, the .su files
    and the footprint program's own objects; fails a model that does not fit the target."""
    su = [s for s in sources[2:] if s.endswith(".su")]
    program = [s for s in sources[2:] if not s.endswith(".su")]
    sizes = footprint.measure(sources[0], env["ONNXCC_NAME"], su, program)
    fit.check_fits(sizes, _budget(env, sources[1]))
    write_text(targets[0], json.dumps(sizes, indent=1) + "\n")
    return None


def _print_report(targets, sources, env):
    with open(sources[0]) as f:
        sizes = json.load(f)
    return (f"[report] {env['ONNXCC_NAME']} on {env['ONNXCC_TARGET'].name}: "
            f"flash {human_bytes(sizes['flash']['total'])}, ram {human_bytes(sizes['ram']['total'])}\n"
            + format_table(sizes))


def _size_baseline(targets, sources, env):
    with open(sources[0]) as f:
        size_gate.write_baseline(env["ONNXCC_BASELINE"], json.load(f))
    return f"[size] baseline written to {env['ONNXCC_BASELINE']}"


def _size_check(targets, sources, env):
    with open(sources[0]) as f:
        current = json.load(f)
    result = size_gate.compare(size_gate.read_baseline(env["ONNXCC_BASELINE"]), current,
                               float(env["ONNXCC_TOLERANCE"]), int(env["ONNXCC_SIZE_FLOOR"]))
    print("\n".join(format_gate(result)))
    if not result.ok:
        raise OnnxccError(f"{env['ONNXCC_NAME']} grew beyond the size gate of "
                          f"{env['ONNXCC_BASELINE']}: {', '.join(result.failed)}",
                          hint="update the baseline (size-baseline) when the growth is intended")
    return f"[size] {env['ONNXCC_NAME']} within the size gate of {env['ONNXCC_BASELINE']}"


def _verify_case(targets, sources, env):
    verify.make_case(sources[0], env["ONNXCC_NAME"], targets[0], targets[1], targets[2],
                     importer.parse_input_shapes(env["ONNXCC_INPUT_SHAPE"]),
                     int(env["ONNXCC_SEED"]), env["ONNXCC_TESTDATA"] or None, _pool_names(env),
                     env["ONNXCC_IO"] == "arena")
    return None


def _verify_run(targets, sources, env):
    return verify.run(env["ONNXCC_TARGET"], sources[0], sources[1], targets[0],
                      env["ONNXCC_NAME"])


def _pool_names(env):
    return [p.name for p in parse_pools(env["ONNXCC_POOLS"])]


def _bench_harness(targets, sources, env):
    bench.make_harness(sources[0], targets[0], env["ONNXCC_NAME"], env["ONNXCC_TARGET"],
                       _pool_names(env), env["ONNXCC_IO"] == "arena")
    return None


def _bench_run(targets, sources, env):
    return bench.run(env["ONNXCC_TARGET"], sources[0], targets[0], env["ONNXCC_NAME"])


def _profile_program(targets, sources, env):
    profiler.make_program(sources[0], sources[1], sources[2], targets[0], env["ONNXCC_NAME"],
                          env["ONNXCC_TARGET"])
    return None


def _profile_run(targets, sources, env):
    return profiler.run(env["ONNXCC_TARGET"], sources[0], sources[1], sources[2], sources[3],
                        targets[0], env["ONNXCC_NAME"])


def _html_report(targets, sources, env):
    """report.html from plan.json, tactics.json, size.json, the footprint ELF, the
    optimized graph and (when there is one) profile.json."""
    html_report.run(targets[0], *sources[:5], env["ONNXCC_PROFILE_JSON"],
                    env["ONNXCC_NAME"], env["ONNXCC_TARGET"].name, str(env["ONNXCC_SOURCE"]))
    return f"[report] {env['ONNXCC_NAME']}: {os.path.basename(targets[0])}"


def _scan_kernel_templates(node, env, path):
    """The kernel templates a model may use: found by lowering its (built) optimized graph
    with its (built) tactics.json, the scanned node, run in patches as its (built)
    plan.json says."""
    folder = os.path.dirname(str(node))
    if not str(node).endswith("tactics.json") or not os.path.exists(str(node)):
        return []
    try:
        return env.File(codegen.used_kernel_templates(os.path.join(folder, "optimized.onnx"), str(node),
                                                      os.path.join(folder, "plan.json")))
    except OnnxccError:
        return []  # the generate stage itself reports it


def _code_files(fn):
    """The compiler's files a stage runs: the closure of the modules ``fn`` (and the
    wrapper every stage runs in) use, computed from the import graph once per SCons run."""
    return files_of(modules_used_by(fn) | modules_used_by(_stage))


def _code_scanner(fn, templates):
    """Implicit dependencies of a stage's targets: its compiler modules and the templates
    it renders (the kernel templates a model uses are scanned from its tactics instead)."""
    files = functools.cache(lambda: _code_files(fn) + [os.path.join(TEMPLATES_DIR, t)
                                                       for t in templates])
    return SCons.Scanner.Scanner(lambda node, env, path: env.File(files()),
                                 name=f"onnxcc_code_{fn.__name__.strip('_')}")


def _outputs(*siblings):
    """An emitter: the first target names the others, files beside it (``{stem}`` is its
    name without extension): ``_outputs("{stem}.c")`` makes ``kws.h`` into kws.h, kws.c."""
    def emit(target, source, env):
        first = target[0]
        stem = os.path.splitext(first.name)[0]
        return [first] + [first.dir.File(s.format(stem=stem)) for s in siblings], source
    return emit


def _tactics_outputs(target, source, env):
    """autotune also writes the measured choices beside the model (autotune.record_path)."""
    return target[:1] + ([env["ONNXCC_RECORD"]] if env["ONNXCC_AUTOTUNE"] else []), source


def _python_builder(label, fn, varlist=(), templates=(), **kw):
    """A builder running stage ``fn``, whose targets depend on the onnxcc modules ``fn``
    runs and the ``templates`` it renders, and on nothing else of the compiler."""
    return SCons.Builder.Builder(action=_stage(label, fn, list(varlist) + ["ONNXCC_PYTHON_DEPS"]),
                                 target_scanner=_code_scanner(fn, templates), **kw)


BUILDERS = {
    "OnnxccImport": _python_builder("import", _import, ["ONNXCC_INPUT_SHAPE"],
                                    emitter=_outputs("{stem}.bin")),
    "OnnxccOptimize": _python_builder("optimize", _optimize, ["ONNXCC_FUSE"],
                                      emitter=_outputs("{stem}.bin")),
    "OnnxccSelect": _python_builder("tactics", _select, ["ONNXCC_OPT", "ONNXCC_TACTIC",
                                                         "ONNXCC_CPU", "ONNXCC_AUTOTUNE",
                                                         "ONNXCC_TUNED"],
                                    emitter=_tactics_outputs),
    "OnnxccPlan": _python_builder("plan", _plan, ["ONNXCC_SOURCE", "ONNXCC_PLANNER",
                                                  "ONNXCC_SCHEDULE", "ONNXCC_POOLS", "ONNXCC_IO",
                                                  "ONNXCC_RAM", "ONNXCC_PATCHES", "ONNXCC_BANDS",
                                                  "ONNXCC_L2"]),
    "OnnxccGenerateModel": _python_builder("generate", _generate_model, ["ONNXCC_NAME", "ONNXCC_SOURCE"],
                                           templates=("model.h.mako", "model.c.mako"),
                                           emitter=_outputs("{stem}.c")),
    "OnnxccGenerateKernels": _python_builder(
        "generate", _generate_kernels, ["ONNXCC_NAME", "ONNXCC_SOURCE"],
        templates=("model_kernels.c.mako", "model_kernels.h.mako", "kernels/lib/vmath.mako"), emitter=_outputs("{stem}.h"),
        source_scanner=SCons.Scanner.Scanner(_scan_kernel_templates, name="onnxcc_kernels")),
    "OnnxccGenerateWeights": _python_builder("generate", _generate_weights,
                                             ["ONNXCC_NAME", "ONNXCC_SOURCE", "ONNXCC_WEIGHTS_SECTION",
                                              "ONNXCC_WEIGHTS_FORMAT"],
                                             templates=("model_weights.c.mako", "model_weights.S.mako")),
    "OnnxccFragments": _python_builder("generate", _fragments,
                                       ["ONNXCC_NAME", "ONNXCC_TARGET_NAME", "ONNXCC_SYSTEM_LIBS",
                                        "ONNXCC_TARGET_CFLAGS", "ONNXCC_WEIGHTS_SECTION"],
                                       templates=("model.mk.mako", "model.cmake.mako",
                                                  "model_CMakeLists.txt.mako"),
                                       emitter=_outputs("{stem}.cmake", "CMakeLists.txt")),
    "OnnxccSharedArena": _python_builder("generate", _shared_arena,
                                         ["ONNXCC_ARENA", "ONNXCC_ARENA_MODELS"],
                                         templates=("shared_arena.h.mako", "shared_arena.c.mako"),
                                         emitter=_outputs("{stem}.c")),
    "OnnxccVerifyCase": _python_builder("verify", _verify_case,
                                        ["ONNXCC_NAME", "ONNXCC_SEED", "ONNXCC_TESTDATA", "ONNXCC_INPUT_SHAPE",
                                         "ONNXCC_POOLS", "ONNXCC_IO"],
                                        templates=("harness.c.mako", "verify_data.c.mako"),
                                        emitter=_outputs("verify_data.c", "expected.npz")),
    "OnnxccVerifyRun": _python_builder("verify", _verify_run),
    "OnnxccBenchHarness": _python_builder("bench", _bench_harness,
                                          ["ONNXCC_NAME", "ONNXCC_BENCH", "ONNXCC_POOLS", "ONNXCC_IO"],
                                          templates=("bench.c.mako", "clock.mako")),
    "OnnxccBenchRun": _python_builder("bench", _bench_run),
    "OnnxccFootprintMain": _python_builder("report", _footprint_main,
                                           ["ONNXCC_NAME", "ONNXCC_POOLS", "ONNXCC_IO"],
                                           templates=("footprint_main.c.mako",)),
    "OnnxccFit": _python_builder("fit", _fit, ["ONNXCC_NAME", "ONNXCC_FLASH", "ONNXCC_RAM",
                                               "ONNXCC_OPT"]),
    "OnnxccReport": _python_builder("report", _report, ["ONNXCC_NAME", "ONNXCC_FLASH", "ONNXCC_RAM",
                                                        "ONNXCC_OPT"]),
    "OnnxccProfileProgram": _python_builder("profile", _profile_program,
                                            ["ONNXCC_NAME", "ONNXCC_BENCH", "ONNXCC_POOLS", "ONNXCC_IO"],
                                            templates=("profile.c.mako", "clock.mako")),
    "OnnxccProfileRun": _python_builder("profile", _profile_run),
    "OnnxccHtmlReport": _python_builder("report", _html_report,
                                        ["ONNXCC_NAME", "ONNXCC_SOURCE", "ONNXCC_PROFILE_JSON"],
                                        templates=("report.html.mako",)),
}


# --- the pseudo-builders -------------------------------------------------------------------

class OnnxccDeclarationError(OnnxccError, SCons.Errors.UserError):
    """Bad arguments of a pseudo-builder: SCons stops with one line (``scons: *** ...``) in
    any SConstruct, and onnxcc's own SConstruct still catches it as an OnnxccError."""


def _declaration(pseudo_builder):
    @functools.wraps(pseudo_builder)
    def declare(*args, **kwargs):
        try:
            return pseudo_builder(*args, **kwargs)
        except OnnxccDeclarationError:
            raise
        except OnnxccError as e:
            raise OnnxccDeclarationError(e.message, where=e.where, hint=e.hint) from None
    return declare


#: ``toolchain=`` of OnnxModel: the target's toolchain file, or the calling environment's
#: own compiler and flags (a firmware that builds everything with its own)
TOOLCHAINS = ("target", "env")

#: one relocatable object of all the library's objects, in which every symbol but
#: ``<name>_run`` is made local: kernels, weights and the runtime's ``onnxcc_*`` functions
#: can then never clash with another model's, whatever the link order or --whole-archive.
#: (No --specs: a specs file may add a linker script, which a relocatable link must not get.)
_LINK_MODEL = SCons.Builder.Builder(action=SCons.Action.Action(
    "$CC $ONNXCC_RELOCATABLE_FLAGS -nostdlib -r -o $TARGET $SOURCES && "
    "$OBJCOPY --keep-global-symbol=${ONNXCC_NAME}_run $TARGET", "$ONNXCC_LINKMODELCOMSTR"))


#: the weights' assembler file (weights_format=bin), assembled by the C compiler driver with
#: the C flags (the CPU, ABI and float-ABI flags reach the assembler, so the object links
#: with the C ones); its .incbin names the binary file alone, found through -I of its
#: folder: nothing of the build's paths ends up in the object.
_ASSEMBLE_WEIGHTS = SCons.Builder.Builder(action=SCons.Action.Action(
    "$CC $CCFLAGS -Xassembler -I${SOURCE.dir} -c -o $TARGET $SOURCE", "$ONNXCC_ASCOMSTR"))


def _compiled(e, at, sources, stack_usage):
    """The object of the library's C file ``sources[0]``, an unused parameter or variable
    an error (UNUSED_ERRORS); gcc's stack usage of it (.su, for the size report) goes to
    ``stack_usage``."""
    stem = os.path.splitext(os.path.basename(str(sources[0])))[0]
    obj, su = e.Object([at(stem + ".o"), at(stem + ".su")], sources[0],
                       CCFLAGS=e["CCFLAGS"] + list(UNUSED_ERRORS) + ["-fstack-usage"])
    stack_usage.append(su)
    return obj


def _assembled(e, at, sources, stack_usage):
    """The object of the weights' assembler file ``sources[0]``, which includes the
    binary file ``sources[1]`` (a source too: the object follows its bytes)."""
    stem = os.path.splitext(os.path.basename(str(sources[0])))[0]
    return e.OnnxccAssembleWeights(at(stem + ".o"), sources)[0]


#: per ``weights_format``: the files the weights stage writes (codegen.run_weights), and
#: how the library's object is made of them
_WEIGHTS = {"bin": (("S", "bin"), _assembled), "c": (("c",), _compiled)}


@dataclass
class OnnxModelNodes:
    """What OnnxModel declares for one model; unpacks as ``lib, include``."""
    name: str          # the C prefix: <name>_run(), <NAME>_ARENA_BYTES
    lib: object        # lib<name>.a, whose only global symbol is <name>_run
    include: object    # the folder of <name>.h
    fragments: list    # <name>.mk, <name>.cmake and CMakeLists.txt, for Make and CMake trees
    size: object       # size.json: flash and RAM of the model on its target
    show_size: object  # an alias that prints the size table
    verify: object     # runs the model on the target and compares it with onnxruntime
    bench: object      # runs it many times and reports the median cost (None: cannot)
    profile: object    # profile.json: each step's cost, MACs, tactic (None: cannot profile)
    report: object     # report.html: memory timeline, footprint, tactics, profile
    dir: str           # the model's build folder
    target: object     # the onnxcc Target
    env: object        # the environment its files are built in

    def __iter__(self):
        return iter((self.lib, self.include))


def _objcopy_beside(env):
    """The objcopy of the environment's compiler: $OBJCOPY, else <prefix>objcopy for <prefix>gcc."""
    cc = env.subst("$CC")
    objcopy = env.get("OBJCOPY") or (cc[:-3] + "objcopy" if cc.endswith("gcc") else "")
    if not objcopy or not env.WhereIs(env.subst(objcopy)):
        raise OnnxccError(f"toolchain='env': no objcopy found for CC={cc}",
                          hint="set OBJCOPY in the environment, e.g. OBJCOPY='arm-none-eabi-objcopy'")
    return objcopy


def _link_files(target):
    """The files a target's link flags name (its linker script; targets.py makes them
    absolute paths into the repository), for its programs and its footprint program."""
    return [f for f in dict.fromkeys(target.linkflags + target.footprint_linkflags)
            if os.path.isabs(f)]


def _repo_nodes(env, flags):
    """``flags`` with the repository paths in them (targets.py makes them absolute: a
    linker script, x86-baremetal's -isystem folder) as nodes: on the command line and in
    the signature their path from the top folder, so that a clone elsewhere has the same
    signatures and shares a build cache (a linker script's bytes: _link_files)."""
    return [(env.Dir(f) if os.path.isdir(f) else env.File(f)) if os.path.isabs(f) else f
            for f in flags]


#: what the generated C assumes of its C dialect: no a * b + c contracted into a fused
#: multiply-add but where a kernel asks for it (tile.mako's ``contracted``), so that the
#: other kernels -- the reference ones, the int8 kernels' float steps (docs/int8.md) --
#: round as the target build's do. A target build has it from -std=c99; a toolchain='env'
#: build gets it before the tree's own flags, whose C dialect may be a GNU one, which
#: contracts everywhere once FMA is on
ENV_DIALECT = ["-ffp-contract=off"]


def _add_target_flags(e, target):
    """toolchain='env': the target's instruction-set flags (x86's -mavx2 -mfma ...) and
    ENV_DIALECT go first in ``e``'s CCFLAGS, so that the code is the target build's -- the
    vectors the kernels are written for, without -Wpsabi on vmath's functions that take
    them -- whatever the tree's own flags name; a flag of the tree's that turns one off
    again stops the build in one line (targets.check_env_flags). They change no ABI
    <name>_run exports (pointers, an int), so code compiled without them calls it. ARM
    targets have none (their FPU flags set the float ABI too, which is the firmware's):
    there the tree's flags must enable the target's features themselves."""
    cc = e.subst_list("$CC")[0]
    program = e.WhereIs(str(cc[0])) if cc else None
    if not program:
        raise OnnxccError(f"toolchain='env': no compiler CC={e.subst('$CC')} found",
                          hint="set CC in the environment, e.g. CC='arm-none-eabi-gcc'")
    own = [str(f) for f in e.subst_list("$CFLAGS $CCFLAGS")[0]]
    check_env_flags(target, [program] + [str(w) for w in cc[1:]], own)
    # (CLVar: a CCFLAGS given as one string becomes its words, as on the command line)
    e.Replace(CCFLAGS=SCons.Util.CLVar(target.isa_cflags + ENV_DIALECT)
              + SCons.Util.CLVar(e.get("CCFLAGS", [])))


def _model_env(env, target, toolchain, verbose, launcher=""):
    """A clone of ``env`` that compiles for ``target``: with the target's toolchain file, or
    (``toolchain='env'``) with env's own CC, AR, CCFLAGS, CFLAGS and CPPDEFINES. The size
    report and verify programs link with the target's startup code and linker script either way.
    ``launcher`` (``ccache``, ``distcc``) runs every compile, outside the signature: with
    or without it the objects are the same, and so are their build cache entries."""
    tc = target.toolchain
    e = env.Clone()
    if toolchain == "target":
        # ar in deterministic mode (D): no timestamps, uids or modes in lib<name>.a, whatever
        # the distribution's default; it writes the symbol index itself (s), the same bytes
        # ranlib -D adds in a second copy of the archive (of ResNet-18's 98 MB: 0.3 s)
        e.Replace(CC=tc.tool("gcc"), LINK=tc.tool("gcc"), AR=tc.tool("ar"), ARFLAGS=["rcsD"],
                  RANLIBCOM="", OBJCOPY=tc.tool("objcopy"))
        cflags = _repo_nodes(e, tc.cflags + target.cflags)
        e.Replace(CCFLAGS=cflags + list(WARNINGS), CFLAGS=["-std=c99"])
        link = cflags + tc.linkflags
    else:
        e.Replace(OBJCOPY=_objcopy_beside(e), LINK="$CC")
        _add_target_flags(e, target)
        link = ["$CCFLAGS"] + tc.linkflags
    # the size report's footprint program links the same way, with the target's own flags
    # for it (a minimal bare-metal link)
    e.Replace(LINKFLAGS=link + _repo_nodes(e, target.linkflags),
              ONNXCC_FOOTPRINT_LINKFLAGS=link + _repo_nodes(e, target.footprint_linkflags))
    if launcher:
        if not e.WhereIs(launcher.split()[0]):
            raise OnnxccError(f"launcher={launcher}: no program {launcher.split()[0]}",
                              hint="install it, e.g. apt-get install ccache, or leave launcher= out")
        e.Replace(ONNXCC_LAUNCHER=launcher.split(), CCCOM="$( $ONNXCC_LAUNCHER $) " + e["CCCOM"])
    compile_flags = [str(f) for f in e.subst_list("$CCFLAGS")[0]]
    # (recorded in the fragments: the flags a firmware must be compatible with)
    e.Replace(ONNXCC_TARGET_CFLAGS=list(target.cflags) if toolchain == "target" else compile_flags,
              ONNXCC_RELOCATABLE_FLAGS=[f for f in compile_flags if not f.startswith("--specs")])
    if not verbose:
        e.Replace(CCCOMSTR="[compile] $SOURCE", ONNXCC_ASCOMSTR="[compile] $SOURCE", ARCOMSTR="[archive] $TARGET", RANLIBCOMSTR="",
                  LINKCOMSTR="[link] $TARGET",
                  ONNXCC_LINKMODELCOMSTR="[link] $TARGET (exports ${ONNXCC_NAME}_run only)")
    return e


class _Text(SCons.Subst.Literal):
    """Untrusted text (a model's file name) in an environment: SCons would expand a '$' in
    a str, and refuses a '$(' even in a Literal when it signs an action; this signs as an
    escaped repr. The builders read it with str()."""

    def for_signature(self):
        return ascii(self.lstr).replace("$", "\\x24")


def _claim(folder, model, name):
    """``folder``, the build folder of C name ``name``, claimed by the model file ``model``:
    two model files whose names sanitize alike (``a.b.onnx``, ``a_b.onnx``) would otherwise
    build the same library, so the second is refused."""
    owner = getattr(folder.attributes, "onnxcc_model", None)
    if owner not in (None, model.abspath):
        raise OnnxccError(f"{owner} and {model.abspath} both compile as C name {name}",
                          where=folder.abspath, hint="pass name= to one of them")
    folder.attributes.onnxcc_model = model.abspath
    return folder


def _testdata(env, path):
    """The node of ``testdata=path`` (a folder or a .npy/.npz file, relative to the calling
    SConscript) and the files of it that verify reads; one line when it is neither."""
    entry = env.Entry(path).srcnode()
    files = verify.testdata_files(entry.abspath)
    return (env.Dir(entry) if os.path.isdir(entry.abspath) else env.File(entry)), files


@_declaration
def OnnxModel(env, name, model, target="x86_64", *, build_dir="build", toolchain="target",
              weights_section="", weights_format="bin", input_shape="", fuse=True, seed=0, testdata=None,
              verbose=False, need_runner=False, flash=None, ram=None, planner="auto",
              schedule="memory", pools="", io="caller", patches="auto", bands="auto", opt="speed", tactic="",
              autotune=False, sanitize=False, launcher="", with_profile=False):
    """Declare every stage of the ONNX file ``model``, compiled as C prefix ``name`` (None:
    the file's stem) for ``target`` into ``<build_dir>/<target>/<name>/``; relative paths are
    relative to the calling SConscript. ``toolchain='env'`` compiles with this environment's
    compiler and flags instead of the target's (after the target's ISA flags:
    _add_target_flags); ``weights_section`` puts the weights into
    that linker section, ``weights_format`` says how (``bin``: a binary file included by an
    assembler file; ``c``: C arrays; sanitize=1 takes C arrays, the only ones ASan guards);
    ``planner``, ``schedule``, ``pools``, ``io``, ``patches`` and ``bands`` steer
    the memory plan, ``opt``, ``tactic`` and ``autotune`` the kernels (README.md); ``sanitize`` builds
    everything with ASan and UBSan into ``<build_dir>/<target>-sanitize/<name>/`` (host
    targets only; verify then fails on any report); ``launcher`` runs the C compiles
    through ccache or distcc; ``with_profile``: this build also profiles, so report.html
    waits for the new profile.json. Returns an
    :class:`OnnxModelNodes` (unpacks as ``lib, include``)."""
    if toolchain not in TOOLCHAINS:
        raise OnnxccError(f"toolchain={toolchain!r} is not one of {', '.join(TOOLCHAINS)}",
                          hint="'target' compiles with the target's toolchain file, "
                               "'env' with the calling environment's CC and flags")
    weights_section = integration.check_section_name(weights_section)
    weights_format = "c" if sanitize else codegen.check_weights_format(weights_format)
    check_plan_options(planner, schedule, io)
    patches = check_patches(patches)
    bands = check_bands(bands)
    parse_pools(pools)
    if opt not in tactics.OPT_MODES:
        raise OnnxccError(f"opt={opt} is not one of {', '.join(tactics.OPT_MODES)}")
    tactics.parse_forced(tactic)  # a malformed tactic= fails now, in one line
    tgt = with_memory(load_target(target), flash, ram)
    if str(target).lower() == NATIVE:
        print(f"[target] native: {tgt.name} ({', '.join(tgt.cpu.features)} on this machine; "
              f"target={tgt.name} builds the same anywhere)")
    tgt.check_tools(need_runner or autotune, compiler=toolchain == "target")
    if sanitize:
        sanitizer.check(tgt)
    if autotune:
        bench.settings(tgt)  # it measures like bench: one line when the target cannot
    model = env.File(model)
    record = env.File(autotuner.record_path(model.srcnode().abspath, tgt.name))
    tuned = record if not autotune and not tactic and os.path.exists(record.abspath) else None
    name = model_c_name(name or os.path.splitext(model.name)[0])
    keep_cache_in(env.Dir(build_dir).abspath)  # the import graph's cache: a build output
    out = _claim(env.Dir(build_dir).Dir(sanitizer.build_folder(tgt.name, sanitize)).Dir(name),
                 model, name)
    testdata, testdata_files = _testdata(env, testdata) if testdata else (None, [])
    e = _model_env(env, tgt, toolchain, verbose, launcher)
    e.Replace(ONNXCC_FLASH=tgt.flash_bytes, ONNXCC_RAM=tgt.ram_bytes, ONNXCC_L2=tgt.l2_bytes,
              ONNXCC_NAME=name,
              ONNXCC_SOURCE=_Text(model.name),
              ONNXCC_INPUT_SHAPE=input_shape or "", ONNXCC_FUSE=bool(fuse),
              ONNXCC_SEED=int(seed), ONNXCC_VERBOSE=bool(verbose),
              ONNXCC_TARGET=tgt, ONNXCC_WEIGHTS_SECTION=weights_section,
              ONNXCC_WEIGHTS_FORMAT=weights_format,
              ONNXCC_SYSTEM_LIBS=list(tgt.toolchain.libs), ONNXCC_PLANNER=planner,
              ONNXCC_SCHEDULE=schedule, ONNXCC_POOLS=pools or "", ONNXCC_IO=io,
              ONNXCC_PATCHES=patches if isinstance(patches, str) else f"{patches[0]}x{patches[1]}",
              ONNXCC_BANDS=str(bands),
              ONNXCC_OPT=opt, ONNXCC_TACTIC=tactic or "", ONNXCC_AUTOTUNE=bool(autotune),
              # (paths as SCons gives them to the stages: relative to the top folder, so
              # that a clone elsewhere has the same signatures and shares a build cache)
              ONNXCC_TESTDATA=testdata.path if testdata else "",
              ONNXCC_TUNED=tuned.path if tuned else "", ONNXCC_RECORD=record,
              ONNXCC_TARGET_NAME=tgt.name,
              ONNXCC_CPU=json.dumps(tgt.cpu.as_dict(), sort_keys=True),
              ONNXCC_BENCH=json.dumps(tgt.bench, sort_keys=True))
    e.Append(BUILDERS=dict(BUILDERS, OnnxccLinkModel=_LINK_MODEL,
                           OnnxccAssembleWeights=_ASSEMBLE_WEIGHTS),
             CPPPATH=[out, e.Dir(RUNTIME_DIR)])
    if opt == "size":  # the reference kernels, and the compiler's smallest code for them
        e.Append(CCFLAGS=["-Os"])
    if sanitize:  # the library, the harnesses and their links
        e.Append(CCFLAGS=sanitizer.FLAGS, LINKFLAGS=sanitizer.FLAGS,
                 ONNXCC_FOOTPRINT_LINKFLAGS=sanitizer.FLAGS)

    def at(*parts):
        return out.File(os.path.join(*parts))

    # (each builder's emitter adds the files written beside the one named here, and its
    # scanner the compiler modules and templates the stage runs)
    imported = e.OnnxccImport(at("imported.onnx"), model)
    optimized = e.OnnxccOptimize(at("optimized.onnx"), imported)
    if autotune:  # measures the candidates (with the weights), records the choice
        selected = e.OnnxccSelect(at("tactics.json"), optimized)
        e.NoCache(selected)  # a measurement of this machine, and the record is a source file
        chosen = selected[:1]
    else:
        forced = [env.File(tactic)] if str(tactic or "").endswith(".json") else []
        chosen = e.OnnxccSelect(at("tactics.json"),
                                [optimized[0]] + forced + ([tuned] if tuned else []))
    plan = e.OnnxccPlan(at("plan.json"), [optimized[0], chosen])
    header_c = e.OnnxccGenerateModel(at(f"{name}.h"), [optimized[0], plan, chosen])
    kernels = e.OnnxccGenerateKernels(at(f"{name}_kernels.c"), [optimized[0], plan, chosen])
    weights_files, weights_object = _WEIGHTS[weights_format]
    weights = e.OnnxccGenerateWeights([at(f"{name}_weights.{x}") for x in weights_files],
                                      optimized + chosen + plan)
    fragments = e.OnnxccFragments(at(f"{name}.mk"), [plan[0], header_c[0]])

    # the library's objects, the C ones with gcc's stack usage (.su) for the size report
    stack_usage = []
    runtime = [os.path.join(RUNTIME_DIR, "onnxcc_runtime.c")]
    objects = [_compiled(e, at, header_c[1:2], stack_usage),
               _compiled(e, at, kernels[:1], stack_usage),
               weights_object(e, at, weights, stack_usage),
               _compiled(e, at, runtime, stack_usage)]
    lib_object = e.OnnxccLinkModel(at(f"lib{name}.o"), objects)
    # nothing links the library (the footprint, verify and bench programs, a firmware)
    # before it is known to fit the target: onnxcc's line, not the linker's "overflowed"
    fits = e.OnnxccFit(at("fit.json"), lib_object + plan + chosen[:1] + stack_usage)
    lib = e.StaticLibrary(at(f"lib{name}.a"), lib_object)
    e.Depends(lib, fits)
    startup = [e.Object(at("startup", os.path.splitext(os.path.basename(s))[0] + ".o"), s)
               for s in tgt.harness_sources]
    link_files = _link_files(tgt)  # the linker script the programs are linked with

    footprint_c = e.OnnxccFootprintMain(at("footprint", f"{name}_footprint.c"), optimized[0])
    program = e.Object(at("footprint", f"{name}_footprint.o"), footprint_c)
    program += startup if tgt.footprint_sources == tgt.harness_sources else [
        e.Object(at("footprint", "startup", os.path.splitext(os.path.basename(s))[0] + ".o"), s)
        for s in tgt.footprint_sources]
    footprint_elf = e.Program(at("footprint", f"{name}_footprint"), program,
                              LIBS=[lib] + tgt.toolchain.libs,
                              LINKFLAGS="$ONNXCC_FOOTPRINT_LINKFLAGS")
    size = e.OnnxccReport(at("size.json"), footprint_elf + chosen[:1] + stack_usage + program)
    # the table is printed at the end of every build, also when nothing changed
    show_size = e.Alias(f"size-table-{tgt.name}-{name}", size, _stage("report", _print_report))
    e.AlwaysBuild(show_size)

    case = e.OnnxccVerifyCase(at("verify", "harness.c"), [model] + testdata_files)
    e.Depends(case, imported)  # a model that does not import gets no harness: its error shows
    harness = e.Program(at("verify", f"{name}_harness"), case[:2] + startup,
                        LIBS=[lib] + tgt.toolchain.libs)
    e.Depends(footprint_elf + harness, link_files)
    report = e.OnnxccVerifyRun(at("verify", "report.json"), [harness[0], case[2]])
    e.AlwaysBuild(report)
    e.NoCache(report)  # verify means running it

    timing = None
    if tgt.bench:  # the harness runs the model many times on the verify inputs
        bench_c = e.OnnxccBenchHarness(at("bench", "bench.c"), optimized[0])
        bench_elf = e.Program(at("bench", f"{name}_bench"), bench_c + case[1:2] + startup,
                              LIBS=[lib] + tgt.toolchain.libs)
        timing = e.OnnxccBenchRun(at("bench", "bench.json"), bench_elf)
        e.AlwaysBuild(timing)
        e.NoCache(timing)  # a measurement of this machine
        e.Depends(bench_elf, link_files)

    # profile: an instrumented copy of the run function (profile/profile.c) linked with the
    # library's own objects, run on verify's inputs; the library itself is never rebuilt
    profile_json = at("profile.json")
    measured = None
    try:
        profiler.settings(tgt)
    except OnnxccError:
        pass  # `profile` says so in one line (SConstruct); report.html has no profile
    else:
        profile_c = e.OnnxccProfileProgram(at("profile", "profile.c"), [optimized[0], plan, chosen])
        profile_elf = e.Program(at("profile", f"{name}_profile"),
                                profile_c + e.Object(at("profile", "verify_data.o"), case[1])
                                + objects + startup,
                                LIBS=tgt.toolchain.libs)
        measured = e.OnnxccProfileRun(profile_json, [profile_elf[0], optimized[0], plan, chosen])
        e.AlwaysBuild(measured)
        e.NoCache(measured)  # a measurement of this machine
        e.Depends(profile_elf, link_files)

    # report.html: reads the JSON artifacts (and the footprint ELF's symbols); it shows a
    # profile.json of an earlier `profile` when its plan and tactics are still those of this
    # build, without asking for a new one (that runs the model), unless this build profiles
    report_sources = [plan[0], chosen[0], size[0], footprint_elf[0], optimized[0]]
    if with_profile and measured:
        report_sources += measured
    elif os.path.isfile(profile_json.abspath):
        report_sources.append(e.Value(profiler.digest(profile_json.abspath)))
    shows_profile = len(report_sources) > 5
    html = e.OnnxccHtmlReport(at("report.html"), report_sources,
                              ONNXCC_PROFILE_JSON=profile_json.abspath if shows_profile else "")
    return OnnxModelNodes(name=name, lib=lib[0], include=out, fragments=list(fragments),
                          size=size, show_size=show_size, verify=report, bench=timing,
                          profile=measured, report=html, dir=out.abspath, target=tgt, env=e)


@_declaration
def OnnxSharedArena(env, name, models):
    """One arena for ``models`` (from OnnxModel, one target), which never run at the same
    time: ``<name>.h`` (``<NAME>_BYTES``, ``<NAME>_ALIGN``, ``extern uint8_t <name>[]``) and
    ``lib<name>.a`` that defines it, sized by the largest of the models' arenas, in
    ``<build_dir>/<target>/<name>/``. Returns ``(lib, include)``."""
    models = list(models)
    name = model_c_name(name)
    if not models:
        raise OnnxccError(f"shared arena {name}: no models", hint="pass the results of OnnxModel")
    if len({m.target.name for m in models}) > 1:
        raise OnnxccError(f"shared arena {name}: models of different targets "
                          f"({', '.join(f'{m.name} on {m.target.name}' for m in models)})",
                          hint="one firmware runs on one target: build its models for it")
    if name in {m.name for m in models}:
        raise OnnxccError(f"shared arena {name}: named like one of its models",
                          hint="give the arena a name of its own, e.g. shared_arena")
    first = models[0]
    out = first.env.Dir(first.dir).Dir("..").Dir(name)
    e = first.env.Clone(ONNXCC_ARENA=name, ONNXCC_ARENA_MODELS=[m.name for m in models])
    e.Replace(CPPPATH=[m.include for m in models] + [out])
    sources = e.OnnxccSharedArena(out.File(f"{name}.h"), e.Value(" ".join(m.name for m in models)))
    lib = e.StaticLibrary(out.File(f"lib{name}.a"), e.Object(out.File(f"{name}.o"), sources[1]))
    return lib[0], out


def OnnxSizeGate(env, model, baseline, tolerance=0.0, write=False, floor=None):
    """size-baseline (``write``) or size-check of ``model`` (from OnnxModel) against
    the JSON file ``baseline``: a category fails when it grows by more than ``tolerance``
    percent and more than ``floor`` bytes (None: size_gate.DEFAULT_FLOOR), a total by more
    than ``tolerance`` percent; runs every time it is asked for."""
    floor = size_gate.DEFAULT_FLOOR if floor is None else floor
    e = model.env.Clone(ONNXCC_BASELINE=str(baseline), ONNXCC_TOLERANCE=float(tolerance),
                        ONNXCC_SIZE_FLOOR=int(floor))
    kind = "baseline" if write else "check"
    action = _stage("size", _size_baseline if write else _size_check)
    node = e.Alias(f"size-{kind}-{model.target.name}-{model.name}", model.size, action)
    e.AlwaysBuild(node)
    return node


def _python_deps():
    """``onnx==1.23.2 onnxruntime==...``; ValueError naming the packages not installed."""
    versions, missing = [], []
    for dist in PYTHON_DEPS:
        try:
            versions.append(f"{dist}=={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist)
    if missing:
        raise ValueError(f"the Python package(s) {', '.join(missing)} are not installed")
    return " ".join(versions)


def _unusable():
    """Why this tool cannot work in this Python (None: it can)."""
    try:
        _python_deps()
    except ValueError as e:
        return str(e)
    if _IMPORT_ERROR is not None:
        return f"the onnxcc compiler does not import: {_IMPORT_ERROR}"
    return None


def generate(env):
    problem = _unusable()
    if problem:
        # (StopError: SCons prints the one line, without the frame it came from)
        raise SCons.Errors.StopError(
            f"onnxcc: {problem} (run ./setup.sh, or pip install -r {REPO_ROOT}/requirements.txt "
            "into the Python that runs SCons)")
    env.AddMethod(OnnxModel, "OnnxModel")
    env.AddMethod(OnnxSharedArena, "OnnxSharedArena")
    env.AddMethod(OnnxSizeGate, "OnnxSizeGate")
    env.SetDefault(ONNXCC_REPO=REPO_ROOT)
    env["ONNXCC_PYTHON_DEPS"] = _python_deps()


def exists(env):
    """Whether onnxcc can build here: the compiler package and the Python packages its
    stages run (onnx, onnxruntime, numpy, Mako, pyelftools) import in SCons' Python."""
    return _unusable() is None

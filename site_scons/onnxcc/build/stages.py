"""The compiler's stages as SCons builders: each reads its named inputs and the ONNXCC_*
construction variables of its model's environment (build/model.py), calls one stage
of the compiler and returns the line to print. A stage runs again only when its inputs,
its variables, the modules it runs or the templates it renders changed."""

import json
import os

import SCons.Scanner
from onnxcc.build.actions import beside, stage
from onnxcc.codegen import stage as codegen
from onnxcc.core.errors import OnnxccError, one_line
from onnxcc.core.files import write_text
from onnxcc.core.report import format_table, human_bytes
from onnxcc.footprint import fit, measure, stack_usage
from onnxcc.importer import stage as importer
from onnxcc.passes import stage as optimizer
from onnxcc.plan import stage as planner
from onnxcc.plan.pools import parse_pools
from onnxcc.quantize import stage as quantizer
from onnxcc.tactics import stage as tactics
from onnxcc.verbs import autotune as autotuner
from onnxcc.verbs import bench, html_report, integration
from onnxcc.verbs import profile as profiler
from onnxcc.verbs import validate as validator
from onnxcc.verbs import verify

# --- compile: model file -> C sources -----------------------------------------------------


@stage("quantize", ("model", "data*"),
       ["ONNXCC_QUANTIZE", "ONNXCC_IO_DTYPE", "ONNXCC_CALIBRATION", "ONNXCC_CALIBRATE",
        "ONNXCC_PER_CHANNEL", "ONNXCC_KEEP_FLOAT", "ONNXCC_SEED", "ONNXCC_INPUT_SHAPE"])
def quantize(targets, src, env):
    """quantized.onnx: the model quantized (calibrated on the data set
    ONNXCC_CALIBRATION, whose files are ``data``, or on random inputs when it is empty),
    and with io_dtype=int8 its integer inputs and outputs."""
    line = quantizer.run(src.model, targets[0], env["ONNXCC_QUANTIZE"], env["ONNXCC_IO_DTYPE"],
                         env["ONNXCC_CALIBRATION"], int(env["ONNXCC_SEED"]),
                         env["ONNXCC_CALIBRATE"], env["ONNXCC_PER_CHANNEL"],
                         env["ONNXCC_KEEP_FLOAT"],
                         importer.parse_input_shapes(env["ONNXCC_INPUT_SHAPE"]))
    return f"[quantize] {env['ONNXCC_NAME']}: {line}"


@stage("import", ("model",), ["ONNXCC_INPUT_SHAPE"], emitter=beside("{stem}.bin"))
def import_model(targets, src, env):
    graph = importer.run(src.model, targets[0], targets[1],
                         importer.parse_input_shapes(env["ONNXCC_INPUT_SHAPE"]))
    return f"[import] {env['ONNXCC_NAME']}: {len(graph.nodes)} nodes from {one_line(src.model)}"


@stage("optimize", ("graph", "weights"), ["ONNXCC_FUSE"], emitter=beside("{stem}.bin"))
def optimize(targets, src, env):
    graph = optimizer.run(src.graph, targets[0], targets[1], fuse=env["ONNXCC_FUSE"],
                          source=env["ONNXCC_SOURCE"])
    return f"[optimize] {env['ONNXCC_NAME']}: {len(graph.nodes)} nodes"


def _tactics_outputs(target, source, env):
    """autotune also writes the measured choices beside the model (autotune.record_path)."""
    return target[:1] + ([env["ONNXCC_RECORD"]] if env["ONNXCC_AUTOTUNE"] else []), source


@stage("tactics", ("graph", "reads*"),
       ["ONNXCC_OPT", "ONNXCC_TACTIC", "ONNXCC_CPU", "ONNXCC_AUTOTUNE", "ONNXCC_TUNED"],
       emitter=_tactics_outputs)
def select(targets, src, env):
    """tactics.json; with autotune, first the measured choices (targets[1]); a recorded
    measurement of an earlier build is ONNXCC_TUNED. ``reads``: the files the options name
    (a forced tactics file, that record) and the weights autotune measures with."""
    tuned = env["ONNXCC_TUNED"] or None
    if env["ONNXCC_AUTOTUNE"]:
        autotuner.run(src.graph, targets[1], env["ONNXCC_NAME"], env["ONNXCC_TARGET"])
        tuned = targets[1]
    result = tactics.run(src.graph, targets[0], env["ONNXCC_TARGET"].cpu, env["ONNXCC_OPT"],
                         env["ONNXCC_TACTIC"], tuned)
    chosen = sorted({f"{n['op']}:{n['tactic']}" for n in result["nodes"]
                     if n["tactic"] != "reference"})
    return (f"[tactics] {env['ONNXCC_NAME']}: opt={env['ONNXCC_OPT']}"
            + (f", measured ({tuned})" if tuned else "")
            + (f", {', '.join(chosen)}" if chosen else ", reference kernels"))


@stage("plan", ("graph", "tactics"),
       ["ONNXCC_SOURCE", "ONNXCC_PLANNER", "ONNXCC_SCHEDULE", "ONNXCC_POOLS", "ONNXCC_IO",
        "ONNXCC_RAM", "ONNXCC_PATCHES", "ONNXCC_BANDS", "ONNXCC_L2"])
def plan(targets, src, env):
    p = planner.run(src.graph, targets[0], str(env["ONNXCC_SOURCE"]),
                    planner=env["ONNXCC_PLANNER"], schedule=env["ONNXCC_SCHEDULE"],
                    pools=env["ONNXCC_POOLS"], io=env["ONNXCC_IO"], tactics_path=src.tactics,
                    ram_bytes=env["ONNXCC_TARGET"].ram_bytes, patches=env["ONNXCC_PATCHES"],
                    bands=env["ONNXCC_BANDS"], cache_bytes=env["ONNXCC_L2"])
    return f"[plan] {env['ONNXCC_NAME']}: {planner.summary(p)}"


@stage("generate", ("graph", "plan", "tactics"), ["ONNXCC_NAME", "ONNXCC_SOURCE"],
       templates=("model.h.mako", "model.c.mako"), emitter=beside("{stem}.c"))
def generate_model(targets, src, env):
    codegen.run_model(src.graph, src.plan, src.tactics, targets[0], targets[1],
                      env["ONNXCC_NAME"], str(env["ONNXCC_SOURCE"]))
    return f"[generate] {env['ONNXCC_NAME']}: {os.path.basename(targets[1])}"


def _scan_kernel_templates(node, env, path):
    """The kernel templates a model may use: found by lowering its (built) optimized graph
    with its (built) tactics.json, the scanned node, run in patches as its (built)
    plan.json says."""
    folder = os.path.dirname(str(node))
    if not str(node).endswith("tactics.json") or not os.path.exists(str(node)):
        return []
    try:
        return env.File(codegen.used_kernel_templates(os.path.join(folder, "optimized.onnx"),
                                                      str(node), os.path.join(folder, "plan.json")))
    except OnnxccError:
        return []  # the generate stage itself reports it


@stage("generate", ("graph", "plan", "tactics"), ["ONNXCC_NAME", "ONNXCC_SOURCE"],
       templates=("model_kernels.c.mako", "model_kernels.h.mako", "kernels/lib/vmath.mako"),
       emitter=beside("{stem}.h"),
       source_scanner=SCons.Scanner.Scanner(_scan_kernel_templates, name="onnxcc_kernels"))
def generate_kernels(targets, src, env):
    n = codegen.run_kernels(src.graph, src.plan, src.tactics, targets[0], targets[1],
                            env["ONNXCC_NAME"], str(env["ONNXCC_SOURCE"]))
    return f"[generate] {env['ONNXCC_NAME']}: {os.path.basename(targets[0])} ({n} kernels)"


@stage("generate", ("graph", "weights", "tactics", "plan"),
       ["ONNXCC_NAME", "ONNXCC_SOURCE", "ONNXCC_WEIGHTS_SECTION", "ONNXCC_WEIGHTS_FORMAT"],
       templates=("model_weights.c.mako", "model_weights.S.mako"))
def generate_weights(targets, src, env):
    n = codegen.run_weights(src.graph, src.tactics, src.plan, targets, env["ONNXCC_NAME"],
                            str(env["ONNXCC_SOURCE"]), env["ONNXCC_WEIGHTS_SECTION"],
                            env["ONNXCC_WEIGHTS_FORMAT"])
    return f"[generate] {env['ONNXCC_NAME']}: {os.path.basename(targets[0])} ({human_bytes(n)})"


@stage("generate", ("plan", "header"),
       ["ONNXCC_NAME", "ONNXCC_TARGET_NAME", "ONNXCC_SYSTEM_LIBS", "ONNXCC_TARGET_CFLAGS",
        "ONNXCC_WEIGHTS_SECTION"],
       templates=("model.mk.mako", "model.cmake.mako", "model_CMakeLists.txt.mako"),
       emitter=beside("{stem}.cmake", "CMakeLists.txt"))
def fragments(targets, src, env):
    integration.run_fragments(src.plan, src.header, *targets, env["ONNXCC_NAME"],
                              env["ONNXCC_TARGET"].name, env["ONNXCC_SYSTEM_LIBS"],
                              env["ONNXCC_TARGET_CFLAGS"], env["ONNXCC_WEIGHTS_SECTION"])
    return None


@stage("generate", ("models",), ["ONNXCC_ARENA", "ONNXCC_ARENA_MODELS"],
       templates=("shared_arena.h.mako", "shared_arena.c.mako"), emitter=beside("{stem}.c"))
def shared_arena(targets, src, env):
    integration.run_shared_arena(targets[0], targets[1], env["ONNXCC_ARENA"],
                                 env["ONNXCC_ARENA_MODELS"])
    return f"[generate] {env['ONNXCC_ARENA']}: shared by {', '.join(env['ONNXCC_ARENA_MODELS'])}"


# --- footprint: does the library fit, what does it take -----------------------------------

def pool_names(env):
    return [p.name for p in parse_pools(env["ONNXCC_POOLS"])]


@stage("report", ("graph",), ["ONNXCC_NAME", "ONNXCC_POOLS", "ONNXCC_IO"],
       templates=("footprint_main.c.mako",))
def footprint_main(targets, src, env):
    codegen.run_footprint_main(src.graph, targets[0], env["ONNXCC_NAME"], pool_names(env),
                               env["ONNXCC_IO"] == "arena")
    return None


def _budget(env, tactics_path):
    target = env["ONNXCC_TARGET"]
    return fit.Budget(env["ONNXCC_PART"], target.flash_bytes, target.ram_bytes, env["ONNXCC_OPT"],
                      fit.is_quantized(tactics_path))


@stage("fit", ("library", "plan", "tactics", "stack*"),
       ["ONNXCC_NAME", "ONNXCC_FLASH", "ONNXCC_RAM", "ONNXCC_OPT"])
def fit_check(targets, src, env):
    """fit.json: the model's library with its plan and stack (gcc's .su files) fits the
    target; checked before any link."""
    name = env["ONNXCC_NAME"]
    with open(src.plan) as f:
        plan = json.load(f)
    stack, _ = stack_usage(name, src.stack)
    budget = _budget(env, src.tactics)
    flash, ram = fit.check_library(name, src.library, plan, stack, budget)
    write_text(targets[0], json.dumps({"model": name, "flash": flash, "ram": ram,
                                       "flash_bytes": budget.flash_bytes,
                                       "ram_bytes": budget.ram_bytes}, indent=1) + "\n")
    return None


@stage("report", ("program", "tactics", "objects*"),
       ["ONNXCC_NAME", "ONNXCC_FLASH", "ONNXCC_RAM", "ONNXCC_OPT"])
def size_report(targets, src, env):
    """size.json from the footprint ELF, the .su files and the footprint program's own
    objects; fails a model that does not fit the target."""
    su = [s for s in src.objects if s.endswith(".su")]
    program = [s for s in src.objects if not s.endswith(".su")]
    sizes = measure(src.program, env["ONNXCC_NAME"], su, program)
    fit.check_fits(sizes, _budget(env, src.tactics))
    write_text(targets[0], json.dumps(sizes, indent=1) + "\n")
    return None


def print_size(targets, src, env):
    with open(src.sources[0]) as f:
        sizes = json.load(f)
    of = f" (of {env['ONNXCC_MEMORY']})" if env["ONNXCC_MEMORY"] else ""
    return (f"[report] {env['ONNXCC_NAME']} on {env['ONNXCC_TARGET'].name}: "
            f"flash {human_bytes(sizes['flash']['total'])}, "
            f"ram {human_bytes(sizes['ram']['total'])}{of}\n" + format_table(sizes))


# --- verbs: run the model -----------------------------------------------------------------

@stage("verify", ("model", "testdata*"),
       ["ONNXCC_NAME", "ONNXCC_SEED", "ONNXCC_TESTDATA", "ONNXCC_INPUT_SHAPE", "ONNXCC_POOLS",
        "ONNXCC_IO"],
       templates=("harness.c.mako", "verify_data.c.mako"),
       emitter=beside("verify_data.c", "expected.npz"))
def verify_case(targets, src, env):
    verify.make_case(src.model, env["ONNXCC_NAME"], targets[0], targets[1], targets[2],
                     importer.parse_input_shapes(env["ONNXCC_INPUT_SHAPE"]),
                     int(env["ONNXCC_SEED"]), env["ONNXCC_TESTDATA"] or None, pool_names(env),
                     env["ONNXCC_IO"] == "arena")
    return None


@stage("verify", ("harness", "expected"))
def verify_run(targets, src, env):
    return verify.run(env["ONNXCC_TARGET"], src.harness, src.expected, targets[0],
                      env["ONNXCC_NAME"])


@stage("validate", ("model", "reference", "data*"),
       ["ONNXCC_NAME", "ONNXCC_DATA", "ONNXCC_SAMPLES", "ONNXCC_INPUT_SHAPE", "ONNXCC_POOLS",
        "ONNXCC_IO", "ONNXCC_FLASH"],
       templates=("harness.c.mako", "verify_data.c.mako"),
       emitter=beside("validate_data.c", "reference.npz"))
def validate_case(targets, src, env):
    """The validate harness, its samples and references; ``reference``: the float model
    to measure against (the model itself when there is no other)."""
    validator.make_case(src.model, src.reference if src.reference != src.model else None,
                        env["ONNXCC_NAME"],
                        *targets, env["ONNXCC_DATA"],
                        importer.parse_input_shapes(env["ONNXCC_INPUT_SHAPE"]),
                        int(env["ONNXCC_SAMPLES"]), env["ONNXCC_FLASH"], pool_names(env),
                        env["ONNXCC_IO"] == "arena")
    return None


@stage("validate", ("harness", "reference"))
def validate_run(targets, src, env):
    return validator.run(env["ONNXCC_TARGET"], src.harness, src.reference, targets[0],
                         env["ONNXCC_NAME"])


@stage("bench", ("graph",), ["ONNXCC_NAME", "ONNXCC_BENCH", "ONNXCC_POOLS", "ONNXCC_IO"],
       templates=("bench.c.mako", "clock.mako"))
def bench_harness(targets, src, env):
    bench.make_harness(src.graph, targets[0], env["ONNXCC_NAME"], env["ONNXCC_TARGET"],
                       pool_names(env), env["ONNXCC_IO"] == "arena")
    return None


@stage("bench", ("program",))
def bench_run(targets, src, env):
    return bench.run(env["ONNXCC_TARGET"], src.program, targets[0], env["ONNXCC_NAME"])


@stage("profile", ("graph", "plan", "tactics"),
       ["ONNXCC_NAME", "ONNXCC_BENCH", "ONNXCC_POOLS", "ONNXCC_IO"],
       templates=("profile.c.mako", "clock.mako"))
def profile_program(targets, src, env):
    profiler.make_program(src.graph, src.plan, src.tactics, targets[0], env["ONNXCC_NAME"],
                          env["ONNXCC_TARGET"])
    return None


@stage("profile", ("program", "graph", "plan", "tactics"))
def profile_run(targets, src, env):
    return profiler.run(env["ONNXCC_TARGET"], src.program, src.graph, src.plan, src.tactics,
                        targets[0], env["ONNXCC_NAME"])


def _earlier_profile(node, env):
    """The bytes of a profile.json an earlier ``profile`` left (the report shows it when it
    measured this build's plan and tactics), read when the build reaches the report."""
    path = env["ONNXCC_PROFILE_JSON"] and env.File(env["ONNXCC_PROFILE_JSON"]).abspath
    return [env.Value(profiler.digest(path))] if path and os.path.isfile(path) else []


@stage("report", ("plan", "tactics", "size", "program", "graph", "measured*"),
       ["ONNXCC_NAME", "ONNXCC_SOURCE", "ONNXCC_PROFILE_JSON", "ONNXCC_VALIDATE_JSON"],
       templates=("report.html.mako",), scan=_earlier_profile)
def html(targets, src, env):
    """report.html from plan.json, tactics.json, size.json, the footprint ELF, the
    optimized graph and (when there is one) profile.json; with validate.json when this
    build validates (``measured``: the profile and validate.json this build makes)."""
    html_report.run(targets[0], src.plan, src.tactics, src.size, src.program, src.graph,
                    env["ONNXCC_PROFILE_JSON"], env["ONNXCC_NAME"], env["ONNXCC_TARGET"].name,
                    str(env["ONNXCC_SOURCE"]), env["ONNXCC_VALIDATE_JSON"])
    return f"[report] {env['ONNXCC_NAME']}: {os.path.basename(targets[0])}"

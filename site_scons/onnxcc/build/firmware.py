"""What a firmware tree declares besides its models: one arena shared by several models,
and the CI size gate of a model."""

import json

from onnxcc import __version__
from onnxcc.build import stages
from onnxcc.build.actions import action, declaration
from onnxcc.core.ctext import model_c_name
from onnxcc.core.errors import OnnxccError
from onnxcc.core.report import format_gate
from onnxcc.footprint import size_gate

#: the options that change a model's code or memory, recorded in a size baseline
SIZE_OPTIONS = ("float_abi", "opt", "fuse", "tactic", "quantize", "io_dtype", "io", "weights_format",
                "planner", "schedule", "pools", "patches", "bands")


def _build_record(env):
    """What a size baseline records of the build: target, options, onnxcc's version."""
    return {"target": env["ONNXCC_TARGET_NAME"], "onnxcc": __version__,
            "options": {k: str(env[f"ONNXCC_{k.upper()}"]) for k in SIZE_OPTIONS}}


def size_baseline(targets, src, env):
    with open(src.sources[0]) as f:
        size_gate.write_baseline(env["ONNXCC_BASELINE"], json.load(f), _build_record(env))
    return f"[size] baseline written to {env['ONNXCC_BASELINE']}"


def size_check(targets, src, env):
    with open(src.sources[0]) as f:
        current = json.load(f)
    baseline = size_gate.read_baseline(env["ONNXCC_BASELINE"])
    mismatch = size_gate.build_mismatch(baseline, _build_record(env))
    if mismatch:
        raise OnnxccError(f"size baseline {env['ONNXCC_BASELINE']} does not fit this build: {mismatch}",
                          hint="check against a baseline of the same target and options "
                               "(write one with size-baseline)")
    result = size_gate.compare(baseline, current,
                               float(env["ONNXCC_TOLERANCE"]), int(env["ONNXCC_SIZE_FLOOR"]))
    print("\n".join(format_gate(result)))
    if not result.ok:
        raise OnnxccError(f"{env['ONNXCC_NAME']} grew beyond the size gate of "
                          f"{env['ONNXCC_BASELINE']}: {', '.join(result.failed)}",
                          hint="update the baseline (size-baseline) when the growth is intended")
    return f"[size] {env['ONNXCC_NAME']} within the size gate of {env['ONNXCC_BASELINE']}"



@declaration
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
    sources = stages.shared_arena(e, out.File(f"{name}.h"),
                                  models=e.Value(" ".join(m.name for m in models)))
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
    run = action("size", size_baseline if write else size_check)
    node = e.Alias(f"size-{kind}-{model.target.name}-{model.name}", model.size, run)
    e.AlwaysBuild(node)
    return node

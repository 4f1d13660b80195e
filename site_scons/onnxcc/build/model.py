"""``OnnxModel``: every stage of one model declared, from its ONNX file to its library,
size report, verify, bench and profile programs and report.html."""

import json
import os
from dataclasses import dataclass

import SCons.Subst
from onnxcc.build import stages
from onnxcc.build import toolchain as toolchain_
from onnxcc.build.actions import BUILDERS, action, declaration
from onnxcc.build.module_deps import keep_cache_in
from onnxcc.codegen import stage as codegen
from onnxcc.core import dataset
from onnxcc.core.ctext import model_c_name
from onnxcc.core.errors import OnnxccError
from onnxcc.core.paths import RUNTIME_DIR
from onnxcc.plan.bands import check_bands
from onnxcc.plan.patches import check_grid as check_patches
from onnxcc.plan.pools import parse_pools
from onnxcc.plan.stage import check_options as check_plan_options
from onnxcc.quantize.stage import check_options as check_quantize_options
from onnxcc.tactics import stage as tactics
from onnxcc.target import NATIVE, build_target
from onnxcc.verbs import autotune as autotuner
from onnxcc.verbs import bench, integration
from onnxcc.verbs import profile as profiler
from onnxcc.verbs import sanitize as sanitizer


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
    validate: object   # its accuracy on the data set data= (None: no data set given)
    bench: object      # runs it many times and reports the median cost (None: cannot)
    profile: object    # profile.json: each step's cost, MACs, tactic (None: cannot profile)
    report: object     # report.html: memory timeline, footprint, tactics, profile
    dir: str           # the model's build folder
    target: object     # the onnxcc Target
    env: object        # the environment its files are built in

    def __iter__(self):
        return iter((self.lib, self.include))


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


def _data(env, path):
    """The node of a data set (``testdata=``, ``calibration=``: a folder or a .npy/.npz
    file, relative to the calling SConscript) and the files of it that are read; one line
    when it is neither."""
    entry = env.Entry(path).srcnode()
    files = dataset.files(entry.abspath)
    return (env.Dir(entry) if os.path.isdir(entry.abspath) else env.File(entry)), files


@declaration
def OnnxModel(env, name, model, target=None, *, board="", float_abi="", build_dir="build",
              toolchain="target",
              weights_section="", weights_format="bin", input_shape="", fuse=True, seed=0, testdata=None,
              verbose=False, need_runner=False, flash=None, ram=None, planner="auto",
              schedule="memory", pools="", io="caller", patches="auto", bands="auto", opt="speed", tactic="",
              autotune=False, sanitize=False, launcher="", with_profile=False, quantize="",
              calibration=None, calibrate="minmax", per_channel=True, keep_float="",
              io_dtype="float", data=None, samples=0, reference=None, with_validate=False):
    """Declare every stage of the ONNX file ``model``, compiled as C prefix ``name`` (None:
    the file's stem) for ``target`` (default: the core of ``board``, a part of boards/, whose
    memory the fit check then uses; else x86_64; ``float_abi``: hard, softfp or soft instead of
    an Arm target's own) into ``<build_dir>/<target>/<name>/``; relative paths are
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
    waits for the new profile.json. ``quantize='int8'`` compiles the float model quantized
    (quantized.onnx in the build folder), calibrated by ``calibrate`` on the data set
    ``calibration`` (else on ``testdata``, else on random inputs), with ``per_channel``
    weights, the nodes ``keep_float`` names left in float; ``io_dtype='int8'`` leaves the
    quantization of the inputs and outputs to the caller. ``data``: the data set
    ``validate`` runs (at most ``samples`` of it; 0: all) and measures against the float
    model ``reference`` (default: the one quantize= started from); ``with_validate``: this build
    validates, so report.html shows validate.json. Returns an
    :class:`OnnxModelNodes` (unpacks as ``lib, include``)."""
    if toolchain not in toolchain_.TOOLCHAINS:
        raise OnnxccError(f"toolchain={toolchain!r} is not one of {', '.join(toolchain_.TOOLCHAINS)}",
                          hint="'target' compiles with the target's toolchain file, "
                               "'env' with the calling environment's CC and flags")
    weights_section = integration.check_section_name(weights_section)
    weights_format = "c" if sanitize else codegen.check_weights_format(weights_format)
    check_plan_options(planner, schedule, io)
    keep_float = check_quantize_options(quantize, calibrate, keep_float, io_dtype)
    patches = check_patches(patches)
    bands = check_bands(bands)
    parse_pools(pools)
    if opt not in tactics.OPT_MODES:
        raise OnnxccError(f"opt={opt} is not one of {', '.join(tactics.OPT_MODES)}")
    tactics.parse_forced(tactic)  # a malformed tactic= fails now, in one line
    tgt, memory = build_target(target, board, flash, ram, float_abi)
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
    testdata, testdata_files = _data(env, testdata) if testdata else (None, [])
    calibration, calibration_files = _data(env, calibration) if calibration else (testdata, testdata_files)
    data, data_files = _data(env, data) if data else (None, [])
    e = toolchain_.model_env(env, tgt, toolchain, verbose, launcher)
    e.Replace(ONNXCC_FLASH=tgt.flash_bytes, ONNXCC_RAM=tgt.ram_bytes, ONNXCC_L2=tgt.cpu.l2_bytes,
              ONNXCC_MEMORY=memory, ONNXCC_FLOAT_ABI=float_abi, ONNXCC_PART=f"{board} ({tgt.name})" if board else tgt.name,
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
              ONNXCC_QUANTIZE=quantize, ONNXCC_CALIBRATE=calibrate, ONNXCC_IO_DTYPE=io_dtype,
              ONNXCC_CALIBRATION=calibration.path if calibration else "",
              ONNXCC_PER_CHANNEL=bool(per_channel), ONNXCC_KEEP_FLOAT=keep_float,
              ONNXCC_DATA=data.path if data else "", ONNXCC_SAMPLES=int(samples),
              ONNXCC_TUNED=tuned.path if tuned else "", ONNXCC_RECORD=record,
              ONNXCC_TARGET_NAME=tgt.name,
              ONNXCC_CPU=json.dumps(tgt.cpu.as_dict(), sort_keys=True),
              ONNXCC_BENCH=json.dumps(tgt.bench, sort_keys=True))
    e.Append(BUILDERS=dict(BUILDERS, OnnxccLinkModel=toolchain_.LINK_MODEL,
                           OnnxccAssembleWeights=toolchain_.ASSEMBLE_WEIGHTS),
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
    float_model = model
    if quantize or io_dtype != "float":  # from here on the model is quantized.onnx
        model = stages.quantize(e, at("quantized.onnx"), model=model, data=calibration_files)[0]
    imported = stages.import_model(e, at("imported.onnx"), model=model)
    optimized = stages.optimize(e, at("optimized.onnx"), graph=imported[0], weights=imported[1])
    if autotune:  # measures the candidates (with the weights), records the choice
        selected = stages.select(e, at("tactics.json"), graph=optimized[0], reads=optimized[1:])
        e.NoCache(selected)  # a measurement of this machine, and the record is a source file
        chosen = selected[:1]
    else:
        forced = [env.File(tactic)] if str(tactic or "").endswith(".json") else []
        chosen = stages.select(e, at("tactics.json"), graph=optimized[0],
                               reads=forced + ([tuned] if tuned else []))
    plan = stages.plan(e, at("plan.json"), graph=optimized[0], tactics=chosen)
    planned = dict(graph=optimized[0], plan=plan, tactics=chosen)  # what the later stages read
    header_c = stages.generate_model(e, at(f"{name}.h"), **planned)
    kernels = stages.generate_kernels(e, at(f"{name}_kernels.c"), **planned)
    weights_files, weights_object = toolchain_.WEIGHTS[weights_format]
    weights = stages.generate_weights(e, [at(f"{name}_weights.{x}") for x in weights_files],
                                      weights=optimized[1], **planned)
    fragments = stages.fragments(e, at(f"{name}.mk"), plan=plan, header=header_c[0])

    # the library's objects, the C ones with gcc's stack usage (.su) for the size report
    stack_usage = []
    runtime = [os.path.join(RUNTIME_DIR, "onnxcc_runtime.c")]
    objects = [toolchain_.compiled(e, at, header_c[1:2], stack_usage),
               toolchain_.compiled(e, at, kernels[:1], stack_usage),
               weights_object(e, at, weights, stack_usage),
               toolchain_.compiled(e, at, runtime, stack_usage)]
    lib_object = e.OnnxccLinkModel(at(f"lib{name}.o"), objects)
    # nothing links the library (the footprint, verify and bench programs, a firmware)
    # before it is known to fit the target: onnxcc's line, not the linker's "overflowed"
    fits = stages.fit_check(e, at("fit.json"), library=lib_object, plan=plan, tactics=chosen,
                            stack=stack_usage)
    lib = e.StaticLibrary(at(f"lib{name}.a"), lib_object)
    e.Depends(lib, fits)
    startup = [e.Object(at("startup", os.path.splitext(os.path.basename(s))[0] + ".o"), s)
               for s in tgt.harness_sources]
    link_files = toolchain_.link_files(tgt)  # the linker script the programs are linked with

    footprint_c = stages.footprint_main(e, at("footprint", f"{name}_footprint.c"), graph=optimized[0])
    program = e.Object(at("footprint", f"{name}_footprint.o"), footprint_c)
    program += startup if tgt.footprint_sources == tgt.harness_sources else [
        e.Object(at("footprint", "startup", os.path.splitext(os.path.basename(s))[0] + ".o"), s)
        for s in tgt.footprint_sources]
    footprint_elf = e.Program(at("footprint", f"{name}_footprint"), program,
                              LIBS=[lib] + tgt.toolchain.libs,
                              LINKFLAGS="$ONNXCC_FOOTPRINT_LINKFLAGS")
    size = stages.size_report(e, at("size.json"), program=footprint_elf, tactics=chosen,
                              objects=stack_usage + program)
    # the table is printed at the end of every build, also when nothing changed
    show_size = e.Alias(f"size-table-{tgt.name}-{name}", size, action("report", stages.print_size))
    e.AlwaysBuild(show_size)

    case = stages.verify_case(e, at("verify", "harness.c"), model=model, testdata=testdata_files)
    e.Depends(case, imported)  # a model that does not import gets no harness: its error shows
    harness = e.Program(at("verify", f"{name}_harness"), case[:2] + startup,
                        LIBS=[lib] + tgt.toolchain.libs)
    e.Depends(footprint_elf + harness, link_files)
    report = stages.verify_run(e, at("verify", "report.json"), harness=harness, expected=case[2])
    e.AlwaysBuild(report)
    e.NoCache(report)  # verify means running it

    validated = None
    if data:  # the harness again, running every sample of the data set
        checked = stages.validate_case(e, at("validate", "harness.c"), model=model,
                                       reference=env.File(reference) if reference
                                       else float_model, data=data_files)
        e.Depends(checked, imported)
        validate_elf = e.Program(at("validate", f"{name}_validate"), checked[:2] + startup,
                                 LIBS=[lib] + tgt.toolchain.libs)
        e.Depends(validate_elf, link_files)
        validated = stages.validate_run(e, at("validate", "validate.json"), harness=validate_elf,
                                        reference=checked[2])
        e.AlwaysBuild(validated)
        e.NoCache(validated)  # validate means running it

    timing = None
    if tgt.bench:  # the harness runs the model many times on the verify inputs
        bench_c = stages.bench_harness(e, at("bench", "bench.c"), graph=optimized[0])
        bench_elf = e.Program(at("bench", f"{name}_bench"), bench_c + case[1:2] + startup,
                              LIBS=[lib] + tgt.toolchain.libs)
        timing = stages.bench_run(e, at("bench", "bench.json"), program=bench_elf)
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
        profile_c = stages.profile_program(e, at("profile", "profile.c"), **planned)
        profile_elf = e.Program(at("profile", f"{name}_profile"),
                                profile_c + e.Object(at("profile", "verify_data.o"), case[1])
                                + objects + startup,
                                LIBS=tgt.toolchain.libs)
        measured = stages.profile_run(e, profile_json, program=profile_elf, **planned)
        e.AlwaysBuild(measured)
        e.NoCache(measured)  # a measurement of this machine
        e.Depends(profile_elf, link_files)

    # report.html: reads the JSON artifacts (and the footprint ELF's symbols); it shows a
    # profile.json of an earlier `profile` when its plan and tactics are still those of this
    # build, without asking for a new one (that runs the model), unless this build profiles
    html = stages.html(e, at("report.html"), plan=plan, tactics=chosen, size=size,
                       program=footprint_elf, graph=optimized[0],
                       measured=(measured if with_profile and measured else [])
                       + (validated if with_validate and validated else []),
                       variables={"ONNXCC_PROFILE_JSON": profile_json.path if measured else "",
                                  "ONNXCC_VALIDATE_JSON": validated[0].path
                                  if with_validate and validated else ""})
    return OnnxModelNodes(name=name, lib=lib[0], include=out, fragments=list(fragments),
                          size=size, show_size=show_size, verify=report, validate=validated,
                          bench=timing,
                          profile=measured, report=html, dir=out.abspath, target=tgt, env=e)

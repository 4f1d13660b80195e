"""The command-line build: what an SConstruct runs (the checkout's and the one the ``onnxcc``
command hands SCons: build/SConstruct). The options (build/options.py) -> one OnnxModel and
the verbs' aliases; a bad option is one line and exit status 2."""

import atexit
import os
import sys

from onnxcc.core.errors import OnnxccError
from onnxcc.core.files import remove_empty_dirs
from onnxcc.footprint import size_gate
from onnxcc.target import catalog
from onnxcc.verbs import bench, profile
from SCons.Script import (ARGUMENTS, COMMAND_LINE_TARGETS, Alias, BoolVariable, Default,
                          Environment, Exit, GetBuildFailures, GetLaunchDir, GetOption, Help,
                          PathVariable, SetOption, Variables)

from .options import OPTIONS, VERBS
from .tool import generate


def _variables():
    options = Variables(None, ARGUMENTS)
    for o in OPTIONS:
        if o.kind == "bool":
            options.Add(BoolVariable(o.name, o.help, o.default))
        elif o.kind == "path":
            options.Add(PathVariable(o.name, o.help, o.default, PathVariable.PathAccept))
        else:
            options.Add(o.name, o.help, o.default)
    return options


def _from_launch_dir(env):
    """``scons -C onnxcc model=net.onnx``: a path given on the command line names a file
    where the user stands (SCons' launch folder), when one is there."""
    launch = GetLaunchDir()
    if os.path.abspath(launch) == os.getcwd():
        return
    for o in OPTIONS:
        value = env[o.name]
        if o.kind == "path" and o.name in ARGUMENTS and value and not os.path.isabs(value):
            here = os.path.join(launch, value)
            if os.path.exists(here):
                env[o.name] = here


def main():
    options = _variables()
    env = Environment(ENV=os.environ, tools=["default", generate], variables=options)
    Help("usage: scons [target=T] model=M.onnx [option=value ...] [verb ...]\n\n"
         "Verbs (none: build build/<target>/<name>/lib<name>.a and print the footprint):\n"
         + "".join(f"  {verb:<14} {what}\n" for verb, what in VERBS)
         + "\nOptions (default, then the value of this run):\n"
         + options.GenerateHelpText(env)
         # (every target and board file read: only for -h, so one bad file fails only its build)
         + ("\n" + "\n".join(catalog()) + "\n" if GetOption("help") else ""))
    if options.UnknownVariables():
        unknown = ", ".join(sorted(options.UnknownVariables()))
        print(f"onnxcc: error: unknown option(s) {unknown} (`scons -h` lists the options)",
              file=sys.stderr)
        Exit(2)

    _from_launch_dir(env)
    try:
        if os.path.isdir(env["model"]):
            raise OnnxccError("a folder, not a model file", where=env["model"],
                              hint="pass model=path/to/net.onnx")
        if not os.path.isfile(env["model"]):
            raise OnnxccError("no such model file", where=env["model"],
                              hint="pass model=path/to/net.onnx")
        if not env["seed"].isdigit():
            raise OnnxccError(f"seed={env['seed']} is not a whole number")
        if not env["samples"].isdigit():
            raise OnnxccError(f"samples={env['samples']} is not a whole number")
        if "validate" in COMMAND_LINE_TARGETS and not env["data"]:
            raise OnnxccError("validate needs data=FOLDER, the data set to run",
                              hint="a folder of .npy/.npz files or test_data_set_N folders, "
                                   "with labels.npy for accuracy")
        gates = {"size-baseline", "size-check"} & set(COMMAND_LINE_TARGETS)
        if gates and not env["baseline"]:
            raise OnnxccError(f"{' and '.join(sorted(gates))} need{'s' if len(gates) == 1 else ''} "
                              "baseline=FILE",
                              hint="write one with `scons <options> baseline=FILE size-baseline`, "
                                   "then check with `scons <options> baseline=FILE size-check`")
        try:
            tolerance = float(env["tolerance"])
        except ValueError:
            raise OnnxccError(f"tolerance={env['tolerance']} is not a number of percent") from None
        if not env["size_floor"].isdigit():
            raise OnnxccError(f"size_floor={env['size_floor']} is not a whole number of bytes")
        if gates == {"size-check"}:
            size_gate.read_baseline(env["baseline"])  # a missing baseline fails before the build
        if os.path.exists(env["build_dir"]) and not os.path.isdir(env["build_dir"]):
            raise OnnxccError("build_dir= names a file, not a folder", where=env["build_dir"],
                              hint="pass a folder (a new one is made)")
        env.SConsignFile(os.path.join(env.Dir(env["build_dir"]).abspath, ".sconsign"))
        # SCons hashes every file it builds or reads, and a big model's weights pass through
        # eight files of 50-100 MB (the model, the imported and optimized weights, the binary
        # file, its object, the library's object and archive, the footprint ELF). SHA-256 runs
        # 2.3 times faster than SCons' default MD5 where the CPU has SHA instructions, and
        # reads of 1 MiB instead of 64 MiB (SCons' default) save a third of the reading: no
        # fresh 64 MiB buffer per read. (--hash-format and --hash-chunksize still win.)
        SetOption("hash_format", "sha256")
        SetOption("hash_chunksize", 1024)  # KiB
        if env["cache"]:
            env.CacheDir(env["cache"])
        # a node of the file's own name: SCons would expand a '$' in a string (and a model
        # file's name is untrusted)
        model = env.OnnxModel(env["name"] or None, env.fs.File(env["model"]),
                              target=env["target"] if "target" in ARGUMENTS else None,
                              board=env["board"], float_abi=env["float_abi"],
                              build_dir=env["build_dir"], weights_section=env["weights_section"],
                              weights_format=env["weights_format"],
                              input_shape=env["input_shape"],
                              fuse=env["fuse"], seed=int(env["seed"]), testdata=env["testdata"],
                              verbose=env["verbose"],
                              need_runner=bool({"verify", "validate", "bench", "profile"}
                                               & set(COMMAND_LINE_TARGETS)),
                              flash=env["flash"], ram=env["ram"], planner=env["planner"],
                              schedule=env["schedule"], pools=env["pools"], io=env["io"],
                              patches=env["patches"], bands=env["bands"],
                              opt=env["opt"], tactic=env["tactic"], autotune=env["autotune"],
                              sanitize=env["sanitize"], launcher=env["launcher"],
                              quantize=env["quantize"], calibration=env["calibration"] or None,
                              calibrate=env["calibrate"], per_channel=env["per_channel"],
                              keep_float=env["keep_float"], io_dtype=env["io_dtype"],
                              data=env["data"] or None,
                              samples=int(env["samples"]), reference=env["reference"] or None,
                              with_profile="profile" in COMMAND_LINE_TARGETS,
                              with_validate="validate" in COMMAND_LINE_TARGETS)
        if "bench" in COMMAND_LINE_TARGETS:
            bench.settings(model.target)  # one line when the target cannot bench
        if "profile" in COMMAND_LINE_TARGETS:
            profile.settings(model.target)  # one line when the target cannot profile
    except OnnxccError as e:
        print(f"onnxcc: error: {e}", file=sys.stderr)
        Exit(2)

    Default(model.lib, model.fragments, model.show_size, model.report)
    Alias("verify", [model.verify, model.show_size, model.report])
    if model.validate:
        Alias("validate", [model.validate, model.report])
    if model.bench:
        Alias("bench", model.bench)
    if model.profile:
        Alias("profile", [model.profile, model.report])
    if env["baseline"]:
        Alias("size-baseline", env.OnnxSizeGate(model, env["baseline"], write=True))
        Alias("size-check", env.OnnxSizeGate(model, env["baseline"], tolerance,
                                             floor=int(env["size_floor"])))
    # a failed stage leaves no half-written file (each stage writes atomically); also drop
    # the empty folders SCons made for its outputs
    atexit.register(lambda: GetBuildFailures() and remove_empty_dirs(model.dir))

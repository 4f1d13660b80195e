"""The onnxcc SCons tool from another project's SConstruct: paths relative to the calling
SConscript, two models in one program through one shared arena, libraries that link in
any order (checked with pyelftools), and bad arguments as one line."""

import os
import shutil
import subprocess

import numpy as np
import onnxruntime as ort
import pytest
from elftools.elf.elffile import ELFFile

from conftest import MODELS, REPO, SCONS, readme_sample
from onnxcc.verbs import tolerance
from onnxcc.target import host_cpu_flags, load_target

TOOLS = os.path.join(REPO, "site_scons", "site_tools")

SCONSTRUCT = f"""
import os
env = Environment(ENV=os.environ, tools=["default"],
                  CCFLAGS=["-O2", "-Wall", "-Werror", "-frecord-gcc-switches"])
env.SConsignFile(Dir("state").abspath + "/sconsign")
env.Tool("onnxcc", toolpath=[{TOOLS!r}])
other = env.Clone(tools=["onnxcc"], toolpath=[{TOOLS!r}])   # the tool loaded a second time
SConscript("app/SConscript", exports="env other")
"""

# in app/: model files and build folder relative to it
SCONSCRIPT = """
Import("env", "other")
kws = env.OnnxModel("kws", "models/kws.onnx", target="x86_64", build_dir="out")
lib, include = kws
autoencoder = other.OnnxModel("autoencoder", "models/fc_autoencoder.onnx", target="x86_64",
                              build_dir="out", toolchain="env")
arena_lib, arena_include = env.OnnxSharedArena("shared_arena", [kws, autoencoder])
program = env.Program("out/two_models", ["main.c"],
                      CPPPATH=[include, autoencoder.include, arena_include],
                      LIBS=[lib, autoencoder.lib, arena_lib, "m"])
Default(program)
"""

MAIN = r"""
#include <stdio.h>
#include "shared_arena.h"   /* includes kws.h and autoencoder.h */

static float kws_in[KWS_INPUT0_BYTES / 4], kws_out[KWS_OUTPUT0_BYTES / 4];
static float ae_in[AUTOENCODER_INPUT0_BYTES / 4], ae_out[AUTOENCODER_OUTPUT0_BYTES / 4];

static void fill(float *x, unsigned n) { for (unsigned i = 0; i < n; ++i) x[i] = (float)((int)(i % 17u) - 8) / 8.0f; }

int main(void)
{
    fill(kws_in, sizeof kws_in / 4);
    fill(ae_in, sizeof ae_in / 4);
    const void *ki[] = {kws_in}, *ai[] = {ae_in};
    void *ko[] = {kws_out}, *ao[] = {ae_out};
    if (kws_run(ki, ko, shared_arena) != 0 || autoencoder_run(ai, ao, shared_arena) != 0)
        return 1;
    for (unsigned i = 0; i < sizeof kws_out / 4; ++i) printf("%.9g\n", kws_out[i]);
    for (unsigned i = 0; i < sizeof ae_out / 4; ++i) printf("%.9g\n", ae_out[i]);
    return 0;
}
"""


def reference():
    def run(model, shape):
        x = (np.arange(int(np.prod(shape))) % 17 - 8).astype(np.float32).reshape(shape) / 8
        session = ort.InferenceSession(f"{MODELS}/{model}", providers=["CPUExecutionProvider"])
        return session.run(None, {"input": x})[0].reshape(-1)
    return np.concatenate([run("kws.onnx", (1, 1, 49, 10)), run("fc_autoencoder.onnx", (1, 640))])


def assert_matches_reference(program):
    """The program's outputs are onnxruntime's within verify's bound of an elementwise
    output (onnxcc/tolerance.py; the models' own bounds are wider): both models compile
    for AVX2 + FMA (toolchain="env" adds the target's ISA flags), whose contracted sums
    round otherwise than onnxruntime's."""
    r = subprocess.run([str(program)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    got = np.array([float(v) for v in r.stdout.split()], np.float32)
    np.testing.assert_allclose(got, reference(), rtol=tolerance.RTOL, atol=tolerance.ATOL)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A firmware project elsewhere that loads the tool and builds two models."""
    root = tmp_path_factory.mktemp("project")
    (root / "SConstruct").write_text(SCONSTRUCT)
    (root / "app" / "models").mkdir(parents=True)
    (root / "app" / "SConscript").write_text(SCONSCRIPT)
    (root / "app" / "main.c").write_text(MAIN)
    for model in ("kws.onnx", "fc_autoencoder.onnx"):
        shutil.copy(f"{MODELS}/{model}", root / "app" / "models")
    r = subprocess.run(SCONS + ["-Q"], cwd=root, capture_output=True, text=True, timeout=600,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr
    return root


def symbols(path):
    """{name: (binding, section index, value, size)} of the defined symbols of an ELF file."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        table = elf.get_section_by_name(".symtab")
        return {s.name: (s["st_info"]["bind"], s["st_shndx"], s["st_value"], s["st_size"])
                for s in table.iter_symbols() if s.name and s["st_shndx"] != "SHN_UNDEF"}


def plan_value(out, name, key):
    import json
    return json.loads((out / "x86_64" / name / "plan.json").read_text())[key]


@pytest.mark.slow
def test_tool_from_another_tree_builds_relative_to_the_sconscript(project):
    out = project / "app" / "out" / "x86_64"
    assert (out / "kws" / "libkws.a").is_file() and (out / "kws" / "kws.h").is_file()
    assert (out / "autoencoder" / "libautoencoder.a").is_file()
    assert (project / "state" / "sconsign.dblite").is_file()   # where the project keeps it
    assert not (project / "build").exists() and not (project / "app" / "build").exists()
    assert_matches_reference(project / "app" / "out" / "two_models")
    again = subprocess.run(SCONS + ["-Q", "--debug=explain"], cwd=project, capture_output=True,
                           text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert again.returncode == 0 and "because" not in again.stdout, again.stdout


def test_each_library_exports_only_its_run_function(project):
    out = project / "app" / "out" / "x86_64"
    exported = {}
    for name in ("kws", "autoencoder"):
        members = subprocess.run(["ar", "t", str(out / name / f"lib{name}.a")], capture_output=True,
                                 text=True, check=True).stdout.split()
        assert members == [f"lib{name}.o"]
        syms = symbols(out / name / f"lib{name}.o")
        exported[name] = {s for s, (bind, *_) in syms.items() if bind != "STB_LOCAL"}
        assert exported[name] == {f"{name}_run"}
        # the runtime and kernels are still there, as local symbols (the size report names them)
        assert syms["onnxcc_check_args"][0] == "STB_LOCAL"
        assert any(s.startswith(f"{name}_w_") for s in syms)
    assert not exported["kws"] & exported["autoencoder"]


def test_toolchain_env_compiles_with_the_projects_flags(project):
    out = project / "app" / "out" / "x86_64"

    def recorded_switches(name):   # what -frecord-gcc-switches keeps in the object
        r = subprocess.run(["readelf", "-p", ".GCC.command.line", str(out / name / f"lib{name}.o")],
                           capture_output=True, text=True)
        return r.stdout
    assert "GNU C" in recorded_switches("autoencoder")   # toolchain="env": the project's flags
    assert "GNU C" not in recorded_switches("kws")       # the target's flags


def test_two_models_in_one_elf_share_the_larger_arena(project):
    out = project / "app" / "out"
    syms = symbols(out / "two_models")
    glob = {s for s, (bind, *_) in syms.items() if bind == "STB_GLOBAL"}
    kws = {s for s in glob if s.startswith("kws_")}
    autoencoder = {s for s in glob if s.startswith("autoencoder_")}
    assert kws == {"kws_run"} and autoencoder == {"autoencoder_run"}
    assert not any(s.startswith("onnxcc_") for s in glob)
    # every kernel and weight of one model is distinct from the other's
    kws_all = {s for s in syms if s.startswith("kws_")}
    ae_all = {s for s in syms if s.startswith("autoencoder_")}
    assert len(kws_all) > 5 and len(ae_all) > 5 and not kws_all & ae_all

    arenas = [plan_value(out, n, "arena_bytes") for n in ("kws", "autoencoder")]
    align = max(plan_value(out, n, "alignment") for n in ("kws", "autoencoder"))
    assert arenas[0] != arenas[1]
    _, _, address, size = syms["shared_arena"]
    assert size == max(arenas) and address % align == 0


@pytest.mark.parametrize("order", ["kws first", "autoencoder first", "whole archives"])
def test_libraries_link_in_any_order(project, tmp_path, order):
    out = project / "app" / "out" / "x86_64"
    libs = [str(out / n / f"lib{n}.a") for n in ("kws", "autoencoder")]
    if order == "autoencoder first":
        libs.reverse()
    if order == "whole archives":   # every member linked: duplicate globals would clash here
        libs = ["-Wl,--whole-archive", *libs, "-Wl,--no-whole-archive"]
    program = tmp_path / "two_models"
    cc = subprocess.run(["gcc", "-O2", f"-I{out / 'kws'}", f"-I{out / 'autoencoder'}",
                         f"-I{out / 'shared_arena'}", str(project / "app" / "main.c"), *libs,
                         str(out / "shared_arena" / "libshared_arena.a"), "-lm", "-o", str(program)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    assert_matches_reference(program)


# a firmware tree's own flags: no -mavx2, -msse2 or other ISA flags
PLAIN_FLAGS_SCONSTRUCT = f"""
import os
env = Environment(ENV=os.environ, tools=["default"],
                  CCFLAGS=ARGUMENTS["cpu"].split() + ["-O2", "-Wall", "-Wextra", "-Werror"])
env.Tool("onnxcc", toolpath=[{TOOLS!r}])
model = env.OnnxModel("act", "act.onnx", target=ARGUMENTS["target"], toolchain="env")
Default(model.verify if ARGUMENTS["verify"] == "1" else model.lib)
if ARGUMENTS["target"] != "x86-baremetal":   # (its own compiler: none)
    Default(env.OnnxModel("act", "act.onnx", target=ARGUMENTS["target"], build_dir="ref").lib)
"""


def _activations_model(path):
    """A MatMul and the activations whose vector kernels call vmath's functions at the
    target's width (sigmoid, tanh, erf through Gelu, exp through Softmax), and a
    LayerNormalization, whose kernel a GNU C dialect would contract (ENV_DIALECT)."""
    from onnx import TensorProto, helper, numpy_helper, save
    w = numpy_helper.from_array((np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 7 - 3) / 8,
                                "w")
    scale = numpy_helper.from_array(np.linspace(0.5, 1.5, 64, dtype=np.float32), "scale")
    bias = numpy_helper.from_array(np.linspace(-0.25, 0.25, 64, dtype=np.float32), "bias")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("Sigmoid", ["m"], ["s"]), helper.make_node("Tanh", ["m"], ["t"]),
             helper.make_node("Gelu", ["m"], ["g"]), helper.make_node("Add", ["s", "t"], ["st"]),
             helper.make_node("Add", ["st", "g"], ["a"]),
             helper.make_node("LayerNormalization", ["a", "scale", "bias"], ["n"], axis=-1),
             helper.make_node("Softmax", ["n"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])],
                              [w, scale, bias])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), path)


FREESTANDING_X86 = f"-m32 -march=i686 -ffreestanding -fno-pie -isystem {REPO}/site_scons/onnxcc/runtime/freestanding/include"


@pytest.mark.parametrize("target, cpu, instruction", [
    ("x86_64", "", "%ymm"), ("x86_64-avx512", "", "%zmm"),
    ("x86-baremetal", FREESTANDING_X86, "mulps")])
def test_toolchain_env_without_isa_flags_compiles_the_targets_vector_code(tmp_path, target, cpu,
                                                                          instruction):
    """A tree whose CCFLAGS name no ISA extension (-O2 -Wall -Wextra -Werror) builds an x86
    target's model with toolchain="env" warning-free (no -Wpsabi: vmath's functions take
    and return the target's vectors) and gets the target's vector code, which verify
    runs where this CPU can."""
    _activations_model(tmp_path / "act.onnx")
    (tmp_path / "SConstruct").write_text(PLAIN_FLAGS_SCONSTRUCT)
    t = load_target(target)
    runs = not t.runner and set(t.cpu.features) <= host_cpu_flags()
    r = subprocess.run(SCONS + ["-Q", f"target={target}", f"cpu={cpu}", f"verify={int(runs)}"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and "warning" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert not runs or ("[verify] act" in r.stdout and "MISMATCH" not in r.stdout), r.stdout
    code = _instructions(tmp_path / "build" / target / "act" / "act_kernels.o")
    assert any(instruction in line for line in code)
    if target != "x86-baremetal":  # the code of the target's own build, instruction for instruction
        assert code == _instructions(tmp_path / "ref" / target / "act" / "act_kernels.o")


def _instructions(obj):
    """The instructions of an object file's code with their operands, in order, but
    without addresses, jump targets and padding: the same for two builds whose code
    differs only in its layout (-ffunction-sections)."""
    import re
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "--no-addresses", str(obj)],
                             capture_output=True, text=True, check=True).stdout
    code = [re.sub(r"<[^>]*>|#.*", "", line).strip() for line in listing.splitlines()
            if line.startswith("\t")]
    return [i for i in code if i and "nop" not in i and i != "xchg   %ax,%ax"]


@pytest.mark.parametrize("call, needles", [
    ("env.OnnxModel('m', 'm.onnx', toolchain='nope')", ["toolchain='nope'", "target, env"]),
    ("env.OnnxModel('m', 'm.onnx', weights_section='my weights')", ["not a linker section name"]),
    ("env.OnnxModel('m', 'm.onnx', target='pdp11')", ["unknown target 'pdp11'"]),
    ("env.OnnxSharedArena('arena', [])", ["shared arena arena: no models"]),
    # toolchain="env": flags that turn off what the target's kernels are written for
    ("env.Append(CCFLAGS=['-O2', '-mno-avx']); env.OnnxModel('m', 'm.onnx', toolchain='env')",
     ["toolchain='env'", "after -mavx2 -mfma", "avx2, fma code", "target x86_64", "-mno-avx"]),
    ("env.Append(CCFLAGS=['-mno-avx512dq']); "
     "env.OnnxModel('m', 'm.onnx', target='x86_64-avx512', toolchain='env')",
     ["avx512dq code", "target x86_64-avx512", "-mno-avx512dq"]),
    ("env.Replace(CC='arm-linux-gnueabihf-gcc'); "
     "env.OnnxModel('m', 'm.onnx', target='armv7a', toolchain='env')",
     ["arm-linux-gnueabihf-gcc", "neon code", "target armv7a", "-mfpu=neon -mfloat-abi=hard"]),
    ("env.Replace(CC='nonesuch-gcc', OBJCOPY='objcopy'); env.OnnxModel('m', 'm.onnx', toolchain='env')",
     ["no compiler CC=nonesuch-gcc"]),
])
def test_bad_arguments_stop_scons_with_one_line(tmp_path, call, needles):
    error = _declaration_error(tmp_path, call)
    for needle in needles:
        assert needle in error


def _declaration_error(folder, call):
    """The one line (``scons: *** ...``) that stops SCons, without a traceback, when an
    SConstruct in ``folder`` makes ``call`` (model m.onnx: tiny_cnn)."""
    shutil.copy(f"{MODELS}/tiny_cnn.onnx", folder / "m.onnx")
    (folder / "SConstruct").write_text(
        f"env = Environment(tools=['default'])\nenv.Tool('onnxcc', toolpath=[{TOOLS!r}])\n{call}\n")
    r = subprocess.run(SCONS + ["-Q"], cwd=folder, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "Traceback" not in r.stdout + r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("scons: ***")]
    assert len(errors) == 1, r.stderr
    return errors[0]


def test_readme_shows_the_line_of_contradicting_flags(tmp_path):
    """README.md's line for toolchain='env' flags that turn the target's ISA off is the
    one SCons prints."""
    shown = readme_sample("flags that contradict the target stop SCons with one line")
    assert shown == [_declaration_error(
        tmp_path, "env.Append(CCFLAGS=['-O2', '-mno-avx']); env.OnnxModel('m', 'm.onnx', toolchain='env')")]


EXISTS = f"""
env = Environment(tools=[])
print("exists:", Tool("onnxcc", toolpath=[{TOOLS!r}]).exists(env))
env.Tool("onnxcc", toolpath=[{TOOLS!r}])
print("loaded")
"""


@pytest.mark.parametrize("blocked", [None, "elftools", "onnx"])
def test_exists_checks_the_compiler_imports(tmp_path, blocked):
    """exists() is true only when the compiler package and its Python packages import;
    without them, loading the tool stops SCons with one line saying what to install."""
    (tmp_path / "SConstruct").write_text(EXISTS)
    block = f"sys.modules[{blocked!r}] = None; " if blocked else ""  # as if not installed
    code = (f"import sys; {block}sys.argv = ['scons', '-Q']; "
            "import SCons.Script; SCons.Script.main()")
    r = subprocess.run([SCONS[0], "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    if blocked is None:
        assert r.returncode == 0 and "exists: True" in r.stdout and "loaded" in r.stdout, r.stderr
        return
    assert r.returncode == 2 and "exists: False" in r.stdout and "loaded" not in r.stdout
    assert "Traceback" not in r.stderr
    errors = r.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("scons: *** onnxcc: "), r.stderr
    assert blocked in errors[0] and "setup.sh" in errors[0]

"""Cross targets: every example model verified on every emulated target, the footprint
report against binutils, the fit check, and the CI size gate."""

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import MODELS, REPO, run_scons
from test_errors import assert_one_clear_line, files_under

CROSS = ["armv7", "cortex-m7", "armv7a", "aarch64", "riscv32", "riscv64"]
EXAMPLES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(MODELS, "*.onnx")))
#: x86 bare metal, on the small models (a conv net; attention with its exp, sqrt and erf
#: from runtime/freestanding's libm) and one int8 model
BAREMETAL_X86 = [("x86-baremetal", m) for m in ("tiny_cnn.onnx", "transformer_block.onnx",
                                                "int8/kws_qdq.onnx")]
needs_qemu_i386 = pytest.mark.skipif(shutil.which("qemu-system-i386") is None,
                                     reason="qemu-system-i386 is not installed (./setup.sh installs it)")


@pytest.mark.emulated
@pytest.mark.parametrize("target,model", [(t, m) for t in CROSS for m in EXAMPLES] + [
    pytest.param(t, m, marks=needs_qemu_i386) for t, m in BAREMETAL_X86])
@pytest.mark.slow
def test_verify_on_target(scons, target, model):
    r = scons(f"target={target}", f"model=models/{model}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"on {target}:" in r.stdout and "warning" not in r.stdout + r.stderr


@pytest.mark.parametrize("target, size_tool", [("armv7", "arm-none-eabi-size"),
                                               ("riscv32", "riscv64-unknown-elf-size"),
                                               ("x86-baremetal", "size"),
                                               ("x86_64", "size")])
def test_size_report_agrees_with_binutils_and_plan(shared_build, target, size_tool):
    r, build = shared_build(f"target={target}", "model=models/kws.onnx")
    assert r.returncode == 0, r.stderr
    assert "[report] kws" in r.stdout and "kernels" in r.stdout  # the table is printed
    out = build / target / "kws"
    sizes = json.loads((out / "size.json").read_text())
    berkeley = subprocess.run([size_tool, str(out / "footprint" / "kws_footprint")],
                              capture_output=True, text=True, check=True).stdout.splitlines()[1]
    text, data, bss = (int(v) for v in berkeley.split()[:3])
    assert sizes["elf"] == {"text": text, "data": data, "bss": bss}
    assert sizes["flash"]["total"] == text + data
    plan = json.loads((out / "plan.json").read_text())
    assert sizes["ram"]["arena"] == plan["arena_bytes"]
    # the runtime's share is visible and small; the categories add up
    assert 0 < sizes["flash"]["runtime"] < 1024
    assert sum(v for k, v in sizes["flash"].items() if k != "total") == sizes["flash"]["total"]
    assert sizes["ram"]["stack"] > 0


def _error_lines(r):
    return [line for line in r.stderr.splitlines() if line.startswith(("scons: ***", "onnxcc:"))]


def test_model_too_big_for_flash_fails_before_linking(scons):
    """kws (~100 KiB of weights) on a 16 KiB part: onnxcc's line, not the linker's."""
    r = scons("target=armv7", "model=models/kws.onnx", "flash=16K")
    assert r.returncode == 2, r.stdout + r.stderr
    [line] = _error_lines(r)
    assert line.startswith("scons: *** [") and "fit.json] model kws does not fit armv7: " in line
    assert "flash needs 100.6 KiB before the C library is linked, has 16.0 KiB" in line
    assert "try opt=size, an int8 model, or a part with more flash, given as flash=SIZE" in line
    assert "region" not in r.stdout + r.stderr and "Traceback" not in r.stderr
    out = scons.build_dir / "armv7" / "kws"
    # nothing links the library: no archive, no program, no report, nothing half-written
    for name in ("fit.json", "libkws.a", "footprint/kws_footprint", "size.json"):
        assert not (out / name).exists(), name
    assert not [p for p in out.rglob("*") if p.name.startswith(".")]


@pytest.mark.slow
def test_combined_check_after_the_link_counts_the_c_library(scons):
    """The library alone fits, with the C library and startup it does not: both memories
    are reported on one line."""
    r = scons("target=armv7", "model=models/kws.onnx")
    assert r.returncode == 0, r.stderr
    out = scons.build_dir / "armv7" / "kws"
    library = json.loads((out / "fit.json").read_text())
    sizes = json.loads((out / "size.json").read_text())
    flash = (library["flash"] + sizes["flash"]["total"]) // 2
    ram = (library["ram"] + sizes["ram"]["total"]) // 2
    r = scons("target=armv7", "model=models/kws.onnx", f"flash={flash}", f"ram={ram}")
    assert r.returncode == 2
    [line] = _error_lines(r)
    assert "size.json] model kws does not fit armv7: flash needs " in line
    assert "; ram needs " in line
    assert "before the C library" not in line
    assert "a part with more flash and RAM, given as flash=SIZE ram=SIZE" in line
    assert not (out / "size.json").exists()


def test_honest_libc_on_cortex_m(shared_build):
    """The footprint program is a minimal bare-metal link: its libc is what the model's
    library calls (expf for the softmax, memset), not the harness's semihosting and stdio."""
    r, build = shared_build("target=armv7", "model=models/kws.onnx")
    assert r.returncode == 0, r.stderr
    sizes = json.loads((build / "armv7" / "kws" / "size.json").read_text())
    libc = sizes["symbols"]["libc"]
    assert sizes["flash"]["libc"] == sum(libc.values()) < 3 * 1024
    assert "expf" in libc
    assert not {"printf", "puts", "malloc", "_write", "initialise_monitor_handles",
                "exit"} & set(libc)
    assert set(sizes["symbols"]["other"]) == {"Reset_Handler", "footprint_vector_table", "main"}
    assert sizes["flash"]["other"] < 256
    assert sizes["symbols"]["runtime"] == {"onnxcc_check_args": sizes["flash"]["runtime"]}


@pytest.mark.slow
def test_size_gate(repo_copy, tmp_path):
    shutil.copy(f"{MODELS}/kws.onnx", repo_copy / "models" / "net.onnx")
    baseline = tmp_path / "net-size.json"
    args = ["target=armv7", "model=models/net.onnx", f"baseline={baseline}"]
    r = run_scons(*args, "size-baseline", cwd=repo_copy)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(baseline.read_text())["flash"]["weights"] > 0
    r = run_scons(*args, "size-check", cwd=repo_copy)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "size gate passed" in r.stdout
    # a model that grew: a wider classifier (more weights, more kernels' worth of flash)
    shutil.copy(f"{MODELS}/resnet8.onnx", repo_copy / "models" / "net.onnx")
    r = run_scons(*args, "size-check", "tolerance=5", cwd=repo_copy)
    assert r.returncode != 0
    [line] = _error_lines(r)
    assert "net grew beyond the size gate of" in line and "flash.weights" in line
    assert "flash.weights" in r.stdout and "OVER" in r.stdout     # the table


@pytest.mark.slow
def test_size_gate_floor(shared_build, tmp_path):
    """A total that shrank, a tiny category that grew ~20%: the floor keeps it from
    failing; size_floor=0 gives the old verdict. The table shows baseline, now, delta, limit."""
    baseline = tmp_path / "kws-size.json"
    args = ["target=armv7", "model=models/kws.onnx", f"baseline={baseline}"]
    _, build = shared_build(*args[:2])

    def scons(*more):  # the gate reads the build's size.json, and writes the baseline
        return run_scons(f"build_dir={build}", *more)
    assert scons(*args, "size-baseline").returncode == 0
    data = json.loads(baseline.read_text())
    # what it was built as: a baseline of another target or options says so, in one line
    assert data["build"]["target"] == "armv7" and data["build"]["options"]["opt"] == "speed"
    r = scons(*args, "opt=size", "size-check")
    assert r.returncode == 2
    [line] = _error_lines(r)
    assert line.endswith(f"size baseline {baseline} does not fit this build: it was written with "
                         "other options: opt=speed (now size) (check against a baseline of the same "
                         "target and options (write one with size-baseline))")
    runtime = data["flash"]["runtime"]
    data["flash"]["runtime"] = round(runtime / 1.2)       # it "grew" by ~20%, ~22 B
    data["flash"]["weights"] += 1000                      # and the total shrank
    data["flash"]["total"] += 1000 - (runtime - data["flash"]["runtime"])
    baseline.write_text(json.dumps(data))
    r = scons(*args, "size-check", "tolerance=5")
    assert r.returncode == 0, r.stdout + r.stderr
    header = next(line for line in r.stdout.splitlines() if line.startswith("category"))
    assert header.split() == ["category", "baseline", "now", "delta", "%", "limit"]
    row = next(line for line in r.stdout.splitlines() if line.startswith("flash.runtime"))
    b = data["flash"]["runtime"]
    assert row.split() == ["flash.runtime", str(b), str(runtime), f"+{runtime - b}",
                           f"{100 * (runtime - b) / b:+.1f}%", str(b + 256)]
    r = scons(*args, "size-check", "tolerance=5", "size_floor=0")
    assert r.returncode == 2
    [line] = _error_lines(r)
    assert line.endswith("kws grew beyond the size gate of "
                         f"{baseline}: flash.runtime (update the baseline (size-baseline) "
                         "when the growth is intended)")
    r = scons(*args, "size-check", "size_floor=lots")
    assert r.returncode == 2 and "size_floor=lots is not a whole number" in r.stderr


def test_size_check_needs_a_baseline(scons, tmp_path):
    r = scons("model=models/kws.onnx", "size-check")
    assert r.returncode != 0 and "size-check needs baseline=FILE" in r.stderr
    assert "baseline=FILE size-baseline" in r.stderr
    missing = tmp_path / "missing.json"
    r = scons("model=models/kws.onnx", f"baseline={missing}", "size-check")
    assert r.returncode == 2
    assert _error_lines(r) == [f"onnxcc: error: {missing}: size baseline not found (run "
                               f"`scons <the same options> baseline={missing} size-baseline` "
                               "first)"]
    assert not (scons.build_dir / "x86_64").exists()     # refused before building anything


def test_missing_toolchain_and_emulator_name_the_package(repo_copy):
    (repo_copy / "site_scons" / "onnxcc" / "toolchains" / "nocc.toml").write_text(
        'prefix = "no-such-"\npackages = ["gcc-no-such"]\ncflags = []\n')
    (repo_copy / "site_scons" / "onnxcc" / "targets" / "nocc.toml").write_text('toolchain = "nocc"\n')
    (repo_copy / "site_scons" / "onnxcc" / "targets" / "noemu.toml").write_text(
        'toolchain = "gcc"\nrunner = ["qemu-no-such", "{elf}"]\nrunner_package = "qemu-no-such-pkg"\n')
    shutil.copy(f"{MODELS}/tiny_cnn.onnx", repo_copy / "models")
    r = run_scons("target=nocc", "model=models/tiny_cnn.onnx", cwd=repo_copy)
    assert r.returncode != 0
    assert "compiler 'no-such-gcc' not found" in r.stderr and "apt-get install gcc-no-such" in r.stderr
    r = run_scons("target=noemu", "model=models/tiny_cnn.onnx", "verify", cwd=repo_copy)
    assert r.returncode != 0
    assert "emulator 'qemu-no-such' not found" in r.stderr and "qemu-no-such-pkg" in r.stderr


@pytest.mark.unit
def test_isa_flags_end_the_targets_flags_and_features_name_their_macros(tmp_path, monkeypatch):
    """A target's isa_cflags (what a toolchain='env' build adds) are the last of the flags
    its own builds compile with; every [cpu] feature names the C macro check_env_flags asks
    the compiler for, and a target file with a feature of no known macro is one line."""
    from onnxcc import target as targets
    from onnxcc.core.errors import OnnxccError
    for name in targets.known_targets():
        t = targets.load_target(name)
        assert t.cflags[len(t.cflags) - len(t.isa_cflags):] == t.isa_cflags, name
        assert all(f in targets.FEATURE_MACROS for f in t.cpu.features), name
    assert targets.load_target("x86_64").isa_cflags[:2] == ["-mavx2", "-mfma"]
    assert targets.load_target("armv7a").isa_cflags == []  # (its FPU flags set the float ABI)
    from onnxcc.target import files
    monkeypatch.setattr(files, "TARGETS_DIR", str(tmp_path))
    (tmp_path / "odd.toml").write_text('toolchain = "gcc"\n[cpu]\nfeatures = ["avx3"]\n')
    with pytest.raises(OnnxccError, match=r"features \['avx3'\] are not among"):
        targets.load_target("odd")


def test_help_lists_every_verb_and_option_with_its_default():
    """`scons -h` names every verb the build defines (read from its Alias calls, so a new
    verb cannot be left out) and every option with its default."""
    import re
    with open(os.path.join(REPO, "site_scons", "onnxcc", "build", "main.py")) as f:
        verbs = re.findall(r'Alias\("([a-z-]+)"', f.read())
    proc = run_scons("-h")
    assert proc.returncode == 0, proc.stderr
    assert {"verify", "bench", "size-baseline", "size-check"} <= set(verbs)
    for verb in verbs:
        assert re.search(rf"^  {re.escape(verb)}\s+\S", proc.stdout, re.M), verb
    for option in ("target", "model", "opt", "tactic", "flash", "ram", "baseline", "tolerance"):
        assert re.search(rf"^{option}: .*\n    default: ", proc.stdout, re.M), option
    assert "cortex-m4" in proc.stdout and "rv32" in proc.stdout  # the aliases are listed


@pytest.mark.parametrize("alias,target", [("cortex-m4", "armv7"), ("M4", "armv7"),
                                          ("rv32", "riscv32"), ("amd64", "x86_64")])
def test_common_target_spellings_build_the_target(scons, alias, target):
    """target=cortex-m4 is armv7 (the same build folder, so no second build)."""
    proc = scons(f"target={alias}", f"model={os.path.join(MODELS, 'tiny_cnn.onnx')}")
    assert proc.returncode == 0, proc.stderr
    assert (scons.build_dir / target / "tiny_cnn" / "libtiny_cnn.a").is_file()
    assert not (scons.build_dir / alias).exists()


def test_native_is_the_widest_host_target_this_cpu_has(scons):
    """target=native resolves to a target file from the CPU's flags (so the build folder and
    every output are that target's), and refuses what it cannot run natively."""
    sys.path.insert(0, os.path.join(REPO, "site_scons"))
    from onnxcc.core.errors import OnnxccError
    from onnxcc.target import host_cpu_flags, native_target
    avx512 = {"sse2", "avx2", "fma", "avx512f", "avx512vl", "avx512dq", "avx512bw"}
    intel, zen4, zen5 = ("GenuineIntel", 6), ("AuthenticAMD", 25), ("AuthenticAMD", 26)
    assert native_target(avx512, "x86_64", intel) == "x86_64-avx512"
    assert native_target(avx512, "x86_64", zen4) == "x86_64-zen4"  # its [native] table
    assert native_target(avx512, "x86_64", zen5) == "x86_64-avx512"
    for cpu_id in (intel, zen4):
        assert native_target({"avx2", "fma", "avx512f"}, "x86_64", cpu_id) == "x86_64"
    for flags, machine in (({"sse2", "avx"}, "x86_64"), (avx512, "aarch64")):
        with pytest.raises(OnnxccError):
            native_target(flags, machine)
    if not {"avx2", "fma"} <= host_cpu_flags():
        pytest.skip("this CPU runs no host target")
    proc = scons("target=native", f"model={os.path.join(MODELS, 'tiny_cnn.onnx')}")
    assert proc.returncode == 0, proc.stderr
    chosen = native_target()
    assert f"[target] native: {chosen} (" in proc.stdout
    assert (scons.build_dir / chosen / "tiny_cnn" / "libtiny_cnn.a").is_file()
    assert not (scons.build_dir / "native").exists()


@pytest.mark.emulated
@needs_qemu_i386
@pytest.mark.parametrize("body, status, printed", [
    ("printf(\"%s %d %lu %x\\n\", \"up\", -7, 4000000000ul, 255u); return 5;", 5, "up -7 4000000000 ff"),
    ("volatile int zero = 0; return 100 / zero;", 127, "*** X86 CPU EXCEPTION 0 ***"),  # #DE
])
def test_x86_baremetal_startup_console_and_exit_status(tmp_path, body, status, printed):
    """The board of x86-baremetal: its program prints on COM1, and the status it exits
    with (or a CPU exception's) comes back through isa-debug-exit's (status << 1) | 1."""
    sys.path.insert(0, os.path.join(REPO, "site_scons"))
    from onnxcc.target import load_target, run_captured
    target = load_target("x86-baremetal")
    (tmp_path / "main.c").write_text(f"#include <stdio.h>\nint main(void) {{ {body} }}\n")
    flags = target.toolchain.cflags + target.cflags + ["-Wall", "-Wextra", "-Werror"]
    subprocess.run(["gcc", *flags, *target.toolchain.linkflags, *target.linkflags, str(tmp_path / "main.c"),
                    *target.harness_sources, "-lgcc", "-o", str(tmp_path / "main.elf")],
                   check=True, capture_output=True, text=True)
    ran = run_captured(target.run_command(str(tmp_path / "main.elf")), timeout=60)
    assert ran.returncode == (status << 1) | 1 and target.program_status(ran.returncode) == status
    assert printed in ran.stdout, ran.stdout + ran.stderr


SHADOWING = """float f(const float *b, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; ++i) { const float %s = b[i] * 2.0f; s += %s; }
    return s;
}
"""


@pytest.mark.parametrize("target", ["x86_64", "x86_64-avx512", "x86-baremetal", *CROSS])
def test_a_local_shadowing_a_parameter_fails_the_build(tmp_path, target):
    """The generated C's warnings (targets.WARNINGS, a warning fails every test and fuzz
    build) catch a kernel local named like a parameter on every target's compiler: such a
    `b` once made an int8 kernel read its own plane as the residual operand."""
    sys.path.insert(0, os.path.join(REPO, "site_scons"))
    from onnxcc.target import WARNINGS, load_target
    t = load_target(target)
    flags = [*t.toolchain.cflags, *t.cflags, "-std=c99", "-fsyntax-only", *WARNINGS, "-Werror"]
    for name, fails in (("b", True), ("twice", False)):
        (tmp_path / "k.c").write_text(SHADOWING % (name, name))
        r = subprocess.run([t.toolchain.tool("gcc"), *flags, str(tmp_path / "k.c")],
                           capture_output=True, text=True)
        assert (r.returncode != 0) == fails, r.stderr
        assert ("shadows a parameter" in r.stderr) == fails, r.stderr


@pytest.mark.parametrize("edit, needles", [
    (("registers = 16", "registers = 0"), ("[cpu] registers = 0 must be a positive integer",)),
    (("simd_bytes = 32", "simd_bytes = 24"), ("[cpu] simd_bytes = 24 must be 0 or a power of two",)),
    (("fma = true", "fma = 1"), ("fma = 1 must be true or false",)),
    (("registers = 16", "regsiters = 16"), ("unknown field [cpu] regsiters",
                                            "known fields of [cpu]: ", "registers")),
    (('runner = []', 'runner = "./run"'), ('runner = "./run" must be a list of strings',)),
    (('clock = "monotonic"', 'clock = "cycles"'), ('[bench] clock = "cycles" must be one of',
                                                   '"monotonic", "systick", "minstret"')),
    (('toolchain = "gcc"', 'toolchain = "mine"'), ("toolchains/mine.toml", 'libs = "m" must be a '
                                                   "list of strings", "unknown field flags",
                                                   "known fields: cflags, ")),
])
def test_own_target_file_with_a_bad_field_is_one_line(repo_copy, edit, needles):
    """A target file of one's own (targets/mine.toml, built with target=mine) or its
    toolchain file is checked when loaded: each bad or unknown field is named, in one line,
    with what it must be; nothing is built."""
    text = (repo_copy / "site_scons" / "onnxcc" / "targets" / "x86_64.toml").read_text()
    assert edit[0] in text
    (repo_copy / "site_scons" / "onnxcc" / "targets" / "mine.toml").write_text(text.replace(edit[0], edit[1], 1))
    (repo_copy / "site_scons" / "onnxcc" / "toolchains" / "mine.toml").write_text(
        (repo_copy / "site_scons" / "onnxcc" / "toolchains" / "gcc.toml").read_text().replace('libs = ["m"]', 'libs = "m"')
        + "flags = []\n")
    shutil.copy(f"{MODELS}/tiny_cnn.onnx", repo_copy / "models")
    r = run_scons("target=mine", "model=models/tiny_cnn.onnx", cwd=repo_copy)
    where = "toolchains/mine.toml" if "toolchains/mine.toml" in needles else "targets/mine.toml"
    assert_one_clear_line(r, f"{where}: ", *needles, "is a commented one to follow")
    assert files_under(repo_copy / "build") == []


#: a kernel that drops what it was given or computed, and the error it must fail with
UNUSED = [
    ("void k(const float *x, const float *s, float *y) { y[0] = x[0]; }",
     "unused parameter 's'"),
    ("void k(const float *x, float *y) { float acc; y[0] = x[0]; }", "unused variable 'acc'"),
    ("void k(const float *x, float *y) { float acc = 0.0f; acc = x[1]; y[0] = x[0]; }",
     "variable 'acc' set but not used"),
]


@pytest.mark.parametrize("target", ["x86_64", "x86-baremetal", *CROSS])
def test_an_unused_operand_or_local_fails_the_librarys_compile(tmp_path, target):
    """targets.UNUSED_ERRORS after the target's flags and WARNINGS make a dropped operand
    or value an error on every target's compiler, in every build (no -Werror here, as in a
    build that does not verify), and a kernel that uses everything still compiles."""
    sys.path.insert(0, os.path.join(REPO, "site_scons"))
    from onnxcc.target import UNUSED_ERRORS, WARNINGS, load_target
    t = load_target(target)
    flags = [*t.toolchain.cflags, *t.cflags, "-std=c99", "-fsyntax-only", *WARNINGS, *UNUSED_ERRORS]
    clean = ("void k(const float *x, const float *s, float *y) { y[0] = x[0] * s[0]; }", None)
    for code, message in UNUSED + [clean]:
        (tmp_path / "k.c").write_text(code + "\n")
        r = subprocess.run([t.toolchain.tool("gcc"), *flags, str(tmp_path / "k.c")],
                           capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
        assert (r.returncode != 0) == bool(message), r.stderr
        assert message is None or f"error: {message}" in r.stderr, r.stderr


def test_the_librarys_c_files_compile_with_unused_as_errors(tmp_path):
    """The generated C files and the runtime (what lib<name>.a holds) compile with
    UNUSED_ERRORS (scons -n: the commands, nothing run)."""
    sys.path.insert(0, os.path.join(REPO, "site_scons"))
    from onnxcc.target import UNUSED_ERRORS
    r = run_scons(f"build_dir={tmp_path}", "-n", "verbose=1", "target=armv7", "weights_format=c",
                  f"model={MODELS}/kws.onnx")
    assert r.returncode == 0, r.stdout + r.stderr
    compiles = {line.split(" -o ")[1].split()[0].rsplit("/", 1)[1]: line
                for line in r.stdout.splitlines() if line.startswith("arm-none-eabi-gcc -o ")}
    for obj in ("kws.o", "kws_kernels.o", "kws_weights.o", "onnxcc_runtime.o"):
        assert all(f" {flag} " in compiles[obj] for flag in UNUSED_ERRORS), compiles[obj]

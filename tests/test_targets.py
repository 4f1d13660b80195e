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

CROSS = ["armv7", "cortex-m7", "armv7a", "aarch64", "riscv32", "riscv64"]
EXAMPLES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(MODELS, "*.onnx")))
#: x86 bare metal, on the small models (a conv net; attention with its exp, sqrt and erf
#: from runtime/freestanding's libm) and one int8 model
BAREMETAL_X86 = [("x86-baremetal", m) for m in ("tiny_cnn.onnx", "transformer_block.onnx",
                                                "int8/kws_qdq.onnx")]
needs_qemu_i386 = pytest.mark.skipif(shutil.which("qemu-system-i386") is None,
                                     reason="qemu-system-i386 is not installed (./setup.sh installs it)")


@pytest.mark.parametrize("target,model", [(t, m) for t in CROSS for m in EXAMPLES] + [
    pytest.param(t, m, marks=needs_qemu_i386) for t, m in BAREMETAL_X86])
def test_verify_on_target(scons, target, model):
    r = scons(f"target={target}", f"model=models/{model}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"on {target}:" in r.stdout and "warning" not in r.stdout + r.stderr


@pytest.mark.parametrize("target, size_tool", [("armv7", "arm-none-eabi-size"),
                                               ("riscv32", "riscv64-unknown-elf-size"),
                                               ("x86-baremetal", "size"),
                                               ("x86_64", "size")])
def test_size_report_agrees_with_binutils_and_plan(scons, target, size_tool):
    r = scons(f"target={target}", "model=models/kws.onnx")
    assert r.returncode == 0, r.stderr
    assert "[report] kws" in r.stdout and "kernels" in r.stdout  # the table is printed
    out = scons.build_dir / target / "kws"
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


def test_model_that_does_not_fit_fails_with_numbers(scons):
    r = scons("target=armv7", "model=models/kws.onnx", "flash=64K")
    assert r.returncode != 0
    assert "does not fit armv7: flash" in r.stdout + r.stderr and "64.0 KiB" in r.stdout + r.stderr
    assert not (scons.build_dir / "armv7" / "kws" / "size.json").exists()


def test_size_gate(repo_copy, tmp_path):
    shutil.copy(f"{MODELS}/kws.onnx", repo_copy / "models" / "net.onnx")
    baseline = tmp_path / "net-size.json"
    args = ["target=armv7", "model=models/net.onnx", f"baseline={baseline}"]
    r = run_scons(*args, "size-baseline", cwd=repo_copy)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(baseline.read_text())["flash"]["weights"] > 0
    r = run_scons(*args, "size-check", cwd=repo_copy)
    assert r.returncode == 0, r.stdout + r.stderr
    # a model that grew: a wider classifier (more weights, more kernels' worth of flash)
    shutil.copy(f"{MODELS}/resnet8.onnx", repo_copy / "models" / "net.onnx")
    r = run_scons(*args, "size-check", "tolerance=5", cwd=repo_copy)
    assert r.returncode != 0
    assert "grew beyond 5.0%" in r.stdout + r.stderr and "weights" in r.stdout + r.stderr


def test_size_check_needs_a_baseline(scons):
    r = scons("model=models/kws.onnx", "size-check")
    assert r.returncode != 0 and "need baseline=FILE" in r.stderr


def test_missing_toolchain_and_emulator_name_the_package(repo_copy):
    (repo_copy / "toolchains" / "nocc.toml").write_text(
        'prefix = "no-such-"\npackages = ["gcc-no-such"]\ncflags = []\n')
    (repo_copy / "targets" / "nocc.toml").write_text('toolchain = "nocc"\n')
    (repo_copy / "targets" / "noemu.toml").write_text(
        'toolchain = "gcc"\nrunner = ["qemu-no-such", "{elf}"]\nrunner_package = "qemu-no-such-pkg"\n')
    shutil.copy(f"{MODELS}/tiny_cnn.onnx", repo_copy / "models")
    r = run_scons("target=nocc", "model=models/tiny_cnn.onnx", cwd=repo_copy)
    assert r.returncode != 0
    assert "compiler 'no-such-gcc' not found" in r.stderr and "apt-get install gcc-no-such" in r.stderr
    r = run_scons("target=noemu", "model=models/tiny_cnn.onnx", "verify", cwd=repo_copy)
    assert r.returncode != 0
    assert "emulator 'qemu-no-such' not found" in r.stderr and "qemu-no-such-pkg" in r.stderr


@needs_qemu_i386
@pytest.mark.parametrize("body, status, printed", [
    ("printf(\"%s %d %lu %x\\n\", \"up\", -7, 4000000000ul, 255u); return 5;", 5, "up -7 4000000000 ff"),
    ("volatile int zero = 0; return 100 / zero;", 127, "*** X86 CPU EXCEPTION 0 ***"),  # #DE
])
def test_x86_baremetal_startup_console_and_exit_status(tmp_path, body, status, printed):
    """The board of x86-baremetal: its program prints on COM1, and the status it exits
    with (or a CPU exception's) comes back through isa-debug-exit's (status << 1) | 1."""
    sys.path.insert(0, os.path.join(REPO, "site_scons"))
    from onnxcc.targets import load_target, run_captured
    target = load_target("x86-baremetal")
    (tmp_path / "main.c").write_text(f"#include <stdio.h>\nint main(void) {{ {body} }}\n")
    flags = target.toolchain.cflags + target.cflags + ["-Wall", "-Wextra", "-Werror"]
    subprocess.run(["gcc", *flags, *target.toolchain.linkflags, *target.linkflags, str(tmp_path / "main.c"),
                    *target.harness_sources, "-lgcc", "-o", str(tmp_path / "main.elf")],
                   check=True, capture_output=True, text=True)
    ran = run_captured(target.run_command(str(tmp_path / "main.elf")), timeout=60)
    assert ran.returncode == (status << 1) | 1 and target.program_status(ran.returncode) == status
    assert printed in ran.stdout, ran.stdout + ran.stderr

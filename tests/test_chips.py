"""The chips people ship on: the Cortex-M0+, M3, M33, M55 and RV32IMAC targets, verified in
qemu, and the boards (parts) that name a target and its memory. CI runs a sample of models
by targets (every example model on one of these cores, every core on three or four);
ONNXCC_ALL_TARGETS=1 runs every example model on every one of them."""

import glob
import json
import os
import re
import subprocess

import numpy as np
import onnx
import pytest
from conftest import MODELS, REPO
from onnx import TensorProto, helper, numpy_helper
from test_errors import assert_one_clear_line

CORES = ["cortex-m0plus", "cortex-m3", "cortex-m33", "cortex-m55", "riscv32imac"]
EXAMPLES = sorted(os.path.relpath(p, MODELS) for p in glob.glob(os.path.join(MODELS, "*.onnx"))
                  + glob.glob(os.path.join(MODELS, "int8", "*.onnx")))
if os.environ.get("ONNXCC_ALL_TARGETS"):
    CASES = [(t, m) for t in CORES for m in EXAMPLES]
else:
    CASES = [(CORES[i % len(CORES)], m) for i, m in enumerate(EXAMPLES)]


@pytest.mark.emulated
@pytest.mark.parametrize("target, model", CASES)
def test_verify_on_the_new_cores(scons, target, model):
    r = scons(f"target={target}", f"model=models/{model}", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"on {target}:" in r.stdout and "warning" not in r.stdout + r.stderr


#: what a compiler calls for float arithmetic it has no instruction for (Arm's run-time
#: ABI __aeabi_f*/__aeabi_d* and conversions, libgcc's __addsf3 class) and libm's float math
SOFT_FLOAT = re.compile(r"^__aeabi_([fd]|[iu]?[il]2[fd])|^__\w*[sd]f|^(fma|exp|log|round|lrint)f?$")


@pytest.mark.emulated
@pytest.mark.parametrize("target, model", [("cortex-m0", "kws_qdq"),  # on the micro:bit
                                           ("cortex-m0plus", "kws_qdq"),
                                           ("cortex-m0plus", "resnet8_qdq"),
                                           ("riscv32imac", "kws_qop")])
def test_int8_models_are_integer_only_without_a_float_unit(scons, target, model):
    """With int8 inputs and outputs (io_dtype=int8) nothing of the library calls the
    compiler's soft-float or libm's float functions: Softmax's and the residual Adds' float32
    steps run in integers, and the outputs still match onnxruntime's exactly."""
    r = scons(f"target={target}", f"model=models/int8/{model}.onnx", "io_dtype=int8", "verify")
    assert r.returncode == 0 and "max abs error 0," in r.stdout, r.stdout + r.stderr
    tools = "arm-none-eabi-" if target.startswith("cortex") else "riscv64-unknown-elf-"
    undefined = subprocess.run([tools + "nm", "-u", str(scons.build_dir / target / model /
                                                        f"lib{model}.a")],
                               capture_output=True, text=True, check=True).stdout.split()
    assert "memset" in undefined and not [s for s in undefined if SOFT_FLOAT.search(s)]


@pytest.mark.unit
def test_every_board_names_a_target_and_its_memory():
    from onnxcc.target import known_boards, known_targets, load_board
    assert len(known_boards()) >= 12
    for name in known_boards():
        b = load_board(name)
        assert b.target in known_targets() and b.flash_bytes and b.ram_bytes and b.clock_hz


@pytest.mark.slow
def test_every_board_builds_the_keyword_spotter(scons):
    """One build folder: boards of one target share the compiled model, the fit and the
    report follow each board's memory. A part with 16 KiB of RAM (the micro:bit's) takes
    the int8 one with int8 inputs and outputs."""
    from onnxcc.core.report import human_bytes
    from onnxcc.target import known_boards, load_board
    assert "microbit" in known_boards()
    for name in known_boards():
        b = load_board(name)
        small = b.ram_bytes < 64 * 1024
        model, args = ("kws_qdq", ["model=models/int8/kws_qdq.onnx", "io_dtype=int8"]) if small \
            else ("kws", ["model=models/kws.onnx"])
        r = scons(f"board={name}", *args)
        assert r.returncode == 0, name + r.stdout + r.stderr
        assert (f"[report] {model} on {b.target}: " in r.stdout and
                f"(of {name}'s {human_bytes(b.flash_bytes)} flash, {human_bytes(b.ram_bytes)} RAM)"
                in r.stdout), r.stdout
    # without a board, the build says whose memory it checked the fit against
    r = scons("target=cortex-m33", "model=models/kws.onnx")
    assert "(of the emulated board's 4.0 MiB flash, 4.0 MiB RAM; board= or flash=, ram= for " \
           "your part)" in r.stdout


def _big_model(path, weights_mib):
    """A float MatMul with ``weights_mib`` MiB of weights."""
    n = 1024
    rows = weights_mib * 256
    w = numpy_helper.from_array(np.full((rows, n), 0.5, np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["input", "w"], ["output"])], "big",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, rows])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, n])],
                              [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_a_board_fails_the_fit_with_its_memory(scons, tmp_path):
    model = tmp_path / "big.onnx"
    _big_model(model, 5)  # 5 MiB of weights; the RP2350's Pico 2 has 4 MiB of flash
    r = scons("board=rp2350", f"model={model}")
    line = assert_one_clear_line(r)
    assert "model big does not fit rp2350 (cortex-m33): flash needs 5.0 MiB" in line
    assert "has 4.0 MiB" in line


def test_a_board_and_another_target_is_one_line(scons):
    r = scons("board=rp2040", "target=armv7", "model=models/kws.onnx")
    line = assert_one_clear_line(r)
    assert line.endswith("board=rp2040 is a cortex-m0plus part, not armv7 (leave target= out: "
                         "board= chooses it)")


SOFTFP_MAIN = r"""
#include <stdio.h>
#include "kws.h"
static float input[KWS_INPUT0_BYTES / 4], scores[KWS_OUTPUT0_BYTES / 4];
static _Alignas(KWS_ARENA_ALIGN) unsigned char arena[KWS_ARENA_BYTES];
int main(void)
{
    for (unsigned i = 0; i < sizeof input / 4; ++i) input[i] = (float)(i % 7u) / 7.0f;
    const void *in[] = {input};
    void *out[] = {scores};
    int status = kws_run(in, out, arena);
    float sum = 0.0f;
    for (unsigned i = 0; i < sizeof scores / 4; ++i) sum += scores[i];
    printf("status %d, scores sum to %.4f\n", status, (double)sum);
    return status;
}
"""


@pytest.mark.emulated
def test_a_softfp_firmware_links_a_float_abi_softfp_library(scons, tmp_path):
    """float_abi=softfp: the library, its fragments' flags and a firmware compiled with them
    agree (a hard-float firmware is refused by the linker, as it should be), and it runs."""
    r = scons("target=cortex-m4", "float_abi=softfp", "model=models/kws.onnx")
    assert r.returncode == 0, r.stdout + r.stderr
    out = scons.build_dir / "armv7" / "kws"
    flags = next(line.split(":=")[1].split() for line in (out / "kws.mk").read_text().splitlines()
                 if line.startswith("KWS_TARGET_CFLAGS"))
    assert "-mfloat-abi=softfp" in flags
    (tmp_path / "main.c").write_text(SOFTFP_MAIN)
    boards = os.path.join(REPO, "site_scons", "onnxcc", "toolchains", "arm-none-eabi")

    def link(cpu_flags):
        return subprocess.run(
            ["arm-none-eabi-gcc", *cpu_flags, "-O2", "-Wall", "-Wextra", "-Werror", f"-I{out}",
             "main.c", os.path.join(boards, "startup_cortexm.c"), str(out / "libkws.a"), "-lm",
             "-nostartfiles", "--specs=rdimon.specs", "-T", os.path.join(boards, "mps2.ld"),
             "-T", os.path.join(boards, "cortexm_sections.ld"), "-o", "fw.elf"],
            cwd=tmp_path, capture_output=True, text=True)
    hard = link([f.replace("softfp", "hard") for f in flags])
    assert hard.returncode != 0 and "VFP register arguments" in hard.stderr
    r = link(flags)
    assert r.returncode == 0, r.stderr
    run = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-display", "none", "-serial",
                          "none", "-monitor", "none", "-chardev", "stdio,id=semihost0",
                          "-semihosting-config", "enable=on,target=native,chardev=semihost0",
                          "-kernel", str(tmp_path / "fw.elf")], capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)
    assert run.returncode == 0 and "status 0, scores sum to 1.0000" in run.stdout, run.stdout


@pytest.mark.emulated
@pytest.mark.parametrize("abi", ["softfp", "soft"])
def test_float_abi_builds_verify(scons, abi):
    r = scons("target=armv7", f"float_abi={abi}", "model=models/tiny_cnn.onnx", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    if abi == "soft":  # no FPU instruction in the library
        dump = subprocess.run(["arm-none-eabi-objdump", "-d",
                               str(scons.build_dir / "armv7" / "tiny_cnn" / "libtiny_cnn.a")],
                              capture_output=True, text=True, check=True).stdout
        assert not re.search(r"\tv[a-z]+\.f(32|64)\b", dump)


@pytest.mark.parametrize("args, says", [
    (["target=cortex-m3", "float_abi=hard"], "float_abi=hard: target cortex-m3 has no FPU"),
    (["target=riscv32", "float_abi=soft"], "float_abi=soft: target riscv32 has no float ABI"),
    (["target=armv7", "float_abi=sof"], "float_abi=sof is not one of hard, softfp, soft"),
])
def test_a_float_abi_the_target_cannot_take_is_one_line(scons, args, says):
    assert_one_clear_line(scons(*args, "model=models/tiny_cnn.onnx"), says)


@pytest.mark.parametrize("target, libc_bytes", [("riscv32", 1024), ("riscv32imac", 6 * 1024)])
def test_honest_footprint_on_risc_v(shared_build, target, libc_bytes):
    """As on Cortex-M: the footprint program is a minimal link, so libc is what the model
    calls (expf, memset; on the FPU-less core, libgcc's soft-float too), not semihosting and
    printf, and RAM holds no stack reservation."""
    r, build = shared_build(f"target={target}", "model=models/kws.onnx")
    assert r.returncode == 0, r.stderr
    sizes = json.loads((build / target / "kws" / "size.json").read_text())
    libc = sizes["symbols"]["libc"]
    assert "expf" in libc and sizes["flash"]["libc"] < libc_bytes
    assert not {"printf", "exit", "sys_semihost_putc", "_cstart"} & set(libc)
    assert sizes["ram"]["bss"] < 256 and 0 < sizes["ram"]["stack"] < 4096
    assert set(sizes["symbols"]["other"]) == {"_start", "reset_c", "main"}

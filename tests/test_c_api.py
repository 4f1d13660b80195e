"""The generated C API, used the way DESIGN.md promises: include only <name>.h, link only
lib<name>.a and libm, pass a caller-owned arena of <NAME>_ARENA_BYTES."""

import filecmp
import subprocess

import numpy as np
import onnxruntime as ort

from conftest import MODELS

PROGRAM = r"""
#include <stdio.h>
#include <stdint.h>
#include "tiny_cnn.h"

static float input[TINY_CNN_INPUT0_BYTES / sizeof(float)];
static float out0[TINY_CNN_OUTPUT0_BYTES / sizeof(float)];
static float out1[TINY_CNN_OUTPUT1_BYTES / sizeof(float)];
static _Alignas(TINY_CNN_ARENA_ALIGN) uint8_t arena[TINY_CNN_ARENA_BYTES];

int main(void)
{
    for (unsigned i = 0; i < sizeof input / sizeof input[0]; ++i)
        input[i] = (float)((int)(i % 17u) - 8) / 8.0f;
    const void *inputs[] = {input};
    void *outputs[] = {out0, out1};
    if (tiny_cnn_run(inputs, outputs, NULL) == 0)   /* a missing arena is refused */
        return 2;
    if (tiny_cnn_run(inputs, outputs, arena + 1) == 0)   /* so is a misaligned one */
        return 3;
    if (tiny_cnn_run(inputs, outputs, arena) != 0)
        return 1;
    for (unsigned i = 0; i < sizeof out0 / sizeof out0[0]; ++i)
        printf("%.9g\n", out0[i]);
    for (unsigned i = 0; i < sizeof out1 / sizeof out1[0]; ++i)
        printf("%.9g\n", out1[i]);
    return 0;
}
"""


def test_program_using_only_header_and_library(scons, tmp_path):
    r = scons("model=models/tiny_cnn.onnx")
    assert r.returncode == 0, r.stderr
    out = scons.build_dir / "x86_64" / "tiny_cnn"
    (tmp_path / "main.c").write_text(PROGRAM)
    include = tmp_path / "include"
    include.mkdir()
    (include / "tiny_cnn.h").write_text((out / "tiny_cnn.h").read_text())  # the header alone
    cc = subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{include}",
                         str(tmp_path / "main.c"), str(out / "libtiny_cnn.a"), "-lm",
                         "-o", str(tmp_path / "main")], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True)
    assert run.returncode == 0, run.returncode
    got = np.array([float(v) for v in run.stdout.split()], np.float32)

    x = (np.arange(2 * 8 * 8) % 17 - 8).astype(np.float32).reshape(1, 2, 8, 8) / 8
    session = ort.InferenceSession(f"{MODELS}/tiny_cnn.onnx", providers=["CPUExecutionProvider"])
    expected = np.concatenate([o.reshape(-1) for o in session.run(None, {"input": x})])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_generated_code_compiles_freestanding_without_warnings(scons):
    r = scons("model=models/transformer_block.onnx")
    assert r.returncode == 0, r.stderr
    out = scons.build_dir / "x86_64" / "transformer_block"
    for src in ("transformer_block.c", "transformer_block_kernels.c", "transformer_block_weights.c"):
        cc = subprocess.run(["gcc", "-std=c99", "-ffreestanding", "-Wall", "-Wextra", "-Werror",
                             "-pedantic", f"-I{out}", "-Iruntime", "-c", str(out / src),
                             "-o", "/dev/null"], capture_output=True, text=True)
        assert cc.returncode == 0, cc.stderr


def test_generated_code_is_byte_for_byte_reproducible(tmp_path):
    from conftest import run_scons
    dirs = []
    for k in range(2):
        build = tmp_path / f"b{k}"
        assert run_scons(f"build_dir={build}", "model=models/squeezenet_mini.onnx").returncode == 0
        dirs.append(build / "x86_64" / "squeezenet_mini")
    for name in ("squeezenet_mini.h", "squeezenet_mini.c", "squeezenet_mini_kernels.c",
                 "squeezenet_mini_weights.c", "plan.json", "optimized.onnx", "optimized.bin",
                 "libsqueezenet_mini.a"):
        assert filecmp.cmp(dirs[0] / name, dirs[1] / name, shallow=False), name

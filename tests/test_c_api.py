"""The generated C API, used the way DESIGN.md promises: include only <name>.h, link only
lib<name>.a and libm, pass a caller-owned arena of <NAME>_ARENA_BYTES."""

import subprocess

import numpy as np
import onnxruntime as ort
import pytest

from conftest import MODELS, in_qemu

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
    r = scons("model=models/transformer_block.onnx", "weights_format=c")
    assert r.returncode == 0, r.stderr
    out = scons.build_dir / "x86_64" / "transformer_block"
    for src in ("transformer_block.c", "transformer_block_kernels.c", "transformer_block_weights.c"):
        # (with the x86_64 target's own ISA flags: its vector code is AVX2)
        cc = subprocess.run(["gcc", "-std=c99", "-ffreestanding", "-Wall", "-Wextra", "-Werror",
                             "-pedantic", "-mavx2", "-mfma", f"-I{out}", "-Isite_scons/onnxcc/runtime", "-c", str(out / src),
                             "-o", "/dev/null"], capture_output=True, text=True)
        assert cc.returncode == 0, cc.stderr


#: files whose bytes may depend on the build folder, and why
NOT_COMPARED = {
    ".sconsign.dblite": "SCons' signature database, keyed by every node's absolute path",
    ".su": "gcc's stack-usage notes name the source file by the path it was given (its "
           "-ffile-prefix-map does not apply to them); only the report stage reads them, and "
           "its size.json is compared",
}


def _outputs(root):
    return sorted(p.relative_to(root) for p in root.rglob("*")
                  if p.is_file() and not any(p.name.endswith(end) for end in NOT_COMPARED))


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("armv7")])
@pytest.mark.slow
def test_builds_are_byte_for_byte_reproducible(tmp_path, target):
    """kws built and verified in two folders: every generated file, object, library and
    ELF is the same bytes, and none names the folder it was built in."""
    from conftest import run_scons
    roots = [tmp_path / "first" / "build", tmp_path / "second_folder" / "out"]
    for root in roots:
        r = run_scons(f"build_dir={root}", f"target={target}", "model=models/kws.onnx", "verify")
        assert r.returncode == 0, r.stdout + r.stderr
    files = _outputs(roots[0])
    assert files == _outputs(roots[1])
    names = {f.as_posix() for f in files}
    assert {f"{target}/kws/{n}" for n in ("kws.c", "kws_kernels.c", "kws_weights.S", "kws_weights.bin", "plan.json",
            "tactics.json", "size.json", "libkws.a", "verify/kws_harness",
            "footprint/kws_footprint", "verify/report.json")} <= names
    differ = [f for f in names if (roots[0] / f).read_bytes() != (roots[1] / f).read_bytes()]
    assert not differ
    named = [f for f in names if str(roots[0]).encode() in (roots[0] / f).read_bytes()]
    assert not named, "the build folder's path is inside these outputs"

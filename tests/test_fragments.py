"""The Make fragment and the CMake file beside every library: a Makefile that includes
them and a CMakeLists that includes / add_subdirectory()s them build a program with two
models that matches onnxruntime, from a build folder moved elsewhere."""

import json
import shutil
import subprocess

import numpy as np
import onnxruntime as ort
import pytest

from conftest import MODELS

MAIN = r"""
#include <stdio.h>
#include "spotter.h"
#include "fc_autoencoder.h"

extern const unsigned long arena_sizes[2];
static float s_in[SPOTTER_INPUT0_BYTES / 4], s_out[SPOTTER_OUTPUT0_BYTES / 4];
static float a_in[FC_AUTOENCODER_INPUT0_BYTES / 4], a_out[FC_AUTOENCODER_OUTPUT0_BYTES / 4];
#define MAX(a, b) ((a) > (b) ? (a) : (b))
static _Alignas(MAX(SPOTTER_ARENA_ALIGN, FC_AUTOENCODER_ARENA_ALIGN))
    unsigned char arena[MAX(SPOTTER_ARENA_BYTES, FC_AUTOENCODER_ARENA_BYTES)];

int main(void)
{
    for (unsigned i = 0; i < sizeof s_in / 4; ++i) s_in[i] = (float)((int)(i % 17u) - 8) / 8.0f;
    for (unsigned i = 0; i < sizeof a_in / 4; ++i) a_in[i] = (float)((int)(i % 17u) - 8) / 8.0f;
    const void *si[] = {s_in}, *ai[] = {a_in};
    void *so[] = {s_out}, *ao[] = {a_out};
    if (spotter_run(si, so, arena) != 0 || fc_autoencoder_run(ai, ao, arena) != 0)
        return 1;
    printf("arenas %lu %lu\n", arena_sizes[0], arena_sizes[1]);
    for (unsigned i = 0; i < sizeof s_out / 4; ++i) printf("%.9g\n", s_out[i]);
    for (unsigned i = 0; i < sizeof a_out / 4; ++i) printf("%.9g\n", a_out[i]);
    return 0;
}
"""

# sized from the fragments' defines alone, without the headers
SIZES = r"""
const unsigned long arena_sizes[2] = {SPOTTER_ARENA_BYTES, FC_AUTOENCODER_ARENA_BYTES};
"""

MAKEFILE = """
include {moved}/spotter/spotter.mk
include {moved}/fc_autoencoder/fc_autoencoder.mk
CFLAGS := -O2 -std=c11 -Wall -Wextra -Werror
CPPFLAGS := $(SPOTTER_CPPFLAGS) $(FC_AUTOENCODER_CPPFLAGS) \\
            $(addprefix -D,$(SPOTTER_DEFINES) $(FC_AUTOENCODER_DEFINES))
app: main.c sizes.c $(SPOTTER_LIBRARY) $(FC_AUTOENCODER_LIBRARY)
\t$(CC) $(CPPFLAGS) $(CFLAGS) main.c sizes.c $(SPOTTER_LIBS) $(FC_AUTOENCODER_LIBS) -o $@
$(info models: $(ONNXCC_MODELS); arenas $(SPOTTER_ARENA_BYTES) $(FC_AUTOENCODER_ARENA_BYTES))
"""

CMAKELISTS = """
cmake_minimum_required(VERSION 3.16)
project(two_models C)
include({moved}/spotter/spotter.cmake)
add_subdirectory({moved}/fc_autoencoder fc_autoencoder)
add_executable(app main.c sizes.c)
target_compile_options(app PRIVATE -Wall -Wextra -Werror)
target_compile_definitions(app PRIVATE ${{SPOTTER_DEFINES}} ${{FC_AUTOENCODER_DEFINES}})
target_link_libraries(app PRIVATE onnxcc::spotter onnxcc::fc_autoencoder)
message(STATUS "arenas ${{SPOTTER_ARENA_BYTES}} ${{FC_AUTOENCODER_ARENA_BYTES}}")
"""


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    """Two models built, then their build folders moved elsewhere."""
    from conftest import run_scons
    tmp = tmp_path_factory.mktemp("fragments")
    for args in (["model=models/kws.onnx", "name=spotter"], ["model=models/fc_autoencoder.onnx"]):
        r = run_scons(f"build_dir={tmp / 'build'}", *args)
        assert r.returncode == 0, r.stdout + r.stderr
    shutil.copytree(tmp / "build" / "x86_64", tmp / "moved")
    shutil.rmtree(tmp / "build")
    return tmp / "moved"


def arenas(moved):
    return [json.loads((moved / n / "plan.json").read_text())["arena_bytes"]
            for n in ("spotter", "fc_autoencoder")]


def check_program(program, moved):
    r = subprocess.run([str(program)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "arenas {} {}".format(*arenas(moved))
    got = np.array([float(v) for v in lines[1:]], np.float32)
    expected = []
    for model, shape in (("kws.onnx", (1, 1, 49, 10)), ("fc_autoencoder.onnx", (1, 640))):
        x = (np.arange(int(np.prod(shape))) % 17 - 8).astype(np.float32).reshape(shape) / 8
        session = ort.InferenceSession(f"{MODELS}/{model}", providers=["CPUExecutionProvider"])
        expected.append(session.run(None, {"input": x})[0].reshape(-1))
    # verify's float32 agreement (the kernels' sums fuse multiply-adds and run in tiles)
    np.testing.assert_allclose(got, np.concatenate(expected), rtol=1e-4, atol=1e-5)


def write_project(folder, build_file, text, moved):
    folder.mkdir()
    (folder / "main.c").write_text(MAIN)
    (folder / "sizes.c").write_text(SIZES)
    (folder / build_file).write_text(text.format(moved=moved))


@pytest.mark.slow
def test_makefile_includes_the_fragments(moved, tmp_path):
    write_project(tmp_path / "make", "Makefile", MAKEFILE, moved)
    r = subprocess.run(["make", "-C", str(tmp_path / "make"), "app"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "models: spotter fc_autoencoder; arenas {} {}".format(*arenas(moved)) in r.stdout
    check_program(tmp_path / "make" / "app", moved)


@pytest.mark.slow
def test_cmake_includes_and_adds_the_fragments(moved, tmp_path):
    write_project(tmp_path / "cmake", "CMakeLists.txt", CMAKELISTS, moved)
    build = tmp_path / "cmake-build"
    r = subprocess.run(["cmake", "-S", str(tmp_path / "cmake"), "-B", str(build)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "arenas {} {}".format(*arenas(moved)) in r.stdout
    r = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    check_program(build / "app", moved)


@pytest.mark.slow
def test_fragments_name_the_weights_section(scons):
    r = scons("model=models/tiny_cnn.onnx", "weights_section=.extflash")
    assert r.returncode == 0, r.stdout + r.stderr
    out = scons.build_dir / "x86_64" / "tiny_cnn"
    assert "TINY_CNN_WEIGHTS_SECTION := .extflash" in (out / "tiny_cnn.mk").read_text()
    assert 'set(TINY_CNN_WEIGHTS_SECTION ".extflash"' in (out / "tiny_cnn.cmake").read_text()
    sections = subprocess.run(["objdump", "-h", str(out / "libtiny_cnn.a")], capture_output=True,
                              text=True, check=True).stdout
    assert ".extflash" in sections

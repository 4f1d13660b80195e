"""A stand-in for a generated model, to prove that verify's checks can fail: the verify
harness of a 4-float Relu model linked with a hand-written ``m_run`` that misbehaves as
its FAULT says (writes outside its buffers, reads out of bounds, overflows)."""

import subprocess

from onnx import TensorProto, helper, save

from onnxcc.verbs import verify
from onnxcc.target import load_target

HEADER = """
#define M_ARENA_BYTES 32u
#define M_ARENA_ALIGN 16u
#define M_NUM_INPUTS 1u
#define M_NUM_OUTPUTS 1u
#define M_INPUT0_BYTES 16u
#define M_OUTPUT0_BYTES 16u
int m_run(const void *const *inputs, void *const *outputs, void *arena);
"""
SOURCE = r"""
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include "m.h"
static const float weights[4] = {1.0f, 1.0f, 1.0f, 1.0f};
int m_run(const void *const *inputs, void *const *outputs, void *arena)
{
    const float *x = (const float *)inputs[0];
    float *y = (float *)outputs[0];
    uint8_t *a = (uint8_t *)arena;
    volatile int k = 4, big = INT_MAX;
    for (int i = 0; i < 4; ++i)
        y[i] = x[i] > 0.0f ? x[i] * weights[i] : 0.0f;
    a[0] = 1;
#if FAULT == 1
    a[M_ARENA_BYTES + 2] = 0;          /* 3 bytes past the arena */
#elif FAULT == 2
    a[-1] = 0;                        /* just before it */
#elif FAULT == 3
    y[4] = 1.0f;                      /* a float past the output */
#elif FAULT == 4
    ((float *)inputs[0])[1] = 7.0f;   /* into a const input */
#elif FAULT == 5
    memcpy(&y[0], weights + 1, (size_t)k * 4u);  /* a read past a constant array */
#elif FAULT == 6
    y[0] += (float)(big + k);         /* signed overflow */
#endif
    (void)k;
    (void)big;
    return 0;
}
"""


def make(folder):
    """Write the harness, its data and the fake model into ``folder``."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), folder / "m.onnx")
    verify.make_case(str(folder / "m.onnx"), "m", str(folder / "harness.c"),
                     str(folder / "data.c"), str(folder / "expected.npz"), {}, 0, None)
    (folder / "m.h").write_text(HEADER)
    (folder / "m.c").write_text(SOURCE)
    return folder


def build(folder, fault, flags=()):
    """Compile the harness with FAULT ``fault``; the arguments of ``verify.run`` for it."""
    elf = folder / f"harness{fault}{'_sanitized' if flags else ''}"
    cc = subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", f"-DFAULT={fault}",
                         *flags, f"-I{folder}", str(folder / "harness.c"), str(folder / "data.c"),
                         str(folder / "m.c"), "-o", str(elf)], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    return [load_target("x86_64"), str(elf), str(folder / "expected.npz"),
            str(folder / f"{elf.name}.json"), "m"]

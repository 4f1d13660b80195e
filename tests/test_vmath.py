"""Accuracy of the libm-free math functions (templates/kernels/lib/vmath.mako): each compiled
with gcc into a small program, in its float form and as vectors of 4, 8 and 16 lanes,
plain and with armv7a's -funsafe-math-optimizations, and with the compiler and flags of
the x86 targets (AVX2; AVX-512, where the host has it: its primitives of their own) and of
aarch64 and armv7a (run in qemu; as floats and 4 lanes), run over dense sweeps of float32
(every magnitude, both signs, denormals, the overflow edges, +-inf, NaN), and compared
with numpy's float64 results rounded to float32.

The error is in ulp of the float32 result. With -funsafe-math-optimizations gcc links
code that flushes denormals to zero (as armv7a's NEON always does): there a denormal
input counts as zero and a result (or an intermediate, then scaled by x) below FLT_MIN
may be zero. Functions that are compositions the ONNX op
defines (GELU's 0.5 x (1 + erf(x / sqrt 2)), ...) lose their relative accuracy where the
formula cancels (GELU for x < -3, where 1 + erf(..) is tiny): there the test bounds the
absolute error instead, ``abs_floor`` (what onnxruntime's own float32 evaluation of the
same formula loses there too).
"""

import math
import shutil
import subprocess

import numpy as np
import pytest

from conftest import in_qemu, slow
from onnxcc.codegen.vmath import functions
from onnxcc.target import host_cpu_flags, load_target

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _softplus(x):
    return np.logaddexp(0.0, x)


def _gelu_tanh_argument(x):
    return 2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _selu(x, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875):
    return gamma * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


#: name, extra C arguments, float64 reference, max ulp, abs_floor (mish's, swish's: a
#: denormal exp(x) for x < -87 has few bits, which a product scales up), and optionally
#: the ulp that rounding the argument z of an exp(z) costs (|z| ulp per ulp of z: the
#: formula's, whoever evaluates it in float32)
CASES = [
    ("exp", "", np.exp, 2, 0),
    ("expm1", "", np.expm1, 3, 0),
    ("sigmoid", "", _sigmoid, 3, 0),
    ("tanh", "", np.tanh, 3, 0),
    ("log", "", lambda x: np.log(np.where(x >= 0, x, np.nan)), 2, 0),
    ("erf", "", _erf, 3, 0),
    ("softplus", "", _softplus, 3, 0),
    ("gelu", "", lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), 4, 2e-7),
    ("gelu_tanh", "", lambda x: x * _sigmoid(_gelu_tanh_argument(x)), 4, 1e-43,
     lambda x: 3 * np.abs(_gelu_tanh_argument(x))),  # (4 roundings and 2 constants in z)
    ("swish", ", 1.0f", lambda x: x * _sigmoid(x), 4, 1e-43),
    ("swish", ", 1.702f", lambda x: x * _sigmoid(np.float32(1.702) * x), 4, 1e-43,
     lambda x: np.abs(1.702 * x)),
    ("mish", "", lambda x: x * np.tanh(_softplus(x)), 4, 1e-43),
    ("elu", ", 1.0f", lambda x: np.where(x < 0, np.expm1(np.minimum(x, 0)), x), 3, 0),
    ("selu", ", 1.67326319f, 1.05070102f", _selu, 4, 0),
    ("celu", ", 2.0f", lambda x: np.where(x > 0, x, 2 * np.expm1(np.minimum(x, 0) / 2)), 3, 0),
    ("softsign", "", lambda x: x / (1 + np.abs(x)), 2, 0),
]

LANES = ["s", 4, 8, 16]
FLT_MIN = float(np.finfo(np.float32).tiny)
#: what a reassociating compiler (-funsafe-math-optimizations) may add to an error
UNSAFE_ULP = 2
FLAGS = {"plain": [], "unsafe-math": ["-funsafe-math-optimizations"],
         "native-contracted": ["-march=native", "-ffp-contract=fast"]}
#: the targets whose own flags select other code (x86's ISA macros) or another compiler;
#: contracted, as the kernels that call the functions are (templates/kernels/lib/tile.mako).
#: The ARM ones (in qemu: slow) at their own vector width and as floats only
TARGETS = ["x86_64", "x86_64-avx512", "aarch64", "armv7a"]
RUNS = ([(lanes, flags) for flags in sorted(FLAGS) + TARGETS[:2] for lanes in LANES]
        + slow(*in_qemu(("s", "aarch64"), (4, "aarch64"))) + in_qemu(("s", "armv7a"), (4, "armv7a")))


def _build(name):
    """(compiler, flags, runner prefix) of FLAGS[name] or of target ``name``."""
    if name in FLAGS:
        return "gcc", FLAGS[name], []
    t = load_target(name)
    missing = set(t.cpu.features) - host_cpu_flags() if not t.runner else set()
    compiler = t.toolchain.prefix + "gcc"
    if missing or not shutil.which(compiler) or (t.runner and not shutil.which(t.runner[0])):
        pytest.skip(f"{name}: {compiler}, its runner or CPU features {sorted(missing)} missing")
    return compiler, [*t.cflags, *t.linkflags, "-ffp-contract=fast"], t.runner


def _sweep():
    """Every 1999th float32 bit pattern (all magnitudes, both signs, NaNs among them),
    dense grids where the functions change shape, and the special values."""
    bits = np.arange(0, 2 ** 32, 1999, dtype=np.uint64).astype(np.uint32)
    grids = [np.linspace(-20, 20, 400001), np.linspace(-110, 110, 100001),
             np.linspace(-1e-3, 1e-3, 20001)]
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 88.72283, 88.7228394, 89.0, -87.33655,
               -103.97, -104.0, -150.0, 1e-45, -1e-45, 1.1754942e-38, 3.4028235e38,
               -3.4028235e38, 0.875, 3.92, 3.8325, 9.5, 20.0, 0.41421356, -0.34657359, 0.34657359]
    x = np.concatenate([bits.view(np.float32)] + [g.astype(np.float32) for g in grids]
                       + [np.array(special, np.float32)])
    return x


def _program(tmp_path, lanes, build):
    calls = [f"vm_{name}_{'s' if lanes == 's' else f'v{lanes}'}(" for name, *_ in CASES]
    width = 1 if lanes == "s" else lanes
    cases = []
    for k, (name, args, *_) in enumerate(CASES):
        if lanes == "s":
            body = f"for (size_t i = 0; i < n; ++i) y[i] = vm_{name}_s(x[i]{args});"
        else:
            body = (f"for (size_t i = 0; i < n; i += {width}) {{ vm_f{width} v; "
                    f"memcpy(&v, x + i, sizeof v); v = vm_{name}_v{width}(v{args}); "
                    f"memcpy(y + i, &v, sizeof v); }}")
        cases.append(f"    case {k}: {body} break;")
    source = f"""#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
{functions(' '.join(calls))}
int main(int argc, char **argv)
{{
    (void)argc;
    size_t n = 0, cap = 1u << 20;
    float *x = malloc(cap * sizeof *x);
    for (size_t got; (got = fread(x + n, sizeof *x, cap - n, stdin)) > 0;) {{
        n += got;
        if (n == cap) x = realloc(x, (cap *= 2) * sizeof *x);
    }}
    float *y = malloc(n * sizeof *y);
    switch (atoi(argv[1])) {{
{chr(10).join(cases)}
    }}
    fwrite(y, sizeof *y, n, stdout);
    return 0;
}}
"""
    c = tmp_path / f"vmath_{lanes}.c"
    c.write_text(source)
    exe = tmp_path / f"vmath_{lanes}"
    compiler, flags, runner = build
    subprocess.run([compiler, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-Wno-psabi", *flags, str(c),
                    "-o", str(exe)], check=True)
    return [a.replace("{elf}", str(exe)) for a in runner] or [str(exe)]


def _ulp_errors(got, want):
    """|got - want| in ulp of want rounded to float32; 0 where both are the same special
    value (NaN, inf), inf where only one is."""
    with np.errstate(over="ignore", invalid="ignore"):
        want32 = want.astype(np.float32)
    same_special = (np.isnan(got) & np.isnan(want32)) | (np.isinf(want32) & (got == want32))
    ulp = np.spacing(np.abs(want32)).astype(np.float64)
    ulp[np.isinf(want32)] = np.inf
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.float64) - want) / ulp
    err[np.isnan(err)] = np.inf
    err[same_special] = 0.0
    return err


@pytest.fixture(scope="module")
def inputs():
    x = _sweep()
    return x[: len(x) // 16 * 16]  # whole vectors of every width


@pytest.fixture(scope="module")
def references(inputs):
    """{flush denormals: [reference of each case]}"""
    with np.errstate(all="ignore"):
        x = inputs.astype(np.float64)
        flushed = np.where(np.abs(x) < FLT_MIN, 0.0 * x, x)
        return {ftz: [case[2](flushed if ftz else x) for case in CASES]
                for ftz in (False, True)}


@pytest.mark.parametrize(("lanes", "flags"), RUNS)
@pytest.mark.slow
def test_accuracy(tmp_path, inputs, references, lanes, flags):
    build = _build(flags)
    exe = _program(tmp_path, lanes, build)
    ftz = "-funsafe-math-optimizations" in build[1]
    with np.errstate(invalid="ignore"):  # (signalling NaNs among the bit patterns)
        x64 = inputs.astype(np.float64)
    failures = []
    for k, (name, args, reference, max_ulp, abs_floor, *conditioning) in enumerate(CASES):
        out = subprocess.run([*exe, str(k)], input=inputs.tobytes(), capture_output=True,
                             check=True).stdout
        got = np.frombuffer(out, np.float32)
        assert len(got) == len(inputs)
        want = references[ftz][k]
        err = _ulp_errors(got, want)
        if ftz:
            with np.errstate(invalid="ignore"):
                err[np.abs(got - want) <= 2 * FLT_MIN * np.maximum(1, np.abs(x64))] = 0.0
        if abs_floor:
            with np.errstate(invalid="ignore"):
                err[np.abs(got - want) <= abs_floor * np.maximum(1, np.abs(x64))] = 0.0
        allowed = max_ulp + (UNSAFE_ULP if ftz else 0)
        if conditioning:
            with np.errstate(all="ignore"):
                allowed = allowed + np.nan_to_num(conditioning[0](x64))
        err = err - allowed
        worst = int(np.argmax(err))
        if err[worst] > 0:
            failures.append(f"{name}{args}: {err[worst]:.3g} ulp too many at x = {inputs[worst]!r} "
                            f"(got {got[worst]!r}, want {want[worst]!r})")
    assert not failures, "\n".join(failures)


def test_a_wrong_function_fails(tmp_path, inputs):
    """The comparison can fail: exp's polynomial one coefficient off is caught."""
    exe = _program(tmp_path, 8, _build("plain"))
    source = (tmp_path / "vmath_8.c").read_text().replace("0.16666521f", "0.1667f")
    (tmp_path / "bad.c").write_text(source)
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wno-psabi", str(tmp_path / "bad.c"), "-o", *exe], check=True)
    out = subprocess.run([*exe, "0"], input=inputs.tobytes(), capture_output=True,
                         check=True).stdout
    err = _ulp_errors(np.frombuffer(out, np.float32), np.exp(inputs.astype(np.float64)))
    assert err.max() > CASES[0][3]


@pytest.mark.unit
def test_only_called_functions_are_emitted():
    text = functions("v = vm_sigmoid_v8(v);")
    assert "vm_sigmoid_v8" in text and "vm_exp_capped_v8" in text and "vm_f8" in text
    assert "vm_exp_v8" not in text  # (sigmoid needs no upper clamp)
    assert "vm_erf" not in text and "vm_f1" not in text and "vm_sigmoid_s" not in text
    assert functions("y = x + 1.0f;") == ""


@pytest.mark.parametrize("lanes", [8, 16])
@pytest.mark.parametrize("flags", ["plain", "x86_64", "x86_64-avx512"])
def test_maxps_minps_are_the_selects(tmp_path, inputs, lanes, flags):
    """vm_maxps / vm_minps (the epilogues' Relu and Clip on x86's widths: vmaxps, vminps)
    give a > b ? a : b and a < b ? a : b bit for bit, NaN, -0.0 and infinities included,
    with the intrinsics (the x86 targets' flags) and the portable selects (plain)."""
    compiler, cflags, runner = _build(flags)
    pairs = [("maxps", "v", "z"), ("maxps", "z", "v"), ("minps", "s", "v"), ("minps", "v", "s")]
    cases = "\n".join(
        f"    case {k}: for (size_t i = 0; i < n; i += {lanes}) {{ memcpy(&v, x + i, sizeof v); "
        f"v = vm_{f}_v{lanes}({a}, {b}); memcpy(y + i, &v, sizeof v); }} break;"
        for k, (f, a, b) in enumerate(pairs))
    source = f"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
{functions(f"vm_maxps_v{lanes}( vm_minps_v{lanes}(")}
int main(int argc, char **argv)
{{
    (void)argc;
    static float x[1u << 22], y[1u << 22];
    size_t n = fread(x, sizeof *x, 1u << 22, stdin);
    vm_f{lanes} v, z = {{0}}, s = z + 6.0f;
    switch (atoi(argv[1])) {{
{cases}
    }}
    fwrite(y, sizeof *y, n, stdout);
    return 0;
}}
"""
    (tmp_path / "minmax.c").write_text(source)
    exe = tmp_path / "minmax"
    subprocess.run([compiler, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", *cflags,
                    str(tmp_path / "minmax.c"), "-o", str(exe)], check=True)
    assert len(inputs) <= 1 << 22
    x = inputs
    with np.errstate(invalid="ignore"):
        want = [np.where(x > 0, x, np.float32(0)), np.where(0 > x, np.float32(0), x),
                np.where(6 < x, np.float32(6), x), np.where(x < 6, x, np.float32(6))]
    for k, expected in enumerate(want):
        out = subprocess.run([*runner, str(exe), str(k)] if runner else [str(exe), str(k)],
                             input=x.tobytes(), capture_output=True, check=True).stdout
        got = np.frombuffer(out, np.float32)
        assert np.array_equal(got.view(np.uint32), expected.astype(np.float32).view(np.uint32)), pairs[k]

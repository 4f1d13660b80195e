"""runtime/freestanding/, the C library of targets without one (x86-baremetal): its libm
against the host's (compiled for the host, called through ctypes), and every <math.h>
function the compiler can emit is one it provides."""

import ctypes
import glob
import math
import os
import re
import struct
import subprocess

import numpy as np
import pytest

from conftest import REPO

FREESTANDING = os.path.join(REPO, "site_scons", "onnxcc", "runtime", "freestanding")

#: (function, reference, argument range) checked on random arguments
UNARY = [("exp", math.exp, (-80, 80)), ("expm1", math.expm1, (-3, 3)), ("log", math.log, (1e-30, 1e30)),
         ("log1p", math.log1p, (-0.999, 10)), ("erf", math.erf, (-6.5, 6.5)),
         ("sin", math.sin, (-100, 100)), ("cos", math.cos, (-100, 100)), ("tan", math.tan, (-10, 10)),
         ("asin", math.asin, (-1, 1)), ("acos", math.acos, (-1, 1)), ("atan", math.atan, (-50, 50)),
         ("sinh", math.sinh, (-20, 20)), ("cosh", math.cosh, (-20, 20)), ("tanh", math.tanh, (-30, 30)),
         ("asinh", math.asinh, (-1e3, 1e3)), ("acosh", math.acosh, (1, 1e3)),
         ("atanh", math.atanh, (-0.999, 0.999)), ("sqrt", math.sqrt, (0, 1e6)),
         ("floor", math.floor, (-1e6, 1e6)), ("ceil", math.ceil, (-1e6, 1e6)),
         ("trunc", math.trunc, (-1e6, 1e6)), ("fabs", math.fabs, (-1e6, 1e6))]
#: worst error of the double functions, in double ulps (erf sums ~100 terms near 6)
DOUBLE_ULPS = 20


@pytest.fixture(scope="module")
def libm(tmp_path_factory):
    """math.c as a host shared library; -Bsymbolic: its calls stay inside it."""
    so = tmp_path_factory.mktemp("libm") / "libfreestanding_math.so"
    subprocess.run(["gcc", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared",
                    "-ffreestanding", "-fno-math-errno", "-isystem", os.path.join(FREESTANDING, "include"),
                    "-Wl,-Bsymbolic", os.path.join(FREESTANDING, "math.c"), "-o", str(so)],
                   check=True, capture_output=True)
    return ctypes.CDLL(str(so))


def _function(lib, name, ctype, arity=1):
    f = getattr(lib, name)
    f.restype, f.argtypes = ctype, [ctype] * arity
    return f


def _ulps(got, want, fmt):
    """How many representable numbers of format ``fmt`` ('f' or 'd') lie between them."""
    if math.isnan(want) or math.isnan(got):
        return 0 if math.isnan(want) and math.isnan(got) else math.inf
    if got == want:
        return 0
    if math.isinf(got) or math.isinf(want):
        return math.inf
    signed = "i" if fmt == "f" else "q"
    a, b = (struct.unpack(signed, struct.pack(fmt, v))[0] for v in (got, want))
    ordered = [x if x >= 0 else -(x & ~(1 << (8 * struct.calcsize(fmt) - 1))) for x in (a, b)]
    return abs(ordered[0] - ordered[1])


@pytest.mark.parametrize("name,reference,limits", UNARY, ids=[u[0] for u in UNARY])
def test_float_within_one_ulp_and_double_within_a_few(libm, name, reference, limits):
    double, single = _function(libm, name, ctypes.c_double), _function(libm, name + "f", ctypes.c_float)
    rng = np.random.default_rng(1)
    lo, hi = limits
    xs = np.concatenate([rng.uniform(lo, hi, 3000), np.clip(rng.uniform(-1e-3, 1e-3, 300), lo, hi),
                         [lo, hi, 0.0] if lo <= 0.0 else [lo, hi]])
    worst_double = worst_single = 0
    for x in map(float, xs):
        worst_double = max(worst_double, _ulps(double(x), float(reference(x)), "d"))
        x32 = float(np.float32(x))
        with np.errstate(over="ignore"):
            want32 = float(np.float32(reference(x32)))
        worst_single = max(worst_single, _ulps(single(x32), want32, "f"))
    assert worst_single <= 1 and worst_double <= DOUBLE_ULPS, (worst_single, worst_double)


def test_special_values(libm):
    inf, nan = math.inf, math.nan
    cases = {"exp": [(inf, inf), (-inf, 0.0), (800.0, inf), (-800.0, 0.0)],
             "log": [(0.0, -inf), (inf, inf), (-1.0, nan), (5e-324, math.log(5e-324))],
             "tanh": [(-0.0, -0.0), (inf, 1.0), (-inf, -1.0)], "atan": [(inf, math.pi / 2)],
             "erf": [(inf, 1.0), (-inf, -1.0)], "sin": [(-0.0, -0.0), (inf, nan)],
             "acos": [(-1.0, math.pi), (1.5, nan)], "atanh": [(1.0, inf)],
             "floor": [(-0.0, -0.0), (-0.5, -1.0)], "ceil": [(-0.5, -0.0)],
             "round": [(2.5, 3.0), (-2.5, -3.0), (-0.3, -0.0)], "rint": [(2.5, 2.0), (3.5, 4.0)]}
    for name, pairs in cases.items():
        f = _function(libm, name, ctypes.c_double)
        for x, want in pairs:
            got = f(x)
            assert _ulps(got, want, "d") <= 2, (name, x, got, want)
            assert math.isnan(want) or math.copysign(1, got) == math.copysign(1, want), (name, x, got)
    pow_ = _function(libm, "pow", ctypes.c_double, 2)
    for (x, y), want in {(-2.0, 3.0): -8.0, (-2.0, 0.5): nan, (0.0, -1.0): inf, (-0.0, -3.0): -inf,
                         (-inf, 3.0): -inf, (nan, 0.0): 1.0, (1.0, nan): 1.0, (0.5, inf): 0.0,
                         (3.0, 7.0): 2187.0, (2.0, -2.0): 0.25}.items():
        got = pow_(x, y)
        assert (math.isnan(got) and math.isnan(want)) or (got == want and
                                                          math.copysign(1, got) == math.copysign(1, want)), (x, y, got)


def test_fmod_and_fmaf_are_exact(libm):
    from fractions import Fraction
    fmod, fmaf = _function(libm, "fmod", ctypes.c_double, 2), _function(libm, "fmaf", ctypes.c_float, 3)
    rng = np.random.default_rng(2)
    for a, b in rng.uniform(-1e4, 1e4, (2000, 2)) * rng.choice([1e-300, 1.0, 1e300], (2000, 2)):
        assert fmod(a, b) == math.fmod(a, b), (a, b)
    for x, y, z in rng.uniform(-2, 2, (5000, 3)).astype(np.float32).astype(float):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        nearest = float(np.float32(float(exact)))  # ties checked exactly below
        below, above = sorted([nearest, float(np.nextafter(np.float32(nearest),
                                                           np.float32(np.inf if exact > nearest else -np.inf)))])
        best = min((below, above), key=lambda v: (abs(Fraction(v) - exact),
                                                   struct.unpack("I", struct.pack("f", v))[0] & 1))
        assert fmaf(x, y, z) == best, (x, y, z)


def _math_header_functions():
    with open(os.path.join(FREESTANDING, "include", "math.h")) as f:
        text = f.read()
    names = set(re.findall(r"ONNXCC_MATH_[12]\((\w+)\)", text))
    return names | {n + "f" for n in names} | set(re.findall(r"^(?:float|double) (\w+)\(", text, re.M))


@pytest.mark.unit
def test_every_math_function_the_compiler_emits_is_provided():
    """The kernels' <math.h> calls: the functions ops spell for an element type
    (``t.fn('exp')``: exp or expf) and those the templates name."""
    provided = _math_header_functions()
    sources = glob.glob(os.path.join(REPO, "site_scons", "onnxcc", "**", "*.py"), recursive=True)
    spelled = set()
    for path in sources:
        with open(path) as f:
            spelled |= set(re.findall(r"\.fn\(['\"](\w+)['\"]\)", f.read()))
    from onnxcc.ops.unary import EXPRESSIONS
    from onnxcc.core.cgen import CNumbers
    for dtype in ("float32", "float64"):
        for op, expression in EXPRESSIONS.items():
            spelled |= set(re.findall(r"\b([a-z][a-z0-9]*)\(", expression("v", {}, CNumbers(dtype))))
    libm = {"exp", "expm1", "log", "log1p", "log2", "log10", "pow", "sqrt", "cbrt", "erf", "erfc",
            "tanh", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh",
            "acosh", "atanh", "floor", "ceil", "trunc", "round", "rint", "nearbyint", "lrint",
            "fabs", "fmod", "fma", "fmin", "fmax", "copysign", "frexp", "ldexp", "hypot", "exp2"}
    templates = glob.glob(os.path.join(REPO, "site_scons", "onnxcc", "templates", "**", "*.mako"), recursive=True)
    for path in templates:
        with open(path) as f:  # (not in <%doc> or ## comments, nor Python's math.log2(...))
            text = re.sub(r"(?s:<%doc>.*?</%doc>)|^[ \t]*##[^\n]*", "", f.read(), flags=re.M)
            spelled |= {n for n in re.findall(r"(?<![.\w])([a-z][a-z0-9]*)\(", text)
                        if n in libm or n.endswith("f") and n[:-1] in libm}
    needed = {n for n in spelled if n in libm or n.endswith("f") and n[:-1] in libm}
    needed |= {n + "f" for n in spelled if n in libm}  # t.fn spells both types
    assert needed and not needed - provided, sorted(needed - provided)

"""The int8 kernels' float32 steps in integers (templates/kernels/lib/float32_int.mako),
what a core without a float unit runs, against the float32 code the other cores run,
compiled natively: QLinearAdd over every pair of codes, QLinearSoftmax over random rows."""

import subprocess

import numpy as np

from onnxcc.codegen.render import render, render_def
from onnxcc.core import quant

RNG = np.random.default_rng(7)


def _scale():
    """A scale as calibration gives them, or a power of two (exact ties everywhere)."""
    return float(np.float32(2.0 ** RNG.integers(-9, 2) if RNG.random() < 0.3
                            else 10.0 ** RNG.uniform(-3.5, 0.5)))


def _run(tmp_path, source):
    src, exe = tmp_path / "t.c", tmp_path / "t"
    src.write_text(source)
    subprocess.run(["cc", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", str(src), "-o",
                    str(exe), "-lm"], check=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=120).stdout.strip()


def test_integer_qlinear_add_matches_the_float32_steps_on_every_pair_of_codes(tmp_path):
    """Both forms qbinary and the fused residual use: fmaf(a, ra, fmaf(b, rb, offset)), and
    the broadcast one, fmaf(a, ra, offset + b * rb); int8 and uint8 codes, clamps a fused
    Relu narrowed, scales equal (ties) and far apart."""
    rows = []
    for i in range(160):
        signed = bool(i % 2)
        lo_t, hi_t = (-128, 127) if signed else (0, 255)
        q = [(_scale(), int(RNG.integers(lo_t, hi_t + 1))) for _ in range(3)]
        if i % 5 == 0:
            q[1] = q[0]
        ra, rb, off = quant.qlinear_add_constants(*q)
        fx = quant.qlinear_add_fixed(ra, rb, off, signed)
        assert fx is not None
        lo = lo_t if i % 3 else max(lo_t, q[2][1])
        rows.append(f"{{{float(ra)!r}f, {float(rb)!r}f, {float(off)!r}f, {lo}, {hi_t}, {lo_t}, "
                    f"{fx['bias']}, {fx['ma']}u, {fx['sa']}, INT64_C({fx['ca']}), {fx['mb']}u, "
                    f"{fx['sb']}, INT64_C({fx['cb']}), INT64_C({fx['offset']}), {fx['f']}}}")
    helpers = (render_def("kernels/lib/qhelpers.mako", "qlinear_add", model="f")
               + render_def("kernels/lib/float32_int.mako", "qlinear_add", model="i"))
    out = _run(tmp_path, "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n" + helpers + r"""
struct k { float ra, rb, off; int32_t lo, hi, first, bias; uint32_t ma; int sa; int64_t ca;
           uint32_t mb; int sb; int64_t cb, off_f; int f; };
static const struct k cases[] = {
""" + ",\n".join(rows) + r"""
};
int main(void)
{
    long bad = 0, checked = 0;
    for (size_t n = 0; n < sizeof cases / sizeof cases[0]; ++n) {
        const struct k c = cases[n];
        for (int32_t a = c.first; a < c.first + 256; ++a)
            for (int32_t b = c.first; b < c.first + 256; ++b) {
                const uint32_t ua = (uint32_t)(a + c.bias), ub = (uint32_t)(b + c.bias);
                bad += f_qlinear_add((float)a, (float)b, c.ra, c.rb, c.off, (float)c.lo, (float)c.hi)
                       != i_qadd_code(ua, c.ma, c.sa, c.ca, i_qadd_term(ub, c.mb, c.sb, c.cb + c.off_f),
                                      c.f, c.lo, c.hi);
                float v = fmaf((float)a, c.ra, c.off + (float)b * c.rb);
                v = v < (float)c.lo ? (float)c.lo : v > (float)c.hi ? (float)c.hi : v;
                const int64_t fixed = i_rn32(c.off_f + i_qadd_term(ub, c.mb, c.sb, c.cb));
                bad += f_round_even(v) != i_qadd_code(ua, c.ma, c.sa, c.ca, fixed, c.f, c.lo, c.hi);
                checked += 2;
            }
    }
    printf("%ld of %ld\n", bad, checked);
    return 0;
}
""")
    assert out == f"0 of {160 * 65536 * 2}"


def test_integer_qlinear_mul_matches_the_float32_steps_on_every_pair_of_codes(tmp_path):
    """qbinary's mul: float(product of the codes' differences) * ratio, then + the zero
    point, clamped and rounded; int8 and uint8 codes, ratios from 2^-14 to 2^2."""
    rows = []
    for i in range(120):
        signed = bool(i % 2)
        lo_t, hi_t = (-128, 127) if signed else (0, 255)
        za, zb, zy = (int(RNG.integers(lo_t, hi_t + 1)) for _ in range(3))
        ratio = quant.qlinear_mul_ratio(_scale(), _scale(), _scale())
        if not 2.0 ** -14 < float(ratio) < 4.0:
            continue
        fx = quant.qlinear_mul_fixed(ratio, zy)
        assert fx is not None
        rows.append(f"{{{float(ratio)!r}f, {za}, {zb}, {zy}, {lo_t}, {hi_t}, {fx['m']}u, {fx['s']}, "
                    f"INT64_C({fx['z']}), {fx['f']}}}")
    assert len(rows) > 80
    helpers = (render_def("kernels/lib/qhelpers.mako", "round_even", model="f")
               + render_def("kernels/lib/float32_int.mako", "qlinear_mul", model="i"))
    out = _run(tmp_path, "#include <stdint.h>\n#include <stdio.h>\n" + helpers + r"""
struct k { float ratio; int32_t za, zb, zy, lo, hi; uint32_t m; int s; int64_t z; int f; };
static const struct k cases[] = {
""" + ",\n".join(rows) + r"""
};
int main(void)
{
    long bad = 0, checked = 0;
    for (size_t n = 0; n < sizeof cases / sizeof cases[0]; ++n) {
        const struct k c = cases[n];
        for (int32_t a = c.lo; a <= c.hi; ++a)
            for (int32_t b = c.lo; b <= c.hi; ++b) {
                const int32_t product = (a - c.za) * (b - c.zb);
                float v = (float)product * c.ratio;
                v = v + (float)c.zy;
                v = v < (float)c.lo ? (float)c.lo : v > (float)c.hi ? (float)c.hi : v;
                bad += f_round_even(v) != i_qmul_code(product, c.m, c.s, c.z, c.f, c.lo, c.hi);
                ++checked;
            }
    }
    printf("%ld of %ld\n", bad, checked);
    return 0;
}
""")
    assert out.startswith("0 of ")


def test_integer_qsoftmax_matches_the_float32_steps(tmp_path):
    """The qsoftmax kernel both ways over random rows: input scales from tables whose
    entries are all normal to ones that run into subnormals and zeros, 1 to 40 classes,
    output scales of 1/256 (what quantizers give softmax) and others, except where the
    float32 steps overflow."""
    kernels, calls = [], []
    for i in range(48):
        n, signed = int(RNG.integers(1, 41)), bool(i % 2)
        x_scale = float(np.float32(10.0 ** RNG.uniform(-2.5, 0.7)))
        y_scale = 1.0 / 256 if i % 3 else _scale()
        p = {"outer": 3, "n": n, "inner": 1, "signed": signed,
             "table": [float(v) for v in quant.softmax_exp_table(x_scale, n, signed)],
             "y_scale": float(np.floor(np.float32(1.0) / np.float32(y_scale))),
             "y_zp": -128 if signed else 0}
        with np.errstate(over="ignore"):  # e * floor(1 / y_scale) overflows float32 (one
            if np.isinf(np.float32(max(p["table"])) * np.float32(p["y_scale"])):  # class):
                continue  # the float code's conversion of inf is the target's (docs/int8.md)
        ctype = "int8_t" if signed else "uint8_t"
        for model, float_unit in (("f", True), ("i", False)):
            signature = (f"static void {model}{i}(const {ctype} *restrict x, "
                         f"{ctype} *restrict y)")
            kernels.append(render("kernels/qsoftmax.c.mako", signature=signature, p=p,
                                  model=model, float_unit=float_unit))
        calls.append(f"""    for (int r = 0; r < 200; ++r) {{
        {ctype} x[{3 * n}], y0[{3 * n}], y1[{3 * n}];
        for (int j = 0; j < {3 * n}; ++j) x[j] = ({ctype})(rnd() >> (r % 8));
        f{i}(x, y0);
        i{i}(x, y1);
        for (int j = 0; j < {3 * n}; ++j) bad += y0[j] != y1[j];
    }}""")
    assert len(calls) > 40
    out = _run(tmp_path, "#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n"
               "static uint32_t s = 2463534242u;\n"
               "static uint32_t rnd(void) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; return s; }\n"
               + "".join(kernels) + "int main(void)\n{\n    long bad = 0;\n" + "\n".join(calls)
               + '\n    printf("%ld\\n", bad);\n    return 0;\n}\n')
    assert out == "0"

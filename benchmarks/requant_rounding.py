#!/usr/bin/env python3
"""How often a conventional fixed-point requantization would disagree with onnxruntime.

onnxruntime requantizes int32 accumulators in float32: round_half_even(float32(
float32(acc) * scale)). onnxcc emulates exactly that in integers (a 24-bit multiplier and
two float32-style roundings). The usual integer-only scheme of gemmlowp / TFLite Micro
(a 31-bit multiplier, SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT:
one rounding, ties away from zero) computes the exactly rounded product instead, and so
differs from onnxruntime where float32's two roundings land elsewhere. This script counts
those differences for every requantizing layer of the int8 example models, over
accumulators drawn uniformly from the range that does not saturate, and checks that
onnxcc's arithmetic has none.

    .venv/bin/python benchmarks/requant_rounding.py [--samples N]
"""

import argparse
import glob
import math
import os
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "site_scons"))

from onnxcc.core import quant  # noqa: E402
from onnxcc.importer.stage import import_model  # noqa: E402
from onnxcc.ops.qlinear.lowering import LOWERINGS  # noqa: E402
from onnxcc.passes import optimize  # noqa: E402


def gemmlowp(acc, scale, zp, lo, hi):
    """TFLite Micro's MultiplyByQuantizedMultiplier (scale < 1), then zero point and clamp."""
    m, e = math.frexp(float(scale))
    mult, right = int(round(m * (1 << 31))), -e
    if mult == 1 << 31:
        mult, right = mult // 2, right - 1
    out = []
    for a in acc.tolist():
        ab = a * mult
        nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
        x = (ab + nudge) >> 31 if ab + nudge >= 0 else -((-(ab + nudge)) >> 31)
        mask = (1 << right) - 1
        rem, threshold = x & mask, (mask >> 1) + (1 if x < 0 else 0)
        x = (x >> right) + (1 if rem > threshold else 0)
        out.append(min(max(x + zp, lo), hi))
    return np.array(out)


def layer_scales(path):
    """(layer, scale, zero point, lo, hi) of every requantizing kernel of a model."""
    g = optimize(import_model(path), path)
    for node in g.nodes:
        if node.op in ("QLinearConv", "QGemm", "QLinearGlobalAveragePool", "QLinearAveragePool"):
            call = LOWERINGS[node.op](node, g)
            p = call.params
            if "mult" not in p:
                continue
            for mult, shift in sorted(set(zip(np.atleast_1d(p["mult"]), np.atleast_1d(p["shift"])))):
                yield node.name, np.float32(int(mult) * 2.0 ** -int(shift)), p["y_zp"], p["lo"], p["hi"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=2000, help="accumulators per scale")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print("| model | scales | outputs | gemmlowp-style differs | by more than 1 | onnxcc differs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for path in sorted(glob.glob(os.path.join(REPO, "models", "int8", "*_qop.onnx"))):
        n_scales = total = differ = big = ours = 0
        for _, scale, zp, lo, hi in layer_scales(path):
            bound = int((hi - lo + 2) / scale)
            acc = rng.integers(-bound, bound + 1, args.samples)
            want = quant.requantize_reference(acc, scale, zp, lo, hi)
            other = gemmlowp(acc, scale, zp, lo, hi)
            mult, shift = quant.fixed_point(scale, path)
            mine = quant.requantize_fixed_point(acc, mult, shift, zp, lo, hi)
            n_scales += 1
            total += acc.size
            differ += int(np.sum(other != want))
            big += int(np.sum(np.abs(other - want) > 1))
            ours += int(np.sum(mine != want))
        name = os.path.basename(path)[:-len("_qop.onnx")]
        print(f"| {name} | {n_scales} | {total} | {differ} ({differ / total:.2e}) | {big} | {ours} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

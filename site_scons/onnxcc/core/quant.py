"""Quantization arithmetic decided at compile time: what onnxruntime's CPU kernels compute,
as constants the generated C specializes on (see docs/int8.md).

A quantized tensor carries ``TensorInfo.quant = {'scale': [...], 'zero_point': [...],
'axis': k or None}`` (lists: one entry per tensor, or one per slice along ``axis``).
"""

import math
from fractions import Fraction

import numpy as np

from .errors import OnnxccError

F32 = np.float32


def make_quant(scale, zero_point, axis=None):
    scale = np.asarray(scale, dtype=np.float32).reshape(-1)
    zero_point = np.asarray(zero_point).reshape(-1)
    if zero_point.size == 1 and scale.size > 1:
        zero_point = np.repeat(zero_point, scale.size)
    return {"scale": [float(s) for s in scale], "zero_point": [int(z) for z in zero_point],
            "axis": None if scale.size == 1 else axis}


def scalar(quant, key):
    """The one scale / zero point of a per-tensor quantization."""
    values = quant[key]
    if len(set(values)) != 1:
        raise OnnxccError(f"a {key.replace('_', ' ')} per channel or block ({len(values)} values) "
                          "is not supported by this kernel", hint="quantize it per tensor")
    return values[0]


def int_range(dtype):
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


# --- requantization of int32 accumulators (QLinearConv, QGemm, QLinearGlobalAveragePool) ---

def output_scales(x_scale, w_scales, y_scale, alpha=None):
    """onnxruntime's float32 multiplier of each output channel: (x_scale * w_scale) /
    y_scale (QGemm: alpha first). One array operation for all the channels: the same
    float32 products and quotients as one channel at a time, which the stages compute
    for every QGemm and QLinearConv several times."""
    w = np.asarray(w_scales, np.float32)
    s = F32(x_scale) * w if alpha is None else F32(F32(alpha) * F32(x_scale)) * w
    return list(s / F32(y_scale))


def fast_requant_window(shifts):
    """log2 of the tie window of the fast requantization (qhelpers.mako
    ``requantize_fast``) for these shifts, or None where it does not apply (a shift below
    20 or above 48).

    It computes t = floor(acc * mult / 2^17) in one 32x32 multiply (|acc| < 2^23) and
    reads the rounding from the fraction u = (t mod 2^f) * 2^(32 - f), f = shift - 17.
    float32 rounds the product to 24 significant bits first; where the result is not
    clamped (|result| < 512) that moves u by at most 2^16, and the truncation to t by
    less than 2^(49 - shift): within 2^k of a tie (2^31), 2^k above both, only the
    exact path knows. (A wider window than needed is as exact, only slower: the shifts
    are rounded down to a multiple of 4, so that most layers' kernels are alike.)"""
    if not shifts or min(shifts) < 20 or max(shifts) > 48:
        return None
    least = min(min(shifts) // 4 * 4, 33)  # a few windows: layers share their kernels
    return ((1 << 16) + (1 << (49 - least)) + 1).bit_length()


def fixed_point(scale, where):
    """(mult, shift) with scale == mult * 2**-shift exactly: mult is the 24-bit mantissa of
    the float32 ``scale``, so the integer emulation can round where float32 rounds."""
    scale = F32(scale)
    if not np.isfinite(scale) or scale <= 0:
        raise OnnxccError(f"requantization scale {float(scale)!r} is not a positive number", where=where)
    m, e = math.frexp(float(scale))  # scale = m * 2**e, 0.5 <= m < 1
    mult, shift = int(m * (1 << 24)), 24 - e
    if shift < 1:
        raise OnnxccError(f"requantization scale {float(scale)!r} is too large (>= 2**23)", where=where)
    return mult, min(shift, 63)  # beyond 2**-63 every product rounds to 0 either way


def requantize_reference(acc, scale, zero_point, lo, hi):
    """What onnxruntime computes (MlasRequantizeOutput): float32 multiply, clamp, round half
    to even; the C kernels do the same in integers. For tests."""
    v = np.asarray(acc, dtype=np.int64).astype(F32) * F32(scale)
    v = np.clip(v, F32(lo - zero_point), F32(hi - zero_point))
    return np.rint(v).astype(np.int64) + zero_point


def requantize_fixed_point(acc, mult, shift, zero_point, lo, hi):
    """The C kernels' integer-only arithmetic, in Python (for tests and docs)."""
    def round24(u):
        n = u.bit_length()
        return u if n <= 24 else _rne_shift(u, n - 24) << (n - 24)
    out = []
    for a in np.asarray(acc, dtype=np.int64).reshape(-1).tolist():
        u = round24(round24(abs(a)) * mult)
        q = _rne_shift(u, shift)
        q = -q if a < 0 else q
        out.append(min(max(q, lo - zero_point), hi - zero_point) + zero_point)
    return np.array(out, dtype=np.int64).reshape(np.shape(acc))


def _rne_shift(u, r):
    q, rem, half = u >> r, u & ((1 << r) - 1), 1 << (r - 1)
    return q + 1 if rem > half or (rem == half and q & 1) else q


# --- QLinearAdd: onnxruntime's x86 kernel (fused multiply-adds in float32) ---

def _fma(a, b, c):
    """float32 fused multiply-add (exact: a float32 product fits a float64)."""
    return F32(np.float64(a) * np.float64(b) + np.float64(c))


def qlinear_add_constants(qa, qb, qc):
    """(ratio_a, ratio_b, offset): y = round(a * ratio_a + (b * ratio_b + offset))."""
    ra, rb = F32(F32(qa[0]) / F32(qc[0])), F32(F32(qb[0]) / F32(qc[0]))
    offset = F32(F32(qc[1]) - _fma(ra, F32(qa[1]), F32(rb * F32(qb[1]))))
    return ra, rb, offset


#: fixed-point sums the integer QLinearAdd keeps below (int64, with a bit to spare)
_FIXED_LIMIT = 2 ** 62


def _fixed(values):
    """(f, the values times 2^f): f the least that makes each an integer (float32s: exact)."""
    values = [Fraction(float(v)) for v in values]
    f = max(1, *(v.denominator.bit_length() - 1 for v in values))
    return f, [int(v * 2 ** f) for v in values]


def _split(n):
    """(m, s) with n = m * 2^s, m odd (0: (0, 0))."""
    s = (n & -n).bit_length() - 1 if n else 0
    return n >> s, s


def qlinear_add_fixed(ra, rb, offset, signed):
    """QLinearAdd's constants (qlinear_add_constants) as its integer steps hold them
    (templates/kernels/lib/float32_int.mako): every value an integer times 2^-f, f the
    least that holds the ratios and the offset exactly; each ratio as m * 2^(s - f) with
    m odd (< 2^24); c the constant that makes a code unsigned (``signed``: int8 codes,
    read 128 up) times the ratio. None where a sum could reach 2^62 (a ratio or the offset
    over 40 bits finer than the largest)."""
    f, (ra_f, rb_f, off_f) = _fixed((ra, rb, offset))
    if 384 * (ra_f + rb_f) + abs(off_f) >= _FIXED_LIMIT:
        return None
    bias = 128 if signed else 0
    (ma, sa), (mb, sb) = _split(ra_f), _split(rb_f)
    return {"f": f, "ma": ma, "sa": sa, "ca": -bias * ra_f, "mb": mb, "sb": sb,
            "cb": -bias * rb_f, "offset": off_f, "bias": bias}


# --- QLinearMul: onnxruntime's x86 kernel (SSE2: a float32 multiply, then an add) ---

def qlinear_mul_ratio(a_scale, b_scale, c_scale):
    """The float32 factor of the int32 product of the two codes: a_scale * b_scale /
    c_scale, rounded after each operation; y = round(float(pa * pb) * ratio + zc)."""
    return F32(F32(F32(a_scale) * F32(b_scale)) / F32(c_scale))


def qlinear_mul_fixed(ratio, zc):
    """QLinearMul's constants as its integer steps hold them (float32_int.mako): the ratio
    m * 2^(s - f), the zero point z * 2^-f, for products of two codes' differences (below
    2^18 in magnitude: float32 holds them exactly). None where a sum could reach 2^62."""
    f, (r, z) = _fixed((ratio, zc))
    if 2 ** 18 * r + abs(z) >= _FIXED_LIMIT:
        return None
    m, s = _split(r)
    return {"f": f, "m": m, "s": s, "z": z}


# --- QLinearSoftmax: onnxruntime's exp lookup table ---

def softmax_exp_table(x_scale, reduce_len, signed):
    """256 float32 exp values indexed by the (shifted) input code, as onnxruntime builds them."""
    flt_max = float(np.finfo(np.float32).max)
    bit_shift = math.log(float(F32(flt_max / float(F32(reduce_len)))))
    bit_shift = max(0.0, bit_shift - 5.0) / float(F32(x_scale))
    table = np.zeros(256, dtype=np.float32)
    for i in range(256):
        value = math.exp((float(i) - 255.0 + bit_shift) * float(F32(x_scale)))
        table[(i - 128) & 0xFF if signed else i] = F32(value)
    return table


# --- QLinearSigmoid / QLinearLeakyRelu: 256-entry tables of onnxruntime's float function ---

#: MlasLogisticKernel's rational approximation (its x86 FMA3 kernel fuses every a * b + c)
_LOGISTIC_ALPHA = [4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05,
                   8.51377133304701e-03, 2.48287947061529e-01]
_LOGISTIC_BETA = [6.10247389755681e-13, 5.76102136993427e-09, 6.29106785017040e-06,
                  1.70198817374094e-03, 1.16817656904453e-01, 9.93151921023180e-01]


def logistic(x):
    """onnxruntime's float32 sigmoid (MlasComputeLogistic), element by element."""
    out = []
    for v in np.asarray(x, dtype=F32).reshape(-1):
        v = min(max(v, F32(-18.0)), F32(18.0))
        v2 = F32(v * v)
        p = _fma(v2, F32(_LOGISTIC_ALPHA[0]), F32(_LOGISTIC_ALPHA[1]))
        for a in _LOGISTIC_ALPHA[2:]:
            p = _fma(p, v2, F32(a))
        p = F32(p * v)
        q = _fma(v2, F32(_LOGISTIC_BETA[0]), F32(_LOGISTIC_BETA[1]))
        for b in _LOGISTIC_BETA[2:]:
            q = _fma(q, v2, F32(b))
        out.append(min(max(F32(F32(p / q) + F32(0.5)), F32(0.0)), F32(1.0)))
    return np.array(out, dtype=F32)


#: MlasTanhKernel's rational approximation (Eigen's; the x86 FMA3 kernel fuses a * b + c)
_TANH_ALPHA = [-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
               5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
               4.89352455891786e-03]
_TANH_BETA = [1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
              4.89352518554385e-03]


def _fma_poly(v, coefficients):
    p = _fma(v, F32(coefficients[0]), F32(coefficients[1]))
    for c in coefficients[2:]:
        p = _fma(p, v, F32(c))
    return p


def tanh(x):
    """onnxruntime's float32 tanh (MlasComputeTanh), element by element: the same on every
    float32 of 400,000 probes."""
    out = []
    for v in np.asarray(x, dtype=F32).reshape(-1):
        v = min(max(v, F32(-9.0)), F32(9.0))
        v2 = F32(v * v)
        out.append(F32(F32(_fma_poly(v2, _TANH_ALPHA) * v) / _fma_poly(v2, _TANH_BETA)))
    return np.array(out, dtype=F32)


def hard_sigmoid(x, alpha, beta):
    """onnxruntime's float32 HardSigmoid: max(0, min(1, x * alpha + beta)), not fused."""
    v = (np.asarray(x, dtype=F32) * F32(alpha)).astype(F32) + F32(beta)
    return np.minimum(np.maximum(v.astype(F32), F32(0.0)), F32(1.0)).astype(F32)


def hard_swish(x):
    """onnxruntime's HardSwish: ONNX's function body, x * HardSigmoid(x, 1/6, 0.5)."""
    x = np.asarray(x, dtype=F32)
    return (x * hard_sigmoid(x, F32(1.0 / 6.0), 0.5)).astype(F32)


def leaky_relu(x, alpha):
    x = np.asarray(x, dtype=F32)
    return np.where(x >= 0, x, x * F32(alpha)).astype(F32)


def lookup_table(fn, x_quant, y_quant, x_dtype, y_dtype, clamp=None):
    """y code of every x code, indexed by the code's byte: quantize(fn(dequantize(x))) in
    onnxruntime's float32 arithmetic (QuantizeLinear divides by the scale), within
    ``clamp`` (the range a Relu / Clip after fn leaves; quantization is monotonic)."""
    x_scale, x_zp = F32(x_quant[0]), x_quant[1]
    y_scale, y_zp = F32(y_quant[0]), y_quant[1]
    lo, hi = clamp or int_range(y_dtype)
    codes = np.arange(int_range(x_dtype)[0], int_range(x_dtype)[1] + 1)
    v = fn((codes - x_zp).astype(F32) * x_scale)
    v = np.clip((v / y_scale).astype(F32), F32(lo - y_zp), F32(hi - y_zp))
    table = [0] * 256
    for code, value in zip(codes.tolist(), (np.rint(v).astype(np.int64) + y_zp).tolist()):
        table[code & 0xFF] = int(value)
    return table

<%doc>
  Helpers of the integer kernels, defined once per generated file (hence the guards),
  and the expression of one convolution output (qconv2d and its in-place variants).
</%doc>\
<%def name="requantize(model)">\
#ifndef ${model.upper()}_REQUANTIZE_DEFINED
#define ${model.upper()}_REQUANTIZE_DEFINED
/* u rounded to 24 significant bits, ties to even: what storing it in a float32 does */
static inline uint64_t ${model}_round24(uint64_t u)
{
    if (u < (UINT64_C(1) << 24))
        return u;
    const int r = 40 - __builtin_clzll(u); /* bits below the 24 kept */
    const uint64_t half = UINT64_C(1) << (r - 1), rem = u & ((half << 1) - 1u);
    uint64_t q = u >> r;
    q += rem > half || (rem == half && (q & 1u));
    return q << r;
}

/* zero_point + clamp(round_half_even(float32(float32(acc) * scale))), with
 * scale = mult * 2^-shift: onnxruntime's float32 requantization, in integers only. */
static inline int32_t ${model}_requantize(int32_t acc, uint32_t mult, int shift, int32_t zero_point,
                                         int32_t lo, int32_t hi)
{
    const uint64_t u = ${model}_round24(${model}_round24(acc < 0 ? (uint64_t)0 - (uint64_t)(int64_t)acc
                                                              : (uint64_t)acc) * mult);
    const uint64_t half = UINT64_C(1) << (shift - 1), rem = u & ((half << 1) - 1u);
    uint64_t q = u >> shift;
    q += rem > half || (rem == half && (q & 1u));
    const int64_t v = (acc < 0 ? -(int64_t)q : (int64_t)q) + zero_point;
    return v < lo ? lo : v > hi ? hi : (int32_t)v;
}
#endif
</%def>\
<%def name="requantize_fast(model)">\
${requantize(model)}
#ifndef ${model.upper()}_REQUANTIZE_FAST_DEFINED
#define ${model.upper()}_REQUANTIZE_FAST_DEFINED
/* The same result as ${model}_requantize for a shift in [20, 48], in one 32-bit multiply:
 * t = floor(acc * mult / 2^17), its fraction u at the top of a word. Within 2^k of a
 * tie (quant.fast_requant_window: where float32's rounding of the product to 24 bits
 * may decide) and for |acc| >= 2^23, the exact path. */
#if defined(__ARM_FEATURE_SAT)
#include <arm_acle.h>
#endif
/* the rare exact path, out of line: one copy, not one per output of every kernel */
static __attribute__((noinline, cold)) int32_t ${model}_requantize_slow(int32_t acc, uint32_t mult, int shift,
                                                                       int32_t zero_point, int32_t lo, int32_t hi)
{
    return ${model}_requantize(acc, mult, shift, zero_point, lo, hi);
}

/* a * b / 2^32, rounded down, plus c: one SMMLA with the DSP extension */
static inline int32_t ${model}_mulhi_add(int32_t a, int32_t b, int32_t c)
{
#if defined(__ARM_FEATURE_DSP)
    int32_t r;
    __asm__("smmla %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
#else
    return (int32_t)(((int64_t)a * b) >> 32) + c;
#endif
}

/* v clamped to [lo, hi] */
static inline int32_t ${model}_saturate(int32_t v, int32_t lo, int32_t hi)
{
#if defined(__ARM_FEATURE_SAT)
    /* saturate to the type in one instruction; then only the bounds a fused Relu or Clip
     * narrowed (lo and hi are constants: the other tests fold away) */
    if (lo >= -128 && hi <= 127) {
        int32_t s = __ssat(v, 8);
        if (lo > -128)
            s = s < lo ? lo : s;
        if (hi < 127)
            s = s > hi ? hi : s;
        return s;
    }
    if (lo >= 0 && hi <= 255) {
        int32_t s = (int32_t)__usat(v, 8);
        if (lo > 0)
            s = s < lo ? lo : s;
        if (hi < 255)
            s = s > hi ? hi : s;
        return s;
    }
#endif
    return v < lo ? lo : v > hi ? hi : v;
}

/* The folded form (a shift of at most 38): the zero point and the half of round-half-up
 * ride in the multiply's accumulator, t = floor(acc * mult / 2^17) + c with
 * c = zero_point * 2^f + 2^(f - 1) (${model}_fold_bias), so t >> f is the rounded result
 * plus the zero point and t's low f bits are the fraction plus one half (a tie is near
 * 0); |t| < 2^30 + 2^29 + 2^20, no overflow. m7 = mult * 2^7, f = shift - 17: a kernel
 * computes them once per output channel. wide: |acc| may reach 2^23 (else
 * passes/accumulator_bits.py proved it cannot, and the test goes). */
static inline int32_t ${model}_fold_bias(int shift, int32_t zero_point)
{
    return (int32_t)((uint32_t)(2 * zero_point + 1) << (shift - 18));
}

static inline int32_t ${model}_requantize_folded(int32_t acc, int32_t m7, int32_t c, int f, int k, int wide,
                                                int32_t zero_point, int32_t lo, int32_t hi)
{
    if (wide && (uint32_t)acc + (UINT32_C(1) << 23) >= (UINT32_C(1) << 24))
        return ${model}_requantize_slow(acc, (uint32_t)m7 >> 7, f + 17, zero_point, lo, hi);
    const int32_t t = ${model}_mulhi_add(acc * 256, m7, c);
    if ((((uint32_t)t << (32 - f)) + (UINT32_C(1) << k)) >> (k + 1) == 0u)
        return ${model}_requantize_slow(acc, (uint32_t)m7 >> 7, f + 17, zero_point, lo, hi);
    return ${model}_saturate(t >> f, lo, hi);
}

static inline int32_t ${model}_requantize_fast(int32_t acc, uint32_t mult, int shift, int k, int wide,
                                              int fold, int32_t zero_point, int32_t lo, int32_t hi)
{
    if (fold)
        return ${model}_requantize_folded(acc, (int32_t)(mult << 7), ${model}_fold_bias(shift, zero_point),
                                          shift - 17, k, wide, zero_point, lo, hi);
    if (wide && (uint32_t)acc + (UINT32_C(1) << 23) >= (UINT32_C(1) << 24))
        return ${model}_requantize_slow(acc, mult, shift, zero_point, lo, hi);
    const int32_t t = (int32_t)(((int64_t)(acc * 256) * (int32_t)(mult << 7)) >> 32);
    const int f = shift - 17;
    const uint32_t u = (uint32_t)t << (32 - f);
    if ((((u ^ UINT32_C(0x80000000)) + (UINT32_C(1) << k)) >> (k + 1)) == 0u)
        return ${model}_requantize_slow(acc, mult, shift, zero_point, lo, hi);
    return ${model}_saturate((t >> f) + (int32_t)(u >> 31) + zero_point, lo, hi);
}
#endif
</%def>\
<%def name="q15(model)">\
#ifndef ${model.upper()}_Q15_DEFINED
#define ${model.upper()}_Q15_DEFINED
/* Pairs of int16 in a 32-bit word (the low half first) and the DSP extension's
 * instructions on them: ACLE intrinsics where the compiler has them (Cortex-M4/M7,
 * ARMv7-A), the same arithmetic in C elsewhere. */
#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif
static inline uint32_t ${model}_load_pair(const void *p)
{
    uint32_t v;
    memcpy(&v, p, 4u); /* one LDR where unaligned loads are allowed */
    return v;
}

/* acc + a.lo * b.lo + a.hi * b.hi */
static inline int32_t ${model}_smlad(uint32_t a, uint32_t b, int32_t acc)
{
#if defined(__ARM_FEATURE_DSP)
    return __smlad((int32_t)a, (int32_t)b, acc);
#else
    return acc + (int32_t)(int16_t)(a & 0xffffu) * (int16_t)(b & 0xffffu)
           + (int32_t)(int16_t)(a >> 16) * (int16_t)(b >> 16);
#endif
}
#endif
</%def>\
<%def name="round_even(model)">\
#ifndef ${model.upper()}_ROUND_EVEN_DEFINED
#define ${model.upper()}_ROUND_EVEN_DEFINED
/* v (|v| < 2^22) rounded to the nearest integer, ties to even, as onnxruntime rounds */
static inline int32_t ${model}_round_even(float v)
{
    return (int32_t)((v + 12582912.0f) - 12582912.0f);
}
#endif
</%def>\
<%def name="qlinear_add(model)">\
${round_even(model)}
#ifndef ${model.upper()}_QLINEAR_ADD_DEFINED
#define ${model.upper()}_QLINEAR_ADD_DEFINED
/* onnxruntime's QLinearAdd of two codes (its x86 kernel, as qadd computes it):
 * round_half_even(clamp(a * ra + (b * rb + offset))) with fused multiply-adds */
static inline int32_t ${model}_qlinear_add(float a, float b, float ra, float rb, float offset,
                                          float lo, float hi)
{
    float v = fmaf(a, ra, fmaf(b, rb, offset));
    v = v < lo ? lo : v > hi ? hi : v;
    return ${model}_round_even(v);
}
#endif
</%def>\
<%def name="conv_helpers(model, p)">\
% if p.get('fast'):
${requantize_fast(model)}
% elif not p.get('raw', False):
${requantize(model)}
% endif
% if p.get('q15', False):
${q15(model)}
% endif
% if p.get('residual'):
${qlinear_add(model)}
% endif
</%def>\
<%def name="conv_output(model, p, acc, oc, r_index, folded=None)">\
<%
    # one output of a quantized convolution, as a C expression: the int32 sum itself
    # (ConvInteger), or requantized (one multiplier and shift, or per-channel tables;
    # ``folded``: the names of the kernel's locals (m7, c, f) of the channel, for
    # requantize_folded), then with a fused QLinearAdd's residual r (see
    # passes/fuse_residual_qadd.py)
    if p.get('raw', False):
        e = acc
    elif folded:
        m7, c, f = folded
        e = (f"{model}_requantize_folded({acc}, {m7}, {c}, {f}, {p['fast']}, {int(p['wide'])}, "
             f"{p['y_zp']}, {p['lo']}, {p['hi']})")
    else:
        mult, shift = (f"(uint32_t)mult[{oc}]", f"shift[{oc}]") if p['mult'] is None \
            else (f"{p['mult']}u", p['shift'])
        window = f"{p['fast']}, {int(p['wide'])}, {int(p['fold'])}, " if p.get('fast') else ""
        fn = "requantize_fast" if window else "requantize"
        e = f"{model}_{fn}({acc}, {mult}, {shift}, {window}{p['y_zp']}, {p['lo']}, {p['hi']})"
    q = p.get('residual')
    if q:
        code = q.get('code', 0)  # onnxruntime's uint8 codes of an int8 group (lowering.U8_OFFSET)
        a, b = (f"(float)({e} + {code})", f"(float)(r[{r_index}] + {code})") if code \
            else (f"(float){e}", f"(float)r[{r_index}]")
        if not q['conv_first']:
            a, b = b, a
        e = (f"{model}_qlinear_add({a}, {b}, {c_float(q['ra'])}, {c_float(q['rb'])}, "
             f"{c_float(q['offset'])}, {c_float(q['lo'])}, {c_float(q['hi'])})")
        e = f"({e} - {code})" if code else e
%>\
${e}\
</%def>\

<%doc>
  Helpers of the integer kernels, defined once per generated file (hence the guards),
  and the expression of one convolution output (qconv2d and its in-place variants).
</%doc>\
<%namespace name="fi" file="/kernels/lib/float32_int.mako"/>\
<%!
    def folded(p):
        """Whether a kernel keeps each channel's constants of the folded requantization in
        locals (fold_locals): the fast path, shifts the fold allows, per-channel tables."""
        return bool(p.get('fast') and p.get('fold') and p['mult'] is None)

    def scaled(p):
        """Whether a kernel may hand conv_output its sums times 256 (``scaled``): folded
        and every sum below 2^23 (passes/accumulator_bits.py), so that the product fits."""
        return folded(p) and not p['wide']

    def int_add(q, float_unit):
        """A fused QLinearAdd's integer steps (lib/float32_int.mako), where the core has no
        float unit and quant.qlinear_add_fixed found them (else its float32 steps)."""
        return None if float_unit else q.get('fixed')
%>\
<%def name="requantize(model)">\
${fi.round_shift(model)}
#ifndef ${model.upper()}_REQUANTIZE_DEFINED
#define ${model.upper()}_REQUANTIZE_DEFINED
/* zero_point + clamp(round_half_even(float32(float32(acc) * scale))), with
 * scale = mult * 2^-shift: onnxruntime's float32 requantization, in integers only. */
static inline int32_t ${model}_requantize(int32_t acc, uint32_t mult, int shift, int32_t zero_point,
                                         int32_t lo, int32_t hi)
{
    const uint64_t u = ${model}_round24(${model}_round24(acc < 0 ? (uint64_t)0 - (uint64_t)(int64_t)acc
                                                              : (uint64_t)acc) * mult);
    const uint64_t q = ${model}_round_shift(u, shift);
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
#elif defined(__ARM_ARCH_6M__)
    /* no 32x32->64 multiply: four of 16x16 bits (Hacker's Delight's mulhs), not a call */
    const int32_t ah = a >> 16, bh = b >> 16;
    const uint32_t al = (uint32_t)a & 0xFFFFu, bl = (uint32_t)b & 0xFFFFu;
    const int32_t t = ah * (int32_t)bl + (int32_t)((al * bl) >> 16);
    const int32_t w = (t & 0xFFFF) + (int32_t)al * bh;
    return ah * bh + (t >> 16) + (w >> 16) + c;
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
 * c = zero_point * 2^f + 2^(f - 1) + 2^(k + f - 32) (${model}_fold_bias), so t >> f is the
 * rounded result plus the zero point and t's low f bits are the fraction plus one half
 * plus 2^(k + f - 32): a tie window of 2^k either side of 0 in u = t * 2^(32 - f) moves to
 * [0, 2^(k + 1)), one unsigned shift to test, and outside it the added bit carries into
 * nothing (quant.fast_requant_window makes k + f >= 32). |t| < 2^30 + 2^29 + 2^21, no
 * overflow. m7 = mult * 2^7, f = shift - 17: a kernel computes them once per output
 * channel. wide: |acc| may reach 2^23 (else passes/accumulator_bits.py proved it cannot,
 * and the test goes). */
static inline int32_t ${model}_fold_bias(int shift, int32_t zero_point, int k)
{
    /* (2 * zero_point + 1) * 2^(shift - 18) + 2^(shift + k - 49), one shift of a constant */
    return (int32_t)((((uint32_t)(2 * zero_point + 1) << (31 - k)) + 1u) << (shift + k - 49));
}

/* requantize_folded of acc256 = acc * 256: a kernel that sums with its weights (and
 * bias) times 256 saves the multiply (|acc| < 2^23: the product fits) */
static inline int32_t ${model}_requantize_scaled(int32_t acc256, int32_t m7, int32_t c, int f, int k,
                                                int32_t zero_point, int32_t lo, int32_t hi)
{
    const int32_t t = ${model}_mulhi_add(acc256, m7, c);
    if (((uint32_t)t << (32 - f)) >> (k + 1) == 0u)
        return ${model}_requantize_slow(acc256 / 256, (uint32_t)m7 >> 7, f + 17, zero_point, lo, hi);
    return ${model}_saturate(t >> f, lo, hi);
}

static inline int32_t ${model}_requantize_folded(int32_t acc, int32_t m7, int32_t c, int f, int k, int wide,
                                                int32_t zero_point, int32_t lo, int32_t hi)
{
    if (wide && (uint32_t)acc + (UINT32_C(1) << 23) >= (UINT32_C(1) << 24))
        return ${model}_requantize_slow(acc, (uint32_t)m7 >> 7, f + 17, zero_point, lo, hi);
    return ${model}_requantize_scaled(acc * 256, m7, c, f, k, zero_point, lo, hi);
}

static inline int32_t ${model}_requantize_fast(int32_t acc, uint32_t mult, int shift, int k, int wide,
                                              int fold, int32_t zero_point, int32_t lo, int32_t hi)
{
    if (fold)
        return ${model}_requantize_folded(acc, (int32_t)(mult << 7), ${model}_fold_bias(shift, zero_point, k),
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
<%def name="requantize_folded_x4(model)">\
${requantize_fast(model)}
#ifndef ${model.upper()}_REQUANTIZE_FOLDED_X4_DEFINED
#define ${model.upper()}_REQUANTIZE_FOLDED_X4_DEFINED
#include <arm_mve.h>
/* ${model}_requantize_folded of 4 sums on Helium, each lane its own channel's m7, c and
 * f (fold_locals): VMULH is SMMLA's multiply. *fine has a lane's predicate bits clear
 * where that lane is within the tie window (or |acc| >= 2^23, wide): the caller takes
 * the exact path for those. */
static inline int32x4_t ${model}_requantize_folded_x4(int32x4_t acc, int32x4_t m7, int32x4_t c, int32x4_t f,
                                                      int k, int wide, int32_t lo, int32_t hi,
                                                      mve_pred16_t *fine)
{
    const int32x4_t t = vaddq_s32(vmulhq_s32(vshlq_n_s32(acc, 8), m7), c);
    const uint32x4_t u = vshlq_u32(vreinterpretq_u32_s32(t), vsubq_s32(vdupq_n_s32(32), f));
    *fine = vcmphiq_n_u32(u, (UINT32_C(2) << k) - 1u);
    if (wide)
        *fine &= vcmpltq_n_s32(vqabsq_s32(acc), INT32_C(1) << 23);
    return vminq_s32(vmaxq_s32(vshlq_s32(t, vnegq_s32(f)), vdupq_n_s32(lo)), vdupq_n_s32(hi));
}
#endif
</%def>\
<%def name="q15(model)">\
#ifndef ${model.upper()}_Q15_DEFINED
#define ${model.upper()}_Q15_DEFINED
/* Pairs of int16 in a 32-bit word (the low half first) and the DSP extension's
 * instructions on them: ACLE intrinsics where the compiler has them (Cortex-M4/M7,
 * ARMv7-A), the same arithmetic in C elsewhere. */
#if defined(__ARM_FEATURE_DSP) || defined(__ARM_FEATURE_SIMD32)
#include <arm_acle.h>
#endif
static inline uint32_t ${model}_load_pair(const void *p)
{
    uint32_t v;
    memcpy(&v, p, 4u); /* one LDR where unaligned loads are allowed */
    return v;
}

/* the two words at *p (4-byte aligned), then *p past them: one LDRD with writeback on
 * Thumb-2 (gcc splits the loads and computes each address) */
static inline void ${model}_load_pairs(const int16_t **p, uint32_t *lo, uint32_t *hi)
{
#if defined(__ARM_FEATURE_DSP) && defined(__thumb2__)
    __asm__("ldrd %0, %1, [%2], #8" : "=r"(*lo), "=r"(*hi), "+r"(*p) : "m"(*(const int16_t(*)[4])*p));
#else
    memcpy(lo, *p, 4u);
    memcpy(hi, *p + 2, 4u);
    *p += 4;
#endif
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

% for sign, t in (("s", "int8_t"), ("u", "uint8_t")):
/* four ${t} of s minus the zero point (zz: its negation in both halves), as int16 at d,
 * with the SIMD32 extension: ${sign}xtab16 widens bytes 0 and 2, then 1 and 3, adding zz to
 * each half; pkhbt / pkhtb put them back in order */
static inline void ${model}_widen4_${sign}8(int16_t *d, const ${t} *s, uint32_t zz)
{
#if defined(__ARM_FEATURE_SIMD32)
    uint32_t v, e, o, lo, hi;
    memcpy(&v, s, 4u);
    __asm__("${sign}xtab16 %[e], %[zz], %[v]\n\t"
            "${sign}xtab16 %[o], %[zz], %[v], ror #8\n\t"
            "pkhbt %[lo], %[e], %[o], lsl #16\n\t"
            "pkhtb %[hi], %[o], %[e], asr #16"
            : [e] "=&r"(e), [o] "=&r"(o), [lo] "=&r"(lo), [hi] "=r"(hi)
            : [zz] "r"(zz), [v] "r"(v));
    memcpy(d, &lo, 4u);
    memcpy(d + 2, &hi, 4u);
#else
    (void)d, (void)s, (void)zz;
#endif
}

/* count ${t} of s minus the zero point, as int16 at d: eight per step with SIMD32 */
static inline void ${model}_widen_${sign}8(int16_t *d, const ${t} *s, int count, int32_t zero_point)
{
    int i = 0;
#if defined(__ARM_FEATURE_SIMD32)
    const uint32_t zz = (uint32_t)(uint16_t)(-zero_point) * 0x10001u;
    for (const int end = count & ~7; i < end; i += 8) {
        ${model}_widen4_${sign}8(d + i, s + i, zz);
        ${model}_widen4_${sign}8(d + i + 4, s + i + 4, zz);
    }
    if (count & 4) {
        ${model}_widen4_${sign}8(d + i, s + i, zz);
        i += 4;
    }
#endif
    for (; i < count; ++i)
        d[i] = (int16_t)((int32_t)s[i] - zero_point);
}

#if defined(__ARM_FEATURE_SIMD32)
/* four pixels of two channels (the words v0 and v1 of ${t}), minus the zero point (zz:
 * its negation in both halves), as each pixel's pair of channels: q[j] = (v0[j], v1[j]) */
static inline void ${model}_channel_pairs_${sign}8(uint32_t v0, uint32_t v1, uint32_t zz, uint32_t q[4])
{
    uint32_t e0, o0, e1, o1;
    __asm__("${sign}xtab16 %[e0], %[zz], %[v0]\n\t"
            "${sign}xtab16 %[o0], %[zz], %[v0], ror #8\n\t"
            "${sign}xtab16 %[e1], %[zz], %[v1]\n\t"
            "${sign}xtab16 %[o1], %[zz], %[v1], ror #8"
            : [e0] "=&r"(e0), [o0] "=&r"(o0), [e1] "=&r"(e1), [o1] "=r"(o1)
            : [zz] "r"(zz), [v0] "r"(v0), [v1] "r"(v1));
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(q[0]) : "r"(e0), "r"(e1));
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(q[1]) : "r"(o0), "r"(o1));
    __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(q[2]) : "r"(e1), "r"(e0));
    __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(q[3]) : "r"(o1), "r"(o0));
}
#endif
% endfor
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
% if p.get('residual') and int_add(p['residual'], float_unit):
${fi.qlinear_add(model)}
% elif p.get('residual'):
${qlinear_add(model)}
% endif
</%def>\
<%def name="fold_locals(model, p, oc, row)">\
<%doc> Channel ``oc``'s constants of the folded requantization, locals m7<row>, c<row>,
  f<row> for conv_output (nothing unless ``folded(p)``). </%doc>\
% if folded(p):
                const int32_t m7${row} = (int32_t)((uint32_t)mult[${oc}] << 7), f${row} = shift[${oc}] - 17,
                              c${row} = ${model}_fold_bias(shift[${oc}], ${p['y_zp']}, ${p['fast']});
% endif
</%def>\
<%def name="conv_output(model, p, acc, oc, r_index, row=None, times256=False)">\
<%
    # one output of a quantized convolution, as a C expression: the int32 sum itself
    # (ConvInteger), or requantized (one multiplier and shift, or per-channel tables;
    # ``row``: the suffix of the kernel's fold_locals of the channel, where folded(p);
    # ``times256``: acc is the sum times 256, where scaled(p)), then with a fused
    # QLinearAdd's residual r (see passes/fuse_residual_qadd.py)
    assert not times256 or (scaled(p) and row is not None)
    if p.get('raw', False):
        e = acc
    elif row is not None and folded(p):
        m7, c, f = f"m7{row}", f"c{row}", f"f{row}"
        e = (f"{model}_requantize_scaled({acc}, {m7}, {c}, {f}, {p['fast']}, " if times256 else
             f"{model}_requantize_folded({acc}, {m7}, {c}, {f}, {p['fast']}, {int(p['wide'])}, ")
        e += f"{p['y_zp']}, {p['lo']}, {p['hi']})"
    else:
        mult, shift = (f"(uint32_t)mult[{oc}]", f"shift[{oc}]") if p['mult'] is None \
            else (f"{p['mult']}u", p['shift'])
        window = f"{p['fast']}, {int(p['wide'])}, {int(p['fold'])}, " if p.get('fast') else ""
        fn = "requantize_fast" if window else "requantize"
        e = f"{model}_{fn}({acc}, {mult}, {shift}, {window}{p['y_zp']}, {p['lo']}, {p['hi']})"
    q = p.get('residual')
    if q:
        code = q.get('code', 0)  # onnxruntime's uint8 codes of an int8 group (lowering.U8_OFFSET)
        fx = int_add(q, float_unit)
        if fx:  # the codes made unsigned (fx['bias']): their products fit 32 bits
            a, b = (f"(uint32_t)({v} + {code + fx['bias']})" for v in (e, f"r[{r_index}]"))
        elif code:
            a, b = f"(float)({e} + {code})", f"(float)(r[{r_index}] + {code})"
        else:
            a, b = f"(float){e}", f"(float)r[{r_index}]"
        if not q['conv_first']:
            a, b = b, a
        if fx:
            t = (f"{model}_qadd_term({b}, {fx['mb']}u, {fx['sb']}, "
                 f"{c_literal(fx['cb'] + fx['offset'], 'int64')})")
            e = (f"{model}_qadd_code({a}, {fx['ma']}u, {fx['sa']}, {c_literal(fx['ca'], 'int64')}, {t}, "
                 f"{fx['f']}, {q['lo']}, {q['hi']})")
        else:
            e = (f"{model}_qlinear_add({a}, {b}, {c_float(q['ra'])}, {c_float(q['rb'])}, "
                 f"{c_float(q['offset'])}, {c_float(q['lo'])}, {c_float(q['hi'])})")
        e = f"({e} - {code})" if code else e
%>\
${e}\
</%def>\

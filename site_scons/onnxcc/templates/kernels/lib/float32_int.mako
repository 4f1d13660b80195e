<%doc>
  float32 rounding in integers: onnxruntime's float32 steps of the int8 kernels, computed
  exactly with integer instructions. The requantization uses them on every core; the
  QLinearAdd, QLinearMul and QLinearSoftmax steps use them on cores without a float unit
  (Cpu.float_unit false: Cortex-M0+/M3, RV32IMAC), so that an int8 model there makes no
  soft-float call and its codes stay bit-identical to onnxruntime's (docs/int8.md,
  "Cores without a float unit").
</%doc>\
<%def name="round_shift(model)">\
#ifndef ${model.upper()}_ROUND_SHIFT_DEFINED
#define ${model.upper()}_ROUND_SHIFT_DEFINED
/* u / 2^shift (0 < shift < 64) rounded to the nearest integer, ties to even */
static inline uint64_t ${model}_round_shift(uint64_t u, int shift)
{
    const uint64_t half = UINT64_C(1) << (shift - 1), rem = u & ((half << 1) - 1u);
    const uint64_t q = u >> shift;
    return q + (rem > half || (rem == half && (q & 1u)));
}

/* u rounded to 24 significant bits, ties to even: what storing it in a float32 does */
static inline uint64_t ${model}_round24(uint64_t u)
{
    if (u < (UINT64_C(1) << 24))
        return u;
    const int r = 40 - __builtin_clzll(u); /* bits below the 24 kept */
    return ${model}_round_shift(u, r) << r;
}
#endif
</%def>\
<%def name="qlinear_add(model)">\
${round_shift(model)}
#ifndef ${model.upper()}_QLINEAR_ADD_INT_DEFINED
#define ${model.upper()}_QLINEAR_ADD_INT_DEFINED
/* QLinearAdd's float32 steps (qhelpers' qlinear_add, qbinary's add) in fixed point: every
 * value a multiple of 2^-f held exactly in an int64 (quant.qlinear_add_fixed chose f so
 * that the ratios and the offset are, and every sum stays below 2^62), each rounded to
 * float32 where the float code rounds it. A code u (made unsigned by its constant c)
 * times a ratio m * 2^(s - f) is exact: u * m < 2^32. */
static inline int64_t ${model}_rn32(int64_t v)
{
    return v < 0 ? -(int64_t)${model}_round24((uint64_t)0 - (uint64_t)v) : (int64_t)${model}_round24((uint64_t)v);
}

/* float32(u * ratio + c): the inner fmaf of the add, or the product alone (c the code's) */
static inline int64_t ${model}_qadd_term(uint32_t u, uint32_t m, int s, int64_t c)
{
    return ${model}_rn32((int64_t)((uint64_t)(u * m) << s) + c);
}

/* clamp(round_half_even(float32(v) * 2^-f)) (lo, hi integers) */
static inline int32_t ${model}_fixed_code(int64_t v, int f, int32_t lo, int32_t hi)
{
    v = ${model}_rn32(v);
    const uint64_t q = ${model}_round_shift(v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, f);
    const int64_t r = v < 0 ? -(int64_t)q : (int64_t)q;
    return r < lo ? lo : r > hi ? hi : (int32_t)r;
}

/* the outer fmaf, float32(u * ratio + c + t), its clamp and rounding */
static inline int32_t ${model}_qadd_code(uint32_t u, uint32_t m, int s, int64_t c, int64_t t, int f,
                                         int32_t lo, int32_t hi)
{
    return ${model}_fixed_code((int64_t)((uint64_t)(u * m) << s) + c + t, f, lo, hi);
}
#endif
</%def>\
<%def name="qlinear_mul(model)">\
${qlinear_add(model)}
#ifndef ${model.upper()}_QLINEAR_MUL_INT_DEFINED
#define ${model.upper()}_QLINEAR_MUL_INT_DEFINED
/* QLinearMul's float32 steps (qbinary's mul) in fixed point, as qlinear_add's: the
 * product of the codes' differences (exact in a float32) times the ratio m * 2^(s - f),
 * rounded to float32, plus the zero point z * 2^-f, rounded, clamped and rounded */
static inline int32_t ${model}_qmul_code(int32_t product, uint32_t m, int s, int64_t z, int f,
                                         int32_t lo, int32_t hi)
{
    const int64_t p = (int64_t)((uint64_t)((int64_t)product * m) << s);
    return ${model}_fixed_code(${model}_rn32(p) + z, f, lo, hi);
}
#endif
</%def>\
<%def name="softmax(model)">\
${round_shift(model)}
#ifndef ${model.upper()}_F32_DEFINED
#define ${model.upper()}_F32_DEFINED
/* Positive float32 values as m * 2^e (m < 2^24; m == 0: zero), added, multiplied and
 * divided with float32's rounding (ties to even, subnormals included): QLinearSoftmax's
 * float steps on a core without a float unit. */
static inline void ${model}_f32_decode(uint32_t bits, uint32_t *m, int *e)
{
    const int x = (int)((bits >> 23) & 0xFFu);
    *m = (bits & 0x7FFFFFu) | (x ? 0x800000u : 0u);
    *e = (x ? x : 1) - 150;
}

/* m * 2^*e, plus less than one unit of its last bit where sticky, rounded to float32 (the
 * value's exponent at least -149 - 63 and, where sticky, 64-bit m at least 2^39) */
static inline uint32_t ${model}_f32_round(uint64_t m, int *e, int sticky)
{
    if (m == 0u)
        return 0u;
    int drop = 40 - __builtin_clzll(m); /* bits beyond 24 */
    if (*e + drop < -149)
        drop = -149 - *e; /* a subnormal keeps the bits from 2^-149 up */
    if (drop <= 0)
        return (uint32_t)m;
    const uint64_t half = UINT64_C(1) << (drop - 1), rem = m & ((half << 1) - 1u);
    uint64_t q = m >> drop;
    q += rem > half || (rem == half && (sticky || (q & 1u)));
    *e += drop;
    if (q >> 24) { /* rounded up to 2^24 */
        q >>= 1;
        ++*e;
    }
    return (uint32_t)q;
}

/* (*am, *ae) += (m, e) */
static inline void ${model}_f32_add(uint32_t *am, int *ae, uint32_t m, int e)
{
    if (m == 0u)
        return;
    uint32_t big = *am, small = m;
    int be = *ae, se = e;
    if (big == 0u || e > be) {
        big = m;
        small = *am;
        be = e;
        se = *ae;
    }
    /* up to 39 bits apart the sum is exact in 63 bits; further, the smaller one's bits
     * lie below the rounding bit and only say whether the sum is above the truncation */
    const int d = small ? be - se : 0, s = d < 39 ? d : 39, cut = d - s;
    const uint64_t v = ((uint64_t)big << s) + (cut < 32 ? small >> cut : 0u);
    const int sticky = cut >= 32 ? small != 0u : (small & ((UINT32_C(1) << cut) - 1u)) != 0u;
    *ae = be - s;
    *am = ${model}_f32_round(v, ae, sticky);
}

/* round_half_even(float32(float32(a * b) / d)) for a, b, d positive (d not zero); 2^30
 * where that is 2^23 or more (as any code's clamp reads it) */
static inline int32_t ${model}_f32_mul_div_round(uint32_t am, int ae, uint32_t bm, int be, uint32_t dm, int de)
{
    int pe = ae + be;
    uint32_t pm = ${model}_f32_round((uint64_t)am * bm, &pe, 0);
    if (pm == 0u)
        return 0;
    const int pz = __builtin_clz(pm) - 8, dz = __builtin_clz(dm) - 8; /* to 2^23 <= m < 2^24 */
    pm <<= pz;
    dm <<= dz;
    int qe = (pe - pz) - (de - dz) - 40;
    if (qe < -149 - 24)
        return 0; /* below 2^-130: rounds to 0 whatever its float32 */
    const uint64_t num = (uint64_t)pm << 40;
    const uint32_t qm = ${model}_f32_round(num / dm, &qe, num % dm != 0u);
    if (qe >= 0)
        return INT32_C(1) << 30;
    return qe < -40 ? 0 : (int32_t)${model}_round_shift(qm, -qe);
}
#endif
</%def>\

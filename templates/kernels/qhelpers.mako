<%doc>
  Helpers of the integer kernels, defined once per generated file (hence the guards).
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

<%doc>
  Float32 math functions without libm, written once with GCC vector extensions for every
  vector width: vm_<name>_v<L> works on a vector of L floats (vm_f<L>), and vm_<name>_s,
  its one-lane form, on a float. Each <%def> below emits one function for L lanes (and at
  L == 1 its float wrapper); codegen/vmath.py emits, at the top of a kernels file, the
  ones its kernels call and what those call (types first). Accuracy (tests/test_vmath.py):
  a few ulp over the whole float range, infinities and NaN included.

  exp: x = n ln2 + r (n = round(x / ln2), ln2 in two parts: n ln2hi is exact), expm1(r)
  by a degree-6 polynomial (coefficients fitted minimax to float32 by Lawson's algorithm
  on [-ln2/2, ln2/2]: 0.07 ulp), then times 2^n built in the exponent bits (in two
  halves, so that results down in the denormals and up at the overflow are exact too).
  Two of these steps have an x86 instruction of their own, taken where the compiler's ISA
  macros say it exists: the reduction's low part by one fused multiply-add, the scaling
  by AVX-512's vscalefps (docs/speed.md, "Vector math on x86": a division stays a
  division, which measured faster than a refined reciprocal estimate). exp(x) for x <= 0
  (vm_exp_capped: sigmoid's, softplus's and exp's) is written with x86 intrinsics
  outright: a vmaxps clamp that lets NaN through, n rounded as a float, the polynomial
  as one Horner chain of fused multiply-adds.
  log: x = 2^e m, m in [sqrt(1/2), sqrt(2)), log(m) = f - f^2/2 + f^3 Q(f), f = m - 1
  exact. erf: x P(x^2) below 0.875, else 1 - exp(R(|x|)) with R ~ log(erfc). The portable
  clamps map NaN to a number (no NaN reaches a float -> int conversion) and a last select
  gives NaN back. Nothing here relies on a rounding trick that -funsafe-math-optimizations
  could reassociate away (armv7a builds with it).

  The functions take and return vectors of L floats by value. Compiled without the ISA
  those vectors are written for, GCC warns (-Wpsabi: "AVX vector return without AVX
  enabled changes the ABI") and the code loses its vectors, so every build of a kernels
  file compiles with the target's ISA: a target build with its cflags, a toolchain="env"
  build with the target's isa_cflags put before the tree's own flags (x86; ARM trees
  name their FPU themselves), and flags that turn it off again are refused in one line
  (site_tools/onnxcc.py, target.check_env_flags). A firmware that compiles the C itself
  must pass <NAME>_TARGET_CFLAGS.
</%doc>

## The one-lane vector forms always go inline: their float wrappers (vm_<name>_s, whose
## argument and result pass in registers) are the functions a scalar kernel calls.
<%def name="inline(L)">static inline${' __attribute__((always_inline))' if L == 1 else ''}</%def>

## x86's vector types and intrinsics prefixes by lanes: a step that has an instruction of
## its own there (vm_scaled's AVX-512 vscalefps, vm_expq's fused multiply-add) tests the
## compiler's ISA macros (the target's cflags) and otherwise takes the portable code.
<%! X86 = {4: ("__m128", "_mm"), 8: ("__m256", "_mm256"), 16: ("__m512", "_mm512")} %>
<%def name="avx512(L)">${'defined(__AVX512F__)' if L == 16 else 'defined(__AVX512VL__)'}</%def>
<%def name="x86_header(L)">\
% if L in X86:
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif
% endif
</%def>

<%def name="types(L)">\
${x86_header(L)}\
typedef float vm_f${L} __attribute__((vector_size(${4 * L})));
typedef int vm_i${L} __attribute__((vector_size(${4 * L})));
## vm_sel and vm_pow2 are macros, the smallest C (first made macros against -Wpsabi, before
## toolchain="env" builds got the target's ISA flags: see the top); their arguments are
## pure, evaluated twice at most
#define vm_sel_v${L}(m, a, b) ((vm_f${L})(((m) & (vm_i${L})(a)) | (~(m) & (vm_i${L})(b))))
#define vm_pow2_v${L}(n) ((vm_f${L})(((n) + 127) << 23))  /* 2^n, n in [-126, 127] */
</%def>

## The float form of a function of L == 1 (an argument x, then `params`).
<%def name="scalar(name, params=())">\
static inline float vm_${name}_s(float x${''.join(f', float {p}' for p in params)})
{
    return vm_${name}_v1((vm_f1){x}${''.join(f', {p}' for p in params)})[0];
}
</%def>

<%def name="expq(L)">\
/* expm1(r), where x = n ln2 + r; x in [-104, 89]. r = h - n lo, h = x - n hi exact (n hi
   is exact); the polynomial runs on h and the n lo part is a factor: exp(-n lo) =
   1 - n lo + (n lo)^2 / 2 (|n lo| < 2.2e-4) -- a sum h - n lo would be one product that a
   reassociating compiler may merge into x - n ln2 (hi + lo rounded), 60 ulp off. Where
   x86 has fused multiply-adds, r is one (an intrinsic, which no reassociation reaches)
   and the polynomial runs on r: 4 operations fewer */
${inline(L)} vm_f${L} vm_expq_v${L}(vm_f${L} x, vm_i${L} *n)
{
    *n = __builtin_convertvector(x * 1.44269504f + 151.5f, vm_i${L}) - 151;  /* floor(x / ln2 + 1/2) */
    const vm_f${L} k = __builtin_convertvector(*n, vm_f${L});
    const vm_f${L} h = x - k * 0.693145752f;
% if L in X86:
<% m, p = X86[L] %>\
#if ${avx512(L) if L == 16 else 'defined(__FMA__)'}
    const vm_f${L} r = (vm_f${L})${p}_fnmadd_ps((${m})k, ${p}_set1_ps(1.42860677e-6f), (${m})h);
    return ${expm1_poly('r')};
#else
% endif
    const vm_f${L} q = ${expm1_poly('h')};
    const vm_f${L} l = k * 1.42860677e-6f;
    return q - l * (1.0f + q) * (1.0f - 0.5f * l);  /* (1 + q) exp(-l) - 1 */
% if L in X86:
#endif
% endif
}
</%def>

## expm1(r) for r in [-ln2/2, ln2/2] (a little more), the minimax polynomial
<%def name="expm1_poly(r)">${r} + ${r} * ${r} * (0.49999994f + ${r} * (0.16666521f + ${r} * (0.04166839f
                                    + ${r} * (0.00836871f + ${r} * 0.0013814612f))))</%def>

<%def name="exp(L)">\
${inline(L)} vm_f${L} vm_exp_v${L}(vm_f${L} x)
{
    return vm_exp_capped_v${L}(vm_sel_v${L}(x > 89.0f, (vm_f${L}){0} + 89.0f, x));  /* (NaN stays) */
}
% if L == 1:
${scalar('exp')}\
% endif
</%def>

<%def name="exp_reduce(L, scale='')">\
## x86 with FMA: k = round(x / ln2) (a float), r = x - k ln2 by two fused multiply-adds,
## q1 = exp(r) (times `scale`, a power of two: every coefficient times it, exact)
<% m, p = X86[L] %>\
    const ${m} c = ${p}_max_ps(${p}_set1_ps(-104.0f), (${m})x);
    const ${m} k = ${p}_${'roundscale' if L == 16 else 'round'}_ps(${p}_mul_ps(c, ${p}_set1_ps(1.44269504f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const ${m} h = ${p}_fnmadd_ps(k, ${p}_set1_ps(0.693145752f), c);
    const vm_f${L} r = (vm_f${L})${p}_fnmadd_ps(k, ${p}_set1_ps(1.42860677e-6f), h);
<% s_ = f' * {scale}' if scale else '' %>\
    const ${m} q1 = (${m})(1.0f${s_} + r * (1.0f${s_} + r * (0.49999994f${s_} + r * (0.16666521f${s_} + r * (0.04166839f${s_}
                                    + r * (0.00836871f${s_} + r * 0.0013814612f${s_}))))));
</%def>

<%def name="exp_capped(L)">\
/* exp(x) for x <= 89 or NaN (exp(-|x|) needs no upper clamp) */
${inline(L)} vm_f${L} vm_exp_capped_v${L}(vm_f${L} x)
{
% if L in X86:
<% m, p = X86[L] %>\
#if ${avx512(L) if L == 16 else 'defined(__FMA__)'}
    /* vmaxps returns its second operand where either is NaN: NaN passes the clamp, and
       the rounding (n = round(x / ln2) as a float), the fused multiply-adds and the
       scaling keep it -- no select */
${exp_reduce(L)}\
% if L < 16:
#if ${avx512(L)}
% endif
    return (vm_f${L})${p}_scalef_ps(q1, k);
% if L < 16:
#else
    /* vm_scaled's two halves by integer intrinsics: vcvtps2dq makes NaN 0x80000000, whose
       half shifted into the exponent is 0, so s = q1 stays NaN and the product NaN */
    const ${m}i n = ${p}_cvtps_epi32(k);
    const ${m}i half = ${p}_srai_epi32(n, 1);
    const ${m} s = ${p}_castsi${32 * L}_ps(${p}_add_epi32(${p}_castps_si${32 * L}(q1), ${p}_slli_epi32(half, 23)));
    const ${m}i rest = ${p}_add_epi32(${p}_sub_epi32(n, half), ${p}_set1_epi32(127));
    return (vm_f${L})${p}_mul_ps(s, ${p}_castsi${32 * L}_ps(${p}_slli_epi32(rest, 23)));
#endif
% endif
#else
% endif
    const vm_f${L} c = vm_sel_v${L}(x > -104.0f, x, (vm_f${L}){0} - 104.0f);  /* NaN -> -104 */
    vm_i${L} n;
    const vm_f${L} q = vm_expq_v${L}(c, &n);
    return vm_sel_v${L}(x == x, vm_scaled_v${L}(1.0f + q, n), x);
% if L in X86:
#endif
% endif
}
</%def>

<%def name="exp_neg(L)">\
/* exp(x) for x <= 0 or NaN (sigmoid's and softplus's exp(-|x|)). With AVX2 and no
   AVX-512 (no vscalefps), 2^n in one integer addition instead of vm_scaled's two halves:
   n is in [-150, 0], so exp(r) 2^64 (the polynomial's coefficients times 2^64, exact)
   times 2^n is a normal float whose exponent bits take n, and one product by 2^-64
   rounds it once into the denormals, as the halves do; vcvtps2dq makes NaN 0x80000000,
   whose n shifted into the exponent is 0: NaN stays */
${inline(L)} vm_f${L} vm_exp_neg_v${L}(vm_f${L} x)
{
% if L in (4, 8):
<% m, p = X86[L] %>\
#if defined(__FMA__) && !${avx512(L)}
${exp_reduce(L, '0x1p64f')}\
    const ${m}i n = ${p}_slli_epi32(${p}_cvtps_epi32(k), 23);
    return (vm_f${L})${p}_mul_ps(${p}_castsi${32 * L}_ps(${p}_add_epi32(${p}_castps_si${32 * L}(q1), n)),
                                 ${p}_set1_ps(0x1p-64f));
#else
% endif
    return vm_exp_capped_v${L}(x);
% if L in (4, 8):
#endif
% endif
}
</%def>

<%def name="scaled(L)">\
/* p 2^n = exp(x), p in [0.7, 1.42], n in [-150, 128]: 2^(n/2) in p's exponent bits (an
   integer addition, which no float reassociation can touch; p 2^(n/2) is a normal float),
   then one product by 2^(n - n/2): one rounding, so results in the denormals are exact,
   and above FLT_MAX the product is inf by itself -- no compare, no select. AVX-512's
   vscalefps computes p 2^n (n as a float: expq's k) with the same single rounding */
${inline(L)} vm_f${L} vm_scaled_v${L}(vm_f${L} p, vm_i${L} n)
{
% if L in X86:
<% m, pre = X86[L] %>\
#if ${avx512(L)}
    return (vm_f${L})${pre}_scalef_ps((${m})p, (${m})__builtin_convertvector(n, vm_f${L}));
#else
% endif
    const vm_i${L} half = n >> 1;
    return (vm_f${L})((vm_i${L})p + (half << 23)) * vm_pow2_v${L}(n - half);
% if L in X86:
#endif
% endif
}
</%def>

<%def name="expm1(L)">\
/* (2^n - 1) + 2^n q, and q itself when n = 0 (|x| < ln2 / 2) whatever a reassociation
   does to the sum; from n = 128 on (2^n overflows), exp(x) */
${inline(L)} vm_f${L} vm_expm1_v${L}(vm_f${L} x)
{
    vm_f${L} c = vm_sel_v${L}(x < 89.0f, x, (vm_f${L}){0} + 89.0f);  /* NaN -> 89 */
    c = vm_sel_v${L}(c > -18.0f, c, (vm_f${L}){0} - 18.0f);  /* expm1(-18) rounds to -1 */
    vm_i${L} n;
    const vm_f${L} q = vm_expq_v${L}(c, &n);
    const vm_i${L} top = n > 127;
    const vm_f${L} t = vm_pow2_v${L}(n + top);  /* (n = 128: 2^127) */
    vm_f${L} y = vm_sel_v${L}(top, vm_scaled_v${L}(1.0f + q, n), (t - 1.0f) + t * q);
    y = vm_sel_v${L}(n == 0, q, y);
    return vm_sel_v${L}(x == x, y, x);
}
% if L == 1:
${scalar('expm1')}\
% endif
</%def>

<%def name="sigmoid(L)">\
/* 1 / (1 + e), or e / (1 + e) for x < 0 (down into the denormals), e = exp(-|x|) */
${inline(L)} vm_f${L} vm_sigmoid_v${L}(vm_f${L} x)
{
    const vm_f${L} e = vm_exp_neg_v${L}((vm_f${L})((vm_i${L})x | ~0x7fffffff));
% if L in X86:
<% m, p = X86[L] %>\
    /* on x86 the numerator is e or 1 and one division rounds: a select fewer */
#if ${avx512(L)}
    const ${m} n = ${p}_mask_blend_ps(${p}_cmp_ps_mask((${m})x, ${p}_setzero_ps(), _CMP_LT_OQ), ${p}_set1_ps(1.0f), (${m})e);
    return (vm_f${L})n / (1.0f + e);
% if L < 16:
#elif defined(__FMA__)
    /* (x's sign bit: x = -0 gives e = 1, the same) */
    return (vm_f${L})${p}_blendv_ps(${p}_set1_ps(1.0f), (${m})e, (${m})x) / (1.0f + e);
% endif
#else
% endif
    const vm_f${L} r = 1.0f / (1.0f + e);
    return vm_sel_v${L}(x < 0.0f, e * r, r);
% if L in X86:
#endif
% endif
}
% if L == 1:
${scalar('sigmoid')}\
% endif
</%def>

<%def name="tanh(L)">\
/* sign(x) e / (e + 2), e = expm1(2 |x|); |x| > 9.5 gives 1 */
${inline(L)} vm_f${L} vm_tanh_v${L}(vm_f${L} x)
{
    vm_f${L} a = (vm_f${L})((vm_i${L})x & 0x7fffffff);
    a = vm_sel_v${L}(a > 9.5f, (vm_f${L}){0} + 9.5f, a);
    const vm_f${L} e = vm_expm1_v${L}(a + a);
    const vm_f${L} y = e / (e + 2.0f);
    return (vm_f${L})((vm_i${L})y | ((vm_i${L})x & ~0x7fffffff));
}
% if L == 1:
${scalar('tanh')}\
% endif
</%def>

<%def name="log1pf(L)">\
/* log(1 + f), f in [sqrt(1/2) - 1, sqrt(2) - 1] */
${inline(L)} vm_f${L} vm_log1pf_v${L}(vm_f${L} f)
{
    const vm_f${L} q = 0.3333333f + f * (-0.2500082f + f * (0.20001227f + f * (-0.16623357f
        + f * (0.1420176f + f * (-0.13160191f + f * (0.12761569f + f * -0.07634465f))))));
    return f + f * f * (f * q - 0.5f);
}
</%def>

<%def name="log(L)">\
${inline(L)} vm_f${L} vm_log_v${L}(vm_f${L} x)
{
    const vm_i${L} tiny = x < 1.17549435e-38f;  /* denormals (and the rest, fixed below) */
    const vm_i${L} i = (vm_i${L})vm_sel_v${L}(tiny, x * 8388608.0f, x);
    const vm_i${L} e = (i - 0x3f3504f3) >> 23;  /* m = x / 2^e in [sqrt(1/2), sqrt(2)) */
    const vm_f${L} f = (vm_f${L})(i - (e << 23)) - 1.0f;
    const vm_f${L} k = __builtin_convertvector(e - (tiny & 23), vm_f${L});
    vm_f${L} y = k * 0.693145752f + (vm_log1pf_v${L}(f) + k * 1.42860677e-6f);
    y = vm_sel_v${L}(x < __builtin_inff(), y, x);  /* +inf, NaN */
    return vm_sel_v${L}(x > 0.0f, y, vm_sel_v${L}(x == 0.0f, (vm_f${L}){0} - __builtin_inff(),
                                                   (vm_f${L}){0} + __builtin_nanf("")));
}
% if L == 1:
${scalar('log')}\
% endif
</%def>

<%def name="softplus(L)">\
/* max(x, 0) + log1p(u), u = exp(-|x|) in (0, 1]: log1p(u) = ln2 + log1p((u - 1) / 2)
   (exact argument) when u is over sqrt(2) - 1 */
${inline(L)} vm_f${L} vm_softplus_v${L}(vm_f${L} x)
{
    const vm_f${L} u = vm_exp_neg_v${L}((vm_f${L})((vm_i${L})x | ~0x7fffffff));
    const vm_i${L} big = u > 0.414213562f;
    const vm_f${L} f = vm_sel_v${L}(big, (u - 1.0f) * 0.5f, u);
    const vm_f${L} l = (vm_f${L})(big & (vm_i${L})((vm_f${L}){0} + 0.693147182f)) + vm_log1pf_v${L}(f);
    return (vm_f${L})((vm_i${L})x & (x > 0.0f)) + l;
}
% if L == 1:
${scalar('softplus')}\
% endif
</%def>

<%def name="erf(L)">\
${inline(L)} vm_f${L} vm_erf_v${L}(vm_f${L} x)
{
    const vm_f${L} a = (vm_f${L})((vm_i${L})x & 0x7fffffff);
    const vm_f${L} a2 = a * a;
    const vm_f${L} small = a * (1.1283791f + a2 * (-0.3761255f + a2 * (0.11282455f
        + a2 * (-0.026791463f + a2 * (0.0050321813f + a2 * -0.0006203254f)))));
    const vm_f${L} b = vm_sel_v${L}(a > 3.92f, (vm_f${L}){0} + 3.92f, a);  /* erf(3.92) rounds to 1 */
    const vm_f${L} r = 0.00016202504f + b * (-1.1294532f + b * (-0.63347346f + b * (-0.10813904f
        + b * (0.025027147f + b * (-0.0041356464f + b * (0.00042708337f + b * -0.000020451396f))))));
    const vm_f${L} y = vm_sel_v${L}(a < 0.875f, small, 1.0f - vm_exp_v${L}(r));
    return (vm_f${L})((vm_i${L})y | ((vm_i${L})x & ~0x7fffffff));
}
% if L == 1:
${scalar('erf')}\
% endif
</%def>

<%def name="gelu(L)">\
${inline(L)} vm_f${L} vm_gelu_v${L}(vm_f${L} x)
{
    return 0.5f * x * (1.0f + vm_erf_v${L}(x * 0.707106781f));
}
% if L == 1:
${scalar('gelu')}\
% endif
</%def>

<%def name="gelu_tanh(L)">\
/* 0.5 x (1 + tanh(z)) = x sigmoid(2 z), z = sqrt(2 / pi) (x + 0.044715 x^3) */
${inline(L)} vm_f${L} vm_gelu_tanh_v${L}(vm_f${L} x)
{
    return x * vm_sigmoid_v${L}(x * (1.59576912f + (x * x) * 0.0713548162f));
}
% if L == 1:
${scalar('gelu_tanh')}\
% endif
</%def>

<%def name="swish(L)">\
${inline(L)} vm_f${L} vm_swish_v${L}(vm_f${L} x, float alpha)
{
    return x * vm_sigmoid_v${L}(x * alpha);
}
% if L == 1:
${scalar('swish', ['alpha'])}\
% endif
</%def>

<%def name="mish(L)">\
/* x tanh(log(1 + e)) = x n / (n + 2), n = e (e + 2), e = exp(x); 1 from x = 20 on */
${inline(L)} vm_f${L} vm_mish_v${L}(vm_f${L} x)
{
    const vm_f${L} e = vm_exp_v${L}(vm_sel_v${L}(x > 20.0f, (vm_f${L}){0} + 20.0f, x));
    const vm_f${L} n = e * (e + 2.0f);
    return x * (n / (n + 2.0f));
}
% if L == 1:
${scalar('mish')}\
% endif
</%def>

<%def name="elu(L)">\
${inline(L)} vm_f${L} vm_elu_v${L}(vm_f${L} x, float alpha)
{
    return vm_sel_v${L}(x < 0.0f, alpha * vm_expm1_v${L}(x), x);
}
% if L == 1:
${scalar('elu', ['alpha'])}\
% endif
</%def>

<%def name="selu(L)">\
${inline(L)} vm_f${L} vm_selu_v${L}(vm_f${L} x, float alpha, float gamma)
{
    return gamma * vm_sel_v${L}(x > 0.0f, x, alpha * vm_expm1_v${L}(x));
}
% if L == 1:
${scalar('selu', ['alpha', 'gamma'])}\
% endif
</%def>

<%def name="celu(L)">\
${inline(L)} vm_f${L} vm_celu_v${L}(vm_f${L} x, float alpha)
{
    return vm_sel_v${L}(x > 0.0f, x, alpha * vm_expm1_v${L}(x / alpha));
}
% if L == 1:
${scalar('celu', ['alpha'])}\
% endif
</%def>

<%def name="softsign(L)">\
${inline(L)} vm_f${L} vm_softsign_v${L}(vm_f${L} x)
{
    return x / (1.0f + (vm_f${L})((vm_i${L})x & 0x7fffffff));
}
% if L == 1:
${scalar('softsign')}\
% endif
</%def>

## x86's vmaxps and vminps: the Relu and Clip of the epilogues on 8 and 16 lanes
## (ops/common/epilogue.py) -- an instruction on a port of its own, where the portable select is
## a compare and a blend on the multiply-add ports (docs/speed.md, "1x1 convolutions on
## AVX2"). Both forms give b where either is NaN and where a == b (-0.0 against 0.0).
## Macros, like vm_sel (first made macros against -Wpsabi, before toolchain="env" builds got
## the target's ISA flags: see the top): the epilogues pass plain variables and constants,
## so the arguments' second evaluation in the portable form costs nothing.
<%def name="minmax(L, name, op, intrinsic)">\
% if L in X86 and L > 4:
<% m, p = X86[L] %>\
#if ${avx512(L) if L == 16 else 'defined(__FMA__)'}
#define vm_${name}_v${L}(a, b) ((vm_f${L})${p}_${intrinsic}_ps((${m})(a), (${m})(b)))  /* a ${op} b ? a : b */
#else
#define vm_${name}_v${L}(a, b) vm_sel_v${L}((a) ${op} (b), (a), (b))
#endif
% else:
#define vm_${name}_v${L}(a, b) vm_sel_v${L}((a) ${op} (b), (a), (b))
% endif
</%def>

<%def name="maxps(L)">${minmax(L, "maxps", ">", "max")}</%def>

<%def name="minps(L)">${minmax(L, "minps", "<", "min")}</%def>

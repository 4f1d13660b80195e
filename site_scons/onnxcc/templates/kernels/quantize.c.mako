<%doc> y = zero_point + round_half_even(clamp(x / scale)), in float32 as onnxruntime does.
  On Arm with single-precision VFP and the saturating instructions: VCVTR rounds (by
  FPSCR's mode, to nearest with ties to even: the reset default, which the magic-number
  rounding of the C path assumes too), then SSAT/USAT clamp in the integers: the clamp
  is the same, since the bounds minus the zero point are integers. </%doc>\
<%namespace name="qh" file="/kernels/lib/qhelpers.mako"/>\
<%
    lo, hi, zp = p['lo'], p['hi'], p['zp']
    bits = (hi - lo + 1).bit_length() - 1
    sat = ("__ssat", bits) if lo == -(1 << (bits - 1)) and hi == (1 << (bits - 1)) - 1 \
        else ("__usat", bits) if lo == 0 and hi == (1 << bits) - 1 else None
%>\
${qh.round_even(model)}
% if sat:
#if defined(__ARM_FEATURE_SAT) && defined(__ARM_FP) && (__ARM_FP & 4) && !defined(__SOFTFP__)
#include <arm_acle.h>
#endif
% endif
${signature}
{
    for (size_t i = 0; i < ${p['n']}u; ++i) {
        float v = x[i] / ${c_float(p['scale'])};
% if sat:
#if defined(__ARM_FEATURE_SAT) && defined(__ARM_FP) && (__ARM_FP & 4) && !defined(__SOFTFP__)
        int32_t r;
        __asm__("vcvtr.s32.f32 %1, %1\n\tvmov %0, %1" : "=r"(r), "+t"(v));
% if zp:
        r = __ssat(r, ${max(bits, abs(zp).bit_length()) + 2}) + ${zp}; /* no overflow in the add */
% endif
        y[i] = ${sat[0]}(r, ${sat[1]});
#else
% endif
        v = v < ${c_float(lo - zp)} ? ${c_float(lo - zp)} : v;
        v = v > ${c_float(hi - zp)} ? ${c_float(hi - zp)} : v;
        y[i] = ${model}_round_even(v) + ${zp};
% if sat:
#endif
% endif
    }
}

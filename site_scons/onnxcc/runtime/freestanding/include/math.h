/* math.h of onnxcc's freestanding C library (runtime/freestanding/README.md): the
 * functions onnxcc's kernels can call, in float and double. */
#ifndef ONNXCC_FREESTANDING_MATH_H
#define ONNXCC_FREESTANDING_MATH_H

#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#define HUGE_VAL (__builtin_huge_val())
#define HUGE_VALF (__builtin_huge_valf())
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf_sign(x)
#define isfinite(x) __builtin_isfinite(x)
#define signbit(x) __builtin_signbit(x)

#define ONNXCC_MATH_1(name) double name(double x); float name##f(float x);
#define ONNXCC_MATH_2(name) double name(double x, double y); float name##f(float x, float y);
ONNXCC_MATH_1(exp) ONNXCC_MATH_1(expm1) ONNXCC_MATH_1(log) ONNXCC_MATH_1(log1p)
ONNXCC_MATH_1(sqrt) ONNXCC_MATH_1(erf) ONNXCC_MATH_1(fabs)
ONNXCC_MATH_1(sin) ONNXCC_MATH_1(cos) ONNXCC_MATH_1(tan)
ONNXCC_MATH_1(asin) ONNXCC_MATH_1(acos) ONNXCC_MATH_1(atan)
ONNXCC_MATH_1(sinh) ONNXCC_MATH_1(cosh) ONNXCC_MATH_1(tanh)
ONNXCC_MATH_1(asinh) ONNXCC_MATH_1(acosh) ONNXCC_MATH_1(atanh)
ONNXCC_MATH_1(floor) ONNXCC_MATH_1(ceil) ONNXCC_MATH_1(trunc) ONNXCC_MATH_1(round)
ONNXCC_MATH_1(rint) ONNXCC_MATH_1(nearbyint)
ONNXCC_MATH_2(pow) ONNXCC_MATH_2(fmod) ONNXCC_MATH_2(copysign)
ONNXCC_MATH_2(fmin) ONNXCC_MATH_2(fmax)
#undef ONNXCC_MATH_1
#undef ONNXCC_MATH_2
float fmaf(float x, float y, float z);
double ldexp(double x, int e);
float ldexpf(float x, int e);
double frexp(double x, int *e);
float frexpf(float x, int *e);

#endif

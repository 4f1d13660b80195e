/* math.c: the <math.h> of onnxcc's freestanding C library (runtime/freestanding/README.md).
 *
 * Every function is computed in double: range reduction by exact (Cody-Waite) steps, then
 * a Taylor or atanh series carried far enough that truncation is below double rounding.
 * Double results are within a few ulps; float ones (the float argument widened, the double
 * result rounded once) within one float ulp, far inside verify's tolerance (rtol 1e-4).
 * fmod, fmaf, floor, ceil, trunc, round and rint are exact. Limits, documented: sin, cos
 * and tan reduce exactly only for |x| < 2^20 * pi/2 (about 1.6e6); pow and the double
 * functions of large arguments lose up to |y log x| ulps (relative 1e-13 at the extremes).
 * Assumes IEEE 754 binary64 with round-to-nearest and no flush-to-zero (SSE2's defaults).
 */
#pragma GCC optimize("no-math-errno") /* sqrt below is the instruction, not a call */

#include <math.h>
#include <stdint.h>

static uint64_t bits_of(double x)
{
    union { double d; uint64_t u; } v = {x};
    return v.u;
}

static double from_bits(uint64_t u)
{
    union { uint64_t u; double d; } v = {u};
    return v.d;
}

#define SIGN_BIT (UINT64_C(1) << 63)
#define TWO52 4503599627370496.0 /* 2^52: above it every double is an integer */
#define LN2_HI 6.93147180369123816490e-01  /* ln 2 to 32 bits: k * LN2_HI is exact */
#define LN2_LO 1.90821492927058770002e-10  /* ln 2 - LN2_HI */
#define INV_LN2 1.44269504088896338700e+00
#define LN2 0.6931471805599453094
#define PI 3.14159265358979311600e+00
#define PI_2 1.57079632679489655800e+00
#define PI_6 5.23598775598298815658e-01
#define SQRT2 1.41421356237309514547
#define SQRT3 1.73205080756887719318

double fabs(double x) { return from_bits(bits_of(x) & ~SIGN_BIT); }
double copysign(double x, double y)
{
    return from_bits((bits_of(x) & ~SIGN_BIT) | (bits_of(y) & SIGN_BIT));
}
double sqrt(double x) { return __builtin_sqrt(x); }
float sqrtf(float x) { return __builtin_sqrtf(x); }
double fmin(double x, double y) { return isnan(x) || y < x ? y : x; }
double fmax(double x, double y) { return isnan(x) || y > x ? y : x; }

/* ---- rounding to integers: exact ---------------------------------------------------- */

double rint(double x) /* half to even, the default rounding mode */
{
    const double a = fabs(x);
    if (!(a < TWO52))
        return x; /* an integer already, inf or NaN */
    return copysign((a + TWO52) - TWO52, x);
}
double nearbyint(double x) { return rint(x); }

double floor(double x)
{
    double r = rint(x);
    return r > x ? r - 1.0 : r;
}

double ceil(double x)
{
    double r = rint(x);
    return copysign(r < x ? r + 1.0 : r, x);
}

double trunc(double x) { return x < 0.0 ? ceil(x) : floor(x); }

double round(double x) /* half away from zero */
{
    const double t = trunc(x);
    return fabs(x - t) >= 0.5 ? t + copysign(1.0, x) : t;
}

/* ---- exponent and mantissa ------------------------------------------------------------ */

double ldexp(double x, int e)
{
    if (e > 1023) {
        x *= 0x1p1023;
        e -= 1023;
        if (e > 1023) {
            x *= 0x1p1023;
            e = e - 1023 > 1023 ? 1023 : e - 1023;
        }
    } else if (e < -1022) {
        /* steps that keep 53 bits until the last multiplication, which rounds once */
        x *= 0x1p-1022 * 0x1p53;
        e += 1022 - 53;
        if (e < -1022) {
            x *= 0x1p-1022 * 0x1p53;
            e = e + 1022 - 53 < -1022 ? -1022 : e + 1022 - 53;
        }
    }
    return x * from_bits((uint64_t)(0x3ff + e) << 52);
}

double frexp(double x, int *e)
{
    const int biased = (int)(bits_of(x) >> 52 & 0x7ff);
    if (biased == 0) {
        if (x == 0.0) {
            *e = 0;
            return x;
        }
        x = frexp(x * 0x1p64, e); /* subnormal */
        *e -= 64;
        return x;
    }
    if (biased == 0x7ff) {
        *e = 0;
        return x;
    }
    *e = biased - 0x3fe;
    return from_bits((bits_of(x) & ~(UINT64_C(0x7ff) << 52)) | (UINT64_C(0x3fe) << 52));
}

/* ---- exp and log ---------------------------------------------------------------------- */

/* e^r for |r| <= ln2/2 (Taylor to r^13: truncation below 4e-18) */
static double exp_reduced(double r)
{
    static const double inverse_factorial[] = {
        1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
        1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0,
        1.0 / 6.0, 0.5, 1.0};
    double p = 0.0;
    for (unsigned i = 0; i < sizeof inverse_factorial / sizeof *inverse_factorial; ++i)
        p = p * r + inverse_factorial[i];
    return 1.0 + r * p;
}

double exp(double x)
{
    if (isnan(x))
        return x + x;
    if (x > 709.782712893383973096)
        return HUGE_VAL;
    if (x < -745.133219101941108420)
        return 0.0;
    const double k = rint(x * INV_LN2);
    const double r = (x - k * LN2_HI) - k * LN2_LO;
    return ldexp(exp_reduced(r), (int)k);
}

double expm1(double x)
{
    if (fabs(x) < 0.5) { /* x (1 + x/2! + x^2/3! + ... + x^16/17!): no cancellation near 0 */
        static const double inverse_factorial[] = {
            1.0 / 355687428096000.0, 1.0 / 20922789888000.0, 1.0 / 1307674368000.0,
            1.0 / 87178291200.0, 1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0,
            1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0,
            1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0};
        double p = 0.0;
        for (unsigned i = 0; i < sizeof inverse_factorial / sizeof *inverse_factorial; ++i)
            p = p * x + inverse_factorial[i];
        return x * p;
    }
    return exp(x) - 1.0;
}

double log(double x)
{
    if (isnan(x) || x == HUGE_VAL)
        return x + x;
    if (x < 0.0)
        return NAN;
    if (x == 0.0)
        return -HUGE_VAL;
    int e = 0;
    if (x < 0x1p-1022) { /* subnormal: scale into the normal range */
        x *= 0x1p54;
        e = -54;
    }
    const uint64_t u = bits_of(x);
    e += (int)(u >> 52 & 0x7ff) - 1023;
    double m = from_bits((u & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(0x3ff) << 52)); /* [1, 2) */
    if (m > SQRT2) {
        m *= 0.5;
        e += 1;
    }
    /* log m = 2 atanh f, f = (m - 1) / (m + 1), |f| <= 0.1716: 11 terms of f^2 <= 0.0295 */
    const double f = (m - 1.0) / (m + 1.0), s = f * f;
    double p = 0.0;
    for (int k = 11; k >= 1; --k)
        p = p * s + 1.0 / (2 * k + 1);
    const double log_m = 2.0 * f + 2.0 * f * s * p;
    return e * LN2_HI + (log_m + e * LN2_LO);
}

double log1p(double x)
{
    if (isnan(x) || x == HUGE_VAL)
        return x + x;
    const double u = 1.0 + x;
    if (u == 1.0)
        return x;
    if (u <= 0.0)
        return u == 0.0 ? -HUGE_VAL : NAN;
    return log(u) * (x / (u - 1.0)); /* Goldberg: corrects the rounding of 1 + x */
}

static int is_odd_integer(double y)
{
    const double half = y * 0.5;
    return fabs(y) < 2 * TWO52 && trunc(y) == y && trunc(half) != half;
}

double pow(double x, double y)
{
    if (y == 0.0 || x == 1.0)
        return 1.0;
    if (isnan(x) || isnan(y))
        return x + y;
    if (isinf(y)) {
        const double a = fabs(x);
        if (a == 1.0)
            return 1.0;
        return (a < 1.0) == (y < 0.0) ? HUGE_VAL : 0.0;
    }
    if (x == 0.0 || isinf(x)) { /* 0 or inf to a finite power: 0 or inf, signed by x if y is odd */
        const double magnitude = (x == 0.0) == (y < 0.0) ? HUGE_VAL : 0.0;
        return is_odd_integer(y) ? copysign(magnitude, x) : magnitude;
    }
    if (trunc(y) == y && fabs(y) <= 64.0) { /* by squaring: exact when the result is */
        unsigned n = (unsigned)fabs(y);
        double r = 1.0, square = x;
        for (; n; n >>= 1, square *= square)
            if (n & 1u)
                r *= square;
        return y < 0.0 ? 1.0 / r : r;
    }
    if (x < 0.0) {
        if (trunc(y) != y)
            return NAN;
        const double r = exp(y * log(-x));
        return is_odd_integer(y) ? -r : r;
    }
    return exp(y * log(x));
}

/* ---- trigonometry --------------------------------------------------------------------- */

/* pi/2 in three parts of 33 bits (fdlibm's): n * part is exact for |n| < 2^20 */
#define PIO2_1 1.57079632673412561417e+00
#define PIO2_2 6.07710050630396597660e-11
#define PIO2_3 2.02226624871116645580e-21
#define PIO2_3T 8.47842766036889956997e-32
#define TWO_OVER_PI 6.36619772367581382433e-01

/* sin r and cos r for |r| <= pi/4 (Taylor to r^19 and r^20: truncation below 1e-21) */
static double sin_reduced(double r)
{
    const double s = r * r;
    double p = 0.0;
    for (int n = 19; n >= 3; n -= 2) /* 1/n! - s/(n+2)! ... */
        p = (p * -s + 1.0) / (n * (n - 1));
    return r == 0.0 ? r : r - r * s * p; /* keeps the sign of a zero */
}

static double cos_reduced(double r)
{
    const double s = r * r;
    double p = 0.0;
    for (int n = 20; n >= 2; n -= 2)
        p = (p * -s + 1.0) / (n * (n - 1));
    return 1.0 - s * p;
}

/* x - n pi/2 for the nearest n; the quadrant n mod 4 in *quadrant */
static double reduce_pi_2(double x, int *quadrant)
{
    if (fabs(x) <= PI_2 * 0.5) {
        *quadrant = 0;
        return x;
    }
    const double n = rint(x * TWO_OVER_PI);
    *quadrant = (int)(n - 4.0 * floor(n * 0.25));
    return (((x - n * PIO2_1) - n * PIO2_2) - n * PIO2_3) - n * PIO2_3T;
}

double sin(double x)
{
    if (!isfinite(x))
        return x - x;
    int q;
    const double r = reduce_pi_2(x, &q);
    const double v = q & 1 ? cos_reduced(r) : sin_reduced(r);
    return q & 2 ? -v : v;
}

double cos(double x)
{
    if (!isfinite(x))
        return x - x;
    int q;
    const double r = reduce_pi_2(x, &q);
    const double v = q & 1 ? sin_reduced(r) : cos_reduced(r);
    return (q + 1) & 2 ? -v : v;
}

double tan(double x)
{
    if (!isfinite(x))
        return x - x;
    int q;
    const double r = reduce_pi_2(x, &q);
    return q & 1 ? -cos_reduced(r) / sin_reduced(r) : sin_reduced(r) / cos_reduced(r);
}

double atan(double x)
{
    if (isnan(x))
        return x + x;
    double a = fabs(x), offset = 0.0;
    const int inverted = a > 1.0;
    if (inverted)
        a = 1.0 / a;
    if (a > 0.26794919243112270) { /* tan(pi/12): atan a = pi/6 + atan((a sqrt3 - 1) / (a + sqrt3)) */
        a = (a * SQRT3 - 1.0) / (a + SQRT3);
        offset = PI_6;
    }
    const double s = a * a; /* <= 0.0718: 15 terms */
    double p = 0.0;
    for (int k = 15; k >= 1; --k)
        p = p * -s + 1.0 / (2 * k + 1);
    double r = offset + (a - a * s * p);
    if (inverted)
        r = PI_2 - r;
    return copysign(r, x);
}

double asin(double x)
{
    if (!(fabs(x) <= 1.0))
        return NAN;
    return atan(x / sqrt((1.0 - x) * (1.0 + x)));
}

double acos(double x)
{
    if (!(fabs(x) <= 1.0))
        return NAN;
    return 2.0 * atan(sqrt((1.0 - x) / (1.0 + x)));
}

/* ---- hyperbolic functions ------------------------------------------------------------- */

double sinh(double x)
{
    const double a = fabs(x);
    double h;
    if (a < 22.0) {
        const double t = expm1(a);
        h = 0.5 * (t + t / (t + 1.0));
    } else {
        const double half = exp(0.5 * a); /* e^a / 2 without overflowing first */
        h = 0.5 * half * half;
    }
    return copysign(h, x);
}

double cosh(double x)
{
    const double a = fabs(x);
    if (a < 22.0) {
        const double e = exp(a);
        return 0.5 * (e + 1.0 / e);
    }
    const double half = exp(0.5 * a);
    return 0.5 * half * half;
}

double tanh(double x)
{
    if (isnan(x))
        return x + x;
    const double a = fabs(x);
    if (a > 22.0)
        return copysign(1.0, x);
    const double t = expm1(2.0 * a);
    return copysign(t / (t + 2.0), x);
}

double asinh(double x)
{
    if (!isfinite(x))
        return x + x;
    const double a = fabs(x);
    double r;
    if (a > 0x1p28)
        r = log(a) + LN2;
    else if (a > 2.0)
        r = log(2.0 * a + 1.0 / (sqrt(a * a + 1.0) + a));
    else
        r = log1p(a + a * a / (1.0 + sqrt(1.0 + a * a)));
    return copysign(r, x);
}

double acosh(double x)
{
    if (isnan(x) || x == HUGE_VAL)
        return x + x;
    if (x < 1.0)
        return NAN;
    if (x > 0x1p28)
        return log(x) + LN2;
    if (x > 2.0)
        return log(2.0 * x - 1.0 / (x + sqrt(x * x - 1.0)));
    const double t = x - 1.0;
    return log1p(t + sqrt(2.0 * t + t * t));
}

double atanh(double x)
{
    const double a = fabs(x);
    if (isnan(x))
        return x + x;
    if (a > 1.0)
        return NAN;
    if (a == 1.0)
        return copysign(HUGE_VAL, x);
    return copysign(0.5 * log1p(2.0 * a / (1.0 - a)), x);
}

/* ---- erf ------------------------------------------------------------------------------ */

/* erf a = 2/sqrt(pi) e^(-a^2) sum 2^n a^(2n+1) / (1*3*...*(2n+1)): positive terms, no
 * cancellation; at most about 120 terms for a < 6, above which erf is 1 in double */
double erf(double x)
{
    if (isnan(x))
        return x + x;
    const double a = fabs(x);
    if (a >= 6.0)
        return copysign(1.0, x);
    const double two_a2 = 2.0 * a * a;
    double term = a, sum = a;
    for (int n = 1; term > sum * 1e-17; ++n) {
        term *= two_a2 / (2 * n + 1);
        sum += term;
    }
    return copysign(1.12837916709551255856 * exp(-a * a) * sum, x); /* 2/sqrt(pi) */
}

/* ---- fmod and fmaf: exact ------------------------------------------------------------- */

/* x - n y with n = trunc(x / y), by binary long division of the mantissas */
double fmod(double x, double y)
{
    uint64_t ux = bits_of(x), uy = bits_of(y);
    int ex = (int)(ux >> 52 & 0x7ff), ey = (int)(uy >> 52 & 0x7ff);
    const uint64_t sign = ux & SIGN_BIT;
    if (uy << 1 == 0 || isnan(y) || ex == 0x7ff)
        return NAN;
    if (ux << 1 <= uy << 1)
        return ux << 1 == uy << 1 ? 0.0 * x : x;
    /* mantissas with their implicit bit, subnormals normalized */
    const uint64_t mantissa = (UINT64_C(1) << 52) - 1;
    if (ex == 0) {
        for (uint64_t i = ux << 12; !(i >> 63); i <<= 1)
            --ex;
        ux <<= 1 - ex;
    } else {
        ux = (ux & mantissa) | (UINT64_C(1) << 52);
    }
    if (ey == 0) {
        for (uint64_t i = uy << 12; !(i >> 63); i <<= 1)
            --ey;
        uy <<= 1 - ey;
    } else {
        uy = (uy & mantissa) | (UINT64_C(1) << 52);
    }
    for (; ex > ey; --ex) {
        const uint64_t d = ux - uy;
        if (!(d >> 63)) {
            if (d == 0)
                return 0.0 * x;
            ux = d;
        }
        ux <<= 1;
    }
    const uint64_t d = ux - uy;
    if (!(d >> 63)) {
        if (d == 0)
            return 0.0 * x;
        ux = d;
    }
    for (; !(ux >> 52); ux <<= 1)
        --ex;
    if (ex > 0)
        ux = (ux - (UINT64_C(1) << 52)) | ((uint64_t)ex << 52);
    else
        ux >>= 1 - ex;
    return from_bits(ux | sign);
}

/* x * y + z rounded once: the product is exact in double, the sum rounded to double is
 * right unless it lies exactly halfway between two floats while inexact, where the
 * float rounding must go towards the sum's error (the method of musl's fmaf) */
float fmaf(float x, float y, float z)
{
    const double xy = (double)x * y, sum = xy + z;
    uint64_t u = bits_of(sum);
    const int e = (int)(u >> 52 & 0x7ff);
    if ((u & 0x1fffffff) != 0x10000000 || e == 0x7ff || (sum - xy == z && sum - z == xy))
        return (float)sum;
    const int negative = (int)(u >> 63);
    const double error = negative == (z > xy) ? xy - sum + z : z - sum + xy;
    if (negative == (error < 0))
        ++u;
    else
        --u;
    return (float)from_bits(u);
}

/* ---- float: the double function of the widened argument, rounded once ------------------ */

#define FLOAT_OF_1(name) float name##f(float x) { return (float)name((double)x); }
#define FLOAT_OF_2(name) float name##f(float x, float y) { return (float)name((double)x, (double)y); }
FLOAT_OF_1(exp) FLOAT_OF_1(expm1) FLOAT_OF_1(log) FLOAT_OF_1(log1p) FLOAT_OF_1(erf)
FLOAT_OF_1(fabs) FLOAT_OF_1(sin) FLOAT_OF_1(cos) FLOAT_OF_1(tan)
FLOAT_OF_1(asin) FLOAT_OF_1(acos) FLOAT_OF_1(atan)
FLOAT_OF_1(sinh) FLOAT_OF_1(cosh) FLOAT_OF_1(tanh)
FLOAT_OF_1(asinh) FLOAT_OF_1(acosh) FLOAT_OF_1(atanh)
FLOAT_OF_1(floor) FLOAT_OF_1(ceil) FLOAT_OF_1(trunc) FLOAT_OF_1(round)
FLOAT_OF_1(rint) FLOAT_OF_1(nearbyint)
FLOAT_OF_2(pow) FLOAT_OF_2(fmod) FLOAT_OF_2(copysign) FLOAT_OF_2(fmin) FLOAT_OF_2(fmax)

float ldexpf(float x, int e) { return (float)ldexp((double)x, e); }

float frexpf(float x, int *e) { return (float)frexp((double)x, e); }

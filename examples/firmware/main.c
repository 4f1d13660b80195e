/* The example firmware: two onnxcc models, one after the other, through one shared arena.
 *
 *   kws          keyword spotting: 49x10 MFCC features -> 12 class scores
 *   autoencoder  anomaly detection: 640 features -> their reconstruction; the anomaly
 *                score is the mean squared reconstruction error
 *
 * Each model runs on the input make_expected.py drew for it, and its outputs are compared
 * with what onnxruntime computed for the same input (expected.c). The exit status (QEMU
 * passes it on through semihosting) is 0 only when every output matches.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "autoencoder.h"
#include "expected.h"
#include "kws.h"
#include "shared_arena.h"

/* |got - expected| <= ATOL + RTOL * |expected|, element by element */
#define RTOL 1e-3f
#define ATOL 1e-5f

static float kws_scores[KWS_OUTPUT0_BYTES / sizeof(float)];
static float reconstruction[AUTOENCODER_OUTPUT0_BYTES / sizeof(float)];

/* where the linker script put the weights that were given a section of their own */
extern const uint8_t __model_weights_start__[], __model_weights_end__[];

/* 0 when got[] matches expected[]; else says where it does not */
static int check(const char *model, const float *got, const float *expected, unsigned n)
{
    float worst = 0.0f;
    for (unsigned i = 0; i < n; ++i) {
        float error = fabsf(got[i] - expected[i]);
        if (!(error <= ATOL + RTOL * fabsf(expected[i]))) {
            printf("%s: MISMATCH at output %u: got %.9g, onnxruntime %.9g\n", model, i,
                   (double)got[i], (double)expected[i]);
            return 1;
        }
        worst = error > worst ? error : worst;
    }
    printf("%s: %u outputs match onnxruntime (max abs error %.3g)\n", model, n, (double)worst);
    return 0;
}

static int run_kws(void)
{
    const void *inputs[] = {kws_test_input};
    void *outputs[] = {kws_scores};
    if (sizeof kws_test_input != KWS_INPUT0_BYTES || sizeof kws_scores != sizeof kws_expected)
        return printf("kws: the test data does not fit the model\n"), 1;
    if (kws_run(inputs, outputs, shared_arena) != 0)
        return printf("kws: kws_run failed\n"), 1;
    unsigned best = 0;
    printf("kws: scores");
    for (unsigned i = 0; i < KWS_EXPECTED_LEN; ++i) {
        printf(" %.4f", (double)kws_scores[i]);
        best = kws_scores[i] > kws_scores[best] ? i : best;
    }
    printf("\nkws: keyword %u\n", best);
    return check("kws", kws_scores, kws_expected, KWS_EXPECTED_LEN);
}

static int run_autoencoder(void)
{
    const void *inputs[] = {autoencoder_test_input};
    void *outputs[] = {reconstruction};
    if (sizeof autoencoder_test_input != AUTOENCODER_INPUT0_BYTES ||
        sizeof reconstruction != sizeof autoencoder_expected)
        return printf("autoencoder: the test data does not fit the model\n"), 1;
    if (autoencoder_run(inputs, outputs, shared_arena) != 0)
        return printf("autoencoder: autoencoder_run failed\n"), 1;
    float mse = 0.0f;
    for (unsigned i = 0; i < AUTOENCODER_EXPECTED_LEN; ++i) {
        float d = reconstruction[i] - autoencoder_test_input[i];
        mse += d * d;
    }
    printf("autoencoder: anomaly score (reconstruction MSE) %.6f\n",
           (double)(mse / AUTOENCODER_EXPECTED_LEN));
    return check("autoencoder", reconstruction, autoencoder_expected, AUTOENCODER_EXPECTED_LEN);
}

int main(void)
{
    printf("firmware: shared arena %lu bytes (kws %lu, autoencoder %lu), "
           "%lu bytes of weights in external flash at %p\n",
           (unsigned long)sizeof shared_arena, (unsigned long)KWS_ARENA_BYTES,
           (unsigned long)AUTOENCODER_ARENA_BYTES,
           (unsigned long)(__model_weights_end__ - __model_weights_start__),
           (const void *)__model_weights_start__);
    int failures = run_kws() + run_autoencoder();
    printf("firmware: %s\n", failures ? "FAILED" : "all outputs match onnxruntime");
    return failures ? 1 : 0;
}

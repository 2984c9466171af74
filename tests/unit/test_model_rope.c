/* test_model_rope: RoPE frequencies and the float16/bfloat16 decoders against published and
 * hand-checked values (docs/FAMILIES.md §1, §2; the test vectors of the shared
 * hf-checkpoints.md §11.4).
 * Tolerance: the §11.4 vectors are printed to 5 significant digits (HF test) or 7 (Llama-3.2
 * tables), so a value passes when it agrees to half a unit in its last printed digit. */
#include <math.h>
#include <stdio.h>

#include "model/posenc.h"
#include "core/half.h"

static int failures = 0;

static void report(int ok, const char *name, const char *detail) {
    printf("%s - %s%s%s\n", ok ? "ok" : "not ok", name, detail[0] ? ": " : "", detail);
    failures += !ok;
}

/* got agrees with want to half a unit of the digit printed at `digits` significant places. */
static int agrees(float got, double want, int digits) {
    double unit = pow(10.0, floor(log10(fabs(want))) - (digits - 1));
    return fabs(got - want) <= 0.5 * unit + 1e-12;
}

static void check_vec(const char *name, const float *got, const double *want, int n, int digits) {
    char detail[160] = "";
    int ok = 1;
    for (int i = 0; i < n && ok; i++)
        if (!agrees(got[i], want[i], digits)) {
            ok = 0;
            snprintf(detail, sizeof detail, "index %d: %.7g, want %.7g", i, got[i], want[i]);
        }
    report(ok, name, detail);
}

/* transformers test_llama3_rope_numerically: head_dim 128, theta 10000, factor 10, orig 2048. */
static void test_hf_llama3(void) {
    static const double want[64] = {
        1.0000e+00, 8.6596e-01, 7.4989e-01, 6.4938e-01, 5.6234e-01, 4.8697e-01, 4.2170e-01, 3.6517e-01,
        3.1623e-01, 2.7384e-01, 2.3714e-01, 2.0535e-01, 1.7783e-01, 1.5399e-01, 1.3335e-01, 1.1548e-01,
        1.0000e-01, 8.6596e-02, 7.4989e-02, 6.4938e-02, 5.6234e-02, 4.8697e-02, 4.2170e-02, 3.6517e-02,
        3.1623e-02, 2.7384e-02, 2.3714e-02, 2.0535e-02, 1.7783e-02, 1.5399e-02, 1.3335e-02, 1.0730e-02,
        7.7785e-03, 5.6009e-03, 3.9991e-03, 2.8248e-03, 1.9675e-03, 1.3449e-03, 8.9549e-04, 5.7363e-04,
        3.4539e-04, 2.7384e-04, 2.3714e-04, 2.0535e-04, 1.7783e-04, 1.5399e-04, 1.3335e-04, 1.1548e-04,
        1.0000e-04, 8.6596e-05, 7.4989e-05, 6.4938e-05, 5.6234e-05, 4.8697e-05, 4.2170e-05, 3.6517e-05,
        3.1623e-05, 2.7384e-05, 2.3714e-05, 2.0535e-05, 1.7783e-05, 1.5399e-05, 1.3335e-05, 1.1548e-05};
    float inv[64];
    model_rope_default(inv, 128, 10000.0);
    model_rope_llama3(inv, 128, 10.0, 1.0, 4.0, 2048.0);
    check_vec("llama3 inv_freq, transformers test vector (head_dim 128, factor 10)", inv, want, 64, 5);
}

/* Llama-3.2-1B: head_dim 64, theta 500000, factor 32, low 1, high 4, orig 8192. */
static void test_llama32_1b(void) {
    static const double want[32] = {
        1.000000e+00, 6.636013e-01, 4.403666e-01, 2.922278e-01, 1.939228e-01, 1.286874e-01, 8.539710e-02,
        5.666962e-02, 3.760603e-02, 2.495541e-02, 1.656044e-02, 1.098953e-02, 7.292665e-03, 4.839421e-03,
        3.211446e-03, 1.290548e-03, 4.295567e-04, 9.708288e-05, 1.946164e-05, 1.291477e-05, 8.570256e-06,
        5.687232e-06, 3.774054e-06, 2.504467e-06, 1.661967e-06, 1.102884e-06, 7.318749e-07, 4.856731e-07,
        3.222933e-07, 2.138742e-07, 1.419272e-07, 9.418306e-08};
    float inv[32];
    model_rope_default(inv, 64, 500000.0);
    model_rope_llama3(inv, 64, 32.0, 1.0, 4.0, 8192.0);
    check_vec("llama3 inv_freq, Llama-3.2-1B (head_dim 64, factor 32)", inv, want, 32, 6);
}

/* Llama-3.2-3B: index 28 last unchanged, 63 divided by 32. */
static void test_llama32_3b(void) {
    float inv[64];
    model_rope_default(inv, 128, 500000.0);
    model_rope_llama3(inv, 128, 32.0, 1.0, 4.0, 8192.0);
    const float got[5] = {inv[1], inv[2], inv[28], inv[35], inv[63]};
    const double want[5] = {8.146172e-01, 6.636013e-01, 3.211446e-03, 2.389053e-05, 7.672315e-08};
    check_vec("llama3 inv_freq, Llama-3.2-3B (indices 1, 2, 28, 35, 63)", got, want, 5, 6);
}

/* Pythia-70m partial rotary: 16 dims, 1/10000^(k/16). */
static void test_pythia(void) {
    const double want[8] = {1, 0.3162278, 0.1, 0.03162278, 0.01, 0.003162278, 0.001, 0.0003162278};
    float inv[8];
    model_rope_default(inv, 16, 10000.0);
    check_vec("default inv_freq, Pythia-70m rotary 16 dims", inv, want, 8, 7);
}

static void test_half_floats(void) {
    struct { unsigned short h; float want; } f16[] = {
        {0x3c00, 1.0f}, {0xc000, -2.0f}, {0x0001, 0x1p-24f}, {0x03ff, 1023 * 0x1p-24f}, {0x7bff, 65504.0f},
        {0x7c00, INFINITY}, {0xfc00, -INFINITY}, {0x3555, 0.333251953125f}, {0x8000, -0.0f}};
    int ok = 1;
    for (size_t i = 0; i < sizeof f16 / sizeof f16[0]; i++) ok &= half_f16_to_f32(f16[i].h) == f16[i].want;
    ok &= isnan(half_f16_to_f32(0x7e00));
    report(ok, "F16 decoding: normals, subnormals, infinities, NaN", "");
    ok = half_bf16_to_f32(0x3f80) == 1.0f && half_bf16_to_f32(0xc049) == -3.140625f &&
         half_bf16_to_f32(0x7f80) == INFINITY && isnan(half_bf16_to_f32(0x7fc0)) && half_bf16_to_f32(0x0001) > 0;
    report(ok, "BF16 decoding (shift by 16 bits)", "");
}

int main(void) {
    test_hf_llama3();
    test_llama32_1b();
    test_llama32_3b();
    test_pythia();
    test_half_floats();
    return failures != 0;
}

/* test_gemm_half: F16/BF16 weights widened block by block give the same bits as widening the
 * whole matrix first and calling gemm_f32 once (gemm_half.h), for shapes below, at and above
 * the 64-row block, strided outputs and unaligned half data; views map offsets one to one onto
 * half elements and are told apart from float32 pointers. */
#include "core/gemm.h"
#include "core/gemm_half.h"
#include "core/half.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static uint32_t next(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

/* random finite half bits: every exponent but the all-ones one (F16 subnormals included) */
static uint16_t half_bits(half_kind k) {
    for (;;) {
        uint16_t h = (uint16_t)next();
        int e = k == HALF_BF16 ? (h >> 7) & 0xff : (h >> 10) & 0x1f, top = k == HALF_BF16 ? 0xff : 0x1f;
        if (k == HALF_BF16 && (e < 100 || e > 140)) continue;   /* keep sums finite */
        if (e != top) return h;
    }
}

static int one_case(half_kind k, int M, int N, int K, int ldc_pad, int shift) {
    unsigned char *raw = malloc((size_t)N * K * 2 + 1), *W = raw + shift;
    for (size_t i = 0; i < (size_t)N * K; i++) {
        uint16_t h = half_bits(k);
        W[2 * i] = (unsigned char)h, W[2 * i + 1] = (unsigned char)(h >> 8);
    }
    float *X = malloc(sizeof(float) * (size_t)M * K), *Wf = malloc(sizeof(float) * (size_t)N * K);
    int ldc = N + ldc_pad;
    float *C1 = calloc((size_t)M * ldc, sizeof(float)), *C2 = calloc((size_t)M * ldc, sizeof(float));
    for (size_t i = 0; i < (size_t)M * K; i++) X[i] = half_bf16_to_f32(half_bits(HALF_BF16));
    for (size_t i = 0; i < (size_t)N * K; i++) {
        uint16_t h = (uint16_t)(W[2 * i] | W[2 * i + 1] << 8);
        Wf[i] = k == HALF_BF16 ? half_bf16_to_f32(h) : half_f16_to_f32(h);   /* widened independently */
    }
    gemm_f32(0, 1, M, N, K, 1.0f, X, K, Wf, K, 0.0f, C1, ldc);
    gemm_half_xwt(M, N, K, X, K, W, k, C2, ldc);
    int same = !memcmp(C1, C2, sizeof(float) * (size_t)M * ldc);
    if (!same) printf("# %s M %d N %d K %d differs\n", k == HALF_BF16 ? "BF16" : "F16", M, N, K);
    free(raw), free(X), free(Wf), free(C1), free(C2);
    return same;
}

static int views_ok(void) {
    enum { N = 1000 };
    unsigned char d[2 * N + 1];
    float plain[4] = {0};
    for (int i = 0; i < 2 * N + 1; i++) d[i] = (unsigned char)next();
    const float *v = half_view(d + 1, N, HALF_F16);
    const unsigned char *h;
    half_kind k;
    int ok = v && half_find(v + 317, &h, &k) && h == d + 1 + 2 * 317 && k == HALF_F16 && !half_find(plain, &h, &k) &&
             !half_find(v + N, &h, &k);
    float a[10], b[10];
    half_copy(a, v + 500, 10);
    for (int i = 0; i < 10; i++) b[i] = half_f16_to_f32((uint16_t)(d[1 + 2 * (500 + i)] | d[2 + 2 * (500 + i)] << 8));
    ok = ok && !memcmp(a, b, sizeof a);
    half_copy(a, plain, 4);
    ok = ok && !memcmp(a, plain, sizeof plain);
    half_view_drop(v);
    return ok && !half_find(v, &h, &k);
}

/* A transposed view of a [in][out] matrix: sub-matrix rows resolve to columns of the stored one,
 * half_find ignores it, and gemm_f32(0, 0) on the resolved columns equals gemm_f32(0, 1) on an
 * explicit transposed copy bit for bit (the linear() of GPT-2's Conv1D weights). */
static int xposed_ok(void) {
    enum { IN = 37, OUT = 3 * 29, T = 11 };
    static float w[IN * OUT], wt[OUT * IN], x[T * IN], y0[T * 29], y1[T * 29];
    for (int i = 0; i < IN * OUT; i++) w[i] = (float)((i * 7919) % 2003 - 1001) / 313.0f;
    for (int i = 0; i < T * IN; i++) x[i] = (float)((i * 104729) % 1999 - 999) / 211.0f;
    for (int i = 0; i < IN; i++)
        for (int o = 0; o < OUT; o++) wt[o * IN + i] = w[i * OUT + o];
    const float *v = xposed_view(w, IN, OUT), *col = NULL;
    const unsigned char *hd;
    half_kind hk;
    int ld = 0, ok = v && !half_find(v, &hd, &hk) && !xposed_find(v + 1, &col, &ld);
    for (int part = 0; ok && part < 3; part++) {   /* wq, wk, wv of a fused qkv */
        ok &= xposed_find(v + part * 29 * IN, &col, &ld) && col == w + part * 29 && ld == OUT;
        gemm_f32(0, 0, T, 29, IN, 1.0f, x, IN, col, ld, 0.0f, y0, 29);
        gemm_f32(0, 1, T, 29, IN, 1.0f, x, IN, wt + part * 29 * IN, IN, 0.0f, y1, 29);
        ok &= memcmp(y0, y1, sizeof y0) == 0;
    }
    if (v) half_view_drop(v);
    return ok && !xposed_find(v, &col, &ld);
}

int main(void) {
    static const int Ms[] = {1, 5, 40}, Ns[] = {1, 63, 64, 65, 130, 200}, Ks[] = {1, 7, 64, 300};
    int ok = 1, cases = 0;
    for (int kind = HALF_F16; kind <= HALF_BF16; kind++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 6; b++)
                for (int c = 0; c < 4; c++, cases++)
                    ok &= one_case((half_kind)kind, Ms[a], Ns[b], Ks[c], (a + b) % 2 * 3, (b + c) % 2);
    printf("%s - gemm_half_xwt equals widen-all + one gemm_f32 bit for bit (%d shapes, F16 and BF16)\n",
           ok ? "ok" : "not ok", cases);
    int vok = views_ok();
    printf("%s - half views: offsets map onto half elements, half_copy widens, float32 pointers pass through\n",
           vok ? "ok" : "not ok");
    int xok = xposed_ok();
    printf("%s - transposed views: qkv parts resolve to stored columns; gemm(0,0) on them = gemm(0,1) on a copy\n",
           xok ? "ok" : "not ok");
    return !(ok && vok && xok);
}

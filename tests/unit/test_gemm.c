/* test_gemm: gemm_f32/gemm_f64 give, bit for bit, the element definition of gemm.h — a plain
 * sequential dot product over k with every product and sum rounded once — for all four
 * transpose combinations, shapes that are and are not multiples of the register block, strided
 * operands, alpha/beta in {1, 0.5} × {0, 1}, and inputs spanning many binades (so a different
 * summation order would show); then the edges of the blocking in gemm.c (6-row register blocks,
 * 16- and 8-column panels, k split every 256, rows every 120): sizes one below, at and one above
 * each, k = 0 and 1, a single row or column. The reference below is written from that definition alone; run
 * with ATTNCODA_GEMM=sse2 it checks the baseline kernel (tests/t-determinism.sh does both). */
#include "core/gemm.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static double urand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}
/* values of mixed sign and magnitude 2^-12 … 2^12 */
static double wild(void) { return (urand() < 0.5 ? -1 : 1) * ldexp(1 + urand(), (int)(urand() * 24) - 12); }

#define REF(T, NAME)                                                                                   \
    static void NAME(int ta, int tb, int M, int N, int K, T alpha, const T *A, int lda, const T *B,   \
                     int ldb, T beta, T *C, int ldc) {                                                 \
        for (int i = 0; i < M; i++)                                                                   \
            for (int j = 0; j < N; j++) {                                                             \
                volatile T acc = 0;                                                                   \
                for (int k = 0; k < K; k++) {                                                         \
                    volatile T prod = (ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]); \
                    acc = acc + prod;                                                                 \
                }                                                                                     \
                volatile T scaled = alpha * acc;                                                      \
                C[i * ldc + j] = beta == 0 ? scaled : scaled + beta * C[i * ldc + j];                 \
            }                                                                                         \
    }
REF(float, ref_f32)
REF(double, ref_f64)

#define CASE(T, GEMM, REFN, ok)                                                                        \
    do {                                                                                              \
        int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 5;                              \
        size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc; \
        T *A = malloc(sizeof(T) * na + 1), *B = malloc(sizeof(T) * nb + 1);                          \
        T *C1 = malloc(sizeof(T) * nc + 1), *C2 = malloc(sizeof(T) * nc + 1);                         \
        for (size_t i = 0; i < na; i++) A[i] = (T)wild();                                             \
        for (size_t i = 0; i < nb; i++) B[i] = (T)wild();                                             \
        for (size_t i = 0; i < nc; i++) C1[i] = C2[i] = (T)wild();                                    \
        GEMM(ta, tb, M, N, K, (T)alpha, A, lda, B, ldb, (T)beta, C1, ldc);                            \
        REFN(ta, tb, M, N, K, (T)alpha, A, lda, B, ldb, (T)beta, C2, ldc);                            \
        if (memcmp(C1, C2, sizeof(T) * nc)) {                                                         \
            if (ok) printf("# %s differs: ta %d tb %d M %d N %d K %d alpha %g beta %g\n", #GEMM, ta, tb, M, N, K, alpha, beta); \
            ok = 0;                                                                                   \
        }                                                                                             \
        free(A), free(B), free(C1), free(C2);                                                         \
    } while (0)

int main(void) {
    static const int dims[] = {1, 3, 4, 5, 8, 15, 16, 17, 31, 33, 64, 100};
    int n = sizeof dims / sizeof dims[0], ok32 = 1, ok64 = 1, cases = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int a = 0; a < n; a++)
                for (int b = 0; b < n; b++) {
                    int M = dims[a], N = dims[b], K = dims[(a * 7 + b * 3) % n] + (a + b) % 2 * 200;
                    double alpha = (a + b) % 2 ? 1 : 0.5, beta = (a * b) % 3 ? 0 : 1;
                    CASE(float, gemm_f32, ref_f32, ok32);
                    CASE(double, gemm_f64, ref_f64, ok64);
                    cases++;
                }
    static const int edge_m[] = {1, 2, 5, 6, 7, 12, 13, 119, 120, 121, 241};
    static const int edge_n[] = {1, 7, 8, 9, 16, 17, 24, 33};
    static const int edge_k[] = {0, 1, 2, 255, 256, 257, 513};
    int nm = sizeof edge_m / sizeof *edge_m, nn = sizeof edge_n / sizeof *edge_n, nk = sizeof edge_k / sizeof *edge_k;
    for (int a = 0; a < nm; a++)
        for (int b = 0; b < nn; b++)
            for (int c = 0; c < nk; c++) {
                int M = edge_m[a], N = edge_n[b], K = edge_k[c], ta = (a + c) % 2, tb = (b + c) / 2 % 2;
                double alpha = (a + b + c) % 2 ? 1 : 0.5, beta = (a + 2 * b + c) % 3 ? 0 : 1;
                CASE(float, gemm_f32, ref_f32, ok32);
                CASE(double, gemm_f64, ref_f64, ok64);
                cases++;
            }
    printf("%s - gemm_f32 (%s) equals the sequential definition bit for bit (%d shapes)\n", ok32 ? "ok" : "not ok",
           gemm_isa(), cases);
    printf("%s - gemm_f64 (%s) equals the sequential definition bit for bit (%d shapes)\n", ok64 ? "ok" : "not ok",
           gemm_isa(), cases);
    return !(ok32 && ok64);
}

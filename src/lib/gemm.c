/* gemm: see gemm.h for the exact definition of every output element.
 *
 * Layout: op(B) is packed once per call into panels of NR columns (k-major, zero-padded), and
 * op(A) into blocks of MR rows; an MR×NR block of C is then accumulated in registers over the
 * whole of k, in order. Vectors run across the NR columns only, so each lane is one element's
 * own sequential sum and the vector width cannot change a bit. The same body is compiled twice,
 * for AVX2 and for the x86-64 baseline; fp-contract is off for the whole build (Makefile), and
 * the AVX2 clone does not enable FMA, so no multiply-add is ever fused. */
#include "gemm.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { MR = 4 };

typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
typedef double v2d __attribute__((vector_size(16)));

static void *panel_alloc(size_t bytes) {
    bytes = (bytes + 31) / 32 * 32;
    void *p = aligned_alloc(32, bytes ? bytes : 32);
    if (!p) die_data("gemm", "out of memory (%zu bytes)", bytes);
    return p;
}

/* DEFINE_GEMM(T, VT, VL, SUF): gemm_SUF over element type T with vectors VT of VL elements; an
 * NR = 2·VL column panel; ATTR is the target attribute of its entry point. */
#define DEFINE_GEMM(T, VT, VL, SUF, ATTR)                                                                       \
    enum { NR_##SUF = 2 * (VL) };                                                                       \
    static inline __attribute__((always_inline)) void pack_b_##SUF(T *Bp, int trans_b, int N, int K,    \
                                                                   const T *B, int ldb) {              \
        for (int j0 = 0, p = 0; j0 < N; j0 += NR_##SUF, p++)                                            \
            for (int k = 0; k < K; k++) {                                                               \
                T *dst = Bp + ((size_t)p * K + k) * NR_##SUF;                                           \
                for (int c = 0; c < NR_##SUF; c++) {                                                    \
                    int j = j0 + c;                                                                     \
                    dst[c] = j >= N ? 0 : trans_b ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];   \
                }                                                                                       \
            }                                                                                           \
    }                                                                                                   \
    static inline __attribute__((always_inline)) void pack_a_##SUF(T *Ap, int trans_a, int i0, int M,   \
                                                                   int K, const T *A, int lda) {       \
        for (int k = 0; k < K; k++)                                                                     \
            for (int r = 0; r < MR; r++) {                                                              \
                int i = i0 + r;                                                                         \
                Ap[(size_t)k * MR + r] = i >= M ? 0 : trans_a ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]; \
            }                                                                                           \
    }                                                                                                   \
    /* Named accumulators (not an array) so that they stay in registers. */                           \
    static inline __attribute__((always_inline)) void block_##SUF(int K, const T *Ap, const T *Bp,      \
                                                                  VT acc[MR][2]) {                     \
        VT c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};      \
        for (int k = 0; k < K; k++) {                                                                   \
            const T *a = Ap + (size_t)k * MR, *b = Bp + (size_t)k * NR_##SUF;                           \
            VT b0, b1;                                                                                  \
            memcpy(&b0, b, sizeof b0);                                                                  \
            memcpy(&b1, b + (VL), sizeof b1);                                                           \
            c00 += a[0] * b0, c01 += a[0] * b1;                                                         \
            c10 += a[1] * b0, c11 += a[1] * b1;                                                         \
            c20 += a[2] * b0, c21 += a[2] * b1;                                                         \
            c30 += a[3] * b0, c31 += a[3] * b1;                                                         \
        }                                                                                               \
        acc[0][0] = c00, acc[0][1] = c01, acc[1][0] = c10, acc[1][1] = c11;                             \
        acc[2][0] = c20, acc[2][1] = c21, acc[3][0] = c30, acc[3][1] = c31;                             \
    }                                                                                                   \
    static inline __attribute__((always_inline)) void store_##SUF(VT acc[MR][2], int i0, int j0, int M,  \
                                                                  int N, T alpha, T beta, T *C, int ldc) { \
        for (int r = 0; r < MR && i0 + r < M; r++) {                                                    \
            T v[NR_##SUF];                                                                              \
            memcpy(v, acc[r], sizeof v);                                                                \
            T *c = C + (size_t)(i0 + r) * ldc + j0;                                                     \
            int n = N - j0 < NR_##SUF ? N - j0 : NR_##SUF;                                              \
            for (int j = 0; j < n; j++) c[j] = beta == 0 ? alpha * v[j] : alpha * v[j] + beta * c[j];   \
        }                                                                                               \
    }                                                                                                   \
    static inline __attribute__((always_inline)) void body_##SUF(int ta, int tb, int M, int N, int K,   \
                                                                 T alpha, const T *A, int lda,         \
                                                                 const T *B, int ldb, T beta, T *C,    \
                                                                 int ldc) {                            \
        if (M <= 0 || N <= 0) return;                                                                   \
        if (K < 0) K = 0;                                                                               \
        int np = (N + NR_##SUF - 1) / NR_##SUF;                                                         \
        T *Bp = panel_alloc(sizeof(T) * (size_t)np * K * NR_##SUF), *Ap = panel_alloc(sizeof(T) * (size_t)K * MR); \
        pack_b_##SUF(Bp, tb, N, K, B, ldb);                                                             \
        for (int i0 = 0; i0 < M; i0 += MR) {                                                            \
            pack_a_##SUF(Ap, ta, i0, M, K, A, lda);                                                     \
            for (int p = 0; p < np; p++) {                                                              \
                VT acc[MR][2];                                                                          \
                block_##SUF(K, Ap, Bp + (size_t)p * K * NR_##SUF, acc);                                 \
                store_##SUF(acc, i0, p * NR_##SUF, M, N, alpha, beta, C, ldc);                          \
            }                                                                                           \
        }                                                                                               \
        free(Ap);                                                                                       \
        free(Bp);                                                                                       \
    }                                                                                                   \
    ATTR static void run_##SUF(int ta, int tb, int M, int N, int K, T alpha, const T *A, int lda,      \
                               const T *B, int ldb, T beta, T *C, int ldc) {                            \
        body_##SUF(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);                               \
    }

/* AVX2 kernels use 256-bit vectors; the baseline ones 128-bit, which fit its 16 registers. */
#define AVX2 __attribute__((target("avx2")))
DEFINE_GEMM(float, v8f, 8, avx2_f32, AVX2)
DEFINE_GEMM(float, v4f, 4, base_f32, )
DEFINE_GEMM(double, v4d, 4, avx2_f64, AVX2)
DEFINE_GEMM(double, v2d, 2, base_f64, )

/* Chosen once at start-up, before any OpenMP thread exists. */
static int use_avx2;

__attribute__((constructor)) static void gemm_choose(void) {
    const char *force = getenv("ATTNCODA_GEMM");
    __builtin_cpu_init();
    use_avx2 = !(force && strcmp(force, "sse2") == 0) && __builtin_cpu_supports("avx2");
}

const char *gemm_isa(void) { return use_avx2 ? "avx2" : "sse2"; }

void gemm_f32(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
    (use_avx2 ? run_avx2_f32 : run_base_f32)(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_f64(int trans_a, int trans_b, int M, int N, int K, double alpha, const double *A, int lda,
              const double *B, int ldb, double beta, double *C, int ldc) {
    (use_avx2 ? run_avx2_f64 : run_base_f64)(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* gemm: see gemm.h for the exact definition of every output element.
 *
 * Layout (Goto-style, but without ever splitting a sum): op(B) is packed once per call into
 * panels of NR columns (k-major, zero-padded), op(A) into blocks of MR rows for MC rows and KC
 * values of k at a time, so that an A block stays in L2 and a KC×NR slice of a B panel in L1 while
 * every MR-row block of the A block passes over it. An MR×NR block of C is accumulated in
 * registers over KC values of k, in order; between k blocks the partial sums wait in a workspace
 * (storing and reloading a float is exact), and k blocks are taken in increasing order, so each
 * element is still the one sequential sum k = 0, 1, … of gemm.h. Vectors run across the NR
 * columns only, so each lane is one element's own sequential sum and the vector width cannot
 * change a bit; the MR×2 accumulators are independent add chains, enough to hide the add latency.
 * The same body is compiled twice, for AVX2 and for the x86-64 baseline; fp-contract is off for
 * the whole build (Makefile), and the AVX2 clone does not enable FMA, so no multiply-add is ever
 * fused. */
#include "gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* MR rows × 2 vectors = 12 accumulators, which with the two B vectors, a broadcast A value and a
 * product fill the 16 vector registers of both AVX2 and the baseline. KC·NR·sizeof(float) = 16 KiB
 * of B stays in L1; MC·KC·4 = 120 KiB of A in L2. */
enum { MR = 6, KC = 256, MC = 120 };

typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
typedef double v2d __attribute__((vector_size(16)));

static void *panel_alloc(size_t bytes) {
    bytes = (bytes + 31) / 32 * 32;
    void *p = aligned_alloc(32, bytes ? bytes : 32);
    if (!p) {
        char msg[64];
        snprintf(msg, sizeof msg, "gemm: out of memory (%zu bytes)", bytes);
        util_out_of_memory(msg);
    }
    return p;
}

#define GEMM_ROW_ACC(r, VT, VL) VT c##r##0 = {0}, c##r##1 = {0};
#define GEMM_ROW_LOAD(r, VT, VL) memcpy(&c##r##0, W + (r) * 2 * (VL), sizeof(VT)); memcpy(&c##r##1, W + (r) * 2 * (VL) + (VL), sizeof(VT));
#define GEMM_ROW_STEP(r, VT, VL) c##r##0 += a[r] * b0; c##r##1 += a[r] * b1;
#define GEMM_ROW_SAVE(r, VT, VL) memcpy(W + (r) * 2 * (VL), &c##r##0, sizeof(VT)); memcpy(W + (r) * 2 * (VL) + (VL), &c##r##1, sizeof(VT));
#define GEMM_ROWS(X, VT, VL) X(0, VT, VL) X(1, VT, VL) X(2, VT, VL) X(3, VT, VL) X(4, VT, VL) X(5, VT, VL)

/* DEFINE_GEMM(T, VT, VL, SUF, ATTR): gemm_SUF over element type T with vectors VT of VL elements;
 * an NR = 2·VL column panel; ATTR is the target attribute of its entry point. */
#define DEFINE_GEMM(T, VT, VL, SUF, ATTR)                                                                \
    enum { NR_##SUF = 2 * (VL) };                                                                        \
    static inline __attribute__((always_inline)) void pack_b_##SUF(T *Bp, int trans_b, int N, int K,     \
                                                                   const T *B, int ldb) {               \
        enum { NR = NR_##SUF };                                                                          \
        for (int j0 = 0, p = 0; j0 < N; j0 += NR, p++) {                                                 \
            int n = N - j0 < NR ? N - j0 : NR;                                                           \
            for (int k = 0; k < K; k++) {                                                                \
                T *dst = Bp + ((size_t)p * K + k) * NR;                                                  \
                if (trans_b)                                                                             \
                    for (int c = 0; c < n; c++) dst[c] = B[(size_t)(j0 + c) * ldb + k];                  \
                else                                                                                     \
                    memcpy(dst, B + (size_t)k * ldb + j0, sizeof(T) * n);                                \
                for (int c = n; c < NR; c++) dst[c] = 0;                                                 \
            }                                                                                            \
        }                                                                                                \
    }                                                                                                    \
    /* rows i0 … i0+mc−1 and k = k0 … k0+kc−1 of op(A), as MR-row blocks each k-major */               \
    static inline __attribute__((always_inline)) void pack_a_##SUF(T *Ap, int trans_a, int i0, int mc,   \
                                                                   int M, int k0, int kc, const T *A,   \
                                                                   int lda) {                           \
        for (int ib = 0; ib < mc; ib += MR, Ap += (size_t)kc * MR)                                       \
            for (int r = 0; r < MR; r++) {                                                               \
                int i = i0 + ib + r;                                                                     \
                if (i >= M || ib + r >= mc)                                                              \
                    for (int k = 0; k < kc; k++) Ap[(size_t)k * MR + r] = 0;                             \
                else if (trans_a)                                                                        \
                    for (int k = 0; k < kc; k++) Ap[(size_t)k * MR + r] = A[(size_t)(k0 + k) * lda + i]; \
                else                                                                                     \
                    for (int k = 0; k < kc; k++) Ap[(size_t)k * MR + r] = A[(size_t)i * lda + k0 + k];   \
            }                                                                                            \
    }                                                                                                    \
    /* W: the MR×NR partial sums of this block (read unless first); named accumulators, not an     \
     * array, so that they stay in registers. */                                                       \
    static inline __attribute__((always_inline)) void block_##SUF(int kc, const T *Ap, const T *Bp,      \
                                                                  int first, T *W) {                    \
        enum { NR = NR_##SUF };                                                                          \
        GEMM_ROWS(GEMM_ROW_ACC, VT, VL)                                                                          \
        if (!first) { GEMM_ROWS(GEMM_ROW_LOAD, VT, VL) }                                                         \
        for (int k = 0; k < kc; k++) {                                                                   \
            const T *a = Ap + (size_t)k * MR, *b = Bp + (size_t)k * NR;                                  \
            VT b0, b1;                                                                                   \
            memcpy(&b0, b, sizeof b0);                                                                   \
            memcpy(&b1, b + (VL), sizeof b1);                                                            \
            GEMM_ROWS(GEMM_ROW_STEP, VT, VL)                                                                     \
        }                                                                                                \
        GEMM_ROWS(GEMM_ROW_SAVE, VT, VL)                                                                         \
    }                                                                                                    \
    static inline __attribute__((always_inline)) void store_##SUF(const T *W, int i0, int j0, int M,     \
                                                                  int N, T alpha, T beta, T *C,         \
                                                                  int ldc) {                            \
        enum { NR = NR_##SUF };                                                                          \
        int n = N - j0 < NR ? N - j0 : NR;                                                               \
        for (int r = 0; r < MR && i0 + r < M; r++) {                                                     \
            const T *v = W + r * NR;                                                                     \
            T *c = C + (size_t)(i0 + r) * ldc + j0;                                                      \
            if (beta == 0)                                                                               \
                for (int j = 0; j < n; j++) c[j] = alpha * v[j];                                         \
            else                                                                                         \
                for (int j = 0; j < n; j++) c[j] = alpha * v[j] + beta * c[j];                           \
        }                                                                                                \
    }                                                                                                    \
    static inline __attribute__((always_inline)) void body_##SUF(int ta, int tb, int M, int N, int K,    \
                                                                 T alpha, const T *A, int lda,          \
                                                                 const T *B, int ldb, T beta, T *C,     \
                                                                 int ldc) {                             \
        enum { NR = NR_##SUF };                                                                          \
        if (M <= 0 || N <= 0) return;                                                                    \
        if (K < 0) K = 0;                                                                                \
        int np = (N + NR - 1) / NR, nkb = K > KC ? (K + KC - 1) / KC : 1;                                \
        int mcmax = (M < MC ? M : MC) + MR - 1, kcmax = K < KC ? K : KC;                                 \
        mcmax -= mcmax % MR;                                                                             \
        T *Bp = panel_alloc(sizeof(T) * (size_t)np * K * NR);                                            \
        T *Ap = panel_alloc(sizeof(T) * (size_t)mcmax * kcmax);                                          \
        /* partial sums of every block of the MC rows when k is split, else one block's */           \
        T *Wk = panel_alloc(sizeof(T) * (nkb > 1 ? (size_t)mcmax * np * NR : (size_t)MR * NR));          \
        pack_b_##SUF(Bp, tb, N, K, B, ldb);                                                              \
        for (int i0 = 0; i0 < M; i0 += MC) {                                                             \
            int mc = M - i0 < MC ? M - i0 : MC;                                                          \
            for (int kb = 0; kb < nkb; kb++) {                                                           \
                int k0 = kb * KC, kc = K - k0 < KC ? K - k0 : KC, last = kb == nkb - 1;                  \
                pack_a_##SUF(Ap, ta, i0, mc, M, k0, kc, A, lda);                                         \
                for (int p = 0; p < np; p++) {                                                           \
                    const T *bp = Bp + ((size_t)p * K + k0) * NR;                                        \
                    for (int ib = 0; ib < mc; ib += MR) {                                                \
                        T *W = nkb > 1 ? Wk + ((size_t)(ib / MR) * np + p) * MR * NR : Wk;               \
                        block_##SUF(kc, Ap + (size_t)ib * kc, bp, kb == 0, W);                           \
                        if (last) store_##SUF(W, i0 + ib, p * NR, M, N, alpha, beta, C, ldc);            \
                    }                                                                                    \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
        free(Wk);                                                                                        \
        free(Ap);                                                                                        \
        free(Bp);                                                                                        \
    }                                                                                                    \
    ATTR static void run_##SUF(int ta, int tb, int M, int N, int K, T alpha, const T *A, int lda,       \
                               const T *B, int ldb, T beta, T *C, int ldc) {                             \
        body_##SUF(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);                                \
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

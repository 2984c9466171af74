/* queries_gemm: the single-thread GFLOP/s (process CPU time, best of 3 runs of >= 0.3 s) of the
 * kernels one forward pass with sampled queries spends its time in, on Llama-3.2-1B shapes:
 * the BF16 projections (gemm_half_xwt, rows x 2048 x 2048) and the attention blocks (gemm_f32,
 * 128 query rows: scores 128 x T x 64, context 128 x 64 x T). Argument: T. Prints
 * "proj GFLOPS", "scores GFLOPS", "context GFLOPS" lines for tests/bench/queries.sh. */
#include "core/gemm.h"
#include "core/gemm_half.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct { int kind, M, N, K; } shape;   /* kind 0: X·Wᵀ BF16; 1: A·Bᵀ f32; 2: A·B f32 */

static double gflops(shape s) {
    float *A = malloc(sizeof(float) * s.M * s.K), *B = malloc(sizeof(float) * s.K * s.N), *C = malloc(sizeof(float) * s.M * s.N);
    uint16_t *W = malloc(sizeof(uint16_t) * s.K * s.N);
    for (long i = 0; i < (long)s.M * s.K; i++) A[i] = (float)(i % 17) / 16 - 0.5f;
    for (long i = 0; i < (long)s.K * s.N; i++) B[i] = (float)(i % 13) / 12 - 0.5f, W[i] = 0x3c00 + (i % 7);
    double best = 0;
    for (int r = 0; r < 3; r++) {
        int calls = 0;
        double t0 = cpu_seconds(), t;
        do {
            if (s.kind == 0) gemm_half_xwt(s.M, s.N, s.K, A, s.K, (const unsigned char *)W, HALF_BF16, C, s.N);
            else if (s.kind == 1) gemm_f32(0, 1, s.M, s.N, s.K, 1, A, s.K, B, s.K, 0, C, s.N);
            else gemm_f32(0, 0, s.M, s.N, s.K, 1, A, s.K, B, s.N, 0, C, s.N);
            calls++;
        } while ((t = cpu_seconds() - t0) < 0.3);
        double g = 2.0 * s.M * s.N * s.K * calls / t / 1e9;
        best = g > best ? g : best;
    }
    free(A), free(B), free(C), free(W);
    return best;
}

int main(int argc, char **argv) {
    int T = argc > 1 ? atoi(argv[1]) : 2048;
    printf("proj\t%.3f\n", gflops((shape){0, 512, 2048, 2048}));
    printf("scores\t%.3f\n", gflops((shape){1, 128, T, 64}));
    printf("context\t%.3f\n", gflops((shape){2, 128, 64, T}));
    return 0;
}

/* gemm_bench: single-thread GFLOP/s of gemm_f32 on the training and ViT-B/16 shapes, measured in
 * process CPU time (the machine is shared, so wall time would measure the neighbours), best of
 * several repeats of at least 0.3 s each. Arguments: [repeats [part of a shape's name]]. Run it with ATTNCODA_GEMM=sse2 for the baseline kernel. */
#include "core/gemm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    static const struct { const char *what; int ta, tb, M, N, K; } shapes[] = {
        {"train qkv      x·W", 0, 0, 2048, 192, 64},
        {"train ff-up    x·W", 0, 0, 2048, 256, 96},
        {"train ff-down  x·W", 0, 0, 2048, 96, 256},
        {"train dX     dY·Wt", 0, 1, 2048, 96, 256},
        {"train dW     Xt·dY", 1, 0, 96, 256, 2048},
        {"train scores q·kt", 0, 1, 128, 128, 24},
        {"vit qkv/proj  N768", 0, 0, 197 * 8, 768, 768},
        {"vit mlp-up   N3072", 0, 0, 197 * 8, 3072, 768},
        {"vit mlp-down K3072", 0, 0, 197 * 8, 768, 3072},
    };
    int repeats = argc > 1 ? atoi(argv[1]) : 3;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        if (argc > 2 && !strstr(shapes[s].what, argv[2])) continue;
        int ta = shapes[s].ta, tb = shapes[s].tb, M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
        float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N), *C = malloc(sizeof(float) * M * N);
        for (int i = 0; i < M * K; i++) A[i] = (float)(i % 17) / 16 - 0.5f;
        for (int i = 0; i < K * N; i++) B[i] = (float)(i % 13) / 12 - 0.5f;
        double best = 0, flops = 2.0 * M * N * K;
        for (int r = 0; r < repeats; r++) {
            int calls = 0;
            double t0 = cpu_seconds(), t;
            do {
                gemm_f32(ta, tb, M, N, K, 1, A, ta ? M : K, B, tb ? K : N, 0, C, N);
                calls++;
            } while ((t = cpu_seconds() - t0) < 0.3);
            if (flops * calls / t > best) best = flops * calls / t;
        }
        printf("gemm_f32 %-5s %-20s M %5d N %5d K %5d  %6.1f GF/s\n", gemm_isa(), shapes[s].what, M, N, K, best / 1e9);
        free(A), free(B), free(C);
    }
    return 0;
}

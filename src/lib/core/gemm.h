/* gemm: the matrix product every model and the trainer use, C = alpha·op(A)·op(B) + beta·C in
 * row-major storage (the cblas_?gemm argument order, with 0/1 for no-transpose/transpose).
 *
 * Why not OpenBLAS: its kernel, and so its summation order, is chosen at run time from the CPU,
 * so the same binary gives different bits on different machines, and a training run amplifies
 * those last bits into a different model. Here every element of C is defined exactly:
 *   acc = 0; for k = 0 … K−1: acc = acc + a(i,k)·b(k,j)   (each product and sum rounded once)
 *   C(i,j) = alpha·acc                 when beta = 0 (C is not read)
 *   C(i,j) = alpha·acc + beta·C(i,j)   otherwise
 * The kernels only vectorise across j, never across k, and never fuse a multiply with an add, so
 * the result depends on the inputs alone: not on the CPU, the instruction set chosen (AVX2 or the
 * SSE2 baseline), the blocking, the thread count or how callers split rows and columns.
 *
 * gemm_isa() names the kernel in use; ATTNCODA_GEMM=sse2 in the environment forces the baseline
 * kernel (the tests use it to show that both give the same bits). */
#ifndef ATTNCODA_GEMM_H
#define ATTNCODA_GEMM_H

void gemm_f32(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);
void gemm_f64(int trans_a, int trans_b, int M, int N, int K, double alpha, const double *A, int lda,
              const double *B, int ldb, double beta, double *C, int ldc);
const char *gemm_isa(void);

#endif

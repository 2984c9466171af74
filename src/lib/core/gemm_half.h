/* gemm_half: weight matrices kept in their stored F16/BF16 precision (memory-mapped from the
 * safetensors file, 2 bytes per parameter) and widened to float32 a block of rows at a time.
 *
 * A kept matrix is handed to the forward pass as a "view": a float pointer into an address
 * range reserved with PROT_NONE (no memory behind it, so reading it directly faults instead of
 * giving wrong numbers). Offsets into a view map one to one onto elements of the half matrix, so
 * sub-matrices (qkv + d·d) work as for float32 weights. half_find() tells a view from an ordinary
 * float32 pointer; model.c's linear() and the embedding gather ask it.
 *
 * gemm_half_xwt() gives the same bits as widening the whole of W and calling gemm_f32 once: it
 * splits W only along its rows (the output columns of C), never along k, so every element of C
 * keeps gemm.h's summation order over k. Views are registered at load and dropped at release,
 * never while a forward pass runs. */
#ifndef ATTNCODA_GEMM_HALF_H
#define ATTNCODA_GEMM_HALF_H
#include <stddef.h>

typedef enum { HALF_F16 = 1, HALF_BF16 = 2 } half_kind;

/* A view of n little-endian half values at data (which may be unaligned); NULL when the address
 * range cannot be reserved. */
const float *half_view(const unsigned char *data, size_t n, half_kind kind);
void half_view_drop(const float *view);
/* 1 when p lies in a view: *data then points at p's element and *kind is set; else 0. */
int half_find(const float *p, const unsigned char **data, half_kind *kind);

/* A transposed view: the float32 matrix w stored [in][out] (GPT-2's Conv1D) seen as the
 * [out][in] matrix that nn.Linear stores and linear() expects, without a copy. The view is a
 * PROT_NONE range like a half view; view + o·in, the row of output o (sub-matrices such as
 * qkv + d·d included), is resolved by xposed_find to *col = w + o and *ld = out. gemm_f32(0, 0,
 * …, col, ld, …) then gives the bits gemm_f32(0, 1, …) gives on a transposed copy: op(B) holds
 * the same elements, and gemm.h's order over k does not depend on how B is stored. Dropped with
 * half_view_drop. NULL when the range cannot be reserved. */
const float *xposed_view(const float *w, size_t in, size_t out);
/* 1 when p lies in a transposed view at the start of an output row: *col and *ld as above. */
int xposed_find(const float *p, const float **col, int *ld);

void half_widen(float *dst, const unsigned char *src, size_t n, half_kind kind);
/* dst[0..n) = src[0..n) for a float32 pointer or a view (widened). */
void half_copy(float *dst, const float *src, size_t n);
/* C[M][N] (row stride ldc) = X[M][K] · Wᵀ, W the half matrix [N][K] (row-major, stride K). */
void gemm_half_xwt(int M, int N, int K, const float *X, int ldx, const unsigned char *W, half_kind kind,
                   float *C, int ldc);
#endif

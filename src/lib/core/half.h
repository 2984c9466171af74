/* half: the two 16-bit float formats of model files widened to float32, once for every reader
 * (safetensors, GGUF, arrays in .npy/.safetensors) and for gemm_half's block widening. Both are
 * exact: every binary16 and bfloat16 value, subnormals, infinities and NaN included, is a float32. */
#ifndef ATTNCODA_HALF_H
#define ATTNCODA_HALF_H
#include <stdint.h>

/* IEEE binary16 bits → float32. */
float half_f16_to_f32(uint16_t h);
/* bfloat16 bits (the upper half of a float32) → float32. */
float half_bf16_to_f32(uint16_t h);
#endif

/* mlm: the deterministic masking rule of extract's masked-LM perplexity (docs/EXTRACT.md,
 * "Masked-LM perplexity"). Which positions of a sequence are masked depends only on its tokens,
 * the rate, the seed and the sequence index, never on batching or threads, so every head-pruning
 * mask of a run is scored on the same positions. */
#ifndef ATTNCODA_MLM_H
#define ATTNCODA_MLM_H
#include <stdint.h>

/* The mt19937 seed of sequence s: (seed × 2654435761 + s) mod 2^32 (GSL turns 0 into 4357). */
unsigned long mlm_sequence_seed(long long seed, long long s);

/* Choose the masked positions of one sequence of T tokens: the candidates are the valid positions
 * whose id is not in special[0..nspecial); in increasing position order each is chosen when a
 * uniform draw in [0, 1) is below rate; when none is, one draw picks a single candidate uniformly.
 * chosen[T] receives 1/0. Returns the number chosen, 0 when the sequence has no candidate. */
int mlm_choose(const int32_t *ids, const uint8_t *valid, int T, const int *special, int nspecial, double rate,
               long long seed, long long s, uint8_t *chosen);
#endif

/* queries: which query rows extract --queries keeps (docs/EXTRACT.md, "Sampled query rows").
 * The positions of a sequence depend only on its validity mask, causality, N, the seed and the
 * sequence index: never on batching, threads, --layers/--heads or --mask. */
#ifndef ATTNCODA_QUERIES_H
#define ATTNCODA_QUERIES_H
#include <stdint.h>

/* The eligible positions of one sequence, ascending: valid queries (valid may be NULL: all),
 * and for causal models t ≥ 2 (rows of fewer than 3 keys enter no statistic, METHODS §1).
 * Returns their number E and writes them to e[T]. */
int queries_eligible(const uint8_t *valid, int T, int causal, int32_t *e);

/* N positions of sequence s, stratified: the E eligible positions split into N strata, stratum i
 * being e[⌊i·E/N⌋ … ⌊(i+1)·E/N⌋ − 1]; in order i = 0 … N−1 one position of each is drawn
 * uniformly with gsl_rng_uniform_int of a GSL mt19937 seeded (seed × 2654435761 + s) mod 2^32.
 * pos[N] is ascending. Returns E, or −E when E < N (nothing drawn). */
int queries_stratified(const uint8_t *valid, int T, int causal, int N, long long seed, long long s, int32_t *pos);
#endif

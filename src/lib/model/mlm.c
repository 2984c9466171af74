/* mlm: the masking rule of the masked-LM perplexity (mlm.h). */
#include <gsl/gsl_rng.h>
#include <string.h>

#include "mlm.h"

unsigned long mlm_sequence_seed(long long seed, long long s) {
    /* unsigned arithmetic wraps by definition; the multiplier (Knuth's 2^32/φ) spreads the run
     * seeds apart so that seed a, sequence s rarely reuses the stream of seed b, sequence s' */
    uint64_t v = (uint64_t)seed * 2654435761u + (uint64_t)s;
    return (unsigned long)(v & 0xffffffffu);
}

static int is_special(int32_t id, const int *special, int nspecial) {
    for (int i = 0; i < nspecial; i++)
        if (special[i] == id) return 1;
    return 0;
}

int mlm_choose(const int32_t *ids, const uint8_t *valid, int T, const int *special, int nspecial, double rate,
               long long seed, long long s, uint8_t *chosen) {
    memset(chosen, 0, (size_t)T);
    int ncand = 0, n = 0;
    for (int t = 0; t < T; t++) ncand += (!valid || valid[t]) && !is_special(ids[t], special, nspecial);
    if (!ncand) return 0;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, mlm_sequence_seed(seed, s));
    for (int t = 0; t < T; t++)
        if ((!valid || valid[t]) && !is_special(ids[t], special, nspecial) && gsl_rng_uniform(r) < rate) {
            chosen[t] = 1;
            n++;
        }
    if (!n) {   /* at least one position per sequence, so every sequence counts */
        unsigned long k = gsl_rng_uniform_int(r, (unsigned long)ncand);
        for (int t = 0; t < T; t++)
            if ((!valid || valid[t]) && !is_special(ids[t], special, nspecial) && k-- == 0) {
                chosen[t] = 1;
                n = 1;
                break;
            }
    }
    gsl_rng_free(r);
    return n;
}

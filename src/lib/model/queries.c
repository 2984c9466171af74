/* queries: the stratified choice of sampled query rows (queries.h). */
#include "queries.h"

#include <gsl/gsl_rng.h>
#include <stdlib.h>

#include "core/util.h"
#include "mlm.h"

int queries_eligible(const uint8_t *valid, int T, int causal, int32_t *e) {
    int E = 0;
    for (int t = causal ? 2 : 0; t < T; t++)
        if (!valid || valid[t]) e[E++] = t;
    return E;
}

int queries_stratified(const uint8_t *valid, int T, int causal, int N, long long seed, long long s, int32_t *pos) {
    int32_t *e = xmalloc(sizeof *e * (size_t)(T > 0 ? T : 1));
    int E = queries_eligible(valid, T, causal, e);
    if (E < N) {
        free(e);
        return -E;
    }
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, mlm_sequence_seed(seed, s));   /* the same per-sequence seed rule as --mlm-seed */
    for (int i = 0; i < N; i++) {
        long long lo = (long long)i * E / N, hi = (long long)(i + 1) * E / N;
        pos[i] = e[lo + (long long)gsl_rng_uniform_int(r, (unsigned long)(hi - lo))];
    }
    gsl_rng_free(r);
    free(e);
    return E;
}

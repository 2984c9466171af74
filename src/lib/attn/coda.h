/* coda: the compositional quantities of METHODS §2–§3 for one attention row, in double
 * precision, from natural-log probabilities ℓ_i = ln p_i of a row with D parts and sink index k.
 * Sums over a row use Neumaier compensation so rows of thousands of parts keep ~1e-15 relative
 * accuracy; log-probabilities down to −745 (float underflow of p) are handled exactly because
 * log-ratio quantities never exponentiate. */
#ifndef ATTNCODA_CODA_H
#define ATTNCODA_CODA_H
#include <stddef.h>

/* Close a log row in place (subtract its logsumexp); returns the logsumexp removed. */
double coda_close_log(double *logp, int D);
/* Neumaier-compensated sum of n doubles. */
double coda_sum(const double *x, int n);
/* ln Σ exp(x_i), stable. */
double coda_logsumexp(const double *x, int n);

typedef struct {
    double s;        /* sink mass p_k */
    double cmass;    /* content mass 1 − s, from the content parts (exact as s → 1) */
    double b;        /* sink balance √((D−1)/D)·(ℓ_k − mean_{j≠k} ℓ_j) */
    double cperp;    /* content dispersion (1/(D−1)) Σ_{i≠k} clr(π)_i² */
    double H;        /* entropy of p (nats) */
    double Hb;       /* binary entropy of s */
    double Hc;       /* entropy of the content π */
} coda_row;

/* All per-row quantities of METHODS §2. D ≥ 2 (≥ 3 for distances), 0 ≤ k < D. The row need
 * not be closed (its logsumexp is removed internally). */
void coda_row_stats(const double *logp, int D, int k, coda_row *out);
/* clr(p)_i = ℓ_i − mean ℓ. */
void coda_clr(const double *logp, int D, double *clr);
/* clr of the content: out[i] = ℓ_i − mean_{j≠k} ℓ_j for i ≠ k, out[k] = 0. */
void coda_clr_content(const double *logp, int D, int k, double *out);
double coda_sink_balance(const double *logp, int D, int k);
double coda_binary_entropy(double s);   /* H_b(s), 0 at s ∈ {0,1} */
/* 1 − s computed from log-probabilities without cancellation: Σ_{j≠k} p_j. */
double coda_content_mass(const double *logp, int D, int k);

/* Per-pair distances of METHODS §3 between two rows of the same D and sink k. */
typedef struct {
    double cos_keep, cos_drop;   /* cosine distance 1 − ⟨p,q⟩/(‖p‖‖q‖) */
    double js_keep, js_drop;     /* Jensen–Shannon divergence in bits */
    double euc_keep, euc_drop;   /* Euclidean ‖p − q‖ */
    double dA;                   /* Aitchison distance of the full rows */
    double dAperp_full;          /* content distance by projection of the full rows' clr */
    double dAperp_drop;          /* content distance from dropped, renormalised rows */
    double dbal;                 /* |b(p) − b(q)| */
} coda_pair;
void coda_pair_distances(const double *logp, const double *logq, int D, int k, coda_pair *out);

/* Single distances on probability vectors (no sink handling). */
double coda_cosine_dist(const double *p, const double *q, int n);
double coda_js_bits(const double *p, const double *q, int n);
double coda_euclid(const double *p, const double *q, int n);
/* Aitchison distance from log rows: ‖clr(p) − clr(q)‖. */
double coda_aitchison(const double *logp, const double *logq, int n);

/* Closed probabilities and content (π) from a log row: p_i = exp(ℓ_i); π has D−1 parts. */
void coda_probs(const double *logp, int D, double *p);
void coda_content_probs(const double *logp, int D, int k, double *pi);
/* Content log row (D−1 parts): ℓ_i − ln(1−s), i ≠ k. */
void coda_content_log(const double *logp, int D, int k, double *lpi);

/* Multiplicative zero replacement (Martín-Fernández et al. 2003) of a probability row in place:
 * zeros become δ, non-zeros shrink by (1 − z·δ) so the row still sums to 1. Returns the number of
 * replaced parts. Then converts to natural logs in place. */
int coda_zero_replace_log(double *p, int D, double delta);
#endif

/* test_coda: the identities, invariances and values of src/lib/attn/coda.h (METHODS §2–§3), checked
 * against an independent long-double reference written here from the definitions, on random rows
 * built directly as log-probabilities (D log-uniform in [3, 2048], sink mass up to 1 − 1e-12,
 * log-probabilities down to −700, sink index anywhere).
 *
 * Tolerance: |got − ref| ≤ 1e-9·|ref| + atol, atol by family, because the inputs are double
 * logs whose own rounding sets a resolution no implementation can beat:
 *   entropies, content mass            atol 1e-14 (row sums of double-log rows are 1 ± ~1e-15)
 *   cosine, JS, Euclidean (p-space)    atol 1e-13 (1 − cos and JS cancel to ~1e-16 near p ≈ q)
 *   log-ratio quantities (b, clr, d_A, d_A⊥)  a = 1e-13·(1 + max|ℓ|)·√D (rounding of ℓ_i − mean ℓ,
 *                                      accumulated over D parts); C⊥ a·(a + √C⊥); d_A² 2a·(d_A + a)
 *   zero replacement                   count and replaced values exact (1e-9 relative on ln δ),
 *                                      sum 1e-13, logs 1e-14·(1 + |ℓ|)
 * Identities and invariances compare the library with itself (same atol); the long-double
 * reference runs on every pair with D ≤ 64 and on every 40th larger one.
 * Output: one TAP line per property; the first failing case of each is printed as a comment.
 * Usage: test_coda [SEED] [NPAIRS]  (defaults 20260829, 50000 pairs = 100,000 rows). */
#include "attn/coda.h"
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DMAX 2048
#define REL 1e-9

/* ---------- property bookkeeping: one TAP line per property ---------- */
typedef struct {
    const char *name;
    long n, nfail;
    double worst;          /* largest |got − ref| / (REL·|ref| + atol) seen */
    char first[400];       /* the first failing case */
} prop;

enum { P_ENT_ID, P_PYTH, P_PERP_WAYS, P_PERTURB, P_POWER, P_PERMUTE, P_SINKMASS, P_DBAL,
       P_JS_RANGE, P_S, P_CMASS, P_B, P_CPERP, P_H, P_HB, P_HC, P_COSK, P_COSD, P_JSK, P_JSD,
       P_EUCK, P_EUCD, P_DA, P_DPF, P_DPD, P_CLR, P_CLRC, P_PROBS, P_CLOG, P_SINGLE, P_ZERO,
       P_SPECIAL, P_CLOSE, NPROP };
static prop props[NPROP] = {
    [P_ENT_ID] = {"entropy identity H = H_b(s) + (1-s)H(pi) (library values)", 0, 0, 0, ""},
    [P_PYTH] = {"Pythagorean identity d_A^2 = d_Aperp^2 + (b(p)-b(q))^2", 0, 0, 0, ""},
    [P_PERP_WAYS] = {"d_Aperp from full rows equals d_Aperp from dropped rows", 0, 0, 0, ""},
    [P_PERTURB] = {"invariance: common logit bias vector leaves d_Aperp unchanged", 0, 0, 0, ""},
    [P_POWER] = {"invariance: powering d_Aperp(p^a,q^a) = |a| d_Aperp(p,q)", 0, 0, 0, ""},
    [P_PERMUTE] = {"invariance: permuting content keys leaves d_Aperp and d_A unchanged", 0, 0, 0, ""},
    [P_SINKMASS] = {"invariance: changing sink masses with pi fixed leaves d_Aperp unchanged", 0, 0, 0, ""},
    [P_DBAL] = {"dbal = |b(p) - b(q)| and coda_sink_balance = row b", 0, 0, 0, ""},
    [P_JS_RANGE] = {"JS keep and drop in [0,1] bits", 0, 0, 0, ""},
    [P_S] = {"reference: sink mass s", 0, 0, 0, ""},
    [P_CMASS] = {"reference: content mass 1-s (coda_content_mass)", 0, 0, 0, ""},
    [P_B] = {"reference: sink balance b", 0, 0, 0, ""},
    [P_CPERP] = {"reference: content dispersion Cperp", 0, 0, 0, ""},
    [P_H] = {"reference: entropy H(p)", 0, 0, 0, ""},
    [P_HB] = {"reference: binary sink entropy H_b(s)", 0, 0, 0, ""},
    [P_HC] = {"reference: content entropy H(pi)", 0, 0, 0, ""},
    [P_COSK] = {"reference: cosine distance keep", 0, 0, 0, ""},
    [P_COSD] = {"reference: cosine distance drop", 0, 0, 0, ""},
    [P_JSK] = {"reference: Jensen-Shannon keep (bits)", 0, 0, 0, ""},
    [P_JSD] = {"reference: Jensen-Shannon drop (bits)", 0, 0, 0, ""},
    [P_EUCK] = {"reference: Euclidean keep", 0, 0, 0, ""},
    [P_EUCD] = {"reference: Euclidean drop", 0, 0, 0, ""},
    [P_DA] = {"reference: Aitchison d_A (pair and coda_aitchison)", 0, 0, 0, ""},
    [P_DPF] = {"reference: d_Aperp from full rows", 0, 0, 0, ""},
    [P_DPD] = {"reference: d_Aperp from dropped rows", 0, 0, 0, ""},
    [P_CLR] = {"reference: coda_clr", 0, 0, 0, ""},
    [P_CLRC] = {"reference: coda_clr_content", 0, 0, 0, ""},
    [P_PROBS] = {"reference: coda_probs and coda_content_probs", 0, 0, 0, ""},
    [P_CLOG] = {"reference: coda_content_log", 0, 0, 0, ""},
    [P_SINGLE] = {"reference: coda_cosine_dist/coda_js_bits/coda_euclid on prob vectors", 0, 0, 0, ""},
    [P_ZERO] = {"zero replacement: count, sum 1, zeros = delta, non-zero ratios kept", 0, 0, 0, ""},
    [P_SPECIAL] = {"hand-computed values (uniform row, (1/2,1/4,1/4), D=2, sums, logsumexp)", 0, 0, 0, ""},
    [P_CLOSE] = {"coda_close_log and coda_logsumexp against the reference", 0, 0, 0, ""},
};

/* Context of the current case, printed with the first failure of a property. */
static char ctx[160];

static void record(int id, const char *what, double got, double ref, double atol) {
    prop *p = &props[id];
    p->n++;
    double err = fabs(got - ref), lim = REL * fabs(ref) + atol;
    int bad = !(err <= lim);   /* NaN fails */
    double score = err == 0 ? 0 : isfinite(err) ? err / lim : INFINITY;
    if (score > p->worst || isnan(score)) p->worst = isnan(score) ? INFINITY : score;
    if (bad && p->nfail++ == 0)
        snprintf(p->first, sizeof p->first, "%s: %s got %.17g want %.17g (|diff| %.3g > tol %.3g)",
                 ctx, what, got, ref, err, lim);
}
static void record_bool(int id, const char *what, int good) {
    prop *p = &props[id];
    p->n++;
    if (!good && p->nfail++ == 0) snprintf(p->first, sizeof p->first, "%s: %s", ctx, what);
}

/* ---------- the long-double reference (definitions of METHODS §2–§3) ---------- */
typedef long double ld;

static ld ref_sum_exp_except(const double *l, int D, int skip) {
    ld s = 0;
    for (int i = 0; i < D; i++) if (i != skip) s += expl((ld)l[i]);
    return s;
}
static ld ref_mean_except(const double *l, int D, int skip) {
    ld s = 0;
    for (int i = 0; i < D; i++) if (i != skip) s += l[i];
    return s / (D - (skip >= 0));
}
/* content probabilities π (D−1 parts, order of keys with k left out) */
static void ref_content(const double *l, int D, int k, ld *pi) {
    ld c = ref_sum_exp_except(l, D, k);
    for (int i = 0, j = 0; i < D; i++) if (i != k) pi[j++] = expl((ld)l[i]) / c;
}
static ld ref_entropy(const ld *p, int n) {
    ld h = 0;
    for (int i = 0; i < n; i++) if (p[i] > 0) h -= p[i] * logl(p[i]);
    return h;
}
static ld ref_cos(const ld *p, const ld *q, int n) {
    ld pq = 0, pp = 0, qq = 0;
    for (int i = 0; i < n; i++) { pq += p[i] * q[i]; pp += p[i] * p[i]; qq += q[i] * q[i]; }
    return 1 - pq / (sqrtl(pp) * sqrtl(qq));
}
static ld ref_js(const ld *p, const ld *q, int n) {
    ld a = 0;
    for (int i = 0; i < n; i++) {
        ld m = (p[i] + q[i]) / 2;
        if (p[i] > 0) a += p[i] * logl(p[i] / m);
        if (q[i] > 0) a += q[i] * logl(q[i] / m);
    }
    return a / 2 / logl(2.0L);
}
static ld ref_euc(const ld *p, const ld *q, int n) {
    ld a = 0;
    for (int i = 0; i < n; i++) a += (p[i] - q[i]) * (p[i] - q[i]);
    return sqrtl(a);
}
/* ‖clr(x) − clr(y)‖ over the parts i ≠ skip (skip = −1: all parts) */
static ld ref_aitchison(const double *x, const double *y, int D, int skip) {
    ld mx = ref_mean_except(x, D, skip), my = ref_mean_except(y, D, skip), a = 0;
    for (int i = 0; i < D; i++) {
        if (i == skip) continue;
        ld d = ((ld)x[i] - mx) - ((ld)y[i] - my);
        a += d * d;
    }
    return sqrtl(a);
}
static ld ref_balance(const double *l, int D, int k) {
    return sqrtl((ld)(D - 1) / D) * ((ld)l[k] - ref_mean_except(l, D, k));
}

/* ---------- random rows built directly as log-probabilities ---------- */
static gsl_rng *rng;
static double unif(double a, double b) { return a + (b - a) * gsl_rng_uniform(rng); }
static double logunif(double a, double b) { return exp(unif(log(a), log(b))); }
static int rand_D(int lo, int hi) {
    int D = (int)floor(exp(unif(log(lo), log(hi + 1.0))));
    return D < lo ? lo : D > hi ? hi : D;
}

/* Close a log row in place as (x_i − max) − log1p(Σ_{i≠argmax} e^{x_i − max}): subtracting
 * the logsumexp directly would round the largest part to ulp(max) (1e-13 at max ≈ −600) and
 * leave rows off 1 by as much, which entropies of nearly one-hot rows would see. */
static void normalise_log(double *x, int n) {
    int a = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[a]) a = i;
    double m = x[a], rest = 0;
    for (int i = 0; i < n; i++) if (i != a) rest += exp(x[i] - m);
    double l = log1p(rest);
    for (int i = 0; i < n; i++) x[i] = (x[i] - m) - l;
}

/* Content log-composition lpi (n parts, normalised): random logits or log-Dirichlet, with a
 * spread of at most 665 (so, with ln(1 − s) ≥ −27.7 and ln D ≤ 7.7, rows stay above −700.2). */
static void rand_content(double *lpi, int n) {
    int mode = (int)gsl_rng_uniform_int(rng, 4);
    if (mode == 0) {            /* Gaussian logits, σ log-uniform in [1e-6, 30] */
        double sd = logunif(1e-6, 30);
        for (int i = 0; i < n; i++) lpi[i] = gsl_ran_gaussian(rng, sd);
    } else if (mode == 1) {     /* uniform logits over a wide range, down to −660 */
        double R = logunif(1, 665);
        for (int i = 0; i < n; i++) lpi[i] = -R * gsl_rng_uniform(rng);
    } else {                    /* log-Dirichlet(α): ln G(α) = ln G(α+1) + ln(U)/α, no underflow */
        double a = logunif(0.02, 50);
        for (int i = 0; i < n; i++)
            lpi[i] = log(gsl_ran_gamma(rng, a + 1, 1)) + log(gsl_rng_uniform_pos(rng)) / a;
    }
    double mx = -INFINITY;
    for (int i = 0; i < n; i++) if (lpi[i] > mx) mx = lpi[i];
    for (int i = 0; i < n; i++) if (lpi[i] < mx - 665) lpi[i] = mx - 665 + unif(0, 1);
    normalise_log(lpi, n);
}

/* Sink log-mass ls = ln s and lc = ln(1 − s), both exact (no 1 − s cancellation). */
static void rand_sink(double *ls, double *lc) {
    int mode = (int)gsl_rng_uniform_int(rng, 5);
    if (mode <= 1) { double s = unif(1e-3, 1 - 1e-3); *ls = log(s); *lc = log1p(-s); }
    else if (mode == 2) { double e = pow(10, -unif(0.3, 12)); *ls = log1p(-e); *lc = log(e); }
    else if (mode == 3) { double s = pow(10, -unif(0.3, 12)); *ls = log(s); *lc = log1p(-s); }
    else { *ls = -unif(27, 700); *lc = log1p(-exp(*ls)); }
}

/* Row = sink part at k with log ls, content parts lc + lpi in key order. */
static void compose(double *l, int D, int k, double ls, double lc, const double *lpi) {
    for (int i = 0, j = 0; i < D; i++) l[i] = i == k ? ls : lc + lpi[j++];
}

static double max_abs(const double *x, const double *y, int D) {
    double m = 0;
    for (int i = 0; i < D; i++) { if (fabs(x[i]) > m) m = fabs(x[i]); if (fabs(y[i]) > m) m = fabs(y[i]); }
    return m;
}
static double log_atol(const double *x, const double *y, int D) {
    return 1e-13 * (1 + max_abs(x, y, D)) * sqrt(D);
}

/* ---------- checks ---------- */
static ld lp[DMAX], lq[DMAX], lpi_p[DMAX], lpi_q[DMAX];

/* Every per-row quantity and every pair distance of (x, y) against the long-double reference. */
static void check_reference(const double *x, const double *y, int D, int k) {
    coda_row rx;
    coda_row_stats(x, D, k, &rx);
    double la = log_atol(x, y, D);
    record(P_S, "s", rx.s, (double)expl((ld)x[k]), 1e-14);
    ld c = ref_sum_exp_except(x, D, k);
    record(P_CMASS, "content mass", coda_content_mass(x, D, k), (double)c, 1e-300);
    record(P_B, "b", rx.b, (double)ref_balance(x, D, k), la);
    ld mc = ref_mean_except(x, D, k), cp = 0;
    for (int i = 0; i < D; i++) if (i != k) cp += ((ld)x[i] - mc) * ((ld)x[i] - mc);
    record(P_CPERP, "Cperp", rx.cperp, (double)(cp / (D - 1)), la * la + la * sqrtl(cp / (D - 1)));
    for (int i = 0; i < D; i++) lp[i] = expl((ld)x[i]);
    record(P_H, "H", rx.H, (double)ref_entropy(lp, D), 1e-14);
    ld s = lp[k];
    record(P_HB, "Hb", rx.Hb, (double)(-s * logl(s) - c * logl(c)), 1e-14);
    ref_content(x, D, k, lpi_p);
    record(P_HC, "Hc", rx.Hc, (double)ref_entropy(lpi_p, D - 1), 1e-14);

    coda_pair pr;
    coda_pair_distances(x, y, D, k, &pr);
    for (int i = 0; i < D; i++) lq[i] = expl((ld)y[i]);
    ref_content(y, D, k, lpi_q);
    record(P_COSK, "cos_keep", pr.cos_keep, (double)ref_cos(lp, lq, D), 1e-13);
    record(P_COSD, "cos_drop", pr.cos_drop, (double)ref_cos(lpi_p, lpi_q, D - 1), 1e-13);
    record(P_JSK, "js_keep", pr.js_keep, (double)ref_js(lp, lq, D), 1e-13);
    record(P_JSD, "js_drop", pr.js_drop, (double)ref_js(lpi_p, lpi_q, D - 1), 1e-13);
    record(P_EUCK, "euc_keep", pr.euc_keep, (double)ref_euc(lp, lq, D), 1e-13);
    record(P_EUCD, "euc_drop", pr.euc_drop, (double)ref_euc(lpi_p, lpi_q, D - 1), 1e-13);
    double dA = (double)ref_aitchison(x, y, D, -1), dP = (double)ref_aitchison(x, y, D, k);
    record(P_DA, "dA", pr.dA, dA, la);
    record(P_DA, "coda_aitchison", coda_aitchison(x, y, D), dA, la);
    record(P_DPF, "dAperp_full", pr.dAperp_full, dP, la);
    record(P_DPD, "dAperp_drop", pr.dAperp_drop, dP, la);
}

/* The library's helpers that return vectors, against the reference. */
static double vbuf[DMAX], vbuf2[DMAX];
static void check_vectors(const double *x, int D, int k) {
    double la = log_atol(x, x, D);
    coda_clr(x, D, vbuf);
    ld m = ref_mean_except(x, D, -1);
    for (int i = 0; i < D; i++) record(P_CLR, "clr", vbuf[i], (double)((ld)x[i] - m), la);
    coda_clr_content(x, D, k, vbuf);
    ld mc = ref_mean_except(x, D, k);
    for (int i = 0; i < D; i++)
        record(P_CLRC, "clr_content", vbuf[i], i == k ? 0.0 : (double)((ld)x[i] - mc), la);
    coda_probs(x, D, vbuf);
    for (int i = 0; i < D; i++) record(P_PROBS, "probs", vbuf[i], (double)expl((ld)x[i]), 1e-300);
    coda_content_probs(x, D, k, vbuf);
    ref_content(x, D, k, lpi_p);
    for (int i = 0; i < D - 1; i++) record(P_PROBS, "content_probs", vbuf[i], (double)lpi_p[i], 1e-300);
    coda_content_log(x, D, k, vbuf);
    ld lc = logl(ref_sum_exp_except(x, D, k));
    for (int i = 0, j = 0; i < D; i++)
        if (i != k) { record(P_CLOG, "content_log", vbuf[j], (double)((ld)x[i] - lc), la); j++; }
    record(P_DBAL, "coda_sink_balance", coda_sink_balance(x, D, k), (double)ref_balance(x, D, k), la);
}

/* Single distances on arbitrary probability vectors (with zeros) against the reference. */
static void check_single(int n) {
    int nz = (int)gsl_rng_uniform_int(rng, (unsigned long)n / 2 + 1);
    for (int pass = 0; pass < 2; pass++) {
        double *v = pass ? vbuf2 : vbuf, sum = 0;
        for (int i = 0; i < n; i++) { v[i] = gsl_ran_exponential(rng, 1); sum += v[i]; }
        for (int i = 0; i < n; i++) v[i] /= sum;
        for (int z = 0; z < nz; z++) v[gsl_rng_uniform_int(rng, n)] = 0;
    }
    ld *P = lp, *Q = lq;
    for (int i = 0; i < n; i++) { P[i] = vbuf[i]; Q[i] = vbuf2[i]; }
    ld sp = 0, sq = 0;
    for (int i = 0; i < n; i++) { sp += P[i]; sq += Q[i]; }
    if (sp == 0 || sq == 0) return;
    record(P_SINGLE, "coda_cosine_dist", coda_cosine_dist(vbuf, vbuf2, n), (double)ref_cos(P, Q, n), 1e-13);
    record(P_SINGLE, "coda_euclid", coda_euclid(vbuf, vbuf2, n), (double)ref_euc(P, Q, n), 1e-13);
    /* JS is defined on closed compositions; close both first (zeros stay zeros). */
    for (int i = 0; i < n; i++) { vbuf[i] /= (double)sp; vbuf2[i] /= (double)sq; P[i] = vbuf[i]; Q[i] = vbuf2[i]; }
    record(P_SINGLE, "coda_js_bits", coda_js_bits(vbuf, vbuf2, n), (double)ref_js(P, Q, n), 1e-13);
}

static double x[DMAX], y[DMAX], x2[DMAX], y2[DMAX], cp_[DMAX], cq_[DMAX], beta[DMAX];
static int perm[DMAX];

/* Identities and invariances on one random pair (library against itself). */
static void check_identities(int D, int k) {
    coda_row rx, ry;
    coda_pair pr, p2;
    coda_row_stats(x, D, k, &rx);
    coda_row_stats(y, D, k, &ry);
    coda_pair_distances(x, y, D, k, &pr);
    double la = log_atol(x, y, D);

    double cx = coda_content_mass(x, D, k);
    record(P_ENT_ID, "H vs Hb + (1-s)Hc", rx.H, rx.Hb + cx * rx.Hc, 1e-14);
    record(P_PYTH, "dA^2 vs dperp^2 + db^2", pr.dA * pr.dA,
           pr.dAperp_full * pr.dAperp_full + (rx.b - ry.b) * (rx.b - ry.b), 2 * la * (pr.dA + la));
    record(P_PERP_WAYS, "full vs drop", pr.dAperp_full, pr.dAperp_drop, la);
    record(P_DBAL, "dbal", pr.dbal, fabs(rx.b - ry.b), la);
    record_bool(P_JS_RANGE, "js_keep outside [0,1]", pr.js_keep >= 0 && pr.js_keep <= 1);
    record_bool(P_JS_RANGE, "js_drop outside [0,1]", pr.js_drop >= 0 && pr.js_drop <= 1);

    /* perturbation: the same logit bias on both rows' scores, then renormalise */
    double sd = logunif(0.01, 5);
    for (int i = 0; i < D; i++) beta[i] = gsl_ran_gaussian(rng, sd);
    for (int i = 0; i < D; i++) { x2[i] = x[i] + beta[i]; y2[i] = y[i] + beta[i]; }
    normalise_log(x2, D);
    normalise_log(y2, D);
    coda_pair_distances(x2, y2, D, k, &p2);
    double la2 = log_atol(x2, y2, D) + la;
    record(P_PERTURB, "dAperp_full after bias", p2.dAperp_full, pr.dAperp_full, la2);
    record(P_PERTURB, "dAperp_drop after bias", p2.dAperp_drop, pr.dAperp_drop, la2);

    /* powering: p^α renormalised, α ∈ [−3, 3] */
    double a = unif(-3, 3);
    for (int i = 0; i < D; i++) { x2[i] = a * x[i]; y2[i] = a * y[i]; }
    normalise_log(x2, D);
    normalise_log(y2, D);
    coda_pair_distances(x2, y2, D, k, &p2);
    la2 = log_atol(x2, y2, D) + fabs(a) * la;
    snprintf(ctx + strlen(ctx), sizeof ctx - strlen(ctx), " alpha=%.17g", a);
    record(P_POWER, "dAperp_full of powered rows", p2.dAperp_full, fabs(a) * pr.dAperp_full, la2);
    record(P_POWER, "dAperp_drop of powered rows", p2.dAperp_drop, fabs(a) * pr.dAperp_drop, la2);

    /* permutation of the content keys (sink stays at k), the same for both rows */
    int n = 0;
    for (int i = 0; i < D; i++) if (i != k) perm[n++] = i;
    gsl_ran_shuffle(rng, perm, (size_t)n, sizeof(int));
    for (int i = 0, j = 0; i < D; i++) {
        int src = i == k ? k : perm[j++];
        x2[i] = x[src]; y2[i] = y[src];
    }
    coda_pair_distances(x2, y2, D, k, &p2);
    record(P_PERMUTE, "dAperp_full permuted", p2.dAperp_full, pr.dAperp_full, la);
    record(P_PERMUTE, "dAperp_drop permuted", p2.dAperp_drop, pr.dAperp_drop, la);
    record(P_PERMUTE, "dA permuted", p2.dA, pr.dA, la);

    /* sink mass: new s for each row, content π unchanged */
    double ls1, lc1, ls2, lc2;
    rand_sink(&ls1, &lc1);
    rand_sink(&ls2, &lc2);
    for (int i = 0, j = 0; i < D; i++) {
        if (i == k) { x2[i] = ls1; y2[i] = ls2; continue; }
        x2[i] = lc1 + cp_[j]; y2[i] = lc2 + cq_[j]; j++;
    }
    coda_pair_distances(x2, y2, D, k, &p2);
    la2 = log_atol(x2, y2, D) + la;
    record(P_SINKMASS, "dAperp_full new sink", p2.dAperp_full, pr.dAperp_full, la2);
    record(P_SINKMASS, "dAperp_drop new sink", p2.dAperp_drop, pr.dAperp_drop, la2);
}

/* Zero replacement of probability rows with z zeros. */
static void check_zero_replace(int D) {
    int z = (int)gsl_rng_uniform_int(rng, (unsigned long)D);   /* 0 ≤ z < D */
    double delta = gsl_rng_uniform_int(rng, 2) ? 1e-9 : logunif(1e-12, 1e-4 / D);
    double *p = vbuf, *orig = vbuf2;
    for (int i = 0; i < D; i++) p[i] = gsl_ran_exponential(rng, 1);
    for (int i = 0; i < D; i++) perm[i] = i;
    gsl_ran_shuffle(rng, perm, (size_t)D, sizeof(int));
    for (int i = 0; i < z; i++) p[perm[i]] = 0;
    ld s = 0;
    for (int i = 0; i < D; i++) s += p[i];
    for (int i = 0; i < D; i++) { p[i] = (double)(p[i] / s); orig[i] = p[i]; }
    int got = coda_zero_replace_log(p, D, delta);
    record(P_ZERO, "replaced count", got, z, 0);
    ld sum = 0;
    for (int i = 0; i < D; i++) sum += expl((ld)p[i]);
    record(P_ZERO, "sum of exp after replacement", (double)sum, 1.0, 1e-13);
    ld shrink = log1pl(-(ld)z * delta);
    int first = -1;
    for (int i = 0; i < D; i++) {
        if (orig[i] == 0) { record(P_ZERO, "replaced log value", p[i], log(delta), 0); continue; }
        record(P_ZERO, "non-zero log value", p[i], (double)(logl(orig[i]) + shrink), 1e-14 * (1 + fabs(p[i])));
        if (first < 0) first = i;
        else record(P_ZERO, "non-zero log ratio", p[i] - p[first], log(orig[i] / orig[first]),
                    1e-13 * (1 + fabs(p[i])));
    }
}

/* Closing an unnormalised log row: returns its logsumexp, leaves a row with logsumexp 0. */
static void check_close(int D) {
    double shift = unif(-800, 800), sd = logunif(1e-3, 200);
    for (int i = 0; i < D; i++) vbuf[i] = shift + gsl_ran_gaussian(rng, sd);
    ld m = -INFINITY, acc = 0;
    for (int i = 0; i < D; i++) if (vbuf[i] > m) m = vbuf[i];
    for (int i = 0; i < D; i++) acc += expl((ld)vbuf[i] - m);
    double lse = (double)(m + logl(acc)), tol = 1e-15 * (1 + fabs(lse));
    record(P_CLOSE, "coda_logsumexp", coda_logsumexp(vbuf, D), lse, tol);
    record(P_CLOSE, "coda_close_log return", coda_close_log(vbuf, D), lse, tol);
    acc = 0;
    for (int i = 0; i < D; i++) acc += expl((ld)vbuf[i]);
    record(P_CLOSE, "logsumexp of the closed row", (double)logl(acc), 0, tol);
}

/* Values computed by hand. */
static void check_special(void) {
    snprintf(ctx, sizeof ctx, "special");
    double l[64], u[64];
    /* p = (1/2, 1/4, 1/4), k = 0: b = √(2/3)·ln 2, C⊥ = 0, H = 1.5 ln 2, Hb = ln 2, Hc = ln 2 */
    l[0] = -log(2); l[1] = l[2] = -log(4);
    coda_row r;
    coda_row_stats(l, 3, 0, &r);
    record(P_SPECIAL, "b(1/2,1/4,1/4)", r.b, sqrt(2.0 / 3) * log(2), 1e-15);
    record(P_SPECIAL, "cperp(1/2,1/4,1/4)", r.cperp, 0, 1e-15);
    record(P_SPECIAL, "H(1/2,1/4,1/4)", r.H, 1.5 * log(2), 1e-15);
    record(P_SPECIAL, "Hb(1/2)", r.Hb, log(2), 1e-15);
    record(P_SPECIAL, "Hc(1/2,1/2)", r.Hc, log(2), 1e-15);
    record(P_SPECIAL, "s", r.s, 0.5, 1e-16);
    /* D = 2, (0.3, 0.7) with sink 1: one content part, so C⊥ = 0 and H(π) = 0 */
    double two[2] = {log(0.3), log(0.7)};
    coda_row_stats(two, 2, 1, &r);
    record(P_SPECIAL, "b(D=2)", r.b, sqrt(0.5) * (log(0.7) - log(0.3)), 1e-15);
    record(P_SPECIAL, "cperp(D=2)", r.cperp, 0, 1e-15);
    record(P_SPECIAL, "Hc(D=2)", r.Hc, 0, 1e-15);
    record(P_SPECIAL, "H(D=2)", r.H, -0.3 * log(0.3) - 0.7 * log(0.7), 1e-15);
    /* uniform row of D = 64: b = 0, C⊥ = 0, H = ln 64 */
    for (int i = 0; i < 64; i++) u[i] = -log(64);
    coda_row_stats(u, 64, 17, &r);
    record(P_SPECIAL, "b(uniform)", r.b, 0, 1e-15);
    record(P_SPECIAL, "H(uniform 64)", r.H, log(64), 1e-14);
    record(P_SPECIAL, "Hc(uniform 63)", r.Hc, log(63), 1e-14);
    /* disjoint peaks: JS → 1 bit, cosine → 1, Euclidean → √2 */
    double a[3] = {-700, 0, -700}, bq[3] = {-700, -700, 0};
    a[1] = log1p(-2 * exp(-700)); bq[2] = a[1];
    coda_pair pr;
    coda_pair_distances(a, bq, 3, 0, &pr);
    record(P_SPECIAL, "js_keep disjoint", pr.js_keep, 1, 1e-12);
    record(P_SPECIAL, "cos_keep disjoint", pr.cos_keep, 1, 1e-12);
    record(P_SPECIAL, "euc_keep disjoint", pr.euc_keep, sqrt(2), 1e-12);
    /* identical rows: every distance 0 */
    coda_pair_distances(l, l, 3, 0, &pr);
    record(P_SPECIAL, "dA(p,p)", pr.dA, 0, 1e-15);
    record(P_SPECIAL, "js(p,p)", pr.js_keep, 0, 1e-15);
    record(P_SPECIAL, "cos(p,p)", pr.cos_keep, 0, 1e-15);
    /* the binary entropy endpoints */
    record(P_SPECIAL, "Hb(0)", coda_binary_entropy(0), 0, 0);
    record(P_SPECIAL, "Hb(1)", coda_binary_entropy(1), 0, 0);
    record(P_SPECIAL, "Hb(0.25)", coda_binary_entropy(0.25), -0.25 * log(0.25) - 0.75 * log(0.75), 1e-16);
    /* compensated sum and stable logsumexp */
    double v[4] = {1, 1e100, 1, -1e100};
    record(P_SPECIAL, "coda_sum(1,1e100,1,-1e100)", coda_sum(v, 4), 2, 0);
    double w[2] = {-1000, -1000}, w2[2] = {1000, 1000};
    record(P_SPECIAL, "logsumexp(-1000,-1000)", coda_logsumexp(w, 2), -1000 + log(2), 1e-12);
    record(P_SPECIAL, "logsumexp(1000,1000)", coda_logsumexp(w2, 2), 1000 + log(2), 1e-12);
}

int main(int argc, char **argv) {
    unsigned long seed = argc > 1 ? strtoul(argv[1], NULL, 10) : 20260829UL;
    long npairs = argc > 2 ? strtol(argv[2], NULL, 10) : 50000;
    gsl_rng_env_setup();
    rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);

    check_special();
    double min_l = 0, min_lc = 0;   /* coverage: lowest log-probability, lowest ln(1 − s) */
    int min_D = DMAX, max_D = 0;
    for (long t = 0; t < npairs; t++) {
        int D = rand_D(3, DMAX), k = (int)gsl_rng_uniform_int(rng, (unsigned long)D);
        double lsx, lcx, lsy, lcy;
        rand_content(cp_, D - 1);
        rand_sink(&lsx, &lcx);
        compose(x, D, k, lsx, lcx, cp_);
        int rel = (int)gsl_rng_uniform_int(rng, 4);
        if (rel == 0) {          /* same content, other sink mass (Theorem 1's pair A, B) */
            memcpy(cq_, cp_, sizeof(double) * (size_t)(D - 1));
        } else if (rel == 1) {   /* nearly identical content */
            double e = logunif(1e-8, 1e-1);
            for (int i = 0; i < D - 1; i++) cq_[i] = cp_[i] + gsl_ran_gaussian(rng, e);
            normalise_log(cq_, D - 1);
        } else {
            rand_content(cq_, D - 1);
        }
        rand_sink(&lsy, &lcy);
        if (rel == 1 && gsl_rng_uniform_int(rng, 2)) { lsy = lsx; lcy = lcx; }
        compose(y, D, k, lsy, lcy, cq_);
        for (int i = 0; i < D; i++) { if (x[i] < min_l) min_l = x[i]; if (y[i] < min_l) min_l = y[i]; }
        if (lcx < min_lc) min_lc = lcx;
        if (lcy < min_lc) min_lc = lcy;
        if (D < min_D) min_D = D;
        if (D > max_D) max_D = D;
        snprintf(ctx, sizeof ctx, "seed %lu pair %ld D=%d k=%d ln s=(%.6g,%.6g)", seed, t, D, k, lsx, lsy);
        check_identities(D, k);
        if (D <= 64 || t % 40 == 0) {   /* the reference on all small rows and some large ones */
            snprintf(ctx, sizeof ctx, "seed %lu pair %ld D=%d k=%d ln s=(%.6g,%.6g)", seed, t, D, k, lsx, lsy);
            check_reference(x, y, D, k);
            check_vectors(x, D, k);
        }
        if (t % 10 == 0) {
            int n = rand_D(2, 64);
            snprintf(ctx, sizeof ctx, "seed %lu pair %ld single n=%d", seed, t, n);
            check_single(n);
            int Dz = rand_D(3, DMAX);
            snprintf(ctx, sizeof ctx, "seed %lu pair %ld zero-replace D=%d", seed, t, Dz);
            check_zero_replace(Dz);
            check_close(rand_D(1, DMAX));
        }
    }
    gsl_rng_free(rng);
    printf("# %ld pairs (%ld rows), D in [%d, %d], lowest log-probability %.1f, "
           "largest sink mass 1 - %.3g\n", npairs, 2 * npairs, min_D, max_D, min_l, exp(min_lc));

    int nfail = 0;
    for (int i = 0; i < NPROP; i++) {
        prop *p = &props[i];
        if (p->n == 0) { printf("not ok - %s (never checked)\n", p->name); nfail++; continue; }
        if (p->nfail == 0) {
            printf("ok - %s (%ld checks, worst %.2g of tolerance)\n", p->name, p->n, p->worst);
        } else {
            printf("not ok - %s (%ld of %ld checks fail)\n# %s\n", p->name, p->nfail, p->n, p->first);
            nfail++;
        }
    }
    return nfail ? 1 : 0;
}

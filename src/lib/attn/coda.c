/* Compositional quantities of one attention row (METHODS §2–§3). Every function takes closed
 * natural-log probabilities (logsumexp = 0; programs close rows with coda_close_log first) and
 * works in log-ratio space where it can, so rows whose probabilities underflow stay exact. */
#include "coda.h"

#include <math.h>
#include <stdlib.h>

#define STACK_PARTS 4096

/* Neumaier's variant of Kahan summation: error independent of n for our row lengths. */
double coda_sum(const double *x, int n) {
    double s = 0, c = 0;
    for (int i = 0; i < n; i++) {
        double t = s + x[i];
        c += fabs(s) >= fabs(x[i]) ? (s - t) + x[i] : (x[i] - t) + s;
        s = t;
    }
    return s + c;
}

typedef struct { double s, c; } ksum;
static inline void kadd(ksum *k, double x) {
    double t = k->s + x;
    k->c += fabs(k->s) >= fabs(x) ? (k->s - t) + x : (x - t) + k->s;
    k->s = t;
}
static inline double kval(const ksum *k) { return k->s + k->c; }

double coda_logsumexp(const double *x, int n) {
    double m = -INFINITY;
    for (int i = 0; i < n; i++) if (x[i] > m) m = x[i];
    if (!isfinite(m)) return m;
    ksum k = {0, 0};
    for (int i = 0; i < n; i++) kadd(&k, exp(x[i] - m));
    return m + log(kval(&k));
}

/* logsumexp over all parts but k: ln(1 − s) without cancellation when s → 1. */
static double log_content_mass(const double *l, int D, int k) {
    double m = -INFINITY;
    for (int i = 0; i < D; i++) if (i != k && l[i] > m) m = l[i];
    if (!isfinite(m)) return m;
    ksum acc = {0, 0};
    for (int i = 0; i < D; i++) if (i != k) kadd(&acc, exp(l[i] - m));
    return m + log(kval(&acc));
}

double coda_content_mass(const double *logp, int D, int k) { return exp(log_content_mass(logp, D, k)); }

static double mean_except(const double *l, int D, int k) {
    ksum acc = {0, 0};
    for (int i = 0; i < D; i++) if (i != k) kadd(&acc, l[i]);
    return kval(&acc) / (D - 1);
}

double coda_binary_entropy(double s) {
    if (s <= 0 || s >= 1) return 0;
    return -s * log(s) - (1 - s) * log1p(-s);
}

double coda_sink_balance(const double *logp, int D, int k) {
    return sqrt((D - 1.0) / D) * (logp[k] - mean_except(logp, D, k));
}

void coda_clr(const double *logp, int D, double *clr) {
    double g = coda_sum(logp, D) / D;
    for (int i = 0; i < D; i++) clr[i] = logp[i] - g;
}

void coda_clr_content(const double *logp, int D, int k, double *out) {
    double g = mean_except(logp, D, k);
    for (int i = 0; i < D; i++) out[i] = i == k ? 0 : logp[i] - g;
}

/* One pass, one exp per part: with m = max content log and e_j = exp(ℓ_j − m),
 * ln(1−s) = m + ln Σe, H(π) = ln(1−s) − Σ e_j ℓ_j / Σe, H(p) = −s ℓ_k − e^m Σ e_j ℓ_j, and the
 * content dispersion from sums shifted by one content log (no cancellation at ℓ ≈ −700).
 * The row need not be closed: its logsumexp is found from the same sums and removed. */
void coda_row_stats(const double *l, int D, int k, coda_row *o) {
    double m = -INFINITY, shift = l[k == 0 ? 1 : 0];
    int im = -1;
    for (int i = 0; i < D; i++) if (i != k && l[i] > m) { m = l[i]; im = i; }
    ksum se = {0, 0}, sel = {0, 0}, sd = {0, 0}, sd2 = {0, 0}, sh = {0, 0};
    for (int i = 0; i < D; i++) {
        if (i == k) continue;
        double e = exp(l[i] - m), d = l[i] - shift;
        if (i != im) { kadd(&se, e); kadd(&sh, -e * (l[i] - m)); }
        kadd(&sel, e * l[i]);
        kadd(&sd, d);
        kadd(&sd2, d * d);
    }
    double n = D - 1, r = kval(&se), acc = 1 + r;
    double lcm_raw = m + log1p(r);
    double hi = l[k] > lcm_raw ? l[k] : lcm_raw, lo = l[k] > lcm_raw ? lcm_raw : l[k];
    double lse = hi + log1p(exp(lo - hi));            /* ≈ 0 for closed rows */
    double lk = l[k] - lse, lcm = lcm_raw - lse, wl = kval(&sel) / acc - lse;
    double cm = exp(lcm), mean_d = kval(&sd) / n;
    double var = kval(&sd2) / n - mean_d * mean_d;
    o->s = exp(lk);
    o->cmass = cm;
    o->b = sqrt((D - 1.0) / D) * (l[k] - (shift + mean_d));
    o->cperp = var > 0 ? var : 0;
    o->Hc = log1p(r) + kval(&sh) / acc;
    double sink_h = o->s > 0 ? -o->s * lk : 0;
    o->H = sink_h + (cm > 0 ? -cm * wl : 0);
    /* H_b from logs: −s ln s − (1−s) ln(1−s), exact where s or 1−s underflows */
    o->Hb = sink_h + (cm > 0 ? -cm * lcm : 0);
}

void coda_probs(const double *logp, int D, double *p) {
    for (int i = 0; i < D; i++) p[i] = exp(logp[i]);
}

void coda_content_log(const double *logp, int D, int k, double *lpi) {
    double lcm = log_content_mass(logp, D, k);
    for (int i = 0, j = 0; i < D; i++) if (i != k) lpi[j++] = logp[i] - lcm;
}

void coda_content_probs(const double *logp, int D, int k, double *pi) {
    coda_content_log(logp, D, k, pi);
    for (int j = 0; j < D - 1; j++) pi[j] = exp(pi[j]);
}

double coda_cosine_dist(const double *p, const double *q, int n) {
    ksum pq = {0, 0}, pp = {0, 0}, qq = {0, 0};
    for (int i = 0; i < n; i++) {
        kadd(&pq, p[i] * q[i]);
        kadd(&pp, p[i] * p[i]);
        kadd(&qq, q[i] * q[i]);
    }
    double d = 1 - kval(&pq) / sqrt(kval(&pp) * kval(&qq));
    return d < 0 ? 0 : d;
}

double coda_euclid(const double *p, const double *q, int n) {
    ksum acc = {0, 0};
    for (int i = 0; i < n; i++) kadd(&acc, (p[i] - q[i]) * (p[i] - q[i]));
    return sqrt(kval(&acc));
}

/* JS in bits from log rows: each term p_i(ℓp_i − ln m_i), ln m_i = logaddexp(ℓp_i, ℓq_i) − ln 2. */
static double js_from_logs(const double *lp, const double *lq, int n) {
    ksum acc = {0, 0};
    for (int i = 0; i < n; i++) {
        double a = lp[i], b = lq[i];
        double hi = a > b ? a : b, lo = a > b ? b : a;
        if (!isfinite(hi)) continue;
        double lm = hi + log1p(exp(lo - hi)) - M_LN2;
        if (isfinite(a)) kadd(&acc, 0.5 * exp(a) * (a - lm));
        if (isfinite(b)) kadd(&acc, 0.5 * exp(b) * (b - lm));
    }
    double js = kval(&acc) / M_LN2;
    return js < 0 ? 0 : js > 1 ? 1 : js;
}

double coda_js_bits(const double *p, const double *q, int n) {
    double *l = malloc(2 * (size_t)n * sizeof *l);
    for (int i = 0; i < n; i++) {
        l[i] = p[i] > 0 ? log(p[i]) : -INFINITY;
        l[n + i] = q[i] > 0 ? log(q[i]) : -INFINITY;
    }
    double js = js_from_logs(l, l + n, n);
    free(l);
    return js;
}

/* ‖clr(p) − clr(q)‖ = ‖δ − mean δ‖ with δ = ℓp − ℓq, optionally leaving part k out. */
static double centred_norm(const double *lp, const double *lq, int n, int skip) {
    ksum sd = {0, 0};
    for (int i = 0; i < n; i++) if (i != skip) kadd(&sd, lp[i] - lq[i]);
    double mean = kval(&sd) / (n - (skip >= 0));
    ksum sq = {0, 0};
    for (int i = 0; i < n; i++) {
        if (i == skip) continue;
        double d = lp[i] - lq[i] - mean;
        kadd(&sq, d * d);
    }
    return sqrt(kval(&sq));
}

double coda_aitchison(const double *logp, const double *logq, int n) { return centred_norm(logp, logq, n, -1); }

void coda_pair_distances(const double *lp, const double *lq, int D, int k, coda_pair *o) {
    double stack[4 * STACK_PARTS];
    double *buf = D <= STACK_PARTS ? stack : malloc(4 * (size_t)D * sizeof *buf);
    double *p = buf, *q = buf + D, *lpi = buf + 2 * D, *lqi = buf + 3 * D;
    coda_probs(lp, D, p);
    coda_probs(lq, D, q);
    o->cos_keep = coda_cosine_dist(p, q, D);
    o->euc_keep = coda_euclid(p, q, D);
    o->js_keep = js_from_logs(lp, lq, D);
    o->dA = centred_norm(lp, lq, D, -1);
    o->dAperp_full = centred_norm(lp, lq, D, k);
    o->dbal = fabs(coda_sink_balance(lp, D, k) - coda_sink_balance(lq, D, k));

    coda_content_log(lp, D, k, lpi);
    coda_content_log(lq, D, k, lqi);
    o->js_drop = js_from_logs(lpi, lqi, D - 1);
    o->dAperp_drop = centred_norm(lpi, lqi, D - 1, -1);
    for (int j = 0; j < D - 1; j++) { lpi[j] = exp(lpi[j]); lqi[j] = exp(lqi[j]); }
    o->cos_drop = coda_cosine_dist(lpi, lqi, D - 1);
    o->euc_drop = coda_euclid(lpi, lqi, D - 1);
    if (buf != stack) free(buf);
}

int coda_zero_replace_log(double *p, int D, double delta) {
    int z = 0;
    for (int i = 0; i < D; i++) if (p[i] <= 0) z++;
    double shrink = 1 - z * delta;
    for (int i = 0; i < D; i++) p[i] = p[i] <= 0 ? log(delta) : log(p[i] * shrink);
    return z;
}

double coda_close_log(double *l, int D) {
    double z = coda_logsumexp(l, D);
    for (int i = 0; i < D; i++) l[i] -= z;
    return z;
}

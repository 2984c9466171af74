/* test_rows: the library's one row path (attn_close_row, attn_gather_row in src/lib/attn/attnio.c)
 * against values worked out by hand from docs/FORMAT.md: log rows lose exactly their logsumexp,
 * probability rows are closed in double before zero replacement (so a replaced part is exactly
 * ln δ and the row sums to 1), rows that cannot be closed are refused, and gathering honours the
 * causal triangle, the valid mask and the sink's position. */
#include "attn/attnio.h"
#include <math.h>
#include <stdio.h>

static int nfail;
static void ok(int cond, const char *name) {
    printf("%s - %s\n", cond ? "ok" : "not ok", name);
    nfail += !cond;
}
static int close_to(double a, double b, double tol) { return fabs(a - b) <= tol * (1 + fabs(b)); }

static double sum_exp(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += exp(x[i]);
    return s;
}

static void test_log_rows(void) {
    /* float32 logs of (0.5, 0.3, 0.2) shifted by +1e-5: closing removes the shift exactly */
    float f[3] = {(float)(log(0.5) + 1e-5), (float)(log(0.3) + 1e-5), (float)(log(0.2) + 1e-5)};
    double x[3] = {f[0], f[1], f[2]}, lse = log(exp((double)f[0]) + exp((double)f[1]) + exp((double)f[2]));
    ok(attn_close_row(x, 3, 1, 1e-9) == 0, "log row: no parts replaced");
    int same = 1;
    for (int i = 0; i < 3; i++) same &= close_to(x[i], (double)f[i] - lse, 1e-15);
    ok(same, "log row: each part is the stored float minus the double logsumexp");
    ok(close_to(sum_exp(x, 3), 1.0, 1e-15), "log row: closed to 1e-15");
    double inf_row[2] = {-INFINITY, -INFINITY};
    ok(attn_close_row(inf_row, 2, 1, 1e-9) == -1, "log row of zeros only is refused");
}

static void test_prob_rows(void) {
    /* stored (0.6, 0, 0.4000001): closed first to p/Σ, then the zero becomes δ and the others
     * shrink by 1 − δ */
    double d = 1e-3, sum = 0.6 + (double)0.4000001f;
    double x[3] = {0.6, 0, (double)0.4000001f};
    ok(attn_close_row(x, 3, 0, d) == 1, "prob row: one part replaced");
    ok(x[1] == log(d), "prob row: the replaced part is exactly ln δ (closure came first)");
    ok(close_to(x[0], log(0.6 / sum * (1 - d)), 1e-15) && close_to(x[2], log((double)0.4000001f / sum * (1 - d)), 1e-15),
       "prob row: the other parts are ln(p/Σp · (1 − zδ))");
    ok(close_to(sum_exp(x, 3), 1.0, 1e-15), "prob row: closed to 1e-15 after replacement");
    double many[4] = {1, 0, 0, 0};
    ok(attn_close_row(many, 4, 0, 0.34) == -1, "prob row: 3 zeros × δ 0.34 ≥ 1 is refused");
    double none[3] = {0, 0, 0};
    ok(attn_close_row(none, 3, 0, 1e-9) == -1, "prob row without a positive part is refused");
    double nan_row[2] = {NAN, 1};
    ok(attn_close_row(nan_row, 2, 0, 1e-9) == -1, "prob row with NaN is refused");
}

static void test_gather(void) {
    attn_meta m = {.S = 1, .L = 1, .H = 1, .T = 4, .causal = 1, .sink = 0, .logprob = 1};
    float row[4] = {(float)log(0.25), (float)log(0.75), -INFINITY, -INFINITY};
    double out[4];
    int spos;
    long long z = 0;
    int D = attn_gather_row(&m, NULL, row, 1, 0, 1e-9, out, &spos, &z);
    ok(D == 2 && spos == 0 && z == 0 && close_to(out[1], (double)row[1] - log(exp((double)row[0]) + exp((double)row[1])), 1e-15),
       "gather: causal row 1 has keys 0..1, closed");
    D = attn_gather_row(&m, NULL, row, 1, 3, 1e-9, out, &spos, &z);
    ok(D == 2 && spos == -1, "gather: a sink beyond the row is reported absent");
    /* bidirectional with key 1 padded: keys 0, 2, 3; sink 2 is the second gathered part */
    attn_meta b = m;
    b.causal = 0;
    b.logprob = 0;
    uint8_t valid[4] = {1, 0, 1, 1};
    float prow[4] = {0.5f, 0.9f, 0.0f, 0.5f};
    D = attn_gather_row(&b, valid, prow, 0, 2, 1e-6, out, &spos, &z);
    ok(D == 3 && spos == 1 && z == 1 && out[1] == log(1e-6) && close_to(out[0], log(0.5 * (1 - 1e-6)), 1e-15),
       "gather: valid mask drops the padded key, zero replaced and counted");
}

int main(void) {
    test_log_rows();
    test_prob_rows();
    test_gather();
    return nfail != 0;
}

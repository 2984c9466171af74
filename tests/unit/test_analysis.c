/* test_analysis: src/lib/attn/analysis.c against hand-computed values — ARI on small contingency
 * tables, average linkage on a worked example where it differs from single linkage, classical
 * MDS recovering a known 2-D configuration, Wilson intervals, exact fixed-point sums, and the
 * pair kernel of bin/distance against coda_pair_distances (the library's one-pair reference)
 * on random rows, including the identity d_A² = d_A⊥² + Δb² per row pair. */
#include "attn/analysis.h"
#include "attn/coda.h"
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nfail;
static void ok(int cond, const char *name) {
    printf("%s - %s\n", cond ? "ok" : "not ok", name);
    nfail += !cond;
}
static int close_to(double a, double b, double tol) { return fabs(a - b) <= tol; }

static void test_ari(void) {
    int a[] = {0, 0, 1, 1, 2, 2}, b[] = {1, 1, 0, 0, 2, 2};
    ok(close_to(an_ari(a, b, 6), 1.0, 1e-15), "ari: identical partitions (relabelled) give 1");
    int x[] = {0, 0, 1, 1}, y[] = {0, 0, 1, 2};
    /* table [[2,0,0],[0,1,1]]: Σ C(n_ij,2) = 1, rows 2, cols 1, C(4,2) = 6: (1 − 1/3)/(1.5 − 1/3) = 4/7 */
    ok(close_to(an_ari(x, y, 4), 4.0 / 7.0, 1e-15), "ari: [[2,0,0],[0,1,1]] gives 4/7");
    int u[] = {0, 0, 0, 1, 1, 1}, v[] = {0, 0, 1, 1, 2, 2};
    /* Σ = 2, rows 6, cols 3, C(6,2) = 15: expected 1.2, max 4.5 → 0.8/3.3 */
    ok(close_to(an_ari(u, v, 6), 0.8 / 3.3, 1e-15), "ari: [[2,1,0],[0,1,2]] gives 8/33");
    int s[] = {0, 1, 2, 3}, t[] = {0, 0, 0, 0};
    ok(close_to(an_ari(s, t, 4), 0.0, 1e-15), "ari: singletons vs one cluster gives 0");
}

static void test_linkage(void) {
    /* A,B,C,D: AB=1, AC=2, BC=10, CD=5, AD=BD=20. Average: d(AB,C) = 6 > CD = 5, so {A,B},{C,D};
     * single linkage would give {A,B,C},{D} (d(AB,C) = 2). */
    double D[16] = {0, 1, 2, 20, 1, 0, 10, 20, 2, 10, 0, 5, 20, 20, 5, 0};
    int lab[4];
    an_average_linkage(D, 4, 2, lab);
    ok(lab[0] == 0 && lab[1] == 0 && lab[2] == 1 && lab[3] == 1, "linkage: average linkage worked example k=2");
    an_average_linkage(D, 4, 3, lab);
    ok(lab[0] == 0 && lab[1] == 0 && lab[2] == 1 && lab[3] == 2, "linkage: k=3 keeps C and D apart");
    /* ties: 0,1,5,6 on a line — (0,1) and (2,3) tie at 1; smallest ids merge first, k=3 */
    double E[16];
    double xs[4] = {0, 1, 5, 6};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) E[i * 4 + j] = fabs(xs[i] - xs[j]);
    an_average_linkage(E, 4, 3, lab);
    ok(lab[0] == 0 && lab[1] == 0 && lab[2] == 1 && lab[3] == 2, "linkage: ties go to the smallest cluster ids");
}

static void test_mds(void) {
    double P[5][2] = {{0, 0}, {3, 0}, {0, 4}, {3, 4}, {1, 1}}, D[25], X[10], ev[2];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) D[i * 5 + j] = hypot(P[i][0] - P[j][0], P[i][1] - P[j][1]);
    an_mds(D, 5, 2, X, ev);
    double worst = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            worst = fmax(worst, fabs(hypot(X[2 * i] - X[2 * j], X[2 * i + 1] - X[2 * j + 1]) - D[i * 5 + j]));
    ok(worst < 1e-9, "mds: recovers a 2-D configuration up to rotation (pairwise distances)");
    double cx = 0, cy = 0;
    for (int i = 0; i < 5; i++) cx += X[2 * i], cy += X[2 * i + 1];
    ok(fabs(cx) < 1e-9 && fabs(cy) < 1e-9 && ev[0] >= ev[1] && ev[1] > 0, "mds: centred, eigenvalues sorted");
}

static void test_wilson(void) {
    double lo, hi;
    an_wilson(50, 100, 1.959963984540054, &lo, &hi);
    ok(close_to(lo, 0.40383153, 1e-7) && close_to(hi, 0.59616847, 1e-7), "wilson: 50/100 gives [0.40383, 0.59617]");
    an_wilson(0, 50000, 1.959963984540054, &lo, &hi);
    double z2 = 1.959963984540054 * 1.959963984540054;
    ok(lo == 0 && close_to(hi, z2 / (50000 + z2), 1e-15), "wilson: 0/n upper bound z^2/(n+z^2)");
}

static void test_fix(void) {
    double v[] = {0.1, 1e-3, 12345.678, 3.0e-12, 7.25, -2.5};
    an_fix f1 = 0, f2 = 0;
    for (int i = 0; i < 6; i++) f1 += an_fix_from(v[i]);
    for (int i = 5; i >= 0; i--) f2 += an_fix_from(v[i]);
    ok(f1 == f2, "fix: sums do not depend on order");
    int limbs[4];
    an_fix_pack(an_fix_from(-2.5), limbs);
    ok(an_fix_unpack(limbs) == an_fix_from(-2.5) && an_fix_to(an_fix_unpack(limbs)) == -2.5, "fix: pack/unpack round trip");
    ok(an_fix_to(an_fix_from(12345.678)) == 12345.678, "fix: exact for |x| >= 2^-12");
}

/* Random log row with sink first: sink mass s, Dirichlet content. */
static void random_row(gsl_rng *g, int D, double s, double *l) {
    double *c = calloc(D, sizeof *c), *al = calloc(D, sizeof *al);
    for (int i = 0; i < D - 1; i++) al[i] = 0.5;
    gsl_ran_dirichlet(g, D - 1, al, c);
    l[0] = log(s);
    for (int i = 0; i < D - 1; i++) l[i + 1] = log1p(-s) + log(c[i] > 1e-300 ? c[i] : 1e-300);
    double mx = l[0], z = 0;   /* re-close exactly in log space */
    for (int i = 1; i < D; i++) mx = fmax(mx, l[i]);
    for (int i = 0; i < D; i++) z += exp(l[i] - mx);
    for (int i = 0; i < D; i++) l[i] -= mx + log(z);
    free(c);
    free(al);
}

static void test_kernel(void) {
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 42);
    double worst = 0, worst_id = 0;
    for (int it = 0; it < 2000; it++) {
        int D = 3 + (int)gsl_rng_uniform_int(g, 300);
        double *lp = malloc(D * sizeof(double)), *lq = malloc(D * sizeof(double));
        random_row(g, D, 0.001 + 0.998 * gsl_rng_uniform(g), lp);
        random_row(g, D, 0.001 + 0.998 * gsl_rng_uniform(g), lq);
        double *va[5], *vb[5];
        for (int v = 0; v < 5; v++) va[v] = malloc(D * sizeof(double)), vb[v] = malloc(D * sizeof(double));
        an_rowinfo ra, rb;
        an_row_prep(lp, D, va[0], va[1], va[2], va[3], va[4], &ra);
        an_row_prep(lq, D, vb[0], vb[1], vb[2], vb[3], vb[4], &rb);
        double out[DIST_NMETRIC];
        an_pair_kernel(D - 1, (const double *const *)va, &ra, (const double *const *)vb, &rb, out);
        coda_pair ref;
        coda_pair_distances(lp, lq, D, 0, &ref);
        double r[DIST_NMETRIC] = {ref.cos_keep, ref.cos_drop, ref.js_keep, ref.js_drop, ref.euc_keep, ref.euc_drop,
                                  ref.dA, ref.dAperp_full, ref.dAperp_drop, ref.dbal};
        for (int m = 0; m < DIST_NMETRIC; m++) worst = fmax(worst, fabs(out[m] - r[m]) / (1 + fabs(r[m])));
        double id = out[M_AITCHISON] * out[M_AITCHISON] -
                    (out[M_CONTENT_FULL] * out[M_CONTENT_FULL] + out[M_SINK_BALANCE] * out[M_SINK_BALANCE]);
        worst_id = fmax(worst_id, fabs(id) / (1 + out[M_AITCHISON] * out[M_AITCHISON]));
        for (int v = 0; v < 5; v++) free(va[v]), free(vb[v]);
        free(lp);
        free(lq);
    }
    printf("# kernel vs coda_pair_distances: worst relative difference %.3g; identity residual %.3g\n", worst, worst_id);
    ok(worst < 1e-10, "kernel: all ten distances agree with coda_pair_distances (2000 random pairs)");
    ok(worst_id < 1e-12, "kernel: d_A^2 = d_Aperp^2 + (b(p)-b(q))^2 per row pair");
    gsl_rng_free(g);
}

int main(void) {
    test_ari();
    test_linkage();
    test_mds();
    test_wilson();
    test_fix();
    test_kernel();
    return nfail ? 1 : 0;
}

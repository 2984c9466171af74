/* theory: the synthetic, exact experiments of METHODS §5.2 and a numerical audit of the exact
 * identities of §2–§3. Every row is built directly in log space from seeded draws, so nothing
 * here depends on data files. Three subcommands, each writing one TSV table (docs/THEORY.md):
 *   theorem1    closer-head verdict reversals over a (s_A, s_B) grid (the Theorem-1 triple)
 *   band        ranges of classical dissimilarities and of d_A⊥ as the sink mass grows
 *   identities  maximum relative error of every identity and invariance over extreme rows */
#include "cli/cli.h"
#include "attn/coda.h"

#include <getopt.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TIE_REL 1e-12     /* METHODS §5.1: |D(a,b) − D(a,c)| ≤ 1e-12·max is a tie */
#define BOUND_TOL 1e-12   /* slack of the band bound check */
#define IDENT_TOL 1e-9    /* an identity passes when its max relative error is at most this */
#define ID_DMIN 3
#define ID_DMAX 2048

typedef struct {
    const char *cmd, *output;
    int grid, draws, D, steps, pairs, summary;
    long rows;
    double alpha;
    unsigned long seed;
} th_opts;

static void usage(void) {
    printf("Usage: %s theorem1|band|identities [options]\n"
           "Synthetic, exact checks of METHODS §5.2 and of the identities of §2-§3; each writes a\n"
           "TSV table ('# provenance' line, header, rows) to stdout or --output. docs/THEORY.md.\n\n"
           "theorem1: triples A=(s_A,pi), B=(s_B,pi), C=(s_A,reverse(pi)), sink index 0, pi ~\n"
           "  Dirichlet(alpha) over D-1 parts (the same --draws compositions at every grid point).\n"
           "  Verdict V_c = [D_c(A,B) < D_c(A,C)]; a reversal is V_keep != V_drop, for the pairs\n"
           "  cosine, js, euclidean (keep vs drop), aitchison (d_A vs d_A_perp) and content\n"
           "  (d_A_perp full vs drop). Ties (|dD| <= 1e-12*max) are excluded and counted.\n"
           "  One row per grid point: reversal fraction and ties per pair.\n"
           "      --grid N       grid points per axis, evenly 0.05..0.95 (19)\n"
           "      --draws N      content draws per grid point (200)\n"
           "      --D N          parts per row, sink included (16)\n"
           "      --alpha A      Dirichlet concentration (1.0)\n"
           "      --summary      instead, one row per pair: grid_points, region_share (share of grid\n"
           "                     points with a reversal fraction > 0), mean and max fraction, ties\n"
           "band: for s = 0, 0.99/(steps-1), ..., 0.99 (s = 0 is evaluated at s = 1e-12), --pairs\n"
           "  pairs of rows with sink mass s and independent Dirichlet content (the same content\n"
           "  pairs at every s); per s the min and max of cosine similarity, cosine distance, JS,\n"
           "  Euclidean (all keep-sink) and d_A_perp, the bound s^2/(s^2+(1-s)^2) and bound_holds.\n"
           "      --steps N      values of s (100)\n"
           "      --pairs N      pairs per s (2000)\n"
           "      --D N          parts per row, sink included (32)\n"
           "      --alpha A      Dirichlet concentration (1.0)\n"
           "identities: --rows random pairs of rows (D log-uniform 3..2048, random sink index, sink\n"
           "  mass up to 1-1e-12, log-probabilities down to about -700); per identity the number of\n"
           "  rows or pairs checked, the max relative error and pass (<= 1e-9).\n"
           "      --rows N       random pairs (100000); parallel over pairs, same result for any\n"
           "                     thread count\n"
           "common:\n"
           "      --seed N       seed (1)\n"
           "  -o, --output FILE  write the table to FILE ('-' = stdout, the default)\n"
           "      --progress     progress bar on stderr; --no-progress: none (default: when\n"
           "                     stderr is a terminal)\n"
           "  -h, --help, -V, --version\n\n"
           "Memory: theorem1 8*draws*D bytes; band 16*pairs*D bytes; identities about 200 KiB per\n"
           "thread. Time: identities with 100000 rows takes tens of CPU-seconds.\n", cli_prog());
}

/* Which options each subcommand accepts, as a bit per option code. */
enum { O_GRID = 256, O_DRAWS, O_D, O_ALPHA, O_SUMMARY, O_STEPS, O_PAIRS, O_ROWS, O_SEED };
#define BIT(o) (1u << ((o) - O_GRID))

static unsigned allowed_options(const char *cmd) {
    if (!strcmp(cmd, "theorem1")) return BIT(O_GRID) | BIT(O_DRAWS) | BIT(O_D) | BIT(O_ALPHA) | BIT(O_SUMMARY);
    if (!strcmp(cmd, "band")) return BIT(O_STEPS) | BIT(O_PAIRS) | BIT(O_D) | BIT(O_ALPHA);
    if (!strcmp(cmd, "identities")) return BIT(O_ROWS);
    die_usage("unknown subcommand '%s' (theorem1, band or identities; see --help)", cmd);
}

static void parse_args(int argc, char **argv, th_opts *o) {
    static const struct option lo[] = {
        {"grid", 1, 0, O_GRID}, {"draws", 1, 0, O_DRAWS}, {"D", 1, 0, O_D}, {"alpha", 1, 0, O_ALPHA},
        {"summary", 0, 0, O_SUMMARY}, {"steps", 1, 0, O_STEPS}, {"pairs", 1, 0, O_PAIRS},
        {"rows", 1, 0, O_ROWS}, {"seed", 1, 0, O_SEED}, {"output", 1, 0, 'o'},
        {"help", 0, 0, 'h'}, {"version", 0, 0, 'V'}, CLI_PROGRESS_OPTIONS, {0, 0, 0, 0}};
    if (argc < 2) die_usage("expected a subcommand: theorem1, band or identities (see --help)");
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) { usage(); exit(0); }
    if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) { cli_print_version(); exit(0); }
    *o = (th_opts){.cmd = argv[1], .output = "-", .grid = 19, .draws = 200, .steps = 100,
                   .pairs = 2000, .rows = 100000, .alpha = 1.0, .seed = 1};
    unsigned allowed = allowed_options(o->cmd);
    o->D = strcmp(o->cmd, "band") ? 16 : 32;
    argc--; argv++;
    int c;
    while ((c = getopt_long(argc, argv, ":o:hV", lo, NULL)) != -1) {
        if (c >= O_GRID && c < O_SEED && !(allowed & BIT(c)))
            die_usage("--%s does not apply to '%s' (see --help)", lo[c - O_GRID].name, o->cmd);
        switch (c) {
        case O_GRID: o->grid = cli_parse_long("grid", optarg, 2, 10000); break;
        case O_DRAWS: o->draws = cli_parse_long("draws", optarg, 1, 100000000); break;
        case O_D: o->D = cli_parse_long("D", optarg, 3, 1 << 20); break;
        case O_ALPHA: o->alpha = cli_parse_double("alpha", optarg, 1e-3, 1e6); break;
        case O_SUMMARY: o->summary = 1; break;
        case O_STEPS: o->steps = cli_parse_long("steps", optarg, 2, 1000000); break;
        case O_PAIRS: o->pairs = cli_parse_long("pairs", optarg, 1, 100000000); break;
        case O_ROWS: o->rows = cli_parse_long("rows", optarg, 1, 1000000000L); break;
        case O_SEED: o->seed = cli_parse_u64("seed", optarg); break;
        case 'o': o->output = optarg; break;
        case CLI_OPT_PROGRESS: case CLI_OPT_NO_PROGRESS: cli_progress_option(c); break;
        case 'h': usage(); exit(0);
        case 'V': cli_print_version(); exit(0);
        default: cli_bad_option(argv, lo, ":o:hV");
        }
    }
    cli_operands(argc, argv, 0, 0, "options only after the subcommand");
    if ((double)o->draws * o->D > 1e9 || (double)o->pairs * o->D > 5e8)
        die_usage("--draws/--pairs times --D is too large for memory");
}

/* The provenance line and the header line that open every table. */
static void table_head(strbuf *sb, const th_opts *o, const char *header) {
    prov *p = prov_new();
    prov_opt_str(p, "subcommand", o->cmd);
    if (!strcmp(o->cmd, "theorem1")) {
        prov_opt_int(p, "grid", o->grid);
        prov_opt_int(p, "draws", o->draws);
        prov_opt_int(p, "D", o->D);
        prov_opt_dbl(p, "alpha", o->alpha);
        prov_opt_int(p, "summary", o->summary);
        prov_opt_dbl(p, "tie_rel", TIE_REL);
    } else if (!strcmp(o->cmd, "band")) {
        prov_opt_int(p, "steps", o->steps);
        prov_opt_int(p, "pairs", o->pairs);
        prov_opt_int(p, "D", o->D);
        prov_opt_dbl(p, "alpha", o->alpha);
        prov_opt_dbl(p, "s_zero_as", 1e-12);
    } else {
        prov_opt_int(p, "rows", o->rows);
        prov_opt_int(p, "D_min", ID_DMIN);
        prov_opt_int(p, "D_max", ID_DMAX);
        prov_opt_dbl(p, "pass_tol", IDENT_TOL);
    }
    prov_opt_int(p, "seed", (long long)o->seed);
    char *js = prov_json(p);
    sb_printf(sb, "# provenance: %s\n%s\n", js, header);
    free(js);
    prov_free(p);
}

/* ---------------- random content ---------------- */

/* ln of a Gamma(a, 1) variate; for a < 1 via G(a) = G(a+1)·U^(1/a), kept in logs so that small
 * concentrations (tiny parts) do not underflow to −∞. */
static double log_gamma_variate(gsl_rng *r, double a) {
    if (a >= 1) return log(gsl_ran_gamma(r, a, 1.0));
    return log(gsl_ran_gamma(r, a + 1, 1.0)) + log(gsl_rng_uniform_pos(r)) / a;
}

/* n log-probabilities of a Dirichlet(a) composition, closed. */
static void log_dirichlet(gsl_rng *r, double a, int n, double *out) {
    for (int i = 0; i < n; i++) out[i] = log_gamma_variate(r, a);
    coda_close_log(out, n);
}

/* A row with sink index 0 and sink mass s: ln s, then ln(1−s) + ln π (reversed if asked). */
static void sink_row(double s, const double *lpi, int n, int reverse, double *row) {
    row[0] = log(s);
    double lc = log1p(-s);
    for (int i = 0; i < n; i++) row[1 + i] = lc + lpi[reverse ? n - 1 - i : i];
}

/* ---------------- theorem1 ---------------- */

enum { P_COS, P_JS, P_EUC, P_AIT, P_CONTENT, NPAIR };
static const char *const PAIR_NAME[NPAIR] = {"cosine", "js", "euclidean", "aitchison", "content"};

/* The two conventions of each metric pair: keep[m] and drop[m]. */
static void pair_split(const coda_pair *d, double keep[NPAIR], double drop[NPAIR]) {
    keep[P_COS] = d->cos_keep;        drop[P_COS] = d->cos_drop;
    keep[P_JS] = d->js_keep;          drop[P_JS] = d->js_drop;
    keep[P_EUC] = d->euc_keep;        drop[P_EUC] = d->euc_drop;
    keep[P_AIT] = d->dA;              drop[P_AIT] = d->dAperp_drop;
    keep[P_CONTENT] = d->dAperp_full; drop[P_CONTENT] = d->dAperp_drop;
}

/* Closer-head verdict [D(A,B) < D(A,C)], or −1 for a tie. */
static int verdict(double ab, double ac) {
    double m = ab > ac ? ab : ac;
    if (fabs(ab - ac) <= TIE_REL * m) return -1;
    return ab < ac;
}

typedef struct { long rev[NPAIR], ties[NPAIR]; } t1_count;

/* All draws at one grid point. */
static void t1_point(const th_opts *o, double sA, double sB, const double *lpis, double *rows,
                     t1_count *cnt) {
    int D = o->D, n = D - 1;
    double *A = rows, *B = rows + D, *C = rows + 2 * D;
    memset(cnt, 0, sizeof *cnt);
    for (int d = 0; d < o->draws; d++) {
        const double *lpi = lpis + (size_t)d * n;
        sink_row(sA, lpi, n, 0, A);
        sink_row(sB, lpi, n, 0, B);
        sink_row(sA, lpi, n, 1, C);
        coda_pair ab, ac;
        coda_pair_distances(A, B, D, 0, &ab);
        coda_pair_distances(A, C, D, 0, &ac);
        double kab[NPAIR], dab[NPAIR], kac[NPAIR], dac[NPAIR];
        pair_split(&ab, kab, dab);
        pair_split(&ac, kac, dac);
        for (int m = 0; m < NPAIR; m++) {
            int vk = verdict(kab[m], kac[m]), vd = verdict(dab[m], dac[m]);
            if (vk < 0 || vd < 0) cnt->ties[m]++;
            else if (vk != vd) cnt->rev[m]++;
        }
    }
}

static double t1_fraction(const t1_count *c, int m, int draws) {
    long n = draws - c->ties[m];
    return n > 0 ? (double)c->rev[m] / n : NAN;
}

static void run_theorem1(const th_opts *o, strbuf *sb) {
    int G = o->grid, n = o->D - 1;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, o->seed);
    double *lpis = xmalloc((size_t)o->draws * n * sizeof *lpis), *rows = xmalloc(3 * (size_t)o->D * sizeof *rows);
    for (int d = 0; d < o->draws; d++) log_dirichlet(r, o->alpha, n, lpis + (size_t)d * n);
    t1_count *cnt = xcalloc((size_t)G * G, sizeof *cnt);
    progress pg;
    progress_begin(&pg, "theorem1", "cells", (double)G * G);
    for (int i = 0; i < G; i++)
        for (int j = 0; j < G; j++) {
            t1_point(o, 0.05 + 0.9 * i / (G - 1), 0.05 + 0.9 * j / (G - 1), lpis, rows, &cnt[i * G + j]);
            progress_update(&pg, i * G + j + 1.0);
        }
    progress_end(&pg);
    if (o->summary) {
        table_head(sb, o, "metric\tgrid_points\tregion_share\tmean_reversal\tmax_reversal\tties");
        for (int m = 0; m < NPAIR; m++) {
            long pos = 0, ties = 0, valid = 0;
            double sum = 0, mx = 0;
            for (int g = 0; g < G * G; g++) {
                double f = t1_fraction(&cnt[g], m, o->draws);
                ties += cnt[g].ties[m];
                if (isnan(f)) continue;
                valid++;
                sum += f;
                if (f > 0) pos++;
                if (f > mx) mx = f;
            }
            sb_printf(sb, "%s\t%d\t%.9g\t%.9g\t%.9g\t%ld\n", PAIR_NAME[m], G * G, (double)pos / (G * G),
                      valid ? sum / valid : NAN, mx, ties);
        }
    } else {
        table_head(sb, o, "s_A\ts_B\tdraws\trev_cosine\trev_js\trev_euclidean\trev_aitchison\trev_content"
                          "\tties_cosine\tties_js\tties_euclidean\tties_aitchison\tties_content");
        for (int i = 0; i < G; i++)
            for (int j = 0; j < G; j++) {
                const t1_count *c = &cnt[i * G + j];
                sb_printf(sb, "%.9g\t%.9g\t%d", 0.05 + 0.9 * i / (G - 1), 0.05 + 0.9 * j / (G - 1), o->draws);
                for (int m = 0; m < NPAIR; m++) sb_printf(sb, "\t%.9g", t1_fraction(c, m, o->draws));
                for (int m = 0; m < NPAIR; m++) sb_printf(sb, "\t%ld", c->ties[m]);
                sb_printf(sb, "\n");
            }
    }
    free(cnt);
    free(rows);
    free(lpis);
    gsl_rng_free(r);
}

/* ---------------- band ---------------- */

enum { B_COSSIM, B_COS, B_JS, B_EUC, B_CONTENT, NBAND };

static void run_band(const th_opts *o, strbuf *sb) {
    int D = o->D, n = D - 1;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, o->seed);
    /* One set of content pairs for every s: the s-dependence of a column is then the sink's alone,
     * and d_A⊥ (which ignores s) gives the same range at every step. */
    double *lpis = xmalloc(2 * (size_t)o->pairs * n * sizeof *lpis), *rows = xmalloc(2 * (size_t)D * sizeof *rows);
    for (long i = 0; i < 2L * o->pairs; i++) log_dirichlet(r, o->alpha, n, lpis + (size_t)i * n);
    table_head(sb, o, "s\tbound\tmin_cos_sim\tmax_cos_sim\tmin_cos_keep\tmax_cos_keep\tmin_js_keep"
                      "\tmax_js_keep\tmin_euc_keep\tmax_euc_keep\tmin_content\tmax_content\tbound_holds");
    progress pg;
    progress_begin(&pg, "band", "steps", o->steps);
    for (int j = 0; j < o->steps; j++) {
        double s = j ? 0.99 * j / (o->steps - 1) : 1e-12;
        double lo[NBAND], hi[NBAND];
        for (int m = 0; m < NBAND; m++) { lo[m] = INFINITY; hi[m] = -INFINITY; }
        for (int i = 0; i < o->pairs; i++) {
            sink_row(s, lpis + (size_t)(2 * i) * n, n, 0, rows);
            sink_row(s, lpis + (size_t)(2 * i + 1) * n, n, 0, rows + D);
            coda_pair d;
            coda_pair_distances(rows, rows + D, D, 0, &d);
            double v[NBAND] = {1 - d.cos_keep, d.cos_keep, d.js_keep, d.euc_keep, d.dAperp_drop};
            for (int m = 0; m < NBAND; m++) {
                if (v[m] < lo[m]) lo[m] = v[m];
                if (v[m] > hi[m]) hi[m] = v[m];
            }
        }
        double s2 = s * s, c2 = (1 - s) * (1 - s), bound = s2 / (s2 + c2);
        sb_printf(sb, "%.9g\t%.9g", s, bound);
        for (int m = 0; m < NBAND; m++) sb_printf(sb, "\t%.9g\t%.9g", lo[m], hi[m]);
        sb_printf(sb, "\t%d\n", lo[B_COSSIM] >= bound - BOUND_TOL);
        progress_update(&pg, j + 1);
    }
    progress_end(&pg);
    free(rows);
    free(lpis);
    gsl_rng_free(r);
}

/* ---------------- identities ---------------- */

enum {
    I_ENTROPY, I_PYTH, I_FULLDROP, I_PERTURB, I_POW_HALF, I_POW_2, I_POW_NEG1, I_PERM, I_SINKMASS,
    I_CPERP_SINK, NIDENT
};
static const char *const IDENT_NAME[NIDENT] = {
    "entropy", "pythagorean", "content_full_vs_drop", "perturbation", "powering_0.5", "powering_2",
    "powering_-1", "permutation", "sink_mass_invariance", "content_dispersion_sink_invariance"};
/* Single-row identities are checked on both rows of a pair. */
static const int IDENT_PER_PAIR[NIDENT] = {2, 1, 1, 1, 1, 1, 1, 1, 1, 2};

/* max that keeps a NaN (a failed identity must not vanish from the table) */
static double nanmax(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }

static double rel_err(double a, double b) {
    double m = fmax(fabs(a), fabs(b));
    return m > 0 ? fabs(a - b) / m : 0;
}

/* SplitMix64: a well-mixed per-pair seed from (seed, index), so each pair's draws do not depend
 * on which thread or in which order pairs are evaluated. */
static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Sink log-mass ln s and content log-mass ln(1−s), both without cancellation: a third of rows have
 * 1 − s log-uniform in [1e-12, 1] (strong sinks up to 1 − 1e-12), a third s log-uniform in
 * [1e-12, 1] (tiny sinks), a third s uniform. */
static void draw_sink(gsl_rng *r, double *ls, double *lc) {
    double u = gsl_rng_uniform(r), e = -12 * gsl_rng_uniform(r) * M_LN10;
    if (u < 1.0 / 3) { *lc = e; *ls = log1p(-exp(e)); }
    else if (u < 2.0 / 3) { *ls = e; *lc = log1p(-exp(e)); }
    else { double s = gsl_rng_uniform_pos(r); *ls = log(s); *lc = log1p(-s); }
}

/* A row of D parts with sink k: content log-weights uniform on [−W, 0], W log-uniform in
 * [0.01, 660], so contents run from near-uniform to spreads where parts sit near e^−700. The
 * content is closed as ln π_i = (w_i − w_max) − ln(1 + r), r = Σ_{j≠max} e^{w_j − w_max}, with log1p:
 * ln(1 + r) by log() would carry an absolute error of ~1e-16, which is the whole entropy of a
 * row with s ≈ 1e-12 and near one-hot content. ln(1−s) is added last so the dominant part keeps
 * it exactly. */
static void draw_row(gsl_rng *r, int D, int k, double *l) {
    double ls, lc, W = exp(log(0.01) + gsl_rng_uniform(r) * log(660 / 0.01));
    draw_sink(r, &ls, &lc);
    int im = k == 0 ? 1 : 0;
    for (int i = 0; i < D; i++) {
        l[i] = i == k ? 0 : -W * gsl_rng_uniform(r);
        if (i != k && l[i] > l[im]) im = i;
    }
    double wmax = l[im], rest = 0;
    for (int i = 0; i < D; i++) if (i != k && i != im) rest += exp(l[i] - wmax);
    double z = log1p(rest);
    for (int i = 0; i < D; i++) l[i] = i == k ? ls : lc + ((l[i] - wmax) - z);
}

/* The row with its content kept and sink mass replaced (ln s', ln(1−s')). */
static void resink(const double *l, int D, int k, double ls, double lc, double *lpi, double *out) {
    coda_content_log(l, D, k, lpi);
    for (int i = 0, j = 0; i < D; i++) out[i] = i == k ? ls : lc + lpi[j++];
}

static double content_dist(const double *lp, const double *lq, int D, int k) {
    coda_pair d;
    coda_pair_distances(lp, lq, D, k, &d);
    return d.dAperp_full;
}

/* H(p) summed directly as −Σ p_i ℓ_i, against H_b(s) + (1−s)·H(π) from coda_row_stats. */
static double entropy_err(const double *l, int D, int k, double *t) {
    for (int i = 0; i < D; i++) t[i] = -exp(l[i]) * l[i];
    double H = coda_sum(t, D);
    coda_row st;
    coda_row_stats(l, D, k, &st);
    return rel_err(H, st.Hb + coda_content_mass(l, D, k) * st.Hc);
}

typedef struct { double *p, *q, *p2, *q2, *lpi; int *perm; } id_work;

/* Every identity on one random pair; err[] receives the relative errors. */
static void ident_pair(gsl_rng *r, id_work *w, double err[NIDENT]) {
    int D = (int)lround(exp(log(ID_DMIN) + gsl_rng_uniform(r) * log((double)ID_DMAX / ID_DMIN)));
    int k = (int)gsl_rng_uniform_int(r, D);
    double *p = w->p, *q = w->q, *p2 = w->p2, *q2 = w->q2;
    draw_row(r, D, k, p);
    draw_row(r, D, k, q);
    err[I_ENTROPY] = nanmax(entropy_err(p, D, k, w->lpi), entropy_err(q, D, k, w->lpi));

    coda_pair d;
    coda_pair_distances(p, q, D, k, &d);
    double dperp = d.dAperp_full;
    err[I_PYTH] = rel_err(d.dA * d.dA, dperp * dperp + d.dbal * d.dbal);
    err[I_FULLDROP] = rel_err(d.dAperp_full, d.dAperp_drop);

    /* perturbation: the same logit bias on both rows' scores, then re-closure */
    double sigma = exp(log(0.01) + gsl_rng_uniform(r) * log(1000.0));
    for (int i = 0; i < D; i++) {
        double beta = gsl_ran_gaussian(r, sigma);
        p2[i] = p[i] + beta;
        q2[i] = q[i] + beta;
    }
    coda_close_log(p2, D);
    coda_close_log(q2, D);
    err[I_PERTURB] = rel_err(content_dist(p2, q2, D, k), dperp);

    /* powering (temperature): d⊥(p^α, q^α) = |α|·d⊥(p, q) */
    static const double ALPHA[3] = {0.5, 2, -1};
    for (int a = 0; a < 3; a++) {
        for (int i = 0; i < D; i++) { p2[i] = ALPHA[a] * p[i]; q2[i] = ALPHA[a] * q[i]; }
        coda_close_log(p2, D);
        coda_close_log(q2, D);
        err[I_POW_HALF + a] = rel_err(content_dist(p2, q2, D, k), fabs(ALPHA[a]) * dperp);
    }

    /* permutation of the content keys (the sink stays at k), the same for both rows */
    int n = 0;
    for (int i = 0; i < D; i++) if (i != k) w->perm[n++] = i;
    gsl_ran_shuffle(r, w->perm, n, sizeof(int));
    for (int i = 0, j = 0; i < D; i++) {
        int src = i == k ? k : w->perm[j++];
        p2[i] = p[src];
        q2[i] = q[src];
    }
    err[I_PERM] = rel_err(content_dist(p2, q2, D, k), dperp);

    /* new, independent sink masses with the contents fixed */
    double ls, lc;
    draw_sink(r, &ls, &lc);
    resink(p, D, k, ls, lc, w->lpi, p2);
    draw_sink(r, &ls, &lc);
    resink(q, D, k, ls, lc, w->lpi, q2);
    err[I_SINKMASS] = rel_err(content_dist(p2, q2, D, k), dperp);

    coda_row a, b;
    coda_row_stats(p, D, k, &a);
    coda_row_stats(p2, D, k, &b);
    err[I_CPERP_SINK] = rel_err(a.cperp, b.cperp);
    coda_row_stats(q, D, k, &a);
    coda_row_stats(q2, D, k, &b);
    err[I_CPERP_SINK] = nanmax(err[I_CPERP_SINK], rel_err(a.cperp, b.cperp));
}

static void run_identities(const th_opts *o, strbuf *sb) {
    double worst[NIDENT] = {0};
    long done = 0;
    progress pg;
    progress_begin(&pg, "identities", "rows", (double)o->rows);
    #pragma omp parallel
    {
        id_work w;
        double *buf = xmalloc(5 * (size_t)ID_DMAX * sizeof *buf);
        w = (id_work){buf, buf + ID_DMAX, buf + 2 * ID_DMAX, buf + 3 * ID_DMAX, buf + 4 * ID_DMAX,
                      xmalloc(ID_DMAX * sizeof(int))};
        gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
        double local[NIDENT] = {0}, err[NIDENT];
        #pragma omp for schedule(dynamic, 64)
        for (long i = 0; i < o->rows; i++) {
            gsl_rng_set(r, (unsigned long)mix64((uint64_t)o->seed * 0x100000001b3ULL + (uint64_t)i));
            ident_pair(r, &w, err);
            for (int m = 0; m < NIDENT; m++) local[m] = nanmax(local[m], err[m]);
            if ((i & 1023) == 1023) {
                long now;
                #pragma omp atomic capture
                now = done += 1024;
                if (omp_get_thread_num() == 0) progress_update(&pg, (double)now);
            }
        }
        /* a max (NaN-propagating) does not depend on the order of merging */
        #pragma omp critical
        for (int m = 0; m < NIDENT; m++) worst[m] = nanmax(worst[m], local[m]);
        gsl_rng_free(r);
        free(w.perm);
        free(buf);
    }
    progress_end(&pg);
    table_head(sb, o, "name\trows\tmax_rel_err\tpass");
    for (int m = 0; m < NIDENT; m++)
        sb_printf(sb, "%s\t%ld\t%.9g\t%d\n", IDENT_NAME[m], IDENT_PER_PAIR[m] * o->rows, worst[m],
                  worst[m] <= IDENT_TOL);
}

int main(int argc, char **argv) {
    cli_init(argv[0]);
    th_opts o;
    parse_args(argc, argv, &o);
    strbuf sb = {0};
    if (!strcmp(o.cmd, "theorem1")) run_theorem1(&o, &sb);
    else if (!strcmp(o.cmd, "band")) run_band(&o, &sb);
    else run_identities(&o, &sb);
    cli_write_bytes(o.output, sb.s, sb.len);
    sb_free(&sb);
    return 0;
}

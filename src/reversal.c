/* reversal: METHODS §5.1 — how often the "which head is closer" verdict flips between the
 * keep-sink and drop-sink conventions, over seeded random ordered triples of distinct heads. */
#include "attn/analysis.h"
#include "cli/cli.h"
#include "io/h5io.h"
#include <getopt.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
    "Usage: reversal [options] DIST.h5|-\n"
    "Flip rate of the closer-head verdict V = [D(a,b) < D(a,c)] between two distance matrices of a\n"
    "distance file, over ordered triples (a; b, c) of distinct heads drawn uniformly (GSL mt19937).\n"
    "Ties (|D(a,b) - D(a,c)| <= 1e-12 * max D, under either matrix) are counted and excluded.\n"
    "Options:\n"
    "  --triples N   number of triples (default 50000)\n"
    "  --seed N      generator seed (default 1)\n"
    "  -o FILE       also write the table as HDF5 (datasets per column; '-' = stdout image)\n"
    "  -h, --help / --version\n"
    "Stdout (TSV): metric keep drop triples ties flips flip_rate wilson_lo wilson_hi (95% Wilson).\n"
    "Rows: cosine (cos_keep/cos_drop), js, euclidean, aitchison (aitchison/content_full, d_A vs\n"
    "d_A-perp) and content (content_full/content_drop, d_A-perp computed both ways).\n"
    "Memory: 10 N*N doubles (all matrices) + 12 bytes per triple.\n";

static const char *const pairs[][3] = {
    {"cosine", "cos_keep", "cos_drop"},        {"js", "js_keep", "js_drop"},
    {"euclidean", "euc_keep", "euc_drop"},      {"aitchison", "aitchison", "content_full"},
    {"content", "content_full", "content_drop"}};
enum { NPAIRS = 5 };

typedef struct { long triples, ties, flips; double rate, lo, hi; } result;

static double matmax(const double *x, int N) {
    double m = 0;
    for (size_t i = 0; i < (size_t)N * N; i++) m = fmax(m, fabs(x[i]));
    return m;
}

/* verdict: 1 closer to b, 0 closer to c, -1 tie */
static int verdict(const double *D, int N, int a, int b, int c, double tol) {
    double x = D[(size_t)a * N + b], y = D[(size_t)a * N + c];
    if (fabs(x - y) <= tol) return -1;
    return x < y;
}

static result count_flips(const double *K, const double *P, int N, const int *tri, long nt) {
    double tk = 1e-12 * matmax(K, N), tp = 1e-12 * matmax(P, N);
    result r = {nt, 0, 0, 0, 0, 0};
    for (long i = 0; i < nt; i++) {
        int a = tri[3 * i], b = tri[3 * i + 1], c = tri[3 * i + 2];
        int vk = verdict(K, N, a, b, c, tk), vp = verdict(P, N, a, b, c, tp);
        if (vk < 0 || vp < 0) r.ties++;
        else r.flips += vk != vp;
    }
    long n = r.triples - r.ties;
    r.rate = n > 0 ? (double)r.flips / n : NAN;
    an_wilson(r.flips, n, 1.959963984540054, &r.lo, &r.hi);
    return r;
}

/* Triples: a uniform; b uniform among the other N−1; c uniform among the other N−2. */
static int *draw_triples(int N, long nt, unsigned long seed) {
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, seed);
    int *tri = xmalloc((size_t)nt * 3 * sizeof *tri);
    for (long i = 0; i < nt; i++) {
        int a = (int)gsl_rng_uniform_int(g, N);
        int b = (int)gsl_rng_uniform_int(g, N - 1);
        if (b >= a) b++;
        int c = (int)gsl_rng_uniform_int(g, N - 2), lo = a < b ? a : b, hi = a < b ? b : a;
        if (c >= lo) c++;
        if (c >= hi) c++;
        tri[3 * i] = a, tri[3 * i + 1] = b, tri[3 * i + 2] = c;
    }
    gsl_rng_free(g);
    return tri;
}

static void write_h5(const char *out, const char *pj, const result *r) {
    char err[2048];
    h5io_id f = h5io_create(out, err, sizeof err);
    if (f < 0) cli_check((int)f, err);
    h5io_attr_str(f, "/", "provenance", pj);
    h5io_attr_str(f, "/", "format", "attncoda-reversal");
    char names[512] = "";
    for (int i = 0; i < NPAIRS; i++) strcat(strcat(names, i ? "," : ""), pairs[i][0]);
    h5io_attr_str(f, "/", "metrics", names);
    h5io_size d[1] = {NPAIRS};
    double v[NPAIRS];
    int iv[NPAIRS];
#define COL_I(field, name) for (int i = 0; i < NPAIRS; i++) iv[i] = (int)r[i].field; h5io_write_i32(f, name, 1, d, iv)
#define COL_D(field, name) for (int i = 0; i < NPAIRS; i++) v[i] = r[i].field; h5io_write_f64(f, name, 1, d, v)
    COL_I(triples, "triples");
    COL_I(ties, "ties");
    COL_I(flips, "flips");
    COL_D(rate, "flip_rate");
    COL_D(lo, "wilson_lo");
    COL_D(hi, "wilson_hi");
    cli_check(h5io_finish(f, out, err, sizeof err), err);
}

int main(int argc, char **argv) {
    char err[2048];
    cli_init("reversal");
    h5io_quiet();
    long nt = 50000;
    unsigned long seed = 1;
    const char *out = NULL;
    static struct option lo[] = {{"triples", required_argument, 0, 'n'}, {"seed", required_argument, 0, 's'},
                                 {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "ho:", lo, NULL)) != -1) {
        switch (c) {
        case 'n': nt = cli_parse_long("triples", optarg, 1, 100000000); break;
        case 's': seed = cli_parse_u64("seed", optarg); break;
        case 'o': out = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': cli_print_version(); return 0;
        default: cli_bad_option(argv, lo, "ho:");
        }
    }
    cli_operands(argc, argv, 1, 1, "one distance file");
    cli_out_plan(out);
    if (out && cli_is_stdio(out)) die_usage("-o -: the table already goes to stdout; give a file name");
    dist_file *d = dist_open(argv[optind], err, sizeof err);
    if (!d) die_data(NULL, "%s", err);
    if (d->N < 3) die_data(d->path, "%d heads: triples need at least 3", d->N);
    int *tri = draw_triples(d->N, nt, seed);
    result r[NPAIRS];
    for (int i = 0; i < NPAIRS; i++) {
        double *K = dist_matrix(d, pairs[i][1], err, sizeof err), *P = K ? dist_matrix(d, pairs[i][2], err, sizeof err) : NULL;
        if (!P) die_data(NULL, "%s", err);
        r[i] = count_flips(K, P, d->N, tri, nt);
        free(K);
        free(P);
    }
    prov *p = prov_new();
    prov_input(p, d->path, d->sha);
    prov_opt_int(p, "triples", nt);
    prov_opt_int(p, "seed", (long long)seed);
    prov_opt_dbl(p, "tie_rel", 1e-12);
    prov_opt_str(p, "model", d->model);
    if (d->provenance) prov_upstream(p, d->provenance);
    char *pj = prov_json(p);
    tsv_begin(stdout, pj, "metric\tkeep\tdrop\ttriples\tties\tflips\tflip_rate\twilson_lo\twilson_hi");
    for (int i = 0; i < NPAIRS; i++)
        printf("%s\t%s\t%s\t%ld\t%ld\t%ld\t%.6f\t%.6f\t%.6f\n", pairs[i][0], pairs[i][1], pairs[i][2],
               r[i].triples, r[i].ties, r[i].flips, r[i].rate, r[i].lo, r[i].hi);
    if (out) write_h5(out, pj, r);
    free(pj);
    prov_free(p);
    free(tri);
    dist_close(d);
    return 0;
}

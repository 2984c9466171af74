/* cluster: METHODS §5.3 — average-linkage clustering of heads under several distance matrices,
 * the Adjusted Rand Index between the partitions, and classical MDS coordinates for plots. */
#include "attn/analysis.h"
#include "cli/cli.h"
#include "io/h5io.h"
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
    "Usage: cluster [options] DIST.h5|-\n"
    "Average-linkage clustering of the N heads into k clusters under js_keep, js_drop,\n"
    "content_full (d_A-perp by projection), content_drop (d_A-perp from dropped rows) and\n"
    "'sink' (|difference of head mean sink mass|), and the Adjusted Rand Index between them.\n"
    "Options:\n"
    "  -k, --k K        clusters (default 6; capped at N)\n"
    "  --k-sweep A..B   one table block per k in A..B (e.g. 2..10)\n"
    "  --heads-tsv FILE per-head labels (at --k), 2-D classical MDS coordinates per metric and\n"
    "                   mean sink mass, for plots\n"
    "  -o FILE          HDF5: labels/<metric> [N] (at --k), mds/<metric> [N,2], ari [rows]\n"
    "  -h, --help / --version\n"
    "Stdout (TSV): k a b ari, for the pairs (js_keep,js_drop) (js_keep,content_full)\n"
    "  (js_keep,sink) (content_full,content_drop).\n"
    "Ties in linkage go to the pair of clusters with the smallest member indices.\n"
    "Memory: about 8 N*N doubles. Time: O(N^3) per metric (linkage once, cut per k; MDS).\n";

enum { NM = 5 };
static const char *const mnames[NM] = {"js_keep", "js_drop", "content_full", "content_drop", "sink"};
static const int cmp_pairs[][2] = {{0, 1}, {0, 2}, {0, 4}, {2, 3}};
enum { NCMP = 4 };

static double *sink_matrix(const dist_file *d) {
    int N = d->N;
    double *x = xmalloc((size_t)N * N * sizeof *x);
    for (int a = 0; a < N; a++)
        for (int b = 0; b < N; b++) x[(size_t)a * N + b] = fabs(d->head_sink[a] - d->head_sink[b]);
    return x;
}

static void parse_sweep(const char *s, int *a, int *b) {
    const char *dots = strstr(s, "..");
    if (!dots) die_usage("--k-sweep: '%s' is not A..B", s);
    char *x = xstrdup(s);
    x[dots - s] = 0;
    *a = (int)cli_parse_long("k-sweep", x, 1, 100000);
    *b = (int)cli_parse_long("k-sweep", dots + 2, 1, 100000);
    free(x);
    if (*b < *a) die_usage("--k-sweep: empty range '%s'", s);
}

static void write_heads_tsv(const char *path, const char *pj, const dist_file *d, int *lab[NM], double *mds[NM]) {
    const char *tmp = cli_out_begin(path);
    FILE *f = tmp ? fopen(tmp, "w") : stdout;
    if (!f) die_data(path, "cannot create");
    fprintf(f, "# provenance: %s\nhead\tlayer\tindex\tsink_mass", pj);
    for (int m = 0; m < NM; m++) fprintf(f, "\tlabel_%s", mnames[m]);
    for (int m = 0; m < NM - 1; m++) fprintf(f, "\tmds1_%s\tmds2_%s", mnames[m], mnames[m]);
    fputc('\n', f);
    for (int a = 0; a < d->N; a++) {
        fprintf(f, "%d\t%d\t%d\t%.10g", a, d->head_layer[a], d->head_index[a], d->head_sink[a]);
        for (int m = 0; m < NM; m++) fprintf(f, "\t%d", lab[m][a]);
        for (int m = 0; m < NM - 1; m++) fprintf(f, "\t%.10g\t%.10g", mds[m][2 * a], mds[m][2 * a + 1]);
        fputc('\n', f);
    }
    if (tmp && fclose(f) != 0) die_data(path, "write error");
    if (tmp) cli_out_commit(path);
}

int main(int argc, char **argv) {
    char err[2048];
    cli_init("cluster");
    h5io_quiet();
    int k = 6, ka = -1, kb = -1;
    const char *heads_tsv = NULL, *out = NULL;
    static struct option lo[] = {{"k", required_argument, 0, 'k'}, {"k-sweep", required_argument, 0, 's'},
                                 {"heads-tsv", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'},
                                 {"version", no_argument, 0, 'V'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "hk:o:", lo, NULL)) != -1) {
        switch (c) {
        case 'k': k = (int)cli_parse_long("k", optarg, 1, 100000); break;
        case 's': parse_sweep(optarg, &ka, &kb); break;
        case 't': heads_tsv = optarg; break;
        case 'o': out = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': cli_print_version(); return 0;
        default: cli_bad_option(argv, lo, "hk:o:");
        }
    }
    cli_operands(argc, argv, 1, 1, "one distance file");
    cli_out_plan(out);
    cli_out_plan(heads_tsv);
    if ((out && cli_is_stdio(out)) || (heads_tsv && cli_is_stdio(heads_tsv)))
        die_usage("-o/--heads-tsv: give a file name (the table goes to stdout)");
    if (ka < 0) ka = kb = k;
    dist_file *d = dist_open(argv[optind], err, sizeof err);
    if (!d) die_data(NULL, "%s", err);
    int N = d->N;
    if (k > N) k = N;
    double *D[NM];
    for (int m = 0; m < NM - 1; m++)
        if (!(D[m] = dist_matrix(d, mnames[m], err, sizeof err))) die_data(NULL, "%s", err);
    D[NM - 1] = sink_matrix(d);
    prov *p = prov_new();
    prov_input(p, d->path, d->sha);
    prov_opt_int(p, "k", k);
    prov_opt_int(p, "k_from", ka);
    prov_opt_int(p, "k_to", kb);
    prov_opt_str(p, "linkage", "average");
    prov_opt_str(p, "model", d->model);
    if (d->provenance) prov_upstream(p, d->provenance);
    char *pj = prov_json(p);
    int *lab[NM];
    for (int m = 0; m < NM; m++) lab[m] = xmalloc(N * sizeof(int));
    tsv_begin(stdout, pj, "k\ta\tb\tari");
    int nk = 0, *mi[NM], *mj[NM];
    for (int m = 0; m < NM; m++) {
        mi[m] = xmalloc(N * sizeof(int)), mj[m] = xmalloc(N * sizeof(int));
        an_linkage_merges(D[m], N, mi[m], mj[m]);
    }
    double *ari_all = xmalloc((size_t)(kb - ka + 1) * NCMP * sizeof(double));
    for (int kk = ka; kk <= kb; kk++) {
        int ke = kk > N ? N : kk;
        for (int m = 0; m < NM; m++) an_linkage_cut(mi[m], mj[m], N, ke, lab[m]);
        for (int i = 0; i < NCMP; i++) {
            double ari = an_ari(lab[cmp_pairs[i][0]], lab[cmp_pairs[i][1]], N);
            ari_all[nk * NCMP + i] = ari;
            printf("%d\t%s\t%s\t%.6f\n", ke, mnames[cmp_pairs[i][0]], mnames[cmp_pairs[i][1]], ari);
        }
        nk++;
    }
    if (heads_tsv || out) {
        double *mds[NM] = {0};
        for (int m = 0; m < NM; m++) {
            an_linkage_cut(mi[m], mj[m], N, k, lab[m]);
            mds[m] = xmalloc((size_t)N * 2 * sizeof(double));
            an_mds(D[m], N, 2, mds[m], NULL);
        }
        if (heads_tsv) write_heads_tsv(heads_tsv, pj, d, lab, mds);
        if (out) {
            h5io_id f = h5io_create(out, err, sizeof err);
            if (f < 0) cli_check((int)f, err);
            h5io_attr_str(f, "/", "provenance", pj);
            h5io_attr_str(f, "/", "format", "attncoda-cluster");
            h5io_size d1[1] = {N}, d2[2] = {N, 2}, da[2] = {nk, NCMP};
            char name[64];
            for (int m = 0; m < NM; m++) {
                snprintf(name, sizeof name, "labels/%s", mnames[m]);
                h5io_write_i32(f, name, 1, d1, lab[m]);
                snprintf(name, sizeof name, "mds/%s", mnames[m]);
                h5io_write_f64(f, name, 2, d2, mds[m]);
            }
            h5io_write_f64(f, "ari", 2, da, ari_all);
            h5io_attr_str(f, "ari", "columns", "js_keep~js_drop,js_keep~content_full,js_keep~sink,content_full~content_drop");
            h5io_attr_int(f, "ari", "k_from", ka);
            cli_check(h5io_finish(f, out, err, sizeof err), err);
        }
        for (int m = 0; m < NM; m++) free(mds[m]);
    }
    for (int m = 0; m < NM; m++) free(D[m]), free(lab[m]), free(mi[m]), free(mj[m]);
    free(ari_all);
    free(pj);
    prov_free(p);
    dist_close(d);
    return 0;
}

/* prune-rank: METHODS §5.4 — greedy redundancy pruning orders from head distance matrices (and
 * seeded random orders), with mask files for extract --mask. */
#include "attn/analysis.h"
#include "cli/cli.h"
#include "io/h5io.h"
#include <errno.h>
#include <getopt.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *usage =
    "Usage: prune-rank [options] DIST.h5|-\n"
    "Greedy pruning orders: redundancy r(a) = min over unpruned b != a of D(a,b); repeatedly prune\n"
    "the unpruned head with the smallest r (ties: lowest head index), never the last head of a\n"
    "layer, recomputing r, until the largest sparsity is reached. Random orders: a seeded\n"
    "(GSL mt19937) shuffle of the heads, skipping a layer's last head.\n"
    "Options:\n"
    "  --metrics LIST     distance matrices (default js_keep,js_drop,aitchison,content_full)\n"
    "  --sparsity LIST    fractions of N pruned, rounded to nearest (default 0.1,0.2,0.3)\n"
    "  --random-seeds N   random orders for seeds 1..N (default 5; 0 = none)\n"
    "  --masks-dir DIR    write DIR/<metric>-<pct>.txt and DIR/random<seed>-<pct>.txt\n"
    "  -o FILE            HDF5: order/<metric|random<seed>> [n] head ids in pruning order,\n"
    "                     redundancy/<metric> [n], head_layer/head_index [N]\n"
    "  -h, --help / --version\n"
    "Stdout (TSV): metric seed rank head layer index redundancy (seed 0 and redundancy of the\n"
    "  pruned head for metric orders; redundancy nan for random orders).\n"
    "Mask files: one pruned head per line 'layer<TAB>head' (0-based), '#' comment lines first.\n"
    "Memory: N*N doubles per metric.\n";

/* Greedy order; returns the number of heads pruned (≤ want) and fills order/red. */
static int greedy_order(const double *D, const dist_file *d, int want, int *order, double *red) {
    int N = d->N, done = 0;
    char *pruned = xcalloc(N, 1);
    int *left = xcalloc(d->L, sizeof *left);
    for (int a = 0; a < N; a++) left[a / d->H]++;
    while (done < want) {
        int best = -1;
        double br = INFINITY;
        for (int a = 0; a < N; a++) {
            if (pruned[a] || left[a / d->H] < 2) continue;
            double r = INFINITY;
            for (int b = 0; b < N; b++)
                if (b != a && !pruned[b] && D[(size_t)a * N + b] < r) r = D[(size_t)a * N + b];
            if (best < 0 || r < br) best = a, br = r;
        }
        if (best < 0) break;
        pruned[best] = 1;
        left[best / d->H]--;
        order[done] = best;
        red[done++] = br;
    }
    free(pruned);
    free(left);
    return done;
}

static int random_order(const dist_file *d, unsigned long seed, int want, int *order) {
    int N = d->N, done = 0;
    int *perm = xmalloc(N * sizeof *perm), *left = xcalloc(d->L, sizeof *left);
    for (int a = 0; a < N; a++) perm[a] = a, left[a / d->H]++;
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, seed);
    gsl_ran_shuffle(g, perm, N, sizeof *perm);
    gsl_rng_free(g);
    for (int i = 0; i < N && done < want; i++) {
        int a = perm[i];
        if (left[a / d->H] < 2) continue;
        left[a / d->H]--;
        order[done++] = a;
    }
    free(perm);
    free(left);
    return done;
}

static void write_mask(const char *dir, const char *name, int pct, const char *pj, const dist_file *d,
                       const int *order, int n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%d.txt", dir, name, pct);
    const char *tmp = cli_out_begin(path);
    FILE *f = fopen(tmp, "w");
    if (!f) die_data(path, "cannot create: %s", strerror(errno));
    fprintf(f, "# prune-rank mask: %s, %d%% of %d heads (%d pruned)\n# provenance: %s\n", name, pct, d->N, n, pj);
    for (int i = 0; i < n; i++) fprintf(f, "%d\t%d\n", d->head_layer[order[i]], d->head_index[order[i]]);
    if (fclose(f) != 0) die_data(path, "write error");
    cli_out_commit(path);
}

typedef struct {
    double sp[16];
    int nsp, want[16], maxwant;
    const char *dir;
    h5io_id h5;            /* -o FILE, or -1 */
} targets;

static void emit(const char *metric, const char *maskname, unsigned long seed, const int *order, const double *red, int n,
                 const dist_file *d, const targets *tg, const char *pj) {
    for (int i = 0; i < n; i++)
        printf("%s\t%lu\t%d\t%d\t%d\t%d\t%.10g\n", metric, seed, i + 1, order[i], d->head_layer[order[i]],
               d->head_index[order[i]], red ? red[i] : NAN);
    if (tg->h5 >= 0 && n > 0) {
        char name[96];
        h5io_size dn[1] = {n};
        snprintf(name, sizeof name, "order/%s", maskname);
        h5io_write_i32(tg->h5, name, 1, dn, order);
        if (red) {
            snprintf(name, sizeof name, "redundancy/%s", maskname);
            h5io_write_f64(tg->h5, name, 1, dn, red);
        }
    }
    if (!tg->dir) return;
    for (int j = 0; j < tg->nsp; j++) {
        int pct = (int)lround(100 * tg->sp[j]);
        if (tg->want[j] > n)
            die_data(d->path, "%s: only %d heads can be pruned without emptying a layer, %d wanted",
                     metric, n, tg->want[j]);
        write_mask(tg->dir, maskname, pct, pj, d, order, tg->want[j]);
    }
}

/* Every mask file the run will write, planned before the distance file is read, so that one of
 * them being that file is refused before any mask is written. */
static void plan_masks(const targets *tg, const char *metrics, int nseeds) {
    if (!tg->dir) return;
    char *list = xstrdup(metrics), *save = NULL, path[4096];
    for (char *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save))
        for (int j = 0; j < tg->nsp; j++)
            snprintf(path, sizeof path, "%s/%s-%d.txt", tg->dir, m, (int)lround(100 * tg->sp[j])), cli_out_plan(path);
    for (int s = 1; s <= nseeds; s++)
        for (int j = 0; j < tg->nsp; j++)
            snprintf(path, sizeof path, "%s/random%d-%d.txt", tg->dir, s, (int)lround(100 * tg->sp[j])), cli_out_plan(path);
    free(list);
}

int main(int argc, char **argv) {
    char err[2048];
    cli_init("prune-rank");
    h5io_quiet();
    const char *metrics_arg = "js_keep,js_drop,aitchison,content_full";
    targets tg = {{0.1, 0.2, 0.3}, 3, {0}, 0, NULL, -1};
    const char *out = NULL;
    int nseeds = 5;
    static struct option lo[] = {{"metrics", required_argument, 0, 'm'}, {"sparsity", required_argument, 0, 's'},
                                 {"random-seeds", required_argument, 0, 'r'}, {"masks-dir", required_argument, 0, 'd'},
                                 {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "ho:", lo, NULL)) != -1) {
        switch (c) {
        case 'm': metrics_arg = optarg; break;
        case 's':
            if ((tg.nsp = an_parse_list("sparsity", optarg, tg.sp, 16, err, sizeof err)) < 0) die_usage("%s", err);
            break;
        case 'r': nseeds = (int)cli_parse_long("random-seeds", optarg, 0, 1000); break;
        case 'd': tg.dir = optarg; break;
        case 'o': out = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': cli_print_version(); return 0;
        default: cli_bad_option(argv, lo, "ho:");
        }
    }
    cli_operands(argc, argv, 1, 1, "one distance file");
    cli_out_plan(out);
    if (out && cli_is_stdio(out)) die_usage("-o: give a file name (the table goes to stdout)");
    char *metrics = xstrdup(metrics_arg);
    for (int j = 0; j < tg.nsp; j++)
        if (!(tg.sp[j] > 0 && tg.sp[j] < 1)) die_usage("--sparsity: %g is not in (0, 1)", tg.sp[j]);
    char *mcheck = xstrdup(metrics), *save = NULL;
    for (char *m = strtok_r(mcheck, ",", &save); m; m = strtok_r(NULL, ",", &save))
        if (dist_metric_index(m) < 0) die_usage("--metrics: unknown metric '%s'", m);
    free(mcheck);
    if (tg.dir) {
        struct stat st;
        if (stat(tg.dir, &st) != 0 || !S_ISDIR(st.st_mode)) die_usage("--masks-dir: '%s' is not a directory", tg.dir);
    }
    plan_masks(&tg, metrics, nseeds);
    dist_file *d = dist_open(argv[optind], err, sizeof err);
    if (!d) die_data(NULL, "%s", err);
    int N = d->N;
    for (int j = 0; j < tg.nsp; j++) {
        tg.want[j] = (int)lround(tg.sp[j] * N);
        if (tg.want[j] > tg.maxwant) tg.maxwant = tg.want[j];
    }
    prov *p = prov_new();
    prov_input(p, d->path, d->sha);
    prov_opt_str(p, "metrics", metrics);
    prov_opt_int(p, "random_seeds", nseeds);
    strbuf sps = {0};
    for (int j = 0; j < tg.nsp; j++) sb_printf(&sps, "%s%.17g", j ? "," : "", tg.sp[j]);
    prov_opt_str(p, "sparsity", sps.s);
    prov_opt_str(p, "model", d->model);
    if (d->provenance) prov_upstream(p, d->provenance);
    char *pj = prov_json(p);
    tsv_begin(stdout, pj, "metric\tseed\trank\thead\tlayer\tindex\tredundancy");
    if (out) {
        tg.h5 = h5io_create(out, err, sizeof err);
        if (tg.h5 < 0) cli_check((int)tg.h5, err);
        h5io_attr_str(tg.h5, "/", "format", "attncoda-prune-rank");
        h5io_attr_str(tg.h5, "/", "provenance", pj);
        h5io_size d1[1] = {N};
        h5io_write_i32(tg.h5, "head_layer", 1, d1, d->head_layer);
        h5io_write_i32(tg.h5, "head_index", 1, d1, d->head_index);
    }
    int *order = xmalloc(N * sizeof *order);
    double *red = xmalloc(N * sizeof *red);
    save = NULL;
    for (char *m = strtok_r(metrics, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        double *D = dist_matrix(d, m, err, sizeof err);
        if (!D) die_data(NULL, "%s", err);
        int n = greedy_order(D, d, tg.maxwant, order, red);
        emit(m, m, 0, order, red, n, d, &tg, pj);
        free(D);
    }
    for (int s = 1; s <= nseeds; s++) {
        char name[32];
        snprintf(name, sizeof name, "random%d", s);
        int n = random_order(d, s, tg.maxwant, order);
        emit("random", name, s, order, NULL, n, d, &tg, pj);
    }
    if (out) cli_check(h5io_finish(tg.h5, out, err, sizeof err), err);
    free(order);
    free(red);
    free(pj);
    sb_free(&sps);
    prov_free(p);
    free(metrics);
    dist_close(d);
    return 0;
}

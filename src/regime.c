/* regime: METHODS §5.6 — sink dispersion per model, thresholds fitted once on development
 * models, and the frozen predictor applied to held-out models. */
#include "attn/analysis.h"
#include "cli/cli.h"
#include "io/h5io.h"
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *usage =
    "Usage: regime MODEL...                                   dispersion table\n"
    "       regime --fit --dev MODEL[,MODEL...] --pruning P.tsv[,...] -o CONF [--force]\n"
    "       regime --thresholds CONF [--pruning P.tsv[,...]] MODEL...\n"
    "MODEL is a distance file (HDF5 from 'distance'; model name = its 'model' attribute) or a TSV\n"
    "with columns 'model' and 'dispersion' (every row is one model).\n"
    "Sink dispersion = population standard deviation across heads of head_sink_mass.\n"
    "Pruning TSV: columns model metric sparsity perplexity; metric 'none' at sparsity 0 is the\n"
    "  baseline; repeated (model, metric, sparsity) rows (random seeds) are averaged. Observed\n"
    "  'unsafe' when at --sparsity (0.2) the perplexity increase of --classical (js_keep) exceeds\n"
    "  --ratio (1.5) times the increase of --content (content_full, d_A-perp); when the content\n"
    "  increase is <= 0, unsafe iff the classical increase is > 0.\n"
    "Fitting rule (development models only): a = largest dispersion observed safe, b = smallest\n"
    "  observed unsafe; tau_lo = min(a, b), tau_hi = max(a, b) (overlapping sets: abstain over the\n"
    "  overlap). Only safe observed: tau_lo = a, tau_hi = inf. Only unsafe: tau_lo = 0, tau_hi = b.\n"
    "Predictor: dispersion > tau_hi -> unsafe; < tau_lo -> safe; otherwise abstain.\n"
    "CONF (written once; an existing CONF is an error unless --force): '# ' lines, then\n"
    "  'tau_lo = X' and 'tau_hi = Y'. --thresholds never writes it.\n"
    "Options: --sparsity X, --ratio R, --classical METRIC, --content METRIC, -h/--help, --version\n"
    "Stdout (TSV): model dispersion heads (dispersion table) | model dispersion observed (fit) |\n"
    "  model dispersion verdict observed outcome (confirmation/abstention/failure; '-' when the\n"
    "  pruning results lack the model).\n"
    "Memory: one head_sink_mass vector per model.\n";

typedef struct { char *name; double disp; int heads; } model;
/* Pruning results: every table of the comma list, concatenated. */
typedef struct { tsv_table **t; int n; } prune_set;
typedef struct {
    double sparsity, ratio;
    const char *classical, *content;
} obs_opts;

static double sd(const double *x, int n) {
    double m = 0, v = 0;
    for (int i = 0; i < n; i++) m += x[i];
    m /= n;
    for (int i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    return sqrt(v / n);
}

/* Appends the models of one argument (distance file or TSV) to *ms. */
static void load_models(const char *path, model **ms, int *n, prov *p) {
    char err[2048];
    if (an_is_hdf5(path) || cli_is_stdio(path)) {
        dist_file *d = dist_open(path, err, sizeof err);
        if (!d) die_data(NULL, "%s", err);
        *ms = xrealloc(*ms, (*n + 1) * sizeof **ms);
        (*ms)[*n].name = xstrdup(d->model);
        (*ms)[*n].disp = sd(d->head_sink, d->N);
        (*ms)[*n].heads = d->N;
        (*n)++;
        prov_input(p, path, d->sha);
        dist_close(d);
        return;
    }
    char sha[65];
    if (cli_sha256_file(path, sha) != 0) die_data(path, "cannot read: %s", strerror(errno));
    tsv_table *t = tsv_read(path, err, sizeof err);
    if (!t) die_data(NULL, "%s", err);
    int cm = tsv_col(t, "model"), cd = tsv_col(t, "dispersion"), ch = tsv_col(t, "heads");
    if (cm < 0 || cd < 0) die_data(path, "needs columns 'model' and 'dispersion'");
    if (t->nrow == 0) die_data(path, "no model rows (only a header)");
    for (int r = 0; r < t->nrow; r++) {
        for (int q = 0; q < r; q++)   /* one row per model: a repeat would count the model twice */
            if (!strcmp(t->cell[q][cm], t->cell[r][cm]))
                die_data(path, "line %d: model '%s' repeats line %d", t->line[r], t->cell[r][cm], t->line[q]);
        char *end;
        double v = strtod(t->cell[r][cd], &end);
        if (*end || end == t->cell[r][cd] || !isfinite(v) || v < 0)
            die_data(path, "line %d: dispersion '%s' is not a finite non-negative number", t->line[r], t->cell[r][cd]);
        *ms = xrealloc(*ms, (*n + 1) * sizeof **ms);
        (*ms)[*n].name = xstrdup(t->cell[r][cm]);
        (*ms)[*n].disp = v;
        (*ms)[*n].heads = ch >= 0 ? atoi(t->cell[r][ch]) : 0;
        (*n)++;
    }
    prov_input(p, path, sha);
    tsv_free(t);
}

static void free_models(model *ms, int n) {
    for (int i = 0; i < n; i++) free(ms[i].name);
    free(ms);
}

static void free_pruning(prune_set *ps) {
    for (int i = 0; i < ps->n; i++) tsv_free(ps->t[i]);
    free(ps->t);
}

static void load_list(const char *list, model **ms, int *n, prov *p) {
    char *dup = xstrdup(list), *save = NULL;
    for (char *s = strtok_r(dup, ",", &save); s; s = strtok_r(NULL, ",", &save)) load_models(s, ms, n, p);
    free(dup);
}


static prune_set load_pruning(const char *list, prov *p) {
    char err[2048];
    prune_set ps = {0};
    char *dup = xstrdup(list), *save = NULL;
    for (char *s = strtok_r(dup, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        tsv_table *t = tsv_read(s, err, sizeof err);
        if (!t) die_data(NULL, "%s", err);
        const char *need[] = {"model", "metric", "sparsity", "perplexity"};
        for (int i = 0; i < 4; i++)
            if (tsv_col(t, need[i]) < 0) die_data(s, "pruning table needs column '%s'", need[i]);
        char sha[65];
        if (cli_sha256_file(s, sha) == 0) prov_input(p, s, sha);
        ps.t = xrealloc(ps.t, (ps.n + 1) * sizeof *ps.t);
        ps.t[ps.n++] = t;
    }
    free(dup);
    return ps;
}

/* Mean perplexity of (model, metric, sparsity); NAN when absent. */
static double ppl(const prune_set *ps, const char *mod, const char *metric, double sp) {
    double sum = 0;
    int k = 0;
    for (int i = 0; i < ps->n; i++) {
        tsv_table *t = ps->t[i];
        int cm = tsv_col(t, "model"), ce = tsv_col(t, "metric"), cs = tsv_col(t, "sparsity"), cp = tsv_col(t, "perplexity");
        for (int r = 0; r < t->nrow; r++) {
            if (strcmp(t->cell[r][cm], mod) || strcmp(t->cell[r][ce], metric)) continue;
            if (fabs(atof(t->cell[r][cs]) - sp) > 1e-9) continue;
            char *end;
            double v = strtod(t->cell[r][cp], &end);
            if (*end || !isfinite(v)) die_data(t->path, "line %d: perplexity '%s' is not a number", t->line[r], t->cell[r][cp]);
            sum += v, k++;
        }
    }
    return k ? sum / k : NAN;
}

/* 1 unsafe, 0 safe, -1 unknown */
static int observed(const prune_set *ps, const char *mod, const obs_opts *o) {
    if (ps->n == 0) return -1;
    double base = ppl(ps, mod, "none", 0), pc = ppl(ps, mod, o->classical, o->sparsity),
           pd = ppl(ps, mod, o->content, o->sparsity);
    if (isnan(base) || isnan(pc) || isnan(pd)) return -1;
    double ic = pc - base, id = pd - base;
    return id > 0 ? ic > o->ratio * id : ic > 0;
}

static const char *obs_name(int v) { return v < 0 ? "-" : v ? "unsafe" : "safe"; }

static void read_conf(const char *path, double *lo, double *hi) {
    size_t len;
    char *buf = cli_slurp_text(path, &len), *save = NULL;
    int got = 0;
    for (char *ln = strtok_r(buf, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        if (ln[0] == '#' || ln[0] == 0) continue;
        char key[32], val[64];
        if (sscanf(ln, " %31[a-z_] = %63s", key, val) != 2) die_data(path, "bad line '%s'", ln);
        char *end;
        double v = strtod(val, &end);
        if (*end || isnan(v)) die_data(path, "%s: '%s' is not a number", key, val);
        if (!strcmp(key, "tau_lo")) *lo = v, got |= 1;
        else if (!strcmp(key, "tau_hi")) *hi = v, got |= 2;
        else die_data(path, "unknown key '%s'", key);
    }
    free(buf);
    if (got != 3) die_data(path, "needs tau_lo and tau_hi");
    if (*lo > *hi) die_data(path, "tau_lo %g > tau_hi %g", *lo, *hi);
}

static void fit(model *ms, int n, const prune_set *ps, const obs_opts *o, const char *out, int force, prov *p) {
    double a = -INFINITY, b = INFINITY;
    int ns = 0, nu = 0;
    char *pj0 = prov_json(p);
    tsv_begin(stdout, pj0, "model\tdispersion\tobserved");
    free(pj0);
    for (int i = 0; i < n; i++) {
        int v = observed(ps, ms[i].name, o);
        if (v < 0) die_data(ps->t[0]->path, "no baseline/%s/%s perplexity at sparsity %g for development model '%s'",
                            o->classical, o->content, o->sparsity, ms[i].name);
        if (v) nu++, b = fmin(b, ms[i].disp);
        else ns++, a = fmax(a, ms[i].disp);
        printf("%s\t%.10g\t%s\n", ms[i].name, ms[i].disp, obs_name(v));
    }
    double lo, hi;
    if (ns && nu) lo = fmin(a, b), hi = fmax(a, b);
    else if (ns) lo = a, hi = INFINITY;
    else lo = 0, hi = b;
    (void)force;
    prov_opt_dbl(p, "tau_lo", lo);
    if (isinf(hi)) prov_opt_str(p, "tau_hi", "inf");
    else prov_opt_dbl(p, "tau_hi", hi);
    char *pj = prov_json(p);
    strbuf sb = {0};
    sb_printf(&sb, "# regime thresholds fitted on %d development models (%d safe, %d unsafe)\n# provenance: %s\n"
                   "tau_lo = %.17g\ntau_hi = %.17g\n", n, ns, nu, pj, lo, hi);
    cli_write_bytes(out, sb.s, sb.len);
    sb_free(&sb);
    free(pj);
}

int main(int argc, char **argv) {
    cli_init("regime");
    h5io_quiet();
    int do_fit = 0, force = 0;
    const char *dev = NULL, *pruning = NULL, *conf = NULL, *out = NULL;
    obs_opts o = {0.2, 1.5, "js_keep", "content_full"};
    static struct option lo[] = {{"fit", no_argument, 0, 'f'}, {"dev", required_argument, 0, 'd'},
                                 {"pruning", required_argument, 0, 'p'}, {"thresholds", required_argument, 0, 't'},
                                 {"force", no_argument, 0, 'F'}, {"sparsity", required_argument, 0, 's'},
                                 {"ratio", required_argument, 0, 'r'}, {"classical", required_argument, 0, 'c'},
                                 {"content", required_argument, 0, 'C'}, {"help", no_argument, 0, 'h'},
                                 {"version", no_argument, 0, 'V'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "ho:", lo, NULL)) != -1) {
        switch (c) {
        case 'f': do_fit = 1; break;
        case 'd': dev = optarg; break;
        case 'p': pruning = optarg; break;
        case 't': conf = optarg; break;
        case 'F': force = 1; break;
        case 'o': out = optarg; break;
        case 's': o.sparsity = cli_parse_double("sparsity", optarg, 0, 1); break;
        case 'r': o.ratio = cli_parse_double("ratio", optarg, 0, 1e9); break;
        case 'c': o.classical = optarg; break;
        case 'C': o.content = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': cli_print_version(); return 0;
        default: cli_bad_option(argv, lo, "ho:");
        }
    }
    if (do_fit && conf) die_usage("--fit and --thresholds exclude each other");
    cli_out_plan(out);
    prov *p = prov_new();
    prov_opt_dbl(p, "sparsity", o.sparsity);
    prov_opt_dbl(p, "ratio", o.ratio);
    prov_opt_str(p, "classical", o.classical);
    prov_opt_str(p, "content", o.content);
    model *ms = NULL;
    int n = 0;
    if (do_fit) {
        if (!dev || !pruning || !out) die_usage("--fit needs --dev, --pruning and -o");
        cli_operands(argc, argv, 0, 0, "no models with --fit (they come through --dev)");
        if (cli_is_stdio(out)) die_usage("-o: give a file name");
        if (!force && access(out, F_OK) == 0) die_usage("-o %s: the config exists; it is written once (use --force)", out);
        load_list(dev, &ms, &n, p);
        prune_set ps = load_pruning(pruning, p);
        fit(ms, n, &ps, &o, out, force, p);
        free_pruning(&ps);
    } else if (conf) {
        cli_operands(argc, argv, 1, -1, "held-out models with --thresholds");
        double tlo, thi;
        read_conf(conf, &tlo, &thi);
        char sha[65];
        if (cli_sha256_file(conf, sha) == 0) prov_input(p, conf, sha);
        for (int i = optind; i < argc; i++) load_models(argv[i], &ms, &n, p);
        prune_set ps = pruning ? load_pruning(pruning, p) : (prune_set){0};
        prov_opt_dbl(p, "tau_lo", tlo);
        if (isinf(thi)) prov_opt_str(p, "tau_hi", "inf");
        else prov_opt_dbl(p, "tau_hi", thi);
        char *pj = prov_json(p);
        tsv_begin(stdout, pj, "model\tdispersion\tverdict\tobserved\toutcome");
        for (int i = 0; i < n; i++) {
            int v = ms[i].disp > thi ? 1 : ms[i].disp < tlo ? 0 : -1, ob = observed(&ps, ms[i].name, &o);
            const char *outc = ob < 0 ? "-" : v < 0 ? "abstention" : v == ob ? "confirmation" : "failure";
            printf("%s\t%.10g\t%s\t%s\t%s\n", ms[i].name, ms[i].disp, v < 0 ? "abstain" : obs_name(v), obs_name(ob), outc);
        }
        free(pj);
        free_pruning(&ps);
    } else {
        cli_operands(argc, argv, 1, -1, "models");
        for (int i = optind; i < argc; i++) load_models(argv[i], &ms, &n, p);
        char *pj = prov_json(p);
        tsv_begin(stdout, pj, "model\tdispersion\theads");
        for (int i = 0; i < n; i++) printf("%s\t%.10g\t%d\n", ms[i].name, ms[i].disp, ms[i].heads);
        free(pj);
    }
    free_models(ms, n);
    prov_free(p);
    return 0;
}

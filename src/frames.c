/* frames: reference frames of attention sinks (METHODS §7; Ruscio, Nanni and Silvestri 2025).
 * Per head the chance-corrected reference points (received mass r, chance level u, lift z = r/u),
 * their anchor classes, N_eff and a label (none, centralized, distributed, bidirectional); per
 * layer the label shares; per model one label. --paper-stats adds the paper's own graph
 * statistics (§7.3). One (sequence, layer) block of attention is in memory at a time. */
#include "attn/analysis.h"
#include "attn/attnio.h"
#include "cli/cli.h"
#include "io/h5io.h"
#include "tok/tok.h"

#include <getopt.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_sort_vector.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

enum { C_FIRST, C_LAST, C_SPECIAL, C_DELIM, C_CONTENT, NCLASS };
static const char *CLASS_NAME[NCLASS] = {"first", "last", "special", "delimiter", "content"};
enum { LB_NONE, LB_CENTRAL, LB_DISTRIB, LB_BIDIR, NLABEL };
static const char *LABEL_NAME[NLABEL] = {"none", "centralized", "distributed", "bidirectional"};
enum { MAX_SPECIAL = 64, MAX_TAU = 16 };

typedef struct {
    int min_query, model_layer_from, threads, paper;
    int min_query_given;   /* --min-query was given: a T too short for it is a usage error */
    double tau_r, tau_z, min_seq_share, central_share, central_neff, bidir_share, min_sink_heads;
    double zero_delta;
    const char *tokenizer, *special_arg, *paper_tau_arg;
    int32_t special[MAX_SPECIAL];
    int nspecial;
    double paper_tau[MAX_TAU];
    int npaper_tau;
    double paper_ref_mass, paper_ref_top, paper_ref_cap, paper_pct, dens_lo, dens_hi;
    const char *in, *heads, *layers, *label, *h5, *keys;
} fr_opts;

static void usage(void) {
    printf("Usage: %s [options] INPUT|- [OUTPUT|-]\n"
           "Reference frames of attention sinks (METHODS §7): per head the keys whose received mass r\n"
           "and lift z = r/u over the chance level u make them reference points, their anchor classes\n"
           "(first, last, special, delimiter, content), N_eff and a label: none, centralized,\n"
           "distributed or bidirectional. Prints the one-line model label on stdout.\n\n"
           "Outputs:\n"
           "      --heads FILE          per-head TSV (label, seq_share, n_ref, p1, n_eff, class shares)\n"
           "      --layers FILE         per-layer TSV (label shares, class shares over sink heads)\n"
           "      --label FILE          the model label as a one-row TSV\n"
           "      --keys FILE           per (layer, key position): r and z averaged over heads (TSV)\n"
           "  -o, --output FILE         HDF5: r, u, z per (layer, head, key) averaged over sequences\n"
           "                            (also the optional second argument OUTPUT)\n"
           "Reference points (§7.1):\n"
           "      --min-query Q         queries q < Q are not used (4)\n"
           "      --tau-r X             received mass threshold tau_r (0.3)\n"
           "      --tau-z X             lift threshold tau_z (3)\n"
           "      --tokenizer PATH      tokenizer of the model: special ids and the delimiter class\n"
           "      --special LIST        further special token ids, comma-separated\n"
           "      --zero-delta X        zero replacement for probability input (1e-9)\n"
           "Labels (§7.1, §7.2):\n"
           "      --min-seq-share X     head is 'none' below this share of sequences with a\n"
           "                            reference point (0.5)\n"
           "      --central-share X     centralized: one class holds at least this share (0.7)\n"
           "      --central-neff X      ... and mean N_eff at most this (1.5)\n"
           "      --bidir-share X       bidirectional: two classes each hold at least this (0.25)\n"
           "      --min-sink-heads X    model is 'none' below this share of sink heads (0.1)\n"
           "      --model-layers-from N layers below N do not enter the model label (1)\n"
           "Paper statistics (§7.3):\n"
           "      --paper-stats         add them to the per-head TSV\n"
           "      --paper-tau LIST      graph thresholds (0.01,0.05,0.1,0.2)\n"
           "      --paper-ref-mass X    reference token: mean received attention above X (0.1)\n"
           "      --paper-ref-top X     else the top X of tokens (0.1)\n"
           "      --paper-ref-cap X     at most X of the tokens (0.3)\n"
           "      --paper-percentile X  percentile sinks: at or above this percentile (90)\n"
           "      --paper-density LO,HI graphs kept when edge density is in [LO, HI] (0.05,0.95)\n"
           "      --threads N           OpenMP threads (default: all cores)\n"
           "      --progress            progress bar on stderr; --no-progress: none (default:\n"
           "                            when stderr is a terminal)\n"
           "  -h, --help, -V, --version\n\n"
           "Memory: one (sequence, layer) block (4*H*T*T bytes) plus 32*L*H*T bytes of averages;\n"
           "--paper-stats adds 8*L*H*T*T bytes (the head-averaged attention).\n", cli_prog());
}

/* Comma list of token ids. */
static int parse_ids(const char *opt, const char *s, int32_t *out, int max) {
    char *dup = xstrdup(s), *save = NULL;
    int n = 0;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == max) die_usage("--%s: more than %d ids", opt, max);
        out[n++] = (int32_t)cli_parse_long(opt, t, 0, INT32_MAX);
    }
    free(dup);
    if (n == 0) die_usage("--%s: empty list", opt);
    return n;
}

static void parse_pair(const char *opt, const char *s, double *lo, double *hi) {
    double v[2];
    char why[256];
    int n = an_parse_list(opt, s, v, 2, why, sizeof why);
    if (n < 0) die_usage("%s", why);
    if (n != 2) die_usage("--%s: expected LO,HI", opt);
    if (!(v[0] >= 0 && v[0] <= v[1] && v[1] <= 1)) die_usage("--%s: need 0 <= LO <= HI <= 1", opt);
    *lo = v[0];
    *hi = v[1];
}

static void parse_args(int argc, char **argv, fr_opts *o) {
    char why[256];
    enum { O_MINQ = 256, O_TR, O_TZ, O_TOK, O_SPEC, O_ZD, O_MSS, O_CS, O_CN, O_BS, O_MSH, O_MLF,
           O_PS, O_PT, O_PRM, O_PRT, O_PRC, O_PP, O_PD, O_HEADS, O_LAYERS, O_LABEL, O_THR, O_KEYS };
    static const struct option lo[] = {
        {"min-query", 1, 0, O_MINQ}, {"tau-r", 1, 0, O_TR}, {"tau-z", 1, 0, O_TZ},
        {"tokenizer", 1, 0, O_TOK}, {"special", 1, 0, O_SPEC}, {"zero-delta", 1, 0, O_ZD},
        {"min-seq-share", 1, 0, O_MSS}, {"central-share", 1, 0, O_CS}, {"central-neff", 1, 0, O_CN},
        {"bidir-share", 1, 0, O_BS}, {"min-sink-heads", 1, 0, O_MSH},
        {"model-layers-from", 1, 0, O_MLF}, {"paper-stats", 0, 0, O_PS}, {"paper-tau", 1, 0, O_PT},
        {"paper-ref-mass", 1, 0, O_PRM}, {"paper-ref-top", 1, 0, O_PRT}, {"paper-ref-cap", 1, 0, O_PRC},
        {"paper-percentile", 1, 0, O_PP}, {"paper-density", 1, 0, O_PD}, {"heads", 1, 0, O_HEADS},
        {"layers", 1, 0, O_LAYERS}, {"label", 1, 0, O_LABEL}, {"keys", 1, 0, O_KEYS}, {"output", 1, 0, 'o'},
        {"threads", 1, 0, O_THR}, {"help", 0, 0, 'h'}, {"version", 0, 0, 'V'}, CLI_PROGRESS_OPTIONS, {0, 0, 0, 0}};
    *o = (fr_opts){.min_query = 4, .model_layer_from = 1, .tau_r = 0.3, .tau_z = 3,
                   .min_seq_share = 0.5, .central_share = 0.7, .central_neff = 1.5,
                   .bidir_share = 0.25, .min_sink_heads = 0.1, .zero_delta = 1e-9,
                   .paper_tau = {0.01, 0.05, 0.1, 0.2}, .npaper_tau = 4, .paper_ref_mass = 0.1,
                   .paper_ref_top = 0.1, .paper_ref_cap = 0.3, .paper_pct = 90, .dens_lo = 0.05,
                   .dens_hi = 0.95};
    int c;
    while ((c = getopt_long(argc, argv, "hVo:", lo, NULL)) != -1) {
        switch (c) {
        case O_MINQ: o->min_query = cli_parse_long("min-query", optarg, 0, 1 << 20), o->min_query_given = 1; break;
        case O_TR: o->tau_r = cli_parse_double("tau-r", optarg, 0, 1); break;
        case O_TZ: o->tau_z = cli_parse_double("tau-z", optarg, 0, 1e12); break;
        case O_TOK: o->tokenizer = optarg; break;
        case O_SPEC: o->special_arg = optarg; o->nspecial = parse_ids("special", optarg, o->special, MAX_SPECIAL); break;
        case O_ZD: o->zero_delta = cli_parse_double("zero-delta", optarg, 1e-300, 1e-2); break;
        case O_MSS: o->min_seq_share = cli_parse_double("min-seq-share", optarg, 0, 1); break;
        case O_CS: o->central_share = cli_parse_double("central-share", optarg, 0, 1); break;
        case O_CN: o->central_neff = cli_parse_double("central-neff", optarg, 1, 1e12); break;
        case O_BS: o->bidir_share = cli_parse_double("bidir-share", optarg, 0, 0.5); break;
        case O_MSH: o->min_sink_heads = cli_parse_double("min-sink-heads", optarg, 0, 1); break;
        case O_MLF: o->model_layer_from = cli_parse_long("model-layers-from", optarg, 0, 1 << 20); break;
        case O_PS: o->paper = 1; break;
        case O_PT:
            o->paper_tau_arg = optarg;
            o->npaper_tau = an_parse_list("paper-tau", optarg, o->paper_tau, MAX_TAU, why, sizeof why);
            if (o->npaper_tau < 0) die_usage("%s", why);
            for (int i = 0; i < o->npaper_tau; i++)
                if (!(o->paper_tau[i] >= 0 && o->paper_tau[i] < 1))
                    die_usage("--paper-tau: %g is not in [0, 1)", o->paper_tau[i]);
            break;
        case O_PRM: o->paper_ref_mass = cli_parse_double("paper-ref-mass", optarg, 0, 1); break;
        case O_PRT: o->paper_ref_top = cli_parse_double("paper-ref-top", optarg, 1e-6, 1); break;
        case O_PRC: o->paper_ref_cap = cli_parse_double("paper-ref-cap", optarg, 1e-6, 1); break;
        case O_PP: o->paper_pct = cli_parse_double("paper-percentile", optarg, 0, 100); break;
        case O_PD: parse_pair("paper-density", optarg, &o->dens_lo, &o->dens_hi); break;
        case O_HEADS: o->heads = optarg; break;
        case O_LAYERS: o->layers = optarg; break;
        case O_LABEL: o->label = optarg; break;
        case O_KEYS: o->keys = optarg; break;
        case 'o': o->h5 = optarg; break;
        case O_THR: o->threads = cli_parse_long("threads", optarg, 1, 1024); break;
        case CLI_OPT_PROGRESS: case CLI_OPT_NO_PROGRESS: cli_progress_option(c); break;
        case 'h': usage(); exit(0);
        case 'V': cli_print_version(); exit(0);
        default: cli_bad_option(argv, lo, "hVo:");
        }
    }
    cli_operands(argc, argv, 1, 2, "INPUT [OUTPUT]");
    o->in = argv[optind];
    if (optind == argc - 2) {
        if (o->h5) die_usage("OUTPUT given both as -o and as an argument");
        o->h5 = argv[optind + 1];
    }
    int nstd = cli_is_stdio(o->heads) + cli_is_stdio(o->layers) + cli_is_stdio(o->label) +
               cli_is_stdio(o->keys) + cli_is_stdio(o->h5);
    if (nstd > 1) die_usage("at most one of --heads, --layers, --label, --keys, --output can be stdout");
}

/* ---- anchor classes of the tokens ---- */

/* Text made only of Unicode punctuation (P*) or separators (Z*) and ASCII whitespace controls. */
static int is_delimiter_text(const char *s, int n) {
    if (n <= 0) return 0;
    int i = 0;
    while (i < n) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, n - i, &cp);
        if (k <= 0) return 0;
        utf8proc_category_t cat = utf8proc_category(cp);
        int punct = cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
        int sep = cat >= UTF8PROC_CATEGORY_ZS && cat <= UTF8PROC_CATEGORY_ZP;
        if (!punct && !sep && !(cp >= 9 && cp <= 13)) return 0;
        i += (int)k;
    }
    return 1;
}

typedef struct {
    int vocab;           /* -1 without a tokenizer: every id allowed, no delimiter class */
    uint8_t *delim;      /* per id */
    int32_t special[MAX_SPECIAL + 5];
    int nspecial;
} token_classes;

static const char *known_family(const char *f) {
    static const char *const fam[] = {"gpt2", "gpt_neox", "llama", "qwen2", "bert"};
    for (size_t i = 0; i < sizeof fam / sizeof *fam; i++)
        if (!strcmp(f, fam[i])) return f;
    return NULL;
}

static token_classes load_classes(const fr_opts *o, const attn_meta *m) {
    token_classes tc = {.vocab = -1};
    for (int i = 0; i < o->nspecial; i++) tc.special[tc.nspecial++] = o->special[i];
    if (!o->tokenizer) return tc;
    char err[512];
    tok *t = tok_load(o->tokenizer, known_family(m->family), err, sizeof err);
    if (!t) die_data(o->tokenizer, "%s", err);
    tc.vocab = tok_vocab_size(t);
    if (tc.vocab <= 0) die_data(o->tokenizer, "tokenizer has no vocabulary");
    int sp[5] = {tok_bos(t), tok_eos(t), tok_cls(t), tok_sep(t), tok_pad(t)};
    for (int i = 0; i < 5; i++)
        if (sp[i] >= 0) tc.special[tc.nspecial++] = sp[i];
    tc.delim = xcalloc(tc.vocab, 1);
    char buf[1024];
    /* context-free text of each id: the class belongs to the token, not to its neighbours */
    for (int id = 0; id < tc.vocab; id++)
        tc.delim[id] = (uint8_t)is_delimiter_text(buf, tok_decode_piece(t, -1, id, buf, sizeof buf));
    tok_free(t);
    return tc;
}

static int is_special(const token_classes *tc, int32_t id) {
    for (int i = 0; i < tc->nspecial; i++)
        if (tc->special[i] == id) return 1;
    return 0;
}

/* Class of every key position of sequence s (ids already range-checked). */
static void sequence_classes(const token_classes *tc, const attn_meta *m, const int32_t *ids,
                             const uint8_t *vs, uint8_t *cls) {
    int last = -1;
    for (int k = 0; k < m->T; k++)
        if (!vs || vs[k]) last = k;
    for (int k = 0; k < m->T; k++) {
        if (k == 0) cls[k] = C_FIRST;
        else if (k == last) cls[k] = C_LAST;
        else if (is_special(tc, ids[k])) cls[k] = C_SPECIAL;
        else if (tc->delim && tc->delim[ids[k]]) cls[k] = C_DELIM;
        else cls[k] = C_CONTENT;
    }
}

static void check_ids(const char *path, const token_classes *tc, const attn_meta *m, const int32_t *ids) {
    for (int s = 0; s < m->S; s++)
        for (int t = 0; t < m->T; t++) {
            int32_t id = ids[(size_t)s * m->T + t];
            if (id < 0 || (tc->vocab > 0 && id >= tc->vocab))
                die_data(path, "token id %d at (sequence %d, position %d) is outside %s", id, s, t,
                         tc->vocab > 0 ? "the tokenizer's vocabulary" : "the id range");
        }
}

/* ---- per head accumulation (§7.1) ---- */

typedef struct {
    long long seq_with_ref;
    double n_ref, p1, n_eff, mass[NCLASS];
} head_acc;

/* r, u over the queries of one head in one (s, l) block; cnt[k] = |Q(k)|. Rows are closed in
 * double precision (probability input zero-replaced first). */
/* abar (may be NULL): every valid row's probabilities are added to it, queries below q0 too.
 * Stored row i is query qp[i]: a file of sampled rows gives the means over the stored queries
 * (docs/FRAMES.md, "Sampled query rows"). */
static void received(const attn_meta *m, const uint8_t *vs, const int32_t *qp, const float *hb, int q0, double zd,
                     double *r, double *u, int *cnt, double *prow, double *abar) {
    int T = m->T, sp;
    for (int k = 0; k < T; k++) r[k] = u[k] = 0, cnt[k] = 0;
    for (int row = 0; row < m->Q; row++) {
        int q = qp[row];
        if (!abar && q < q0) continue;
        if (vs && !vs[q]) continue;
        int D = attn_gather_row(m, vs, hb + (size_t)row * T, q, 0, zd, prow, &sp, NULL);
        for (int k = 0, i = 0; k < T; k++) {
            if (!attn_key_in_row(m, vs, q, k)) continue;
            double p = exp(prow[i++]);
            if (abar) abar[(size_t)q * T + k] += p;
            if (q < q0) continue;
            r[k] += p;
            u[k] += 1.0 / D;
            cnt[k]++;
        }
    }
    for (int k = 0; k < T; k++) {
        if (cnt[k]) r[k] /= cnt[k], u[k] /= cnt[k];
        else r[k] = u[k] = NAN;
    }
}

/* Reference points of one (sequence, head): adds to the head's accumulator. */
static void reference_points(const fr_opts *o, int T, const double *r, const double *u,
                             const uint8_t *cls, head_acc *a) {
    double tot = 0, mx = 0, mass[NCLASS] = {0};
    int n = 0;
    for (int k = 0; k < T; k++) {
        if (!(r[k] >= o->tau_r && r[k] / u[k] >= o->tau_z)) continue;
        n++;
        tot += r[k];
        mass[cls[k]] += r[k];
        if (r[k] > mx) mx = r[k];
    }
    a->n_ref += n;
    if (!n) return;
    double H = 0;
    for (int k = 0; k < T; k++)
        if (r[k] >= o->tau_r && r[k] / u[k] >= o->tau_z) H -= r[k] / tot * log(r[k] / tot);
    a->seq_with_ref++;
    a->p1 += mx / tot;
    a->n_eff += exp(H);
    for (int c = 0; c < NCLASS; c++) a->mass[c] += mass[c];
}

typedef struct {
    int label;
    double seq_share, n_ref, p1, n_eff, share[NCLASS];
} head_res;

static head_res head_label(const fr_opts *o, const head_acc *a, int S, int causal, int have_delim) {
    head_res h = {.seq_share = (double)a->seq_with_ref / S, .n_ref = a->n_ref / S};
    double tot = 0;
    for (int c = 0; c < NCLASS; c++) tot += a->mass[c];
    h.p1 = a->seq_with_ref ? a->p1 / a->seq_with_ref : NAN;
    h.n_eff = a->seq_with_ref ? a->n_eff / a->seq_with_ref : NAN;
    for (int c = 0; c < NCLASS; c++) h.share[c] = tot > 0 ? a->mass[c] / tot : NAN;
    if (!have_delim) h.share[C_DELIM] = NAN;
    if (h.seq_share < o->min_seq_share || !(tot > 0)) { h.label = LB_NONE; return h; }
    double top = 0;
    int big = 0;
    for (int c = 0; c < NCLASS; c++) {
        double x = a->mass[c] / tot;
        if (x > top) top = x;
        if (x >= o->bidir_share) big++;
    }
    if (top >= o->central_share && h.n_eff <= o->central_neff) h.label = LB_CENTRAL;
    else if (!causal && big >= 2) h.label = LB_BIDIR;
    else h.label = LB_DISTRIB;
    return h;
}

/* ---- the paper's statistics (§7.3) on a head-averaged T×T attention ---- */

typedef struct {
    int n_ref_tokens, n_pct_sinks;
    char *ref_tokens;    /* comma list, malloc'd */
    double density[MAX_TAU], central[MAX_TAU], star[MAX_TAU], fiedler[MAX_TAU];
} paper_res;

static int cmp_desc_idx(const void *a, const void *b, void *ctx) {
    const double *x = ctx;
    int i = *(const int *)a, j = *(const int *)b;
    if (x[i] != x[j]) return x[i] > x[j] ? -1 : 1;
    return i - j;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Linear-interpolation percentile (the usual definition: position p/100·(n−1) in sorted order). */
static double percentile(const double *x, int n, double p) {
    double *s = xmalloc(n * sizeof *s);
    memcpy(s, x, n * sizeof *s);
    gsl_sort(s, 1, n);
    double pos = p / 100 * (n - 1);
    int lo = (int)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
    double v = s[lo] + (s[hi] - s[lo]) * (pos - lo);
    free(s);
    return v;
}

static double gini(const double *d, int n) {
    double num = 0, sum = 0;
    for (int i = 0; i < n; i++) {
        sum += d[i];
        for (int j = 0; j < n; j++) num += fabs(d[i] - d[j]);
    }
    return sum > 0 ? num / (2.0 * n * sum) : 0;
}

/* Second-smallest eigenvalue of the graph Laplacian of the symmetrised adjacency. */
static double fiedler(const uint8_t *adj, int n) {
    gsl_matrix *Lp = gsl_matrix_calloc(n, n);
    for (int i = 0; i < n; i++) {
        double deg = 0;
        for (int j = 0; j < n; j++) {
            if (i == j) continue;
            double w = 0.5 * (adj[(size_t)i * n + j] + adj[(size_t)j * n + i]);
            gsl_matrix_set(Lp, i, j, -w);
            deg += w;
        }
        gsl_matrix_set(Lp, i, i, deg);
    }
    gsl_vector *ev = gsl_vector_alloc(n);
    gsl_eigen_symm_workspace *ws = gsl_eigen_symm_alloc(n);
    gsl_eigen_symm(Lp, ev, ws);
    gsl_sort_vector(ev);
    double f = gsl_vector_get(ev, 1);
    gsl_eigen_symm_free(ws);
    gsl_vector_free(ev);
    gsl_matrix_free(Lp);
    return f;
}

static void reference_tokens(const fr_opts *o, const double *recv, const int *node, int n, paper_res *p) {
    int *order = xmalloc(n * sizeof *order), *pick = xmalloc(n * sizeof *pick), np = 0;
    for (int i = 0; i < n; i++) order[i] = i;
    qsort_r(order, n, sizeof *order, cmp_desc_idx, (void *)recv);
    int cap = (int)floor(o->paper_ref_cap * n + 1e-9), top = (int)ceil(o->paper_ref_top * n - 1e-9);
    if (cap < 1) cap = 1;
    if (top < 1) top = 1;
    for (int i = 0; i < n; i++)
        if (recv[order[i]] > o->paper_ref_mass) np++;
    if (np == 0) np = top;
    if (np > cap) np = cap;
    for (int i = 0; i < np; i++) pick[i] = node[order[i]];
    qsort(pick, np, sizeof *pick, cmp_int);
    p->n_ref_tokens = np;
    strbuf sb = {0};
    for (int i = 0; i < np; i++) sb_printf(&sb, "%s%d", i ? "," : "", pick[i]);
    p->ref_tokens = sb.s;
    free(order);
    free(pick);
}

/* abar: the head's T×T attention averaged over sequences (0 outside rows); node: the n positions
 * valid in at least one sequence. */
static paper_res paper_stats(const fr_opts *o, const double *abar, int T, const int *node, int n) {
    paper_res p = {0};
    double *recv = xcalloc(n, sizeof *recv), *deg = xmalloc(n * sizeof *deg);
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < n; i++) recv[j] += abar[(size_t)node[i] * T + node[j]];
        recv[j] /= n;
    }
    reference_tokens(o, recv, node, n, &p);
    double pc = percentile(recv, n, o->paper_pct);
    for (int j = 0; j < n; j++) p.n_pct_sinks += recv[j] >= pc;
    uint8_t *adj = xmalloc((size_t)n * n);
    for (int t = 0; t < o->npaper_tau; t++) {
        long long edges = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                uint8_t e = i != j && abar[(size_t)node[i] * T + node[j]] > o->paper_tau[t];
                adj[(size_t)i * n + j] = e;
                edges += e;
            }
        p.density[t] = n > 1 ? (double)edges / ((double)n * (n - 1)) : NAN;
        p.central[t] = p.star[t] = p.fiedler[t] = NAN;
        if (!(p.density[t] >= o->dens_lo && p.density[t] <= o->dens_hi)) continue;
        double mx = 0, c = 0;
        for (int j = 0; j < n; j++) {
            deg[j] = 0;
            for (int i = 0; i < n; i++) deg[j] += adj[(size_t)i * n + j];
            if (deg[j] > mx) mx = deg[j];
        }
        for (int j = 0; j < n; j++) c += mx - deg[j];
        p.central[t] = c / ((double)(n - 1) * (n - 1));
        p.star[t] = 0.3 * mx / (n - 1) + 0.7 * gini(deg, n);
        p.fiedler[t] = fiedler(adj, n);
    }
    free(adj);
    free(recv);
    free(deg);
    return p;
}

/* ---- the whole file ---- */

typedef struct {
    int L, H, T, N;
    int *layer_id, *head_id;
    head_acc *acc;
    double *rsum, *usum, *zsum;  /* N×T sums over the sequences where key k has queries */
    int *rcnt;
    double *abar;                /* N×T×T with --paper-stats */
} frames_acc;

static void original_ids(attn_reader *r, frames_acc *F) {
    h5io_id f = attn_reader_file(r);
    h5io_size wl[1] = {F->L}, wh[1] = {F->H};
    char err[2048];
    F->layer_id = F->head_id = NULL;
    if (h5io_exists(f, "layer_index") && !(F->layer_id = h5io_read_i32(f, attn_path(r), "layer_index", 1, wl, NULL, err, sizeof err)))
        die_data(NULL, "%s", err);
    if (h5io_exists(f, "head_index") && !(F->head_id = h5io_read_i32(f, attn_path(r), "head_index", 1, wh, NULL, err, sizeof err)))
        die_data(NULL, "%s", err);
    if (!F->layer_id) {
        F->layer_id = xmalloc(F->L * sizeof(int));
        for (int l = 0; l < F->L; l++) F->layer_id[l] = l;
    }
    if (!F->head_id) {
        F->head_id = xmalloc(F->H * sizeof(int));
        for (int h = 0; h < F->H; h++) F->head_id[h] = h;
    }
    for (int l = 0; l < F->L; l++)
        if (F->layer_id[l] < 0) die_data(attn_path(r), "layer_index holds a negative layer %d", F->layer_id[l]);
}

static void accumulate(const fr_opts *o, attn_reader *rd, frames_acc *F, const token_classes *tc,
                       const int32_t *ids, const uint8_t *valid) {
    char err[2048];
    const attn_meta *m = attn_meta_get(rd);
    int T = m->T, H = m->H;
    float *buf = xmalloc((size_t)H * m->Q * T * sizeof *buf);
    uint8_t *cls = xmalloc(T);
    progress pg;
    progress_begin(&pg, "frames", "blocks", (double)m->S * m->L);
    for (int s = 0; s < m->S; s++) {
        const uint8_t *vs = attn_has_valid(rd) ? valid + (size_t)s * T : NULL;
        sequence_classes(tc, m, ids + (size_t)s * T, vs, cls);
        for (int l = 0; l < m->L; l++) {
            if (attn_read_block(rd, s, l, buf, err, sizeof err)) die_data(NULL, "%s", err);
            #pragma omp parallel
            {
            /* scratch on the heap: T may be far larger than a thread's stack allows */
            double *r = xmalloc(3 * (size_t)T * sizeof *r), *u = r + T, *prow = u + T;
            int *cnt = xmalloc((size_t)T * sizeof *cnt);
            #pragma omp for schedule(dynamic)
            for (int h = 0; h < H; h++) {
                int a = l * H + h;
                received(m, vs, attn_query_pos(rd, s), buf + (size_t)h * m->Q * T, o->min_query, o->zero_delta, r, u, cnt, prow,
                         F->abar ? F->abar + (size_t)a * T * T : NULL);
                reference_points(o, T, r, u, cls, &F->acc[a]);
                for (int k = 0; k < T; k++) {
                    if (!cnt[k]) continue;
                    size_t i = (size_t)a * T + k;
                    F->rsum[i] += r[k];
                    F->usum[i] += u[k];
                    F->zsum[i] += r[k] / u[k];
                    F->rcnt[i]++;
                }
            }
            free(r);
            free(cnt);
            }
            progress_update(&pg, (double)s * m->L + l + 1);
        }
    }
    progress_end(&pg);
    free(buf);
    free(cls);
}

typedef struct {
    int label, runner, sink_heads, heads, from_layer;
    double label_share, runner_share;
} model_res;

/* §7.2: the label most sink heads of the layers ≥ from hold (ties to the earlier label). */
static model_res model_label(const fr_opts *o, const frames_acc *F, const head_res *hr) {
    model_res mr = {.label = LB_NONE, .runner = -1, .from_layer = o->model_layer_from};
    int maxlayer = 0;
    for (int l = 0; l < F->L; l++) if (F->layer_id[l] > maxlayer) maxlayer = F->layer_id[l];
    if (mr.from_layer > maxlayer) mr.from_layer = 0;   /* a one-layer model: its only layer */
    int count[NLABEL] = {0};
    for (int a = 0; a < F->N; a++) {
        if (F->layer_id[a / F->H] < mr.from_layer) continue;
        mr.heads++;
        count[hr[a].label]++;
        if (hr[a].label != LB_NONE) mr.sink_heads++;
    }
    if (mr.sink_heads == 0 || (double)mr.sink_heads < o->min_sink_heads * mr.heads) return mr;
    int best = -1, second = -1;
    for (int b = LB_CENTRAL; b < NLABEL; b++) {
        if (!count[b]) continue;
        if (best < 0 || count[b] > count[best]) second = best, best = b;
        else if (second < 0 || count[b] > count[second]) second = b;
    }
    mr.label = best;
    mr.label_share = (double)count[best] / mr.sink_heads;
    mr.runner = second;
    mr.runner_share = second >= 0 ? (double)count[second] / mr.sink_heads : 0;
    return mr;
}

static char *provenance(const fr_opts *o, attn_reader *r, const token_classes *tc) {
    prov *p = prov_new();
    prov_input(p, o->in, attn_checksum(r));
    if (o->tokenizer) {
        char sha[65];
        if (cli_sha256_file(o->tokenizer, sha) == 0) prov_input(p, o->tokenizer, sha);
    }
    prov_upstream(p, attn_provenance(r));
    prov_opt_int(p, "min_query", o->min_query);
    prov_opt_dbl(p, "tau_r", o->tau_r);
    prov_opt_dbl(p, "tau_z", o->tau_z);
    prov_opt_str(p, "tokenizer", o->tokenizer ? o->tokenizer : "");
    prov_opt_int_list(p, "special_ids", tc->special, tc->nspecial);
    prov_opt_dbl(p, "zero_delta", o->zero_delta);
    prov_opt_dbl(p, "min_seq_share", o->min_seq_share);
    prov_opt_dbl(p, "central_share", o->central_share);
    prov_opt_dbl(p, "central_neff", o->central_neff);
    prov_opt_dbl(p, "bidir_share", o->bidir_share);
    prov_opt_dbl(p, "min_sink_heads", o->min_sink_heads);
    prov_opt_int(p, "model_layers_from", o->model_layer_from);
    prov_opt_int(p, "paper_stats", o->paper);
    if (o->paper) {
        prov_opt_dbl_list(p, "paper_tau", o->paper_tau, o->npaper_tau);
        prov_opt_dbl(p, "paper_ref_mass", o->paper_ref_mass);
        prov_opt_dbl(p, "paper_ref_top", o->paper_ref_top);
        prov_opt_dbl(p, "paper_ref_cap", o->paper_ref_cap);
        prov_opt_dbl(p, "paper_percentile", o->paper_pct);
        prov_opt_dbl(p, "paper_density_lo", o->dens_lo);
        prov_opt_dbl(p, "paper_density_hi", o->dens_hi);
    }
    char *js = prov_json(p);
    prov_free(p);
    return js;
}

static void tsv_head(strbuf *sb, const char *pj, const char *model) {
    sb_printf(sb, "# provenance: %s\n# model: %s\n", pj, model);
}

static void write_heads(const fr_opts *o, const frames_acc *F, const head_res *hr,
                        const paper_res *pr, const char *pj, const char *model) {
    strbuf sb = {0};
    tsv_head(&sb, pj, model);
    sb_printf(&sb, "layer\thead\tlabel\tseq_share\tn_ref\tp1\tn_eff");
    for (int c = 0; c < NCLASS; c++) sb_printf(&sb, "\t%s", CLASS_NAME[c]);
    if (pr) {
        sb_printf(&sb, "\tpaper_ref_tokens\tpaper_ref_positions\tpaper_pct_sinks");
        for (int t = 0; t < o->npaper_tau; t++)
            sb_printf(&sb, "\tdensity_%g\tcentralisation_%g\tstar_%g\tfiedler_%g", o->paper_tau[t],
                      o->paper_tau[t], o->paper_tau[t], o->paper_tau[t]);
    }
    sb_printf(&sb, "\n");
    for (int a = 0; a < F->N; a++) {
        const head_res *h = &hr[a];
        sb_printf(&sb, "%d\t%d\t%s\t%.12g\t%.12g\t%.12g\t%.12g", F->layer_id[a / F->H], F->head_id[a % F->H],
                  LABEL_NAME[h->label], h->seq_share, h->n_ref, h->p1, h->n_eff);
        for (int c = 0; c < NCLASS; c++) sb_printf(&sb, "\t%.12g", h->share[c]);
        if (pr) {
            const paper_res *p = &pr[a];
            sb_printf(&sb, "\t%d\t%s\t%d", p->n_ref_tokens, p->ref_tokens, p->n_pct_sinks);
            for (int t = 0; t < o->npaper_tau; t++)
                sb_printf(&sb, "\t%.12g\t%.12g\t%.12g\t%.12g", p->density[t], p->central[t], p->star[t], p->fiedler[t]);
        }
        sb_printf(&sb, "\n");
    }
    cli_write_bytes(o->heads, sb.s, sb.len);
    sb_free(&sb);
}

static void write_layers(const fr_opts *o, const frames_acc *F, const head_res *hr, const char *pj,
                         const char *model, int have_delim) {
    strbuf sb = {0};
    tsv_head(&sb, pj, model);
    sb_printf(&sb, "layer\theads");
    for (int b = 0; b < NLABEL; b++) sb_printf(&sb, "\t%s", LABEL_NAME[b]);
    sb_printf(&sb, "\tsink_heads");
    for (int c = 0; c < NCLASS; c++) sb_printf(&sb, "\t%s", CLASS_NAME[c]);
    sb_printf(&sb, "\n");
    for (int l = 0; l < F->L; l++) {
        int count[NLABEL] = {0}, sink = 0;
        double share[NCLASS] = {0};
        for (int h = 0; h < F->H; h++) {
            const head_res *x = &hr[l * F->H + h];
            count[x->label]++;
            if (x->label == LB_NONE) continue;
            sink++;
            for (int c = 0; c < NCLASS; c++) share[c] += x->share[c];
        }
        sb_printf(&sb, "%d\t%d", F->layer_id[l], F->H);
        for (int b = 0; b < NLABEL; b++) sb_printf(&sb, "\t%.12g", (double)count[b] / F->H);
        sb_printf(&sb, "\t%d", sink);
        for (int c = 0; c < NCLASS; c++)
            sb_printf(&sb, "\t%.12g", sink && (c != C_DELIM || have_delim) ? share[c] / sink : NAN);
        sb_printf(&sb, "\n");
    }
    cli_write_bytes(o->layers, sb.s, sb.len);
    sb_free(&sb);
}

/* The layer × key-position map of received mass and lift: per key the mean over the layer's
 * heads of the sequence-averaged r and z (heads without queries at that key left out). */
static void write_keys(const fr_opts *o, const frames_acc *F, const char *pj, const char *model) {
    strbuf sb = {0};
    tsv_head(&sb, pj, model);
    sb_printf(&sb, "layer\tkey\tr\tz\n");
    for (int l = 0; l < F->L; l++)
        for (int k = 0; k < F->T; k++) {
            double r = 0, z = 0;
            int n = 0;
            for (int h = 0; h < F->H; h++) {
                size_t i = (size_t)(l * F->H + h) * F->T + k;
                if (!F->rcnt[i]) continue;
                r += F->rsum[i] / F->rcnt[i];
                z += F->zsum[i] / F->rcnt[i];
                n++;
            }
            sb_printf(&sb, "%d\t%d\t%.12g\t%.12g\n", F->layer_id[l], k, n ? r / n : NAN, n ? z / n : NAN);
        }
    cli_write_bytes(o->keys, sb.s, sb.len);
    sb_free(&sb);
}

static void label_line(strbuf *sb, const model_res *mr, const char *model) {
    sb_printf(sb, "%s\t%s\t%.12g\t%s\t%.12g\t%d\t%d\t%.12g\t%d\n", model, LABEL_NAME[mr->label],
              mr->label_share, mr->runner >= 0 ? LABEL_NAME[mr->runner] : "-", mr->runner_share,
              mr->sink_heads, mr->heads, mr->heads ? (double)mr->sink_heads / mr->heads : NAN,
              mr->from_layer);
}
static const char LABEL_HEADER[] =
    "model\tlabel\tlabel_share\trunner_up\trunner_share\tsink_heads\theads\tsink_head_share\tfrom_layer\n";

static void write_h5(const fr_opts *o, const attn_meta *m, const frames_acc *F, const head_res *hr,
                     const model_res *mr, const char *pj) {
    char err[2048];
    h5io_id f = h5io_create(o->h5, err, sizeof err);
    if (f < 0) cli_check((int)f, err);
    size_t NT = (size_t)F->N * F->T;
    double *r = xmalloc(NT * sizeof *r), *u = xmalloc(NT * sizeof *u), *z = xmalloc(NT * sizeof *z);
    for (size_t i = 0; i < NT; i++) {
        int n = F->rcnt[i];
        r[i] = n ? F->rsum[i] / n : NAN;
        u[i] = n ? F->usum[i] / n : NAN;
        z[i] = n ? F->zsum[i] / n : NAN;
    }
    h5io_size d3[3] = {F->L, F->H, F->T}, d2[2] = {F->L, F->H}, dc[3] = {F->L, F->H, NCLASS};
    h5io_write_f64(f, "r", 3, d3, r);
    h5io_write_f64(f, "u", 3, d3, u);
    h5io_write_f64(f, "z", 3, d3, z);
    h5io_write_i32(f, "sequences_averaged", 3, d3, F->rcnt);
    int *lab = xmalloc(F->N * sizeof *lab);
    double *q[4], *cs = xmalloc((size_t)F->N * NCLASS * sizeof *cs);
    for (int k = 0; k < 4; k++) q[k] = xmalloc(F->N * sizeof(double));
    for (int a = 0; a < F->N; a++) {
        lab[a] = hr[a].label;
        q[0][a] = hr[a].seq_share; q[1][a] = hr[a].n_ref; q[2][a] = hr[a].p1; q[3][a] = hr[a].n_eff;
        for (int c = 0; c < NCLASS; c++) cs[(size_t)a * NCLASS + c] = hr[a].share[c];
    }
    h5io_write_i32(f, "head/label", 2, d2, lab);
    static const char *QN[4] = {"head/seq_share", "head/n_ref", "head/p1", "head/n_eff"};
    for (int k = 0; k < 4; k++) h5io_write_f64(f, QN[k], 2, d2, q[k]);
    h5io_write_f64(f, "head/class_share", 3, dc, cs);
    h5io_size dl[1] = {F->L}, dh[1] = {F->H};
    h5io_write_i32(f, "layer_index", 1, dl, F->layer_id);
    h5io_write_i32(f, "head_index", 1, dh, F->head_id);
    attn_write_shape_attrs(f, "attncoda-frames", m);
    h5io_attr_str(f, "/", "labels", "none,centralized,distributed,bidirectional");
    h5io_attr_str(f, "/", "classes", "first,last,special,delimiter,content");
    h5io_attr_str(f, "/", "model_label", LABEL_NAME[mr->label]);
    h5io_attr_str(f, "/", "model", m->model);
    h5io_attr_str(f, "/", "provenance", pj);
    cli_check(h5io_finish(f, o->h5, err, sizeof err), err);
    free(r); free(u); free(z); free(lab); free(cs);
    for (int k = 0; k < 4; k++) free(q[k]);
}

int main(int argc, char **argv) {
    char err[2048];
    cli_init(argv[0]);
    fr_opts o;
    parse_args(argc, argv, &o);
    const char *outs[] = {o.h5, o.heads, o.layers, o.keys, o.label};
    for (size_t i = 0; i < sizeof outs / sizeof *outs; i++) cli_out_plan(outs[i]);
    if (o.threads) omp_set_num_threads(o.threads);
    attn_reader *rd = attn_open(o.in, err, sizeof err);
    if (!rd) die_data(NULL, "%s", err);
    const attn_meta *m = attn_meta_get(rd);
    if (o.min_query >= m->T && o.min_query_given) die_usage("--min-query %d is not below T = %d", o.min_query, m->T);
    if (o.min_query >= m->T)   /* the default: the file is too short, no option is wrong */
        die_data(attn_path(rd), "T = %d tokens: no query reaches the default --min-query %d (frames needs T > %d)",
                 m->T, o.min_query, o.min_query);
    /* the graph statistics need the whole T×T mean attention matrix, every row of it */
    if (o.paper && attn_is_sampled(rd))
        die_data(attn_path(rd), "--paper-stats needs every query row; this file stores %d sampled rows per sequence", m->Q);
    token_classes tc = load_classes(&o, m);
    int32_t *ids = xmalloc((size_t)m->S * m->T * sizeof *ids);
    uint8_t *valid = xmalloc((size_t)m->S * m->T);
    if (attn_read_tokens(rd, ids, err, sizeof err)) die_data(NULL, "%s", err);
    attn_read_valid(rd, valid);
    check_ids(attn_path(rd), &tc, m, ids);
    frames_acc F = {.L = m->L, .H = m->H, .T = m->T, .N = m->L * m->H};
    size_t NT = (size_t)F.N * F.T;
    original_ids(rd, &F);
    F.acc = xcalloc(F.N, sizeof *F.acc);
    F.rsum = xcalloc(NT, sizeof(double));
    F.usum = xcalloc(NT, sizeof(double));
    F.zsum = xcalloc(NT, sizeof(double));
    F.rcnt = xcalloc(NT, sizeof(int));
    if (o.paper) F.abar = xcalloc(NT * F.T, sizeof(double));
    accumulate(&o, rd, &F, &tc, ids, valid);

    head_res *hr = xmalloc(F.N * sizeof *hr);
    for (int a = 0; a < F.N; a++) hr[a] = head_label(&o, &F.acc[a], m->S, m->causal, tc.delim != NULL);
    paper_res *pr = NULL;
    if (o.paper) {
        int *node = xmalloc(F.T * sizeof *node), n = 0;
        for (int k = 0; k < F.T; k++) {
            int any = 0;
            for (int s = 0; s < m->S && !any; s++) any = valid[(size_t)s * F.T + k] != 0;
            if (any) node[n++] = k;
        }
        if (n < 2) die_data(attn_path(rd), "fewer than 2 valid positions: no graph for --paper-stats");
        pr = xmalloc(F.N * sizeof *pr);
        for (size_t i = 0; i < NT * F.T; i++) F.abar[i] /= m->S;
        #pragma omp parallel for schedule(dynamic)
        for (int a = 0; a < F.N; a++) pr[a] = paper_stats(&o, F.abar + (size_t)a * F.T * F.T, F.T, node, n);
        free(node);
    }
    model_res mr = model_label(&o, &F, hr);
    char *pj = provenance(&o, rd, &tc);
    if (o.heads) write_heads(&o, &F, hr, pr, pj, m->model);
    if (o.layers) write_layers(&o, &F, hr, pj, m->model, tc.delim != NULL);
    strbuf line = {0};
    label_line(&line, &mr, m->model);
    if (o.label) {
        strbuf sb = {0};
        tsv_head(&sb, pj, m->model);
        sb_printf(&sb, "%s%s", LABEL_HEADER, line.s);
        cli_write_bytes(o.label, sb.s, sb.len);
        sb_free(&sb);
    }
    if (o.h5) write_h5(&o, m, &F, hr, &mr, pj);
    if (o.keys) write_keys(&o, &F, pj, m->model);
    if (!cli_is_stdio(o.heads) && !cli_is_stdio(o.layers) && !cli_is_stdio(o.label) && !cli_is_stdio(o.keys) &&
        !cli_is_stdio(o.h5))
        fputs(line.s, stdout);
    sb_free(&line);
    attn_close(rd);
    free(ids); free(valid); free(tc.delim); free(F.layer_id); free(F.head_id); free(F.acc);
    free(F.rsum); free(F.usum); free(F.zsum); free(F.rcnt); free(F.abar); free(hr); free(pj);
    if (pr)
        for (int a = 0; a < F.N; a++) free(pr[a].ref_tokens);
    free(pr);
    return 0;
}

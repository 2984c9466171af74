/* synth: synthetic attention files with planted per-head sink masses and Dirichlet content, and
 * the Theorem-1 triple of METHODS §5.2. Content and sink draws use separate seeded streams, so
 * files that differ only in --sink-mass share their content compositions exactly. */
#include "attn/attnio.h"
#include "cli/cli.h"
#include "io/h5io.h"

#include <getopt.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int S, L, H, T, causal, sink, prob, theorem1, pad;
    double alpha, jitter, sA, sB;
    double *sink_mass;   /* per head (cycled) */
    int n_sink_mass;
    unsigned long seed;
} synth_opts;

static void usage(void) {
    printf("Usage: %s [options] OUTPUT|-\n"
           "Write a synthetic attention file (log-probabilities unless --prob).\n\n"
           "  -S, --sequences N     sequences (4)\n"
           "  -L, --layers N        layers (2)\n"
           "  -H, --heads N         heads per layer (4)\n"
           "  -T, --tokens N        tokens per sequence (32)\n"
           "      --bidirectional   every row has all T keys (default: causal, row t has t+1)\n"
           "      --pad N           bidirectional only: mark the last N tokens as padding (0)\n"
           "      --sink K          sink key index (0)\n"
           "      --sink-mass LIST  planted mean sink mass per head, comma-separated, cycled over\n"
           "                        the L*H heads (default: evenly spaced 0.05..0.95)\n"
           "      --sink-jitter X   per-row N(0,X) noise on the logit of the sink mass (0.5)\n"
           "      --alpha A         Dirichlet concentration of the content (1.0)\n"
           "      --seed N          seed of both random streams (1)\n"
           "      --prob            store probabilities instead of log-probabilities\n"
           "      --theorem1        write the Theorem-1 triple: 1 layer, heads A, B, C; A and B\n"
           "                        share content, C has A's sink mass and reversed content\n"
           "      --sA X, --sB X    Theorem-1 sink masses of A (and C) and B (0.9, 0.3)\n"
           "      --progress        progress bar on stderr; --no-progress: none (default: when\n"
           "                        stderr is a terminal)\n"
           "  -h, --help, -V, --version\n\n"
           "Memory: one (sequence, layer) block, 4*H*T*T bytes, plus the output image when writing\n"
           "to stdout.\n", cli_prog());
}

static void parse_list(synth_opts *o, const char *s) {
    char *dup = xstrdup(s), *save = NULL;
    o->n_sink_mass = 0;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        o->sink_mass = xrealloc(o->sink_mass, (o->n_sink_mass + 1) * sizeof(double));
        o->sink_mass[o->n_sink_mass++] = cli_parse_double("sink-mass", tok, 1e-12, 1 - 1e-12);
    }
    free(dup);
    if (!o->n_sink_mass) die_usage("--sink-mass: empty list");
}

static const char *parse_args(int argc, char **argv, synth_opts *o) {
    enum { O_BIDI = 256, O_SINK, O_SM, O_JIT, O_ALPHA, O_SEED, O_PROB, O_T1, O_SA, O_SB, O_PAD };
    static const struct option lo[] = {
        {"sequences", 1, 0, 'S'}, {"layers", 1, 0, 'L'}, {"heads", 1, 0, 'H'}, {"tokens", 1, 0, 'T'},
        {"bidirectional", 0, 0, O_BIDI}, {"sink", 1, 0, O_SINK}, {"sink-mass", 1, 0, O_SM},
        {"sink-jitter", 1, 0, O_JIT}, {"alpha", 1, 0, O_ALPHA}, {"seed", 1, 0, O_SEED},
        {"prob", 0, 0, O_PROB}, {"theorem1", 0, 0, O_T1}, {"sA", 1, 0, O_SA}, {"sB", 1, 0, O_SB},
        {"pad", 1, 0, O_PAD}, {"help", 0, 0, 'h'}, {"version", 0, 0, 'V'}, CLI_PROGRESS_OPTIONS, {0, 0, 0, 0}};
    *o = (synth_opts){.S = 4, .L = 2, .H = 4, .T = 32, .causal = 1, .alpha = 1.0, .jitter = 0.5,
                      .sA = 0.9, .sB = 0.3, .seed = 1};
    int c;
    while ((c = getopt_long(argc, argv, "S:L:H:T:hV", lo, NULL)) != -1) {
        switch (c) {
        case 'S': o->S = cli_parse_long("sequences", optarg, 1, 1 << 20); break;
        case 'L': o->L = cli_parse_long("layers", optarg, 1, 1024); break;
        case 'H': o->H = cli_parse_long("heads", optarg, 1, 1024); break;
        case 'T': o->T = cli_parse_long("tokens", optarg, 1, 65536); break;
        case O_BIDI: o->causal = 0; break;
        case O_PAD: o->pad = cli_parse_long("pad", optarg, 0, 65536); break;
        case O_SINK: o->sink = cli_parse_long("sink", optarg, 0, 65535); break;
        case O_SM: parse_list(o, optarg); break;
        case O_JIT: o->jitter = cli_parse_double("sink-jitter", optarg, 0, 100); break;
        case O_ALPHA: o->alpha = cli_parse_double("alpha", optarg, 1e-3, 1e6); break;
        case O_SEED: o->seed = cli_parse_u64("seed", optarg); break;
        case O_PROB: o->prob = 1; break;
        case O_T1: o->theorem1 = 1; break;
        case O_SA: o->sA = cli_parse_double("sA", optarg, 1e-12, 1 - 1e-12); break;
        case O_SB: o->sB = cli_parse_double("sB", optarg, 1e-12, 1 - 1e-12); break;
        case CLI_OPT_PROGRESS: case CLI_OPT_NO_PROGRESS: cli_progress_option(c); break;
        case 'h': usage(); exit(0);
        case 'V': cli_print_version(); exit(0);
        default: cli_bad_option(argv, lo, "S:L:H:T:hV");
        }
    }
    cli_operands(argc, argv, 1, 1, "one OUTPUT");
    if (o->theorem1) { o->L = 1; o->H = 3; }
    if (o->sink >= o->T) die_usage("--sink %d must be below --tokens %d", o->sink, o->T);
    if (o->pad && o->causal) die_usage("--pad needs --bidirectional");
    if (o->pad > o->T - 3) die_usage("--pad leaves fewer than 3 valid tokens");
    if (o->pad && o->sink >= o->T - o->pad) die_usage("--sink falls in the padding");
    return argv[optind];
}

/* ln of a Gamma(alpha) variate, exact in logs for small alpha: G(a) = G(a+1)·U^(1/a). */
static double log_gamma_variate(gsl_rng *r, double a) {
    if (a >= 1) return log(gsl_ran_gamma(r, a, 1.0));
    return log(gsl_ran_gamma(r, a + 1, 1.0)) + log(gsl_rng_uniform_pos(r)) / a;
}

/* Closed log-Dirichlet content of n parts into out. */
static void log_dirichlet(gsl_rng *r, double a, int n, double *out) {
    double m = -INFINITY;
    for (int i = 0; i < n; i++) { out[i] = log_gamma_variate(r, a); if (out[i] > m) m = out[i]; }
    double s = 0;
    for (int i = 0; i < n; i++) s += exp(out[i] - m);
    double z = m + log(s);
    for (int i = 0; i < n; i++) out[i] -= z;
}

static double planted_mass(const synth_opts *o, int head) {
    int N = o->L * o->H;
    if (o->n_sink_mass) return o->sink_mass[head % o->n_sink_mass];
    return N == 1 ? 0.5 : 0.05 + 0.9 * head / (N - 1.0);
}

/* One row: the sink (if in the row) takes ln s, the content ln(1−s) + ln π. */
static void fill_row(float *row, const synth_opts *o, int t, const uint8_t *valid, double ls,
                     double l1s, const double *lpi, int reverse) {
    int D = 0, has_sink = 0;
    for (int j = 0; j < o->T; j++) {
        int in = o->causal ? j <= t : valid[j];
        if (in) { D++; if (j == o->sink) has_sink = 1; }
    }
    int nc = has_sink ? D - 1 : D, c = 0;
    for (int j = 0; j < o->T; j++) {
        int in = o->causal ? j <= t : valid[j];
        double v;
        if (!in) v = -INFINITY;
        else if (D == 1) v = 0;
        else if (has_sink && j == o->sink) v = ls;
        else { v = (has_sink ? l1s : 0) + lpi[reverse ? nc - 1 - c : c]; c++; }
        row[j] = o->prob ? (float)exp(v) : (float)v;
    }
}

/* Theorem-1 rows: per query, one content draw shared by A and B (C mirrors it). */
static void theorem1_block(const synth_opts *o, gsl_rng *rc, const uint8_t *valid, float *buf, double *lpi) {
    int T = o->T;
    for (int t = 0; t < T; t++) {
        int D = o->causal ? t + 1 : T - o->pad;
        int nc = (o->causal && t < o->sink) ? D : D - 1;
        log_dirichlet(rc, o->alpha, nc > 0 ? nc : 1, lpi);
        for (int h = 0; h < 3; h++) {
            double s = h == 1 ? o->sB : o->sA;
            fill_row(buf + ((size_t)h * T + t) * T, o, t, valid, log(s), log1p(-s), lpi, h == 2);
        }
    }
}

static void synth_block(const synth_opts *o, gsl_rng *rc, gsl_rng *rs, int l, const uint8_t *valid,
                        float *buf, double *lpi) {
    if (o->theorem1) { theorem1_block(o, rc, valid, buf, lpi); return; }
    int T = o->T;
    for (int h = 0; h < o->H; h++) {
        for (int t = 0; t < T; t++) {
            int D = o->causal ? t + 1 : T - o->pad;
            int nc = (o->causal && t < o->sink) ? D : D - 1;
            float *row = buf + ((size_t)h * T + t) * T;
            log_dirichlet(rc, o->alpha, nc > 0 ? nc : 1, lpi);
            double s0 = planted_mass(o, l * o->H + h);
            double logit = log(s0) - log1p(-s0) + o->jitter * gsl_ran_gaussian(rs, 1.0);
            double ls = -log1p(exp(-logit)), l1s = -log1p(exp(logit));
            fill_row(row, o, t, valid, ls, l1s, lpi, 0);
        }
    }
}

static char *provenance(const synth_opts *o) {
    prov *p = prov_new();
    prov_opt_int(p, "sequences", o->S);
    prov_opt_int(p, "layers", o->L);
    prov_opt_int(p, "heads", o->H);
    prov_opt_int(p, "tokens", o->T);
    prov_opt_str(p, "mode", o->causal ? "causal" : "bidirectional");
    prov_opt_int(p, "pad", o->pad);
    prov_opt_int(p, "sink", o->sink);
    strbuf sb = {0};
    for (int i = 0; i < o->L * o->H; i++) sb_printf(&sb, "%s%.17g", i ? "," : "", planted_mass(o, i));
    prov_opt_str(p, "sink_mass", o->theorem1 ? "theorem1" : sb.s);
    sb_free(&sb);
    prov_opt_dbl(p, "sink_jitter", o->jitter);
    prov_opt_dbl(p, "alpha", o->alpha);
    prov_opt_int(p, "seed", (long long)o->seed);
    prov_opt_str(p, "values", o->prob ? "prob" : "logprob");
    prov_opt_int(p, "theorem1", o->theorem1);
    prov_opt_dbl(p, "sA", o->sA);
    prov_opt_dbl(p, "sB", o->sB);
    char *js = prov_json(p);
    prov_free(p);
    return js;
}

int main(int argc, char **argv) {
    char err[2048];
    cli_init(argv[0]);
    synth_opts o;
    const char *out = parse_args(argc, argv, &o);
    attn_meta m = {.S = o.S, .L = o.L, .H = o.H, .T = o.T, .causal = o.causal, .sink = o.sink,
                   .logprob = !o.prob, .seed = (long long)o.seed};
    snprintf(m.model, sizeof m.model, "%s", o.theorem1 ? "synth-theorem1" : "synth");
    snprintf(m.family, sizeof m.family, "synth");
    snprintf(m.text, sizeof m.text, "synthetic (seed %lu)", o.seed);
    char *prov_js = provenance(&o);
    attn_writer *w;
    cli_check(attn_create(&w, out, &m, prov_js, err, sizeof err), err);
    gsl_rng *rc = gsl_rng_alloc(gsl_rng_mt19937), *rs = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rc, o.seed);
    gsl_rng_set(rs, o.seed ^ 0x5eed5eedUL);
    float *buf = xmalloc((size_t)o.H * o.T * o.T * sizeof *buf);
    double *lpi = xmalloc((size_t)o.T * sizeof *lpi);
    uint8_t *valid = xmalloc((size_t)o.S * o.T);
    int32_t *tokens = xmalloc((size_t)o.S * o.T * sizeof *tokens);
    for (int s = 0; s < o.S; s++)
        for (int t = 0; t < o.T; t++) {
            valid[(size_t)s * o.T + t] = t < o.T - o.pad;
            tokens[(size_t)s * o.T + t] = t;
        }
    progress pg;
    progress_begin(&pg, "synth", "blocks", (double)o.S * o.L);
    for (int s = 0; s < o.S; s++)
        for (int l = 0; l < o.L; l++) {
            synth_block(&o, rc, rs, l, valid + (size_t)s * o.T, buf, lpi);
            attn_write_block(w, s, l, buf);
            progress_update(&pg, (double)s * o.L + l + 1);
        }
    progress_end(&pg);
    attn_write_tokens(w, tokens);
    if (o.pad) attn_write_valid(w, valid);
    h5io_label_attention(attn_writer_file(w));
    cli_check(attn_finish(w, err, sizeof err), err);
    gsl_rng_free(rc);
    gsl_rng_free(rs);
    free(buf); free(lpi); free(valid); free(tokens); free(prov_js); free(o.sink_mass);
    return 0;
}

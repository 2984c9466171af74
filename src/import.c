/* import: a standard attention file (docs/FORMAT.md) from attention maps saved by other tools,
 * for example Hugging Face output_attentions=True written with numpy, safetensors or h5py.
 * Every row is validated, closed in double precision, zero-replaced (METHODS §1) and stored as
 * natural-log probabilities, so every filter reads the result like extract's output. */
#include "io/arrayin.h"
#include "attn/attnio.h"
#include "cli/cli.h"
#include "io/h5io.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CLOSED_TOL 1e-6   /* |log Σp| up to which a row counts as closed (float32 rounding) */

static void usage(void) {
    printf("Usage: %s [options] INPUT... OUTPUT|-\n"
           "Write an attention file from attention maps saved by other tools.\n\n"
           "INPUT is one of\n"
           "  FILE.npy                  one array\n"
           "  FILE.npz[:NAME]           every array of the archive in natural name order\n"
           "                            (layer_2 before layer_10), or the one named\n"
           "  FILE.safetensors[:NAME]   every tensor in natural name order, or the one named\n"
           "  FILE.h5:/PATH             one HDF5 dataset\n"
           "  -                         any of these on stdin (with :NAME or :/PATH after it)\n"
           "Shapes: one array [S,L,H,T,T] or [L,H,T,T] (one sequence), or a list of per-layer\n"
           "arrays [S,H,T,T] or [H,T,T] in layer order (Hugging Face's output_attentions tuple).\n"
           "dtypes: float16, bfloat16 (safetensors, HDF5), float32, float64.\n\n"
           "      --log              the arrays hold natural-log probabilities (default:\n"
           "                         probabilities)\n"
           "      --causal           row t has keys 0..t; any mass above the diagonal is an error\n"
           "      --bidirectional    every valid key is in every row\n"
           "                         (default: causal when every entry above the diagonal is 0,\n"
           "                         i.e. -inf with --log; the choice is recorded)\n"
           "      --tokens FILE      token ids, one line of T integers per sequence\n"
           "      --valid FILE       1 (real token) / 0 (padding), one line of T per sequence;\n"
           "                         causal files need right padding\n"
           "      --sink K           sink key index (0)\n"
           "      --zero-delta X     zero replacement for probability input (1e-9)\n"
           "      --model-name NAME  the file's 'model' attribute (default: the first input)\n"
           "      --family NAME      the file's 'family' attribute (imported)\n"
           "      --text TEXT        the file's 'text' attribute (what the inputs were)\n"
           "      --layout L         what each array holds: SLHTT (one array), LHTT (one array,\n"
           "                         one sequence), SHTT or HTT (one array per layer); default by\n"
           "                         rank: 5 SLHTT, 4 LHTT, 3 HTT, several arrays SHTT/HTT. The\n"
           "                         layout read is printed on stderr\n"
           "      --per-layer        the same as --layout SHTT\n"
           "      --progress         progress bar on stderr; --no-progress: none (default: when\n"
           "                         stderr is a terminal)\n"
           "      --query-pos FILE   the arrays hold sampled query rows, [...,Q,T] in place of\n"
           "                         [...,T,T]: FILE gives each sequence's Q query positions, one\n"
           "                         line per sequence, strictly increasing in [0, T); written\n"
           "                         as the file's query_pos (docs/IMPORT.md)\n"
           "  -h, --help, -V, --version\n\n"
           "Validation: NaN or Inf, a negative probability (log above 0), a row of valid keys\n"
           "whose sum differs from 1 (logsumexp from 0) by more than 1e-3 (1e-2 for float16 and\n"
           "bfloat16 input), mass above the diagonal of a causal file, or a shape that does not\n"
           "fit: one line naming the file, array and first bad (sequence, layer, head, query),\n"
           "exit 1, no output. Rows whose |log sum| exceeds 1e-6 are closed in double precision\n"
           "(closer ones are kept as given, so float32 log input round-trips exactly); zeros\n"
           "become X and the other parts shrink by 1 - zX (METHODS §1); the count is the\n"
           "'zero_replaced' attribute. Output values are log-probabilities.\n\n"
           "Memory: one (sequence, layer) block, 20*H*T*T bytes (H*T*T at most 2^28), for\n"
           "every input kind except Fortran-ordered .npz members (read whole, at most 2 GiB).\n"
           "Sizes a file declares are checked against what it holds before anything is\n"
           "allocated: .npz members against the archive (deflate: at most 1032x), HDF5 datasets\n"
           "against the chunks and bytes stored (no external storage, every filter available).\n"
           "Without --causal/--bidirectional the inputs are read twice. stdin is copied to a\n"
           "temporary file first. docs/IMPORT.md has the details.\n", cli_prog());
}

/* What each input array holds; AUTO picks by rank and count (find_layout). */
typedef enum { LAYOUT_AUTO, LAYOUT_SLHTT, LAYOUT_LHTT, LAYOUT_SHTT, LAYOUT_HTT } layout_code;
static const char *const layout_names[] = {"auto", "SLHTT", "LHTT", "SHTT", "HTT"};

typedef struct {
    int log, causal, sink;                  /* causal: -1 infer, 0, 1 */
    layout_code layout;
    double zero_delta;
    const char *tokens, *valid, *model, *family, *text, *out, *query_pos;
    char **inputs;
    int ninputs;
} imp_opts;

/* "-:NAME" and "-:/PATH" are stdin with a member (docs/IMPORT.md), but getopt would take them for
 * bundled short options. Until it is done, such an argument points past its '-' (":NAME" is no
 * option, and getopt only permutes the pointers), and every pointer is put back afterwards. */
static char **hidden;
static int nhidden;
static void hide_stdin_specs(int argc, char **argv) {
    hidden = xcalloc((size_t)argc + 1, sizeof *hidden);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (argv[i][0] == '-' && argv[i][1] == ':') hidden[nhidden++] = ++argv[i];
    }
}
static const char *unhide(const char *p) {
    for (int k = 0; k < nhidden; k++)
        if (p == hidden[k]) return p - 1;
    return p;
}
/* argv, and option values that were such an argument (--text -:x) */
static void unhide_stdin_specs(int argc, char **argv, const char **values[], int nvalues) {
    for (int i = 1; i < argc; i++) argv[i] = (char *)unhide(argv[i]);
    for (int i = 0; i < nvalues; i++)
        if (*values[i]) *values[i] = unhide(*values[i]);
    free(hidden);
}

/* --layout NAME, or --per-layer (name NULL: SHTT) */
static void set_layout(imp_opts *o, const char *name) {
    layout_code want = name ? LAYOUT_AUTO : LAYOUT_SHTT;
    for (int i = LAYOUT_SLHTT; name && i <= LAYOUT_HTT; i++)
        if (!strcmp(name, layout_names[i])) want = (layout_code)i;
    if (want == LAYOUT_AUTO) die_usage("--layout '%s': expected SLHTT, LHTT, SHTT or HTT", name);
    if (o->layout != LAYOUT_AUTO && o->layout != want)
        die_usage("%s%s conflicts with the layout given before (%s)", name ? "--layout " : "--per-layer",
                  name ? name : "", layout_names[o->layout]);
    o->layout = want;
}

static void parse_args(int argc, char **argv, imp_opts *o) {
    static const struct option lo[] = {
        {"log", 0, 0, 'l'}, {"causal", 0, 0, 'c'}, {"bidirectional", 0, 0, 'b'}, {"tokens", 1, 0, 't'},
        {"valid", 1, 0, 'v'}, {"sink", 1, 0, 's'}, {"zero-delta", 1, 0, 'z'}, {"model-name", 1, 0, 'm'},
        {"family", 1, 0, 'f'}, {"text", 1, 0, 'x'}, {"per-layer", 0, 0, 'p'}, {"layout", 1, 0, 'L'},
        {"query-pos", 1, 0, 'q'}, {"help", 0, 0, 'h'}, {"version", 0, 0, 'V'}, CLI_PROGRESS_OPTIONS, {0, 0, 0, 0}};
    *o = (imp_opts){.causal = -1, .zero_delta = 1e-9, .family = "imported", .text = "imported attention"};
    int c;
    hide_stdin_specs(argc, argv);
    while ((c = getopt_long(argc, argv, "hV", lo, NULL)) != -1) {
        switch (c) {
        case 'l': o->log = 1; break;
        case 'c': case 'b':
            if (o->causal >= 0 && o->causal != (c == 'c')) die_usage("--causal and --bidirectional exclude each other");
            o->causal = c == 'c';
            break;
        case 't': o->tokens = optarg; break;
        case 'v': o->valid = optarg; break;
        case 's': o->sink = (int)cli_parse_long("sink", optarg, 0, 1 << 20); break;
        case 'z': o->zero_delta = cli_parse_double("zero-delta", optarg, 1e-300, 1e-2); break;
        case 'm': o->model = optarg; break;
        case 'f': o->family = optarg; break;
        case 'x': o->text = optarg; break;
        case 'p': set_layout(o, NULL); break;
        case 'L': set_layout(o, optarg); break;
        case CLI_OPT_PROGRESS: case CLI_OPT_NO_PROGRESS: cli_progress_option(c); break;
        case 'q': o->query_pos = optarg; break;
        case 'h': usage(); exit(0);
        case 'V': cli_print_version(); exit(0);
        default: cli_bad_option(argv, lo, "hV");
        }
    }
    const char **values[] = {&o->tokens, &o->valid, &o->model, &o->family, &o->text};
    unhide_stdin_specs(argc, argv, values, (int)(sizeof values / sizeof values[0]));
    cli_operands(argc, argv, 2, -1, "INPUT... and OUTPUT");
    o->inputs = argv + optind;
    o->ninputs = argc - optind - 1;
    o->out = argv[argc - 1];
    if (!o->model) o->model = o->inputs[0];
}

/* ---- layout: which array and leading index hold block (s, l) ---- */
typedef struct { int S, L, H, T, Q, stacked, rank, given; layout_code code; ai_set *set; } layout;   /* Q: stored query rows */

static void shape_str(const ai_array *a, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ai_rank(a) && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)ai_shape(a)[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

static _Noreturn void bad_shape(const ai_array *a, const char *why) {
    char sh[256];
    shape_str(a, sh, sizeof sh);
    die_data(ai_file(a), "array '%s': shape %s does not fit: %s", ai_name(a), sh, why);
}

static int dim_in(const ai_array *a, int i, long long hi, const char *what) {
    long long v = ai_shape(a)[i];
    if (v < 1 || v > hi) {
        char why[128];
        snprintf(why, sizeof why, "%s = %lld is outside 1..%lld", what, v, hi);
        bad_shape(a, why);
    }
    return (int)v;
}

/* sampled (--query-pos): the query axis holds Q ≤ T stored rows, the key axis is T. */
static void set_dims(layout *g, const ai_array *a, int with_s, int with_l, int sampled) {
    int r = ai_rank(a), i = 0;
    g->S = with_s ? dim_in(a, i++, 1 << 30, "sequences") : 1;
    if (with_l) g->L = dim_in(a, i++, 4096, "layers");
    g->H = dim_in(a, i++, 4096, "heads");
    g->Q = g->T = dim_in(a, i, 1 << 20, "queries");
    if (sampled) g->T = dim_in(a, i + 1, 1 << 20, "keys");
    if (sampled && g->Q > g->T) bad_shape(a, "more stored query rows than keys");
    if (!sampled && ai_shape(a)[r - 1] != ai_shape(a)[r - 2]) bad_shape(a, "the last two dimensions (query, key) differ");
    if ((double)g->H * g->Q * g->T > 1 << 28) bad_shape(a, "one (sequence, layer) block exceeds 2^28 entries");
}

static const char *layout_desc(layout_code c) {
    static const char *const d[] = {"", "[S,L,H,T,T]", "[L,H,T,T]", "per-layer [S,H,T,T]", "per-layer [H,T,T]"};
    return d[c];
}

/* The layout by --layout, else by rank and count: one array of rank 5 is SLHTT, of rank 4 LHTT
 * (the ambiguous case: SHTT is one layer of S sequences), a list or rank 3 one array per layer. */
static layout find_layout(ai_set *set, layout_code want, int sampled) {
    layout g = {.set = set, .given = want != LAYOUT_AUTO};
    int n = ai_count(set);
    ai_array *a0 = ai_at(set, 0);
    g.rank = ai_rank(a0);
    if (want == LAYOUT_AUTO)
        want = n == 1 && g.rank == 5 ? LAYOUT_SLHTT : n == 1 && g.rank == 4 ? LAYOUT_LHTT
                                     : g.rank == 4 ? LAYOUT_SHTT : LAYOUT_HTT;
    g.code = want;
    g.stacked = want == LAYOUT_SLHTT || want == LAYOUT_LHTT;
    if (g.stacked && n != 1) die_usage("--layout %s reads one array; %d were given", layout_names[want], n);
    if (g.rank != (int)strlen(layout_names[want])) {
        char why[64];
        snprintf(why, sizeof why, "--layout %s needs rank %d", layout_names[want], (int)strlen(layout_names[want]));
        bad_shape(a0, g.given ? why : n == 1 ? "expected [S,L,H,T,T], [L,H,T,T], or per-layer [S,H,T,T] / [H,T,T]"
                                             : "a per-layer list needs [S,H,T,T] or [H,T,T] arrays");
    }
    if (g.stacked) {
        set_dims(&g, a0, g.rank == 5, 1, sampled);
        return g;
    }
    g.L = n;
    if (n > 4096) die_data(ai_file(a0), "%d arrays: more than 4096 layers", n);
    set_dims(&g, a0, g.rank == 4, 0, sampled);
    for (int l = 1; l < n; l++) {
        ai_array *a = ai_at(set, l);
        int same = ai_rank(a) == g.rank;
        for (int i = 0; same && i < g.rank; i++) same = ai_shape(a)[i] == ai_shape(a0)[i];
        if (!same) {
            char sh[256], why[400];
            shape_str(a0, sh, sizeof sh);
            snprintf(why, sizeof why, "layer %d differs from layer 0 ('%s', %s)", l, ai_name(a0), sh);
            bad_shape(a, why);
        }
    }
    return g;
}

static ai_array *block_array(const layout *g, int s, int l, int64_t *lead) {
    if (g->stacked) {
        if (g->rank == 5) lead[0] = s, lead[1] = l;
        else lead[0] = l;
        return ai_at(g->set, 0);
    }
    lead[0] = s;
    return ai_at(g->set, l);
}

/* ---- side files: one line of T integers per sequence ---- */
static int32_t *read_rows_file(const char *path, int S, int T, long lo, long hi, char sha[65]) {
    size_t len;
    char *buf = (char *)cli_slurp(path, &len);
    cli_sha256_hex(buf, len, sha);
    int32_t *v = xmalloc(sizeof *v * (size_t)S * T);
    int s = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        char *p = line;
        while (*p == ' ' || *p == '\t' || *p == '\r') p++;
        if (!*p || *p == '#') continue;
        if (s == S) die_data(path, "more than %d lines (one per sequence)", S);
        int t = 0;
        for (;;) {
            char *end;
            long x = strtol(p, &end, 10);
            if (end == p) break;
            if (x < lo || x > hi) die_data(path, "line %d: value %ld is outside [%ld, %ld]", s + 1, x, lo, hi);
            if (t == T) die_data(path, "line %d: more than T = %d values", s + 1, T);
            v[(size_t)s * T + t++] = (int32_t)x;
            p = end;
        }
        while (*p == ' ' || *p == '\t' || *p == '\r') p++;
        if (*p) die_data(path, "line %d: '%.20s' is not an integer", s + 1, p);
        if (t != T) die_data(path, "line %d: %d values, expected T = %d", s + 1, t, T);
        s++;
    }
    if (s != S) die_data(path, "%d lines, expected one per sequence (S = %d)", s, S);
    free(buf);
    return v;
}

/* ---- rows ---- */
typedef struct {
    const imp_opts *o;
    layout g;
    int causal;
    uint8_t *valid;           /* S*T, NULL: all valid */
    int32_t *qpos;            /* S*Q query positions of the stored rows (--query-pos), else NULL */
    long long zeros;
    float *out;               /* the block being written */
    double *row;              /* one gathered row */
    double *blk;              /* the block read */
    const char *hint;         /* what a refused row suggests (--log, a softmax), or "" */
} importer;

static double tolerance(const ai_array *a) {
    return ai_type(a) == AI_F16 || ai_type(a) == AI_BF16 ? 1e-2 : 1e-3;
}

static int key_in_row(const importer *im, const uint8_t *vs, int t, int j) {
    return im->causal ? j <= t : (vs ? vs[j] != 0 : 1);
}

/* METHODS §1 multiplicative zero replacement on a closed log row where -inf marks a zero:
 * zeros become log δ and every other part shrinks by (1 − zδ), so the row still sums to 1.
 * Returns z, or -1 when zδ ≥ 1. (The library's row path, attn_gather_row, replaces zeros of
 * probability files on read; this is the same rule applied once at import.) */
static int zero_replace_closed_log(double *l, int D, double delta) {
    int z = 0;
    for (int i = 0; i < D; i++) z += l[i] == -INFINITY;
    if (!z) return 0;
    if (z * delta >= 1) return -1;
    double shrink = log1p(-z * delta), ld = log(delta);
    for (int i = 0; i < D; i++) l[i] = l[i] == -INFINITY ? ld : l[i] + shrink;
    return z;
}

/* Whether the kept keys of row x close as log-probabilities: all at most 0 and their logsumexp 0
 * within tol (a hint for a row refused as probabilities). */
static int looks_like_log_row(const importer *im, const uint8_t *vs, int t, const double *x, double tol) {
    double mx = -INFINITY, acc = 0;
    for (int j = 0; j < im->g.T; j++)
        if (key_in_row(im, vs, t, j)) {
            if (!(x[j] <= tol)) return 0;
            if (x[j] > mx) mx = x[j];
        }
    if (mx == -INFINITY) return 0;
    for (int j = 0; j < im->g.T; j++)
        if (key_in_row(im, vs, t, j)) acc += exp(x[j] - mx);
    return fabs(mx + log(acc)) <= tol;
}

/* Validates row x (T values of one query) and writes the closed log row to out; returns NULL
 * or the reason the row is bad. */
static const char *convert_row(importer *im, const uint8_t *vs, int t, const double *x, double tol,
                               double *g, float *out, char *why, size_t whylen) {
    int D = 0, logv = im->o->log;
    double mx = -INFINITY;
    for (int j = 0; j < im->g.T; j++) {
        double v = x[j];
        if (isnan(v)) return snprintf(why, whylen, "NaN at key %d", j), why;
        if (!logv && v == -INFINITY) {
            im->hint = "; log-probabilities? use --log";
            return snprintf(why, whylen, "-Inf at key %d", j), why;
        }
        if (v == INFINITY) return snprintf(why, whylen, "Inf at key %d", j), why;
        if (!key_in_row(im, vs, t, j)) {
            if (im->causal && j > t && (logv ? v != -INFINITY : v != 0))
                return snprintf(why, whylen, "mass above the diagonal of a causal file (key %d)", j), why;
            continue;
        }
        if (!logv && v < 0) {
            im->hint = looks_like_log_row(im, vs, t, x, tol) ? "; log-probabilities? use --log"
                                                             : "; raw scores? apply a softmax first";
            return snprintf(why, whylen, "negative probability %g at key %d", v, j), why;
        }
        if (logv && v > tol) return snprintf(why, whylen, "log-probability %g above 0 at key %d", v, j), why;
        g[D] = logv ? v : log(v);
        if (g[D] > mx) mx = g[D];
        D++;
    }
    double acc = 0;
    for (int d = 0; d < D && mx > -INFINITY; d++) acc += exp(g[d] - mx);
    double lse = mx > -INFINITY ? mx + log(acc) : -INFINITY;
    double err = logv ? fabs(lse) : fabs(exp(lse) - 1);
    if (!(err <= tol))
        return snprintf(why, whylen, "%s %.6g, not %s within %g", logv ? "logsumexp of the row is" : "row sums to",
                        logv ? lse : exp(lse), logv ? "0" : "1", tol), why;
    /* A row that already closes to float32 precision keeps its values (float32 log input
     * round-trips bit for bit); every reader closes rows again in double precision anyway. */
    if (fabs(lse) > CLOSED_TOL)
        for (int d = 0; d < D; d++) g[d] -= lse;
    int z = zero_replace_closed_log(g, D, im->o->zero_delta);
    if (z < 0) return snprintf(why, whylen, "too many zeros for --zero-delta %g", im->o->zero_delta), why;
    im->zeros += z;
    for (int j = 0, d = 0; j < im->g.T; j++) out[j] = key_in_row(im, vs, t, j) ? (float)g[d++] : -INFINITY;
    return NULL;
}

/* The query of stored row i of sequence s. */
static int query_of(const importer *im, int s, int i) {
    return im->qpos ? im->qpos[(size_t)s * im->g.Q + i] : i;
}

/* Causal unless some valid query puts mass above the diagonal. */
static int infer_causal(importer *im, double *blk) {
    int S = im->g.S, L = im->g.L, H = im->g.H, T = im->g.T, Q = im->g.Q;
    for (int s = 0; s < S; s++)
        for (int l = 0; l < L; l++) {
            int64_t lead[2];
            char err[2048];
            if (ai_read_block(block_array(&im->g, s, l, lead), lead, blk, err, sizeof err)) die_data(NULL, "%s", err);
            for (int h = 0; h < H; h++)
                for (int i = 0; i < Q; i++) {
                    int t = query_of(im, s, i);
                    if (im->valid && !im->valid[(size_t)s * T + t]) continue;
                    const double *x = blk + ((size_t)h * Q + i) * T;
                    for (int j = t + 1; j < T; j++)
                        if (im->o->log ? x[j] != -INFINITY : x[j] != 0) return 0;
                }
        }
    return 1;
}

/* Every reader refuses a sequence without a valid token (it has no rows), so import does too. */
static void check_some_valid(const char *path, const uint8_t *valid, int S, int T) {
    for (int s = 0; s < S; s++)
        if (!memchr(valid + (size_t)s * T, 1, (size_t)T))
            die_data(path, "sequence %d has no valid token (all %d values are 0)", s, T);
}

static void check_right_padding(const importer *im) {
    for (int s = 0; s < im->g.S; s++)
        for (int t = 1; t < im->g.T; t++)
            if (im->valid[(size_t)s * im->g.T + t] && !im->valid[(size_t)s * im->g.T + t - 1])
                die_data(im->o->valid, "sequence %d: a real token at %d follows padding; a causal file "
                                       "needs right padding", s, t);
}

static void convert_all(importer *im, attn_writer *w, double *blk) {
    int S = im->g.S, L = im->g.L, H = im->g.H, T = im->g.T, Q = im->g.Q;
    /* held in im so that an exit through die_data leaves nothing unreachable */
    float *out = im->out = xmalloc(sizeof *out * (size_t)H * Q * T);
    double *g = im->row = xmalloc(sizeof *g * (size_t)T);
    char why[256], err[2048];
    progress pg;
    progress_begin(&pg, "import", "blocks", (double)S * L);
    for (int s = 0; s < S; s++)
        for (int l = 0; l < L; l++) {
            int64_t lead[2];
            ai_array *a = block_array(&im->g, s, l, lead);
            if (ai_read_block(a, lead, blk, err, sizeof err)) die_data(NULL, "%s", err);
            const uint8_t *vs = im->valid ? im->valid + (size_t)s * T : NULL;
            for (int h = 0; h < H; h++)
                for (int i = 0; i < Q; i++) {
                    int t = query_of(im, s, i);
                    size_t off = ((size_t)h * Q + i) * T;
                    if (vs && !vs[t]) {
                        for (int j = 0; j < T; j++) out[off + j] = -INFINITY;
                        continue;
                    }
                    if (convert_row(im, vs, t, blk + off, tolerance(a), g, out + off, why, sizeof why))
                        die_data(ai_file(a), "array '%s': %s in row (sequence %d, layer %d, head %d, query %d)%s",
                                 ai_name(a), why, s, l, h, t, im->hint);
                }
            attn_write_block(w, s, l, out);
            progress_update(&pg, (double)s * L + l + 1);
        }
    progress_end(&pg);
    free(out);
    free(g);
    im->out = NULL;
    im->row = NULL;
}

/* One line on stderr (stdout may be the output file): how the arrays were read, so that a wrong
 * guess on a rank-4 array is seen; --layout changes it. */
static void report_layout(const layout *g) {
    fprintf(stderr, "%s: %s read as %d sequence%s \u00d7 %d layer%s \u00d7 %d head%s, T = %d%s\n", cli_prog(),
            layout_desc(g->code), g->S, g->S == 1 ? "" : "s", g->L, g->L == 1 ? "" : "s", g->H,
            g->H == 1 ? "" : "s", g->T, g->code == LAYOUT_LHTT && !g->given ? " (--layout SHTT: [S,H,T,T])" : "");
}

/* ---- provenance ---- */
static char *provenance(const imp_opts *o, const importer *im, const char *tok_sha, const char *val_sha,
                        const char *qpos_sha) {
    prov *p = prov_new();
    ai_set *set = im->g.set;
    for (int i = 0; i < ai_nfiles(set); i++) prov_input(p, ai_file_name(set, i), ai_file_sha(set, i));
    if (o->tokens) prov_input(p, o->tokens, tok_sha);
    if (o->valid) prov_input(p, o->valid, val_sha);
    if (o->query_pos) {   /* only when given: other imports keep their bytes */
        prov_input(p, o->query_pos, qpos_sha);
        prov_opt_str(p, "query_pos", o->query_pos);
    }
    strbuf arr = {0};
    for (int i = 0; i < ai_count(set); i++) {
        ai_array *a = ai_at(set, i);
        char sh[256];
        shape_str(a, sh, sizeof sh);
        sb_printf(&arr, "%s%s:%s %s %s", i ? "; " : "", cli_display_name(ai_file(a)), ai_name(a),
                  ai_dtype_name(ai_type(a)), sh);
    }
    prov_opt_str(p, "arrays", arr.s);
    sb_free(&arr);
    prov_opt_str(p, "layout", layout_desc(im->g.code));
    prov_opt_str(p, "input_values", o->log ? "log" : "prob");
    prov_opt_int(p, "causal", im->causal);
    prov_opt_str(p, "causal_from", o->causal < 0 ? "inferred from the upper triangle"
                                                 : o->causal ? "--causal" : "--bidirectional");
    prov_opt_int(p, "sink", o->sink);
    prov_opt_dbl(p, "zero_delta", o->zero_delta);
    prov_opt_str(p, "tokens", o->tokens ? o->tokens : "");
    prov_opt_str(p, "valid", o->valid ? o->valid : "");
    prov_opt_str(p, "model_name", o->model);
    prov_opt_str(p, "family", o->family);
    prov_opt_str(p, "text", o->text);
    char *js = prov_json(p);
    prov_free(p);
    return js;
}

int main(int argc, char **argv) {
    cli_init(argv[0]);
    imp_opts o;
    parse_args(argc, argv, &o);
    cli_out_plan(o.out);
    ai_set *set = ai_new();
    char err[2048];
    for (int i = 0; i < o.ninputs; i++) {
        int rc = ai_add(set, o.inputs[i], err, sizeof err);
        if (rc == -2) die_usage("%s", err);
        if (rc < 0) die_data(NULL, "%s", err);
    }
    importer im = {.o = &o, .g = find_layout(set, o.layout, o.query_pos != NULL), .hint = ""};
    int S = im.g.S, T = im.g.T;
    if (o.sink >= T) die_usage("--sink %d is not below T = %d", o.sink, T);
    char tok_sha[65] = "", val_sha[65] = "", qpos_sha[65] = "";
    if (o.query_pos) {
        im.qpos = read_rows_file(o.query_pos, S, im.g.Q, 0, T - 1, qpos_sha);
        for (int s = 0; s < S; s++) {
            const char *why = attn_check_query_pos(im.qpos + (size_t)s * im.g.Q, im.g.Q, T);
            if (why) die_data(o.query_pos, "line %d: %s", s + 1, why);
        }
    }
    int32_t *tokens = o.tokens ? read_rows_file(o.tokens, S, T, INT32_MIN, INT32_MAX, tok_sha) : NULL;
    if (o.valid) {
        int32_t *v = read_rows_file(o.valid, S, T, 0, 1, val_sha);
        im.valid = xmalloc((size_t)S * T);
        for (size_t i = 0; i < (size_t)S * T; i++) im.valid[i] = (uint8_t)v[i];
        free(v);
        check_some_valid(o.valid, im.valid, S, T);
    }
    /* held in im, like its other buffers, so that an exit through die_data leaves nothing unreachable */
    double *blk = im.blk = xmalloc(sizeof *blk * (size_t)im.g.H * im.g.Q * T);
    im.causal = o.causal >= 0 ? o.causal : infer_causal(&im, blk);
    if (im.causal && im.valid) check_right_padding(&im);

    attn_meta m = {.S = S, .L = im.g.L, .H = im.g.H, .T = T, .causal = im.causal, .sink = o.sink,
                   .logprob = 1, .seed = -1};
    snprintf(m.model, sizeof m.model, "%s", o.model);
    snprintf(m.family, sizeof m.family, "%s", o.family);
    snprintf(m.text, sizeof m.text, "%s", o.text);
    char *pj = provenance(&o, &im, tok_sha, val_sha, qpos_sha);
    m.Q = im.g.Q;
    attn_writer *w;
    cli_check(attn_create_rows(&w, o.out, &m, pj, im.qpos, err, sizeof err), err);
    convert_all(&im, w, blk);
    if (tokens) attn_write_tokens(w, tokens);
    if (im.valid) attn_write_valid(w, im.valid);
    h5io_id f = attn_writer_file(w);
    h5io_attr_int(f, "/", "zero_replaced", im.zeros);
    h5io_attr_int(f, "/", "causal_inferred", o.causal < 0);
    h5io_label_attention(f);
    cli_check(attn_finish(w, err, sizeof err), err);
    report_layout(&im.g);
    ai_close(set);
    free(blk);
    free(tokens);
    free(im.valid);
    free(im.qpos);
    free(pj);
    return 0;
}

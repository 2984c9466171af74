/* sample: draw token sequences from a causal language model, starting from BOS, for models whose
 * training text is not at hand (stories260K, aidreams260K). Each step recomputes the whole prefix
 * with model_forward (no KV cache: these models are tiny) and draws the next token from
 * softmax(logits / temperature) with a GSL mt19937 generator per sequence, so the output does not
 * depend on the number of threads. Temperature 0 is greedy argmax, as llama2.c's run.c. */
#include "cli/cli.h"
#include "model/model.h"
#include "model/model_load.h"
#include "tok/tok.h"
#include <ctype.h>
#include <getopt.h>
#include <glob.h>
#include <gsl/gsl_rng.h>
#include <libgen.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void)
{
    printf(
"Usage: sample --model PATH [options] OUT|-\n"
"Draw N token sequences from a causal model, each starting with its BOS token, and write the\n"
"ids one sequence per line (T space-separated ids, BOS first; the --ids input of extract).\n"
"The first line is '# ' and the provenance JSON.\n"
"\n"
"  --model PATH        model: *.gguf, llama2.c *.bin, or a Hugging Face directory\n"
"  --tokenizer PATH    tokenizer for --text-out (default: the GGUF itself, the model\n"
"                      directory, or for a .bin the tokenizer.bin / tok*.bin beside it)\n"
"  -n, --sequences N   number of sequences (default 64)\n"
"  -T, --steps T       ids per sequence including the BOS (default 128; at most the\n"
"                      model's context); llama2.c's run.c -n S corresponds to T = S+1\n"
"  --seed S            random seed (default 1); sequence i uses its own mt19937 stream\n"
"                      derived from (S, i)\n"
"  --temperature X     softmax temperature (default 1.0); 0 = greedy argmax\n"
"  --text-out FILE     also write the decoded text: '# ' provenance, then per sequence a line\n"
"                      '# sequence i' and its text as run.c prints it (the leading space after\n"
"                      BOS dropped, text cut at a later BOS, then a newline)\n"
"  --threads N         OpenMP threads over sequences (default: all cores; each sequence's\n"
"                      matrix products run on one thread)\n"
"  --progress          progress bar on stderr; --no-progress: none (default: when\n"
"                      stderr is a terminal)\n"
"  -h, --help, --version\n"
"\n"
"Memory: the model's float32 weights plus, per thread, T x vocab logits and the forward\n"
"pass's activations for T tokens. Time: about N x T^2/2 token-forward steps.\n"
"Exit status: 0 ok, 1 bad data, 2 bad usage.\n");
}

typedef struct {
    const char *model, *tokenizer, *text_out, *out;
    long n, steps, threads;
    unsigned long seed;
    double temperature;
} options;

static options parse_args(int argc, char **argv)
{
    options o = {NULL, NULL, NULL, NULL, 64, 128, 0, 1, 1.0};
    enum { O_MODEL = 256, O_TOK, O_SEED, O_TEMP, O_TEXT, O_THREADS, O_VERSION };
    static const struct option lo[] = {
        {"model", required_argument, 0, O_MODEL},     {"tokenizer", required_argument, 0, O_TOK},
        {"sequences", required_argument, 0, 'n'},     {"steps", required_argument, 0, 'T'},
        {"seed", required_argument, 0, O_SEED},       {"temperature", required_argument, 0, O_TEMP},
        {"text-out", required_argument, 0, O_TEXT},   {"threads", required_argument, 0, O_THREADS},
        {"help", no_argument, 0, 'h'},                {"version", no_argument, 0, O_VERSION},
        CLI_PROGRESS_OPTIONS, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "n:T:h", lo, NULL)) != -1) {
        switch (c) {
        case O_MODEL: o.model = optarg; break;
        case O_TOK: o.tokenizer = optarg; break;
        case 'n': o.n = cli_parse_long("sequences", optarg, 1, 100000000); break;
        case 'T': o.steps = cli_parse_long("steps", optarg, 1, 1 << 20); break;
        case O_SEED: o.seed = (unsigned long)cli_parse_u64("seed", optarg); break;
        case O_TEMP: o.temperature = cli_parse_double("temperature", optarg, 0, 1e6); break;
        case O_TEXT: o.text_out = optarg; break;
        case O_THREADS: o.threads = cli_parse_long("threads", optarg, 1, 4096); break;
        case CLI_OPT_PROGRESS: case CLI_OPT_NO_PROGRESS: cli_progress_option(c); break;
        case 'h': usage(); exit(0);
        case O_VERSION: cli_print_version(); exit(0);
        default: cli_bad_option(argv, lo, "n:T:h");
        }
    }
    if (!o.model)
        die_usage("--model is required");
    cli_operands(argc, argv, 1, 1, "one OUTPUT");
    o.out = argv[optind];
    if (o.text_out && cli_is_stdio(o.text_out) && cli_is_stdio(o.out))
        die_usage("OUT and --text-out cannot both be stdout");
    return o;
}

/* A 32-bit mt19937 seed for sequence i, mixed with splitmix64 so that neighbouring seeds do not
 * produce shifted copies of each other's streams. */
static unsigned long stream_seed(unsigned long seed, long i)
{
    uint64_t z = (uint64_t)seed * 0x9E3779B97F4A7C15ull + (uint64_t)i + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    unsigned long s = (unsigned long)(z & 0xffffffffu);
    return s ? s : 1;   /* gsl treats 0 as its default seed */
}

/* Next token from one row of logits: argmax (first maximum) at temperature 0, else a draw from
 * softmax(logits/temperature) computed in double, by inverse CDF as llama2.c's sample_mult. */
static int32_t draw(const float *logits, int vocab, double temperature, gsl_rng *r)
{
    int best = 0;
    for (int v = 1; v < vocab; v++)
        if (logits[v] > logits[best])
            best = v;
    if (temperature == 0)
        return best;
    double z = 0, mx = logits[best];
    for (int v = 0; v < vocab; v++)
        z += exp((logits[v] - mx) / temperature);
    double coin = gsl_rng_uniform(r) * z, cdf = 0;
    for (int v = 0; v < vocab; v++) {
        cdf += exp((logits[v] - mx) / temperature);
        if (coin < cdf)
            return v;
    }
    return vocab - 1;
}

/* One sequence: ids[0] = BOS, ids[1..T-1] drawn. Returns 0, or -1 if the forward pass fails. */
static int sample_one(const model *m, const options *o, long i, int32_t *ids, float *logits)
{
    int V = m->cfg.vocab;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, stream_seed(o->seed, i));
    ids[0] = m->cfg.bos_id;
    int rc = 0;
    for (int t = 1; t < o->steps && rc == 0; t++) {
        rc = model_forward(m, ids, NULL, t, NULL, NULL, logits) == 0 ? 0 : -1;
        if (rc == 0)
            ids[t] = draw(logits + (size_t)(t - 1) * V, V, o->temperature, r);
    }
    gsl_rng_free(r);
    return rc;
}

/* The tokenizer beside a llama2.c checkpoint: tokenizer.bin, else the first tok*.bin. */
static char *default_tokenizer(const char *model_path)
{
    size_t n = strlen(model_path);
    if (n >= 5 && strcmp(model_path + n - 5, ".gguf") == 0)
        return xstrdup(model_path);
    char *copy = xstrdup(model_path), *dir = dirname(copy);
    strbuf b = {0};
    sb_printf(&b, "%s/tokenizer.bin", dir);
    FILE *f = fopen(b.s, "rb");
    if (f) {
        fclose(f);
        free(copy);
        return b.s;
    }
    sb_free(&b);
    sb_printf(&b, "%s/tok*.bin", dir);
    glob_t g;
    char *res = NULL;
    if (glob(b.s, 0, NULL, &g) == 0 && g.gl_pathc > 0)
        res = xstrdup(g.gl_pathv[0]);
    globfree(&g);
    sb_free(&b);
    free(copy);
    return res ? res : xstrdup(model_path);
}

/* run.c's printing: pieces after BOS, cut at the next BOS, then a newline. */
static void append_text(strbuf *b, const tok *tk, const int32_t *ids, long T, int bos)
{
    char piece[1024];
    for (long t = 1; t < T; t++) {
        if (ids[t] == bos)
            break;
        int n = tok_decode_piece(tk, ids[t - 1], ids[t], piece, (int)sizeof piece);
        /* Like run.c's safe_printf, drop lone ASCII control bytes (and NUL) but keep UTF-8. */
        if (n == 1 && (unsigned char)piece[0] < 0x80 && !isprint((unsigned char)piece[0]) &&
            !isspace((unsigned char)piece[0]))
            continue;
        sb_printf(b, "%.*s", n, piece);
    }
    sb_printf(b, "\n");
}

int main(int argc, char **argv)
{
    cli_init("sample");
    options o = parse_args(argc, argv);
    cli_out_plan(o.out);
    cli_out_plan(o.text_out);
    char err[512];
    model *m = model_load(o.model, err, sizeof err);
    if (!m)
        die_data(NULL, "%s", err);
    if (m->cfg.family == FAM_BERT || !m->cfg.causal)
        die_data(o.model, "a bidirectional model cannot be sampled from");
    if (m->cfg.bos_id < 0 || m->cfg.bos_id >= m->cfg.vocab)
        die_data(o.model, "the model defines no BOS token to start the sequences from");
    if (o.steps > m->cfg.max_pos)
        die_usage("--steps %ld exceeds the model's context length %d", o.steps, m->cfg.max_pos);
    tok *tk = NULL;
    char *tok_path = NULL;
    if (o.text_out) {
        tok_path = o.tokenizer ? xstrdup(o.tokenizer) : default_tokenizer(o.model);
        tk = tok_load(tok_path, m->cfg.model_type, err, sizeof err);
        if (!tk || tok_check_model_vocab(tk, tok_path, m->cfg.vocab, err, sizeof err))
            die_data(NULL, "%s", err);
    }
    /* Parallel over sequences; each sequence's GEMMs run on its one thread (no nested pools). */
    model_set_threads((int)o.threads);

    int32_t *ids = xmalloc(sizeof(int32_t) * o.n * o.steps);
    int failed = 0;
    long done = 0;
    progress pg;
    progress_begin(&pg, "sample", "seq", (double)o.n);
#pragma omp parallel
    {
        float *logits = xmalloc(sizeof(float) * o.steps * (size_t)m->cfg.vocab);
#pragma omp for schedule(dynamic, 1)
        for (long i = 0; i < o.n; i++) {
            if (sample_one(m, &o, i, ids + i * o.steps, logits) < 0) {
#pragma omp atomic write
                failed = 1;
            }
#pragma omp atomic
            done++;
            if (omp_get_thread_num() == 0) {
                long d;
#pragma omp atomic read
                d = done;
                progress_update(&pg, (double)d);
            }
        }
        free(logits);
    }
    progress_end(&pg);
    if (failed)
        die_data(o.model, "forward pass failed");

    prov *p = prov_new();
    prov_input(p, o.model, m->sha256);
    if (tok_path) {
        char h[65];
        if (strcmp(tok_path, o.model) != 0 && cli_sha256_file(tok_path, h) == 0)
            prov_input(p, tok_path, h);
        prov_opt_str(p, "tokenizer", tok_path);
    }
    prov_opt_str(p, "model", o.model);
    prov_opt_int(p, "sequences", o.n);
    prov_opt_int(p, "steps", o.steps);
    prov_opt_int(p, "seed", (long long)o.seed);
    prov_opt_dbl(p, "temperature", o.temperature);
    char *pj = prov_json(p);

    strbuf b = {0};
    sb_printf(&b, "# %s\n", pj);
    for (long i = 0; i < o.n; i++)
        for (long t = 0; t < o.steps; t++)
            sb_printf(&b, "%d%c", ids[i * o.steps + t], t + 1 < o.steps ? ' ' : '\n');
    if (tk) {
        strbuf tb = {0};
        sb_printf(&tb, "# %s\n", pj);
        for (long i = 0; i < o.n; i++) {
            sb_printf(&tb, "# sequence %ld\n", i);
            append_text(&tb, tk, ids + i * o.steps, o.steps, m->cfg.bos_id);
        }
        cli_write_bytes(o.text_out, tb.s, tb.len);
        sb_free(&tb);
    }
    cli_write_bytes(o.out, b.s, b.len);
    sb_free(&b);
    free(pj);
    prov_free(p);
    free(ids);
    free(tok_path);
    if (tk)
        tok_free(tk);
    model_free(m);
    return 0;
}

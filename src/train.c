/* train: fit a small GPT-2- or Llama-style byte-level model (or a BERT-style masked-LM encoder) on
 * a text file (the King James Bible in the pipeline) and save it, with log-spaced checkpoints, as
 * Hugging Face model directories. */
#include "cli/cli.h"
#include "core/detmath.h"
#include "tok/tok.h"
#include "train/train_io.h"
#include "train/train_model.h"
#include <getopt.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *USAGE =
    "Usage: train --config FILE --out DIR [options]\n"
    "Train a byte-level transformer (GPT-2, Llama or BERT style, as the recipe FILE says) on a text and\n"
    "save it as Hugging Face directories: DIR/{config.json,model.safetensors,tokenizer.json} (the\n"
    "final model), DIR/checkpoints/step-NNNNNN/ (after 0, 16, 32, 64, ... updates and the last),\n"
    "DIR/train-log.tsv (training loss; validation loss, mean, largest and SD of the head sink\n"
    "masses, share of sink heads (mass > 0.3, > 0.8) in layers >= 1 at each checkpoint) and\n"
    "DIR/report.tsv (validation loss, each head's sink mass: mean attention on position 0, the BOS\n"
    "token, over query positions 1..T-1 of the validation windows, and those summaries per layer).\n"
    "\n"
    "Data: sequences are BOS (id 256) followed by T-1 bytes of a window of the training text, the\n"
    "targets are the T bytes that follow each position; window starts are drawn with GSL mt19937\n"
    "seeded by the recipe seed. Validation uses eval_windows windows of eval_context tokens at\n"
    "evenly spaced offsets. With synthetic_share > 0 that share of the training windows (drawn by a\n"
    "second mt19937 seeded by seed + 1000003) are text with trigger -> copy patterns inserted\n"
    "(synthetic_task backcopy | recall | mixed | depths, synthetic_rate, synthetic_triggers; docs/TRAIN.md);\n"
    "synthetic_carrier = bigram puts them into a walk on the training text's bigram chain instead.\n"
    "Position encoding: recipe key pos = learned | sinusoidal | rope | rope-ntk (with\n"
    "rope_ntk_factor s: base rope_theta * s^(head_dim/(head_dim-2))) | alibi | none; default the\n"
    "family's own (gpt2 learned, llama rope). Other values are recorded in config.json as\n"
    "attncoda_position_encoding (docs/TRAIN.md, Position encodings).\n"
    "bpe_merges = N (1..32000; gpt2 and llama): learn a byte-level BPE vocabulary on the training\n"
    "text first (GPT-2 pre-tokenizer regex; most frequent adjacent pair, ties to the smallest (left\n"
    "id, right id); merge k -> id 257 + k; stops early when no pair occurs twice), save it in every\n"
    "tokenizer.json and train on its tokens: windows are BOS + T-1 tokens; val_loss is then nats per\n"
    "token, report.tsv adds val_nats_per_byte (docs/TRAIN.md). With synthetic_share the carrier is\n"
    "the token stream and the triggers are the byte tokens 0x80.. (refused if the text has them).\n"
    "family = bert: windows are [CLS] (257), T-2 bytes, [SEP] (258); 15% of the bytes are selected\n"
    "(80% -> [MASK] 259, 10% a random byte, 10% kept; same mt19937), the loss is over those only,\n"
    "and the model is saved as BertForMaskedLM; sink mass is then the mass on [CLS].\n"
    "Optimiser: AdamW with warmup then cosine decay to min_lr_ratio*lr, global gradient clipping;\n"
    "weight decay on matrices only (not on embeddings, norms, biases).\n"
    "short_context = Ts (a divisor of context below it): the first short_context_share (0.5) of the\n"
    "updates use context/Ts times as many windows of Ts tokens (the same tokens per update).\n"
    "\n"
    "Options:\n"
    "  --config FILE      recipe: key = value lines (see configs/kjv-*.conf and docs/TRAIN.md)\n"
    "  --profile P        full | quick: use the recipe's steps_full or steps_quick (default quick)\n"
    "  --train FILE       training text (default results/corpus/kjv-train.txt; - = stdin)\n"
    "  --valid FILE       validation text (default results/corpus/kjv-valid.txt)\n"
    "  --out DIR          output directory (created)\n"
    "  --steps N          override the profile's number of updates\n"
    "  --seed N           override the recipe seed (initialisation and batches)\n"
    "  --threads N        OpenMP threads (default: OMP_NUM_THREADS or all cores). The outputs are\n"
    "                     bit-identical for any thread count and on any x86-64 CPU (so the count\n"
    "                     is not recorded in them; docs/TRAIN.md, Determinism).\n"
    "  --log-every N      training-loss lines in train-log.tsv every N updates (default 10)\n"
    "  --no-checkpoints   save only the final model\n"
    "  --progress         progress bar on stderr; --no-progress: none (default: when stderr\n"
    "                     is a terminal)\n"
    "  --help, --version\n"
    "\n"
    "Memory: about 4 x parameters x 4 bytes (weights, gradients, two AdamW moments) plus the\n"
    "activations of one batch, roughly batch x T x (16 d_model + 3 d_ff + 2 heads x T) x 4 bytes per\n"
    "layer: about 90 MB for a 6-layer, 128-wide model at batch 16, T 128.\n";

typedef struct {
    const char *config, *train, *valid, *out, *profile;
    long steps, seed, threads, log_every;
    int checkpoints;
} opts;

static void parse_args(int argc, char **argv, opts *o) {
    static const struct option lo[] = {
        {"config", 1, 0, 'c'}, {"profile", 1, 0, 'p'}, {"train", 1, 0, 't'}, {"valid", 1, 0, 'v'},
        {"out", 1, 0, 'o'}, {"steps", 1, 0, 's'}, {"seed", 1, 0, 'S'}, {"threads", 1, 0, 'j'},
        {"log-every", 1, 0, 'l'}, {"no-checkpoints", 0, 0, 'n'}, {"help", 0, 0, 'h'}, {"version", 0, 0, 'V'},
        CLI_PROGRESS_OPTIONS, {0, 0, 0, 0}};
    *o = (opts){.train = "results/corpus/kjv-train.txt", .valid = "results/corpus/kjv-valid.txt",
                .profile = "quick", .steps = -1, .seed = -1, .threads = 0, .log_every = 10, .checkpoints = 1};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'c': o->config = optarg; break;
        case 'p': o->profile = optarg; break;
        case 't': o->train = optarg; break;
        case 'v': o->valid = optarg; break;
        case 'o': o->out = optarg; break;
        case 's': o->steps = cli_parse_long("steps", optarg, 0, 100000000); break;
        case 'S': o->seed = cli_parse_long("seed", optarg, 0, 4294967295L); break;
        case 'j': o->threads = cli_parse_long("threads", optarg, 1, 1024); break;
        case 'l': o->log_every = cli_parse_long("log-every", optarg, 1, 100000000); break;
        case 'n': o->checkpoints = 0; break;
        case CLI_OPT_PROGRESS: case CLI_OPT_NO_PROGRESS: cli_progress_option(c); break;
        case 'h': fputs(USAGE, stdout); exit(0);
        case 'V': cli_print_version(); exit(0);
        default: cli_bad_option(argv, lo, "");
        }
    }
    cli_operands(argc, argv, 0, 0, "options only");
    if (!o->config) die_usage("--config FILE is required");
    if (!o->out) die_usage("--out DIR is required");
    if (strcmp(o->profile, "full") && strcmp(o->profile, "quick")) die_usage("--profile must be full or quick");
    if (cli_is_stdio(o->train) && cli_is_stdio(o->valid)) die_usage("--train and --valid cannot both be stdin");
}

/* ---------------------------------------------------------------- data */

typedef struct {
    const unsigned char *text;
    size_t len;
    /* bpe_merges > 0: the text as tokens, and the number of bytes each id stands for */
    int32_t *ids;
    size_t n_ids;
    const uint32_t *id_bytes;
    tr_bigram *chain;   /* synthetic_carrier = bigram: the training stream's bigram chain */
} corpus;

/* BERT's masking (Devlin et al. 2019, §3.1): each byte position is selected with probability
 * 0.15 (a Bernoulli draw per position, as Hugging Face's DataCollatorForLanguageModeling does);
 * a selected byte becomes [MASK] with probability 0.8, a uniformly random byte with 0.1, and stays
 * with 0.1. [CLS] and [SEP] are never selected. */
#define MLM_SELECT 0.15
#define MLM_AS_MASK 0.8
#define MLM_AS_RANDOM 0.1

/* family = bert. Sequence: [CLS], bytes start..start+T-3, [SEP]; targets: the original byte at the
 * selected positions, -1 elsewhere. The masking draws come from rng after the window start. */
static void make_window_bert(const corpus *c, size_t start, int T, gsl_rng *rng, int32_t *ids, int32_t *tg) {
    ids[0] = TR_CLS;
    ids[T - 1] = TR_SEP;
    tg[0] = tg[T - 1] = -1;
    for (int t = 1; t < T - 1; t++) {
        int byte = c->text[start + t - 1];
        ids[t] = byte;
        tg[t] = -1;
        if (gsl_rng_uniform(rng) >= MLM_SELECT) continue;
        tg[t] = byte;
        double u = gsl_rng_uniform(rng);
        if (u < MLM_AS_MASK) ids[t] = TR_MASK;
        else if (u < MLM_AS_MASK + MLM_AS_RANDOM) ids[t] = (int32_t)gsl_rng_uniform_int(rng, 256);
    }
}

/* Sequence: BOS then bytes start..start+T-2; targets: bytes start..start+T-1. */
static void make_window(const corpus *c, size_t start, int T, int32_t *ids, int32_t *tg) {
    ids[0] = TR_BOS;
    for (int t = 0; t < T; t++) {
        if (t > 0) ids[t] = c->text[start + t - 1];
        tg[t] = c->text[start + t];
    }
}

/* bpe_merges > 0. Sequence: BOS then tokens start..start+T-2; targets: tokens start..start+T-1. */
static void make_window_ids(const corpus *c, size_t start, int T, int32_t *ids, int32_t *tg) {
    ids[0] = TR_BOS;
    for (int t = 0; t < T; t++) {
        if (t > 0) ids[t] = c->ids[start + t - 1];
        tg[t] = c->ids[start + t];
    }
}

static void load_corpus(corpus *c, const char *path, int T, prov *p) {
    size_t len;
    unsigned char *b = cli_slurp(path, &len);
    if (len < (size_t)T + 1) die_data(path, "text has %zu bytes; need at least context + 1 = %d", len, T + 1);
    prov_input_buf(p, path, b, len);
    *c = (corpus){b, len, NULL, 0, NULL, NULL};
}

/* bpe_merges > 0: encode the text with the tokenizer train writes (tok_encode, as extract
 * would), so that training, evaluation and extract see the same ids. */
static void tokenize_corpus(corpus *c, const char *path, int T, const tok *tk, const bpe_vocab *v) {
    int n = tok_encode(tk, (const char *)c->text, c->len, &c->ids);
    if (n < 0) die_data(path, "cannot tokenise with the learned vocabulary (not UTF-8?)");
    if (n < T + 1) die_data(path, "text has %d tokens; need at least context + 1 = %d", n, T + 1);
    for (int i = 0; i < n; i++) {
        if (c->ids[i] == TR_BOS) die_data(path, "the text contains <|bos|>, the BOS token's string (token %d)", i);
        if (c->ids[i] < 0 || c->ids[i] >= v->n_ids)
            die_data(path, "token %d: id %d is outside the learned vocabulary", i, (int)c->ids[i]);
    }
    c->n_ids = (size_t)n;
    c->id_bytes = v->plen;
}

/* synthetic_carrier = bigram: the chain over the stream the model trains on (bytes or tokens). */
static tr_bigram *build_chain(const corpus *c, int V) {
    tr_bigram *bg = xmalloc(sizeof *bg);
    if (c->ids) {
        tr_bigram_build(bg, c->ids, c->n_ids, V);
        return bg;
    }
    int32_t *s = xmalloc(sizeof(int32_t) * c->len);
    for (size_t i = 0; i < c->len; i++) s[i] = c->text[i];
    tr_bigram_build(bg, s, c->len, 256);
    free(s);
    return bg;
}

/* synthetic_share > 0: a trigger in the training text itself would make the copy rule ambiguous. */
static void check_no_triggers(const corpus *c, const char *path, const tr_synth *sy) {
    if (c->ids) {
        long at = tr_synth_find_trigger(c->ids, c->n_ids, sy);
        if (at >= 0)
            die_data(path, "token %ld is id %d, a synthetic trigger (byte tokens 0x80-0x%x are the triggers)", at,
                     (int)c->ids[at], TR_SYNTH_TRIGGER0 + sy->triggers - 1);
        return;
    }
    for (size_t i = 0; i < c->len; i++)
        if (tr_synth_is_trigger(sy, c->text[i]))
            die_data(path, "byte %zu is 0x%02x, a synthetic trigger (bytes 0x80-0x%x are the triggers)", i,
                     c->text[i], TR_SYNTH_TRIGGER0 + sy->triggers - 1);
}

/* The tokenizer.json text, or exit 2 with the internal error. */
static char *tokenizer_json(int family, const bpe_vocab *v) {
    char err[1024];
    char *js = tr_tokenizer_json(family, v, err, sizeof err);
    if (!js) die_usage("%s", err);
    return js;
}

/* Learn the merges on the training text, write the tokenizer.json text and read it back;
 * *secs: the time the learning took. */
static tok *learn_vocabulary(const tr_recipe *r, const corpus *tr, const char *path, bpe_vocab *v, char **tok_json,
                             double *secs) {
    double t0 = cli_now();
    char err[1024];
    int rc = bpe_learn((const char *)tr->text, tr->len, (int)r->bpe_merges, v, err, sizeof err);
    if (rc == -1) die_data(path, "bpe_merges needs UTF-8 text (the GPT-2 pre-tokenizer works on characters)");
    if (rc) die_usage("%s", err);
    *tok_json = tokenizer_json(r->m.family, v);
    tok *tk = tok_load_json_text(*tok_json, strlen(*tok_json), "tokenizer.json", err, sizeof err);
    if (!tk) die_usage("internal error: the learned tokenizer.json does not load: %s", err);
    if (tok_vocab_size(tk) != v->n_ids)
        die_usage("internal error: the learned tokenizer.json has %d ids, not %d", tok_vocab_size(tk), v->n_ids);
    *secs = cli_now() - t0;
    return tk;
}

/* ---------------------------------------------------------------- optimiser */

typedef struct {
    float *m, *v;
    long t;
} adamw;

static double lr_at(const tr_recipe *r, long step, long steps) {
    double lo = r->lr * r->min_lr_ratio;
    if (step < r->warmup) return r->lr * (step + 1) / r->warmup;
    double span = steps - r->warmup, p = span > 0 ? (step - r->warmup) / span : 1;
    if (p > 1) p = 1;
    return lo + 0.5 * (r->lr - lo) * (1 + det_cos(M_PI * p));
}

/* Global-norm clipping then AdamW with decoupled decay (Loshchilov & Hutter) on decay tensors. */
static double adamw_step(adamw *o, tm_model *m, const tr_recipe *r, double lr) {
    double ss = 0;
    for (size_t i = 0; i < m->n_params; i++) ss += (double)m->g[i] * m->g[i];
    double norm = sqrt(ss), clip = r->grad_clip > 0 && norm > r->grad_clip ? r->grad_clip / norm : 1;
    o->t++;
    double bc1 = 1 - det_pow(r->beta1, (double)o->t), bc2 = 1 - det_pow(r->beta2, (double)o->t);
    float b1 = (float)r->beta1, b2 = (float)r->beta2;
    for (int k = 0; k < m->nt; k++) {
        const tm_tensor *t = &m->t[k];
        float wd = t->decay ? (float)(lr * r->weight_decay) : 0;
        float step = (float)(lr / bc1), isq = (float)(1 / sqrt(bc2)), eps = (float)r->adam_eps, cl = (float)clip;
#pragma omp parallel for schedule(static)
        for (size_t i = t->off; i < t->off + t->n; i++) {
            float g = m->g[i] * cl;
            o->m[i] = b1 * o->m[i] + (1 - b1) * g;
            o->v[i] = b2 * o->v[i] + (1 - b2) * g * g;
            m->w[i] -= step * o->m[i] / (sqrtf(o->v[i]) * isq + eps) + wd * m->w[i];
        }
    }
    return norm;
}

/* ---------------------------------------------------------------- evaluation */

typedef struct {
    double loss;    /* nats per target token (= per byte for the byte models) */
    double bytes;   /* bpe_merges > 0: bytes covered by the target tokens */
    double *sink;   /* [layers*heads] mean attention on position 0 */
} eval_result;

/* bert: the validation masks come from a generator seeded by the recipe seed afresh at every
 * evaluation, so every checkpoint is scored on the same masked positions. */
static void evaluate(const tm_model *m, tm_acts *a, int B, int T, const corpus *val, long nwin, unsigned long seed,
                     eval_result *res) {
    const tm_config *c = &m->c;
    int32_t *ids = xmalloc(sizeof(int32_t) * (size_t)B * T), *tg = xmalloc(sizeof(int32_t) * (size_t)B * T);
    gsl_rng *mrng = NULL;
    if (c->family == TM_BERT) {
        mrng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(mrng, seed);
    }
    double tot = 0, counted = 0, bytes = 0;
    memset(res->sink, 0, sizeof(double) * (size_t)c->n_layer * c->n_head);
    for (long done = 0; done < nwin;) {
        /* A short last batch is padded with window 0; only real windows are counted. */
        int real = (int)(nwin - done < B ? nwin - done : B);
        for (int b = 0; b < B; b++) {
            long w = b < real ? done + b : 0;
            size_t span = val->ids ? val->n_ids : val->len;
            size_t start = (size_t)((double)w * (double)(span - T) / (double)nwin);
            if (val->ids) {
                make_window_ids(val, start, T, ids + (size_t)b * T, tg + (size_t)b * T);
            } else if (!mrng) {
                make_window(val, start, T, ids + (size_t)b * T, tg + (size_t)b * T);
            } else if (b < real) {
                make_window_bert(val, start, T, mrng, ids + (size_t)b * T, tg + (size_t)b * T);
            } else {   /* padding: a copy of the batch's first window, so the masks stream is not used */
                memcpy(ids + (size_t)b * T, ids, sizeof(int32_t) * T);
                memcpy(tg + (size_t)b * T, tg, sizeof(int32_t) * T);
            }
        }
        tm_forward(m, a, ids, tg);
        const float *rl = tm_acts_rowloss(a);
        for (int i = 0; i < real * T; i++) tot += rl[i];
        for (int i = 0; i < real * T; i++) counted += tg[i] >= 0;
        if (val->ids)
            for (int i = 0; i < real * T; i++) bytes += val->id_bytes[tg[i]];
        for (int l = 0; l < c->n_layer; l++) {
            const float *P = tm_acts_attn(a, l);
            for (int h = 0; h < c->n_head; h++) {
                double s = 0;
                for (int b = 0; b < real; b++)
                    for (int t = 1; t < T; t++) s += P[(((size_t)b * c->n_head + h) * T + t) * T];
                res->sink[l * c->n_head + h] += s;
            }
        }
        done += real;
    }
    res->loss = mrng ? (counted > 0 ? tot / counted : 0) : tot / ((double)nwin * T);
    res->bytes = bytes;
    if (mrng) gsl_rng_free(mrng);
    for (int i = 0; i < c->n_layer * c->n_head; i++) res->sink[i] /= (double)nwin * (T - 1);
    free(ids);
    free(tg);
}

/* Sink heads (Gu et al. 2024): head mass alpha > 0.3 (and > 0.8); shares per layer and over
 * layers >= 1, and the spread of alpha over all heads (population SD). */
typedef struct {
    double mean, max, sd, upper03, upper08;
} sink_summary;

static double layer_share(const double *sink, int H, int l, double thr) {
    int n = 0;
    for (int h = 0; h < H; h++) n += sink[l * H + h] > thr;
    return (double)n / H;
}

static sink_summary summarize_sinks(const double *sink, int L, int H) {
    sink_summary s = {0, 0, 0, 0, 0};
    int n = L * H;
    for (int i = 0; i < n; i++) {
        s.mean += sink[i] / n;
        s.max = sink[i] > s.max ? sink[i] : s.max;
    }
    for (int i = 0; i < n; i++) s.sd += (sink[i] - s.mean) * (sink[i] - s.mean) / n;
    s.sd = sqrt(s.sd);
    for (int l = 1; l < L; l++) {
        s.upper03 += layer_share(sink, H, l, 0.3) / (L - 1);
        s.upper08 += layer_share(sink, H, l, 0.8) / (L - 1);
    }
    if (L == 1) s.upper03 = s.upper08 = NAN;
    return s;
}

/* ---------------------------------------------------------------- outputs */

static int is_checkpoint(long step, long steps) {
    if (step == 0 || step == steps) return 1;
    for (long k = 16; k <= step; k *= 2)
        if (k == step) return 1;
    return 0;
}

static void write_tsv(const char *dir, const char *file, const char *prov_json, const strbuf *body) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    strbuf b = {0};
    sb_printf(&b, "# %s\n%s", prov_json, body->s ? body->s : "");
    cli_write_bytes(path, b.s, b.len);
    sb_free(&b);
}

/* bpe_merges > 0: the validation loss per byte, total nats over the bytes the targets cover. */
static double nats_per_byte(const eval_result *ev, long eval_tokens) { return ev->loss * (double)eval_tokens / ev->bytes; }

static void report(const char *dir, const char *prov_json, const tm_config *c, const eval_result *ev,
                   double train_loss, long steps, long tokens, long synth_windows, size_t n_params, long eval_tokens,
                   const bpe_vocab *bpe) {
    strbuf b = {0};
    sb_printf(&b, "quantity\tlayer\thead\tvalue\n");
    sb_printf(&b, "parameters\t-\t-\t%zu\n", n_params);
    sb_printf(&b, "steps\t-\t-\t%ld\n", steps);
    sb_printf(&b, "train_loss\t-\t-\t%.6f\n", train_loss);
    sb_printf(&b, "val_loss\t-\t-\t%.6f\n", ev->loss);
    if (!bpe) {
        sb_printf(&b, "val_bits_per_byte\t-\t-\t%.6f\n", ev->loss / M_LN2);
    } else {   /* val_loss is per token; per byte = total nats / bytes covered by the targets */
        double per_byte = nats_per_byte(ev, eval_tokens);
        sb_printf(&b, "val_bits_per_byte\t-\t-\t%.6f\n", per_byte / M_LN2);
        sb_printf(&b, "val_nats_per_byte\t-\t-\t%.6f\n", per_byte);
        sb_printf(&b, "val_bytes_per_token\t-\t-\t%.6f\n", ev->bytes / (double)eval_tokens);
        sb_printf(&b, "bpe_merges_learned\t-\t-\t%d\n", bpe->n_merges);
        sb_printf(&b, "vocab\t-\t-\t%d\n", bpe->n_ids);
    }
    for (int l = 0; l < c->n_layer; l++)
        for (int h = 0; h < c->n_head; h++)
            sb_printf(&b, "sink_mass\t%d\t%d\t%.6f\n", l, h, ev->sink[l * c->n_head + h]);
    sb_printf(&b, "tokens\t-\t-\t%ld\n", tokens);
    sb_printf(&b, "synthetic_windows\t-\t-\t%ld\n", synth_windows);
    for (int l = 0; l < c->n_layer; l++) {
        sb_printf(&b, "sink_share_0.3\t%d\t-\t%.6f\n", l, layer_share(ev->sink, c->n_head, l, 0.3));
        sb_printf(&b, "sink_share_0.8\t%d\t-\t%.6f\n", l, layer_share(ev->sink, c->n_head, l, 0.8));
    }
    sink_summary ss = summarize_sinks(ev->sink, c->n_layer, c->n_head);
    sb_printf(&b, "sink_share_0.3_layers_ge1\t-\t-\t%.6f\n", ss.upper03);
    sb_printf(&b, "sink_share_0.8_layers_ge1\t-\t-\t%.6f\n", ss.upper08);
    sb_printf(&b, "sink_mass_sd\t-\t-\t%.6f\n", ss.sd);
    write_tsv(dir, "report.tsv", prov_json, &b);
    sb_free(&b);
}

/* One update's windows: Bn windows of Tn tokens into ids/tg; returns how many were synthetic. */
static long fill_batch(const tr_recipe *r, const corpus *tr, int Bn, int Tn, gsl_rng *rng, gsl_rng *srng, int32_t *ids,
                       int32_t *tg) {
    long n_synth = 0;
    size_t n = tr->ids ? tr->n_ids : tr->len;
    for (int b = 0; b < Bn; b++) {
        int32_t *wi = ids + (size_t)b * Tn, *wt = tg + (size_t)b * Tn;
        if (r->synthetic_share > 0 && gsl_rng_uniform(srng) < r->synthetic_share) {
            size_t start = gsl_rng_uniform_int(srng, (unsigned long)(n - (size_t)Tn));
            if (tr->ids) tr_synth_window_ids(tr->ids, n, start, Tn, &r->synth, tr->chain, srng, TR_BOS, wi, wt);
            else tr_synth_window(tr->text, n, start, Tn, &r->synth, tr->chain, srng, TR_BOS, wi, wt);
            n_synth++;
            continue;
        }
        size_t start = gsl_rng_uniform_int(rng, (unsigned long)(n - (size_t)Tn));
        if (tr->ids) make_window_ids(tr, start, Tn, wi, wt);
        else if (r->m.family == TM_BERT) make_window_bert(tr, start, Tn, rng, wi, wt);
        else make_window(tr, start, Tn, wi, wt);
    }
    return n_synth;
}

/* ---------------------------------------------------------------- main */

/* A recipe whose sizes are each in range can still need more memory than the machine has
 * (calloc of 343 GB, then a bare "out of memory"): refuse it before anything is read or
 * allocated, naming the sizes (docs/TRAIN.md, "Memory"). */
static void check_memory(const tr_recipe *r, const char *path) {
    double need = tr_recipe_bytes(r, omp_get_max_threads());
    double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (have > 0 && need > have)
        die_data(path, "the recipe needs about %.1f GB (batch = %ld, context = %d, heads = %d, layers = %d, d_model = %d, "
                 "d_ff = %d), more than this machine's %.1f GB of memory", need / 1e9, r->batch, r->m.ctx, r->m.n_head,
                 r->m.n_layer, r->m.d_model, r->m.d_ff, have / 1e9);
}

/* Every recipe value as provenance options. */
static void recipe_prov(const tr_recipe *r, prov *p) {
    const tm_config *m = &r->m;
    prov_opt_str(p, "name", r->name);
    prov_opt_str(p, "family", r->family);
    prov_opt_int(p, "layers", m->n_layer);
    prov_opt_int(p, "d_model", m->d_model);
    prov_opt_int(p, "heads", m->n_head);
    prov_opt_int(p, "kv_heads", m->n_kv_head);
    prov_opt_int(p, "head_dim", m->head_dim);
    prov_opt_int(p, "d_ff", m->d_ff);
    prov_opt_int(p, "context", m->ctx);
    prov_opt_int(p, "vocab", m->vocab);
    prov_opt_dbl(p, "norm_eps", m->norm_eps);
    int rope = m->pos == POS_ROPE || m->pos == POS_ROPE_NTK;
    if (rope) prov_opt_dbl(p, "rope_theta", r->rope_base);
    prov_opt_dbl(p, "lr", r->lr);
    prov_opt_dbl(p, "min_lr_ratio", r->min_lr_ratio);
    prov_opt_dbl(p, "warmup", r->warmup);
    prov_opt_dbl(p, "weight_decay", r->weight_decay);
    prov_opt_dbl(p, "beta1", r->beta1);
    prov_opt_dbl(p, "beta2", r->beta2);
    prov_opt_dbl(p, "adam_eps", r->adam_eps);
    prov_opt_dbl(p, "grad_clip", r->grad_clip);
    prov_opt_int(p, "batch", r->batch);
    prov_opt_int(p, "seed", r->seed);
    prov_opt_int(p, "eval_windows", r->eval_windows);
    /* Recorded only where they differ from the defaults, so that older recipes keep their bytes. */
    if (r->eval_context != m->ctx) prov_opt_int(p, "eval_context", r->eval_context);
    if (r->short_context) {
        prov_opt_int(p, "short_context", r->short_context);
        prov_opt_dbl(p, "short_context_share", r->short_context_share);
    }
    if (m->pos != (m->family == TM_LLAMA ? POS_ROPE : POS_LEARNED)) prov_opt_str(p, "pos", posenc_name(m->pos));
    if (m->pos == POS_ROPE_NTK) prov_opt_dbl(p, "rope_ntk_factor", r->rope_ntk_factor);
    if (r->synthetic_share > 0) {
        prov_opt_dbl(p, "synthetic_share", r->synthetic_share);
        prov_opt_str(p, "synthetic_task", tr_synth_task_name(r->synth.task));
        prov_opt_dbl(p, "synthetic_rate", r->synth.rate);
        prov_opt_int(p, "synthetic_triggers", r->synth.triggers);
        if (r->synth.task == TR_SYNTH_MIXED) prov_opt_int(p, "synthetic_rules", r->synth.rules);
        /* recorded only when not the default, so that older recipes keep their provenance */
        if (r->synth.carrier != TR_CARRIER_TEXT)
            prov_opt_str(p, "synthetic_carrier", tr_synth_carrier_name(r->synth.carrier));
    }
    if (r->bpe_merges > 0) prov_opt_int(p, "bpe_merges", r->bpe_merges);
}

/* The model directory dir, or exit with tr_save_hf's message. */
static void save_hf(const char *dir, const tr_recipe *r, const tm_model *m, const char *pj, long step,
                    const char *tok_json) {
    char err[1024];
    int rc = tr_save_hf(dir, r, m, pj, step, tok_json, err, sizeof err);
    if (rc == UTIL_ERR_USAGE) die_usage("%s", err);
    if (rc) die_data(NULL, "%s", err);
}

int main(int argc, char **argv) {
    cli_init("train");
    opts o;
    parse_args(argc, argv, &o);
    tr_recipe r;
    char err[1024];
    if (tr_recipe_load(&r, o.config, err, sizeof err)) die_data(o.config, "%s", err);
    if (o.seed >= 0) r.seed = o.seed;
    long steps = o.steps >= 0 ? o.steps : !strcmp(o.profile, "full") ? r.steps_full : r.steps_quick;
    if (o.threads) omp_set_num_threads((int)o.threads);
    check_memory(&r, o.config);
    int B = (int)r.batch, T = r.m.ctx, Te = (int)r.eval_context;

    prov *p = prov_new();
    size_t clen;
    unsigned char *ctext = cli_slurp(o.config, &clen);
    prov_input_buf(p, o.config, ctext, clen);
    free(ctext);
    corpus tr, val;
    load_corpus(&tr, o.train, T, p);
    load_corpus(&val, o.valid, Te, p);
    bpe_vocab bpe = {0};
    char *tok_json;
    if (r.bpe_merges > 0) {
        double learn_secs;
        tok *tk = learn_vocabulary(&r, &tr, o.train, &bpe, &tok_json, &learn_secs);
        tokenize_corpus(&tr, o.train, T, tk, &bpe);
        tokenize_corpus(&val, o.valid, Te, tk, &bpe);
        tok_free(tk);
        if (r.synthetic_share > 0) check_no_triggers(&tr, o.train, &r.synth);
        r.m.vocab = bpe.n_ids;
        fprintf(stderr, "train: %s: %d BPE merges learned (of %ld) in %.2f s, vocabulary %d\n", r.name, bpe.n_merges,
                r.bpe_merges, learn_secs, bpe.n_ids);
        fprintf(stderr, "train: %s: training text %zu tokens (%.3f bytes/token), validation text %zu tokens (%.3f bytes/token)\n",
                r.name, tr.n_ids, (double)tr.len / (double)tr.n_ids, val.n_ids, (double)val.len / (double)val.n_ids);
    } else {
        if (r.synthetic_share > 0) check_no_triggers(&tr, o.train, &r.synth);
        tok_json = tokenizer_json(r.m.family, NULL);
    }
    if (r.synthetic_share > 0 && r.synth.carrier == TR_CARRIER_BIGRAM) tr.chain = build_chain(&tr, r.m.vocab);
    recipe_prov(&r, p);
    if (r.bpe_merges > 0) prov_opt_int(p, "bpe_merges_learned", bpe.n_merges);
    prov_opt_str(p, "profile", o.profile);
    prov_opt_int(p, "steps", steps);
    /* threads is not recorded: it cannot change a bit of any output (docs/TRAIN.md, Determinism) */
    prov_opt_int(p, "log_every", o.log_every);
    prov_opt_int(p, "checkpoints", o.checkpoints);
    char *pj = prov_json(p);

    tm_model m;
    tm_model_init(&m, &r.m);
    tm_model_randomize(&m, (unsigned long)r.seed);
    tm_acts *a = tm_acts_new(&r.m, B, T), *ae = Te == T ? a : tm_acts_new(&r.m, B, Te);
    int Ts = r.short_context ? (int)r.short_context : T, Bs = (int)((long)B * T / Ts);
    long short_steps = r.short_context ? lround(r.short_context_share * (double)steps) : 0;
    tm_acts *as = short_steps > 0 ? tm_acts_new(&r.m, Bs, Ts) : a;
    adamw opt = {xcalloc(m.n_params, sizeof(float)), xcalloc(m.n_params, sizeof(float)), 0};
    eval_result ev = {0, 0, xcalloc((size_t)r.m.n_layer * r.m.n_head, sizeof(double))};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)r.seed);
    gsl_rng *srng = gsl_rng_alloc(gsl_rng_mt19937);   /* synthetic windows: the text stream stays as without */
    gsl_rng_set(srng, (unsigned long)r.seed + 1000003UL);
    long synth_windows = 0;
    int32_t *ids = xmalloc(sizeof(int32_t) * (size_t)B * T), *tg = xmalloc(sizeof(int32_t) * (size_t)B * T);

    strbuf log = {0};
    sb_printf(&log, "step\ttokens\tlr\ttrain_loss\tval_loss\tsink_mean\tsink_max\tsink_sd\tsink03_ge1\tsink08_ge1\n");
    char label[160];
    snprintf(label, sizeof label, "train %s", r.name);
    progress pg;
    progress_begin(&pg, label, "steps", (double)steps);
    double window_loss = 0, last_loss = NAN, t0 = cli_now(), t_train = 0, c0 = (double)clock() / CLOCKS_PER_SEC;
    long nwin = 0;
    if (tr_mkdirs(o.out, err, sizeof err)) die_data(o.out, "%s", err);
    for (long step = 0;; step++) {
        if (is_checkpoint(step, steps)) {
            evaluate(&m, ae, B, Te, &val, r.eval_windows, (unsigned long)r.seed, &ev);
            sink_summary ss = summarize_sinks(ev.sink, r.m.n_layer, r.m.n_head);
            sb_printf(&log, "%ld\t%ld\t-\t-\t%.6f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\n", step, step * B * T, ev.loss,
                      ss.mean, ss.max, ss.sd, ss.upper03, ss.upper08);
            write_tsv(o.out, "train-log.tsv", pj, &log);   /* so long runs can be watched */
            if (o.checkpoints) {
                char dir[4096];
                snprintf(dir, sizeof dir, "%s/checkpoints/step-%06ld", o.out, step);
                save_hf(dir, &r, &m, pj, step, tok_json);
            }
        }
        if (step == steps) break;
        double ts = cli_now();
        /* the short phase keeps the tokens per update: B·T/Ts windows of Ts tokens */
        int short_phase = step < short_steps, Bn = short_phase ? Bs : B, Tn = short_phase ? Ts : T;
        synth_windows += fill_batch(&r, &tr, Bn, Tn, rng, srng, ids, tg);
        double loss = tm_forward(&m, short_phase ? as : a, ids, tg);
        if (!isfinite(loss))   /* every later update would be NaN too */
            die_data(o.config, "step %ld of %ld: the training loss is %s (not finite); lower lr or check the recipe",
                     step + 1, steps, isnan(loss) ? "NaN" : loss > 0 ? "+Inf" : "-Inf");
        memset(m.g, 0, m.n_params * sizeof *m.g);
        tm_backward(&m, short_phase ? as : a, ids, tg);
        double lr = lr_at(&r, step, steps);
        adamw_step(&opt, &m, &r, lr);
        t_train += cli_now() - ts;
        window_loss += loss;
        nwin++;
        if ((step + 1) % o.log_every == 0 || step + 1 == steps) {
            last_loss = window_loss / nwin;
            sb_printf(&log, "%ld\t%ld\t%.6g\t%.6f\t-\t-\t-\t-\t-\t-\n", step + 1, (step + 1) * B * T, lr, last_loss);
            window_loss = 0;
            nwin = 0;
        }
        snprintf(label, sizeof label, "train %s loss %.3f", r.name, loss);
        progress_update(&pg, (double)(step + 1));
    }
    progress_end(&pg);
    double secs = cli_now() - t0;
    save_hf(o.out, &r, &m, pj, steps, tok_json);
    write_tsv(o.out, "train-log.tsv", pj, &log);
    long eval_tokens = r.eval_windows * Te;
    report(o.out, pj, &r.m, &ev, last_loss, steps, steps * B * T, synth_windows, m.n_params, eval_tokens,
           r.bpe_merges > 0 ? &bpe : NULL);
    char units[96] = "nats/byte";
    if (r.bpe_merges > 0)
        snprintf(units, sizeof units, "nats/token, %.4f nats/byte (%.3f bytes/token)", nats_per_byte(&ev, eval_tokens),
                 ev.bytes / (double)eval_tokens);
    fprintf(stderr, "train: %s: %ld steps, %.1f s, %.1f s CPU (%.1f s in updates: %.0f tokens/s), val loss %.4f %s\n",
            r.name, steps, secs, (double)clock() / CLOCKS_PER_SEC - c0, t_train,
            t_train > 0 ? (double)steps * B * T / t_train : 0, ev.loss, units);

    sb_free(&log);
    gsl_rng_free(rng);
    gsl_rng_free(srng);
    free(ids);
    free(tg);
    free(ev.sink);
    free(opt.m);
    free(opt.v);
    if (ae != a) tm_acts_free(ae);
    if (as != a) tm_acts_free(as);
    tm_acts_free(a);
    tm_model_free(&m);
    free(pj);
    prov_free(p);
    free((void *)tr.text);
    free((void *)val.text);
    free(tr.ids);
    free(val.ids);
    if (tr.chain) tr_bigram_free(tr.chain);
    free(tr.chain);
    free(tok_json);
    bpe_vocab_free(&bpe);
    return 0;
}

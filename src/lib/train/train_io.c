/* train_io: recipe files and Hugging Face directories for `train` (see train_io.h). */
#include "train_io.h"
#include "core/util.h"
#include "io/stwrite.h"
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------- recipes */

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

/* Where a recipe is being read, and the caller's buffer for what is wrong there. */
typedef struct {
    const char *path;
    int ln;
    char *err;
    size_t errlen;
} recipe_at;

static int fail(const recipe_at *at, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const recipe_at *at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(at->err, at->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int num(const recipe_at *at, const char *key, const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *trim(end) || !(x >= lo && x <= hi))
        return fail(at, "line %d: %s = %s: want a number in [%g, %g]", at->ln, key, v, lo, hi);
    *out = x;
    return 0;
}

static int inum(const recipe_at *at, const char *key, const char *v, long lo, long hi, long *out) {
    double x;
    if (num(at, key, v, (double)lo, (double)hi, &x)) return -1;
    if (x != (double)(long)x) return fail(at, "line %d: %s = %s: want an integer", at->ln, key, v);
    *out = (long)x;
    return 0;
}

/* Defaults for everything but the architecture; the comments in configs/ say why. */
static void recipe_defaults(tr_recipe *r) {
    memset(r, 0, sizeof *r);
    r->m.family = -1;
    r->m.vocab = TR_VOCAB;
    r->m.ctx = 128;
    r->m.norm_eps = 1e-5;
    r->m.rope_theta = 10000;
    r->m.pos = -1;   /* the family's own: gpt2 learned, llama rope */
    r->lr = 3e-3;
    r->min_lr_ratio = 0.1;
    r->warmup = 50;
    r->weight_decay = 0.1;
    r->beta1 = 0.9;
    r->beta2 = 0.95;
    r->adam_eps = 1e-8;
    r->grad_clip = 1.0;
    r->batch = 16;
    r->seed = 1;
    r->eval_windows = 64;
    r->short_context_share = 0.5;
    r->synth = (tr_synth){TR_SYNTH_BACKCOPY, 0.05, 4, 3, TR_CARRIER_TEXT};
}

/* The numeric keys: 1 when k is one of them (-1 when its value is bad), else 0. */
static int set_number(tr_recipe *r, const recipe_at *at, const char *k, const char *v) {
    tm_config *m = &r->m;
    long l;
#define INT(key, dst, lo, hi) if (!strcmp(k, key)) { if (inum(at, k, v, lo, hi, &l)) return -1; dst = (int)l; return 1; }
#define LNG(key, dst, lo, hi) if (!strcmp(k, key)) return inum(at, k, v, lo, hi, &dst) ? -1 : 1;
#define DBL(key, dst, lo, hi) if (!strcmp(k, key)) return num(at, k, v, lo, hi, &dst) ? -1 : 1;
    INT("layers", m->n_layer, 1, 64)
    INT("d_model", m->d_model, 2, 8192)
    INT("heads", m->n_head, 1, 256)
    INT("kv_heads", m->n_kv_head, 1, 256)
    INT("head_dim", m->head_dim, 2, 1024)
    INT("d_ff", m->d_ff, 1, 65536)
    INT("context", m->ctx, 2, 4096)
    DBL("norm_eps", m->norm_eps, 1e-12, 1)
    DBL("rope_theta", m->rope_theta, 1, 1e9)
    DBL("lr", r->lr, 0, 10)
    DBL("min_lr_ratio", r->min_lr_ratio, 0, 1)
    DBL("warmup", r->warmup, 0, 1e9)
    DBL("weight_decay", r->weight_decay, 0, 10)
    DBL("beta1", r->beta1, 0, 1)
    DBL("beta2", r->beta2, 0, 1)
    DBL("adam_eps", r->adam_eps, 0, 1)
    DBL("grad_clip", r->grad_clip, 0, 1e9)
    LNG("batch", r->batch, 1, 4096)
    LNG("steps_full", r->steps_full, 0, 100000000)
    LNG("steps_quick", r->steps_quick, 0, 100000000)
    LNG("seed", r->seed, 0, 4294967295L)
    LNG("eval_windows", r->eval_windows, 1, 100000)
    LNG("eval_context", r->eval_context, 2, 4096)
    LNG("short_context", r->short_context, 4, 4096)
    DBL("short_context_share", r->short_context_share, 0, 1)
    DBL("synthetic_share", r->synthetic_share, 0, 1)
    DBL("synthetic_rate", r->synth.rate, 0, 0.5)
    INT("synthetic_triggers", r->synth.triggers, 1, 64)
    INT("synthetic_rules", r->synth.rules, 1, TR_SYNTH_MAX_RULES)
    DBL("rope_ntk_factor", r->rope_ntk_factor, 1, 1e6)
    LNG("bpe_merges", r->bpe_merges, 0, 32000)
#undef INT
#undef LNG
#undef DBL
    return 0;
}

/* 1 when k is a recipe key and v was stored, 0 when k is unknown, -1 when v is bad. */
static int set_key(tr_recipe *r, const recipe_at *at, const char *k, const char *v) {
    tm_config *m = &r->m;
    int ln = at->ln;
    int isnum = set_number(r, at, k, v);
    if (isnum) return isnum;
    if (!strcmp(k, "name")) {
        snprintf(r->name, sizeof r->name, "%s", v);
        return 1;
    }
    /* Keys the pipeline reads (pipelines/models.mk, regime.mk); they do not affect training. */
    if (!strcmp(k, "role") || !strcmp(k, "input")) return 1;
    if (!strcmp(k, "kind")) {
        if (strcmp(v, "trained")) return fail(at, "line %d: kind = %s: train only makes kind = trained", ln, v);
        return 1;
    }
    if (!strcmp(k, "synthetic_task")) {
        for (int task = TR_SYNTH_BACKCOPY; task <= TR_SYNTH_DEPTHS; task++)
            if (!strcmp(v, tr_synth_task_name(task))) return r->synth.task = task, 1;
        return fail(at, "line %d: synthetic_task = %s: want backcopy, recall, mixed or depths", ln, v);
    }
    if (!strcmp(k, "synthetic_carrier")) {
        for (int c = TR_CARRIER_TEXT; c <= TR_CARRIER_BIGRAM; c++)
            if (!strcmp(v, tr_synth_carrier_name(c))) return r->synth.carrier = c, 1;
        return fail(at, "line %d: synthetic_carrier = %s: want text or bigram", ln, v);
    }
    if (!strcmp(k, "pos")) {
        m->pos = posenc_parse(v);
        if (m->pos < 0) return fail(at, "line %d: pos = %s: want " POSENC_CHOICES, ln, v);
        return 1;
    }
    if (!strcmp(k, "family")) {
        if (!strcmp(v, "gpt2")) m->family = TM_GPT2;
        else if (!strcmp(v, "llama")) m->family = TM_LLAMA;
        else if (!strcmp(v, "bert")) m->family = TM_BERT;
        else return fail(at, "line %d: family = %s: want gpt2, llama or bert", ln, v);
        m->vocab = m->family == TM_BERT ? TR_VOCAB_BERT : TR_VOCAB;
        snprintf(r->family, sizeof r->family, "%s", v);
        return 1;
    }
    return 0;
}

/* The line of each key seen so far: a repeated key is an error (the last value used to win
 * silently). */
typedef struct { char key[64]; int line; } key_line;
enum { MAX_KEYS = 128 };

static int note_key(key_line *seen, int *n, const recipe_at *at, const char *k) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(seen[i].key, k))
            return fail(at, "line %d: key %s repeats line %d (each key once)", at->ln, k, seen[i].line);
    if (*n < MAX_KEYS && strlen(k) < sizeof seen->key) {
        snprintf(seen[*n].key, sizeof seen->key, "%s", k);
        seen[(*n)++].line = at->ln;
    }
    return 0;
}

static int line_of(const key_line *seen, int n, const char *k) {
    for (int i = 0; i < n; i++)
        if (!strcmp(seen[i].key, k)) return seen[i].line;
    return 0;
}

/* AdamW divides by 1 − beta^t: beta1 = 1 or beta2 = 1 makes every update 0/0 (an all-NaN model). */
static int check_betas(const tr_recipe *r, const recipe_at *at, const key_line *seen, int n) {
    if (r->beta1 >= 1)
        return fail(at, "line %d: beta1 = %g: want a number in [0, 1) (AdamW divides by 1 - beta1^t)",
                    line_of(seen, n, "beta1"), r->beta1);
    if (r->beta2 >= 1)
        return fail(at, "line %d: beta2 = %g: want a number in [0, 1) (AdamW divides by 1 - beta2^t)",
                    line_of(seen, n, "beta2"), r->beta2);
    return 0;
}

/* The key = value lines of text (comments cut), into r. */
static int parse_lines(tr_recipe *r, char *text, recipe_at *at, key_line *seen, int *nseen) {
    /* strtok_r would skip empty lines and misnumber the lines after them */
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        at->ln++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *s = trim(line);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) return fail(at, "line %d: want key = value", at->ln);
        *eq = 0;
        char *k = trim(s), *v = trim(eq + 1);
        int known = set_key(r, at, k, v);
        if (known < 0) return -1;
        if (!known) return fail(at, "line %d: unknown key %s", at->ln, k);
        if (note_key(seen, nseen, at, k)) return -1;
    }
    return 0;
}

/* What the keys leave to derive (kv_heads, head_dim, eval_context, pos, name) and the checks
 * across keys. */
static int complete(tr_recipe *r, const recipe_at *at) {
    const char *path = at->path;
    tm_config *m = &r->m;
    if (m->family < 0) return fail(at, "family missing (gpt2, llama or bert)");
    if (m->family == TM_BERT && r->synthetic_share > 0)
        return fail(at, "synthetic_share is for the causal families, not bert");
    if (m->family == TM_BERT && r->bpe_merges > 0) return fail(at, "bpe_merges is for the causal families, not bert");
    if (!m->n_layer || !m->d_model || !m->n_head || !m->d_ff) return fail(at, "layers, d_model, heads and d_ff are required");
    if (!m->n_kv_head) m->n_kv_head = m->n_head;
    if (!m->head_dim) {
        if (m->d_model % m->n_head) return fail(at, "d_model is not a multiple of heads; give head_dim");
        m->head_dim = m->d_model / m->n_head;
    }
    if (!r->eval_context) r->eval_context = m->ctx;
    if (r->eval_context > m->ctx) return fail(at, "eval_context = %ld is larger than context = %d", r->eval_context, m->ctx);
    if (r->short_context && (r->short_context >= m->ctx || m->ctx % r->short_context))
        return fail(at, "short_context = %ld: want a divisor of context = %d below it", r->short_context, m->ctx);
    if (m->pos < 0) m->pos = m->family == TM_LLAMA ? POS_ROPE : POS_LEARNED;
    if (m->pos == POS_ROPE_NTK && r->rope_ntk_factor == 0) return fail(at, "pos = rope-ntk needs rope_ntk_factor");
    if (m->pos != POS_ROPE_NTK && r->rope_ntk_factor != 0)
        return fail(at, "rope_ntk_factor is only used with pos = rope-ntk (pos = %s)", posenc_name(m->pos));
    const char *why = tm_config_problem(m);
    if (why) return fail(at, "%s", why);
    r->rope_base = m->rope_theta;
    if (m->pos == POS_ROPE_NTK) m->rope_theta = posenc_ntk_theta(r->rope_base, r->rope_ntk_factor, m->head_dim);
    if (!r->name[0]) {
        const char *b = strrchr(path, '/');
        snprintf(r->name, sizeof r->name, "%s", b ? b + 1 : path);
        char *dot = strrchr(r->name, '.');
        if (dot) *dot = 0;
    }
    return 0;
}

int tr_recipe_load(tr_recipe *r, const char *path, char *err, size_t errlen) {
    recipe_defaults(r);
    size_t len;
    char *text = cli_slurp_text_err(path, &len, err, errlen);
    if (!text) return -1;
    recipe_at at = {path, 0, err, errlen};
    int nseen = 0;
    key_line seen[MAX_KEYS];
    int rc = parse_lines(r, text, &at, seen, &nseen);
    free(text);
    if (rc) return -1;
    if (check_betas(r, &at, seen, nseen)) return -1;
    return complete(r, &at);
}

/* Floats of tm_acts_new(c, B, T) (train_model.c), to within a few per token. */
static double acts_floats(const tm_config *c, long vocab, double B, double T, int threads) {
    double N = B * T, d = c->d_model, f = c->d_ff, hq = (double)c->n_head * c->head_dim;
    double W = (double)(c->n_head + 2 * c->n_kv_head) * c->head_dim;
    double layer = N * (5 * d + W + hq + 3 * f + 6) + B * c->n_head * T * T;
    double rest = N * (11 * d + (double)vocab + W + hq + 3 * f + 8) + (double)threads * T * T + T * c->head_dim;
    return c->n_layer * layer + rest;
}

double tr_recipe_bytes(const tr_recipe *r, int threads) {
    const tm_config *c = &r->m;
    double vocab = (double)c->vocab + (double)(r->bpe_merges > 0 ? r->bpe_merges : 0);
    double d = c->d_model, f = c->d_ff, hq = (double)c->n_head * c->head_dim, ctx = c->ctx;
    double W = (double)(c->n_head + 2 * c->n_kv_head) * c->head_dim;
    /* embeddings (an untied head counted too), positions, per layer the projections, the MLP's
     * up to three matrices and the norms and biases; BERT's transform */
    double params = 2 * vocab * d + ctx * d + d * d + 8 * d + c->n_layer * (d * W + hq * d + 3 * d * f + W + f + 16 * d);
    double floats = 4 * params + acts_floats(c, (long)vocab, (double)r->batch, ctx, threads);
    if (r->eval_context != c->ctx) floats += acts_floats(c, (long)vocab, (double)r->batch, (double)r->eval_context, threads);
    if (r->short_context)
        floats += acts_floats(c, (long)vocab, (double)r->batch * ctx / (double)r->short_context,
                              (double)r->short_context, threads);
    return floats * sizeof(float);
}

/* ---------------------------------------------------------------- Hugging Face directories */

int tr_mkdirs(const char *dir, char *err, size_t errlen) {
    char *p = xstrdup(dir);
    for (char *s = p + 1;; s++) {
        int end = *s == 0;
        if (*s == '/' || end) {
            *s = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "cannot create directory: %s", strerror(errno));
                free(p);
                return -1;
            }
            if (end) break;
            *s = '/';
        }
    }
    free(p);
    return 0;
}

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 bytes in
 * increasing order to U+0100 onwards. Writes the UTF-8 of byte b's symbol into out. */
static void byte_symbol(int b, char out[4]) {
    int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    int cp = b;
    if (!printable) {
        int k = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF))) k++;
        cp = 0x100 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
    }
}

static json_t *special_token(int id, const char *content) {
    return json_pack("{s:i,s:s,s:b,s:b,s:b,s:b,s:b}", "id", id, "content", content, "single_word", 0, "lstrip", 0,
                     "rstrip", 0, "normalized", 0, "special", 1);
}

/* BERT's post-processor: [CLS] $A [SEP] (pairs: [CLS] $A [SEP] $B [SEP], type ids 0 and 1). */
static json_t *bert_template(void) {
    json_t *t = json_pack("{s:s,s:[{s:{s:s,s:i}},{s:{s:s,s:i}},{s:{s:s,s:i}}],"
                          "s:[{s:{s:s,s:i}},{s:{s:s,s:i}},{s:{s:s,s:i}},{s:{s:s,s:i}},{s:{s:s,s:i}}],"
                          "s:{s:{s:s,s:[i],s:[s]},s:{s:s,s:[i],s:[s]}}}",
                          "type", "TemplateProcessing",
                          "single", "SpecialToken", "id", "[CLS]", "type_id", 0, "Sequence", "id", "A", "type_id", 0,
                          "SpecialToken", "id", "[SEP]", "type_id", 0,
                          "pair", "SpecialToken", "id", "[CLS]", "type_id", 0, "Sequence", "id", "A", "type_id", 0,
                          "SpecialToken", "id", "[SEP]", "type_id", 0, "Sequence", "id", "B", "type_id", 1,
                          "SpecialToken", "id", "[SEP]", "type_id", 1,
                          "special_tokens", "[CLS]", "id", "[CLS]", "ids", TR_CLS, "tokens", "[CLS]",
                          "[SEP]", "id", "[SEP]", "ids", TR_SEP, "tokens", "[SEP]");
    return t;   /* NULL only if the template above were malformed */
}

/* A token's bytes in the byte-to-unicode spelling (malloc'd). */
static char *token_symbols(const char *s, size_t n) {
    char *out = xmalloc(2 * n + 1), sym[4];
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        byte_symbol((unsigned char)s[i], sym);
        for (char *c = sym; *c; c++) out[o++] = *c;
    }
    out[o] = 0;
    return out;
}

/* The learned tokens into vocab, and merges as HF writes them: [["Ġ", "t"], ...] in rank order. */
static json_t *bpe_merges_json(const bpe_vocab *bpe, json_t *vocab) {
    for (int id = BPE_FIRST_ID; id < bpe->n_ids; id++) {
        char *sym = token_symbols(bpe->piece[id], bpe->plen[id]);
        json_object_set_new(vocab, sym, json_integer(id));
        free(sym);
    }
    json_t *merges = json_array();
    for (int k = 0; k < bpe->n_merges; k++) {
        char *a = token_symbols(bpe->piece[bpe->left[k]], bpe->plen[bpe->left[k]]);
        char *b = token_symbols(bpe->piece[bpe->right[k]], bpe->plen[bpe->right[k]]);
        json_array_append_new(merges, json_pack("[s,s]", a, b));
        free(a);
        free(b);
    }
    return merges;
}

char *tr_tokenizer_json(int family, const bpe_vocab *bpe, char *err, size_t errlen) {
    json_t *vocab = json_object();
    for (int b = 0; b < 256; b++) {
        char sym[4];
        byte_symbol(b, sym);
        json_object_set_new(vocab, sym, json_integer(b));
    }
    json_t *added = json_array();
    if (family == TM_BERT) {
        json_array_append_new(added, special_token(TR_PAD, "[PAD]"));
        json_array_append_new(added, special_token(TR_CLS, "[CLS]"));
        json_array_append_new(added, special_token(TR_SEP, "[SEP]"));
        json_array_append_new(added, special_token(TR_MASK, "[MASK]"));
    } else {
        json_array_append_new(added, special_token(TR_BOS, "<|bos|>"));
    }
    json_t *model = json_pack("{s:s,s:n,s:n,s:n,s:n,s:b,s:b,s:b,s:o,s:[]}", "type", "BPE", "dropout", "unk_token",
                              "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk", 0, "byte_fallback", 0,
                              "ignore_merges", 0, "vocab", vocab, "merges");
    json_t *t = json_pack("{s:s,s:n,s:n,s:o,s:n,s:{s:s,s:b,s:b,s:b},s:n,s:{s:s,s:b,s:b,s:b},s:o}", "version", "1.0",
                          "truncation", "padding", "added_tokens", added, "normalizer", "pre_tokenizer", "type",
                          "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 0, "post_processor",
                          "decoder", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 0,
                          "model", model);
    if (!t) {
        snprintf(err, errlen, "internal error: tokenizer.json template");
        return NULL;
    }
    if (family == TM_BERT) {
        json_t *post = bert_template();
        if (!post) {
            json_decref(t);
            snprintf(err, errlen, "internal error: bert post-processor template");
            return NULL;
        }
        json_object_set_new(t, "post_processor", post);
    }
    if (bpe) {
        json_object_set_new(model, "merges", bpe_merges_json(bpe, vocab));
        json_object_set_new(json_object_get(t, "pre_tokenizer"), "use_regex", json_true());
        json_object_set_new(json_object_get(t, "decoder"), "use_regex", json_true());
    }
    char *s = json_dumps(t, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(t);
    return s;
}

/* What a non-default position encoding adds to config.json (docs/TRAIN.md, "Position encodings").
 * Hugging Face itself reads rope_theta (so rope-ntk on Llama loads in HF as trained: the scaled
 * base is the base) and wpe.weight (sinusoidal on GPT-2: the fixed table is stored there);
 * attncoda_position_encoding is what it cannot express and src/lib/model/model_hf.c reads. The family's
 * own encoding adds nothing, so those files keep their bytes. */
static void set_position_keys(json_t *c, const tr_recipe *r) {
    const tm_config *m = &r->m;
    if (m->pos == (m->family == TM_LLAMA ? POS_ROPE : POS_LEARNED)) return;
    json_object_set_new(c, "attncoda_position_encoding", json_string(posenc_name(m->pos)));
    if (m->pos == POS_ROPE || m->pos == POS_ROPE_NTK) json_object_set_new(c, "rope_theta", json_real(m->rope_theta));
    if (m->pos == POS_ROPE_NTK) {
        json_object_set_new(c, "attncoda_rope_base_theta", json_real(r->rope_base));
        json_object_set_new(c, "attncoda_rope_ntk_factor", json_real(r->rope_ntk_factor));
    }
}

static char *config_json(const tr_recipe *r, const char *prov_json, long step) {
    const tm_config *m = &r->m;
    json_t *c;
    if (m->family == TM_BERT) {
        c = json_pack("{s:[s],s:s,s:i,s:i,s:i,s:i,s:i,s:s,s:f,s:f,s:i,s:i,s:f,s:f,s:i,s:s,s:b}",
                      "architectures", "BertForMaskedLM", "model_type", "bert", "vocab_size", m->vocab,
                      "hidden_size", m->d_model, "num_hidden_layers", m->n_layer, "num_attention_heads", m->n_head,
                      "intermediate_size", m->d_ff, "hidden_act", "gelu", "hidden_dropout_prob", 0.0,
                      "attention_probs_dropout_prob", 0.0, "max_position_embeddings", m->ctx, "type_vocab_size", 2,
                      "initializer_range", 0.02, "layer_norm_eps", m->norm_eps, "pad_token_id", TR_PAD,
                      "position_embedding_type", "absolute", "tie_word_embeddings", 1);
        if (c) {   /* not BertConfig keys: which ids the special tokens have (tokenizer.json has them too) */
            json_object_set_new(c, "attncoda_cls_token_id", json_integer(TR_CLS));
            json_object_set_new(c, "attncoda_sep_token_id", json_integer(TR_SEP));
            json_object_set_new(c, "attncoda_mask_token_id", json_integer(TR_MASK));
        }
    } else if (m->family == TM_GPT2) {
        c = json_pack("{s:[s],s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:f,s:b,s:b,s:b,s:b,s:f,s:f,s:f,s:i,s:i}",
                      "architectures", "GPT2LMHeadModel", "model_type", "gpt2", "vocab_size", m->vocab,
                      "n_positions", m->ctx, "n_ctx", m->ctx, "n_embd", m->d_model, "n_layer", m->n_layer,
                      "n_head", m->n_head, "n_inner", m->d_ff, "activation_function", "gelu_new",
                      "layer_norm_epsilon", m->norm_eps, "scale_attn_weights", 1,
                      "scale_attn_by_inverse_layer_idx", 0, "reorder_and_upcast_attn", 0, "tie_word_embeddings", 1,
                      "resid_pdrop", 0.0, "embd_pdrop", 0.0, "attn_pdrop", 0.0, "bos_token_id", TR_BOS,
                      "eos_token_id", TR_BOS);
    } else {
        c = json_pack("{s:[s],s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:f,s:f,s:n,s:i,s:b,s:b,s:b,s:i,s:i}",
                      "architectures", "LlamaForCausalLM", "model_type", "llama", "vocab_size", m->vocab,
                      "hidden_size", m->d_model, "intermediate_size", m->d_ff, "num_hidden_layers", m->n_layer,
                      "num_attention_heads", m->n_head, "num_key_value_heads", m->n_kv_head, "head_dim",
                      m->head_dim, "hidden_act", "silu", "rms_norm_eps", m->norm_eps, "rope_theta", m->rope_theta,
                      "rope_scaling", "max_position_embeddings", m->ctx, "attention_bias", 0, "mlp_bias", 0,
                      "tie_word_embeddings", 0, "bos_token_id", TR_BOS, "eos_token_id", TR_BOS);
    }
    if (!c) return NULL;   /* only if a template above were malformed */
    set_position_keys(c, r);
    json_object_set_new(c, "torch_dtype", json_string("float32"));
    json_object_set_new(c, "attncoda_step", json_integer(step));
    json_object_set_new(c, "attncoda_provenance", json_string(prov_json));
    char *s = json_dumps(c, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(c);
    return s;
}

static char *join(const char *dir, const char *file) {
    size_t n = strlen(dir) + strlen(file) + 2;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%s", dir, file);
    return p;
}

/* One text file of dir; on failure err names the file. */
static int write_text(const char *dir, const char *name, const char *text, size_t len, char *err, size_t errlen) {
    char *p = join(dir, name);
    const char *file;
    int rc = cli_write_bytes_err(p, text, len, &file, err, errlen);
    if (rc == UTIL_ERR_DATA) cli_err_prefix(err, errlen, file);
    free(p);
    return rc;
}

/* The weights; float weights go out as they are, tensor shapes from the layout table. */
static int write_weights(const char *dir, const tm_model *m, const char *prov_json, long step, char *err,
                         size_t errlen) {
    st_writer *w = st_write_new();
    for (int i = 0; i < m->nt; i++)
        st_write_add_f32(w, m->t[i].name, m->w + m->t[i].off, m->t[i].ndim, m->t[i].shape);
    if (m->pos_tab) {   /* the fixed sinusoidal table, where the learned one would be */
        int64_t shape[2] = {m->c.ctx, m->c.d_model};
        const char *name = m->c.family == TM_GPT2   ? "wpe.weight"
                           : m->c.family == TM_BERT ? "bert.embeddings.position_embeddings.weight"
                                                    : "model.embed_positions.weight";
        st_write_add_f32(w, name, m->pos_tab, 2, shape);
    }
    st_write_meta(w, "provenance", prov_json);
    char stepbuf[32];
    snprintf(stepbuf, sizeof stepbuf, "%ld", step);
    st_write_meta(w, "attncoda_step", stepbuf);
    char *p = join(dir, "model.safetensors");
    int rc = st_write_finish(w, p, err, errlen);
    if (rc == UTIL_ERR_DATA) cli_err_prefix(err, errlen, p);
    free(p);
    return rc;
}

int tr_save_hf(const char *dir, const tr_recipe *r, const tm_model *m, const char *prov_json, long step,
               const char *tokenizer_json, char *err, size_t errlen) {
    if (tr_mkdirs(dir, err, errlen)) {
        cli_err_prefix(err, errlen, dir);
        return UTIL_ERR_DATA;
    }
    char *cj = config_json(r, prov_json, step);
    if (!cj) {
        snprintf(err, errlen, "internal error: config.json template");
        return UTIL_ERR_USAGE;
    }
    size_t cl = strlen(cj);
    cj = xrealloc(cj, cl + 2);
    strcpy(cj + cl, "\n");
    int rc = write_text(dir, "config.json", cj, cl + 1, err, errlen);
    free(cj);
    if (!rc) rc = write_text(dir, "tokenizer.json", tokenizer_json, strlen(tokenizer_json), err, errlen);
    if (!rc) rc = write_weights(dir, m, prov_json, step, err, errlen);
    return rc;
}

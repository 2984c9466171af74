/* model_hf: a Hugging Face model directory (config.json + safetensors) → model. Follows
 * docs/FAMILIES.md: config defaults per family (§3–§8), old and new RoPE spellings (§1, §2), name
 * prefixes (§1) and layouts (GPT-2 Conv1D transposed, NeoX fused QKV de-interleaved). Every weight
 * ends up float32 [out, in]. */
#include <jansson.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/detmath.h"
#include "model.h"
#include "posenc.h"
#include "io/safetensors.h"
#include "core/gemm_half.h"

typedef struct {
    st_set *st;
    void **owned;
    int nowned;
    const float **views;       /* F16/BF16 matrices kept in the mapping (gemm_half.h) */
    int nviews;
    float *inv_freq;
    model_layer *layers;
} hf_state;

/* Loading context: the config, the tensor set, the prefix in use and the first error. */
typedef struct {
    int keep_half;             /* set by mat(): the tensor may stay F16/BF16 */
    json_t *cfg;
    st_set *st;
    hf_state *hs;
    const char *prefix;
    char *err;
    size_t errlen;
    int failed;
    char dir[3584];
} hf_ctx;

static void ctx_fail(hf_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ctx_fail(hf_ctx *c, const char *fmt, ...) {
    if (c->failed) return;
    c->failed = 1;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s: %s", c->dir, msg);
}

/* ---- config.json ------------------------------------------------------------------------- */

/* config.json numbers are integers unless the key names a real quantity: callers cast integer keys
 * to int, so cfg_check makes sure that such a value (or the default standing in for it) is an integer
 * that fits. Flags (tie_word_embeddings, _remove_final_layer_norm, ...) are read by cfg_flag, never
 * here, so a boolean where a number belongs is refused by name. */
static const char *const REAL_KEY_WORDS[] = {"eps", "theta", "factor", "pct", "rotary_emb_base", "scal",
                                             "softcap", "multiplier", "fraction", "ratio", "dropout", "pdrop",
                                             "range", "coef", "temperature"};

static int is_real_key(const char *k) {
    for (size_t i = 0; i < sizeof REAL_KEY_WORDS / sizeof REAL_KEY_WORDS[0]; i++)
        if (strstr(k, REAL_KEY_WORDS[i])) return 1;
    return 0;
}

/* x as the value of key k (from the file, or its default when from_file is 0). */
static double cfg_check(hf_ctx *c, const char *k, double x, int from_file) {
    const char *src = from_file ? "" : " (default)";
    if (is_real_key(k)) {
        if (strstr(k, "eps") && !(x > 0 && x < 1)) {
            ctx_fail(c, "config.json: '%s' = %g%s must be in (0, 1)", k, x, src);
            return 1e-5;
        }
        return x;
    }
    long long v;
    char why[128];
    if (cli_num_to_ll(x, -INT_MAX, INT_MAX, &v, why, sizeof why)) {
        ctx_fail(c, "config.json: '%s'%s: %s", k, src, why);
        return 0;
    }
    return (double)v;
}

/* First present numeric key of a NULL-terminated list in obj; def when none. null counts as
 * absent (GPT-2's n_inner: null). */
static double cfg_num_in(hf_ctx *c, json_t *obj, double def, const char *key, ...) {
    va_list ap;
    va_start(ap, key);
    for (const char *k = key; k; k = va_arg(ap, const char *)) {
        json_t *v = obj ? json_object_get(obj, k) : NULL;
        if (!v || json_is_null(v)) continue;
        va_end(ap);
        if (json_is_number(v)) return cfg_check(c, k, json_number_value(v), 1);
        ctx_fail(c, "config.json: '%s' is %s, expected a number", k, json_is_boolean(v) ? "a boolean" : "not a number");
        return def;
    }
    va_end(ap);
    return cfg_check(c, key, def, 0);
}
#define CFG(c, def, ...) cfg_num_in((c), (c)->cfg, (def), __VA_ARGS__, (const char *)NULL)

/* A flag of config.json: true/false as Hugging Face writes booleans, 0/1 where older files (and
 * PretrainedConfig, which tests truthiness) carry numbers; def when absent or null. Every boolean key
 * of every family is read here, so none is refused for being a JSON boolean. */
static int cfg_flag(hf_ctx *c, const char *key, int def) {
    json_t *v = json_object_get(c->cfg, key);
    if (!v || json_is_null(v)) return def;
    if (json_is_boolean(v)) return json_is_true(v);
    if (json_is_number(v) && (json_number_value(v) == 0 || json_number_value(v) == 1))
        return json_number_value(v) != 0;
    if (json_is_number(v))
        ctx_fail(c, "config.json: '%s' = %g: expected true, false, 0 or 1", key, json_number_value(v));
    else
        ctx_fail(c, "config.json: '%s' is not a boolean: expected true, false, 0 or 1", key);
    return def;
}

/* What Hugging Face itself refuses when it builds the model, so it is refused here as well. */
static void cfg_check_model(hf_ctx *c, const model_config *k) {
    int split_heads = k->family == FAM_GPT2 || k->family == FAM_BERT || k->family == FAM_NEOX;
    if (split_heads && k->n_head > 0 && k->d_model % k->n_head)
        ctx_fail(c, "config.json: the hidden size %d is not a multiple of the head count %d", k->d_model, k->n_head);
    if (k->family == FAM_BERT && k->vocab > 0 && (k->pad_id < 0 || k->pad_id >= k->vocab))
        ctx_fail(c, "config.json: 'pad_token_id' = %d is outside the vocabulary [0, %d)", k->pad_id, k->vocab);
}

/* The sizes every family needs. head_dim is also bounded above because the RoPE table (one
 * correctly rounded power per frequency) is built from the config alone, before any tensor can
 * contradict it: head_dim 2^30 ran past 20 s there (fuzz_config). Released models use <= 256. */
#define HF_HEAD_DIM_MAX 16384
static void cfg_check_sizes(hf_ctx *c, const model_config *k) {
    if (k->d_model <= 0 || k->n_layer <= 0 || k->n_head <= 0 || k->n_kv_head <= 0 || k->head_dim <= 0 ||
        k->d_ff <= 0 || k->vocab <= 0 || k->max_pos <= 0 || k->n_head % k->n_kv_head)
        ctx_fail(c, "config.json: sizes missing or inconsistent (hidden %d, layers %d, heads %d/%d, "
                    "head_dim %d, ffn %d, vocab %d)", k->d_model, k->n_layer, k->n_head, k->n_kv_head,
                 k->head_dim, k->d_ff, k->vocab);
    else if (k->head_dim > HF_HEAD_DIM_MAX)
        ctx_fail(c, "config.json: head_dim %d (hidden size / heads, or 'head_dim') is above %d", k->head_dim,
                 HF_HEAD_DIM_MAX);
}

static const char *cfg_str(json_t *obj, const char *key, const char *def) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : def;
}

static int parse_act(hf_ctx *c, const char *s, model_act *act) {
    static const struct { const char *n; model_act a; } tab[] = {
        {"gelu", ACT_GELU_ERF}, {"gelu_new", ACT_GELU_TANH}, {"gelu_fast", ACT_GELU_TANH},
        {"gelu_pytorch_tanh", ACT_GELU_TANH}, {"silu", ACT_SILU}, {"swish", ACT_SILU},
        {"relu", ACT_RELU}, {"quick_gelu", ACT_QUICK_GELU}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(s, tab[i].n)) {
            *act = tab[i].a;
            return 0;
        }
    ctx_fail(c, "config.json: activation '%s' is not supported", s);
    return -1;
}

/* RoPE: rope_parameters (v5) or rope_scaling (v4, type key "type" or "rope_type"), with the
 * theta and partial factor from whichever spelling is present. */
static void parse_rope(hf_ctx *c, model_config *k) {
    json_t *rp = json_object_get(c->cfg, "rope_parameters");
    if (!json_is_object(rp)) rp = json_object_get(c->cfg, "rope_scaling");
    if (!json_is_object(rp)) rp = NULL;
    int neox = k->family == FAM_NEOX;
    double theta = cfg_num_in(c, rp, 0, "rope_theta", (const char *)NULL);
    if (theta == 0) theta = neox ? CFG(c, 10000, "rope_theta", "rotary_emb_base") : CFG(c, 10000, "rope_theta");
    double pf = cfg_num_in(c, rp, 0, "partial_rotary_factor", (const char *)NULL);
    if (pf == 0) pf = neox ? CFG(c, 0.25, "partial_rotary_factor", "rotary_pct") : CFG(c, k->family == FAM_PHI ? 0.5 : 1.0, "partial_rotary_factor");
    if (!(theta > 0 && theta < FLT_MAX && pf > 0 && pf <= 1)) {
        ctx_fail(c, "config.json: bad RoPE settings (theta %g, partial rotary factor %g)", theta, pf);
        return;
    }
    k->rope_theta = (float)theta;
    k->rotary_dim = (int)(k->head_dim * pf);
    k->rotary_dim -= k->rotary_dim % 2;
    if (theta <= 0 || k->rotary_dim <= 0 || k->rotary_dim > k->head_dim) {
        ctx_fail(c, "config.json: bad RoPE settings (theta %g, rotary dims %d of %d)", theta, k->rotary_dim,
                 k->head_dim);
        return;
    }
    c->hs->inv_freq = xmalloc(sizeof(float) * (size_t)(k->rotary_dim / 2));
    k->inv_freq = c->hs->inv_freq;
    model_rope_default(k->inv_freq, k->rotary_dim, theta);
    const char *type = rp ? cfg_str(rp, "rope_type", cfg_str(rp, "type", "default")) : "default";
    /* dynamic NTK only changes anything beyond max_position_embeddings, which forward refuses */
    if (!strcmp(type, "default") || !strcmp(type, "dynamic")) return;
    double factor = cfg_num_in(c, rp, 0, "factor", (const char *)NULL);
    if (factor <= 0) {
        ctx_fail(c, "config.json: rope type '%s' needs a positive factor", type);
        return;
    }
    if (!strcmp(type, "linear")) {
        for (int i = 0; i < k->rotary_dim / 2; i++) k->inv_freq[i] /= (float)factor;
    } else if (!strcmp(type, "llama3")) {
        double lo = cfg_num_in(c, rp, 0, "low_freq_factor", (const char *)NULL);
        double hi = cfg_num_in(c, rp, 0, "high_freq_factor", (const char *)NULL);
        double orig = cfg_num_in(c, rp, 0, "original_max_position_embeddings", (const char *)NULL);
        if (lo <= 0 || hi <= lo || orig <= 0) {
            ctx_fail(c, "config.json: llama3 rope scaling needs low_freq_factor < high_freq_factor and "
                        "original_max_position_embeddings");
            return;
        }
        model_rope_llama3(k->inv_freq, k->rotary_dim, factor, lo, hi, orig);
    } else {
        ctx_fail(c, "config.json: rope type '%s' is not supported (default, linear, dynamic, llama3)", type);
    }
}

static float *own(hf_ctx *c, size_t n);

/* Position encodings of models trained here (bin/train, docs/TRAIN.md "Position encodings") that
 * Hugging Face cannot express on these bodies, named by attncoda_position_encoding: RoPE on GPT-2
 * (rope_theta is the base in use), a learned or sinusoidal table on Llama (the tensor
 * embed_positions.weight), ALiBi and none on either. Sinusoidal on GPT-2 keeps its table in
 * wpe.weight (on BERT in position_embeddings.weight) and rope-ntk on Llama its scaled base in
 * rope_theta, so HF reads those as is. */
static void parse_trained_pos(hf_ctx *c, model_config *k) {
    json_t *v = json_object_get(c->cfg, "attncoda_position_encoding");
    if (!v) return;
    int pos = json_is_string(v) ? posenc_parse(json_string_value(v)) : -1;
    if (pos < 0) {
        ctx_fail(c, "config.json: 'attncoda_position_encoding' must be one of " POSENC_CHOICES);
        return;
    }
    if (k->family == FAM_BERT && (pos == POS_LEARNED || pos == POS_SINUSOIDAL)) {
        k->trained_pos = pos + 1;   /* the table is position_embeddings.weight either way */
        return;
    }
    if (k->family != FAM_GPT2 && k->family != FAM_LLAMA) {
        ctx_fail(c, "config.json: 'attncoda_position_encoding' is only defined for gpt2 and llama "
                    "(and learned or sinusoidal on bert)");
        return;
    }
    k->trained_pos = pos + 1;
    int rope = pos == POS_ROPE || pos == POS_ROPE_NTK;
    k->learned_pos = pos == POS_LEARNED || pos == POS_SINUSOIDAL;
    if (rope && k->family == FAM_GPT2) parse_rope(c, k);
    if (!rope) k->rotary_dim = 0;
    if (pos == POS_ROPE_NTK) {   /* the stored base must be the one the formula gives */
        double base = CFG(c, 0, "attncoda_rope_base_theta"), s = CFG(c, 0, "attncoda_rope_ntk_factor");
        double theta = CFG(c, 10000, "rope_theta");
        double want = base > 0 && s >= 1 && k->head_dim >= 4 ? posenc_ntk_theta(base, s, k->head_dim) : -1;
        if (!c->failed && !(want > 0 && fabs(theta - want) <= 1e-12 * want))
            ctx_fail(c, "config.json: rope_theta %.17g is not attncoda_rope_base_theta %g x "
                        "attncoda_rope_ntk_factor %g ^ (head_dim/(head_dim-2))", theta, base, s);
    }
    if (pos == POS_ALIBI && (k->n_head < 1 || k->n_head > 65536)) {   /* one slope per head, built here */
        ctx_fail(c, "config.json: ALiBi with %d heads (1 to 65536)", k->n_head);
        return;
    }
    if (pos == POS_ALIBI) {
        float *m = own(c, (size_t)k->n_head);
        for (int h = 0; h < k->n_head; h++) m[h] = (float)posenc_alibi_slope(h, k->n_head);
        k->alibi_slopes = m;
    }
}

static const struct { const char *type; model_family fam; } FAMILIES[] = {
    {"gpt2", FAM_GPT2}, {"gpt_neox", FAM_NEOX}, {"llama", FAM_LLAMA}, {"qwen2", FAM_QWEN2}, {"bert", FAM_BERT},
    {"phi", FAM_PHI}, {"mistral", FAM_MISTRAL}, {"gemma", FAM_GEMMA}, {"gemma2", FAM_GEMMA2}, {"qwen3", FAM_QWEN3},
    {"opt", FAM_OPT}, {"roberta", FAM_ROBERTA}, {"xlm-roberta", FAM_ROBERTA}, {"vit", FAM_VIT}};
#define SUPPORTED "gpt2, gpt_neox, llama, qwen2, bert, phi, mistral, gemma, gemma2, qwen3, opt, roberta, xlm-roberta, vit"

/* Shape keys shared by the families that use the modern names (GPT-2 has its own aliases). */
static void parse_sizes(hf_ctx *c, model_config *k, int gpt2) {
    if (gpt2) {
        k->d_model = (int)CFG(c, 768, "n_embd", "hidden_size");
        k->n_layer = (int)CFG(c, 12, "n_layer", "num_hidden_layers");
        k->n_head = (int)CFG(c, 12, "n_head", "num_attention_heads");
        k->d_ff = (int)CFG(c, 4.0 * k->d_model, "n_inner", "intermediate_size");
        k->max_pos = (int)CFG(c, 1024, "n_positions", "max_position_embeddings");
        k->vocab = (int)CFG(c, 50257, "vocab_size");
        k->norm_eps = (float)CFG(c, 1e-5, "layer_norm_epsilon");
        k->n_kv_head = k->n_head;
        k->head_dim = k->n_head > 0 ? k->d_model / k->n_head : 0;
        return;
    }
    k->d_model = (int)CFG(c, 0, "hidden_size");
    k->n_layer = (int)CFG(c, 0, "num_hidden_layers");
    k->n_head = (int)CFG(c, 0, "num_attention_heads");
    k->n_kv_head = (int)CFG(c, k->n_head, "num_key_value_heads");
    k->head_dim = (int)CFG(c, k->n_head > 0 ? k->d_model / k->n_head : 0, "head_dim");
    k->d_ff = (int)CFG(c, 0, "intermediate_size");
    k->vocab = (int)CFG(c, 0, "vocab_size");
}

/* ---- config of the newer families (docs/FAMILIES.md §5–§11) ------------------------ */

/* An integer key in [lo, hi] (def when absent or null); a fraction or an out-of-range value is
 * refused by name. */
static int more_int(hf_ctx *c, const char *key, double def, int lo, int hi) {
    double v = CFG(c, def, key);
    long long out;
    char why[128];
    if (c->failed) return lo;
    if (cli_num_to_ll(v, lo, hi, &out, why, sizeof why)) {
        ctx_fail(c, "config.json: '%s': %s", key, why);
        return lo;
    }
    return (int)out;
}

/* A key whose explicit null means "off" while its absence means the class default (Mistral's
 * sliding_window, Gemma2's soft-caps): 0 for null, def when absent. */
static double more_null_off(hf_ctx *c, const char *key, double def) {
    json_t *v = json_object_get(c->cfg, key);
    if (v && json_is_null(v)) return 0;
    return CFG(c, def, key);
}

/* Flags the forward pass cannot honour, refused by name when they ask for something else. */
static void more_refuse(hf_ctx *c, const char *key, int allowed) {
    if (c->failed || cfg_flag(c, key, allowed) == allowed) return;
    ctx_fail(c, "config.json: '%s' other than %d is not supported", key, allowed);
}

/* The encoders' special ids that BertConfig has no key for, written by bin/train
 * (docs/TRAIN.md, The encoder): attncoda_{cls,sep,mask}_token_id, -1 when absent. The masked-LM
 * perplexity of extract needs the mask id when no tokenizer names one. */
static void parse_encoder_ids(hf_ctx *c, model_config *k) {
    const char *keys[] = {"attncoda_cls_token_id", "attncoda_sep_token_id", "attncoda_mask_token_id"};
    int *ids[] = {&k->cls_id, &k->sep_id, &k->mask_id};
    for (int i = 0; i < 3; i++) {
        if (!json_object_get(c->cfg, keys[i])) continue;
        double v = CFG(c, -1, keys[i]);
        if (v < 0 || v >= k->vocab) {
            ctx_fail(c, "config.json: '%s' = %g is outside the vocabulary [0, %d)", keys[i], v, k->vocab);
            return;
        }
        *ids[i] = (int)v;
    }
}

/* Gemma's activation rule (§5.1): hidden_activation if set, else gelu_pytorch_tanh; a different
 * hidden_act is named on stderr, since a transformers ≥ 4.48 run would use it instead. */
static const char *gemma_act(hf_ctx *c, int gemma2) {
    const char *ha = cfg_str(c->cfg, "hidden_activation", NULL), *legacy = cfg_str(c->cfg, "hidden_act", NULL);
    if (ha) return ha;
    if (legacy && strcmp(legacy, "gelu_pytorch_tanh"))
        fprintf(stderr, "%s: %s/config.json: hidden_act '%s' not used: %s uses hidden_activation, "
                        "default gelu_pytorch_tanh\n", cli_prog(), c->dir, legacy, gemma2 ? "Gemma2" : "Gemma");
    return "gelu_pytorch_tanh";
}

/* Sizes, norm, activation, block layout and family constants; windows are set per layer at load. */
static void parse_more(hf_ctx *c, model_config *k) {
    const char *act = "silu";
    int big = 1 << 24, opt = k->family == FAM_OPT, rob = k->family == FAM_ROBERTA;
    parse_sizes(c, k, 0);
    k->block = BLOCK_PRE_LN;
    k->norm = NORM_RMS;
    k->norm_eps = (float)CFG(c, 1e-6, "rms_norm_eps");
    k->gated_mlp = 1;
    k->bos_id = k->eos_id = -1;
    switch (k->family) {
    case FAM_PHI:
        k->block = BLOCK_PARALLEL_ONE;
        k->norm = NORM_LAYER;
        k->norm_eps = (float)CFG(c, 1e-5, "layer_norm_eps");
        k->gated_mlp = 0;
        k->max_pos = more_int(c, "max_position_embeddings", 2048, 1, big);
        k->tied_head = cfg_flag(c, "tie_word_embeddings", 0);
        k->qk_norm = cfg_flag(c, "qk_layernorm", 0);
        act = cfg_str(c->cfg, "hidden_act", "gelu_new");
        k->bos_id = more_int(c, "bos_token_id", 1, -1, big);
        k->eos_id = more_int(c, "eos_token_id", 2, -1, big);
        if (k->n_head > 0 && k->head_dim != k->d_model / k->n_head)
            ctx_fail(c, "config.json: 'head_dim' %d is not hidden_size / num_attention_heads (Phi has no head_dim)",
                     k->head_dim);
        break;
    case FAM_MISTRAL:
        k->max_pos = more_int(c, "max_position_embeddings", 131072, 1, big);
        k->tied_head = cfg_flag(c, "tie_word_embeddings", 0);
        k->bos_id = more_int(c, "bos_token_id", 1, -1, big);
        k->eos_id = more_int(c, "eos_token_id", 2, -1, big);
        break;
    case FAM_GEMMA:
    case FAM_GEMMA2:
        k->norm = NORM_RMS_OFFSET;
        k->head_dim = more_int(c, "head_dim", 256, 1, big);
        k->max_pos = more_int(c, "max_position_embeddings", 8192, 1, big);
        k->tied_head = cfg_flag(c, "tie_word_embeddings", 1);
        act = gemma_act(c, k->family == FAM_GEMMA2);
        /* HF makes sqrt(hidden_size) a tensor of the activation dtype: float32 here */
        k->emb_scale = (float)sqrt((double)k->d_model);
        k->bos_id = more_int(c, "bos_token_id", 2, -1, big);
        k->eos_id = more_int(c, "eos_token_id", 1, -1, big);
        if (k->family == FAM_GEMMA) break;
        k->block = BLOCK_SANDWICH;
        k->attn_scale = (float)pow(CFG(c, 256, "query_pre_attn_scalar"), -0.5);
        k->attn_softcap = (float)more_null_off(c, "attn_logit_softcapping", 50.0);
        k->final_softcap = (float)more_null_off(c, "final_logit_softcapping", 30.0);
        more_refuse(c, "use_bidirectional_attention", 0);
        if (!(k->attn_scale > 0 && isfinite(k->attn_scale)) || k->attn_softcap < 0 || k->final_softcap < 0)
            ctx_fail(c, "config.json: query_pre_attn_scalar and the soft-caps must be positive");
        break;
    case FAM_QWEN3:
        k->head_dim = more_int(c, "head_dim", 128, 1, big);
        k->max_pos = more_int(c, "max_position_embeddings", 32768, 1, big);
        k->tied_head = cfg_flag(c, "tie_word_embeddings", 0);
        k->qk_norm = 1;
        k->bos_id = more_int(c, "bos_token_id", -1, -1, big);
        k->eos_id = more_int(c, "eos_token_id", -1, -1, big);
        break;
    case FAM_OPT:
        k->norm = NORM_LAYER;
        k->norm_eps = 1e-5f;   /* OPT has no eps key: torch's LayerNorm default */
        k->gated_mlp = 0;
        k->d_model = more_int(c, "hidden_size", 768, 1, big);
        k->n_layer = more_int(c, "num_hidden_layers", 12, 1, big);
        k->n_head = k->n_kv_head = more_int(c, "num_attention_heads", 12, 1, big);
        k->head_dim = k->d_model / k->n_head;
        k->d_ff = more_int(c, "ffn_dim", 3072, 1, big);
        k->vocab = more_int(c, "vocab_size", 50272, 1, big);
        k->max_pos = more_int(c, "max_position_embeddings", 2048, 1, big);
        k->d_embed = more_int(c, "word_embed_proj_dim", k->d_model, 1, big);
        if (k->d_embed == k->d_model) k->d_embed = 0;
        k->block = cfg_flag(c, "do_layer_norm_before", 1) ? BLOCK_PRE_LN : BLOCK_POST_LN;
        k->learned_pos = 1;
        k->pos_offset = 2;
        k->tied_head = cfg_flag(c, "tie_word_embeddings", 1);
        act = cfg_str(c->cfg, "activation_function", "relu");
        k->bos_id = more_int(c, "bos_token_id", 2, -1, big);
        k->eos_id = more_int(c, "eos_token_id", 2, -1, big);
        more_refuse(c, "layer_norm_elementwise_affine", 1);
        /* read again with the tensors; checked here so that --info refuses what loading would */
        cfg_flag(c, "_remove_final_layer_norm", 0);
        cfg_flag(c, "enable_bias", 1);
        if (k->d_model % k->n_head) ctx_fail(c, "config.json: hidden_size is not a multiple of the heads");
        break;
    case FAM_ROBERTA:
        k->block = BLOCK_POST_LN;
        k->norm = NORM_LAYER;
        k->norm_eps = (float)CFG(c, 1e-12, "layer_norm_eps");
        k->gated_mlp = 0;
        k->causal = 0;
        k->learned_pos = 1;
        act = cfg_str(c->cfg, "hidden_act", "gelu");
        k->bos_id = k->cls_id = more_int(c, "bos_token_id", 0, -1, big);
        k->eos_id = k->sep_id = more_int(c, "eos_token_id", 2, -1, big);
        if (strcmp(cfg_str(c->cfg, "position_embedding_type", "absolute"), "absolute"))
            ctx_fail(c, "config.json: only absolute RoBERTa position embeddings are supported");
        break;
    default:
        break;
    }
    k->pad_id = more_int(c, "pad_token_id", opt || rob ? 1 : (k->family == FAM_GEMMA || k->family == FAM_GEMMA2) ? 0 : -1,
                         -1, big);
    if (rob) {   /* positions padding_idx+1 … : the table's first pad+1 rows are never a real position */
        int rows = more_int(c, "max_position_embeddings", 512, 1, big);
        k->pos_skip_pad = 1;
        k->pos_offset = k->pad_id + 1;
        k->max_pos = rows - k->pad_id - 1;
        if (k->pad_id < 0 || k->max_pos < 1)
            ctx_fail(c, "config.json: pad_token_id %d leaves no positions in %d rows", k->pad_id, rows);
    }
    parse_act(c, act, &k->act);
    cfg_check_sizes(c, k);
    if (rob) {   /* RobertaLMHead applies the erf GELU whatever hidden_act says (§7.3 step 4) */
        k->head_act = ACT_GELU_ERF;
        k->tied_head = cfg_flag(c, "tie_word_embeddings", 1);
        if (!c->failed) parse_encoder_ids(c, k);
    }
    if (!c->failed && !opt && !rob) parse_rope(c, k);
}

/* ---- ViT (docs/FAMILIES.md §12) ---------------------------------------------------- */

/* image_size / patch_size: an integer or a square pair [h, w]. */
static int vit_side(hf_ctx *c, const char *key, int def) {
    json_t *v = json_object_get(c->cfg, key);
    if (json_is_array(v)) {
        json_t *a = json_array_get(v, 0), *b = json_array_get(v, 1);
        if (json_array_size(v) != 2 || !json_is_integer(a) || !json_is_integer(b) ||
            json_integer_value(a) != json_integer_value(b)) {
            ctx_fail(c, "config.json: '%s' must be an integer or a square pair [n, n]", key);
            return 1;
        }
        long long out;
        char why[128];
        if (cli_num_to_ll((double)json_integer_value(a), 1, 1 << 15, &out, why, sizeof why)) {
            ctx_fail(c, "config.json: '%s': %s", key, why);
            return 1;
        }
        return (int)out;
    }
    return more_int(c, key, def, 1, 1 << 15);
}

/* The classes: id2label's entries (keys "0" … "n-1"), else num_labels, else PretrainedConfig's 2. */
static int vit_classes(hf_ctx *c) {
    json_t *labels = json_object_get(c->cfg, "id2label");
    if (labels && !json_is_null(labels)) {
        if (!json_is_object(labels) || json_object_size(labels) < 1) {
            ctx_fail(c, "config.json: 'id2label' is not an object of labels");
            return 1;
        }
        return (int)json_object_size(labels);
    }
    return more_int(c, "num_labels", 2, 1, 1 << 24);
}

static void parse_vit(hf_ctx *c, model_config *k) {
    int big = 1 << 24;
    k->block = BLOCK_PRE_LN;
    k->norm = NORM_LAYER;
    k->causal = 0;
    k->d_model = more_int(c, "hidden_size", 768, 1, big);
    k->n_layer = more_int(c, "num_hidden_layers", 12, 1, big);
    k->n_head = k->n_kv_head = more_int(c, "num_attention_heads", 12, 1, big);
    k->d_ff = more_int(c, "intermediate_size", 3072, 1, big);
    k->norm_eps = (float)CFG(c, 1e-12, "layer_norm_eps");
    k->image_size = vit_side(c, "image_size", 224);
    k->patch_size = vit_side(c, "patch_size", 16);
    k->n_channels = more_int(c, "num_channels", 3, 1, 3);
    k->vocab = vit_classes(c);
    k->bos_id = k->eos_id = k->pad_id = -1;
    cfg_flag(c, "qkv_bias", 1);   /* read again with the tensors; checked here for --info */
    parse_act(c, cfg_str(c->cfg, "hidden_act", "gelu"), &k->act);
    if (c->failed) return;
    if (k->d_model % k->n_head)
        ctx_fail(c, "config.json: the hidden size %d is not a multiple of the head count %d", k->d_model, k->n_head);
    if (k->patch_size > k->image_size)
        ctx_fail(c, "config.json: patch_size %d exceeds image_size %d", k->patch_size, k->image_size);
    if (k->n_channels != 3)   /* images are decoded to RGB */
        ctx_fail(c, "config.json: num_channels %d: only 3 (RGB) is supported", k->n_channels);
    k->head_dim = k->d_model / k->n_head;
    int g = k->image_size / k->patch_size;   /* Conv2d drops a remainder, as HF's num_patches */
    k->max_pos = 1 + g * g;
}

static void parse_config(hf_ctx *c, model_config *k) {
    const char *mt = cfg_str(c->cfg, "model_type", NULL);
    if (!mt) {
        ctx_fail(c, "config.json: no model_type (supported: " SUPPORTED ")");
        return;
    }
    size_t i;
    for (i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++)
        if (!strcmp(mt, FAMILIES[i].type)) break;
    if (i == sizeof FAMILIES / sizeof FAMILIES[0]) {
        ctx_fail(c, "config.json: model_type '%s' is not supported (supported: " SUPPORTED ")", mt);
        return;
    }
    k->family = FAMILIES[i].fam;
    snprintf(k->model_type, sizeof k->model_type, "%s", mt);
    k->cls_id = k->sep_id = k->mask_id = -1;
    k->causal = k->family != FAM_BERT;
    if (k->family == FAM_VIT) {
        parse_vit(c, k);
        return;
    }
    if (k->family >= FAM_PHI) {
        parse_more(c, k);
        return;
    }
    parse_sizes(c, k, k->family == FAM_GPT2);
    const char *act = "silu";
    switch (k->family) {
    case FAM_GPT2:
        k->norm = NORM_LAYER;
        k->learned_pos = 1;
        k->tied_head = cfg_flag(c, "tie_word_embeddings", 1);
        act = cfg_str(c->cfg, "activation_function", "gelu_new");
        k->bos_id = (int)CFG(c, 50256, "bos_token_id");
        k->eos_id = (int)CFG(c, 50256, "eos_token_id");
        if (cfg_flag(c, "scale_attn_by_inverse_layer_idx", 0))
            ctx_fail(c, "config.json: scale_attn_by_inverse_layer_idx is not supported");
        break;
    case FAM_NEOX:
        k->norm = NORM_LAYER;
        k->norm_eps = (float)CFG(c, 1e-5, "layer_norm_eps");
        k->max_pos = (int)CFG(c, 2048, "max_position_embeddings");
        k->parallel_residual = cfg_flag(c, "use_parallel_residual", 1);
        k->tied_head = cfg_flag(c, "tie_word_embeddings", 0);
        act = cfg_str(c->cfg, "hidden_act", "gelu");
        k->bos_id = (int)CFG(c, 0, "bos_token_id");
        k->eos_id = (int)CFG(c, 2, "eos_token_id");
        break;
    case FAM_LLAMA:
    case FAM_QWEN2:
        k->norm = NORM_RMS;
        k->norm_eps = (float)CFG(c, 1e-6, "rms_norm_eps");
        k->max_pos = (int)CFG(c, k->family == FAM_LLAMA ? 2048 : 32768, "max_position_embeddings");
        k->gated_mlp = 1;
        k->tied_head = cfg_flag(c, "tie_word_embeddings", 0);
        act = cfg_str(c->cfg, "hidden_act", "silu");
        k->bos_id = (int)CFG(c, k->family == FAM_LLAMA ? 1 : -1, "bos_token_id");
        k->eos_id = (int)CFG(c, k->family == FAM_LLAMA ? 2 : -1, "eos_token_id");
        if (k->family == FAM_QWEN2 && cfg_flag(c, "use_sliding_window", 0))
            ctx_fail(c, "config.json: use_sliding_window is not supported");
        break;
    case FAM_BERT:
        k->norm = NORM_LAYER;
        k->norm_eps = (float)CFG(c, 1e-12, "layer_norm_eps");
        k->max_pos = (int)CFG(c, 512, "max_position_embeddings");
        k->post_ln = 1;
        k->learned_pos = 1;
        act = cfg_str(c->cfg, "hidden_act", "gelu");
        k->tied_head = cfg_flag(c, "tie_word_embeddings", 1);
        k->bos_id = k->eos_id = -1;
        if (strcmp(cfg_str(c->cfg, "position_embedding_type", "absolute"), "absolute"))
            ctx_fail(c, "config.json: only absolute BERT position embeddings are supported");
        break;
    default:   /* the newer families went to parse_more */
        break;
    }
    k->pad_id = (int)CFG(c, k->family == FAM_BERT ? 0 : -1, "pad_token_id");
    parse_act(c, act, &k->act);
    k->head_act = k->act;   /* BertPredictionHeadTransform uses hidden_act */
    cfg_check_model(c, k);
    cfg_check_sizes(c, k);
    if (!c->failed && (k->family == FAM_NEOX || k->family == FAM_LLAMA || k->family == FAM_QWEN2))
        parse_rope(c, k);
    if (!c->failed && k->family == FAM_BERT) parse_encoder_ids(c, k);
    if (!c->failed) parse_trained_pos(c, k);
    k->block = k->post_ln ? BLOCK_POST_LN : k->parallel_residual ? BLOCK_PARALLEL : BLOCK_PRE_LN;
}

/* ---- tensors ----------------------------------------------------------------------------- */

static float *own(hf_ctx *c, size_t n) {
    hf_state *h = c->hs;
    h->owned = xrealloc(h->owned, sizeof *h->owned * (size_t)(h->nowned + 1));
    return h->owned[h->nowned++] = xmalloc(sizeof(float) * (n ? n : 1));
}

/* A tensor of the given rank and shape (no prefix added). */
static const float *get_shape(hf_ctx *c, const char *name, int optional, int rank, const int64_t *dims) {
    if (c->failed) return NULL;
    const st_tensor *t = st_find(c->st, name);
    if (!t) {
        if (!optional) ctx_fail(c, "missing tensor '%s'", name);
        return NULL;
    }
    int same = t->rank == rank;
    for (int i = 0; same && i < rank; i++) same = t->shape[i] == dims[i];
    if (!same) {
        char got[128] = "", want[128] = "";
        for (int i = 0; i < t->rank; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? "," : "", (long long)t->shape[i]);
        for (int i = 0; i < rank; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? "," : "", (long long)dims[i]);
        ctx_fail(c, "tensor '%s' has shape [%s], expected [%s]", name, got, want);
        return NULL;
    }
    int bf16 = !strcmp(t->dtype, "BF16");
    if (c->keep_half && (bf16 || !strcmp(t->dtype, "F16"))) {
        const float *v = half_view(t->data, (size_t)t->numel, bf16 ? HALF_BF16 : HALF_F16);
        if (!v) {
            ctx_fail(c, "tensor '%s': cannot reserve address space for its view", name);
            return NULL;
        }
        hf_state *h = c->hs;
        h->views = xrealloc(h->views, sizeof *h->views * (size_t)(h->nviews + 1));
        return h->views[h->nviews++] = v;
    }
    char e[900];
    const float *p = st_f32(c->st, t, e, sizeof e);
    if (!p && !c->failed) {
        c->failed = 1;
        snprintf(c->err, c->errlen, "%s", e);
    }
    return p;
}

/* A tensor with the expected shape (d1 = 0 for rank 1). global: outside the prefix. */
static const float *get_full(hf_ctx *c, const char *name, int optional, int64_t d0, int64_t d1) {
    int64_t dims[2] = {d0, d1};
    return get_shape(c, name, optional, d1 ? 2 : 1, dims);
}

static const float *get(hf_ctx *c, int optional, int64_t d0, int64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void prefixed_name(const hf_ctx *c, char *name, size_t n, const char *fmt, va_list ap) {
    char rel[512];
    vsnprintf(rel, sizeof rel, fmt, ap);
    snprintf(name, n, "%s%s", c->prefix, rel);
}

static const float *get(hf_ctx *c, int optional, int64_t d0, int64_t d1, const char *fmt, ...) {
    char name[600];
    va_list ap;
    va_start(ap, fmt);
    prefixed_name(c, name, sizeof name, fmt, ap);
    va_end(ap);
    return get_full(c, name, optional, d0, d1);
}

/* A weight matrix the forward pass reads only through linear() or the embedding row gather:
 * F16/BF16 stays in the file mapping, 2 bytes per parameter (gemm_half.h). Everything else
 * (norms, biases, position tables, matrices a loader rearranges) is widened at load. */
static const float *mat_full(hf_ctx *c, const char *name, int optional, int64_t d0, int64_t d1) {
    c->keep_half = 1;
    const float *p = get_full(c, name, optional, d0, d1);
    c->keep_half = 0;
    return p;
}

static const float *mat(hf_ctx *c, int optional, int64_t d0, int64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static const float *mat(hf_ctx *c, int optional, int64_t d0, int64_t d1, const char *fmt, ...) {
    char name[600];
    va_list ap;
    va_start(ap, fmt);
    prefixed_name(c, name, sizeof name, fmt, ap);
    va_end(ap);
    return mat_full(c, name, optional, d0, d1);
}

/* LayerNorm parameters under either spelling (weight/bias or TF's gamma/beta). */
static void get_ln(hf_ctx *c, const float **w, const float **b, int64_t d, const char *base) {
    char n[512];
    snprintf(n, sizeof n, "%s.weight", base);
    if ((*w = get(c, 1, d, 0, "%s", n))) {
        snprintf(n, sizeof n, "%s.bias", base);
        *b = get(c, 0, d, 0, "%s", n);
        return;
    }
    snprintf(n, sizeof n, "%s.gamma", base);
    *w = get(c, 0, d, 0, "%s", n);
    snprintf(n, sizeof n, "%s.beta", base);
    *b = get(c, 0, d, 0, "%s", n);
}

/* GPT-2 Conv1D [in, out] → nn.Linear [out, in]. */
static const float *conv1d(hf_ctx *c, int64_t in, int64_t out, const char *name) {
    const float *w = get(c, 0, in, out, "%s", name);
    if (!w) return NULL;
    float *t = own(c, (size_t)(in * out));
    enum { B = 64 };   /* blocked so both sides stay in cache */
    for (int64_t i0 = 0; i0 < in; i0 += B)
        for (int64_t o0 = 0; o0 < out; o0 += B)
            for (int64_t i = i0; i < i0 + B && i < in; i++)
                for (int64_t o = o0; o < o0 + B && o < out; o++) t[o * in + i] = w[i * out + o];
    return t;
}

static void load_gpt2_layer(hf_ctx *c, const model_config *k, model_layer *y, int l) {
    int64_t d = k->d_model, f = k->d_ff;
    char n[128];
    snprintf(n, sizeof n, "h.%d.ln_1", l);
    get_ln(c, &y->ln1_w, &y->ln1_b, d, n);
    snprintf(n, sizeof n, "h.%d.ln_2", l);
    get_ln(c, &y->ln2_w, &y->ln2_b, d, n);
    snprintf(n, sizeof n, "h.%d.attn.c_attn.weight", l);
    const float *qkv = conv1d(c, d, 3 * d, n);
    const float *b = get(c, 0, 3 * d, 0, "h.%d.attn.c_attn.bias", l);
    if (qkv && b) {
        y->wq = qkv, y->wk = qkv + d * d, y->wv = qkv + 2 * d * d;
        y->bq = b, y->bk = b + d, y->bv = b + 2 * d;
    }
    snprintf(n, sizeof n, "h.%d.attn.c_proj.weight", l);
    y->wo = conv1d(c, d, d, n);
    y->bo = get(c, 0, d, 0, "h.%d.attn.c_proj.bias", l);
    snprintf(n, sizeof n, "h.%d.mlp.c_fc.weight", l);
    y->w_up = conv1d(c, d, f, n);
    y->b_up = get(c, 0, f, 0, "h.%d.mlp.c_fc.bias", l);
    snprintf(n, sizeof n, "h.%d.mlp.c_proj.weight", l);
    y->w_down = conv1d(c, f, d, n);
    y->b_down = get(c, 0, d, 0, "h.%d.mlp.c_proj.bias", l);
}

/* NeoX fused QKV rows are [q_h|k_h|v_h] per head (§4.2); split into three [H, H] blocks. */
static void neox_split(hf_ctx *c, const model_config *k, const float *w, const float *b, model_layer *y) {
    int64_t d = k->d_model, hs = k->head_dim, nh = k->n_head;
    float *q = own(c, (size_t)(3 * d * d)), *bb = b ? own(c, (size_t)(3 * d)) : NULL;
    for (int64_t r = 0; r < 3 * d; r++) {
        int64_t head = r / (3 * hs), j = r % (3 * hs), part = j / hs, comp = j % hs;
        int64_t dst = part * nh * hs + head * hs + comp;
        memcpy(q + dst * d, w + r * d, sizeof(float) * (size_t)d);
        if (b) bb[dst] = b[r];
    }
    y->wq = q, y->wk = q + d * d, y->wv = q + 2 * d * d;
    if (b) y->bq = bb, y->bk = bb + d, y->bv = bb + 2 * d;
}

static void load_neox_layer(hf_ctx *c, const model_config *k, model_layer *y, int l) {
    int64_t d = k->d_model, f = k->d_ff;
    int bias = cfg_flag(c, "attention_bias", 1);
    char n[128];
    snprintf(n, sizeof n, "layers.%d.input_layernorm", l);
    get_ln(c, &y->ln1_w, &y->ln1_b, d, n);
    snprintf(n, sizeof n, "layers.%d.post_attention_layernorm", l);
    get_ln(c, &y->ln2_w, &y->ln2_b, d, n);
    const float *w = get(c, 0, 3 * d, d, "layers.%d.attention.query_key_value.weight", l);
    const float *b = get(c, !bias, 3 * d, 0, "layers.%d.attention.query_key_value.bias", l);
    if (w) neox_split(c, k, w, b, y);
    y->wo = mat(c, 0, d, d, "layers.%d.attention.dense.weight", l);
    y->bo = get(c, !bias, d, 0, "layers.%d.attention.dense.bias", l);
    y->w_up = mat(c, 0, f, d, "layers.%d.mlp.dense_h_to_4h.weight", l);
    y->b_up = get(c, 0, f, 0, "layers.%d.mlp.dense_h_to_4h.bias", l);
    y->w_down = mat(c, 0, d, f, "layers.%d.mlp.dense_4h_to_h.weight", l);
    y->b_down = get(c, 0, d, 0, "layers.%d.mlp.dense_4h_to_h.bias", l);
}

/* Llama and Qwen2: Qwen2 always has q/k/v biases and no o bias; Llama follows attention_bias
 * and mlp_bias. */
static void load_llama_layer(hf_ctx *c, const model_config *k, model_layer *y, int l) {
    int64_t d = k->d_model, f = k->d_ff, qd = (int64_t)k->n_head * k->head_dim;
    int64_t kd = (int64_t)k->n_kv_head * k->head_dim;
    int qwen = k->family == FAM_QWEN2, ab = cfg_flag(c, "attention_bias", 0), mb = cfg_flag(c, "mlp_bias", 0);
    y->ln1_w = get(c, 0, d, 0, "layers.%d.input_layernorm.weight", l);
    y->ln2_w = get(c, 0, d, 0, "layers.%d.post_attention_layernorm.weight", l);
    y->wq = mat(c, 0, qd, d, "layers.%d.self_attn.q_proj.weight", l);
    y->wk = mat(c, 0, kd, d, "layers.%d.self_attn.k_proj.weight", l);
    y->wv = mat(c, 0, kd, d, "layers.%d.self_attn.v_proj.weight", l);
    y->wo = mat(c, 0, d, qd, "layers.%d.self_attn.o_proj.weight", l);
    if (qwen || ab) {
        y->bq = get(c, 0, qd, 0, "layers.%d.self_attn.q_proj.bias", l);
        y->bk = get(c, 0, kd, 0, "layers.%d.self_attn.k_proj.bias", l);
        y->bv = get(c, 0, kd, 0, "layers.%d.self_attn.v_proj.bias", l);
    }
    if (!qwen && ab) y->bo = get(c, 0, d, 0, "layers.%d.self_attn.o_proj.bias", l);
    y->w_gate = mat(c, 0, f, d, "layers.%d.mlp.gate_proj.weight", l);
    y->w_up = mat(c, 0, f, d, "layers.%d.mlp.up_proj.weight", l);
    y->w_down = mat(c, 0, d, f, "layers.%d.mlp.down_proj.weight", l);
    if (!qwen && mb) {
        y->b_gate = get(c, 0, f, 0, "layers.%d.mlp.gate_proj.bias", l);
        y->b_up = get(c, 0, f, 0, "layers.%d.mlp.up_proj.bias", l);
        y->b_down = get(c, 0, d, 0, "layers.%d.mlp.down_proj.bias", l);
    }
}

static void load_bert_layer(hf_ctx *c, const model_config *k, model_layer *y, int l) {
    int64_t d = k->d_model, f = k->d_ff;
    char n[160];
    const char *p = "encoder.layer";
    y->wq = mat(c, 0, d, d, "%s.%d.attention.self.query.weight", p, l);
    y->bq = get(c, 0, d, 0, "%s.%d.attention.self.query.bias", p, l);
    y->wk = mat(c, 0, d, d, "%s.%d.attention.self.key.weight", p, l);
    y->bk = get(c, 0, d, 0, "%s.%d.attention.self.key.bias", p, l);
    y->wv = mat(c, 0, d, d, "%s.%d.attention.self.value.weight", p, l);
    y->bv = get(c, 0, d, 0, "%s.%d.attention.self.value.bias", p, l);
    y->wo = mat(c, 0, d, d, "%s.%d.attention.output.dense.weight", p, l);
    y->bo = get(c, 0, d, 0, "%s.%d.attention.output.dense.bias", p, l);
    snprintf(n, sizeof n, "%s.%d.attention.output.LayerNorm", p, l);
    get_ln(c, &y->ln1_w, &y->ln1_b, d, n);
    y->w_up = mat(c, 0, f, d, "%s.%d.intermediate.dense.weight", p, l);
    y->b_up = get(c, 0, f, 0, "%s.%d.intermediate.dense.bias", p, l);
    y->w_down = mat(c, 0, d, f, "%s.%d.output.dense.weight", p, l);
    y->b_down = get(c, 0, d, 0, "%s.%d.output.dense.bias", p, l);
    snprintf(n, sizeof n, "%s.%d.output.LayerNorm", p, l);
    get_ln(c, &y->ln2_w, &y->ln2_b, d, n);
}

/* The prefix in use: the first candidate under which the token embedding exists. */
static void pick_prefix(hf_ctx *c, const char *const *cands, const char *emb) {
    char n[256];
    for (int i = 0; cands[i]; i++) {
        snprintf(n, sizeof n, "%s%s", cands[i], emb);
        if (st_find(c->st, n)) {
            c->prefix = cands[i];
            return;
        }
    }
    c->prefix = cands[0];   /* the error then names the canonical spelling */
}

/* The LM head: the family's head tensor when present and untied, else the token embedding. */
static void load_head(hf_ctx *c, model_config *k, model_weights *w, const char *name) {
    int64_t v = k->vocab, d = k->d_model;
    const float *h = mat_full(c, name, 1, v, d);
    if (h && !k->tied_head)
        w->lm_head = h;
    else if (!h && !k->tied_head && k->family != FAM_GPT2)
        ctx_fail(c, "missing tensor '%s' (tie_word_embeddings is false)", name);
    else
        w->lm_head = w->tok_emb;
    if (w->lm_head == w->tok_emb) k->tied_head = 1;
}

/* The masked-LM head of BertForMaskedLM (cls.predictions.*) or RobertaForMaskedLM (lm_head.*),
 * outside the encoder prefix; absent in a bare BertModel/RobertaModel, which then has no head.
 * The decoder is the stored one when present (older .bin conversions keep both), else tied to
 * the word embeddings; its bias is the head's own bias (HF ties decoder.bias to it). */
typedef struct { const char *dense, *ln, *decoder, *bias, *decoder_bias; } mlm_names;

static void load_mlm_head(hf_ctx *c, model_config *k, model_weights *w, const mlm_names *n) {
    int64_t v = k->vocab, d = k->d_model;
    char name[256];
    snprintf(name, sizeof name, "%s.weight", n->dense);
    if (c->failed || !st_find(c->st, name)) return;
    const char *prefix = c->prefix;
    c->prefix = "";   /* get_ln and get add the encoder prefix, which the head does not carry */
    w->mlm_dense_w = mat_full(c, name, 0, d, d);
    snprintf(name, sizeof name, "%s.bias", n->dense);
    w->mlm_dense_b = get_full(c, name, 0, d, 0);
    get_ln(c, &w->mlm_ln_w, &w->mlm_ln_b, d, n->ln);
    c->prefix = prefix;
    w->lm_head = mat_full(c, n->decoder, 1, v, d);
    if (!w->lm_head && !k->tied_head)
        ctx_fail(c, "missing tensor '%s' (tie_word_embeddings is false)", n->decoder);
    if (!w->lm_head) w->lm_head = w->tok_emb;
    w->lm_head_b = get_full(c, n->bias, 1, v, 0);
    if (!w->lm_head_b) w->lm_head_b = get_full(c, n->decoder_bias, 0, v, 0);
}

/* ---- tensors of the newer families -------------------------------------------------------- */

/* Phi (§3.2): one input_layernorm, biased q/k/v, output 'dense', fc1/fc2, optional per-head
 * q/k LayerNorms. */
static void load_phi_layer(hf_ctx *c, const model_config *k, model_layer *y, int l) {
    int64_t d = k->d_model, f = k->d_ff, hd = k->head_dim, qd = (int64_t)k->n_head * hd, kd = (int64_t)k->n_kv_head * hd;
    char n[128];
    snprintf(n, sizeof n, "layers.%d.input_layernorm", l);
    get_ln(c, &y->ln1_w, &y->ln1_b, d, n);
    y->wq = mat(c, 0, qd, d, "layers.%d.self_attn.q_proj.weight", l);
    y->bq = get(c, 0, qd, 0, "layers.%d.self_attn.q_proj.bias", l);
    y->wk = mat(c, 0, kd, d, "layers.%d.self_attn.k_proj.weight", l);
    y->bk = get(c, 0, kd, 0, "layers.%d.self_attn.k_proj.bias", l);
    y->wv = mat(c, 0, kd, d, "layers.%d.self_attn.v_proj.weight", l);
    y->bv = get(c, 0, kd, 0, "layers.%d.self_attn.v_proj.bias", l);
    y->wo = mat(c, 0, d, qd, "layers.%d.self_attn.dense.weight", l);
    y->bo = get(c, 0, d, 0, "layers.%d.self_attn.dense.bias", l);
    y->w_up = mat(c, 0, f, d, "layers.%d.mlp.fc1.weight", l);
    y->b_up = get(c, 0, f, 0, "layers.%d.mlp.fc1.bias", l);
    y->w_down = mat(c, 0, d, f, "layers.%d.mlp.fc2.weight", l);
    y->b_down = get(c, 0, d, 0, "layers.%d.mlp.fc2.bias", l);
    if (!k->qk_norm) return;
    snprintf(n, sizeof n, "layers.%d.self_attn.q_layernorm", l);
    get_ln(c, &y->q_norm_w, &y->q_norm_b, hd, n);
    snprintf(n, sizeof n, "layers.%d.self_attn.k_layernorm", l);
    get_ln(c, &y->k_norm_w, &y->k_norm_b, hd, n);
}

/* Mistral, Gemma, Gemma2, Qwen3 (§4.2, §5.2, §6.2, §9.2): Llama's names; no biases except
 * attention_bias (Gemma, Qwen3: q, k, v and o; Mistral has none); Gemma2's two extra norms;
 * Qwen3's q_norm/k_norm. */
static void load_gated_layer(hf_ctx *c, const model_config *k, model_layer *y, int l) {
    int64_t d = k->d_model, f = k->d_ff, hd = k->head_dim, qd = (int64_t)k->n_head * hd, kd = (int64_t)k->n_kv_head * hd;
    int bias = k->family != FAM_MISTRAL && cfg_flag(c, "attention_bias", 0);
    y->ln1_w = get(c, 0, d, 0, "layers.%d.input_layernorm.weight", l);
    y->ln2_w = get(c, 0, d, 0, "layers.%d.post_attention_layernorm.weight", l);
    if (k->block == BLOCK_SANDWICH) {
        y->ln3_w = get(c, 0, d, 0, "layers.%d.pre_feedforward_layernorm.weight", l);
        y->ln4_w = get(c, 0, d, 0, "layers.%d.post_feedforward_layernorm.weight", l);
    }
    y->wq = mat(c, 0, qd, d, "layers.%d.self_attn.q_proj.weight", l);
    y->wk = mat(c, 0, kd, d, "layers.%d.self_attn.k_proj.weight", l);
    y->wv = mat(c, 0, kd, d, "layers.%d.self_attn.v_proj.weight", l);
    y->wo = mat(c, 0, d, qd, "layers.%d.self_attn.o_proj.weight", l);
    if (bias) {
        y->bq = get(c, 0, qd, 0, "layers.%d.self_attn.q_proj.bias", l);
        y->bk = get(c, 0, kd, 0, "layers.%d.self_attn.k_proj.bias", l);
        y->bv = get(c, 0, kd, 0, "layers.%d.self_attn.v_proj.bias", l);
        y->bo = get(c, 0, d, 0, "layers.%d.self_attn.o_proj.bias", l);
    }
    if (k->qk_norm) {
        y->q_norm_w = get(c, 0, hd, 0, "layers.%d.self_attn.q_norm.weight", l);
        y->k_norm_w = get(c, 0, hd, 0, "layers.%d.self_attn.k_norm.weight", l);
    }
    y->w_gate = mat(c, 0, f, d, "layers.%d.mlp.gate_proj.weight", l);
    y->w_up = mat(c, 0, f, d, "layers.%d.mlp.up_proj.weight", l);
    y->w_down = mat(c, 0, d, f, "layers.%d.mlp.down_proj.weight", l);
}

/* OPT (§8.2): every projection biased unless enable_bias is false. */
static void load_opt_layer(hf_ctx *c, const model_config *k, model_layer *y, int l) {
    int64_t d = k->d_model, f = k->d_ff;
    int nb = !cfg_flag(c, "enable_bias", 1);
    char n[128];
    snprintf(n, sizeof n, "layers.%d.self_attn_layer_norm", l);
    get_ln(c, &y->ln1_w, &y->ln1_b, d, n);
    snprintf(n, sizeof n, "layers.%d.final_layer_norm", l);
    get_ln(c, &y->ln2_w, &y->ln2_b, d, n);
    y->wq = mat(c, 0, d, d, "layers.%d.self_attn.q_proj.weight", l);
    y->wk = mat(c, 0, d, d, "layers.%d.self_attn.k_proj.weight", l);
    y->wv = mat(c, 0, d, d, "layers.%d.self_attn.v_proj.weight", l);
    y->wo = mat(c, 0, d, d, "layers.%d.self_attn.out_proj.weight", l);
    y->w_up = mat(c, 0, f, d, "layers.%d.fc1.weight", l);
    y->w_down = mat(c, 0, d, f, "layers.%d.fc2.weight", l);
    if (nb) return;
    y->bq = get(c, 0, d, 0, "layers.%d.self_attn.q_proj.bias", l);
    y->bk = get(c, 0, d, 0, "layers.%d.self_attn.k_proj.bias", l);
    y->bv = get(c, 0, d, 0, "layers.%d.self_attn.v_proj.bias", l);
    y->bo = get(c, 0, d, 0, "layers.%d.self_attn.out_proj.bias", l);
    y->b_up = get(c, 0, f, 0, "layers.%d.fc1.bias", l);
    y->b_down = get(c, 0, d, 0, "layers.%d.fc2.bias", l);
}

/* Which layers slide (§11): Mistral every layer unless sliding_window is null (absent = 4096);
 * Gemma2 the even layers, or those layer_types marks "sliding_attention"; Qwen3 only with
 * use_sliding_window, layers ≥ max_window_layers or as layer_types says. */
static void set_windows(hf_ctx *c, const model_config *k, model_layer *layers) {
    int W = 0, from = 0, alternate = 0, big = 1 << 30;
    if (k->family == FAM_MISTRAL) {
        W = (int)more_null_off(c, "sliding_window", 4096);
    } else if (k->family == FAM_GEMMA2) {
        W = (int)more_null_off(c, "sliding_window", 4096);
        alternate = 1;
    } else if (k->family == FAM_QWEN3 && cfg_flag(c, "use_sliding_window", 0)) {
        W = (int)more_null_off(c, "sliding_window", 4096);
        from = more_int(c, "max_window_layers", 28, 0, big);
    } else {
        return;
    }
    if (W < 0 || c->failed) {
        ctx_fail(c, "config.json: 'sliding_window' %d is negative", W);
        return;
    }
    json_t *types = json_object_get(c->cfg, "layer_types");
    if (types && !json_is_null(types) && (!json_is_array(types) || (int)json_array_size(types) != k->n_layer)) {
        ctx_fail(c, "config.json: 'layer_types' is not a list of %d layer types", k->n_layer);
        return;
    }
    for (int l = 0; l < k->n_layer; l++) {
        int slide = alternate ? l % 2 == 0 : l >= from;
        if (json_is_array(types)) {
            const char *t = json_string_value(json_array_get(types, (size_t)l));
            if (!t || (strcmp(t, "sliding_attention") && strcmp(t, "full_attention"))) {
                ctx_fail(c, "config.json: layer_types[%d] is not \"sliding_attention\" or \"full_attention\"", l);
                return;
            }
            slide = !strcmp(t, "sliding_attention");
        }
        layers[l].window = slide ? W : 0;
    }
}

/* Embeddings, layers, final norm and head of the newer families. */
static void load_more(hf_ctx *c, model *m) {
    model_config *k = &m->cfg;
    model_weights *w = &m->w;
    int64_t d = k->d_model, v = k->vocab, e = k->d_embed > 0 ? k->d_embed : d;
    static const char *const llama[] = {"model.", "", NULL}, *const opt[] = {"model.decoder.", "decoder.", "", NULL},
                             *const rob[] = {"roberta.", "", NULL};
    switch (k->family) {
    case FAM_PHI:
        pick_prefix(c, llama, "embed_tokens.weight");
        w->tok_emb = mat(c, 0, v, d, "embed_tokens.weight");
        get_ln(c, &w->lnf_w, &w->lnf_b, d, "final_layernorm");
        for (int l = 0; l < k->n_layer; l++) load_phi_layer(c, k, &w->layers[l], l);
        load_head(c, k, w, "lm_head.weight");
        w->lm_head_b = get_full(c, "lm_head.bias", 0, v, 0);
        break;
    case FAM_MISTRAL:
    case FAM_GEMMA:
    case FAM_GEMMA2:
    case FAM_QWEN3:
        pick_prefix(c, llama, "embed_tokens.weight");
        w->tok_emb = mat(c, 0, v, d, "embed_tokens.weight");
        w->lnf_w = get(c, 0, d, 0, "norm.weight");
        for (int l = 0; l < k->n_layer; l++) load_gated_layer(c, k, &w->layers[l], l);
        load_head(c, k, w, "lm_head.weight");
        set_windows(c, k, w->layers);
        break;
    case FAM_OPT:
        pick_prefix(c, opt, "embed_tokens.weight");
        w->tok_emb = mat(c, 0, v, e, "embed_tokens.weight");
        w->pos_emb = get(c, 0, k->max_pos + k->pos_offset, d, "embed_positions.weight");
        if (k->d_embed) {
            w->proj_in = get(c, 0, d, e, "project_in.weight");
            w->proj_out = get(c, 0, e, d, "project_out.weight");
        }
        if (k->block == BLOCK_PRE_LN && !cfg_flag(c, "_remove_final_layer_norm", 0))
            get_ln(c, &w->lnf_w, &w->lnf_b, d, "final_layer_norm");
        for (int l = 0; l < k->n_layer; l++) load_opt_layer(c, k, &w->layers[l], l);
        /* the head is tied in every OPT release; an untied file must carry its own */
        w->lm_head = k->tied_head ? w->tok_emb : mat_full(c, "lm_head.weight", 0, v, e);
        break;
    case FAM_ROBERTA:
        pick_prefix(c, rob, "embeddings.word_embeddings.weight");
        w->tok_emb = mat(c, 0, v, d, "embeddings.word_embeddings.weight");
        w->pos_emb = get(c, 0, k->max_pos + k->pos_offset, d, "embeddings.position_embeddings.weight");
        w->type_emb = get(c, 0, more_int(c, "type_vocab_size", 2, 1, 1 << 16), d, "embeddings.token_type_embeddings.weight");
        get_ln(c, &w->emb_ln_w, &w->emb_ln_b, d, "embeddings.LayerNorm");
        for (int l = 0; l < k->n_layer; l++) load_bert_layer(c, k, &w->layers[l], l);
        load_mlm_head(c, k, w, &(mlm_names){"lm_head.dense", "lm_head.layer_norm", "lm_head.decoder.weight",
                                            "lm_head.bias", "lm_head.decoder.bias"});
        break;
    default:
        break;
    }
}

/* ---- ViT tensors (docs/FAMILIES.md §12) -------------------------------------------- */

static void load_vit_layer(hf_ctx *c, const model_config *k, model_layer *y, int l) {
    int64_t d = k->d_model, f = k->d_ff;
    int qkv_bias = cfg_flag(c, "qkv_bias", 1);
    char n[160];
    snprintf(n, sizeof n, "encoder.layer.%d.layernorm_before", l);
    get_ln(c, &y->ln1_w, &y->ln1_b, d, n);
    snprintf(n, sizeof n, "encoder.layer.%d.layernorm_after", l);
    get_ln(c, &y->ln2_w, &y->ln2_b, d, n);
    y->wq = mat(c, 0, d, d, "encoder.layer.%d.attention.attention.query.weight", l);
    y->wk = mat(c, 0, d, d, "encoder.layer.%d.attention.attention.key.weight", l);
    y->wv = mat(c, 0, d, d, "encoder.layer.%d.attention.attention.value.weight", l);
    if (qkv_bias) {
        y->bq = get(c, 0, d, 0, "encoder.layer.%d.attention.attention.query.bias", l);
        y->bk = get(c, 0, d, 0, "encoder.layer.%d.attention.attention.key.bias", l);
        y->bv = get(c, 0, d, 0, "encoder.layer.%d.attention.attention.value.bias", l);
    }
    y->wo = mat(c, 0, d, d, "encoder.layer.%d.attention.output.dense.weight", l);
    y->bo = get(c, 0, d, 0, "encoder.layer.%d.attention.output.dense.bias", l);
    y->w_up = mat(c, 0, f, d, "encoder.layer.%d.intermediate.dense.weight", l);
    y->b_up = get(c, 0, f, 0, "encoder.layer.%d.intermediate.dense.bias", l);
    y->w_down = mat(c, 0, d, f, "encoder.layer.%d.output.dense.weight", l);
    y->b_down = get(c, 0, d, 0, "encoder.layer.%d.output.dense.bias", l);
}

/* ViTForImageClassification (prefix vit., classifier outside it) or a bare ViTModel (no prefix,
 * no classifier; its pooler is not used). Conv2d [d, C, P, P] is already the GEMM's [d, C·P·P]. */
static void load_vit(hf_ctx *c, model *m) {
    model_config *k = &m->cfg;
    model_weights *w = &m->w;
    static const char *const vit[] = {"vit.", "", NULL};
    int64_t d = k->d_model, P = k->patch_size, T = k->max_pos;
    pick_prefix(c, vit, "embeddings.cls_token");
    char n[256];
    snprintf(n, sizeof n, "%sembeddings.cls_token", c->prefix);
    w->cls_token = get_shape(c, n, 0, 3, (int64_t[]){1, 1, d});
    snprintf(n, sizeof n, "%sembeddings.position_embeddings", c->prefix);
    w->pos_emb = get_shape(c, n, 0, 3, (int64_t[]){1, T, d});
    snprintf(n, sizeof n, "%sembeddings.patch_embeddings.projection.weight", c->prefix);
    w->patch_w = get_shape(c, n, 0, 4, (int64_t[]){d, k->n_channels, P, P});
    w->patch_b = get(c, 0, d, 0, "embeddings.patch_embeddings.projection.bias");
    for (int l = 0; l < k->n_layer; l++) load_vit_layer(c, k, &w->layers[l], l);
    get_ln(c, &w->lnf_w, &w->lnf_b, d, "layernorm");
    w->lm_head = get_full(c, "classifier.weight", 1, k->vocab, d);
    if (w->lm_head) w->lm_head_b = get_full(c, "classifier.bias", 0, k->vocab, 0);
}

static void load_weights(hf_ctx *c, model *m) {
    model_config *k = &m->cfg;
    model_weights *w = &m->w;
    int64_t d = k->d_model, v = k->vocab;
    w->layers = c->hs->layers = xcalloc((size_t)k->n_layer, sizeof *w->layers);
    static const char *const gpt2[] = {"", "transformer.", NULL}, *const neox[] = {"gpt_neox.", "", NULL},
                             *const llama[] = {"model.", "", NULL}, *const bert[] = {"bert.", "", NULL};
    switch (k->family) {
    case FAM_GPT2:
        pick_prefix(c, gpt2, "wte.weight");
        w->tok_emb = mat(c, 0, v, d, "wte.weight");
        w->pos_emb = k->learned_pos ? get(c, 0, k->max_pos, d, "wpe.weight") : NULL;
        get_ln(c, &w->lnf_w, &w->lnf_b, d, "ln_f");
        for (int l = 0; l < k->n_layer; l++) load_gpt2_layer(c, k, &w->layers[l], l);
        load_head(c, k, w, "lm_head.weight");
        break;
    case FAM_NEOX:
        pick_prefix(c, neox, "embed_in.weight");
        w->tok_emb = mat(c, 0, v, d, "embed_in.weight");
        get_ln(c, &w->lnf_w, &w->lnf_b, d, "final_layer_norm");
        for (int l = 0; l < k->n_layer; l++) load_neox_layer(c, k, &w->layers[l], l);
        load_head(c, k, w, "embed_out.weight");
        break;
    case FAM_LLAMA:
    case FAM_QWEN2:
        pick_prefix(c, llama, "embed_tokens.weight");
        w->tok_emb = mat(c, 0, v, d, "embed_tokens.weight");
        if (k->learned_pos) w->pos_emb = get(c, 0, k->max_pos, d, "embed_positions.weight");
        w->lnf_w = get(c, 0, d, 0, "norm.weight");
        for (int l = 0; l < k->n_layer; l++) load_llama_layer(c, k, &w->layers[l], l);
        load_head(c, k, w, "lm_head.weight");
        break;
    case FAM_BERT:
        pick_prefix(c, bert, "embeddings.word_embeddings.weight");
        w->tok_emb = mat(c, 0, v, d, "embeddings.word_embeddings.weight");
        w->pos_emb = get(c, 0, k->max_pos, d, "embeddings.position_embeddings.weight");
        w->type_emb = get(c, 0, (int64_t)CFG(c, 2, "type_vocab_size"), d, "embeddings.token_type_embeddings.weight");
        get_ln(c, &w->emb_ln_w, &w->emb_ln_b, d, "embeddings.LayerNorm");
        for (int l = 0; l < k->n_layer; l++) load_bert_layer(c, k, &w->layers[l], l);
        load_mlm_head(c, k, w, &(mlm_names){"cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                                            "cls.predictions.decoder.weight", "cls.predictions.bias",
                                            "cls.predictions.decoder.bias"});
        break;
    case FAM_VIT:
        load_vit(c, m);
        break;
    default:
        load_more(c, m);
    }
}

/* ---- entry ------------------------------------------------------------------------------- */

static void hf_release(model *m) {
    hf_state *h = m->owner;
    if (!h) return;
    for (int i = 0; i < h->nviews; i++) half_view_drop(h->views[i]);
    free(h->views);
    st_close(h->st);
    for (int i = 0; i < h->nowned; i++) free(h->owned[i]);
    free(h->owned);
    free(h->inv_freq);
    free(h->layers);
    free(h);
    for (int i = 0; i < m->n_files; i++) free(m->files[i]);
    free(m->files);
    free(m->files_sha256);
    m->owner = NULL;
}

/* Record a file read, with its checksum for provenance. */
static int add_file(model *m, const char *path, char *err, size_t errlen) {
    m->files = xrealloc(m->files, sizeof *m->files * (size_t)(m->n_files + 1));
    m->files_sha256 = xrealloc(m->files_sha256, sizeof *m->files_sha256 * (size_t)(m->n_files + 1));
    m->files[m->n_files] = xstrdup(path);
    if (cli_sha256_file(path, m->files_sha256[m->n_files++]) != 0) {
        snprintf(err, errlen, "%s: cannot read", path);
        return -1;
    }
    return 0;
}

/* config.json only: the parsed configuration and the per-layer windows, no weights (--info). */
static void config_only(hf_ctx *c, model *m) {
    m->w.layers = c->hs->layers = xcalloc((size_t)m->cfg.n_layer, sizeof *m->w.layers);
    set_windows(c, &m->cfg, m->w.layers);
}

static model *load_hf(const char *dir, int with_weights, char *err, size_t errlen) {
    model *m = xcalloc(1, sizeof *m);
    hf_ctx c = {.err = err, .errlen = errlen};
    snprintf(c.dir, sizeof c.dir, "%s", dir);
    snprintf(m->source, sizeof m->source, "%s", dir);
    m->owner = c.hs = xcalloc(1, sizeof *c.hs);
    m->release = hf_release;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_error_t je;
    struct stat st;
    int is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    cli_input_note(path);
    c.cfg = is_dir ? NULL : json_load_file(path, 0, &je);
    if (!json_is_object(c.cfg)) {
        snprintf(err, errlen, "%s: %s", path, is_dir ? "is a directory, expected a JSON file" : c.cfg ? "not a JSON object" : je.text);
        c.failed = 1;   /* valid JSON that is not an object leaves c.cfg set */
    } else {
        if (add_file(m, path, err, errlen)) c.failed = 1;
        if (!c.failed) parse_config(&c, &m->cfg);
        if (!c.failed && !with_weights) config_only(&c, m);
        if (!c.failed && with_weights && !(c.st = c.hs->st = st_open_dir(dir, err, errlen))) c.failed = 1;
        if (!c.failed && with_weights) load_weights(&c, m);
    }
    json_decref(c.cfg);
    if (!c.cfg || c.failed) {
        model_free(m);
        return NULL;
    }
    if (!with_weights) return m;
    char index[4096];
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    int sharded = access(index, R_OK) == 0, bad = sharded && add_file(m, index, err, errlen);
    for (int i = 0; i < st_nfiles(c.st) && !bad; i++) bad = add_file(m, st_file_path(c.st, i), err, errlen);
    if (bad) {
        model_free(m);
        return NULL;
    }
    /* the main file: the index when sharded, else the one safetensors file */
    memcpy(m->sha256, m->files_sha256[1], sizeof m->sha256);
    return m;
}

model *model_load_hf(const char *dir, char *err, size_t errlen) {
    return load_hf(dir, 1, err, errlen);
}

model *model_load_hf_config(const char *dir, char *err, size_t errlen) {
    return load_hf(dir, 0, err, errlen);
}

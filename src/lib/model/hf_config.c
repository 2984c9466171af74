/* hf_config: config.json of a Hugging Face model directory → model_config (see hf_config.h).
 * Follows docs/FAMILIES.md: config defaults per family (§3–§8), old and new RoPE spellings
 * (§1, §2), sliding windows (§11), ViT (§12). */
#include "hf_config.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "posenc.h"

void hf_fail(hf_ctx *c, const char *fmt, ...) {
    if (c->failed) return;
    c->failed = 1;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s: %s", c->dir, msg);
}

float *hf_own(hf_ctx *c, size_t n) {
    hf_state *h = c->hs;
    h->owned = xrealloc(h->owned, sizeof *h->owned * (size_t)(h->nowned + 1));
    return h->owned[h->nowned++] = xmalloc(sizeof(float) * (n ? n : 1));
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
            hf_fail(c, "config.json: '%s' = %g%s must be in (0, 1)", k, x, src);
            return 1e-5;
        }
        return x;
    }
    long long v;
    char why[128];
    if (cli_num_to_ll(x, -INT_MAX, INT_MAX, &v, why, sizeof why)) {
        hf_fail(c, "config.json: '%s'%s: %s", k, src, why);
        return 0;
    }
    return (double)v;
}

/* First present numeric key of a NULL-terminated list in obj; def when none. null counts as
 * absent (GPT-2's n_inner: null). */
double hf_cfg_num_in(hf_ctx *c, json_t *obj, double def, const char *key, ...) {
    va_list ap;
    va_start(ap, key);
    for (const char *k = key; k; k = va_arg(ap, const char *)) {
        json_t *v = obj ? json_object_get(obj, k) : NULL;
        if (!v || json_is_null(v)) continue;
        va_end(ap);
        if (json_is_number(v)) return cfg_check(c, k, json_number_value(v), 1);
        hf_fail(c, "config.json: '%s' is %s, expected a number", k, json_is_boolean(v) ? "a boolean" : "not a number");
        return def;
    }
    va_end(ap);
    return cfg_check(c, key, def, 0);
}

/* A flag of config.json: true/false as Hugging Face writes booleans, 0/1 where older files (and
 * PretrainedConfig, which tests truthiness) carry numbers; def when absent or null. Every boolean key
 * of every family is read here, so none is refused for being a JSON boolean. */
int hf_cfg_flag(hf_ctx *c, const char *key, int def) {
    json_t *v = json_object_get(c->cfg, key);
    if (!v || json_is_null(v)) return def;
    if (json_is_boolean(v)) return json_is_true(v);
    if (json_is_number(v) && (json_number_value(v) == 0 || json_number_value(v) == 1))
        return json_number_value(v) != 0;
    if (json_is_number(v))
        hf_fail(c, "config.json: '%s' = %g: expected true, false, 0 or 1", key, json_number_value(v));
    else
        hf_fail(c, "config.json: '%s' is not a boolean: expected true, false, 0 or 1", key);
    return def;
}

/* What Hugging Face itself refuses when it builds the model, so it is refused here as well. */
static void cfg_check_model(hf_ctx *c, const model_config *k) {
    int split_heads = k->family == FAM_GPT2 || k->family == FAM_BERT || k->family == FAM_NEOX;
    if (split_heads && k->n_head > 0 && k->d_model % k->n_head)
        hf_fail(c, "config.json: the hidden size %d is not a multiple of the head count %d", k->d_model, k->n_head);
    if (k->family == FAM_BERT && k->vocab > 0 && (k->pad_id < 0 || k->pad_id >= k->vocab))
        hf_fail(c, "config.json: 'pad_token_id' = %d is outside the vocabulary [0, %d)", k->pad_id, k->vocab);
}

/* The sizes every family needs. head_dim is also bounded above because the RoPE table (one
 * correctly rounded power per frequency) is built from the config alone, before any tensor can
 * contradict it: head_dim 2^30 ran past 20 s there (fuzz_config). Released models use <= 256. */
#define HF_HEAD_DIM_MAX 16384
static void cfg_check_sizes(hf_ctx *c, const model_config *k) {
    if (k->d_model <= 0 || k->n_layer <= 0 || k->n_head <= 0 || k->n_kv_head <= 0 || k->head_dim <= 0 ||
        k->d_ff <= 0 || k->vocab <= 0 || k->max_pos <= 0 || k->n_head % k->n_kv_head)
        hf_fail(c, "config.json: sizes missing or inconsistent (hidden %d, layers %d, heads %d/%d, "
                   "head_dim %d, ffn %d, vocab %d)", k->d_model, k->n_layer, k->n_head, k->n_kv_head,
                k->head_dim, k->d_ff, k->vocab);
    else if (k->head_dim > HF_HEAD_DIM_MAX)
        hf_fail(c, "config.json: head_dim %d (hidden size / heads, or 'head_dim') is above %d", k->head_dim,
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
    hf_fail(c, "config.json: activation '%s' is not supported", s);
    return -1;
}

/* RoPE: rope_parameters (v5) or rope_scaling (v4, type key "type" or "rope_type"), with the
 * theta and partial factor from whichever spelling is present. */
static void parse_rope(hf_ctx *c, model_config *k) {
    json_t *rp = json_object_get(c->cfg, "rope_parameters");
    if (!json_is_object(rp)) rp = json_object_get(c->cfg, "rope_scaling");
    if (!json_is_object(rp)) rp = NULL;
    int neox = k->family == FAM_NEOX;
    double theta = hf_cfg_num_in(c, rp, 0, "rope_theta", (const char *)NULL);
    if (theta == 0) theta = neox ? CFG(c, 10000, "rope_theta", "rotary_emb_base") : CFG(c, 10000, "rope_theta");
    double pf = hf_cfg_num_in(c, rp, 0, "partial_rotary_factor", (const char *)NULL);
    if (pf == 0) pf = neox ? CFG(c, 0.25, "partial_rotary_factor", "rotary_pct") : CFG(c, k->family == FAM_PHI ? 0.5 : 1.0, "partial_rotary_factor");
    if (!(theta > 0 && theta < FLT_MAX && pf > 0 && pf <= 1)) {
        hf_fail(c, "config.json: bad RoPE settings (theta %g, partial rotary factor %g)", theta, pf);
        return;
    }
    k->rope_theta = (float)theta;
    k->rotary_dim = (int)(k->head_dim * pf);
    k->rotary_dim -= k->rotary_dim % 2;
    if (theta <= 0 || k->rotary_dim <= 0 || k->rotary_dim > k->head_dim) {
        hf_fail(c, "config.json: bad RoPE settings (theta %g, rotary dims %d of %d)", theta, k->rotary_dim,
                k->head_dim);
        return;
    }
    c->hs->inv_freq = xmalloc(sizeof(float) * (size_t)(k->rotary_dim / 2));
    k->inv_freq = c->hs->inv_freq;
    model_rope_default(k->inv_freq, k->rotary_dim, theta);
    const char *type = rp ? cfg_str(rp, "rope_type", cfg_str(rp, "type", "default")) : "default";
    /* dynamic NTK only changes anything beyond max_position_embeddings, which forward refuses */
    if (!strcmp(type, "default") || !strcmp(type, "dynamic")) return;
    double factor = hf_cfg_num_in(c, rp, 0, "factor", (const char *)NULL);
    if (factor <= 0) {
        hf_fail(c, "config.json: rope type '%s' needs a positive factor", type);
        return;
    }
    if (!strcmp(type, "linear")) {
        for (int i = 0; i < k->rotary_dim / 2; i++) k->inv_freq[i] /= (float)factor;
    } else if (!strcmp(type, "llama3")) {
        double lo = hf_cfg_num_in(c, rp, 0, "low_freq_factor", (const char *)NULL);
        double hi = hf_cfg_num_in(c, rp, 0, "high_freq_factor", (const char *)NULL);
        double orig = hf_cfg_num_in(c, rp, 0, "original_max_position_embeddings", (const char *)NULL);
        if (lo <= 0 || hi <= lo || orig <= 0) {
            hf_fail(c, "config.json: llama3 rope scaling needs low_freq_factor < high_freq_factor and "
                       "original_max_position_embeddings");
            return;
        }
        model_rope_llama3(k->inv_freq, k->rotary_dim, factor, lo, hi, orig);
    } else {
        hf_fail(c, "config.json: rope type '%s' is not supported (default, linear, dynamic, llama3)", type);
    }
}

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
        hf_fail(c, "config.json: 'attncoda_position_encoding' must be one of " POSENC_CHOICES);
        return;
    }
    if (k->family == FAM_BERT && (pos == POS_LEARNED || pos == POS_SINUSOIDAL)) {
        k->trained_pos = pos + 1;   /* the table is position_embeddings.weight either way */
        return;
    }
    if (k->family != FAM_GPT2 && k->family != FAM_LLAMA) {
        hf_fail(c, "config.json: 'attncoda_position_encoding' is only defined for gpt2 and llama "
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
            hf_fail(c, "config.json: rope_theta %.17g is not attncoda_rope_base_theta %g x "
                       "attncoda_rope_ntk_factor %g ^ (head_dim/(head_dim-2))", theta, base, s);
    }
    if (pos == POS_ALIBI && (k->n_head < 1 || k->n_head > 65536)) {   /* one slope per head, built here */
        hf_fail(c, "config.json: ALiBi with %d heads (1 to 65536)", k->n_head);
        return;
    }
    if (pos == POS_ALIBI) {
        float *m = hf_own(c, (size_t)k->n_head);
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
int hf_cfg_int(hf_ctx *c, const char *key, double def, int lo, int hi) {
    double v = CFG(c, def, key);
    long long out;
    char why[128];
    if (c->failed) return lo;
    if (cli_num_to_ll(v, lo, hi, &out, why, sizeof why)) {
        hf_fail(c, "config.json: '%s': %s", key, why);
        return lo;
    }
    return (int)out;
}

/* A key whose explicit null means "off" while its absence means the class default (Mistral's
 * sliding_window, Gemma2's soft-caps): 0 for null, def when absent. */
double hf_cfg_null_off(hf_ctx *c, const char *key, double def) {
    json_t *v = json_object_get(c->cfg, key);
    if (v && json_is_null(v)) return 0;
    return CFG(c, def, key);
}

/* Flags the forward pass cannot honour, refused by name when they ask for something else. */
static void more_refuse(hf_ctx *c, const char *key, int allowed) {
    if (c->failed || hf_cfg_flag(c, key, allowed) == allowed) return;
    hf_fail(c, "config.json: '%s' other than %d is not supported", key, allowed);
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
            hf_fail(c, "config.json: '%s' = %g is outside the vocabulary [0, %d)", keys[i], v, k->vocab);
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
        util_warn("%s/config.json: hidden_act '%s' not used: %s uses hidden_activation, default gelu_pytorch_tanh",
                  c->dir, legacy, gemma2 ? "Gemma2" : "Gemma");
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
        k->max_pos = hf_cfg_int(c, "max_position_embeddings", 2048, 1, big);
        k->tied_head = hf_cfg_flag(c, "tie_word_embeddings", 0);
        k->qk_norm = hf_cfg_flag(c, "qk_layernorm", 0);
        act = cfg_str(c->cfg, "hidden_act", "gelu_new");
        k->bos_id = hf_cfg_int(c, "bos_token_id", 1, -1, big);
        k->eos_id = hf_cfg_int(c, "eos_token_id", 2, -1, big);
        if (k->n_head > 0 && k->head_dim != k->d_model / k->n_head)
            hf_fail(c, "config.json: 'head_dim' %d is not hidden_size / num_attention_heads (Phi has no head_dim)",
                    k->head_dim);
        break;
    case FAM_MISTRAL:
        k->max_pos = hf_cfg_int(c, "max_position_embeddings", 131072, 1, big);
        k->tied_head = hf_cfg_flag(c, "tie_word_embeddings", 0);
        k->bos_id = hf_cfg_int(c, "bos_token_id", 1, -1, big);
        k->eos_id = hf_cfg_int(c, "eos_token_id", 2, -1, big);
        break;
    case FAM_GEMMA:
    case FAM_GEMMA2:
        k->norm = NORM_RMS_OFFSET;
        k->head_dim = hf_cfg_int(c, "head_dim", 256, 1, big);
        k->max_pos = hf_cfg_int(c, "max_position_embeddings", 8192, 1, big);
        k->tied_head = hf_cfg_flag(c, "tie_word_embeddings", 1);
        act = gemma_act(c, k->family == FAM_GEMMA2);
        /* HF makes sqrt(hidden_size) a tensor of the activation dtype: float32 here */
        k->emb_scale = (float)sqrt((double)k->d_model);
        k->bos_id = hf_cfg_int(c, "bos_token_id", 2, -1, big);
        k->eos_id = hf_cfg_int(c, "eos_token_id", 1, -1, big);
        if (k->family == FAM_GEMMA) break;
        k->block = BLOCK_SANDWICH;
        k->attn_scale = (float)pow(CFG(c, 256, "query_pre_attn_scalar"), -0.5);
        k->attn_softcap = (float)hf_cfg_null_off(c, "attn_logit_softcapping", 50.0);
        k->final_softcap = (float)hf_cfg_null_off(c, "final_logit_softcapping", 30.0);
        more_refuse(c, "use_bidirectional_attention", 0);
        if (!(k->attn_scale > 0 && isfinite(k->attn_scale)) || k->attn_softcap < 0 || k->final_softcap < 0)
            hf_fail(c, "config.json: query_pre_attn_scalar and the soft-caps must be positive");
        break;
    case FAM_QWEN3:
        k->head_dim = hf_cfg_int(c, "head_dim", 128, 1, big);
        k->max_pos = hf_cfg_int(c, "max_position_embeddings", 32768, 1, big);
        k->tied_head = hf_cfg_flag(c, "tie_word_embeddings", 0);
        k->qk_norm = 1;
        k->bos_id = hf_cfg_int(c, "bos_token_id", -1, -1, big);
        k->eos_id = hf_cfg_int(c, "eos_token_id", -1, -1, big);
        break;
    case FAM_OPT:
        k->norm = NORM_LAYER;
        k->norm_eps = 1e-5f;   /* OPT has no eps key: torch's LayerNorm default */
        k->gated_mlp = 0;
        k->d_model = hf_cfg_int(c, "hidden_size", 768, 1, big);
        k->n_layer = hf_cfg_int(c, "num_hidden_layers", 12, 1, big);
        k->n_head = k->n_kv_head = hf_cfg_int(c, "num_attention_heads", 12, 1, big);
        k->head_dim = k->d_model / k->n_head;
        k->d_ff = hf_cfg_int(c, "ffn_dim", 3072, 1, big);
        k->vocab = hf_cfg_int(c, "vocab_size", 50272, 1, big);
        k->max_pos = hf_cfg_int(c, "max_position_embeddings", 2048, 1, big);
        k->d_embed = hf_cfg_int(c, "word_embed_proj_dim", k->d_model, 1, big);
        if (k->d_embed == k->d_model) k->d_embed = 0;
        k->block = hf_cfg_flag(c, "do_layer_norm_before", 1) ? BLOCK_PRE_LN : BLOCK_POST_LN;
        k->learned_pos = 1;
        k->pos_offset = 2;
        k->tied_head = hf_cfg_flag(c, "tie_word_embeddings", 1);
        act = cfg_str(c->cfg, "activation_function", "relu");
        k->bos_id = hf_cfg_int(c, "bos_token_id", 2, -1, big);
        k->eos_id = hf_cfg_int(c, "eos_token_id", 2, -1, big);
        more_refuse(c, "layer_norm_elementwise_affine", 1);
        /* read again with the tensors; checked here so that --info refuses what loading would */
        hf_cfg_flag(c, "_remove_final_layer_norm", 0);
        hf_cfg_flag(c, "enable_bias", 1);
        if (k->d_model % k->n_head) hf_fail(c, "config.json: hidden_size is not a multiple of the heads");
        break;
    case FAM_ROBERTA:
        k->block = BLOCK_POST_LN;
        k->norm = NORM_LAYER;
        k->norm_eps = (float)CFG(c, 1e-12, "layer_norm_eps");
        k->gated_mlp = 0;
        k->causal = 0;
        k->learned_pos = 1;
        act = cfg_str(c->cfg, "hidden_act", "gelu");
        k->bos_id = k->cls_id = hf_cfg_int(c, "bos_token_id", 0, -1, big);
        k->eos_id = k->sep_id = hf_cfg_int(c, "eos_token_id", 2, -1, big);
        if (strcmp(cfg_str(c->cfg, "position_embedding_type", "absolute"), "absolute"))
            hf_fail(c, "config.json: only absolute RoBERTa position embeddings are supported");
        break;
    default:
        break;
    }
    k->pad_id = hf_cfg_int(c, "pad_token_id", opt || rob ? 1 : (k->family == FAM_GEMMA || k->family == FAM_GEMMA2) ? 0 : -1,
                           -1, big);
    if (rob) {   /* positions padding_idx+1 … : the table's first pad+1 rows are never a real position */
        int rows = hf_cfg_int(c, "max_position_embeddings", 512, 1, big);
        k->pos_skip_pad = 1;
        k->pos_offset = k->pad_id + 1;
        k->max_pos = rows - k->pad_id - 1;
        if (k->pad_id < 0 || k->max_pos < 1)
            hf_fail(c, "config.json: pad_token_id %d leaves no positions in %d rows", k->pad_id, rows);
    }
    parse_act(c, act, &k->act);
    cfg_check_sizes(c, k);
    if (rob) {   /* RobertaLMHead applies the erf GELU whatever hidden_act says (§7.3 step 4) */
        k->head_act = ACT_GELU_ERF;
        k->tied_head = hf_cfg_flag(c, "tie_word_embeddings", 1);
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
            hf_fail(c, "config.json: '%s' must be an integer or a square pair [n, n]", key);
            return 1;
        }
        long long out;
        char why[128];
        if (cli_num_to_ll((double)json_integer_value(a), 1, 1 << 15, &out, why, sizeof why)) {
            hf_fail(c, "config.json: '%s': %s", key, why);
            return 1;
        }
        return (int)out;
    }
    return hf_cfg_int(c, key, def, 1, 1 << 15);
}

/* The classes: id2label's entries (keys "0" … "n-1"), else num_labels, else PretrainedConfig's 2. */
static int vit_classes(hf_ctx *c) {
    json_t *labels = json_object_get(c->cfg, "id2label");
    if (labels && !json_is_null(labels)) {
        if (!json_is_object(labels) || json_object_size(labels) < 1) {
            hf_fail(c, "config.json: 'id2label' is not an object of labels");
            return 1;
        }
        return (int)json_object_size(labels);
    }
    return hf_cfg_int(c, "num_labels", 2, 1, 1 << 24);
}

static void parse_vit(hf_ctx *c, model_config *k) {
    int big = 1 << 24;
    k->block = BLOCK_PRE_LN;
    k->norm = NORM_LAYER;
    k->causal = 0;
    k->d_model = hf_cfg_int(c, "hidden_size", 768, 1, big);
    k->n_layer = hf_cfg_int(c, "num_hidden_layers", 12, 1, big);
    k->n_head = k->n_kv_head = hf_cfg_int(c, "num_attention_heads", 12, 1, big);
    k->d_ff = hf_cfg_int(c, "intermediate_size", 3072, 1, big);
    k->norm_eps = (float)CFG(c, 1e-12, "layer_norm_eps");
    k->image_size = vit_side(c, "image_size", 224);
    k->patch_size = vit_side(c, "patch_size", 16);
    k->n_channels = hf_cfg_int(c, "num_channels", 3, 1, 3);
    k->vocab = vit_classes(c);
    k->bos_id = k->eos_id = k->pad_id = -1;
    hf_cfg_flag(c, "qkv_bias", 1);   /* read again with the tensors; checked here for --info */
    parse_act(c, cfg_str(c->cfg, "hidden_act", "gelu"), &k->act);
    if (c->failed) return;
    if (k->d_model % k->n_head)
        hf_fail(c, "config.json: the hidden size %d is not a multiple of the head count %d", k->d_model, k->n_head);
    if (k->patch_size > k->image_size)
        hf_fail(c, "config.json: patch_size %d exceeds image_size %d", k->patch_size, k->image_size);
    if (k->n_channels != 3)   /* images are decoded to RGB */
        hf_fail(c, "config.json: num_channels %d: only 3 (RGB) is supported", k->n_channels);
    k->head_dim = k->d_model / k->n_head;
    int g = k->image_size / k->patch_size;   /* Conv2d drops a remainder, as HF's num_patches */
    k->max_pos = 1 + g * g;
}

void hf_parse_config(hf_ctx *c, model_config *k) {
    const char *mt = cfg_str(c->cfg, "model_type", NULL);
    if (!mt) {
        hf_fail(c, "config.json: no model_type (supported: " SUPPORTED ")");
        return;
    }
    size_t i;
    for (i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++)
        if (!strcmp(mt, FAMILIES[i].type)) break;
    if (i == sizeof FAMILIES / sizeof FAMILIES[0]) {
        hf_fail(c, "config.json: model_type '%s' is not supported (supported: " SUPPORTED ")", mt);
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
        k->tied_head = hf_cfg_flag(c, "tie_word_embeddings", 1);
        act = cfg_str(c->cfg, "activation_function", "gelu_new");
        k->bos_id = (int)CFG(c, 50256, "bos_token_id");
        k->eos_id = (int)CFG(c, 50256, "eos_token_id");
        if (hf_cfg_flag(c, "scale_attn_by_inverse_layer_idx", 0))
            hf_fail(c, "config.json: scale_attn_by_inverse_layer_idx is not supported");
        break;
    case FAM_NEOX:
        k->norm = NORM_LAYER;
        k->norm_eps = (float)CFG(c, 1e-5, "layer_norm_eps");
        k->max_pos = (int)CFG(c, 2048, "max_position_embeddings");
        k->parallel_residual = hf_cfg_flag(c, "use_parallel_residual", 1);
        k->tied_head = hf_cfg_flag(c, "tie_word_embeddings", 0);
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
        k->tied_head = hf_cfg_flag(c, "tie_word_embeddings", 0);
        act = cfg_str(c->cfg, "hidden_act", "silu");
        k->bos_id = (int)CFG(c, k->family == FAM_LLAMA ? 1 : -1, "bos_token_id");
        k->eos_id = (int)CFG(c, k->family == FAM_LLAMA ? 2 : -1, "eos_token_id");
        if (k->family == FAM_QWEN2 && hf_cfg_flag(c, "use_sliding_window", 0))
            hf_fail(c, "config.json: use_sliding_window is not supported");
        break;
    case FAM_BERT:
        k->norm = NORM_LAYER;
        k->norm_eps = (float)CFG(c, 1e-12, "layer_norm_eps");
        k->max_pos = (int)CFG(c, 512, "max_position_embeddings");
        k->post_ln = 1;
        k->learned_pos = 1;
        act = cfg_str(c->cfg, "hidden_act", "gelu");
        k->tied_head = hf_cfg_flag(c, "tie_word_embeddings", 1);
        k->bos_id = k->eos_id = -1;
        if (strcmp(cfg_str(c->cfg, "position_embedding_type", "absolute"), "absolute"))
            hf_fail(c, "config.json: only absolute BERT position embeddings are supported");
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

/* Which layers slide (§11): Mistral every layer unless sliding_window is null (absent = 4096);
 * Gemma2 the even layers, or those layer_types marks "sliding_attention"; Qwen3 only with
 * use_sliding_window, layers ≥ max_window_layers or as layer_types says. */
void hf_set_windows(hf_ctx *c, const model_config *k, model_layer *layers) {
    int W = 0, from = 0, alternate = 0, big = 1 << 30;
    if (k->family == FAM_MISTRAL) {
        W = (int)hf_cfg_null_off(c, "sliding_window", 4096);
    } else if (k->family == FAM_GEMMA2) {
        W = (int)hf_cfg_null_off(c, "sliding_window", 4096);
        alternate = 1;
    } else if (k->family == FAM_QWEN3 && hf_cfg_flag(c, "use_sliding_window", 0)) {
        W = (int)hf_cfg_null_off(c, "sliding_window", 4096);
        from = hf_cfg_int(c, "max_window_layers", 28, 0, big);
    } else {
        return;
    }
    if (W < 0 || c->failed) {
        hf_fail(c, "config.json: 'sliding_window' %d is negative", W);
        return;
    }
    json_t *types = json_object_get(c->cfg, "layer_types");
    if (types && !json_is_null(types) && (!json_is_array(types) || (int)json_array_size(types) != k->n_layer)) {
        hf_fail(c, "config.json: 'layer_types' is not a list of %d layer types", k->n_layer);
        return;
    }
    for (int l = 0; l < k->n_layer; l++) {
        int slide = alternate ? l % 2 == 0 : l >= from;
        if (json_is_array(types)) {
            const char *t = json_string_value(json_array_get(types, (size_t)l));
            if (!t || (strcmp(t, "sliding_attention") && strcmp(t, "full_attention"))) {
                hf_fail(c, "config.json: layer_types[%d] is not \"sliding_attention\" or \"full_attention\"", l);
                return;
            }
            slide = !strcmp(t, "sliding_attention");
        }
        layers[l].window = slide ? W : 0;
    }
}

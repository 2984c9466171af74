/* model_hf: a Hugging Face model directory (config.json + safetensors) → model. config.json is
 * read by hf_config.c; this file maps the tensors, following docs/FAMILIES.md: name prefixes (§1)
 * and layouts (GPT-2 Conv1D transposed, NeoX fused QKV de-interleaved). Every weight ends up
 * float32 [out, in], except F16/BF16 projection matrices and token embeddings, which stay in
 * the mapping as gemm_half.h views. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "model.h"
#include "model_load.h"
#include "hf_config.h"
#include "io/safetensors.h"
#include "core/gemm_half.h"

/* ---- tensors ----------------------------------------------------------------------------- */

/* A view (gemm_half.h) of tensor name, kept for release; NULL and the error when v is NULL. */
static const float *keep_view(hf_ctx *c, const char *name, const float *v) {
    if (!v) {
        hf_fail(c, "tensor '%s': cannot reserve address space for its view", name);
        return NULL;
    }
    hf_state *h = c->hs;
    h->views = xrealloc(h->views, sizeof *h->views * (size_t)(h->nviews + 1));
    return h->views[h->nviews++] = v;
}

/* A tensor of the given rank and shape (no prefix added). */
static const float *get_shape(hf_ctx *c, const char *name, int optional, int rank, const int64_t *dims) {
    if (c->failed) return NULL;
    const st_tensor *t = st_find(c->st, name);
    if (!t) {
        if (!optional) hf_fail(c, "missing tensor '%s'", name);
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
        hf_fail(c, "tensor '%s' has shape [%s], expected [%s]", name, got, want);
        return NULL;
    }
    int bf16 = !strcmp(t->dtype, "BF16");
    if (c->keep_half && (bf16 || !strcmp(t->dtype, "F16"))) {
        return keep_view(c, name, half_view(t->data, (size_t)t->numel, bf16 ? HALF_BF16 : HALF_F16));
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

/* GPT-2's Conv1D weight [in][out] as the [out][in] matrix linear() expects: a transposed view of
 * the stored floats (gemm_half.h; no copy: transposing GPT-2-small's 500 MB took over a second).
 * get() widens F16/BF16 tensors to float32 at load, so w is never a half view. */
static const float *conv1d(hf_ctx *c, int64_t in, int64_t out, const char *name) {
    const float *w = get(c, 0, in, out, "%s", name);
    return w ? keep_view(c, name, xposed_view(w, (size_t)in, (size_t)out)) : NULL;
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
    float *q = hf_own(c, (size_t)(3 * d * d)), *bb = b ? hf_own(c, (size_t)(3 * d)) : NULL;
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
    int bias = hf_cfg_flag(c, "attention_bias", 1);
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
    int qwen = k->family == FAM_QWEN2, ab = hf_cfg_flag(c, "attention_bias", 0), mb = hf_cfg_flag(c, "mlp_bias", 0);
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
        hf_fail(c, "missing tensor '%s' (tie_word_embeddings is false)", name);
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
        hf_fail(c, "missing tensor '%s' (tie_word_embeddings is false)", n->decoder);
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
    int bias = k->family != FAM_MISTRAL && hf_cfg_flag(c, "attention_bias", 0);
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
    int nb = !hf_cfg_flag(c, "enable_bias", 1);
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
        hf_set_windows(c, k, w->layers);
        break;
    case FAM_OPT:
        pick_prefix(c, opt, "embed_tokens.weight");
        w->tok_emb = mat(c, 0, v, e, "embed_tokens.weight");
        w->pos_emb = get(c, 0, k->max_pos + k->pos_offset, d, "embed_positions.weight");
        if (k->d_embed) {
            w->proj_in = get(c, 0, d, e, "project_in.weight");
            w->proj_out = get(c, 0, e, d, "project_out.weight");
        }
        if (k->block == BLOCK_PRE_LN && !hf_cfg_flag(c, "_remove_final_layer_norm", 0))
            get_ln(c, &w->lnf_w, &w->lnf_b, d, "final_layer_norm");
        for (int l = 0; l < k->n_layer; l++) load_opt_layer(c, k, &w->layers[l], l);
        /* the head is tied in every OPT release; an untied file must carry its own */
        w->lm_head = k->tied_head ? w->tok_emb : mat_full(c, "lm_head.weight", 0, v, e);
        break;
    case FAM_ROBERTA:
        pick_prefix(c, rob, "embeddings.word_embeddings.weight");
        w->tok_emb = mat(c, 0, v, d, "embeddings.word_embeddings.weight");
        w->pos_emb = get(c, 0, k->max_pos + k->pos_offset, d, "embeddings.position_embeddings.weight");
        w->type_emb = get(c, 0, hf_cfg_int(c, "type_vocab_size", 2, 1, 1 << 16), d, "embeddings.token_type_embeddings.weight");
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
    int qkv_bias = hf_cfg_flag(c, "qkv_bias", 1);
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
    hf_set_windows(c, &m->cfg, m->w.layers);
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
        if (!c.failed) hf_parse_config(&c, &m->cfg);
        if (!c.failed && !with_weights) config_only(&c, m);
        if (!c.failed && with_weights && !(c.st = c.hs->st = st_open_dir(dir, err, errlen))) c.failed = 1;
        if (!c.failed && with_weights) load_weights(&c, m);
    }
    json_decref(c.cfg);
    if (!c.cfg || c.failed) {
        hf_release(m);
        free(m);
        return NULL;
    }
    if (!with_weights) return m;
    char index[4096];
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    int sharded = access(index, R_OK) == 0, bad = sharded && add_file(m, index, err, errlen);
    for (int i = 0; i < st_nfiles(c.st) && !bad; i++) bad = add_file(m, st_file_path(c.st, i), err, errlen);
    if (bad) {
        hf_release(m);
        free(m);
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

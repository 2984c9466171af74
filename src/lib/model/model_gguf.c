/* model_gguf: model_load_gguf for the llama (Mistral too), qwen2, qwen3, gpt2, phi2, gemma and
 * gemma2 architectures of a GGUF file (read by io/gguf.h). Tensors are converted to float32 into
 * one buffer owned by the model; llama q/k rows are permuted from Meta's interleaved-pair RoPE
 * order to half-split order (posenc.h); the other RoPE architectures are NeoX-style in llama.cpp
 * and already half-split. */
#include "model.h"
#include "model_load.h"
#include "posenc.h"
#include "io/gguf.h"
#include "core/util.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float *arena;       /* every weight, converted */
    size_t used, cap;   /* in floats */
    float *inv_freq;
    model_layer *layers;
} gguf_owner;

static void gguf_release(model *m)
{
    gguf_owner *o = m->owner;
    if (o) {
        free(o->arena);
        free(o->inv_freq);
        free(o->layers);
        free(o);
    }
    m->owner = NULL;
}

typedef struct {
    const gguf_file *g;
    gguf_owner *o;
    char *err;
    size_t errlen;
} loader;

/* Load tensor `name` (printf-style) whose shape must be ne0 × ne1 (ne1 = 0: a vector) into the
 * arena. optional: a missing tensor returns NULL without error. */
static float *load_t(loader *L, int optional, long ne0, long ne1, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static float *load_t(loader *L, int optional, long ne0, long ne1, const char *fmt, ...)
{
    char name[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const gguf_tensor *t = gguf_tensor_find(L->g, name);
    if (!t) {
        if (!optional)
            snprintf(L->err, L->errlen, "missing tensor '%s'", name);
        return NULL;
    }
    int ok = ne1 ? (t->n_dims == 2 && t->ne[0] == (uint64_t)ne0 && t->ne[1] == (uint64_t)ne1)
                 : (t->n_dims == 1 && t->ne[0] == (uint64_t)ne0);
    if (!ok) {
        snprintf(L->err, L->errlen, "tensor '%s' has shape [%llu, %llu], expected [%ld, %ld]", name,
                 (unsigned long long)t->ne[0], (unsigned long long)(t->n_dims > 1 ? t->ne[1] : 1),
                 ne0, ne1 ? ne1 : 1);
        return NULL;
    }
    if (L->o->used + t->nelem > L->o->cap) {
        snprintf(L->err, L->errlen, "internal error: weight buffer too small at '%s'", name);
        return NULL;
    }
    float *dst = L->o->arena + L->o->used;
    if (gguf_tensor_f32(L->g, t, dst, L->err, L->errlen) < 0)
        return NULL;
    L->o->used += t->nelem;
    return dst;
}

static int meta_int(const gguf_file *g, const char *arch, const char *suffix, int64_t def,
                    int64_t lo, int64_t hi, int *out, char *err, size_t errlen)
{
    char key[160], why[128];
    int64_t v;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int r = gguf_get_int(g, key, &v, why, sizeof why);
    const gguf_kv *kv = gguf_find(g, key);
    if (kv && kv->type == GGUF_BOOL) {   /* a size or count is never true/false */
        r = -2;
        snprintf(why, sizeof why, "a boolean, expected an integer");
    }
    if (r == -2) {
        snprintf(err, errlen, "metadata '%s': %s", key, why);
        return -1;
    }
    if (r < 0) {
        if (def < 0) {
            snprintf(err, errlen, "missing or non-numeric metadata key '%s'", key);
            return -1;
        }
        v = def;
    }
    if (v < lo || v > hi) {
        snprintf(err, errlen, "metadata '%s' = %lld is out of range [%lld, %lld]", key,
                 (long long)v, (long long)lo, (long long)hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* A real-valued "<arch>.<suffix>" key (def when absent; def NAN: required) that must lie in
 * [lo, hi]: a NaN or negative epsilon or RoPE base would turn every attention row into NaN. */
static int meta_real(const gguf_file *g, const char *arch, const char *suffix, double def, double lo,
                     double hi, double *out, char *err, size_t errlen)
{
    char key[160];
    double v;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (gguf_get_f64(g, key, &v) < 0) {
        if (isnan(def)) {
            snprintf(err, errlen, "missing or non-numeric metadata key '%s'", key);
            return -1;
        }
        v = def;
    }
    if (!(v >= lo && v <= hi)) {
        snprintf(err, errlen, "metadata '%s' = %g is out of range [%g, %g]", key, v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int special_id(const gguf_file *g, const char *key, int vocab, int def)
{
    int64_t v;
    if (gguf_get_i64(g, key, &v) < 0)
        return def;
    return v >= 0 && v < vocab ? (int)v : -1;
}

/* Hyperparameters from "<arch>.*" keys (llama.cpp's names). */
static int read_config(const gguf_file *g, const char *arch, model_config *c, char *err, size_t el)
{
    if (meta_int(g, arch, "embedding_length", -1, 1, 1 << 20, &c->d_model, err, el) < 0 ||
        meta_int(g, arch, "block_count", -1, 1, 4096, &c->n_layer, err, el) < 0 ||
        meta_int(g, arch, "attention.head_count", -1, 1, 4096, &c->n_head, err, el) < 0 ||
        meta_int(g, arch, "feed_forward_length", -1, 1, 1 << 24, &c->d_ff, err, el) < 0 ||
        meta_int(g, arch, "context_length", -1, 1, 1 << 24, &c->max_pos, err, el) < 0 ||
        meta_int(g, arch, "attention.head_count_kv", c->n_head, 1, c->n_head, &c->n_kv_head, err,
                 el) < 0)
        return -1;
    if (c->d_model % c->n_head || c->n_head % c->n_kv_head) {
        snprintf(err, el, "embedding_length %d / head_count %d / head_count_kv %d are inconsistent",
                 c->d_model, c->n_head, c->n_kv_head);
        return -1;
    }
    if (meta_int(g, arch, "attention.key_length", c->d_model / c->n_head, 1, 1 << 16, &c->head_dim,
                 err, el) < 0)
        return -1;
    return 0;
}

/* RoPE frequencies: inv_freq[i] = 1/base^(2i/dim), then llama.cpp's per-frequency divisors
 * (rope_freqs.weight, written for Llama-3 scaling) or a linear scaling factor. */
static int rope_setup(loader *L, const char *arch, model_config *c)
{
    /* Phi-2 rotates part of each head: llama.cpp's default (the whole head) would be wrong. */
    int def = c->family == FAM_PHI ? -1 : c->head_dim;
    if (meta_int(L->g, arch, "rope.dimension_count", def, 2, c->head_dim, &c->rotary_dim,
                 L->err, L->errlen) < 0)
        return -1;
    if (c->rotary_dim % 2) {
        snprintf(L->err, L->errlen, "%s.rope.dimension_count %d is odd", arch, c->rotary_dim);
        return -1;
    }
    double theta;
    if (meta_real(L->g, arch, "rope.freq_base", 10000.0, 1e-3, 1e30, &theta, L->err, L->errlen) < 0)
        return -1;
    c->rope_theta = (float)theta;
    int half = c->rotary_dim / 2;
    float *f = L->o->inv_freq = malloc(half * sizeof *f);
    model_rope_default(f, c->rotary_dim, c->rope_theta);   /* as the HF loader computes it */
    c->inv_freq = f;
    const gguf_tensor *rf = gguf_tensor_find(L->g, "rope_freqs.weight");
    if (rf) {
        float *fac = load_t(L, 0, half, 0, "rope_freqs.weight");
        if (!fac)
            return -1;
        for (int i = 0; i < half; i++)
            f[i] /= fac[i];
    }
    char key[96];
    uint64_t len;
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    const char *st = gguf_get_str(L->g, key, &len);
    if (st && len == 6 && memcmp(st, "linear", 6) == 0) {
        double fac;
        if (meta_real(L->g, arch, "rope.scaling.factor", 1.0, 1e-6, 1e6, &fac, L->err, L->errlen) < 0)
            return -1;
        for (int i = 0; i < half; i++)
            f[i] /= (float)fac;
    } else if (st && !(len == 4 && memcmp(st, "none", 4) == 0)) {
        snprintf(L->err, L->errlen, "RoPE scaling type '%.*s' is not supported", (int)len, st);
        return -1;
    }
    return 0;
}

/* Llama / Mistral / Qwen2 / Qwen3 / Gemma / Gemma2 blocks: RMSNorm, RoPE attention (GQA), gated
 * MLP. Qwen2 adds q/k/v biases, Qwen3 per-head attn_q_norm/attn_k_norm, Gemma2 the norms after
 * each branch (post_attention_norm, post_ffw_norm; ffn_norm is then its pre-MLP norm). Only
 * llama's q/k (and any biases) are permuted from Meta's interleaved order. */
static int load_llama_layer(loader *L, model_config *c, int l, model_layer *w, int permute)
{
    long d = c->d_model, qd = (long)c->n_head * c->head_dim, kd = (long)c->n_kv_head * c->head_dim;
    int bias = c->family == FAM_QWEN2, sandwich = c->block == BLOCK_SANDWICH;
    const float **mlp_norm = sandwich ? &w->ln3_w : &w->ln2_w;
    float *wq, *wk, *bq = NULL, *bk = NULL;
    if (!(w->ln1_w = load_t(L, 0, d, 0, "blk.%d.attn_norm.weight", l)) ||
        !(w->wq = wq = load_t(L, 0, d, qd, "blk.%d.attn_q.weight", l)) ||
        !(w->wk = wk = load_t(L, 0, d, kd, "blk.%d.attn_k.weight", l)) ||
        !(w->wv = load_t(L, 0, d, kd, "blk.%d.attn_v.weight", l)) ||
        !(w->wo = load_t(L, 0, qd, d, "blk.%d.attn_output.weight", l)) ||
        !(*mlp_norm = load_t(L, 0, d, 0, "blk.%d.ffn_norm.weight", l)) ||
        !(w->w_gate = load_t(L, 0, d, c->d_ff, "blk.%d.ffn_gate.weight", l)) ||
        !(w->w_up = load_t(L, 0, d, c->d_ff, "blk.%d.ffn_up.weight", l)) ||
        !(w->w_down = load_t(L, 0, c->d_ff, d, "blk.%d.ffn_down.weight", l)))
        return -1;
    if (sandwich && (!(w->ln2_w = load_t(L, 0, d, 0, "blk.%d.post_attention_norm.weight", l)) ||
                     !(w->ln4_w = load_t(L, 0, d, 0, "blk.%d.post_ffw_norm.weight", l))))
        return -1;
    if (c->qk_norm && (!(w->q_norm_w = load_t(L, 0, c->head_dim, 0, "blk.%d.attn_q_norm.weight", l)) ||
                       !(w->k_norm_w = load_t(L, 0, c->head_dim, 0, "blk.%d.attn_k_norm.weight", l))))
        return -1;
    w->bq = bq = load_t(L, !bias, qd, 0, "blk.%d.attn_q.bias", l);
    w->bk = bk = load_t(L, !bias, kd, 0, "blk.%d.attn_k.bias", l);
    w->bv = load_t(L, !bias, kd, 0, "blk.%d.attn_v.bias", l);
    if (bias && (!bq || !bk || !w->bv))
        return -1;
    if (L->err[0])
        return -1;
    if (permute) {
        llama2c_permute_qk(wq, c->n_head, c->head_dim, d);
        llama2c_permute_qk(wk, c->n_kv_head, c->head_dim, d);
        if (bq)
            llama2c_permute_qk(bq, c->n_head, c->head_dim, 1);
        if (bk)
            llama2c_permute_qk(bk, c->n_kv_head, c->head_dim, 1);
    }
    return 0;
}

/* Phi-2 blocks: one LayerNorm (attn_norm) feeding attention and MLP in parallel, biased q/k/v
 * (separate, or the fused attn_qkv of older conversions, q then k then v rows), attn_output,
 * GELU (tanh) ffn_up/ffn_down with biases. */
static int load_phi2_layer(loader *L, model_config *c, int l, model_layer *w)
{
    long d = c->d_model, qd = (long)c->n_head * c->head_dim, kd = (long)c->n_kv_head * c->head_dim;
    if (!(w->ln1_w = load_t(L, 0, d, 0, "blk.%d.attn_norm.weight", l)) ||
        !(w->ln1_b = load_t(L, 0, d, 0, "blk.%d.attn_norm.bias", l)))
        return -1;
    float *qkv = load_t(L, 1, d, qd + 2 * kd, "blk.%d.attn_qkv.weight", l);
    if (L->err[0])
        return -1;
    if (qkv) {
        float *bqkv = load_t(L, 0, qd + 2 * kd, 0, "blk.%d.attn_qkv.bias", l);
        if (!bqkv)
            return -1;
        w->wq = qkv, w->wk = qkv + qd * d, w->wv = qkv + (qd + kd) * d;
        w->bq = bqkv, w->bk = bqkv + qd, w->bv = bqkv + qd + kd;
    } else if (!(w->wq = load_t(L, 0, d, qd, "blk.%d.attn_q.weight", l)) ||
               !(w->bq = load_t(L, 0, qd, 0, "blk.%d.attn_q.bias", l)) ||
               !(w->wk = load_t(L, 0, d, kd, "blk.%d.attn_k.weight", l)) ||
               !(w->bk = load_t(L, 0, kd, 0, "blk.%d.attn_k.bias", l)) ||
               !(w->wv = load_t(L, 0, d, kd, "blk.%d.attn_v.weight", l)) ||
               !(w->bv = load_t(L, 0, kd, 0, "blk.%d.attn_v.bias", l))) {
        return -1;
    }
    if (!(w->wo = load_t(L, 0, qd, d, "blk.%d.attn_output.weight", l)) ||
        !(w->bo = load_t(L, 0, d, 0, "blk.%d.attn_output.bias", l)) ||
        !(w->w_up = load_t(L, 0, d, c->d_ff, "blk.%d.ffn_up.weight", l)) ||
        !(w->b_up = load_t(L, 0, c->d_ff, 0, "blk.%d.ffn_up.bias", l)) ||
        !(w->w_down = load_t(L, 0, c->d_ff, d, "blk.%d.ffn_down.weight", l)) ||
        !(w->b_down = load_t(L, 0, d, 0, "blk.%d.ffn_down.bias", l)))
        return -1;
    return 0;
}

/* GPT-2 blocks: LayerNorm with bias, fused QKV [3d, d] split into q, k, v, GELU (tanh) MLP. */
static int load_gpt2_layer(loader *L, model_config *c, int l, model_layer *w)
{
    long d = c->d_model;
    float *qkv, *bqkv;
    if (!(w->ln1_w = load_t(L, 0, d, 0, "blk.%d.attn_norm.weight", l)) ||
        !(w->ln1_b = load_t(L, 0, d, 0, "blk.%d.attn_norm.bias", l)) ||
        !(qkv = load_t(L, 0, d, 3 * d, "blk.%d.attn_qkv.weight", l)) ||
        !(bqkv = load_t(L, 0, 3 * d, 0, "blk.%d.attn_qkv.bias", l)) ||
        !(w->wo = load_t(L, 0, d, d, "blk.%d.attn_output.weight", l)) ||
        !(w->bo = load_t(L, 0, d, 0, "blk.%d.attn_output.bias", l)) ||
        !(w->ln2_w = load_t(L, 0, d, 0, "blk.%d.ffn_norm.weight", l)) ||
        !(w->ln2_b = load_t(L, 0, d, 0, "blk.%d.ffn_norm.bias", l)) ||
        !(w->w_up = load_t(L, 0, d, c->d_ff, "blk.%d.ffn_up.weight", l)) ||
        !(w->b_up = load_t(L, 0, c->d_ff, 0, "blk.%d.ffn_up.bias", l)) ||
        !(w->w_down = load_t(L, 0, c->d_ff, d, "blk.%d.ffn_down.weight", l)) ||
        !(w->b_down = load_t(L, 0, d, 0, "blk.%d.ffn_down.bias", l)))
        return -1;
    w->wq = qkv;
    w->wk = qkv + d * d;
    w->wv = qkv + 2 * d * d;
    w->bq = bqkv;
    w->bk = bqkv + d;
    w->bv = bqkv + 2 * d;
    return 0;
}

static size_t total_floats(const gguf_file *g)
{
    size_t n = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        n += g->tensors[i].nelem;
    return n;
}

/* The architectures, with llama.cpp's names, and what each one's block is. */
static const struct { const char *arch; model_family fam; } ARCHS[] = {
    {"llama", FAM_LLAMA}, {"qwen2", FAM_QWEN2}, {"qwen3", FAM_QWEN3}, {"gpt2", FAM_GPT2},
    {"phi2", FAM_PHI},    {"gemma", FAM_GEMMA}, {"gemma2", FAM_GEMMA2},
};
#define ARCH_LIST "llama, qwen2, gpt2, qwen3, phi2, gemma, gemma2"

static int arch_family(const char *arch, model_family *fam)
{
    for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++)
        if (strcmp(arch, ARCHS[i].arch) == 0) {
            *fam = ARCHS[i].fam;
            return 0;
        }
    return -1;
}

/* Gemma's norms are x/rms·(1 + w) in Hugging Face, but llama.cpp's converter stores 1 + w
 * (convert_hf_to_gguf.py adds 1 to every *norm.weight of gemma and gemma2), so here they are a
 * plain RMSNorm. */
static void set_family(model_config *c, const char *arch, model_family fam)
{
    c->causal = 1;
    c->pad_id = c->cls_id = c->sep_id = c->mask_id = -1;
    c->family = fam;
    c->block = BLOCK_PRE_LN;
    snprintf(c->model_type, sizeof c->model_type, "%s", arch);
    switch (fam) {
    case FAM_GPT2:
        c->norm = NORM_LAYER;
        c->act = ACT_GELU_TANH;
        c->learned_pos = 1;
        break;
    case FAM_PHI:
        c->norm = NORM_LAYER;
        c->act = ACT_GELU_TANH;   /* gelu_new */
        c->block = BLOCK_PARALLEL_ONE;
        break;
    case FAM_GEMMA:
    case FAM_GEMMA2:
        c->norm = NORM_RMS;
        c->act = ACT_GELU_TANH;
        c->gated_mlp = 1;
        c->block = fam == FAM_GEMMA2 ? BLOCK_SANDWICH : BLOCK_PRE_LN;
        break;
    default:   /* llama, qwen2, qwen3 */
        c->norm = NORM_RMS;
        c->act = ACT_SILU;
        c->gated_mlp = 1;
        c->qk_norm = fam == FAM_QWEN3;
    }
}

/* Gemma's √d embedding scale; Gemma2's soft-caps, query scale and sliding window on the even
 * layers (llama.cpp: window default 4096, caps 50 and 30; the query scale is not stored: it is
 * 1/√head_dim, or 1/√(d/H) for the 46-layer 27B, as llama.cpp's build_gemma2 takes it). */
static int gemma_setup(loader *L, const char *arch, model *m)
{
    model_config *c = &m->cfg;
    c->emb_scale = (float)sqrt((double)c->d_model);
    if (c->family != FAM_GEMMA2)
        return 0;
    double a, f;
    int W;
    if (meta_real(L->g, arch, "attn_logit_softcapping", 50.0, 1e-6, 1e6, &a, L->err, L->errlen) < 0 ||
        meta_real(L->g, arch, "final_logit_softcapping", 30.0, 1e-6, 1e6, &f, L->err, L->errlen) < 0 ||
        meta_int(L->g, arch, "attention.sliding_window", 4096, 1, 1 << 30, &W, L->err, L->errlen) < 0)
        return -1;
    c->attn_softcap = (float)a;
    c->final_softcap = (float)f;
    int scalar = c->n_layer == 46 ? c->d_model / c->n_head : c->head_dim;
    c->attn_scale = (float)pow((double)scalar, -0.5);   /* as the HF loader: query_pre_attn_scalar^-0.5 */
    for (int l = 0; l < c->n_layer; l++)
        m->w.layers[l].window = l % 2 == 0 ? W : 0;
    return 0;
}

/* Mistral converts to "llama"; llama.cpp's converter writes no window, but a file that carries
 * llama.attention.sliding_window gets it on every layer, as Mistral's config applies it. */
static int llama_window(loader *L, const char *arch, model *m)
{
    int W;
    if (meta_int(L->g, arch, "attention.sliding_window", 0, 0, 1 << 30, &W, L->err, L->errlen) < 0)
        return -1;
    for (int l = 0; l < m->cfg.n_layer; l++)
        m->w.layers[l].window = W;
    return 0;
}

static int load_layer(loader *L, model_config *c, int l, model_layer *w)
{
    switch (c->family) {
    case FAM_GPT2:
        return load_gpt2_layer(L, c, l, w);
    case FAM_PHI:
        return load_phi2_layer(L, c, l, w);
    default:
        return load_llama_layer(L, c, l, w, c->family == FAM_LLAMA);
    }
}

static int load_body(loader *L, model *m, const char *arch, model_family fam)
{
    model_config *c = &m->cfg;
    const gguf_file *g = L->g;
    set_family(c, arch, fam);
    /* llama.cpp requires the norm epsilon of the newer architectures; llama/qwen2/gpt2 files
     * without one keep the old default. */
    int newer = fam == FAM_PHI || fam == FAM_GEMMA || fam == FAM_GEMMA2 || fam == FAM_QWEN3;
    if (read_config(g, arch, c, L->err, L->errlen) < 0)
        return -1;
    const gguf_tensor *te = gguf_tensor_find(g, "token_embd.weight");
    if (!te || te->n_dims != 2) {
        snprintf(L->err, L->errlen, "missing or malformed tensor 'token_embd.weight'");
        return -1;
    }
    if (te->ne[1] < 1 || te->ne[1] > INT32_MAX) {
        snprintf(L->err, L->errlen, "tensor 'token_embd.weight' has %llu rows", (unsigned long long)te->ne[1]);
        return -1;
    }
    c->vocab = (int)te->ne[1];
    const char *eps_key = c->norm == NORM_RMS ? "attention.layer_norm_rms_epsilon"
                                              : "attention.layer_norm_epsilon";
    double eps;
    if (meta_real(g, arch, eps_key, newer ? NAN : 1e-5, 1e-30, 0.5, &eps, L->err, L->errlen) < 0)
        return -1;
    c->norm_eps = (float)eps;
    int gemma = fam == FAM_GEMMA || fam == FAM_GEMMA2;
    c->bos_id = special_id(g, "tokenizer.ggml.bos_token_id", c->vocab, fam == FAM_LLAMA ? 1 : gemma ? 2 : -1);
    c->eos_id = special_id(g, "tokenizer.ggml.eos_token_id", c->vocab, fam == FAM_LLAMA ? 2 : gemma ? 1 : -1);
    c->pad_id = special_id(g, "tokenizer.ggml.padding_token_id", c->vocab, gemma ? 0 : -1);
    L->o->cap = total_floats(g);
    L->o->arena = malloc((L->o->cap ? L->o->cap : 1) * sizeof(float));
    L->o->layers = calloc(c->n_layer, sizeof(model_layer));
    if (!L->o->arena || !L->o->layers) {
        snprintf(L->err, L->errlen, "out of memory for %zu weights", L->o->cap);
        return -1;
    }
    m->w.layers = L->o->layers;
    long d = c->d_model;
    if (!(m->w.tok_emb = load_t(L, 0, d, c->vocab, "token_embd.weight")) ||
        !(m->w.lnf_w = load_t(L, 0, d, 0, "output_norm.weight")))
        return -1;
    if (fam == FAM_GPT2 || fam == FAM_PHI) {
        if (!(m->w.lnf_b = load_t(L, 0, d, 0, "output_norm.bias")))
            return -1;
    }
    if (fam == FAM_GPT2) {
        if (!(m->w.pos_emb = load_t(L, 0, d, c->max_pos, "position_embd.weight")))
            return -1;
    } else if (rope_setup(L, arch, c) < 0) {
        return -1;
    }
    /* Gemma's head is always the embedding in llama.cpp (its converter drops lm_head.weight). */
    m->w.lm_head = gemma ? NULL : load_t(L, 1, d, c->vocab, "output.weight");
    if (L->err[0])
        return -1;
    c->tied_head = m->w.lm_head == NULL;
    if (c->tied_head)
        m->w.lm_head = m->w.tok_emb;
    if (fam == FAM_PHI && !(m->w.lm_head_b = load_t(L, 0, c->vocab, 0, "output.bias")))
        return -1;
    for (int l = 0; l < c->n_layer; l++)
        if (load_layer(L, c, l, &m->w.layers[l]) < 0)
            return -1;
    if (gemma)
        return gemma_setup(L, arch, m);
    return fam == FAM_LLAMA ? llama_window(L, arch, m) : 0;
}

model *model_load_gguf(const char *path, char *err, size_t errlen)
{
    err[0] = 0;
    gguf_file *g = gguf_open(path, err, errlen);
    if (!g) {
        cli_err_prefix(err, errlen, path);
        return NULL;
    }
    uint64_t alen;
    const char *a = gguf_get_str(g, "general.architecture", &alen);
    char arch[32] = "";
    if (a && alen < sizeof arch)
        memcpy(arch, a, alen), arch[alen] = 0;
    model_family fam;
    if (arch_family(arch, &fam) < 0) {
        snprintf(err, errlen, "general.architecture '%s' is not supported (" ARCH_LIST " are)",
                 a ? arch : "(missing)");
        gguf_close(g);
        cli_err_prefix(err, errlen, path);
        return NULL;
    }
    model *m = calloc(1, sizeof *m);
    gguf_owner *o = calloc(1, sizeof *o);
    m->owner = o;
    m->release = gguf_release;
    loader L = {g, o, err, errlen};
    int rc = load_body(&L, m, arch, fam);
    gguf_close(g);
    if (rc == 0 && cli_sha256_file(path, m->sha256) < 0) {
        snprintf(err, errlen, "cannot read for checksum");
        rc = -1;
    }
    if (rc < 0) {
        gguf_release(m);
        free(m);
        cli_err_prefix(err, errlen, path);
        return NULL;
    }
    snprintf(m->source, sizeof m->source, "%s", path);
    return m;
}

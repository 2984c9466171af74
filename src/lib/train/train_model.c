/* train_model: forward and backward passes for the GPT-2- and Llama-style models (see
 * train_model.h). Matrix products go through gemm.h (one defined summation order); the work is split
 * into fixed blocks with OpenMP, each block owning its own outputs, so every sum is taken in one
 * fixed order and the same thread count gives bit-identical results. */
#include "train_model.h"
#include "core/util.h"
#include "core/detmath.h"
#include "core/gemm.h"
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>
#include <tgmath.h>

/* The float build uses detmath's CPU-independent functions; the double build (gradient check
 * only) plain libm. */
#ifdef TRAIN_DOUBLE
#define GEMM gemm_f64
#define EXP exp
#define LOG log
#define COS cos
#define SIN sin
#define ERF erf
#else
#define GEMM gemm_f32
#define EXP det_expf
#define LOG det_logf
#define COS det_cosf
#define SIN det_sinf
#define ERF det_erff
#endif

enum { CONV1D, LINEAR };   /* weight layouts: [in,out] (GPT-2) and [out,in] (nn.Linear) */
#define NOFF SIZE_MAX

/* ---------------------------------------------------------------- layout */

const char *TM(tm_config_problem)(const tm_config *c) {
    if (c->family != TM_GPT2 && c->family != TM_LLAMA && c->family != TM_BERT) return "unknown family";
    if (c->n_layer < 1 || c->d_model < 2 || c->n_head < 1 || c->d_ff < 1 || c->vocab < 2 || c->ctx < 2)
        return "layers, d_model, heads, d_ff, vocab and context must be positive";
    if (c->n_kv_head < 1 || c->n_head % c->n_kv_head) return "heads must be a multiple of kv_heads";
    if (c->head_dim < 2 || c->head_dim % 2) return "head_dim must be even";
    if (c->family == TM_GPT2 && (c->n_kv_head != c->n_head || c->head_dim * c->n_head != c->d_model))
        return "gpt2 needs kv_heads = heads and d_model = heads * head_dim";
    if (c->family == TM_BERT && (c->n_kv_head != c->n_head || c->head_dim * c->n_head != c->d_model))
        return "bert needs kv_heads = heads and d_model = heads * head_dim";
    if (c->family == TM_BERT && c->pos != POS_LEARNED && c->pos != POS_SINUSOIDAL)
        return "bert is trained with pos = learned or sinusoidal only";
    if (c->pos < 0 || c->pos >= POS_COUNT) return "unknown position encoding";
    if (c->pos == POS_ROPE_NTK && c->head_dim < 4) return "rope-ntk needs head_dim >= 4";
    return NULL;
}

static int uses_rope(const tm_config *c) { return c->pos == POS_ROPE || c->pos == POS_ROPE_NTK; }

static size_t add_tensor(tm_model *m, const char *name, int ndim, int64_t d0, int64_t d1, int kind) {
    m->t = xrealloc(m->t, (size_t)(m->nt + 1) * sizeof *m->t);
    tm_tensor *t = &m->t[m->nt++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = ndim > 1 ? d1 : 1;
    t->n = (size_t)d0 * (size_t)t->shape[1];
    t->off = m->n_params;
    t->kind = kind;
    t->decay = kind == TM_T_MATRIX || kind == TM_T_RESID;
    m->n_params += t->n;
    return t->off;
}

static void layout_gpt2(tm_model *m) {
    const tm_config *c = &m->c;
    int64_t d = c->d_model, f = c->d_ff;
    char nm[80];
    m->wte = add_tensor(m, "wte.weight", 2, c->vocab, d, TM_T_EMBED);
    m->wpe = c->pos == POS_LEARNED ? add_tensor(m, "wpe.weight", 2, c->ctx, d, TM_T_EMBED) : NOFF;
    for (int l = 0; l < c->n_layer; l++) {
        tm_layer_off *L = &m->L[l];
#define T_(field, suffix, nd, a, b, kind) \
    (snprintf(nm, sizeof nm, "h.%d.%s", l, suffix), L->field = add_tensor(m, nm, nd, a, b, kind))
        T_(ln1_w, "ln_1.weight", 1, d, 1, TM_T_ONES);
        T_(ln1_b, "ln_1.bias", 1, d, 1, TM_T_ZEROS);
        T_(wqkv, "attn.c_attn.weight", 2, d, 3 * d, TM_T_MATRIX);
        T_(bqkv, "attn.c_attn.bias", 1, 3 * d, 1, TM_T_ZEROS);
        T_(wo, "attn.c_proj.weight", 2, d, d, TM_T_RESID);
        T_(bo, "attn.c_proj.bias", 1, d, 1, TM_T_ZEROS);
        T_(ln2_w, "ln_2.weight", 1, d, 1, TM_T_ONES);
        T_(ln2_b, "ln_2.bias", 1, d, 1, TM_T_ZEROS);
        T_(wfc, "mlp.c_fc.weight", 2, d, f, TM_T_MATRIX);
        T_(bfc, "mlp.c_fc.bias", 1, f, 1, TM_T_ZEROS);
        T_(wproj, "mlp.c_proj.weight", 2, f, d, TM_T_RESID);
        T_(bproj, "mlp.c_proj.bias", 1, d, 1, TM_T_ZEROS);
    }
    m->lnf_w = add_tensor(m, "ln_f.weight", 1, d, 1, TM_T_ONES);
    m->lnf_b = add_tensor(m, "ln_f.bias", 1, d, 1, TM_T_ZEROS);
    m->lm_head = m->wte;   /* tied */
}

static void layout_llama(tm_model *m) {
    const tm_config *c = &m->c;
    int64_t d = c->d_model, f = c->d_ff, q = (int64_t)c->n_head * c->head_dim,
            kv = (int64_t)c->n_kv_head * c->head_dim;
    char nm[80];
    m->wte = add_tensor(m, "model.embed_tokens.weight", 2, c->vocab, d, TM_T_EMBED);
    /* not a Llama tensor: config.json says attncoda_position_encoding = learned (docs/TRAIN.md) */
    m->wpe = c->pos == POS_LEARNED ? add_tensor(m, "model.embed_positions.weight", 2, c->ctx, d, TM_T_EMBED) : NOFF;
    for (int l = 0; l < c->n_layer; l++) {
        tm_layer_off *L = &m->L[l];
#undef T_
#define T_(field, suffix, nd, a, b, kind) \
    (snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix), L->field = add_tensor(m, nm, nd, a, b, kind))
        T_(ln1_w, "input_layernorm.weight", 1, d, 1, TM_T_ONES);
        T_(wq, "self_attn.q_proj.weight", 2, q, d, TM_T_MATRIX);
        T_(wk, "self_attn.k_proj.weight", 2, kv, d, TM_T_MATRIX);
        T_(wv, "self_attn.v_proj.weight", 2, kv, d, TM_T_MATRIX);
        T_(wo, "self_attn.o_proj.weight", 2, d, q, TM_T_RESID);
        T_(ln2_w, "post_attention_layernorm.weight", 1, d, 1, TM_T_ONES);
        T_(wgate, "mlp.gate_proj.weight", 2, f, d, TM_T_MATRIX);
        T_(wup, "mlp.up_proj.weight", 2, f, d, TM_T_MATRIX);
        T_(wdown, "mlp.down_proj.weight", 2, d, f, TM_T_RESID);
#undef T_
        L->ln1_b = L->ln2_b = L->bqkv = L->bo = L->wqkv = L->wfc = L->bfc = L->wproj = L->bproj = NOFF;
    }
    m->lnf_w = add_tensor(m, "model.norm.weight", 1, d, 1, TM_T_ONES);
    m->lnf_b = NOFF;
    m->lm_head = add_tensor(m, "lm_head.weight", 2, c->vocab, d, TM_T_MATRIX);
}

/* BertForMaskedLM's state dict (no pooler; cls.predictions.decoder is tied to the word embeddings
 * and its bias is cls.predictions.bias, so neither is stored twice). */
static void layout_bert(tm_model *m) {
    const tm_config *c = &m->c;
    int64_t d = c->d_model, f = c->d_ff;
    char nm[96];
    m->wte = add_tensor(m, "bert.embeddings.word_embeddings.weight", 2, c->vocab, d, TM_T_EMBED);
    m->wpe = c->pos == POS_LEARNED ? add_tensor(m, "bert.embeddings.position_embeddings.weight", 2, c->ctx, d, TM_T_EMBED)
                                   : NOFF;
    m->wtype = add_tensor(m, "bert.embeddings.token_type_embeddings.weight", 2, 2, d, TM_T_EMBED);
    m->emb_ln_w = add_tensor(m, "bert.embeddings.LayerNorm.weight", 1, d, 1, TM_T_ONES);
    m->emb_ln_b = add_tensor(m, "bert.embeddings.LayerNorm.bias", 1, d, 1, TM_T_ZEROS);
    for (int l = 0; l < c->n_layer; l++) {
        tm_layer_off *L = &m->L[l];
#define T_(field, suffix, nd, a, b, kind) \
    (snprintf(nm, sizeof nm, "bert.encoder.layer.%d.%s", l, suffix), L->field = add_tensor(m, nm, nd, a, b, kind))
        T_(wq, "attention.self.query.weight", 2, d, d, TM_T_MATRIX);
        T_(bq, "attention.self.query.bias", 1, d, 1, TM_T_ZEROS);
        T_(wk, "attention.self.key.weight", 2, d, d, TM_T_MATRIX);
        T_(bk, "attention.self.key.bias", 1, d, 1, TM_T_ZEROS);
        T_(wv, "attention.self.value.weight", 2, d, d, TM_T_MATRIX);
        T_(bv, "attention.self.value.bias", 1, d, 1, TM_T_ZEROS);
        T_(wo, "attention.output.dense.weight", 2, d, d, TM_T_RESID);
        T_(bo, "attention.output.dense.bias", 1, d, 1, TM_T_ZEROS);
        T_(ln1_w, "attention.output.LayerNorm.weight", 1, d, 1, TM_T_ONES);
        T_(ln1_b, "attention.output.LayerNorm.bias", 1, d, 1, TM_T_ZEROS);
        T_(wfc, "intermediate.dense.weight", 2, f, d, TM_T_MATRIX);
        T_(bfc, "intermediate.dense.bias", 1, f, 1, TM_T_ZEROS);
        T_(wproj, "output.dense.weight", 2, d, f, TM_T_RESID);
        T_(bproj, "output.dense.bias", 1, d, 1, TM_T_ZEROS);
        T_(ln2_w, "output.LayerNorm.weight", 1, d, 1, TM_T_ONES);
        T_(ln2_b, "output.LayerNorm.bias", 1, d, 1, TM_T_ZEROS);
#undef T_
        L->wqkv = L->bqkv = L->wgate = L->wup = L->wdown = NOFF;
    }
    m->head_w = add_tensor(m, "cls.predictions.transform.dense.weight", 2, d, d, TM_T_MATRIX);
    m->head_b = add_tensor(m, "cls.predictions.transform.dense.bias", 1, d, 1, TM_T_ZEROS);
    m->head_ln_w = add_tensor(m, "cls.predictions.transform.LayerNorm.weight", 1, d, 1, TM_T_ONES);
    m->head_ln_b = add_tensor(m, "cls.predictions.transform.LayerNorm.bias", 1, d, 1, TM_T_ZEROS);
    m->head_bias = add_tensor(m, "cls.predictions.bias", 1, c->vocab, 1, TM_T_ZEROS);
    m->lnf_w = m->lnf_b = NOFF;
    m->lm_head = m->wte;   /* tied decoder */
}

void TM(tm_model_init)(tm_model *m, const tm_config *c) {
    memset(m, 0, sizeof *m);
    m->c = *c;
    m->L = xcalloc((size_t)c->n_layer, sizeof *m->L);
    m->wtype = m->emb_ln_w = m->emb_ln_b = m->head_w = m->head_b = m->head_ln_w = m->head_ln_b = m->head_bias = NOFF;
    if (c->family == TM_GPT2) layout_gpt2(m);
    else if (c->family == TM_BERT) layout_bert(m);
    else layout_llama(m);
    m->w = xcalloc(m->n_params, sizeof *m->w);
    m->g = xcalloc(m->n_params, sizeof *m->g);
    if (c->pos == POS_SINUSOIDAL) {
        m->pos_tab = xcalloc((size_t)c->ctx * c->d_model, sizeof *m->pos_tab);
        for (int t = 0; t < c->ctx; t++)
            for (int j = 0; j < c->d_model; j++)
                m->pos_tab[(size_t)t * c->d_model + j] = (treal)posenc_sinusoid(t, j, c->d_model);
    }
}

/* GPT-2's initialisation: N(0, 0.02) for matrices and embeddings, residual output projections
 * scaled by 1/sqrt(2·layers), norms 1, biases 0. One generator, tensors in layout order. */
void TM(tm_model_randomize)(tm_model *m, unsigned long seed) {
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    double resid = 0.02 / sqrt(2.0 * m->c.n_layer);
    for (int i = 0; i < m->nt; i++) {
        tm_tensor *t = &m->t[i];
        treal *w = m->w + t->off;
        for (size_t j = 0; j < t->n; j++) {
            switch (t->kind) {
            case TM_T_ONES: w[j] = 1; break;
            case TM_T_ZEROS: w[j] = 0; break;
            case TM_T_RESID: w[j] = (treal)gsl_ran_gaussian_ziggurat(r, resid); break;
            default: w[j] = (treal)gsl_ran_gaussian_ziggurat(r, 0.02); break;
            }
        }
    }
    gsl_rng_free(r);
}

void TM(tm_model_free)(tm_model *m) {
    free(m->t);
    free(m->w);
    free(m->g);
    free(m->L);
    free(m->pos_tab);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- activations */

typedef struct {
    treal *x;                  /* residual stream entering the layer [N,d] */
    treal *a1, *mu1, *rs1;     /* attention-norm output, mean, 1/std */
    treal *qkv;                /* [N, W]: q | k | v (q, k after RoPE) */
    treal *P;                  /* [B,H,T,T] attention probabilities */
    treal *o;                  /* concatenated head outputs [N, H·hd] */
    treal *xm;                 /* residual after attention */
    treal *a2, *mu2, *rs2;
    treal *h1, *h2, *h3;       /* GPT-2: fc pre-act, gelu, tanh(u) of gelu; Llama: gate, up, silu(gate)·up */
} layer_acts;

struct tm_acts {
    tm_config c;
    int B, T, N, W;            /* N = B·T rows; W = width of the qkv row */
    layer_acts *la;
    treal *xL, *af, *muf, *rsf, *logits, *rowloss;
    treal *rope_cos, *rope_sin; /* [T, hd/2] */
    treal *alibi;              /* [n_head] ALiBi slopes, or NULL */
    int causal;                /* 0: BERT's bidirectional attention */
    treal *emb, *mue, *rse, *t1, *t2;   /* BERT: embedding sum before its LayerNorm, the head's
                                         * dense output and its GELU */
    /* backward scratch */
    treal *dx, *da, *dqkv, *dout, *dh1, *dh2, *dh3, *dS;
};

static treal *zalloc(size_t n) { return xcalloc(n ? n : 1, sizeof(treal)); }

tm_acts *TM(tm_acts_new)(const tm_config *c, int B, int T) {
    tm_acts *a = xcalloc(1, sizeof *a);
    a->c = *c;
    a->B = B;
    a->T = T;
    a->N = B * T;
    size_t N = (size_t)a->N, d = (size_t)c->d_model, f = (size_t)c->d_ff, hq = (size_t)c->n_head * c->head_dim;
    a->W = (c->n_head + 2 * c->n_kv_head) * c->head_dim;
    a->la = xcalloc((size_t)c->n_layer, sizeof *a->la);
    for (int l = 0; l < c->n_layer; l++) {
        layer_acts *L = &a->la[l];
        L->x = zalloc(N * d);
        L->a1 = zalloc(N * d); L->mu1 = zalloc(N); L->rs1 = zalloc(N);
        L->qkv = zalloc(N * (size_t)a->W);
        L->P = zalloc((size_t)B * c->n_head * T * T);
        L->o = zalloc(N * hq);
        L->xm = zalloc(N * d);
        L->a2 = zalloc(N * d); L->mu2 = zalloc(N); L->rs2 = zalloc(N);
        L->h1 = zalloc(N * f); L->h2 = zalloc(N * f); L->h3 = zalloc(N * f);
    }
    a->xL = zalloc(N * d); a->af = zalloc(N * d); a->muf = zalloc(N); a->rsf = zalloc(N);
    a->logits = zalloc(N * (size_t)c->vocab); a->rowloss = zalloc(N);
    a->dx = zalloc(N * d); a->da = zalloc(N * d); a->dqkv = zalloc(N * (size_t)a->W);
    a->dout = zalloc(N * hq); a->dh1 = zalloc(N * f); a->dh2 = zalloc(N * f); a->dh3 = zalloc(N * f);
    a->dS = zalloc((size_t)omp_get_max_threads() * T * T);
    a->causal = c->family != TM_BERT;
    if (c->family == TM_BERT) {
        a->emb = zalloc(N * d); a->mue = zalloc(N); a->rse = zalloc(N);
        a->t1 = zalloc(N * d); a->t2 = zalloc(N * d);
    }
    /* RoPE tables computed the way Hugging Face does: float32 inv_freq = 1/theta^(2i/hd), float32
     * angle = position·inv_freq, float32 cos/sin (in the double build, double throughout). */
    int half = c->head_dim / 2;
    a->rope_cos = zalloc((size_t)T * half);
    a->rope_sin = zalloc((size_t)T * half);
    if (c->pos == POS_ALIBI) {
        a->alibi = zalloc((size_t)c->n_head);
        for (int h = 0; h < c->n_head; h++) a->alibi[h] = (treal)posenc_alibi_slope(h, c->n_head);
    }
    for (int i = 0; i < half && uses_rope(c); i++) {
        treal inv = (treal)1 / (treal)det_pow((treal)c->rope_theta, (treal)(2 * i) / (treal)c->head_dim);
        for (int t = 0; t < T; t++) {
            treal ang = (treal)t * inv;
            a->rope_cos[t * half + i] = COS(ang);
            a->rope_sin[t * half + i] = SIN(ang);
        }
    }
    return a;
}

void TM(tm_acts_free)(tm_acts *a) {
    if (!a) return;
    for (int l = 0; l < a->c.n_layer; l++) {
        layer_acts *L = &a->la[l];
        treal *bufs[] = {L->x, L->a1, L->mu1, L->rs1, L->qkv, L->P, L->o, L->xm, L->a2, L->mu2, L->rs2, L->h1, L->h2, L->h3};
        for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    }
    treal *bufs[] = {a->xL, a->af, a->muf, a->rsf, a->logits, a->rowloss, a->dx, a->da, a->dqkv,
                     a->dout, a->dh1, a->dh2, a->dh3, a->dS, a->rope_cos, a->rope_sin, a->alibi,
                     a->emb, a->mue, a->rse, a->t1, a->t2};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(a->la);
    free(a);
}

const treal *TM(tm_acts_attn)(const tm_acts *a, int l) { return a->la[l].P; }
const treal *TM(tm_acts_rowloss)(const tm_acts *a) { return a->rowloss; }

/* ---------------------------------------------------------------- building blocks */

/* Fixed work split: block b of nb covers [n·b/nb, n·(b+1)/nb). nb is the thread count, so the
 * split (and every sum order) is a function of the thread count only. */
#define BLOCK_LO(n, b, nb) ((size_t)(n) * (size_t)(b) / (size_t)(nb))
static int nblocks(size_t n) {
    int nt = omp_get_max_threads();
    return (size_t)nt < n ? nt : (int)(n ? n : 1);
}

/* Y[N,out] = X[N,in]·W (+ b); W in CONV1D [in,out] or LINEAR [out,in] layout. Rows are split. */
static void lin_fwd(int N, int in, int out, const treal *X, int ldx, const treal *W, int layout,
                    const treal *bias, treal *Y, int ldy) {
    int nb = nblocks((size_t)N);
#pragma omp parallel for schedule(static)
    for (int b = 0; b < nb; b++) {
        size_t r0 = BLOCK_LO(N, b, nb), r1 = BLOCK_LO(N, b + 1, nb);
        if (r1 == r0) continue;
        if (layout == CONV1D)
            GEMM(0, 0, (int)(r1 - r0), out, in, 1, X + r0 * ldx, ldx, W, out,
                 0, Y + r0 * ldy, ldy);
        else
            GEMM(0, 1, (int)(r1 - r0), out, in, 1, X + r0 * ldx, ldx, W, in,
                 0, Y + r0 * ldy, ldy);
        if (bias)
            for (size_t r = r0; r < r1; r++)
                for (int o = 0; o < out; o++) Y[r * ldy + o] += bias[o];
    }
}

/* Backward of lin_fwd: dX += dY·Wᵀ (rows split), dW += Xᵀ·dY and db += Σrows dY (output
 * features split, so each gradient element is one sum over all rows in row order). */
static void lin_bwd(int N, int in, int out, const treal *X, int ldx, const treal *W, int layout,
                    const treal *dY, int lddy, treal *dX, int lddx, treal *dW, treal *db) {
    if (dX) {
        int nb = nblocks((size_t)N);
#pragma omp parallel for schedule(static)
        for (int b = 0; b < nb; b++) {
            size_t r0 = BLOCK_LO(N, b, nb), r1 = BLOCK_LO(N, b + 1, nb);
            if (r1 == r0) continue;
            if (layout == CONV1D)
                GEMM(0, 1, (int)(r1 - r0), in, out, 1, dY + r0 * lddy, lddy, W,
                     out, 1, dX + r0 * lddx, lddx);
            else
                GEMM(0, 0, (int)(r1 - r0), in, out, 1, dY + r0 * lddy, lddy,
                     W, in, 1, dX + r0 * lddx, lddx);
        }
    }
    int nb = nblocks((size_t)out);
#pragma omp parallel for schedule(static)
    for (int b = 0; b < nb; b++) {
        size_t o0 = BLOCK_LO(out, b, nb), o1 = BLOCK_LO(out, b + 1, nb);
        int no = (int)(o1 - o0);
        if (!no) continue;
        if (layout == CONV1D)
            GEMM(1, 0, in, no, N, 1, X, ldx, dY + o0, lddy, 1, dW + o0, out);
        else
            GEMM(1, 0, no, in, N, 1, dY + o0, lddy, X, ldx, 1, dW + o0 * in, in);
        if (db)
            for (int r = 0; r < N; r++)
                for (size_t o = o0; o < o1; o++) db[o] += dY[(size_t)r * lddy + o];
    }
}

/* LayerNorm (b != NULL or mu != NULL) or RMSNorm (mu == NULL), row by row; statistics in treal
 * with a two-pass variance. */
static void norm_fwd(int N, int d, const treal *x, const treal *w, const treal *b, treal *y, treal *mu,
                     treal *rs, double eps) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; r++) {
        const treal *xr = x + (size_t)r * d;
        treal *yr = y + (size_t)r * d, m = 0, v = 0;
        if (mu) {
            for (int j = 0; j < d; j++) m += xr[j];
            m /= d;
        }
        for (int j = 0; j < d; j++) v += (xr[j] - m) * (xr[j] - m);
        treal s = 1 / sqrt(v / d + (treal)eps);
        if (mu) mu[r] = m;
        rs[r] = s;
        for (int j = 0; j < d; j++) yr[j] = (xr[j] - m) * s * w[j] + (b ? b[j] : 0);
    }
}

/* dx += norm backward; dw (and db) += per-feature sums, taken over rows in order. */
static void norm_bwd(int N, int d, const treal *x, const treal *w, const treal *mu, const treal *rs,
                     const treal *dy, treal *dx, treal *dw, treal *db) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; r++) {
        const treal *xr = x + (size_t)r * d, *dyr = dy + (size_t)r * d;
        treal *dxr = dx + (size_t)r * d, m = mu ? mu[r] : 0, s = rs[r], g_mean = 0, gx_mean = 0;
        for (int j = 0; j < d; j++) {
            treal g = dyr[j] * w[j], xh = (xr[j] - m) * s;
            g_mean += g;
            gx_mean += g * xh;
        }
        g_mean /= d;
        gx_mean /= d;
        if (!mu) g_mean = 0;   /* RMSNorm: no mean subtraction */
        for (int j = 0; j < d; j++) {
            treal xh = (xr[j] - m) * s;
            dxr[j] += s * (dyr[j] * w[j] - g_mean - xh * gx_mean);
        }
    }
    int nb = nblocks((size_t)d);
#pragma omp parallel for schedule(static)
    for (int b = 0; b < nb; b++) {
        size_t j0 = BLOCK_LO(d, b, nb), j1 = BLOCK_LO(d, b + 1, nb);
        for (int r = 0; r < N; r++) {
            const treal *xr = x + (size_t)r * d, *dyr = dy + (size_t)r * d;
            treal m = mu ? mu[r] : 0, s = rs[r];
            for (size_t j = j0; j < j1; j++) {
                dw[j] += dyr[j] * (xr[j] - m) * s;
                if (db) db[j] += dyr[j];
            }
        }
    }
}

/* Half-split RoPE on the q and k parts of every qkv row (position = row mod T). inverse = 1
 * applies the transpose rotation, which is the backward of the forward rotation. */
static void rope(const tm_acts *a, treal *qkv, int inverse) {
    const tm_config *c = &a->c;
    int hd = c->head_dim, half = hd / 2, nh = c->n_head + c->n_kv_head;
    treal sg = inverse ? -1 : 1;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < a->N; r++) {
        int t = r % a->T;
        const treal *cs = a->rope_cos + (size_t)t * half, *sn = a->rope_sin + (size_t)t * half;
        for (int h = 0; h < nh; h++) {
            treal *v = qkv + (size_t)r * a->W + (size_t)h * hd;
            for (int i = 0; i < half; i++) {
                treal x1 = v[i], x2 = v[i + half], s = sg * sn[i];
                v[i] = x1 * cs[i] - x2 * s;
                v[i + half] = x2 * cs[i] + x1 * s;
            }
        }
    }
}

/* Causal attention works on blocks of ATTN_ROWS query rows: rows r0..r1-1 need keys 0..r1-1 only,
 * which halves the work at long T. Every element is still gemm.h's one sequential sum: the keys
 * left out carry P = 0 exactly, and adding +-0 to a sum that starts at +0 changes no bit, so the
 * results are those of the full T x T products. */
#ifndef TM_ATTN_ROWS
#define TM_ATTN_ROWS 32   /* the gradient check sets 2, so that its T = 5 spans several blocks */
#endif

static int attn_rows(const tm_acts *a) { return a->causal ? TM_ATTN_ROWS : a->T; }

/* Causal attention for every (sequence, head): P = softmax(QKᵀ/√hd + bias + mask), O = P·V. The
 * ALiBi bias m_h·(j − t) is added after the scaled product, as model.c does; being constant it
 * changes nothing in the backward pass. */
static void attn_fwd(tm_acts *a, layer_acts *L) {
    const tm_config *c = &a->c;
    int T = a->T, hd = c->head_dim, H = c->n_head, rep = H / c->n_kv_head, W = a->W, ldo = H * hd;
    int R = attn_rows(a);
    treal scale = 1 / sqrt((treal)hd);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < a->B * H; bh++) {
        int b = bh / H, h = bh % H, kh = h / rep;
        const treal *Q = L->qkv + (size_t)b * T * W + (size_t)h * hd;
        const treal *K = L->qkv + (size_t)b * T * W + (size_t)(H + kh) * hd;
        const treal *V = L->qkv + (size_t)b * T * W + (size_t)(H + c->n_kv_head + kh) * hd;
        treal *P = L->P + (size_t)bh * T * T, *O = L->o + (size_t)b * T * ldo + (size_t)h * hd;
        for (int r0 = 0; r0 < T; r0 += R) {
            int r1 = r0 + R < T ? r0 + R : T;
            GEMM(0, 1, r1 - r0, r1, hd, scale, Q + (size_t)r0 * W, W, K, W, 0, P + (size_t)r0 * T, T);
        }
        if (a->alibi)
            for (int t = 0; t < T; t++)
                for (int j = 0; j <= t; j++) P[(size_t)t * T + j] += a->alibi[h] * (treal)(j - t);
        for (int t = 0; t < T; t++) {
            int n = a->causal ? t + 1 : T;   /* keys 0..n-1 */
            treal *p = P + (size_t)t * T, mx = p[0], sum = 0;
            for (int j = 1; j < n; j++) mx = p[j] > mx ? p[j] : mx;
            for (int j = 0; j < n; j++) sum += p[j] = EXP(p[j] - mx);
            for (int j = 0; j < n; j++) p[j] /= sum;
            for (int j = n; j < T; j++) p[j] = 0;
        }
        for (int r0 = 0; r0 < T; r0 += R) {
            int r1 = r0 + R < T ? r0 + R : T;
            GEMM(0, 0, r1 - r0, hd, r1, 1, P + (size_t)r0 * T, T, V, W, 0, O + (size_t)r0 * ldo, ldo);
        }
    }
}

/* Backward of attn_fwd into a->dqkv (zeroed by the caller). One task per (sequence, KV head) so
 * the query heads sharing a KV head add into dK, dV in a fixed order without races. */
static void attn_bwd(tm_acts *a, layer_acts *L) {
    const tm_config *c = &a->c;
    int T = a->T, hd = c->head_dim, H = c->n_head, KV = c->n_kv_head, rep = H / KV, W = a->W, ldo = H * hd;
    int R = attn_rows(a);
    treal scale = 1 / sqrt((treal)hd);
#pragma omp parallel for schedule(static)
    for (int bk = 0; bk < a->B * KV; bk++) {
        int b = bk / KV, kh = bk % KV;
        treal *dS = a->dS + (size_t)omp_get_thread_num() * T * T;
        size_t base = (size_t)b * T * W;
        const treal *K = L->qkv + base + (size_t)(H + kh) * hd, *V = L->qkv + base + (size_t)(H + KV + kh) * hd;
        treal *dK = a->dqkv + base + (size_t)(H + kh) * hd, *dV = a->dqkv + base + (size_t)(H + KV + kh) * hd;
        for (int h = kh * rep; h < (kh + 1) * rep; h++) {
            const treal *Q = L->qkv + base + (size_t)h * hd, *P = L->P + ((size_t)b * H + h) * T * T;
            const treal *dO = a->dout + (size_t)b * T * ldo + (size_t)h * hd;
            treal *dQ = a->dqkv + base + (size_t)h * hd;
            for (int r0 = 0; r0 < T; r0 += R) {   /* dS rows r0..r1-1 need keys < r1; dV keys k >= r0 queries >= r0 */
                int r1 = r0 + R < T ? r0 + R : T, kq = a->causal ? r0 : 0;
                GEMM(0, 1, r1 - r0, r1, hd, 1, dO + (size_t)r0 * ldo, ldo, V, W, 0, dS + (size_t)r0 * T, T);
                GEMM(1, 0, r1 - r0, hd, T - kq, 1, P + (size_t)kq * T + r0, T, dO + (size_t)kq * ldo, ldo, 1,
                     dV + (size_t)r0 * W, W);
            }
            for (int t = 0; t < T; t++) {
                int n = a->causal ? t + 1 : T;
                const treal *p = P + (size_t)t * T;
                treal *g = dS + (size_t)t * T, dot = 0;
                for (int j = 0; j < n; j++) dot += p[j] * g[j];
                for (int j = 0; j < n; j++) g[j] = p[j] * (g[j] - dot);
                for (int j = n; j < T; j++) g[j] = 0;
            }
            for (int r0 = 0; r0 < T; r0 += R) {
                int r1 = r0 + R < T ? r0 + R : T, kq = a->causal ? r0 : 0;
                GEMM(0, 0, r1 - r0, hd, r1, scale, dS + (size_t)r0 * T, T, K, W, 1, dQ + (size_t)r0 * W, W);
                GEMM(1, 0, r1 - r0, hd, T - kq, scale, dS + (size_t)kq * T + r0, T, Q + (size_t)kq * W, W, 1,
                     dK + (size_t)r0 * W, W);
            }
        }
    }
}

/* gelu_new (tanh approximation), as GPT-2 uses it. tanh(u) is taken as 1 − 2/(e^{2u}+1): libm's
 * tanhf was a third of the training time, expf is several times faster, and the absolute error
 * (≈1e-7 near 0) is at float rounding level. The forward keeps tanh(u) for the backward. */
static const treal GK = (treal)0.7978845608028654, GC = (treal)0.044715;
static treal gelu_tanh_u(treal x) { return 1 - 2 / (EXP(2 * GK * (x + GC * x * x * x)) + 1); }
static treal gelu_grad(treal x, treal th) {
    return (treal)0.5 * (1 + th) + (treal)0.5 * x * (1 - th * th) * GK * (1 + 3 * GC * x * x);
}
static treal sigm(treal x) { return 1 / (1 + EXP(-x)); }
/* BERT's exact GELU, x·Φ(x), written as model.c evaluates it; its derivative Φ(x) + x·φ(x). */
static treal gelu_erf(treal x) { return (treal)0.5 * x * (1 + ERF(x * (treal)M_SQRT1_2)); }
static treal gelu_erf_grad(treal x) {
    return (treal)0.5 * (1 + ERF(x * (treal)M_SQRT1_2)) + x * EXP(-(treal)0.5 * x * x) * (treal)0.3989422804014327;
}

/* ---------------------------------------------------------------- forward */

static void embed_fwd(const tm_model *m, tm_acts *a, const int32_t *ids) {
    int d = m->c.d_model;
    treal *x = a->la[0].x;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < a->N; r++) {
        const treal *e = m->w + m->wte + (size_t)ids[r] * d;
        const treal *p = m->wpe != NOFF ? m->w + m->wpe + (size_t)(r % a->T) * d
                         : m->pos_tab ? m->pos_tab + (size_t)(r % a->T) * d : NULL;
        for (int j = 0; j < d; j++) x[(size_t)r * d + j] = e[j] + (p ? p[j] : 0);
    }
}

static void layer_fwd(const tm_model *m, tm_acts *a, int l) {
    const tm_config *c = &m->c;
    const tm_layer_off *O = &m->L[l];
    layer_acts *L = &a->la[l];
    const treal *w = m->w;
    int N = a->N, d = c->d_model, f = c->d_ff, hq = c->n_head * c->head_dim, hk = c->n_kv_head * c->head_dim;
    int gpt2 = c->family == TM_GPT2;
    treal *xout = l + 1 < c->n_layer ? a->la[l + 1].x : a->xL;
    norm_fwd(N, d, L->x, w + O->ln1_w, gpt2 ? w + O->ln1_b : NULL, L->a1, gpt2 ? L->mu1 : NULL, L->rs1, c->norm_eps);
    if (gpt2) {
        lin_fwd(N, d, 3 * d, L->a1, d, w + O->wqkv, CONV1D, w + O->bqkv, L->qkv, a->W);
        if (uses_rope(c)) rope(a, L->qkv, 0);   /* q | k | v as in the Llama row */
    } else {
        lin_fwd(N, d, hq, L->a1, d, w + O->wq, LINEAR, NULL, L->qkv, a->W);
        lin_fwd(N, d, hk, L->a1, d, w + O->wk, LINEAR, NULL, L->qkv + hq, a->W);
        lin_fwd(N, d, hk, L->a1, d, w + O->wv, LINEAR, NULL, L->qkv + hq + hk, a->W);
        if (uses_rope(c)) rope(a, L->qkv, 0);
    }
    attn_fwd(a, L);
    lin_fwd(N, hq, d, L->o, hq, w + O->wo, gpt2 ? CONV1D : LINEAR, gpt2 ? w + O->bo : NULL, L->xm, d);
    for (size_t i = 0; i < (size_t)N * d; i++) L->xm[i] += L->x[i];
    norm_fwd(N, d, L->xm, w + O->ln2_w, gpt2 ? w + O->ln2_b : NULL, L->a2, gpt2 ? L->mu2 : NULL, L->rs2, c->norm_eps);
    size_t nf = (size_t)N * f;
    if (gpt2) {
        lin_fwd(N, d, f, L->a2, d, w + O->wfc, CONV1D, w + O->bfc, L->h1, f);
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < nf; i++) {
            L->h3[i] = gelu_tanh_u(L->h1[i]);
            L->h2[i] = (treal)0.5 * L->h1[i] * (1 + L->h3[i]);
        }
        lin_fwd(N, f, d, L->h2, f, w + O->wproj, CONV1D, w + O->bproj, xout, d);
    } else {
        lin_fwd(N, d, f, L->a2, d, w + O->wgate, LINEAR, NULL, L->h1, f);
        lin_fwd(N, d, f, L->a2, d, w + O->wup, LINEAR, NULL, L->h2, f);
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < nf; i++) L->h3[i] = L->h1[i] * sigm(L->h1[i]) * L->h2[i];
        lin_fwd(N, f, d, L->h3, f, w + O->wdown, LINEAR, NULL, xout, d);
    }
    for (size_t i = 0; i < (size_t)N * d; i++) xout[i] += L->xm[i];
}

/* Softmax cross-entropy per row; logits are replaced by probabilities (backward needs them). */
/* Rows with a negative target (BERT's unselected positions) have loss 0 and are not counted. */
static int n_targets(int N, const int32_t *targets) {
    int n = 0;
    for (int r = 0; r < N; r++) n += targets[r] >= 0;
    return n;
}

static double xent(tm_acts *a, const int32_t *targets) {
    int V = a->c.vocab;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < a->N; r++) {
        treal *z = a->logits + (size_t)r * V, mx = z[0], sum = 0;
        for (int v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
        for (int v = 0; v < V; v++) sum += z[v] = EXP(z[v] - mx);
        int y = targets[r];
        a->rowloss[r] = y < 0 ? 0 : LOG(sum) - (z[y] > 0 ? LOG(z[y]) : (treal)-1e30);
        for (int v = 0; v < V; v++) z[v] /= sum;
    }
    double tot = 0;
    for (int r = 0; r < a->N; r++) tot += a->rowloss[r];
    int n = n_targets(a->N, targets);
    return n ? tot / n : 0;
}

/* ---------------------------------------------------------------- BERT (post-LN encoder) */

/* e = word + position + token type 0; x = LayerNorm(e) (e kept for the backward). */
static void embed_fwd_bert(const tm_model *m, tm_acts *a, const int32_t *ids) {
    int d = m->c.d_model;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < a->N; r++) {
        const treal *e = m->w + m->wte + (size_t)ids[r] * d, *ty = m->w + m->wtype;
        const treal *p = (m->wpe != NOFF ? m->w + m->wpe : m->pos_tab) + (size_t)(r % a->T) * d;
        for (int j = 0; j < d; j++) a->emb[(size_t)r * d + j] = e[j] + p[j] + ty[j];
    }
    norm_fwd(a->N, d, a->emb, m->w + m->emb_ln_w, m->w + m->emb_ln_b, a->la[0].x, a->mue, a->rse, m->c.norm_eps);
}

/* s1 = x + attn(x) (in xm), a1 = LN1(s1); s2 = a1 + mlp(a1) (in a2), out = LN2(s2). */
static void layer_fwd_bert(const tm_model *m, tm_acts *a, int l) {
    const tm_config *c = &m->c;
    const tm_layer_off *O = &m->L[l];
    layer_acts *L = &a->la[l];
    const treal *w = m->w;
    int N = a->N, d = c->d_model, f = c->d_ff;
    treal *xout = l + 1 < c->n_layer ? a->la[l + 1].x : a->xL;
    lin_fwd(N, d, d, L->x, d, w + O->wq, LINEAR, w + O->bq, L->qkv, a->W);
    lin_fwd(N, d, d, L->x, d, w + O->wk, LINEAR, w + O->bk, L->qkv + d, a->W);
    lin_fwd(N, d, d, L->x, d, w + O->wv, LINEAR, w + O->bv, L->qkv + 2 * d, a->W);
    attn_fwd(a, L);
    lin_fwd(N, d, d, L->o, d, w + O->wo, LINEAR, w + O->bo, L->xm, d);
    for (size_t i = 0; i < (size_t)N * d; i++) L->xm[i] += L->x[i];
    norm_fwd(N, d, L->xm, w + O->ln1_w, w + O->ln1_b, L->a1, L->mu1, L->rs1, c->norm_eps);
    lin_fwd(N, d, f, L->a1, d, w + O->wfc, LINEAR, w + O->bfc, L->h1, f);
    size_t nf = (size_t)N * f;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < nf; i++) L->h2[i] = gelu_erf(L->h1[i]);
    lin_fwd(N, f, d, L->h2, f, w + O->wproj, LINEAR, w + O->bproj, L->a2, d);
    for (size_t i = 0; i < (size_t)N * d; i++) L->a2[i] += L->a1[i];
    norm_fwd(N, d, L->a2, w + O->ln2_w, w + O->ln2_b, xout, L->mu2, L->rs2, c->norm_eps);
}

/* BertForMaskedLM's head: LN(gelu(dense(x))) then the tied decoder plus cls.predictions.bias. */
static void head_fwd_bert(const tm_model *m, tm_acts *a) {
    int N = a->N, d = m->c.d_model;
    lin_fwd(N, d, d, a->xL, d, m->w + m->head_w, LINEAR, m->w + m->head_b, a->t1, d);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < (size_t)N * d; i++) a->t2[i] = gelu_erf(a->t1[i]);
    norm_fwd(N, d, a->t2, m->w + m->head_ln_w, m->w + m->head_ln_b, a->af, a->muf, a->rsf, m->c.norm_eps);
    lin_fwd(N, d, m->c.vocab, a->af, d, m->w + m->lm_head, LINEAR, m->w + m->head_bias, a->logits, m->c.vocab);
}

/* a->dx holds dLoss/d(layer output); on return dLoss/d(layer input). */
static void layer_bwd_bert(tm_model *m, tm_acts *a, int l) {
    const tm_config *c = &m->c;
    const tm_layer_off *O = &m->L[l];
    layer_acts *L = &a->la[l];
    const treal *w = m->w;
    treal *g = m->g;
    int N = a->N, d = c->d_model, f = c->d_ff;
    size_t nf = (size_t)N * f, nd = (size_t)N * d;
    memset(a->da, 0, nd * sizeof(treal));   /* da = d s2 */
    norm_bwd(N, d, L->a2, w + O->ln2_w, L->mu2, L->rs2, a->dx, a->da, g + O->ln2_w, g + O->ln2_b);
    memcpy(a->dx, a->da, nd * sizeof(treal));   /* dx = d a1: the residual, plus the MLP below */
    memset(a->dh2, 0, nf * sizeof(treal));
    lin_bwd(N, f, d, L->h2, f, w + O->wproj, LINEAR, a->da, d, a->dh2, f, g + O->wproj, g + O->bproj);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < nf; i++) a->dh1[i] = a->dh2[i] * gelu_erf_grad(L->h1[i]);
    lin_bwd(N, d, f, L->a1, d, w + O->wfc, LINEAR, a->dh1, f, a->dx, d, g + O->wfc, g + O->bfc);
    memset(a->da, 0, nd * sizeof(treal));   /* da = d s1 */
    norm_bwd(N, d, L->xm, w + O->ln1_w, L->mu1, L->rs1, a->dx, a->da, g + O->ln1_w, g + O->ln1_b);
    memset(a->dout, 0, nd * sizeof(treal));
    lin_bwd(N, d, d, L->o, d, w + O->wo, LINEAR, a->da, d, a->dout, d, g + O->wo, g + O->bo);
    memset(a->dqkv, 0, (size_t)N * a->W * sizeof(treal));
    attn_bwd(a, L);
    memcpy(a->dx, a->da, nd * sizeof(treal));   /* dx = d x: the residual, plus q, k, v below */
    lin_bwd(N, d, d, L->x, d, w + O->wq, LINEAR, a->dqkv, a->W, a->dx, d, g + O->wq, g + O->bq);
    lin_bwd(N, d, d, L->x, d, w + O->wk, LINEAR, a->dqkv + d, a->W, a->dx, d, g + O->wk, g + O->bk);
    lin_bwd(N, d, d, L->x, d, w + O->wv, LINEAR, a->dqkv + 2 * d, a->W, a->dx, d, g + O->wv, g + O->bv);
}

/* dlogits (already scaled) in a->logits -> head, layers and embedding gradients. */
static void backward_bert(tm_model *m, tm_acts *a, const int32_t *ids) {
    const tm_config *c = &m->c;
    int N = a->N, d = c->d_model, V = c->vocab;
    size_t nd = (size_t)N * d;
    memset(a->da, 0, nd * sizeof(treal));
    lin_bwd(N, d, V, a->af, d, m->w + m->lm_head, LINEAR, a->logits, V, a->da, d, m->g + m->lm_head,
            m->g + m->head_bias);
    memset(a->dx, 0, nd * sizeof(treal));   /* d t2 */
    norm_bwd(N, d, a->t2, m->w + m->head_ln_w, a->muf, a->rsf, a->da, a->dx, m->g + m->head_ln_w, m->g + m->head_ln_b);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < nd; i++) a->da[i] = a->dx[i] * gelu_erf_grad(a->t1[i]);
    memset(a->dx, 0, nd * sizeof(treal));   /* d xL */
    lin_bwd(N, d, d, a->xL, d, m->w + m->head_w, LINEAR, a->da, d, a->dx, d, m->g + m->head_w, m->g + m->head_b);
    for (int l = c->n_layer - 1; l >= 0; l--) layer_bwd_bert(m, a, l);
    memset(a->da, 0, nd * sizeof(treal));   /* d e */
    norm_bwd(N, d, a->emb, m->w + m->emb_ln_w, a->mue, a->rse, a->dx, a->da, m->g + m->emb_ln_w, m->g + m->emb_ln_b);
    memcpy(a->dx, a->da, nd * sizeof(treal));
    int nb = nblocks((size_t)d);
#pragma omp parallel for schedule(static)
    for (int b = 0; b < nb; b++) {
        size_t j0 = BLOCK_LO(d, b, nb), j1 = BLOCK_LO(d, b + 1, nb);
        for (int r = 0; r < N; r++) {
            const treal *dx = a->dx + (size_t)r * d;
            treal *ge = m->g + m->wte + (size_t)ids[r] * d, *gt = m->g + m->wtype;
            treal *gp = m->wpe != NOFF ? m->g + m->wpe + (size_t)(r % a->T) * d : NULL;
            for (size_t j = j0; j < j1; j++) {
                ge[j] += dx[j];
                if (gp) gp[j] += dx[j];
                gt[j] += dx[j];
            }
        }
    }
}

double TM(tm_forward)(const tm_model *m, tm_acts *a, const int32_t *ids, const int32_t *targets) {
    const tm_config *c = &m->c;
    int N = a->N, d = c->d_model;
    if (c->family == TM_BERT) {
        embed_fwd_bert(m, a, ids);
        for (int l = 0; l < c->n_layer; l++) layer_fwd_bert(m, a, l);
        if (!targets) return 0;
        head_fwd_bert(m, a);
        return xent(a, targets);
    }
    embed_fwd(m, a, ids);
    for (int l = 0; l < c->n_layer; l++) layer_fwd(m, a, l);
    if (!targets) return 0;
    norm_fwd(N, d, a->xL, m->w + m->lnf_w, m->lnf_b != NOFF ? m->w + m->lnf_b : NULL, a->af,
             c->family == TM_GPT2 ? a->muf : NULL, a->rsf, c->norm_eps);
    lin_fwd(N, d, c->vocab, a->af, d, m->w + m->lm_head, LINEAR, NULL, a->logits, c->vocab);
    return xent(a, targets);
}

/* ---------------------------------------------------------------- backward */

/* a->dx holds dLoss/d(layer output); on return it holds dLoss/d(layer input). */
static void layer_bwd(tm_model *m, tm_acts *a, int l) {
    const tm_config *c = &m->c;
    const tm_layer_off *O = &m->L[l];
    layer_acts *L = &a->la[l];
    const treal *w = m->w;
    treal *g = m->g;
    int N = a->N, d = c->d_model, f = c->d_ff, hq = c->n_head * c->head_dim, hk = c->n_kv_head * c->head_dim;
    int gpt2 = c->family == TM_GPT2;
    size_t nf = (size_t)N * f, nd = (size_t)N * d;
    /* MLP: dx stays as the residual gradient; da collects d(norm-2 output). */
    memset(a->da, 0, nd * sizeof(treal));
    if (gpt2) {
        memset(a->dh2, 0, nf * sizeof(treal));
        lin_bwd(N, f, d, L->h2, f, w + O->wproj, CONV1D, a->dx, d, a->dh2, f, g + O->wproj, g + O->bproj);
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < nf; i++) a->dh1[i] = a->dh2[i] * gelu_grad(L->h1[i], L->h3[i]);
        lin_bwd(N, d, f, L->a2, d, w + O->wfc, CONV1D, a->dh1, f, a->da, d, g + O->wfc, g + O->bfc);
    } else {
        memset(a->dh3, 0, nf * sizeof(treal));
        lin_bwd(N, f, d, L->h3, f, w + O->wdown, LINEAR, a->dx, d, a->dh3, f, g + O->wdown, NULL);
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < nf; i++) {
            treal z = L->h1[i], s = sigm(z);
            a->dh2[i] = a->dh3[i] * z * s;                          /* d up */
            a->dh1[i] = a->dh3[i] * L->h2[i] * s * (1 + z * (1 - s)); /* d gate */
        }
        lin_bwd(N, d, f, L->a2, d, w + O->wgate, LINEAR, a->dh1, f, a->da, d, g + O->wgate, NULL);
        lin_bwd(N, d, f, L->a2, d, w + O->wup, LINEAR, a->dh2, f, a->da, d, g + O->wup, NULL);
    }
    norm_bwd(N, d, L->xm, w + O->ln2_w, gpt2 ? L->mu2 : NULL, L->rs2, a->da, a->dx, g + O->ln2_w,
             gpt2 ? g + O->ln2_b : NULL);
    /* Attention: dx is now dLoss/d(xm). */
    memset(a->dout, 0, (size_t)N * hq * sizeof(treal));
    lin_bwd(N, hq, d, L->o, hq, w + O->wo, gpt2 ? CONV1D : LINEAR, a->dx, d, a->dout, hq, g + O->wo,
            gpt2 ? g + O->bo : NULL);
    memset(a->dqkv, 0, (size_t)N * a->W * sizeof(treal));
    attn_bwd(a, L);
    memset(a->da, 0, nd * sizeof(treal));
    if (uses_rope(c)) rope(a, a->dqkv, 1);
    if (gpt2) {
        lin_bwd(N, d, 3 * d, L->a1, d, w + O->wqkv, CONV1D, a->dqkv, a->W, a->da, d, g + O->wqkv, g + O->bqkv);
    } else {
        lin_bwd(N, d, hq, L->a1, d, w + O->wq, LINEAR, a->dqkv, a->W, a->da, d, g + O->wq, NULL);
        lin_bwd(N, d, hk, L->a1, d, w + O->wk, LINEAR, a->dqkv + hq, a->W, a->da, d, g + O->wk, NULL);
        lin_bwd(N, d, hk, L->a1, d, w + O->wv, LINEAR, a->dqkv + hq + hk, a->W, a->da, d, g + O->wv, NULL);
    }
    norm_bwd(N, d, L->x, w + O->ln1_w, gpt2 ? L->mu1 : NULL, L->rs1, a->da, a->dx, g + O->ln1_w,
             gpt2 ? g + O->ln1_b : NULL);
}

/* Embedding gradients: feature blocks in parallel, rows in order within each. */
static void embed_bwd(tm_model *m, tm_acts *a, const int32_t *ids) {
    int d = m->c.d_model, nb = nblocks((size_t)d);
#pragma omp parallel for schedule(static)
    for (int b = 0; b < nb; b++) {
        size_t j0 = BLOCK_LO(d, b, nb), j1 = BLOCK_LO(d, b + 1, nb);
        for (int r = 0; r < a->N; r++) {
            const treal *dx = a->dx + (size_t)r * d;
            treal *ge = m->g + m->wte + (size_t)ids[r] * d;
            treal *gp = m->wpe != NOFF ? m->g + m->wpe + (size_t)(r % a->T) * d : NULL;
            for (size_t j = j0; j < j1; j++) {
                ge[j] += dx[j];
                if (gp) gp[j] += dx[j];
            }
        }
    }
}

void TM(tm_backward)(tm_model *m, tm_acts *a, const int32_t *ids, const int32_t *targets) {
    const tm_config *c = &m->c;
    int N = a->N, d = c->d_model, V = c->vocab;
    /* d(mean loss)/dlogits = (p − onehot)/n over the n counted rows, written over the
     * probabilities; rows without a target get 0. */
    int n = n_targets(N, targets);
    treal inv = n ? (treal)1 / n : 0;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; r++) {
        treal *z = a->logits + (size_t)r * V;
        if (targets[r] < 0) {
            memset(z, 0, sizeof(treal) * (size_t)V);
            continue;
        }
        z[targets[r]] -= 1;
        for (int v = 0; v < V; v++) z[v] *= inv;
    }
    if (c->family == TM_BERT) {
        backward_bert(m, a, ids);
        return;
    }
    memset(a->da, 0, (size_t)N * d * sizeof(treal));
    lin_bwd(N, d, V, a->af, d, m->w + m->lm_head, LINEAR, a->logits, V, a->da, d, m->g + m->lm_head, NULL);
    memset(a->dx, 0, (size_t)N * d * sizeof(treal));
    norm_bwd(N, d, a->xL, m->w + m->lnf_w, c->family == TM_GPT2 ? a->muf : NULL, a->rsf, a->da, a->dx,
             m->g + m->lnf_w, m->lnf_b != NOFF ? m->g + m->lnf_b : NULL);
    for (int l = c->n_layer - 1; l >= 0; l--) layer_bwd(m, a, l);
    embed_bwd(m, a, ids);
}

/* model: the forward pass of every supported block type (hf-checkpoints.md §3.3, §4.3, §5.3,
 * §6.3, §7.3; hf-checkpoints-more.md §3–§9, the layouts of model_block) over a batch of
 * sequences, in float32. Projections are one GEMM over all B·T rows, split into column slabs
 * across OpenMP threads; attention runs one (sequence, head) per thread; every product goes
 * through gemm.h and every elementary function through detmath.h, so the bits are the same on
 * every x86-64 CPU. Each attention row is kept as log-probabilities
 * score − logsumexp(scores), so nothing underflows. Results do not depend on the batch size or
 * the thread count (tests/t-extract.sh checks bit-identity). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "model.h"
#include "core/detmath.h"
#include "core/gemm.h"
#include "core/gemm_half.h"

/* All parallelism is OpenMP; each gemm call runs in one thread. */
void model_set_threads(int n) {
    if (n > 0) omp_set_num_threads(n);
}

void model_free(model *m) {
    if (!m) return;
    if (m->release) m->release(m);
    free(m);
}

/* y[T][n_out] = x[T][n_in] · Wᵀ + b, W in nn.Linear layout [n_out, n_in] (or a half or
 * transposed view of it, gemm_half.h: the same bits). The output columns
 * are split into one slab per thread (a multiple of 64 wide), each a single-threaded sgemm. */
static void linear(float *y, const float *x, const float *W, const float *b, int T, int n_in, int n_out) {
    const unsigned char *hw = NULL;   /* W kept in F16/BF16 (gemm_half.h): same bits, widened per block */
    half_kind hk = HALF_BF16;
    int half = half_find(W, &hw, &hk);
    const float *wcol = NULL;   /* W a transposed view (GPT-2's Conv1D kept as stored) */
    int ldw = 0, xposed = !half && xposed_find(W, &wcol, &ldw);
    int nt = omp_get_max_threads(), slab = (n_out + nt - 1) / nt;
    slab = (slab + 63) / 64 * 64;
    int nslab = (n_out + slab - 1) / slab;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < nslab; k++) {
        int o0 = k * slab, n = n_out - o0 < slab ? n_out - o0 : slab;
        if (half)
            gemm_half_xwt(T, n, n_in, x, n_in, hw + (size_t)o0 * n_in * 2, hk, y + o0, n_out);
        else if (xposed)
            gemm_f32(0, 0, T, n, n_in, 1.0f, x, n_in, wcol + o0, ldw, 0.0f, y + o0, n_out);
        else
            gemm_f32(0, 1, T, n, n_in, 1.0f, x, n_in, W + (size_t)o0 * n_in, n_in, 0.0f, y + o0, n_out);
        if (b)
            for (int t = 0; t < T; t++)
                for (int o = o0; o < o0 + n; o++) y[(size_t)t * n_out + o] += b[o];
    }
}

/* LayerNorm with biased variance (two passes in double), RMSNorm x/sqrt(mean(x²)+eps)·w, or
 * Gemma's RMSNorm with the scale (1 + w) formed in float32 as HF does. b may be NULL. */
static void norm(float *y, const float *x, const float *w, const float *b, int T, int d, model_norm kind,
                 float eps) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * d;
        float *yt = y + (size_t)t * d;
        double mean = 0, var = 0;
        if (kind == NORM_LAYER) {
            for (int i = 0; i < d; i++) mean += xt[i];
            mean /= d;
        }
        for (int i = 0; i < d; i++) var += (xt[i] - mean) * (xt[i] - mean);
        float inv = (float)(1.0 / sqrt(var / d + eps));
        for (int i = 0; i < d; i++) {
            float v = (float)(xt[i] - mean) * inv, scale = kind == NORM_RMS_OFFSET ? 1.0f + w[i] : w[i];
            yt[i] = scale * v + (b ? b[i] : 0.0f);
        }
    }
}

/* One row of n values in place, act(x). Element-wise functions come from detmath.h (the same
 * bits on every CPU), never from libmvec, whose vector variants depend on the CPU. */
#define ACT_ROW(expr)                                  \
    do {                                               \
        for (int i = 0; i < n; i++) { float v = y[i]; y[i] = (expr); } \
    } while (0)
static void act_row(float *y, int n, model_act a) {
    switch (a) {
    case ACT_GELU_ERF: ACT_ROW(0.5f * v * (1.0f + det_erff(v * (float)M_SQRT1_2))); break;
    /* 0.5·x·(1 + tanh u) = x·sigmoid(2u): the same function, one exp instead of tanh */
    case ACT_GELU_TANH: ACT_ROW(v / (1.0f + det_expf(-1.5957691216057308f * (v + 0.044715f * v * v * v)))); break;
    case ACT_SILU: ACT_ROW(v / (1.0f + det_expf(-v))); break;
    case ACT_RELU: ACT_ROW(v > 0 ? v : 0.0f); break;
    case ACT_QUICK_GELU: ACT_ROW(v / (1.0f + det_expf(-1.702f * v))); break;
    }
}

/* Half-split RoPE (§2.1, §2.3) on the first rotary_dim components of each of nh heads. */
static void rope(float *x, int T, int nh, int hd, int rd, const float *cs, const float *sn) {
    int half = rd / 2;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < nh; h++) {
            float *v = x + ((size_t)t * nh + h) * hd;
            const float *c = cs + (size_t)t * half, *s = sn + (size_t)t * half;
            for (int i = 0; i < half; i++) {
                float a = v[i], b = v[i + half];
                v[i] = a * c[i] - b * s[i];
                v[i + half] = b * c[i] + a * s[i];
            }
        }
}

/* Row t of S becomes log-probabilities over its keys: causal j ≤ t, and with a sliding window
 * W > 0 also j > t − W (hf-checkpoints-more.md §11); bidirectional: the valid keys. P receives
 * the probabilities (0 outside the row). */
static void log_softmax_block(float *S, float *P, int t0, int nrows, int T, int causal, int window,
                              const uint8_t *valid);
static void log_softmax_rows(float *S, float *P, int T, int causal, int window, const uint8_t *valid) {
    log_softmax_block(S, P, 0, T, T, causal, window, valid);
}

/* Rows t0 … t0+nrows−1 of the T×T scores, stored from S (stride T): the same per-row operations
 * as log_softmax_rows, which is this over every row. A row reads only its own keys' scores. */
static void log_softmax_block(float *S, float *P, int t0, int nrows, int T, int causal, int window,
                              const uint8_t *valid) {
    for (int t = t0; t < t0 + nrows; t++) {
        float *s = S + (size_t)(t - t0) * T, *p = P + (size_t)(t - t0) * T;
        int n = causal ? t + 1 : T, lo = causal && window > 0 && t - window + 1 > 0 ? t - window + 1 : 0, any = 0;
        float mx = -INFINITY;
        for (int j = lo; j < n; j++)
            if (causal || !valid || valid[j]) {
                if (s[j] > mx) mx = s[j];
                any = 1;
            }
        double sum = 0;
        for (int j = lo; j < n; j++)
            if (causal || !valid || valid[j]) sum += det_expf(s[j] - mx);
        float lse = any ? mx + det_logf((float)sum) : 0.0f;
        for (int j = 0; j < T; j++) {
            int in = j >= lo && j < n && (causal || !valid || valid[j]);
            s[j] = in ? s[j] - lse : -INFINITY;
            p[j] = in ? det_expf(s[j]) : 0.0f;
        }
    }
}

/* ALiBi (Press et al. 2022): score(t, j) += −slope·|t − j|, the same float operation as train's. */
static void alibi_bias(float *S, int T, float slope) {
    for (int t = 0; t < T; t++)
        for (int j = 0; j < T; j++) S[(size_t)t * T + j] += slope * (float)-abs(t - j);
}

/* Gemma2's soft-cap, cap·tanh(s/cap), in float32 over n values. */
static void softcap(float *s, size_t n, float cap) {
    for (size_t i = 0; i < n; i++) s[i] = cap * det_tanhf(s[i] / cap);
}

/* Activations of B sequences of T positions, row r = b*T + t. */
typedef struct {
    int B, T, N;               /* N = B*T rows */
    float *x, *a, *q, *k, *v, *ctx, *o, *up, *gate, *m, *scratch, *cs, *sn;
    const model_query_rows *qr;  /* sampled queries (model_forward_rows), else NULL */
    float *rows;               /* their rows of the current layer, [B][n_head][Q][T] */
} workspace;

/* Query rows per block of scores when queries are sampled: one block, 2·ROW_BLOCK·T floats, is
 * all a thread holds of a head's scores. */
enum { ROW_BLOCK = 128 };

static void ws_alloc(workspace *w, const model_config *c, int B, int T, int nthreads, int score_rows) {
    size_t d = (size_t)c->d_model, qd = (size_t)c->n_head * c->head_dim, kd = (size_t)c->n_kv_head * c->head_dim;
    size_t N = (size_t)B * T;
    w->B = B, w->T = T, w->N = (int)N;
    w->x = xmalloc(sizeof(float) * N * d);
    w->a = xmalloc(sizeof(float) * N * d);
    w->o = xmalloc(sizeof(float) * N * d);
    w->m = xmalloc(sizeof(float) * N * d);
    w->q = xmalloc(sizeof(float) * N * qd);
    w->ctx = xmalloc(sizeof(float) * N * qd);
    w->k = xmalloc(sizeof(float) * N * kd);
    w->v = xmalloc(sizeof(float) * N * kd);
    w->up = xmalloc(sizeof(float) * N * (size_t)c->d_ff);
    w->gate = c->gated_mlp ? xmalloc(sizeof(float) * N * (size_t)c->d_ff) : NULL;
    w->scratch = xmalloc(sizeof(float) * 2 * (size_t)score_rows * T * (size_t)nthreads);
    w->qr = NULL, w->rows = NULL;
    size_t half = c->rotary_dim > 0 ? (size_t)c->rotary_dim / 2 : 1;
    w->cs = xmalloc(sizeof(float) * T * half);
    w->sn = xmalloc(sizeof(float) * T * half);
    if (c->rotary_dim > 0)
        for (int t = 0; t < T; t++)
            for (size_t i = 0; i < half; i++) {
                float ang = (float)t * c->inv_freq[i];   /* float32 angle, as HF forces */
                w->cs[t * half + i] = det_cosf(ang);
                w->sn[t * half + i] = det_sinf(ang);
            }
}

static void ws_free(workspace *w) {
    float *p[] = {w->x, w->a, w->q, w->k, w->v, w->ctx, w->o, w->up, w->gate, w->m, w->scratch, w->cs, w->sn, w->rows};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
}

/* One (sequence b, head h) of attention_rows: ROW_BLOCK query rows at a time, each block the
 * same element operations as attention()'s T×T pass on those rows (every gemm element is its
 * own sequential sum, gemm.h), so the kept rows and the context are bit-identical. Causal blocks
 * compute only the keys j < t0+n: the other scores are masked, and the products they would add
 * to the context are exact zeros, which leave a sum that starts at +0 unchanged. */
static void attention_rows_head(const model *m, workspace *w, int l, int b, int h, const uint8_t *valid,
                                const uint8_t *head_keep, float *S) {
    const model_config *c = &m->cfg;
    int nh = c->n_head, hd = c->head_dim, rep = c->n_head / c->n_kv_head, T = w->T, Q = w->qr->Q;
    int qd = nh * hd, kd = c->n_kv_head * hd, window = m->w.layers[l].window;
    float scale = c->attn_scale > 0 ? c->attn_scale : 1.0f / sqrtf((float)hd), *P = S + (size_t)ROW_BLOCK * T;
    size_t row0 = (size_t)b * T;
    const float *qh = w->q + row0 * qd + (size_t)h * hd;
    const float *kh = w->k + row0 * kd + (size_t)(h / rep) * hd, *vh = w->v + row0 * kd + (size_t)(h / rep) * hd;
    float *oh = w->ctx + row0 * qd + (size_t)h * hd, *kept = w->rows + ((size_t)b * nh + h) * Q * T;
    const int32_t *pos = w->qr->pos + (size_t)b * Q;
    const uint8_t *vb = valid ? valid + row0 : NULL;
    int next = 0, zero = head_keep && !head_keep[(size_t)l * nh + h];
    for (int t0 = 0; t0 < T; t0 += ROW_BLOCK) {
        int n = T - t0 < ROW_BLOCK ? T - t0 : ROW_BLOCK, C = c->causal ? t0 + n : T;
        gemm_f32(0, 1, n, C, hd, scale, qh + (size_t)t0 * qd, qd, kh, kd, 0.0f, S, T);
        for (int i = 0; i < n; i++) {
            float *s = S + (size_t)i * T;
            if (c->alibi_slopes)
                for (int j = 0; j < C; j++) s[j] += c->alibi_slopes[h] * (float)-abs(t0 + i - j);
            if (c->attn_softcap > 0) softcap(s, (size_t)C, c->attn_softcap);
        }
        log_softmax_block(S, P, t0, n, T, c->causal, window, vb);
        for (; next < Q && pos[next] < t0 + n; next++)
            memcpy(kept + (size_t)next * T, S + (size_t)(pos[next] - t0) * T, sizeof(float) * T);
        if (zero)
            for (int t = t0; t < t0 + n; t++) memset(oh + (size_t)t * qd, 0, sizeof(float) * hd);
        else
            gemm_f32(0, 0, n, hd, C, 1.0f, P, T, vh, kd, 0.0f, oh + (size_t)t0 * qd, qd);
    }
}

/* attention() when queries are sampled: no thread ever holds more than one block of a head's
 * scores; the sampled rows go to w->rows. */
static void attention_rows(const model *m, workspace *w, int l, const uint8_t *valid, const uint8_t *head_keep) {
    int nh = m->cfg.n_head;
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < w->B * nh; bh++)
        attention_rows_head(m, w, l, bh / nh, bh % nh, valid, head_keep,
                            w->scratch + 2 * (size_t)ROW_BLOCK * w->T * omp_get_thread_num());
}

/* Attention of one layer from w->q/k/v into w->ctx, one (sequence, head) per thread. GQA: query
 * head h reads KV head h / (n_head / n_kv_head). logp (may be NULL) is [B][L][H][T][T]. */
static void attention(const model *m, workspace *w, int l, const uint8_t *valid, const uint8_t *head_keep,
                      float *logp) {
    const model_config *c = &m->cfg;
    if (w->qr) {
        attention_rows(m, w, l, valid, head_keep);
        return;
    }
    int nh = c->n_head, hd = c->head_dim, rep = c->n_head / c->n_kv_head, T = w->T;
    int qd = nh * hd, kd = c->n_kv_head * hd;
    size_t tt = (size_t)T * T;
    float scale = c->attn_scale > 0 ? c->attn_scale : 1.0f / sqrtf((float)hd);
    int window = m->w.layers[l].window;
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < w->B * nh; bh++) {
        int b = bh / nh, h = bh % nh;
        float *S = w->scratch + 2 * tt * omp_get_thread_num(), *P = S + tt;
        if (logp) S = logp + (((size_t)b * c->n_layer + l) * nh + h) * tt;
        size_t row0 = (size_t)b * T;
        const float *qh = w->q + row0 * qd + (size_t)h * hd;
        const float *kh = w->k + row0 * kd + (size_t)(h / rep) * hd, *vh = w->v + row0 * kd + (size_t)(h / rep) * hd;
        float *oh = w->ctx + row0 * qd + (size_t)h * hd;
        gemm_f32(0, 1, T, T, hd, scale, qh, qd, kh, kd, 0.0f, S, T);
        if (c->alibi_slopes) alibi_bias(S, T, c->alibi_slopes[h]);
        if (c->attn_softcap > 0) softcap(S, tt, c->attn_softcap);
        log_softmax_rows(S, P, T, c->causal, window, valid ? valid + row0 : NULL);
        if (head_keep && !head_keep[(size_t)l * nh + h]) {
            for (int t = 0; t < T; t++) memset(oh + (size_t)t * qd, 0, sizeof(float) * hd);
        } else {
            gemm_f32(0, 0, T, hd, T, 1.0f, P, T, vh, kd, 0.0f, oh, qd);
        }
    }
}

/* q, k, v projections, RoPE, attention and the output projection into w->o. */
static void attn_block(const model *m, const model_layer *y, workspace *w, const float *in, int l,
                       const uint8_t *valid, const uint8_t *head_keep, float *logp) {
    const model_config *c = &m->cfg;
    int d = c->d_model, qd = c->n_head * c->head_dim, kd = c->n_kv_head * c->head_dim, N = w->N;
    linear(w->q, in, y->wq, y->bq, N, d, qd);
    linear(w->k, in, y->wk, y->bk, N, d, kd);
    linear(w->v, in, y->wv, y->bv, N, d, kd);
    if (c->qk_norm) {   /* each head's hd values, after the projection and before RoPE */
        norm(w->q, w->q, y->q_norm_w, y->q_norm_b, N * c->n_head, c->head_dim, c->norm, c->norm_eps);
        norm(w->k, w->k, y->k_norm_w, y->k_norm_b, N * c->n_kv_head, c->head_dim, c->norm, c->norm_eps);
    }
    if (c->rotary_dim > 0)
        for (int b = 0; b < w->B; b++) {
            rope(w->q + (size_t)b * w->T * qd, w->T, c->n_head, c->head_dim, c->rotary_dim, w->cs, w->sn);
            rope(w->k + (size_t)b * w->T * kd, w->T, c->n_kv_head, c->head_dim, c->rotary_dim, w->cs, w->sn);
        }
    attention(m, w, l, valid, head_keep, logp);
    linear(w->o, w->ctx, y->wo, y->bo, N, qd, d);
}

/* MLP of in into w->m: down(act(gate(in)) ⊙ up(in)) when gated, else down(act(up(in))). */
static void mlp_block(const model_config *c, const model_layer *y, workspace *w, const float *in) {
    size_t f = (size_t)c->d_ff;
    linear(w->up, in, y->w_up, y->b_up, w->N, c->d_model, c->d_ff);
    if (c->gated_mlp) linear(w->gate, in, y->w_gate, y->b_gate, w->N, c->d_model, c->d_ff);
#pragma omp parallel for schedule(static)
    for (int r = 0; r < w->N; r++) {
        float *u = w->up + r * f;
        if (c->gated_mlp) {
            float *g = w->gate + r * f;
            act_row(g, c->d_ff, c->act);
            for (size_t i = 0; i < f; i++) u[i] *= g[i];
        } else {
            act_row(u, c->d_ff, c->act);
        }
    }
    linear(w->m, w->up, y->w_down, y->b_down, w->N, c->d_ff, c->d_model);
}

static void add(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

/* The pre-norm layers (model_block in model.h): serial, parallel with two norms (NeoX), parallel
 * with one (Phi), and Gemma2's sandwich with norms on both sides of each branch. ViT's encoder is
 * the serial one with cfg.causal = 0 (every key of the image). */
static void decoder_layer(const model *m, int l, workspace *w, const uint8_t *head_keep, float *logp) {
    const model_config *c = &m->cfg;
    const model_layer *y = &m->w.layers[l];
    int N = w->N, d = c->d_model;
    size_t n = (size_t)N * d;
    norm(w->a, w->x, y->ln1_w, y->ln1_b, N, d, c->norm, c->norm_eps);
    attn_block(m, y, w, w->a, l, NULL, head_keep, logp);
    switch (c->block) {
    case BLOCK_PARALLEL:
        norm(w->a, w->x, y->ln2_w, y->ln2_b, N, d, c->norm, c->norm_eps);
        /* fall through */
    case BLOCK_PARALLEL_ONE:
        mlp_block(c, y, w, w->a);
        for (size_t i = 0; i < n; i++) w->x[i] += w->m[i] + w->o[i];
        return;
    case BLOCK_SANDWICH:
        norm(w->o, w->o, y->ln2_w, NULL, N, d, c->norm, c->norm_eps);
        add(w->x, w->o, n);
        norm(w->a, w->x, y->ln3_w, NULL, N, d, c->norm, c->norm_eps);
        mlp_block(c, y, w, w->a);
        norm(w->m, w->m, y->ln4_w, NULL, N, d, c->norm, c->norm_eps);
        add(w->x, w->m, n);
        return;
    default:
        add(w->x, w->o, n);
        norm(w->a, w->x, y->ln2_w, y->ln2_b, N, d, c->norm, c->norm_eps);
        mlp_block(c, y, w, w->a);
        add(w->x, w->m, n);
    }
}

/* Post-LN layer (BERT, RoBERTa encoders; OPT-350m, causal): x = LN(attn(x) + x); x = LN(ffn(x) + x). */
static void post_ln_layer(const model *m, int l, workspace *w, const uint8_t *valid, const uint8_t *head_keep,
                          float *logp) {
    const model_config *c = &m->cfg;
    const model_layer *y = &m->w.layers[l];
    size_t n = (size_t)w->N * c->d_model;
    attn_block(m, y, w, w->x, l, valid, head_keep, logp);
    add(w->o, w->x, n);
    norm(w->x, w->o, y->ln1_w, y->ln1_b, w->N, c->d_model, c->norm, c->norm_eps);
    mlp_block(c, y, w, w->x);
    add(w->m, w->x, n);
    norm(w->x, w->m, y->ln2_w, y->ln2_b, w->N, c->d_model, c->norm, c->norm_eps);
}

/* Learned-position row of token r (row r of the batch, position t = r mod T): t + pos_offset, or
 * RoBERTa's create_position_ids_from_input_ids, pad_id + (non-pad ids up to t), pads at pad_id. */
static size_t pos_row(const model_config *c, const int32_t *ids, int r, int T) {
    int t = r % T;
    if (!c->pos_skip_pad) return (size_t)t + (size_t)c->pos_offset;
    if (ids[r] == c->pad_id) return (size_t)c->pad_id;
    int count = 0;
    for (int u = r - t; u <= r; u++) count += ids[u] != c->pad_id;
    return (size_t)c->pad_id + (size_t)count;
}

/* Token embeddings (OPT: in d_embed dims, then project_in), Gemma's √d scale, token type 0,
 * learned positions, and the embedding LayerNorm of the post-LN encoders. */
static void embed(const model *m, const int32_t *ids, workspace *w) {
    const model_config *c = &m->cfg;
    size_t d = (size_t)c->d_model, e = c->d_embed > 0 ? (size_t)c->d_embed : d;
    float *tok = e == d ? w->x : xmalloc(sizeof(float) * (size_t)w->N * e);
    for (int r = 0; r < w->N; r++) {
        float *xt = tok + r * e;
        half_copy(xt, m->w.tok_emb + (size_t)ids[r] * e, e);   /* one row, widened when kept half */
        if (c->emb_scale > 0)
            for (size_t i = 0; i < e; i++) xt[i] *= c->emb_scale;
    }
    if (tok != w->x) {
        linear(w->x, tok, m->w.proj_in, NULL, w->N, (int)e, (int)d);
        free(tok);
    }
    for (int r = 0; r < w->N; r++) {
        float *xt = w->x + r * d;
        if (m->w.type_emb) add(xt, m->w.type_emb, d);
        if (m->w.pos_emb) add(xt, m->w.pos_emb + pos_row(c, ids, r, w->T) * d, d);
    }
    if (m->w.emb_ln_w) norm(w->x, w->x, m->w.emb_ln_w, m->w.emb_ln_b, w->N, c->d_model, c->norm, c->norm_eps);
}

/* Final norm (when the model has one), the masked-LM transform of the encoders, OPT's project_out,
 * the head with its bias, Gemma2's cap. */
static void lm_logits(const model *m, workspace *w, float *logits) {
    const model_config *c = &m->cfg;
    int d = c->d_model, e = c->d_embed > 0 ? c->d_embed : d;
    const float *h = w->x;
    if (m->w.lnf_w) {
        norm(w->a, w->x, m->w.lnf_w, m->w.lnf_b, w->N, d, c->norm, c->norm_eps);
        h = w->a;
    }
    if (m->w.mlm_dense_w) {   /* BERT/RoBERTa masked-LM transform (hf-checkpoints.md §7.3 step 6) */
        linear(w->a, w->x, m->w.mlm_dense_w, m->w.mlm_dense_b, w->N, d, d);
        act_row(w->a, w->N * d, c->head_act);
        norm(w->a, w->a, m->w.mlm_ln_w, m->w.mlm_ln_b, w->N, d, NORM_LAYER, c->norm_eps);
        h = w->a;
    }
    float *proj = NULL;
    if (e != d) {
        proj = xmalloc(sizeof(float) * (size_t)w->N * e);
        linear(proj, h, m->w.proj_out, NULL, w->N, d, e);
        h = proj;
    }
    linear(logits, h, m->w.lm_head, m->w.lm_head_b, w->N, e, c->vocab);
    free(proj);
    if (c->final_softcap > 0) softcap(logits, (size_t)w->N * c->vocab, c->final_softcap);
}

/* Every layer, by the model's block type. */
static void run_layers(const model *m, workspace *w, const uint8_t *valid, const uint8_t *head_keep, float *logp) {
    for (int l = 0; l < m->cfg.n_layer; l++) {
        if (m->cfg.block == BLOCK_POST_LN)
            post_ln_layer(m, l, w, valid, head_keep, logp);
        else
            decoder_layer(m, l, w, head_keep, logp);
        if (w->qr) w->qr->layer_done(w->qr->ctx, l, w->rows);
    }
}

int model_forward_batch(const model *m, const int32_t *ids, const uint8_t *valid, int B, int T,
                        const uint8_t *head_keep, float *attn_logp, float *logits) {
    const model_config *c = &m->cfg;
    if (B <= 0 || T <= 0 || T > c->max_pos || c->family == FAM_VIT) return -1;
    for (size_t r = 0; r < (size_t)B * T; r++)
        if (ids[r] < 0 || ids[r] >= c->vocab) return -2;
    workspace w;
    ws_alloc(&w, c, B, T, omp_get_max_threads(), T);
    embed(m, ids, &w);
    run_layers(m, &w, valid, head_keep, attn_logp);
    if (logits && m->w.lm_head) lm_logits(m, &w, logits);
    ws_free(&w);
    return 0;
}

/* ---- ViT (hf-checkpoints-more.md §2.3) ---------------------------------------------------- */

/* The patch convolution (kernel = stride = P, no padding) as one GEMM: each patch unfolded into a
 * row of C·P·P values in the Conv2d weight's (channel, ky, kx) order, patches row-major over the
 * grid; then x = [CLS; patches] + positions. */
static void patch_embed(const model *m, const float *pixels, workspace *w) {
    const model_config *c = &m->cfg;
    int P = c->patch_size, S = c->image_size, g = S / P, N = g * g, C = c->n_channels, K = C * P * P, d = c->d_model;
    float *U = xmalloc(sizeof(float) * (size_t)w->B * N * K), *E = xmalloc(sizeof(float) * (size_t)w->B * N * d);
    for (int b = 0; b < w->B; b++)
        for (int p = 0; p < N; p++) {
            float *u = U + ((size_t)b * N + p) * K;
            int r = p / g, col = p % g;
            for (int ch = 0; ch < C; ch++)
                for (int ky = 0; ky < P; ky++)
                    memcpy(u + (ch * P + ky) * P,
                           pixels + (((size_t)b * C + ch) * S + (size_t)(r * P + ky)) * S + (size_t)col * P,
                           sizeof(float) * P);
        }
    linear(E, U, m->w.patch_w, m->w.patch_b, w->B * N, K, d);
    for (int b = 0; b < w->B; b++)
        for (int t = 0; t < w->T; t++) {
            float *x = w->x + ((size_t)b * w->T + t) * d;
            const float *src = t ? E + ((size_t)b * N + t - 1) * d : m->w.cls_token, *pos = m->w.pos_emb + (size_t)t * d;
            for (int i = 0; i < d; i++) x[i] = src[i] + pos[i];
        }
    free(U);
    free(E);
}

/* Final LayerNorm of each image's CLS row, then the classifier. */
static void cls_logits(const model *m, workspace *w, float *logits) {
    const model_config *c = &m->cfg;
    int d = c->d_model;
    for (int b = 0; b < w->B; b++)
        norm(w->a + (size_t)b * d, w->x + (size_t)b * w->T * d, m->w.lnf_w, m->w.lnf_b, 1, d, c->norm, c->norm_eps);
    linear(logits, w->a, m->w.lm_head, m->w.lm_head_b, w->B, d, c->vocab);
}

int model_forward_images(const model *m, const float *pixels, int B, const uint8_t *head_keep, float *attn_logp,
                         float *logits) {
    const model_config *c = &m->cfg;
    if (c->family != FAM_VIT || B <= 0) return -1;
    workspace w;
    ws_alloc(&w, c, B, c->max_pos, omp_get_max_threads(), c->max_pos);
    patch_embed(m, pixels, &w);
    run_layers(m, &w, NULL, head_keep, attn_logp);
    if (logits && m->w.lm_head) cls_logits(m, &w, logits);
    ws_free(&w);
    return 0;
}

int model_forward(const model *m, const int32_t *ids, const uint8_t *valid, int T, const uint8_t *head_keep,
                  float *attn_logp, float *logits) {
    return model_forward_batch(m, ids, valid, 1, T, head_keep, attn_logp, logits);
}

int model_forward_rows(const model *m, const int32_t *ids, const uint8_t *valid, int B, int T,
                       const uint8_t *head_keep, const model_query_rows *qr, float *logits) {
    const model_config *c = &m->cfg;
    if (B <= 0 || T <= 0 || T > c->max_pos || c->family == FAM_VIT || !qr || qr->Q <= 0 || qr->Q > T) return -1;
    for (size_t r = 0; r < (size_t)B * T; r++)
        if (ids[r] < 0 || ids[r] >= c->vocab) return -2;
    for (size_t r = 0; r < (size_t)B * qr->Q; r++)
        if (qr->pos[r] < 0 || qr->pos[r] >= T || (r % qr->Q && qr->pos[r] <= qr->pos[r - 1])) return -3;
    workspace w;
    ws_alloc(&w, c, B, T, omp_get_max_threads(), ROW_BLOCK);
    w.qr = qr;
    w.rows = xmalloc(sizeof(float) * (size_t)B * c->n_head * qr->Q * T);
    embed(m, ids, &w);
    run_layers(m, &w, valid, head_keep, NULL);
    if (logits && m->w.lm_head) lm_logits(m, &w, logits);
    ws_free(&w);
    return 0;
}

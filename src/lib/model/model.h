/* model: one transformer in memory, whatever file it came from (Hugging Face safetensors, GGUF,
 * llama2.c). Loaders normalise the weights: every matrix is float32 in nn.Linear layout
 * [out, in] (GPT-2's Conv1D is transposed, NeoX's interleaved QKV is split), except that the
 * Hugging Face loader leaves F16/BF16 projection matrices and token embeddings in the file
 * mapping as gemm_half.h views, which only linear() and the embedding gather read; q/k rows use
 * Hugging Face's half-split RoPE order (loaders of Meta-order files permute them). forward()
 * then has one code path per block type, with the family differences explicit in the config. */
#ifndef ATTNCODA_MODEL_H
#define ATTNCODA_MODEL_H
#include <stddef.h>
#include <stdint.h>

typedef enum {
    FAM_GPT2, FAM_NEOX, FAM_LLAMA, FAM_QWEN2, FAM_BERT,
    FAM_PHI, FAM_MISTRAL, FAM_GEMMA, FAM_GEMMA2, FAM_QWEN3, FAM_OPT, FAM_ROBERTA,  /* roberta, xlm-roberta */
    FAM_VIT   /* image classifier: pixels in, not token ids (model_forward_images) */
} model_family;
/* NORM_RMS_OFFSET is Gemma's x/rms·(1 + w): the stored weight is an offset from 1. */
typedef enum { NORM_LAYER, NORM_RMS, NORM_RMS_OFFSET } model_norm;
/* How a layer wires its norms and residuals (docs/FAMILIES.md §9–§11):
 * PRE_LN        x += attn(N1 x); x += mlp(N2 x)                    GPT-2, Llama, Mistral, OPT-125m, ViT
 * PARALLEL      x += attn(N1 x) + mlp(N2 x)                        NeoX
 * PARALLEL_ONE  h = N1 x; x += attn(h) + mlp(h)                    Phi (one norm for both)
 * SANDWICH      x += N2(attn(N1 x)); x += N4(mlp(N3 x))            Gemma2
 * POST_LN       x = N1(x + attn x); x = N2(x + mlp x)              BERT, RoBERTa, OPT-350m */
typedef enum { BLOCK_PRE_LN, BLOCK_PARALLEL, BLOCK_PARALLEL_ONE, BLOCK_SANDWICH, BLOCK_POST_LN } model_block;
typedef enum { ACT_GELU_ERF, ACT_GELU_TANH, ACT_SILU, ACT_RELU, ACT_QUICK_GELU } model_act;

typedef struct {
    model_family family;
    char model_type[32];       /* as in config.json: gpt2, gpt_neox, llama, qwen2, bert, phi, ... */
    int n_layer, n_head, n_kv_head, d_model, head_dim, d_ff, vocab, max_pos;
    model_norm norm;
    float norm_eps;
    model_act act;
    int gated_mlp;             /* SwiGLU (llama, qwen2) */
    int parallel_residual;     /* NeoX use_parallel_residual, as read (forward follows block) */
    int post_ln;               /* BERT, as read (forward follows block) */
    int causal;
    int learned_pos;           /* GPT-2, BERT absolute position embeddings */
    int rotary_dim;            /* 0 = no RoPE; else rotated dims per head (half-split) */
    float rope_theta;
    float *inv_freq;           /* rotary_dim/2 frequencies after any rope_scaling */
    int tied_head;
    /* The newer families' differences (all 0 for the first five, where 0 means "not used"): */
    model_block block;         /* set by the HF and GGUF loaders; llama2.c leaves PRE_LN */
    int d_embed;               /* OPT word_embed_proj_dim when != d_model (project_in/out); else 0 */
    int pos_offset;            /* learned position row = position + pos_offset (OPT 2, RoBERTa pad+1) */
    int pos_skip_pad;          /* RoBERTa: pad ids take row pad_id and do not advance the position */
    float emb_scale;           /* Gemma: embeddings × float32(sqrt(d_model)); 0 = none */
    float attn_scale;          /* score scale; 0 = 1/sqrt(head_dim) (Gemma2 query_pre_attn_scalar) */
    float attn_softcap;        /* Gemma2: s = cap·tanh(s/cap) after scaling, before the mask; 0 = none */
    float final_softcap;       /* Gemma2: the same on the logits; 0 = none */
    int qk_norm;               /* per-head norm (cfg.norm kind, [head_dim] weights) of q and k
                                * before RoPE: Qwen3 q_norm/k_norm, Phi qk_layernorm */
    int bos_id, eos_id, pad_id, cls_id, sep_id;  /* -1 when not defined */
    /* ViT (docs/FAMILIES.md §12): square images of image_size pixels, patch_size patches,
     * T = max_pos = 1 + (image_size/patch_size)²; vocab is the number of classes. 0 elsewhere. */
    int image_size, patch_size, n_channels;
    const float *alibi_slopes; /* [n_head] ALiBi slopes m_h (score += −m_h·|t − j|), or NULL: models
                                * trained here with attncoda_position_encoding = alibi */
    int trained_pos;           /* 1 + the pos_kind (posenc.h) named by attncoda_position_encoding in a
                                * model trained here; 0 when config.json names none */
    model_act head_act;        /* activation of the masked-LM head transform (BERT: hidden_act;
                                * RoBERTa: erf GELU always) */
    int mask_id;               /* mask token from config.json attncoda_mask_token_id, or -1 */
} model_config;

typedef struct {
    const float *ln1_w, *ln1_b;     /* pre-attention norm (BERT: post-attention LayerNorm) */
    const float *ln2_w, *ln2_b;     /* pre-MLP norm (BERT: post-FFN LayerNorm) */
    const float *wq, *wk, *wv;      /* [n_head*head_dim, d], [n_kv_head*head_dim, d] ×2 */
    const float *bq, *bk, *bv;      /* NULL when absent */
    const float *wo, *bo;           /* [d, n_head*head_dim] */
    const float *w_up, *b_up;       /* [d_ff, d] (GPT-2 c_fc, NeoX dense_h_to_4h, llama up) */
    const float *w_gate, *b_gate;   /* [d_ff, d] gated MLPs only (b_gate: llama mlp_bias) */
    const float *w_down, *b_down;   /* [d, d_ff] */
    const float *q_norm_w, *q_norm_b, *k_norm_w, *k_norm_b;  /* [head_dim], with cfg.qk_norm */
    const float *ln3_w, *ln4_w;     /* Gemma2 pre/post feed-forward norms (BLOCK_SANDWICH; ln2 is
                                     * then the post-attention norm of the attention output) */
    int window;                     /* sliding window W: key j visible to query i iff
                                     * i − W < j ≤ i (§11); 0 = every earlier key */
} model_layer;

typedef struct {
    const float *tok_emb;           /* [vocab, d] ([vocab, d_embed] for OPT with d_embed) */
    const float *pos_emb;           /* [max_pos + pos_offset, d] or NULL */
    const float *type_emb;          /* BERT token_type [2, d] (row 0 used) or NULL */
    const float *emb_ln_w, *emb_ln_b; /* BERT embedding LayerNorm */
    const float *lnf_w, *lnf_b;     /* final norm (not BERT) */
    const float *lm_head;           /* [vocab, d]; == tok_emb when tied; NULL for a bare encoder
                                     * (BERT/RoBERTa without the masked-LM head) */
    const float *lm_head_b;         /* Phi's lm_head.bias [vocab], or NULL */
    /* Masked-LM head transform of BERT (cls.predictions.transform) and RoBERTa (lm_head.dense,
     * lm_head.layer_norm): logits = LN(act(dense x))·lm_headᵀ + lm_head_b. NULL elsewhere. */
    const float *mlm_dense_w, *mlm_dense_b, *mlm_ln_w, *mlm_ln_b;
    const float *proj_in, *proj_out; /* OPT [d, d_embed] / [d_embed, d] when d_embed is set */
    /* ViT: Conv2d patch weights [d, C·P·P] (out, in·kh·kw: one GEMM over unfolded patches), bias,
     * CLS token [d]; pos_emb holds its [1+N, d] positions, lnf the final LayerNorm and lm_head /
     * lm_head_b the classifier [classes, d] (NULL for a bare ViTModel). */
    const float *patch_w, *patch_b, *cls_token;
    model_layer *layers;            /* n_layer */
} model_weights;

typedef struct model {
    model_config cfg;
    model_weights w;
    char source[512];               /* path the model was loaded from */
    char sha256[65];                /* checksum of the main weights file (HF: model.safetensors,
                                     * or model.safetensors.index.json when sharded) */
    void *owner;                    /* loader's private state (mmap, converted buffers) */
    void (*release)(struct model *);
    char **files;                   /* every file the loader read (config, shards); may be NULL */
    char (*files_sha256)[65];       /* their SHA-256 (provenance), parallel to files */
    int n_files;
} model;

/* Run one sequence of T tokens. valid (may be NULL) marks real tokens for BERT padding.
 * head_keep (may be NULL) is [n_layer*n_head], 0 = zero that head's output before the output
 * projection (Michel et al. 2019). attn_logp (may be NULL) receives [n_layer][n_head][T][T]
 * log-probabilities computed as score − logsumexp(scores) (masked entries −INFINITY).
 * logits (may be NULL; not for a bare encoder) receives [T][vocab]. Returns 0, -1 when T > max_pos, -2 when
 * an id is outside the vocabulary. Thread use: model_set_threads (OpenMP). */
int model_forward(const model *m, const int32_t *ids, const uint8_t *valid, int T,
                  const uint8_t *head_keep, float *attn_logp, float *logits);
/* B sequences of T tokens at once (ids, valid: [B][T]; attn_logp: [B][n_layer][n_head][T][T];
 * logits: [B][T][vocab]): projections then run as one [B·T]-row GEMM, which amortises packing
 * the weights. Results per sequence are those of model_forward. */
int model_forward_batch(const model *m, const int32_t *ids, const uint8_t *valid, int B, int T,
                        const uint8_t *head_keep, float *attn_logp, float *logits);
/* Sampled query rows (extract --queries): Q strictly increasing positions in [0, T) per sequence
 * (pos [B][Q]); after layer l, layer_done(ctx, l, rows) receives that layer's rows [B][n_head][Q][T],
 * bit-identical to the same rows of model_forward_batch's attn_logp (the buffer is reused for
 * the next layer). */
typedef struct {
    int Q;
    const int32_t *pos;
    void (*layer_done)(void *ctx, int layer, const float *rows);
    void *ctx;
} model_query_rows;
/* model_forward_batch keeping only the sampled rows: scores are formed ROW_BLOCK (128) query
 * rows at a time per head, so memory is the model, the activations of B·T tokens,
 * 8·128·T bytes of scores per thread and 4·B·n_head·Q·T bytes of kept rows (one layer). Returns
 * as model_forward_batch, and −3 for positions that are not strictly increasing in [0, T). */
int model_forward_rows(const model *m, const int32_t *ids, const uint8_t *valid, int B, int T,
                       const uint8_t *head_keep, const model_query_rows *qr, float *logits);
/* A ViT over B images: pixels [B][C][image_size][image_size] (pixel_values, channels first).
 * attn_logp as model_forward_batch (T = max_pos); logits (may be NULL; not without a classifier)
 * receives [B][classes] from the CLS row. Returns 0, or -1 when the model is not a ViT. */
int model_forward_images(const model *m, const float *pixels, int B, const uint8_t *head_keep, float *attn_logp,
                         float *logits);
/* OpenMP threads for projections (column slabs) and attention (heads); no BLAS library is linked
 * (src/lib/core/gemm.c), so there is no second thread pool. n <= 0 keeps the OpenMP default. */
void model_set_threads(int n);

void model_free(model *m);
#endif

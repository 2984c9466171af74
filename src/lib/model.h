/* model: one transformer in memory, whatever file it came from (Hugging Face safetensors, GGUF,
 * llama2.c). Loaders normalise the weights: every matrix is float32 in nn.Linear layout
 * [out, in] (GPT-2's Conv1D is transposed, NeoX's interleaved QKV is split), and q/k rows use
 * Hugging Face's half-split RoPE order (loaders of Meta-order files permute them). forward()
 * then has one code path per block type, with the family differences explicit in the config. */
#ifndef ATTNCODA_MODEL_H
#define ATTNCODA_MODEL_H
#include <stddef.h>
#include <stdint.h>

typedef enum { FAM_GPT2, FAM_NEOX, FAM_LLAMA, FAM_QWEN2, FAM_BERT } model_family;
typedef enum { NORM_LAYER, NORM_RMS } model_norm;
typedef enum { ACT_GELU_ERF, ACT_GELU_TANH, ACT_SILU, ACT_RELU, ACT_QUICK_GELU } model_act;

typedef struct {
    model_family family;
    char model_type[32];       /* as in config.json: gpt2, gpt_neox, llama, qwen2, bert */
    int n_layer, n_head, n_kv_head, d_model, head_dim, d_ff, vocab, max_pos;
    model_norm norm;
    float norm_eps;
    model_act act;
    int gated_mlp;             /* SwiGLU (llama, qwen2) */
    int parallel_residual;     /* NeoX */
    int post_ln;               /* BERT */
    int causal;
    int learned_pos;           /* GPT-2, BERT absolute position embeddings */
    int rotary_dim;            /* 0 = no RoPE; else rotated dims per head (half-split) */
    float rope_theta;
    float *inv_freq;           /* rotary_dim/2 frequencies after any rope_scaling */
    int tied_head;
    int bos_id, eos_id, pad_id, cls_id, sep_id;  /* -1 when not defined */
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
} model_layer;

typedef struct {
    const float *tok_emb;           /* [vocab, d] */
    const float *pos_emb;           /* [max_pos, d] or NULL */
    const float *type_emb;          /* BERT token_type [2, d] (row 0 used) or NULL */
    const float *emb_ln_w, *emb_ln_b; /* BERT embedding LayerNorm */
    const float *lnf_w, *lnf_b;     /* final norm (not BERT) */
    const float *lm_head;           /* [vocab, d]; == tok_emb when tied; NULL for BERT */
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
 * logits (may be NULL; not for BERT) receives [T][vocab]. Returns 0, -1 when T > max_pos, -2 when
 * an id is outside the vocabulary. Thread use: model_set_threads (OpenMP; OpenBLAS is kept at 1). */
int model_forward(const model *m, const int32_t *ids, const uint8_t *valid, int T,
                  const uint8_t *head_keep, float *attn_logp, float *logits);
/* B sequences of T tokens at once (ids, valid: [B][T]; attn_logp: [B][n_layer][n_head][T][T];
 * logits: [B][T][vocab]): projections then run as one [B·T]-row GEMM, which amortises packing
 * the weights. Results per sequence are those of model_forward. */
int model_forward_batch(const model *m, const int32_t *ids, const uint8_t *valid, int B, int T,
                        const uint8_t *head_keep, float *attn_logp, float *logits);
/* OpenMP threads for projections (column slabs) and attention (heads); OpenBLAS is set to one
 * thread so the two pools never compete. n <= 0 keeps the OpenMP default. */
void model_set_threads(int n);

/* RoPE frequencies (hf-checkpoints.md §2.2, §2.4), in float32 as Hugging Face computes them:
 * inv[i] = 1/theta^(2i/dim), i < dim/2; llama3 then rescales the low and medium bands. */
void model_rope_default(float *inv, int dim, double theta);
void model_rope_llama3(float *inv, int dim, double factor, double low_freq_factor,
                       double high_freq_factor, double original_max_pos);
void model_free(model *m);

/* Loaders. model_load dispatches on the path: a directory (Hugging Face config.json +
 * safetensors), *.gguf, or a llama2.c *.bin. NULL + message in err on failure. */
model *model_load(const char *path, char *err, size_t errlen);
model *model_load_hf(const char *dir, char *err, size_t errlen);
model *model_load_gguf(const char *path, char *err, size_t errlen);
model *model_load_llama2c(const char *path, char *err, size_t errlen);
#endif

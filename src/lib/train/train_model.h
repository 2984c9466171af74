/* train_model: the two model families that `train` fits, with forward and backward passes written
 * out by hand: GPT-2 style (learned positions, LayerNorm, gelu_new, tied embeddings, Conv1D
 * [in,out] matrices) and Llama style (RMSNorm, half-split RoPE, SwiGLU, untied lm_head, nn.Linear
 * [out,in] matrices, grouped KV heads). The position encoding is a separate choice (c.pos, any of
 * posenc.h on either body); the two defaults are the families' own. A third family is a BERT-style
 * masked-LM encoder (post-LN, erf GELU, bidirectional attention, learned positions and token type
 * 0, embedding LayerNorm, BertForMaskedLM's transform + tied decoder head); its loss counts only
 * positions whose target is >= 0. Parameters live in one flat array laid out tensor by tensor
 * exactly as the Hugging Face checkpoint stores them, so saving is a plain dump.
 *
 * The element type is float; compiling train_model.c with TRAIN_DOUBLE defined gives the same code
 * in double precision with every public name suffixed _f64 (the gradient check uses it). */
#ifndef ATTNCODA_TRAIN_MODEL_H
#define ATTNCODA_TRAIN_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "model/posenc.h"

#ifdef TRAIN_DOUBLE
typedef double treal;
#define TM(n) n##_f64
#else
typedef float treal;
#define TM(n) n
#endif

enum { TM_GPT2 = 0, TM_LLAMA = 1, TM_BERT = 2 };

typedef struct {
    int family;                 /* TM_GPT2, TM_LLAMA or TM_BERT */
    int n_layer, d_model, n_head, n_kv_head, head_dim, d_ff, vocab, ctx;
    double norm_eps, rope_theta;   /* rope_theta: the RoPE base in use (rope-ntk: already scaled) */
    int pos;                    /* pos_kind (posenc.h) */
} tm_config;

typedef struct {
    char name[80];              /* Hugging Face tensor name */
    int ndim;
    int64_t shape[2];
    size_t off, n;              /* offset into the flat parameter array, element count */
    int decay;                  /* 1: AdamW weight decay applies (matrices other than embeddings) */
    int kind;                   /* TM_T_*: how it is initialised */
} tm_tensor;
enum { TM_T_MATRIX, TM_T_RESID, TM_T_EMBED, TM_T_ONES, TM_T_ZEROS };

/* Offsets of one layer's tensors in the flat array (SIZE_MAX where the family has none). */
typedef struct {
    size_t ln1_w, ln1_b, ln2_w, ln2_b;
    size_t wqkv, bqkv, wo, bo, wfc, bfc, wproj, bproj;   /* GPT-2 */
    size_t wq, wk, wv, wgate, wup, wdown;                /* Llama (wo shared) */
    size_t bq, bk, bv;                                   /* BERT: q, k, v biases; its MLP is wfc/bfc,
                                                          * wproj/bproj in [out,in] layout */
} tm_layer_off;

typedef struct {
    tm_config c;
    int nt;
    tm_tensor *t;
    size_t n_params;
    treal *w, *g;               /* parameters and their gradients, n_params each */
    tm_layer_off *L;
    size_t wte, wpe, lnf_w, lnf_b, lm_head;   /* wpe: learned positions only (else SIZE_MAX) */
    treal *pos_tab;             /* sinusoidal: the fixed [ctx, d_model] table (not a parameter); else NULL */
    size_t wtype, emb_ln_w, emb_ln_b, head_w, head_b, head_ln_w, head_ln_b, head_bias;   /* BERT only */
} tm_model;

typedef struct tm_acts tm_acts;

/* NULL when the configuration is usable, else a static message. */
const char *TM(tm_config_problem)(const tm_config *c);
void TM(tm_model_init)(tm_model *m, const tm_config *c);   /* layout + zeroed arrays */
void TM(tm_model_randomize)(tm_model *m, unsigned long seed);
void TM(tm_model_free)(tm_model *m);

/* Activations for batches of B sequences of T ≤ ctx tokens. */
tm_acts *TM(tm_acts_new)(const tm_config *c, int B, int T);
void TM(tm_acts_free)(tm_acts *a);

/* Forward pass over ids [B*T]. With targets [B*T] returns the mean cross-entropy (nats/token) over
 * the positions whose target is >= 0 (all of them for the causal families; 0 when there are none)
 * and keeps what backward needs; without, returns 0. */
double TM(tm_forward)(const tm_model *m, tm_acts *a, const int32_t *ids, const int32_t *targets);
/* Adds d(mean loss)/dparams of the last forward to m->g (the caller zeroes m->g). */
void TM(tm_backward)(tm_model *m, tm_acts *a, const int32_t *ids, const int32_t *targets);
/* Attention probabilities of layer l from the last forward: [B][n_head][T][T], row-major. */
const treal *TM(tm_acts_attn)(const tm_acts *a, int l);
/* Per-position cross-entropy of the last forward with targets: [B*T]. */
const treal *TM(tm_acts_rowloss)(const tm_acts *a);
#endif

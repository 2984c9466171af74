/* posenc: the position encodings that `train` offers (recipe key `pos`) and that the HF loader
 * reads back from the `attncoda_position_encoding` key of a trained model's config.json
 * (docs/TRAIN.md, "Position encodings"), and the RoPE maths the three model loaders (Hugging
 * Face, GGUF, llama2.c) share. The formulas live here once so that training and loading cannot
 * drift apart. */
#ifndef ATTNCODA_POSENC_H
#define ATTNCODA_POSENC_H

typedef enum {
    POS_LEARNED,      /* learned absolute table added to the token embeddings (GPT-2) */
    POS_SINUSOIDAL,   /* Vaswani et al. 2017 §3.5: fixed sin/cos table added to the embeddings */
    POS_ROPE,         /* rotary q/k, half-split (Su et al. 2021; Hugging Face's layout) */
    POS_ROPE_NTK,     /* rotary with the NTK-aware base (posenc_ntk_theta) */
    POS_ALIBI,        /* Press et al. 2022: score bias −m_h·(i − j), no position vectors */
    POS_NONE,         /* no position information beyond the causal mask */
    POS_COUNT
} pos_kind;

/* The recipe / config.json spelling, and its inverse (-1 when s is none of them). */
const char *posenc_name(int pos);
int posenc_parse(const char *s);
/* "learned, sinusoidal, rope, rope-ntk, alibi or none", for messages. */
#define POSENC_CHOICES "learned, sinusoidal, rope, rope-ntk, alibi or none"

/* NTK-aware RoPE base for a scale factor s on dim rotary dimensions:
 * base · s^(dim/(dim−2)) (bloc97 2023, as written in Peng et al. 2023, YaRN, arXiv:2309.00071,
 * §3.1 eq. 16; the same exponent as Hugging Face's dynamic NTK). Correctly rounded pow (MPFR). */
double posenc_ntk_theta(double base, double s, int dim);

/* ALiBi slope of head h (0-based) of H: for H a power of two 2^(−8(h+1)/H); otherwise the
 * paper's rule as BLOOM implements it: the slopes of the largest power of two n ≤ H, then the
 * odd-indexed slopes of 2n for the remaining heads. Correctly rounded pow. */
double posenc_alibi_slope(int h, int H);

/* Sinusoidal table entry for position t and feature j of d: sin(t·10000^(−2i/d)) for j = 2i,
 * cos(the same angle) for j = 2i + 1. The angle is computed in double, sine and cosine are
 * correctly rounded (MPFR). */
double posenc_sinusoid(int t, int j, int d);

/* RoPE frequencies (docs/FAMILIES.md §2), in float32 as Hugging Face computes them:
 * inv[i] = 1/theta^(2i/dim), i < dim/2; llama3 then rescales the low and medium bands. */
void model_rope_default(float *inv, int dim, double theta);
void model_rope_llama3(float *inv, int dim, double factor, double low_freq_factor,
                       double high_freq_factor, double original_max_pos);

/* Meta's original Llama weights (llama2.c, GGUF "llama") rotate interleaved pairs (2i, 2i+1) of
 * each head; model_forward rotates half-split pairs (i, i+hd/2) as Hugging Face does. Reorder the
 * rows of a q or k projection [n_head*head_dim, cols] in place so that half-split RoPE on the
 * result equals interleaved RoPE on the original: new row j*hd/2+i = old row 2i+j (the
 * permutation of HF's convert_llama_weights_to_hf). cols = 1 reorders a bias vector. */
void llama2c_permute_qk(float *w, int n_head, int head_dim, long cols);
#endif

/* train_io: what `train` reads and writes besides the math: the model recipe files
 * (configs/<name>.conf, `key = value` lines) and Hugging Face model directories (config.json,
 * model.safetensors, tokenizer.json) that the HF loader reads like a downloaded model. */
#ifndef ATTNCODA_TRAIN_IO_H
#define ATTNCODA_TRAIN_IO_H
#include <stddef.h>

#include "train_model.h"
#include "train_synth.h"
#include "tok/bpe_learn.h"

#define TR_BOS 256          /* the byte tokenizer's one special id */
#define TR_VOCAB 257        /* 256 bytes + BOS */
/* family = bert: bytes plus BERT's four special tokens */
#define TR_PAD 256
#define TR_CLS 257
#define TR_SEP 258
#define TR_MASK 259
#define TR_VOCAB_BERT 260

typedef struct {
    char name[128];
    char family[16];        /* gpt2 | llama | bert */
    tm_config m;            /* architecture (vocab = TR_VOCAB); m.pos from `pos`, m.rope_theta the base in use */
    double rope_base;       /* the recipe's rope_theta (rope-ntk scales it into m.rope_theta) */
    double rope_ntk_factor; /* rope-ntk's scale factor s (0 = not given) */
    double lr, min_lr_ratio, warmup, weight_decay, beta1, beta2, adam_eps, grad_clip;
    long batch, steps_full, steps_quick, seed, eval_windows;
    long eval_context;      /* T of the validation windows (default: context) */
    long short_context;     /* > 0: the first short_context_share of the updates use windows of this many
                             * tokens, context / short_context times as many (BERT's 128-then-512) */
    double short_context_share;
    double synthetic_share; /* share of training windows that are synthetic (train_synth.h) */
    tr_synth synth;         /* synthetic_task, synthetic_rate, synthetic_triggers */
    long bpe_merges;        /* > 0: a BPE vocabulary of at most this many merges learned on the training text */
} tr_recipe;

/* Parse a recipe file: 0, or -1 with err = what is wrong (unknown keys, missing required keys,
 * bad values: "line N: ..."), for the caller to name the file. */
int tr_recipe_load(tr_recipe *r, const char *path, char *err, size_t errlen);
/* The memory a run of the recipe needs, in bytes, estimated from its sizes before anything is
 * allocated: parameters, gradients and the two AdamW moments (4 floats each), and the
 * activations of a batch (training, evaluation and short-context batches where they differ; the
 * attention probabilities, batch x heads x context^2 per layer, usually dominate). threads: the
 * OpenMP threads (one T x T scratch each). The vocabulary is at most 257 + bpe_merges. */
double tr_recipe_bytes(const tr_recipe *r, int threads);

/* Write config.json, tokenizer.json (the text tokenizer_json, from tr_tokenizer_json) and
 * model.safetensors into dir (created if missing), each through a temporary name. prov_json goes
 * into the safetensors __metadata__ ("provenance") and, with the step, into config.json
 * ("attncoda_provenance", "attncoda_step"). 0, or UTIL_ERR_DATA with err = "file: what is wrong"
 * (a directory or file that cannot be made), or UTIL_ERR_USAGE with the whole message (an output
 * that is an input, an internal error) (core/util.h). */
int tr_save_hf(const char *dir, const tr_recipe *r, const tm_model *m, const char *prov_json, long step,
               const char *tokenizer_json, char *err, size_t errlen);
/* The tokenizer.json text (malloc'd). bpe NULL: the byte-level one; bert: with [PAD] [CLS] [SEP]
 * [MASK] and the [CLS] $A [SEP] template. bpe given (causal families): its vocabulary and merges,
 * pre-tokenized by the ByteLevel regex (use_regex true). */
char *tr_tokenizer_json(int family, const bpe_vocab *bpe, char *err, size_t errlen);   /* NULL: internal error */
int tr_mkdirs(const char *dir, char *err, size_t errlen);   /* mkdir -p; -1 and "cannot create directory: why" */
#endif

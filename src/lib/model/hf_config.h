/* hf_config: the config.json half of the Hugging Face loader (internal to model_hf.c and
 * hf_config.c). It reads a model directory's config.json into model_config: family defaults
 * (docs/FAMILIES.md §3–§8, §12), RoPE settings and scaling (§1, §2), the position encodings of
 * models trained here, and each layer's sliding window (§11). The loading context it fills is
 * shared with the tensor mapping in model_hf.c; errors go to the context's first message,
 * "dir: config.json: what is wrong". */
#ifndef ATTNCODA_HF_CONFIG_H
#define ATTNCODA_HF_CONFIG_H
#include <jansson.h>
#include <stddef.h>

#include "model.h"
#include "io/safetensors.h"

/* What a loaded Hugging Face model owns (model.owner), freed by its release. */
typedef struct {
    st_set *st;
    void **owned;
    int nowned;
    const float **views;       /* F16/BF16 matrices kept in the mapping (gemm_half.h) */
    int nviews;
    float *inv_freq;
    model_layer *layers;
} hf_state;

/* Loading context: the config, the tensor set, the prefix in use and the first error. */
typedef struct {
    int keep_half;             /* set by mat(): the tensor may stay F16/BF16 */
    json_t *cfg;
    st_set *st;
    hf_state *hs;
    const char *prefix;
    char *err;
    size_t errlen;
    int failed;
    char dir[3584];
} hf_ctx;

/* Record the first error as "dir: message"; later ones are dropped. */
void hf_fail(hf_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n floats owned by the model (freed with it). */
float *hf_own(hf_ctx *c, size_t n);

/* First present numeric key of a NULL-terminated list in obj; def when none. */
double hf_cfg_num_in(hf_ctx *c, json_t *obj, double def, const char *key, ...);
#define CFG(c, def, ...) hf_cfg_num_in((c), (c)->cfg, (def), __VA_ARGS__, (const char *)NULL)
/* A flag: true/false, 0/1; def when absent or null. */
int hf_cfg_flag(hf_ctx *c, const char *key, int def);
/* An integer key in [lo, hi]; def when absent or null. */
int hf_cfg_int(hf_ctx *c, const char *key, double def, int lo, int hi);
/* 0 when the key is an explicit null, def when absent, else its value. */
double hf_cfg_null_off(hf_ctx *c, const char *key, double def);

/* The whole of config.json into k (c->cfg is the parsed object). */
void hf_parse_config(hf_ctx *c, model_config *k);
/* Each layer's sliding window (0 = every earlier key) for the families that have one. */
void hf_set_windows(hf_ctx *c, const model_config *k, model_layer *layers);
#endif

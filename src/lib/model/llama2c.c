/* llama2c: loader for llama2.c checkpoints in the legacy format written by export.py's
 * legacy_export ("version 0"): seven int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
 * vocab_size, seq_len; a negative vocab_size means an unshared classifier), then float32 weights
 * grouped by kind across layers: token_embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3,
 * rms_final, freq_cis_real, freq_cis_imag (unused: RoPE is recomputed), [wcls]. */
#include "model.h"
#include "model_load.h"
#include "posenc.h"
#include "core/util.h"
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float *data;        /* the whole weight section, converted in place */
    float *inv_freq;
    model_layer *layers;
} l2c_owner;

static void l2c_release(model *m)
{
    l2c_owner *o = m->owner;
    if (o) {
        free(o->data);
        free(o->inv_freq);
        free(o->layers);
        free(o);
    }
    m->owner = NULL;
}

/* Header sanity: llama2.c writes seven positive int32. Newer exports ("ak42" magic, version
 * 1/2) are recognised so that the error says what to do. */
static int check_header(const int32_t h[7], char *err, size_t errlen)
{
    if (h[0] == 0x616b3432) {
        snprintf(err, errlen, "llama2.c export version %d (magic 'ak42') is not supported; "
                 "export with --version 0 (legacy)", h[1]);
        return -1;
    }
    const char *names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads",
                           "vocab_size", "seq_len"};
    static const int32_t hi[] = {1 << 16, 1 << 20, 1024, 1024, 1024, 1 << 22, 1 << 22};
    for (int i = 0; i < 7; i++) {
        int32_t v = i == 5 && h[i] < 0 && h[i] != INT32_MIN ? -h[i] : h[i];
        if (v <= 0 || v > hi[i]) {
            snprintf(err, errlen, "not a llama2.c checkpoint: header %s = %d is out of range",
                     names[i], h[i]);
            return -1;
        }
    }
    if (h[0] % h[3] || h[3] % h[4] || (h[0] / h[3]) % 2) {
        snprintf(err, errlen, "not a llama2.c checkpoint: dim %d, n_heads %d, n_kv_heads %d are "
                 "inconsistent", h[0], h[3], h[4]);
        return -1;
    }
    return 0;
}

static void fill_config(model_config *c, const int32_t h[7])
{
    c->family = FAM_LLAMA;
    snprintf(c->model_type, sizeof c->model_type, "llama");
    c->d_model = h[0];
    c->d_ff = h[1];
    c->n_layer = h[2];
    c->n_head = h[3];
    c->n_kv_head = h[4];
    c->vocab = h[5] < 0 ? -h[5] : h[5];
    c->tied_head = h[5] > 0;
    c->max_pos = h[6];
    c->head_dim = h[0] / h[3];
    c->norm = NORM_RMS;
    c->norm_eps = 1e-5f;
    c->act = ACT_SILU;
    c->gated_mlp = 1;
    c->causal = 1;
    c->rotary_dim = c->head_dim;
    c->rope_theta = 10000.0f;
    c->bos_id = 1;
    c->eos_id = 2;
    c->pad_id = c->cls_id = c->sep_id = c->mask_id = -1;
}

/* Number of floats the weight section must hold (wcls included when unshared). */
static size_t expected_floats(const model_config *c)
{
    size_t d = c->d_model, L = c->n_layer, kv = (size_t)c->n_kv_head * c->head_dim;
    size_t n = (size_t)c->vocab * d                     /* token_embedding */
             + L * d * 2                                /* rms_att, rms_ffn */
             + L * d * d * 2 + L * d * kv * 2           /* wq, wo, wk, wv */
             + L * d * c->d_ff * 3                      /* w1, w2, w3 */
             + d                                        /* rms_final */
             + (size_t)c->max_pos * c->head_dim;        /* freq_cis real + imag */
    if (!c->tied_head)
        n += (size_t)c->vocab * d;
    return n;
}

/* Point the model's weights into the section, in llama2.c's order; permute q/k to half-split. */
static void map_weights(model *m, l2c_owner *o)
{
    model_config *c = &m->cfg;
    size_t d = c->d_model, L = c->n_layer, kv = (size_t)c->n_kv_head * c->head_dim, f = c->d_ff;
    float *p = o->data;
    m->w.tok_emb = p;
    p += (size_t)c->vocab * d;
    float *rms_att = p; p += L * d;
    float *wq = p; p += L * d * d;
    float *wk = p; p += L * kv * d;
    float *wv = p; p += L * kv * d;
    float *wo = p; p += L * d * d;
    float *rms_ffn = p; p += L * d;
    float *w1 = p; p += L * f * d;
    float *w2 = p; p += L * d * f;
    float *w3 = p; p += L * f * d;
    m->w.lnf_w = p; p += d;
    p += (size_t)c->max_pos * c->head_dim;  /* freq_cis_real, freq_cis_imag */
    m->w.lm_head = c->tied_head ? m->w.tok_emb : p;
    for (size_t l = 0; l < L; l++) {
        model_layer *w = &o->layers[l];
        w->ln1_w = rms_att + l * d;
        w->wq = wq + l * d * d;
        w->wk = wk + l * kv * d;
        w->wv = wv + l * kv * d;
        w->wo = wo + l * d * d;
        w->ln2_w = rms_ffn + l * d;
        w->w_gate = w1 + l * f * d;     /* llama2.c: silu(w1 x) * (w3 x), then w2 */
        w->w_down = w2 + l * d * f;
        w->w_up = w3 + l * f * d;
        llama2c_permute_qk(wq + l * d * d, c->n_head, c->head_dim, d);
        llama2c_permute_qk(wk + l * kv * d, c->n_kv_head, c->head_dim, d);
    }
    m->w.layers = o->layers;
}

static void make_inv_freq(model_config *c, l2c_owner *o)
{
    int half = c->rotary_dim / 2;
    o->inv_freq = malloc(half * sizeof *o->inv_freq);
    model_rope_default(o->inv_freq, c->rotary_dim, c->rope_theta);
    c->inv_freq = o->inv_freq;
}



model *model_load_llama2c(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    cli_input_note(path);
    int32_t h[7];
    model *m = NULL;
    if (fread(h, sizeof h, 1, f) != 1) {
        snprintf(err, errlen, "not a llama2.c checkpoint: file shorter than the 28-byte header");
        goto out;
    }
    if (check_header(h, err, errlen) < 0)
        goto out;
    m = calloc(1, sizeof *m);
    fill_config(&m->cfg, h);
    fseek(f, 0, SEEK_END);
    long fsize = ftell(f);
    size_t need = expected_floats(&m->cfg), have = (size_t)(fsize - 28) / 4;
    if (fsize < 28 || have != need || (fsize - 28) % 4) {
        snprintf(err, errlen, "llama2.c checkpoint size %ld bytes does not match its header "
                 "(expected %zu bytes)", fsize, 28 + need * 4);
        free(m);
        m = NULL;
        goto out;
    }
    l2c_owner *o = calloc(1, sizeof *o);
    o->data = malloc(need * sizeof(float));
    o->layers = calloc(m->cfg.n_layer, sizeof(model_layer));
    m->owner = o;
    m->release = l2c_release;
    fseek(f, 28, SEEK_SET);
    if (!o->data || !o->layers || fread(o->data, sizeof(float), need, f) != need) {
        snprintf(err, errlen, "cannot read the weights");
        l2c_release(m);
        free(m);
        m = NULL;
        goto out;
    }
    map_weights(m, o);
    make_inv_freq(&m->cfg, o);
    snprintf(m->source, sizeof m->source, "%s", path);
    if (cli_sha256_file(path, m->sha256) < 0) {
        snprintf(err, errlen, "cannot read for checksum");
        l2c_release(m);
        free(m);
        m = NULL;
    }
out:
    fclose(f);
    if (!m)
        cli_err_prefix(err, errlen, path);
    return m;
}

/* train_synth: synthetic trigger -> copy windows (see train_synth.h). */
#include "train_synth.h"
#include "core/util.h"
#include <stdlib.h>

const char *tr_synth_task_name(int task) {
    return task == TR_SYNTH_DEPTHS ? "depths" : task == TR_SYNTH_MIXED ? "mixed"
           : task == TR_SYNTH_RECALL ? "recall" : "backcopy";
}

const char *tr_synth_carrier_name(int carrier) { return carrier == TR_CARRIER_BIGRAM ? "bigram" : "text"; }

void tr_bigram_build(tr_bigram *bg, const int32_t *s, size_t n, int V) {
    bg->n = n;
    bg->first = xcalloc((size_t)V + 1, sizeof(size_t));
    bg->next = xmalloc(sizeof(int32_t) * (n - 1));
    for (size_t i = 0; i + 1 < n; i++) bg->first[s[i] + 1]++;
    for (int c = 0; c < V; c++) bg->first[c + 1] += bg->first[c];
    size_t *fill = xmalloc(sizeof(size_t) * (size_t)V);
    for (int c = 0; c < V; c++) fill[c] = bg->first[c];
    for (size_t i = 0; i + 1 < n; i++) bg->next[fill[s[i]]++] = s[i + 1];
    free(fill);
}

void tr_bigram_free(tr_bigram *bg) {
    free(bg->first);
    free(bg->next);
}

void tr_bigram_walk(const tr_bigram *bg, int32_t s0, int n, gsl_rng *rng, int32_t *out) {
    out[0] = s0;
    for (int i = 1; i < n; i++) {
        int32_t c = out[i - 1];
        size_t k = bg->first[c + 1] - bg->first[c];
        out[i] = k > 0 ? bg->next[bg->first[c] + gsl_rng_uniform_int(rng, (unsigned long)k)]
                       : bg->next[gsl_rng_uniform_int(rng, (unsigned long)(bg->n - 1))];
    }
}

static int synth_rule(const tr_synth *sy, int k) {
    return sy->task == TR_SYNTH_MIXED ? k % sy->rules : sy->task == TR_SYNTH_RECALL ? 0 : -1;
}

static int rule_offset(int rule) {
    return rule % 2 ? -(rule + 1) / 2 : rule / 2 + 1;     /* +1, -1, +2, -2, +3, -3 */
}

/* The item a recall rule copies for a trigger at i whose previous trigger of the same kind is at
 * j (j < 0: none), or -1 when the rule's item is not in the stream (before 0, or not yet before
 * i): the text's next item is taken instead. */
static int32_t recalled(const int32_t *s, int i, int j, int rule) {
    int at = j + rule_offset(rule);
    return j >= 0 && at >= 0 && at < i ? s[at] : -1;
}

/* Two-step recall for a trigger at i whose previous trigger of the same kind is at j: y =
 * s[j + 1] (recall's item), then the item after the latest occurrence of y before j + 1; -1 when
 * either is missing. */
static int32_t recalled_twice(const int32_t *s, int i, int j) {
    if (j < 0 || j + 1 >= i) return -1;
    int32_t y = s[j + 1];
    for (int m = j; m >= 0; m--)
        if (s[m] == y) return s[m + 1];
    return -1;
}

/* The item after a trigger of kind k at i (previous one of the kind at j), or -1: the text's. */
static int32_t copied(const tr_synth *sy, const int32_t *s, int i, int j, int k) {
    if (sy->task == TR_SYNTH_BACKCOPY) return s[i - 1];
    if (sy->task != TR_SYNTH_DEPTHS) return recalled(s, i, j, synth_rule(sy, k));
    int depth = k % 3;
    return depth == 0 ? s[i - 1] : depth == 1 ? recalled(s, i, j, 0) : recalled_twice(s, i, j);
}

/* Fill s[0..n-1]: source tokens src[start..], and at each position i >= 1 with probability rate
 * (and room for the copy) a trigger followed by the token the task asks for. */
static void synth_stream(const int32_t *src, size_t len, size_t start, int n, const tr_synth *sy, gsl_rng *rng,
                         int32_t *s) {
    int last[64];                       /* position of the latest trigger of each kind, or -1 */
    for (int k = 0; k < 64; k++) last[k] = -1;
    size_t at = start;
    for (int i = 0; i < n;) {
        if (i >= 1 && i + 1 < n && gsl_rng_uniform(rng) < sy->rate) {
            int k = (int)gsl_rng_uniform_int(rng, (unsigned long)sy->triggers);
            s[i] = TR_SYNTH_TRIGGER0 + k;
            int32_t copy = copied(sy, s, i, last[k], k);
            if (copy < 0) copy = src[at < len ? at++ : len - 1];
            s[i + 1] = copy;
            last[k] = i;
            i += 2;
        } else {
            s[i++] = src[at < len ? at++ : len - 1];
        }
    }
}

static void window_from_stream(const int32_t *s, int T, int32_t bos, int32_t *ids, int32_t *tg) {
    ids[0] = bos;
    for (int t = 0; t < T; t++) {
        if (t > 0) ids[t] = s[t - 1];
        tg[t] = s[t];
    }
}

void tr_synth_window(const unsigned char *text, size_t len, size_t start, int T, const tr_synth *sy,
                     const tr_bigram *chain, gsl_rng *rng, int32_t bos, int32_t *ids, int32_t *tg) {
    /* the stream consumes at most T bytes from start (start + T <= len) */
    int32_t *src = xmalloc(sizeof(int32_t) * (size_t)T), *s = xmalloc(sizeof(int32_t) * (size_t)T);
    if (chain) tr_bigram_walk(chain, text[start], T, rng, src);
    else
        for (int i = 0; i < T; i++) src[i] = text[start + (size_t)i < len ? start + (size_t)i : len - 1];
    synth_stream(src, (size_t)T, 0, T, sy, rng, s);
    window_from_stream(s, T, bos, ids, tg);
    free(src);
    free(s);
}

void tr_synth_window_ids(const int32_t *tokens, size_t len, size_t start, int T, const tr_synth *sy,
                         const tr_bigram *chain, gsl_rng *rng, int32_t bos, int32_t *ids, int32_t *tg) {
    int32_t *s = xmalloc(sizeof(int32_t) * (size_t)T), *walk = NULL;
    if (chain) {
        walk = xmalloc(sizeof(int32_t) * (size_t)T);
        tr_bigram_walk(chain, tokens[start], T, rng, walk);
        tokens = walk, len = (size_t)T, start = 0;
    }
    synth_stream(tokens, len, start, T, sy, rng, s);
    window_from_stream(s, T, bos, ids, tg);
    free(walk);
    free(s);
}

int tr_synth_is_trigger(const tr_synth *sy, int32_t x) {
    return x >= TR_SYNTH_TRIGGER0 && x < TR_SYNTH_TRIGGER0 + sy->triggers;
}

long tr_synth_find_trigger(const int32_t *tokens, size_t len, const tr_synth *sy) {
    for (size_t i = 0; i < len; i++)
        if (tr_synth_is_trigger(sy, tokens[i])) return (long)i;
    return -1;
}

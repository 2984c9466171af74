/* tok_wordpiece: BERT's WordPiece. After added-token splitting and the BertNormalizer (tok.c),
 * the BertPreTokenizer splits on whitespace (dropped) and isolates every punctuation character;
 * each word then becomes the greedy longest-match-first pieces from the left, non-initial pieces
 * carrying the "##" prefix. A word longer than max_input_chars_per_word characters, or one with
 * a position no piece matches, becomes [UNK] as a whole (as HF tokenizers does). */
#include "tok_impl.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

typedef struct {
    tok_common c;               /* must stay first */
    tok_map vocab;              /* UTF-8 token → id */
    char **piece;               /* id → token text */
    int32_t npiece;
    char *prefix;               /* "##" */
    size_t prefix_len;
    int32_t unk;
    int max_chars;
} wp;

/* ASCII punctuation counts even where Unicode calls it a symbol ($ + < = > ^ ` |). */
static int is_punct(int32_t c) {
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126))
        return 1;
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO: return 1;
    default: return 0;
    }
}

static size_t next_cp(const char *s, size_t len, size_t i, int32_t *c) { return tok_utf8_next(s, len, i, c); }

/* Greedy longest-match-first over one word of nchars characters. */
static void wp_word(const wp *w, const char *s, size_t len, size_t nchars, tok_ivec *out) {
    if (nchars > (size_t)w->max_chars) { tok_ivec_push(out, w->unk); return; }
    size_t mark = out->n, start = 0;
    char *buf = xmalloc(w->prefix_len + len + 1);
    while (start < len) {
        size_t pre = start > 0 ? w->prefix_len : 0, end = len;
        memcpy(buf, w->prefix, pre);
        int32_t id = -1;
        while (end > start) {
            memcpy(buf + pre, s + start, end - start);
            id = tok_map_get(&w->vocab, buf, pre + end - start);
            if (id >= 0) break;
            do end--; while (end > start && ((unsigned char)s[end] & 0xC0) == 0x80);
        }
        if (id < 0) { out->n = mark; tok_ivec_push(out, w->unk); break; }
        tok_ivec_push(out, id);
        start = end;
    }
    free(buf);
}

/* BertPreTokenizer, then WordPiece per word. */
static void wp_segment(const tok *t, const char *s, size_t len, int at_start, tok_ivec *out, void *scratch) {
    (void)scratch;
    (void)at_start;
    const wp *w = t->impl;
    size_t i = 0, ws = 0, nch = 0;
    while (i < len) {
        int32_t c;
        size_t j = next_cp(s, len, i, &c);
        if (tok_is_ws(c) || is_punct(c)) {
            if (i > ws) wp_word(w, s + ws, i - ws, nch, out);
            if (!tok_is_ws(c)) wp_word(w, s + i, j - i, 1, out);
            ws = j;
            nch = 0;
        } else {
            nch++;
        }
        i = j;
    }
    if (len > ws) wp_word(w, s + ws, len - ws, nch, out);
}

static int wp_decode_piece(const tok *t, int32_t prev, int32_t id, char *buf, int cap) {
    (void)prev;
    const wp *w = t->impl;
    if (id < 0 || id >= w->npiece || !w->piece[id] || cap <= 0) return 0;
    const char *p = w->piece[id];
    if (!strncmp(p, w->prefix, w->prefix_len)) p += w->prefix_len;
    int n = (int)strlen(p);
    if (n > cap) n = cap;
    memcpy(buf, p, (size_t)n);
    return n;
}

static int wp_id_of(const tok *t, const char *token) {
    const wp *w = t->impl;
    int32_t id = tok_added_id(&w->c.added, token, strlen(token));
    return id >= 0 ? id : tok_map_get(&w->vocab, token, strlen(token));
}

static void wp_destroy(wp *w) {
    tok_map_free(&w->vocab);
    for (int32_t i = 0; i < w->npiece; i++) free(w->piece[i]);
    free(w->piece);
    free(w->prefix);
    tok_norm_free(&w->c.norm);
    tok_added_free(&w->c.added);
    free(w);
}

static void wp_free(tok *t) {
    wp_destroy(t->impl);
    free(t);
}

static const tok_ops wp_ops = {tok_common_encode, wp_decode_piece, wp_id_of, wp_free};

static wp *wp_new(void) {
    wp *w = xcalloc(1, sizeof *w);
    w->c.segment = wp_segment;
    w->prefix = xstrdup("##");
    w->prefix_len = 2;
    w->max_chars = 100;
    w->unk = -1;
    tok_map_init(&w->vocab, 1 << 15);
    return w;
}

static void wp_add(wp *w, const char *s, size_t len, int32_t id) {
    tok_map_put(&w->vocab, s, len, id);
    if (id >= w->npiece) {
        w->piece = xrealloc(w->piece, (size_t)(id + 1) * sizeof *w->piece);
        for (int32_t i = w->npiece; i <= id; i++) w->piece[i] = NULL;
        w->npiece = id + 1;
    }
    if (!w->piece[id]) {
        w->piece[id] = xmalloc(len + 1);
        memcpy(w->piece[id], s, len);
        w->piece[id][len] = 0;
    }
}

static tok *wp_finish(wp *w, const char *path, const char *unk, char *err, size_t errlen) {
    w->unk = tok_map_get(&w->vocab, unk, strlen(unk));
    if (w->unk < 0) {
        wp_destroy(w);
        return tok_fail(err, errlen, "%s: unknown-token '%s' is not in the vocabulary", path, unk);
    }
    for (int i = 0; i < w->c.added.n; i++) {
        const tok_added *a = &w->c.added.v[i];
        if (a->id >= w->npiece || !w->piece[a->id]) wp_add(w, a->s, a->len, a->id);
    }
    tok *t = xcalloc(1, sizeof *t);
    t->ops = &wp_ops;
    t->impl = w;
    t->vocab = w->npiece;
    tok_set_specials(t, "bert");
    return t;
}

tok *tok_wp_from_json(json_t *root, const char *path, char *err, size_t errlen) {
    wp *w = wp_new();
    json_t *m = json_object_get(root, "model"), *v = json_object_get(m, "vocab");
    const char *pt = json_string_value(json_object_get(json_object_get(root, "pre_tokenizer"), "type"));
    char msg[256];
    if (!pt || strcmp(pt, "BertPreTokenizer")) {
        snprintf(msg, sizeof msg, "WordPiece needs pre_tokenizer BertPreTokenizer, not '%s'", pt ? pt : "null");
        goto fail;
    }
    if (tok_norm_from_json(&w->c.norm, json_object_get(root, "normalizer"), msg, sizeof msg)) goto fail;
    if (!json_is_object(v)) { snprintf(msg, sizeof msg, "model.vocab is not an object"); goto fail; }
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        json_int_t id = json_integer_value(val);
        if (!json_is_integer(val) || id < 0 || id >= (1 << 26)) {
            snprintf(msg, sizeof msg, "vocabulary entry '%.60s': id is not an integer in [0, 2^26)", key);
            goto fail;
        }
        if (id < w->npiece && w->piece[id]) {
            snprintf(msg, sizeof msg, "vocabulary entry '%.60s': id %lld is already taken by another entry", key,
                     (long long)id);
            goto fail;
        }
        wp_add(w, key, strlen(key), (int32_t)id);
    }
    const char *pre = json_string_value(json_object_get(m, "continuing_subword_prefix"));
    if (pre) { free(w->prefix); w->prefix = xstrdup(pre); w->prefix_len = strlen(pre); }
    json_t *mx = json_object_get(m, "max_input_chars_per_word");
    if (json_is_integer(mx) && json_integer_value(mx) > 0 && json_integer_value(mx) <= INT32_MAX)
        w->max_chars = (int)json_integer_value(mx);
    if (tok_added_from_json(&w->c.added, json_object_get(root, "added_tokens"), msg, sizeof msg)) goto fail;
    const char *unk = json_string_value(json_object_get(m, "unk_token"));
    return wp_finish(w, path, unk ? unk : "[UNK]", err, errlen);
fail:
    wp_destroy(w);
    return tok_fail(err, errlen, "%s: %s", path, msg);
}

/* vocab.txt: one token per line, id = line number − 1. Lowercasing (and accent stripping) from
 * tokenizer_config.json's do_lower_case when present, else from lower (default on). */
tok *tok_wp_from_vocab_txt(const char *path, int lower, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) return tok_fail(err, errlen, "%s: cannot open", path);
    cli_input_note(path);
    wp *w = wp_new();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int32_t id = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if (tok_utf8_check(line, (size_t)n) != (size_t)n) {
            free(line);
            fclose(f);
            wp_destroy(w);
            return tok_fail(err, errlen, "%s: line %d: invalid UTF-8", path, id + 1);
        }
        wp_add(w, line, (size_t)n, id++);
    }
    free(line);
    fclose(f);
    if (lower < 0) {
        lower = 1;
        const char *slash = strrchr(path, '/');
        size_t d = slash ? (size_t)(slash - path + 1) : 0;
        char *cfg = xmalloc(d + 32);
        memcpy(cfg, path, d);
        strcpy(cfg + d, "tokenizer_config.json");
        json_t *j = json_load_file(cfg, 0, NULL);
        json_t *dl = json_object_get(j, "do_lower_case");
        if (json_is_boolean(dl)) lower = json_is_true(dl);
        json_decref(j);
        free(cfg);
    }
    tok_norm_bert(&w->c.norm, 1, 1, lower, lower);
    static const char *const sp[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (int i = 0; i < 5; i++) {
        int32_t k = tok_map_get(&w->vocab, sp[i], strlen(sp[i]));
        if (k >= 0) tok_added_add(&w->c.added, sp[i], strlen(sp[i]), k, 1, 0, 0, 0);
    }
    return wp_finish(w, path, "[UNK]", err, errlen);
}

/* tok_unigram: SentencePiece Unigram (T5, XLM-R) as HF tokenizers' Unigram model encodes it.
 *
 * Each pre-token (Metaspace "▁" words) is segmented by Viterbi over its bytes: at every
 * character start, every vocabulary piece that starts there extends the best path ending here by
 * its score (in double, shorter pieces first, a later candidate must be strictly better); when no
 * piece covers exactly the one character, unk with score min_score − 10 does. The best path is
 * read back from the end, runs of unk fused into one piece. A piece string that is no vocabulary
 * entry becomes its <0xNN> byte pieces (byte_fallback) or unk.
 *
 * The pieces starting at a position are found by walking a byte trie of the pieces (edges in
 * one hash table), and once the walk is inside the subtree of a single piece, by comparing that
 * piece's rest at once: the work per position is bounded by the longest piece that actually
 * matches there, not by the longest piece of the vocabulary (hashing every prefix up to one
 * 30 kB piece at every position made a 10 kB word take 87 s). */
#include "tok_impl.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Byte trie of the pieces. Node 0 is the root; the edge (node, byte) → child lives in an
 * open-addressing table. term: the piece ending at the node (the id the lookup map gives), or
 * -1; only: the one piece in the node's subtree, or -1 when there are several. */
typedef struct {
    int32_t *term, *only;
    size_t nodes, cap;
    uint64_t *key;                /* (node + 1) << 8 | byte; 0 = empty slot */
    int32_t *child;
    size_t slots, used;           /* slots: a power of two */
} piece_trie;

typedef struct {
    tok_common c;                 /* must stay first */
    tok_metaspace ms;
    int n, unk, byte_fallback, strip_first;
    char **piece;
    uint32_t *len;
    double *score, min_score;
    piece_trie trie;
    tok_map vocab;                /* piece → id; the last of duplicate pieces wins, as in HF */
    int32_t byte_id[256];
} unigram;

typedef struct { double score; int32_t id; int32_t from; } node;   /* from < 0: unreached */

typedef struct { node *nd; size_t cap; } uscratch;

static size_t char_len(unsigned char c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

static void relax(node *target, double score, int32_t from, int32_t id) {
    if (target->from < 0 || score > target->score) {
        target->score = score;
        target->from = from;
        target->id = id;
    }
}

/* Piece string → ids (HF Unigram::tokenize). */
static void emit(const unigram *u, const char *s, size_t n, tok_ivec *out) {
    int32_t id = tok_map_get(&u->vocab, s, n);
    if (id >= 0) { tok_ivec_push(out, id); return; }
    if (u->byte_fallback) {
        int all = 1;
        for (size_t i = 0; i < n && all; i++) all = u->byte_id[(unsigned char)s[i]] >= 0;
        if (all) {
            for (size_t i = 0; i < n; i++) tok_ivec_push(out, u->byte_id[(unsigned char)s[i]]);
            return;
        }
    }
    if (u->unk >= 0) tok_ivec_push(out, u->unk);
}

static size_t edge_slot(const piece_trie *tr, uint64_t key) {
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 20) & (tr->slots - 1);
}

/* The child of node along byte c, or -1. */
static int32_t trie_child(const piece_trie *tr, int32_t node, unsigned char c) {
    uint64_t key = ((uint64_t)node + 1) << 8 | c;
    for (size_t i = edge_slot(tr, key);; i = (i + 1) & (tr->slots - 1)) {
        if (tr->key[i] == key) return tr->child[i];
        if (tr->key[i] == 0) return -1;
    }
}

static void viterbi(const unigram *u, uscratch *sc, const char *s, size_t n, tok_ivec *out) {
    if (n == 0) return;
    if (n + 1 > sc->cap) { sc->cap = 2 * (n + 1); sc->nd = xrealloc(sc->nd, sc->cap * sizeof *sc->nd); }
    node *nd = sc->nd;
    for (size_t i = 0; i <= n; i++) nd[i] = (node){0, -1, -1};
    nd[0].from = 0;
    double unk_score = u->min_score - 10.0;
    for (size_t at = 0; at < n;) {
        size_t cl = char_len((unsigned char)s[at]);
        if (cl > n - at) cl = n - at;
        double base = nd[at].score;
        int single = 0;
        int32_t node = 0;
        for (size_t k = 1; k <= n - at && (node = trie_child(&u->trie, node, (unsigned char)s[at + k - 1])) >= 0; k++) {
            int32_t id = u->trie.only[node];
            if (id >= 0) {   /* one piece left below: compare its rest at once */
                size_t len = u->len[id];
                if (len <= n - at && !memcmp(u->piece[id] + k, s + at + k, len - k)) {
                    relax(&nd[at + len], u->score[id] + base, (int32_t)at, id);
                    if (len == cl) single = 1;
                }
                break;
            }
            id = u->trie.term[node];
            if (id < 0) continue;   /* s[at..at+k) is only a prefix of longer pieces */
            relax(&nd[at + k], u->score[id] + base, (int32_t)at, id);
            if (k == cl) single = 1;
        }
        if (!single) relax(&nd[at + cl], unk_score + base, (int32_t)at, u->unk);
        at += cl;
    }
    /* back from the end; the pieces come out reversed, so collect spans first */
    size_t m = 0;
    int32_t *span = xmalloc(2 * (n + 1) * sizeof *span);
    for (size_t end = n; end > 0;) {
        size_t from = (size_t)nd[end].from;
        int unk = u->unk >= 0 && nd[end].id == u->unk;
        if (unk && m > 0 && span[2 * m - 1] < 0 && (size_t)span[2 * m - 2] == end) {
            span[2 * m - 2] = (int32_t)from;          /* extend the unk run leftwards */
        } else {
            span[2 * m] = (int32_t)from;
            span[2 * m + 1] = unk ? -(int32_t)end - 1 : (int32_t)end;
            m++;
        }
        end = from;
    }
    for (size_t i = m; i-- > 0;) {
        int32_t a = span[2 * i], e = span[2 * i + 1] < 0 ? -span[2 * i + 1] - 1 : span[2 * i + 1];
        emit(u, s + a, (size_t)(e - a), out);
    }
    free(span);
}

struct wctx { const unigram *u; uscratch *sc; tok_ivec *out; };
static void word_cb(const char *w, size_t n, void *ctx) {
    struct wctx *c = ctx;
    viterbi(c->u, c->sc, w, n, c->out);
}

static void uni_segment(const tok *t, const char *s, size_t len, int at_start, tok_ivec *out, void *vsc) {
    const unigram *u = t->impl;
    struct wctx c = {u, vsc, out};
    if (u->ms.on) tok_metaspace_split(&u->ms, s, len, at_start, word_cb, &c);
    else viterbi(u, vsc, s, len, out);
}

static void *uni_scratch_new(const tok *t) {
    (void)t;
    return xcalloc(1, sizeof(uscratch));
}

static void uni_scratch_free(void *v) {
    uscratch *sc = v;
    free(sc->nd);
    free(sc);
}

static int uni_decode_piece(const tok *t, int32_t prev, int32_t id, char *buf, int cap) {
    const unigram *u = t->impl;
    if (id < 0 || id >= u->n || cap <= 0) return 0;
    for (int c = 0; c < 256; c++)
        if (u->byte_id[c] == id) { buf[0] = (char)c; return 1; }
    const char *p = u->piece[id];
    size_t n = u->len[id], o = 0;
    for (size_t i = 0; i < n && o < (size_t)cap;) {
        if (i + u->ms.replen <= n && u->ms.replen && !memcmp(p + i, u->ms.rep, u->ms.replen)) {
            if (!(o == 0 && i == 0 && u->strip_first && prev >= 0 && prev == t->bos)) buf[o++] = ' ';
            i += u->ms.replen;
        } else {
            buf[o++] = p[i++];
        }
    }
    return (int)o;
}

static int uni_id_of(const tok *t, const char *token) {
    const unigram *u = t->impl;
    size_t n = strlen(token);
    int32_t id = tok_added_id(&u->c.added, token, n);
    if (id < 0) id = tok_map_get(&u->vocab, token, n);
    for (int i = u->n; id < 0 && i-- > 0;)   /* a piece the lattice leaves out (drop_reserved) */
        if (u->len[i] == n && !memcmp(u->piece[i], token, n)) id = i;
    return id;
}

static void trie_free(piece_trie *tr) {
    free(tr->term);
    free(tr->only);
    free(tr->key);
    free(tr->child);
    memset(tr, 0, sizeof *tr);
}

static void uni_destroy(unigram *u) {
    for (int i = 0; i < u->n; i++) free(u->piece[i]);
    free(u->piece);
    free(u->len);
    free(u->score);
    trie_free(&u->trie);
    tok_map_free(&u->vocab);
    tok_norm_free(&u->c.norm);
    tok_added_free(&u->c.added);
    free(u);
}

static void uni_free(tok *t) {
    uni_destroy(t->impl);
    free(t);
}

static const tok_ops uni_ops = {tok_common_encode, uni_decode_piece, uni_id_of, uni_free};

static unigram *uni_new(int n) {
    unigram *u = xcalloc(1, sizeof *u);
    u->c.segment = uni_segment;
    u->c.scratch_new = uni_scratch_new;
    u->c.scratch_free = uni_scratch_free;
    u->n = n;
    u->piece = xcalloc((size_t)n, sizeof *u->piece);
    u->len = xcalloc((size_t)n, sizeof *u->len);
    u->score = xcalloc((size_t)n, sizeof *u->score);
    u->unk = -1;
    u->min_score = INFINITY;
    return u;
}

static void set_piece(unigram *u, int id, const char *s, size_t n, double score) {
    u->piece[id] = xmalloc(n + 1);
    memcpy(u->piece[id], s, n);
    u->piece[id][n] = 0;
    u->len[id] = (uint32_t)n;
    u->score[id] = score;
    if (score < u->min_score) u->min_score = score;
}

static int32_t trie_node(piece_trie *tr) {
    if (tr->nodes == tr->cap) {
        tr->cap = tr->cap ? 2 * tr->cap : 1024;
        tr->term = xrealloc(tr->term, tr->cap * sizeof *tr->term);
        tr->only = xrealloc(tr->only, tr->cap * sizeof *tr->only);
    }
    tr->term[tr->nodes] = -1;
    tr->only[tr->nodes] = -2;   /* -2: no piece below yet */
    return (int32_t)tr->nodes++;
}

static void trie_grow(piece_trie *tr) {
    uint64_t *key = tr->key;
    int32_t *child = tr->child;
    size_t old = tr->slots;
    tr->slots = old ? 2 * old : 4096;
    tr->key = xcalloc(tr->slots, sizeof *tr->key);
    tr->child = xmalloc(tr->slots * sizeof *tr->child);
    for (size_t i = 0; i < old; i++) {
        if (!key[i]) continue;
        size_t j = edge_slot(tr, key[i]);
        while (tr->key[j]) j = (j + 1) & (tr->slots - 1);
        tr->key[j] = key[i];
        tr->child[j] = child[i];
    }
    free(key);
    free(child);
}

/* The child of node along c, created when missing. */
static int32_t trie_step(piece_trie *tr, int32_t node, unsigned char c) {
    int32_t ch = tr->slots ? trie_child(tr, node, c) : -1;
    if (ch >= 0) return ch;
    if (2 * (tr->used + 1) > tr->slots) trie_grow(tr);
    uint64_t key = ((uint64_t)node + 1) << 8 | c;
    size_t i = edge_slot(tr, key);
    while (tr->key[i]) i = (i + 1) & (tr->slots - 1);
    ch = trie_node(tr);
    tr->key[i] = key;
    tr->child[i] = ch;
    tr->used++;
    return ch;
}

static void trie_mark(piece_trie *tr, int32_t node, int32_t id) {
    tr->only[node] = tr->only[node] == -2 ? id : -1;
}

/* The pieces the lookup map returns (one per distinct string: the last duplicate). */
static void build_trie(unigram *u) {
    piece_trie *tr = &u->trie;
    trie_node(tr);
    trie_grow(tr);
    for (int id = 0; id < u->n; id++) {
        if (tok_map_get(&u->vocab, u->piece[id], u->len[id]) != id) continue;
        int32_t node = 0;
        for (uint32_t k = 0; k < u->len[id]; k++) {
            node = trie_step(tr, node, (unsigned char)u->piece[id][k]);
            trie_mark(tr, node, id);
        }
        tr->term[node] = id;
    }
}

/* Lookup map (last duplicate wins: insert from the end, the map keeps the first put) and the
 * byte pieces. */
static tok *uni_finish(unigram *u) {
    tok_map_init(&u->vocab, (size_t)u->n);
    for (int id = u->n; id-- > 0;) tok_map_put(&u->vocab, u->piece[id], u->len[id], id);
    build_trie(u);
    for (int c = 0; c < 256; c++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", c);
        u->byte_id[c] = tok_map_get(&u->vocab, name, 6);
    }
    if (u->n == 0) u->min_score = 0;
    tok *t = xcalloc(1, sizeof *t);
    t->ops = &uni_ops;
    t->impl = u;
    t->vocab = u->n;
    int hi = -1;
    for (int i = 0; i < u->c.added.n; i++)
        if (u->c.added.v[i].id > hi) hi = u->c.added.v[i].id;
    if (hi >= t->vocab) t->vocab = hi + 1;
    tok_set_specials(t, "spm");
    return t;
}

static tok *uni_fail(unigram *u, const char *path, char *err, size_t errlen) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", err);
    uni_destroy(u);
    return tok_fail(err, errlen, "%s: %s", path, msg);
}

/* model {"type": "Unigram", "unk_id": k, "vocab": [["piece", score], …], "byte_fallback": b} */
tok *tok_unigram_from_json(json_t *root, const char *path, char *err, size_t errlen) {
    json_t *m = json_object_get(root, "model"), *v = json_object_get(m, "vocab");
    json_t *unk = json_object_get(m, "unk_id");
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > (1u << 24))
        return tok_fail(err, errlen, "%s: model.vocab is not an array of 1 to 2^24 [piece, score] pairs", path);
    unigram *u = uni_new((int)json_array_size(v));
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        json_t *p = json_array_get(e, 0), *s = json_array_get(e, 1);
        if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(p) || !json_is_number(s) ||
            !isfinite(json_number_value(s)) || json_string_length(p) == 0) {
            tok_fail(err, errlen, "model.vocab[%zu] is not a [non-empty piece, finite score] pair", i);
            return uni_fail(u, path, err, errlen);
        }
        set_piece(u, (int)i, json_string_value(p), json_string_length(p), json_number_value(s));
    }
    if (unk && !json_is_null(unk)) {
        if (!json_is_integer(unk) || json_integer_value(unk) < 0 || json_integer_value(unk) >= u->n) {
            tok_fail(err, errlen, "model.unk_id is not an id of the vocabulary (0..%d)", u->n - 1);
            return uni_fail(u, path, err, errlen);
        }
        u->unk = (int)json_integer_value(unk);
    }
    u->byte_fallback = json_is_true(json_object_get(m, "byte_fallback"));
    json_t *pt = json_object_get(root, "pre_tokenizer");
    int ms = tok_metaspace_from_json(&u->ms, pt, err, errlen);
    if (ms < 0) return uni_fail(u, path, err, errlen);
    if (ms == 0 && pt && !json_is_null(pt)) {
        tok_fail(err, errlen, "Unigram: pre_tokenizer '%s' is not supported (Metaspace, WhitespaceSplit)",
                 json_string_value(json_object_get(pt, "type")) ? json_string_value(json_object_get(pt, "type")) : "?");
        return uni_fail(u, path, err, errlen);
    }
    u->strip_first = tok_decoder_strips_first(json_object_get(root, "decoder"));
    if (tok_norm_from_json(&u->c.norm, json_object_get(root, "normalizer"), err, errlen) ||
        tok_added_from_json(&u->c.added, json_object_get(root, "added_tokens"), err, errlen))
        return uni_fail(u, path, err, errlen);
    return uni_finish(u);
}

/* The lattice of a tokenizer.model holds no unknown, control or byte piece (tok_spm_reserved):
 * the map, and the trie the lattice walks, are rebuilt without them once uni_finish has taken the
 * byte ids from the map; id_of still finds them (uni_id_of). */
static void drop_reserved(unigram *u, const uint8_t *type) {
    tok_map_free(&u->vocab);
    tok_map_init(&u->vocab, (size_t)u->n);
    for (int id = u->n; id-- > 0;)
        if (!tok_spm_reserved(type[id])) tok_map_put(&u->vocab, u->piece[id], u->len[id], id);
    trie_free(&u->trie);
    build_trie(u);
}

/* From a tokenizer.model, with the normaliser and pre-tokenizer transformers' converter gives
 * T5-style models: Precompiled(charsmap), runs of spaces to one, Metaspace. */
tok *tok_unigram_from_spm(const tok_spm_pieces *p, const char *path, char *err, size_t errlen) {
    unigram *u = uni_new(p->n);
    for (int id = 0; id < p->n; id++) {
        set_piece(u, id, p->piece[id], p->len[id], p->score[id]);
        if (p->type[id] == TOK_SPM_USER_DEFINED) tok_added_add(&u->c.added, p->piece[id], p->len[id], id, 0, 0, 0, 0);
    }
    u->unk = p->unk;
    u->byte_fallback = p->byte_fallback;
    u->strip_first = p->add_dummy_prefix;
    u->ms.on = 1;
    u->ms.split = 1;
    u->ms.prepend = p->add_dummy_prefix ? TOK_PREPEND_ALWAYS : TOK_PREPEND_NEVER;
    memcpy(u->ms.rep, "\xe2\x96\x81", u->ms.replen = 3);
    tok_norm *nm = &u->c.norm;
    if (p->charsmap_len) {
        tok_precompiled *pc = tok_precompiled_parse(p->charsmap, p->charsmap_len, err, errlen);
        if (!pc) return uni_fail(u, path, err, errlen);
        nm->step[nm->n] = TN_PRECOMPILED;
        nm->pc[nm->n++] = pc;
    }
    json_t *rep = json_pack("{s:s, s:{s:s}, s:s}", "type", "Replace", "pattern", "Regex", " {2,}", "content", " ");
    tok_norm extra;
    int rc = tok_norm_from_json(&extra, rep, err, errlen);
    json_decref(rep);
    if (rc) return uni_fail(u, path, err, errlen);
    nm->step[nm->n] = extra.step[0];
    nm->a[nm->n] = extra.a[0], nm->alen[nm->n] = extra.alen[0];
    nm->b[nm->n] = extra.b[0], nm->blen[nm->n] = extra.blen[0];
    nm->re[nm->n++] = extra.re[0];
    tok *t = uni_finish(u);
    drop_reserved(u, p->type);
    t->bos = p->bos >= 0 && p->bos < p->n ? p->bos : -1;
    t->eos = p->eos >= 0 && p->eos < p->n ? p->eos : -1;
    t->pad = p->pad >= 0 && p->pad < p->n ? p->pad : -1;
    return t;
}

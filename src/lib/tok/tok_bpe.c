/* tok_bpe: byte-level BPE (GPT-2, GPT-NeoX/Pythia, Qwen2, Llama-3, attncoda's byte tokenizer).
 *
 * Pipeline per segment left after added-token splitting and normalization: the family's
 * pre-tokenizer regex (PCRE2, UTF + Unicode properties, leftmost-first like Oniguruma) cuts the
 * text into pre-tokens; each pre-token's bytes start as one symbol per byte and adjacent symbol
 * pairs merge by rank (lowest first, leftmost on ties) through a min-heap, O(n log n) per
 * pre-token. The vocabulary is kept as raw bytes (the GPT-2 byte→unicode mapping is undone at
 * load time), so tiktoken ranks (raw bytes already) and tokenizer.json vocabularies share one
 * representation. A per-call cache maps repeated pre-tokens to their ids. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tok_impl.h"
#include "core/util.h"

#include <nettle/base64.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char RE_GPT2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char RE_LLAMA3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char RE_QWEN2[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* Pair (left id, right id) → (rank, merged id); open addressing on a 64-bit key. */
typedef struct { uint64_t *k; int32_t *rank, *nid; size_t cap, n; } pairmap;
#define PAIR_EMPTY UINT64_MAX

typedef struct {
    tok_common c;                 /* must stay first */
    pcre2_code *re;               /* NULL: the whole segment is one pre-token */
    int ignore_merges, add_prefix_space;
    /* SentencePiece-style (no ByteLevel): vocabulary keys are the pieces as written ("▁world"),
     * words start as one symbol per character, unknown characters fall back to <0xNN> byte
     * pieces or to unk (consecutive ones fused), Metaspace or nothing pre-tokenizes */
    int spm, fuse_unk, strip_first, byte_fallback;
    int32_t unk, spm_byte[256];
    tok_metaspace ms;
    char *split_after;            /* Split(String, MergedWithPrevious): cut after each occurrence */
    size_t split_len;
    int32_t byte_id[256];
    tok_map vocab;                /* raw bytes → id (BPE vocabulary, without added tokens) */
    pairmap pairs;
    char **piece;                 /* id → raw bytes, for decoding */
    uint32_t *plen;
    int32_t npiece, pcap;         /* npiece = highest id + 1 */
} bpe;

typedef struct {
    pcre2_match_data *md;
    tok_map cache;                /* pre-token → index into cstart/ccount */
    tok_ivec cstart, ccount, pool;
    int32_t *id, *prv, *nxt;      /* symbol list of the word being merged */
    struct hent { int32_t rank, pos, nid; } *heap;
    size_t symcap, heapcap;
} scratch;

/* ---------------------------------------------------------------- byte ↔ unicode (GPT-2) */

static int32_t byte_cp[256];      /* byte → code point */
static int16_t cp_byte[0x144];    /* code point → byte, -1 outside the image */

static void byte_map_init(void) {
    if (byte_cp['!']) return;
    int next = 0;
    for (int i = 0; i < 0x144; i++) cp_byte[i] = -1;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        byte_cp[b] = printable ? b : 0x100 + next++;
        cp_byte[byte_cp[b]] = (int16_t)b;
    }
}

/* Mapped string → raw bytes (out needs len bytes); -1 when a character is not in the map. */
static int unmap(const char *s, size_t len, char *out, size_t *outlen) {
    size_t i = 0, o = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        int32_t cp;
        if (c < 0x80) { cp = c; i++; }
        else if ((c & 0xE0) == 0xC0 && i + 1 < len) { cp = ((c & 0x1F) << 6) | (s[i + 1] & 0x3F); i += 2; }
        else return -1;
        if (cp >= 0x144 || cp_byte[cp] < 0) return -1;
        out[o++] = (char)cp_byte[cp];
    }
    *outlen = o;
    return 0;
}

/* ---------------------------------------------------------------- pair map */

static size_t pair_slot(const pairmap *p, uint64_t k) {
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (p->cap - 1);
}

static void pair_init(pairmap *p, size_t expect) {
    p->cap = 1024;
    while (p->cap < expect * 2) p->cap <<= 1;
    p->k = xmalloc(p->cap * sizeof *p->k);
    p->rank = xmalloc(p->cap * sizeof *p->rank);
    p->nid = xmalloc(p->cap * sizeof *p->nid);
    memset(p->k, 0xFF, p->cap * sizeof *p->k);
    p->n = 0;
}

static void pair_put(pairmap *p, int32_t a, int32_t b, int32_t rank, int32_t nid);
static void pair_grow(pairmap *p) {
    pairmap old = *p;
    pair_init(p, old.cap);
    for (size_t i = 0; i < old.cap; i++)
        if (old.k[i] != PAIR_EMPTY)
            pair_put(p, (int32_t)(old.k[i] >> 32), (int32_t)(uint32_t)old.k[i], old.rank[i], old.nid[i]);
    free(old.k);
    free(old.rank);
    free(old.nid);
}

/* The first definition of a pair wins (merges are read in rank order). */
static void pair_put(pairmap *p, int32_t a, int32_t b, int32_t rank, int32_t nid) {
    if ((p->n + 1) * 2 > p->cap) pair_grow(p);
    uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    size_t j = pair_slot(p, k);
    for (; p->k[j] != PAIR_EMPTY; j = (j + 1) & (p->cap - 1))
        if (p->k[j] == k) return;
    p->k[j] = k;
    p->rank[j] = rank;
    p->nid[j] = nid;
    p->n++;
}

static int pair_get(const pairmap *p, int32_t a, int32_t b, int32_t *rank, int32_t *nid) {
    uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    for (size_t j = pair_slot(p, k); p->k[j] != PAIR_EMPTY; j = (j + 1) & (p->cap - 1))
        if (p->k[j] == k) { *rank = p->rank[j]; *nid = p->nid[j]; return 1; }
    return 0;
}

/* ---------------------------------------------------------------- merging */

static int hent_less(const struct hent *a, const struct hent *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(scratch *sc, size_t *n, struct hent e) {
    if (*n == sc->heapcap) {
        sc->heapcap = sc->heapcap * 2 + 64;
        sc->heap = xrealloc(sc->heap, sc->heapcap * sizeof *sc->heap);
    }
    size_t i = (*n)++;
    while (i > 0 && hent_less(&e, &sc->heap[(i - 1) / 2])) {
        sc->heap[i] = sc->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    sc->heap[i] = e;
}

static struct hent heap_pop(scratch *sc, size_t *n) {
    struct hent top = sc->heap[0], last = sc->heap[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && hent_less(&sc->heap[c + 1], &sc->heap[c])) c++;
        if (!hent_less(&sc->heap[c], &last)) break;
        sc->heap[i] = sc->heap[c];
        i = c;
    }
    if (*n) sc->heap[i] = last;
    return top;
}

static void push_pair(const bpe *b, scratch *sc, size_t *hn, int32_t i) {
    int32_t j = sc->nxt[i], rank, nid;
    if (i >= 0 && j >= 0 && pair_get(&b->pairs, sc->id[i], sc->id[j], &rank, &nid))
        heap_push(sc, hn, (struct hent){rank, i, nid});
}

/* BPE on one pre-token of n ≥ 2 bytes: lowest-rank adjacent pair first, leftmost on ties; a
 * popped entry whose pair changed since it was queued is stale and skipped. */
static void sym_reserve(scratch *sc, size_t n) {
    if (n > sc->symcap) {
        sc->symcap = n;
        sc->id = xrealloc(sc->id, n * sizeof *sc->id);
        sc->prv = xrealloc(sc->prv, n * sizeof *sc->prv);
        sc->nxt = xrealloc(sc->nxt, n * sizeof *sc->nxt);
    }
}

static void merge_symbols(const bpe *b, scratch *sc, size_t n, tok_ivec *out);
static void merge_word(const bpe *b, scratch *sc, const unsigned char *w, size_t n, tok_ivec *out) {
    sym_reserve(sc, n);
    for (size_t i = 0; i < n; i++) sc->id[i] = b->byte_id[w[i]];
    merge_symbols(b, sc, n, out);
}

/* The symbols sc->id[0..n) (n ≥ 1) merged by rank. */
static void merge_symbols(const bpe *b, scratch *sc, size_t n, tok_ivec *out) {
    for (size_t i = 0; i < n; i++) {
        sc->prv[i] = (int32_t)i - 1;
        sc->nxt[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    size_t hn = 0;
    for (size_t i = 0; i + 1 < n; i++) push_pair(b, sc, &hn, (int32_t)i);
    while (hn) {
        struct hent e = heap_pop(sc, &hn);
        int32_t i = e.pos, j = sc->nxt[i], rank, nid;
        if (sc->id[i] < 0 || j < 0) continue;
        if (!pair_get(&b->pairs, sc->id[i], sc->id[j], &rank, &nid) || rank != e.rank || nid != e.nid)
            continue;
        sc->id[i] = nid;
        sc->id[j] = -1;                               /* j is gone */
        sc->nxt[i] = sc->nxt[j];
        if (sc->nxt[j] >= 0) sc->prv[sc->nxt[j]] = i;
        if (sc->prv[i] >= 0) push_pair(b, sc, &hn, sc->prv[i]);
        push_pair(b, sc, &hn, i);
    }
    for (int32_t i = 0; i >= 0; i = sc->nxt[i]) tok_ivec_push(out, sc->id[i]);
}

enum { CACHE_MAX_LEN = 64, CACHE_MAX_ENTRIES = 1 << 20 };

static size_t utf8_len(unsigned char c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

/* HF's BPE::merge_word for character-level vocabularies: a character that is no piece becomes
 * its <0xNN> pieces when all exist (byte_fallback), else unk; an unk waits for the next
 * character that is a piece (or the end) and absorbs the unknown ones between when fuse_unk. */
static void spm_merge_word(const bpe *b, scratch *sc, const char *w, size_t n, tok_ivec *out) {
    sym_reserve(sc, n);
    size_t k = 0;
    int pending_unk = 0;
    for (size_t i = 0; i < n;) {
        size_t cl = utf8_len((unsigned char)w[i]);
        if (cl > n - i) cl = n - i;
        int32_t id = tok_map_get(&b->vocab, w + i, cl);
        if (id >= 0) {
            if (pending_unk) sc->id[k++] = b->unk, pending_unk = 0;
            sc->id[k++] = id;
        } else {
            int all = b->byte_fallback;
            for (size_t j = 0; all && j < cl; j++) all = b->spm_byte[(unsigned char)w[i + j]] >= 0;
            if (all) {
                for (size_t j = 0; j < cl; j++) sc->id[k++] = b->spm_byte[(unsigned char)w[i + j]];
            } else if (b->unk >= 0) {
                if (pending_unk && !b->fuse_unk) sc->id[k++] = b->unk;
                pending_unk = 1;
            }
        }
        i += cl;
    }
    if (pending_unk) sc->id[k++] = b->unk;
    if (k) merge_symbols(b, sc, k, out);
}

static void bpe_word(const bpe *b, scratch *sc, const char *w, size_t n, tok_ivec *out) {
    if (n == 0) return;
    if (b->ignore_merges || (n == 1 && !b->spm)) {
        int32_t id = tok_map_get(&b->vocab, w, n);
        if (id >= 0) { tok_ivec_push(out, id); return; }
    }
    int cacheable = n <= CACHE_MAX_LEN;
    if (cacheable) {
        int32_t k = tok_map_get(&sc->cache, w, n);
        if (k >= 0) {
            for (int32_t i = 0; i < sc->ccount.v[k]; i++) tok_ivec_push(out, sc->pool.v[sc->cstart.v[k] + i]);
            return;
        }
    }
    size_t start = out->n;
    if (b->spm) spm_merge_word(b, sc, w, n, out);
    else merge_word(b, sc, (const unsigned char *)w, n, out);
    if (cacheable && sc->cache.n < CACHE_MAX_ENTRIES) {
        tok_map_put(&sc->cache, w, n, (int32_t)sc->cstart.n);
        tok_ivec_push(&sc->cstart, (int32_t)sc->pool.n);
        tok_ivec_push(&sc->ccount, (int32_t)(out->n - start));
        for (size_t i = start; i < out->n; i++) tok_ivec_push(&sc->pool, out->v[i]);
    }
}


/* Pre-tokenize with the regex ("Isolated": matches and the gaps between them are pre-tokens;
 * empty matches produce nothing), then BPE every pre-token. */
struct word_ctx { const bpe *b; scratch *sc; tok_ivec *out; };
static void spm_word_cb(const char *w, size_t n, void *ctx) {
    struct word_ctx *c = ctx;
    bpe_word(c->b, c->sc, w, n, c->out);
}

/* The matches of re in s and the gaps between them, in order, each handed to word(). */
static void regex_split(const pcre2_code *re, pcre2_match_data *md, const char *s, size_t len,
                        void (*word)(const char *w, size_t n, void *ctx), void *ctx) {
    size_t gap = 0, at = 0;
    while (at < len) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, len, at, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[1] == ov[0]) { at = ov[0] + utf8_len((unsigned char)s[ov[0]]); continue; }
        if (ov[0] > gap) word(s + gap, ov[0] - gap, ctx);
        word(s + ov[0], ov[1] - ov[0], ctx);
        gap = at = ov[1];
    }
    if (gap < len) word(s + gap, len - gap, ctx);
}

static void bpe_segment(const tok *t, const char *s, size_t len, int at_start, tok_ivec *out, void *vsc) {
    const bpe *b = t->impl;
    scratch *sc = vsc;
    char *tmp = NULL;
    if (b->ms.on) {
        struct word_ctx c = {b, sc, out};
        tok_metaspace_split(&b->ms, s, len, at_start, spm_word_cb, &c);
        return;
    }
    if (b->split_after) {
        size_t from = 0;
        for (size_t i = 0; i + b->split_len <= len;) {
            if (memcmp(s + i, b->split_after, b->split_len)) { i++; continue; }
            i += b->split_len;
            bpe_word(b, sc, s + from, i - from, out);
            from = i;
        }
        bpe_word(b, sc, s + from, len - from, out);
        return;
    }
    if (b->add_prefix_space && len > 0 && s[0] != ' ') {
        tmp = xmalloc(len + 1);
        tmp[0] = ' ';
        memcpy(tmp + 1, s, len);
        s = tmp;
        len++;
    }
    if (!b->re) {
        bpe_word(b, sc, s, len, out);
        free(tmp);
        return;
    }
    struct word_ctx c = {b, sc, out};
    regex_split(b->re, sc->md, s, len, spm_word_cb, &c);
    free(tmp);
}

static void *scratch_new(const tok *t) {
    const bpe *b = t->impl;
    scratch *sc = xcalloc(1, sizeof *sc);
    if (b->re) sc->md = pcre2_match_data_create_from_pattern(b->re, NULL);
    tok_map_init(&sc->cache, 64);
    return sc;
}

static void scratch_free(void *v) {
    scratch *sc = v;
    if (sc->md) pcre2_match_data_free(sc->md);
    tok_map_free(&sc->cache);
    free(sc->cstart.v);
    free(sc->ccount.v);
    free(sc->pool.v);
    free(sc->id);
    free(sc->prv);
    free(sc->nxt);
    free(sc->heap);
    free(sc);
}

/* ---------------------------------------------------------------- tok_ops */

/* SentencePiece pieces: <0xNN> is the byte, "▁" a space; right after BOS the leading one is
 * the dummy prefix, dropped when the decoder strips it (a piece decoded alone keeps it, as in
 * llama2.c's decode). */
static int spm_decode_piece(const bpe *b, const tok *t, int32_t prev, int32_t id, char *buf, int cap) {
    for (int c = 0; c < 256; c++)
        if (b->spm_byte[c] == id) { buf[0] = (char)c; return 1; }
    const char *p = b->piece[id];
    size_t n = b->plen[id], o = 0;
    for (size_t i = 0; i < n && o < (size_t)cap;) {
        if (i + 3 <= n && !memcmp(p + i, "\xe2\x96\x81", 3)) {
            if (!(o == 0 && i == 0 && b->strip_first && prev >= 0 && prev == t->bos)) buf[o++] = ' ';
            i += 3;
        } else {
            buf[o++] = p[i++];
        }
    }
    return (int)o;
}

static int bpe_decode_piece(const tok *t, int32_t prev, int32_t id, char *buf, int cap) {
    const bpe *b = t->impl;
    if (id < 0 || id >= b->npiece || !b->piece[id] || cap <= 0) return 0;
    if (b->spm) return spm_decode_piece(b, t, prev, id, buf, cap);
    int n = (int)b->plen[id] < cap ? (int)b->plen[id] : cap;
    memcpy(buf, b->piece[id], (size_t)n);
    return n;
}

/* Added tokens by content; then the vocabulary in its mapped spelling ("Ġworld"), then as raw
 * bytes (" world"). */
static int bpe_id_of(const tok *t, const char *token) {
    const bpe *b = t->impl;
    size_t len = strlen(token), n;
    int32_t id = tok_added_id(&b->c.added, token, len);
    if (id >= 0) return id;
    char *raw = xmalloc(len + 1);
    if (unmap(token, len, raw, &n) == 0) id = tok_map_get(&b->vocab, raw, n);
    free(raw);
    return id >= 0 ? id : tok_map_get(&b->vocab, token, len);
}

static void bpe_destroy(bpe *b) {
    if (b->re) pcre2_code_free(b->re);
    tok_map_free(&b->vocab);
    free(b->pairs.k);
    free(b->pairs.rank);
    free(b->pairs.nid);
    for (int32_t i = 0; i < b->npiece; i++) free(b->piece[i]);
    free(b->piece);
    free(b->plen);
    tok_norm_free(&b->c.norm);
    free(b->split_after);
    tok_added_free(&b->c.added);
    free(b);
}

static void bpe_free(tok *t) {
    bpe_destroy(t->impl);
    free(t);
}

static const tok_ops bpe_ops = {tok_common_encode, bpe_decode_piece, bpe_id_of, bpe_free};

/* ---------------------------------------------------------------- building */

static bpe *bpe_new(void) {
    byte_map_init();
    bpe *b = xcalloc(1, sizeof *b);
    b->c.segment = bpe_segment;
    b->c.scratch_new = scratch_new;
    b->c.scratch_free = scratch_free;
    return b;
}


/* Oniguruma (HF) and Rust's regex (tiktoken) take \s to be Unicode White_Space; PCRE2's UCP \s
 * also matches U+180E (a format character since Unicode 6.3). Spell the class out instead. */
#define WS_CLASS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
static char *rewrite_ws(const char *p, size_t len, size_t *outlen) {
    char *o = xmalloc(len * (sizeof WS_CLASS + 3) + 1);
    size_t n = 0;
    int in_class = 0;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        if (c == '\\' && i + 1 < len) {
            char d = p[++i];
            if (d == 's') n += (size_t)sprintf(o + n, in_class ? "%s" : "[%s]", WS_CLASS);
            else if (d == 'S' && !in_class) n += (size_t)sprintf(o + n, "[^%s]", WS_CLASS);
            else { o[n++] = c; o[n++] = d; }
            continue;
        }
        if (c == '[' && !in_class) {
            in_class = 1;
            o[n++] = c;
            if (i + 1 < len && p[i + 1] == '^') o[n++] = p[++i];
            if (i + 1 < len && p[i + 1] == ']') o[n++] = p[++i];     /* a leading ] is literal */
            continue;
        }
        if (c == ']' && in_class) in_class = 0;
        o[n++] = c;
    }
    *outlen = n;
    return o;
}

static int set_regex(bpe *b, const char *pattern, size_t len, uint32_t extra, char *err, size_t errlen) {
    int ec;
    PCRE2_SIZE eo;
    if (b->re) { tok_fail(err, errlen, "more than one pre-tokenizer regex is not supported"); return -1; }
    size_t rl = len;
    char *rx = (extra & PCRE2_LITERAL) ? NULL : rewrite_ws(pattern, len, &rl);
    b->re = pcre2_compile((PCRE2_SPTR)(rx ? rx : pattern), rl, PCRE2_UTF | PCRE2_UCP | extra, &ec, &eo, NULL);
    free(rx);
    if (!b->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        tok_fail(err, errlen, "pre-tokenizer regex: %s at offset %zu", (char *)msg, (size_t)eo);
        return -1;
    }
    pcre2_jit_compile(b->re, PCRE2_JIT_COMPLETE);   /* without JIT the interpreter still works */
    return 0;
}

int tok_gpt2_pretokenize(const char *text, size_t len, void (*word)(const char *w, size_t n, void *ctx), void *ctx,
                         char *err, size_t errlen) {
    if (tok_utf8_check(text, len) != len) return -1;
    bpe *b = bpe_new();
    char why[256];
    if (set_regex(b, RE_GPT2, strlen(RE_GPT2), 0, why, sizeof why)) {
        snprintf(err, errlen, "internal error: %s", why);
        bpe_destroy(b);
        return -2;
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(b->re, NULL);
    regex_split(b->re, md, text, len, word, ctx);
    pcre2_match_data_free(md);
    bpe_destroy(b);
    return 0;
}

static void set_piece(bpe *b, int32_t id, const char *s, size_t n) {
    if (id >= b->pcap) {                 /* geometric growth: vocabularies come in any order */
        int32_t cap = b->pcap ? b->pcap : 1024;
        while (cap <= id) cap *= 2;
        b->piece = xrealloc(b->piece, (size_t)cap * sizeof *b->piece);
        b->plen = xrealloc(b->plen, (size_t)cap * sizeof *b->plen);
        for (int32_t i = b->pcap; i < cap; i++) { b->piece[i] = NULL; b->plen[i] = 0; }
        b->pcap = cap;
    }
    if (id >= b->npiece) b->npiece = id + 1;
    free(b->piece[id]);
    b->piece[id] = xmalloc(n + 1);
    memcpy(b->piece[id], s, n);
    b->piece[id][n] = 0;
    b->plen[id] = (uint32_t)n;
}

/* vocab object {"Ġworld": 995, …}: mapped spellings become raw-byte keys; spellings outside
 * the byte map (e.g. NeoX's literal-space added tokens) are kept only for decoding. */
static int load_vocab(bpe *b, json_t *v, char *err, size_t errlen) {
    if (!json_is_object(v)) { tok_fail(err, errlen, "model.vocab is not an object"); return -1; }
    tok_map_init(&b->vocab, json_object_size(v));
    const char *key;
    json_t *val;
    char *raw = NULL;
    size_t rawcap = 0;
    json_object_foreach(v, key, val) {
        json_int_t id = json_integer_value(val);
        if (!json_is_integer(val) || id < 0 || id >= (1 << 26)) {
            free(raw);
            tok_fail(err, errlen, "vocabulary entry '%s': id is not an integer in [0, 2^26)", key);
            return -1;
        }
        if (id < b->pcap && b->piece[id]) {
            free(raw);
            tok_fail(err, errlen, "vocabulary entry '%s': id %lld is already taken by another entry", key,
                     (long long)id);
            return -1;
        }
        size_t len = strlen(key), n;
        if (len + 1 > rawcap) { rawcap = len + 64; raw = xrealloc(raw, rawcap); }
        if (b->spm) {
            if (!tok_map_put(&b->vocab, key, len, (int32_t)id)) {
                free(raw);
                tok_fail(err, errlen, "vocabulary entry '%s' appears twice", key);
                return -1;
            }
            set_piece(b, (int32_t)id, key, len);
        } else if (unmap(key, len, raw, &n) == 0) {
            tok_map_put(&b->vocab, raw, n, (int32_t)id);
            set_piece(b, (int32_t)id, raw, n);
        } else {
            set_piece(b, (int32_t)id, key, len);
        }
    }
    free(raw);
    return 0;
}

/* Id of a symbol in its mapped spelling; -1 when unknown. */
static int32_t sym_id(const bpe *b, const char *s, size_t len, char *raw) {
    size_t n;
    if (b->spm) return tok_map_get(&b->vocab, s, len);
    if (unmap(s, len, raw, &n)) return -1;
    return tok_map_get(&b->vocab, raw, n);
}

/* One merge "a b" of rank r: a, b and a+b must all be in the vocabulary. */
static int add_merge(bpe *b, const char *a, size_t al, const char *c, size_t cl, int32_t rank,
                     const char *where, char *err, size_t errlen) {
    char *buf = xmalloc(2 * (al + cl) + 2), *cat = buf + al + cl + 1;
    int32_t ia = sym_id(b, a, al, buf), ic = sym_id(b, c, cl, buf);
    memcpy(cat, a, al);
    memcpy(cat + al, c, cl);
    int32_t im = sym_id(b, cat, al + cl, buf);
    free(buf);
    if (ia < 0 || ic < 0 || im < 0) {
        const char *bad = ia < 0 ? a : ic < 0 ? c : NULL;
        int bl = (int)(ia < 0 ? al : cl);
        if (bad) tok_fail(err, errlen, "%s: symbol '%.*s' is not in the vocabulary", where, bl, bad);
        else tok_fail(err, errlen, "%s: merged token '%.*s%.*s' is not in the vocabulary", where,
                      (int)al, a, (int)cl, c);
        return -1;
    }
    pair_put(&b->pairs, ia, ic, rank, im);
    return 0;
}

/* "a b" (older files, merges.txt) — exactly one space separates the two symbols. */
static int add_merge_line(bpe *b, const char *line, size_t len, int32_t rank, const char *where,
                          char *err, size_t errlen) {
    const char *sp = memchr(line, ' ', len);
    if (!sp || sp == line || sp + 1 == line + len || memchr(sp + 1, ' ', (size_t)(line + len - sp - 1))) {
        tok_fail(err, errlen, "%s: expected two symbols separated by one space, got '%.*s'", where,
                 (int)(len > 60 ? 60 : len), line);
        return -1;
    }
    return add_merge(b, line, (size_t)(sp - line), sp + 1, (size_t)(line + len - sp - 1), rank, where,
                     err, errlen);
}

static int load_merges_json(bpe *b, json_t *m, char *err, size_t errlen) {
    if (!m || json_is_null(m)) m = NULL;
    else if (!json_is_array(m)) { tok_fail(err, errlen, "model.merges is not an array"); return -1; }
    pair_init(&b->pairs, m ? json_array_size(m) : 0);
    size_t i;
    json_t *x;
    json_array_foreach(m, i, x) {
        char where[48];
        snprintf(where, sizeof where, "merges[%zu]", i);
        int rc;
        if (json_is_string(x)) {
            rc = add_merge_line(b, json_string_value(x), json_string_length(x), (int32_t)i, where, err, errlen);
        } else if (json_is_array(x) && json_array_size(x) == 2 && json_is_string(json_array_get(x, 0)) &&
                   json_is_string(json_array_get(x, 1))) {
            json_t *a = json_array_get(x, 0), *c = json_array_get(x, 1);
            rc = add_merge(b, json_string_value(a), json_string_length(a), json_string_value(c),
                           json_string_length(c), (int32_t)i, where, err, errlen);
        } else {
            tok_fail(err, errlen, "%s: neither \"a b\" nor [\"a\", \"b\"]", where);
            rc = -1;
        }
        if (rc) return -1;
    }
    return 0;
}

static int load_merges_txt(bpe *b, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) { tok_fail(err, errlen, "%s: cannot open", path); return -1; }
    cli_input_note(path);
    pair_init(&b->pairs, 1 << 16);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    int32_t rank = 0;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if (n == 0 || (lineno == 1 && strncmp(line, "#version", 8) == 0)) continue;
        char where[64];
        snprintf(where, sizeof where, "merges.txt line %ld", lineno);
        rc = add_merge_line(b, line, (size_t)n, rank++, where, err, errlen);
    }
    free(line);
    fclose(f);
    return rc;
}

static int set_byte_ids(bpe *b, char *err, size_t errlen) {
    for (int c = 0; c < 256; c++) {
        char ch = (char)c;
        b->byte_id[c] = tok_map_get(&b->vocab, &ch, 1);
        /* C0, C1 and F5–FF never occur in valid UTF-8 (NeoX's vocabulary omits them) */
        int needed = !(c == 0xC0 || c == 0xC1 || c >= 0xF5);
        if (b->byte_id[c] < 0 && needed) {
            tok_fail(err, errlen, "the vocabulary lacks the symbol for byte 0x%02X (U+%04X)", c, (unsigned)byte_cp[c]);
            return -1;
        }
    }
    return 0;
}

static int set_family_regex(bpe *b, const char *fam, char *err, size_t errlen) {
    const char *re = RE_GPT2;
    if (fam && !strcmp(fam, "llama")) re = RE_LLAMA3;
    else if (fam && !strcmp(fam, "qwen2")) re = RE_QWEN2;
    else if (fam && !strcmp(fam, "byte")) return 0;
    if (fam && (!strcmp(fam, "qwen2") || !strcmp(fam, "gpt_neox"))) {
        b->c.norm.n = 0;
        b->c.norm.step[b->c.norm.n++] = TN_NFC;
    }
    return set_regex(b, re, strlen(re), 0, err, errlen);
}

static tok *finish(bpe *b, const char *family) {
    for (int i = 0; i < b->c.added.n; i++) {
        const tok_added *a = &b->c.added.v[i];
        set_piece(b, a->id, a->s, a->len);
    }
    tok *t = xcalloc(1, sizeof *t);
    t->ops = &bpe_ops;
    t->impl = b;
    t->vocab = b->npiece;
    tok_set_specials(t, family);
    return t;
}

static tok *fail_path(bpe *b, const char *path, char *err, size_t errlen) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", err ? err : "");
    bpe_destroy(b);
    if (strncmp(msg, path, strlen(path)) == 0) return tok_fail(err, errlen, "%s", msg);
    return tok_fail(err, errlen, "%s: %s", path, msg);
}

/* pre_tokenizer: ByteLevel (use_regex → the GPT-2 regex), or Sequence[Split(regex, Isolated),
 * ByteLevel(use_regex false)]. *re_src gets the regex text (for family detection). */
static int parse_pretok(bpe *b, json_t *p, const char **re_src, int *bytelevel, char *err, size_t errlen) {
    const char *type = json_string_value(json_object_get(p, "type"));
    if (!type) { tok_fail(err, errlen, "pre_tokenizer is missing (only byte-level BPE is supported)"); return -1; }
    if (!strcmp(type, "Sequence")) {
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(p, "pretokenizers"), i, x)
            if (parse_pretok(b, x, re_src, bytelevel, err, errlen)) return -1;
        return 0;
    }
    if (!strcmp(type, "ByteLevel")) {
        json_t *ur = json_object_get(p, "use_regex");
        *bytelevel = 1;
        b->add_prefix_space = json_is_true(json_object_get(p, "add_prefix_space"));
        if (ur && !json_is_true(ur)) return 0;
        *re_src = RE_GPT2;
        return set_regex(b, RE_GPT2, strlen(RE_GPT2), 0, err, errlen);
    }
    if (!strcmp(type, "Split")) {
        json_t *pat = json_object_get(p, "pattern");
        json_t *rx = json_object_get(pat, "Regex"), *lit = json_object_get(pat, "String");
        const char *beh = json_string_value(json_object_get(p, "behavior"));
        if ((!json_is_string(rx) && !json_is_string(lit)) || !beh || strcmp(beh, "Isolated") ||
            json_is_true(json_object_get(p, "invert"))) {
            tok_fail(err, errlen, "pre_tokenizer Split: only a Regex/String pattern with behavior Isolated is supported");
            return -1;
        }
        json_t *s = rx ? rx : lit;
        *re_src = json_string_value(s);
        return set_regex(b, json_string_value(s), json_string_length(s), rx ? 0 : PCRE2_LITERAL, err, errlen);
    }
    tok_fail(err, errlen, "unsupported pre_tokenizer type '%s'", type);
    return -1;
}

static const char *detect_family(const bpe *b, const char *re_src) {
    /* attncoda's tokenizers: the byte one, and those train learns (bpe_merges) with the regex */
    if (!b->re || tok_added_id(&b->c.added, "<|bos|>", 7) >= 0) return "byte";
    if (strstr(re_src, "\\p{N}{1,3}")) return "llama";
    if (strstr(re_src, "\\p{N}|")) return "qwen2";
    return b->c.norm.n == 1 && b->c.norm.step[0] == TN_NFC ? "gpt_neox" : "gpt2";
}

static int nonempty_str(json_t *m, const char *k) {
    const char *s = json_string_value(json_object_get(m, k));
    return s && *s;
}

/* The <0xNN> pieces (HF spells them "<0x%02X>"); -1 where absent. */
static void set_spm_bytes(bpe *b) {
    for (int c = 0; c < 256; c++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", c);
        b->spm_byte[c] = tok_map_get(&b->vocab, name, 6);
    }
}

static int nonempty_str(json_t *m, const char *k);

/* Llama-2 / Mistral / Gemma style tokenizer.json: BPE over characters, no ByteLevel. */
static tok *spm_from_json(bpe *b, json_t *root, const char *path, char *err, size_t errlen) {
    json_t *m = json_object_get(root, "model"), *unk = json_object_get(m, "unk_token");
    json_t *drop = json_object_get(m, "dropout");
    b->spm = 1;
    b->unk = -1;
    if (nonempty_str(m, "continuing_subword_prefix") || nonempty_str(m, "end_of_word_suffix") ||
        (drop && !json_is_null(drop) && json_number_value(drop) != 0)) {
        tok_fail(err, errlen, "BPE: continuing_subword_prefix, end_of_word_suffix and dropout are not supported");
        return fail_path(b, path, err, errlen);
    }
    if (unk && !json_is_null(unk) && !json_is_string(unk)) {
        tok_fail(err, errlen, "model.unk_token is not a string");
        return fail_path(b, path, err, errlen);
    }
    b->ignore_merges = json_is_true(json_object_get(m, "ignore_merges"));
    b->byte_fallback = json_is_true(json_object_get(m, "byte_fallback"));
    b->fuse_unk = json_is_true(json_object_get(m, "fuse_unk"));
    b->strip_first = tok_decoder_strips_first(json_object_get(root, "decoder"));
    if (tok_norm_from_json(&b->c.norm, json_object_get(root, "normalizer"), err, errlen) ||
        load_vocab(b, json_object_get(m, "vocab"), err, errlen) ||
        load_merges_json(b, json_object_get(m, "merges"), err, errlen) ||
        tok_added_from_json(&b->c.added, json_object_get(root, "added_tokens"), err, errlen))
        return fail_path(b, path, err, errlen);
    if (json_is_string(unk) && (b->unk = tok_map_get(&b->vocab, json_string_value(unk), json_string_length(unk))) < 0) {
        tok_fail(err, errlen, "model.unk_token '%.40s' is not in the vocabulary", json_string_value(unk));
        return fail_path(b, path, err, errlen);
    }
    set_spm_bytes(b);
    return finish(b, "spm");
}

static int is_split_after(json_t *p) {
    json_t *lit = json_object_get(json_object_get(p, "pattern"), "String");
    const char *type = json_string_value(json_object_get(p, "type"));
    const char *beh = json_string_value(json_object_get(p, "behavior"));
    return type && !strcmp(type, "Split") && json_is_string(lit) && json_string_length(lit) > 0 && beh &&
           !strcmp(beh, "MergedWithPrevious") && !json_is_true(json_object_get(p, "invert"));
}

tok *tok_bpe_from_json(json_t *root, const char *path, const char *family, char *err, size_t errlen) {
    bpe *b = bpe_new();
    json_t *m = json_object_get(root, "model"), *pt = json_object_get(root, "pre_tokenizer");
    const char *re_src = "";
    int bytelevel = 0, ms = tok_metaspace_from_json(&b->ms, pt, err, errlen);
    if (ms < 0) return fail_path(b, path, err, errlen);
    if (ms == 1 || !pt || json_is_null(pt)) return spm_from_json(b, root, path, err, errlen);
    if (is_split_after(pt)) {        /* Gemma: Split(" ", MergedWithPrevious) */
        json_t *lit = json_object_get(json_object_get(pt, "pattern"), "String");
        b->split_len = json_string_length(lit);
        b->split_after = xmalloc(b->split_len + 1);
        memcpy(b->split_after, json_string_value(lit), b->split_len + 1);
        return spm_from_json(b, root, path, err, errlen);
    }
    if (parse_pretok(b, pt, &re_src, &bytelevel, err, errlen) ||
        tok_norm_from_json(&b->c.norm, json_object_get(root, "normalizer"), err, errlen))
        return fail_path(b, path, err, errlen);
    if (!bytelevel || nonempty_str(m, "continuing_subword_prefix") || nonempty_str(m, "end_of_word_suffix") ||
        json_is_true(json_object_get(m, "byte_fallback"))) {
        tok_fail(err, errlen, "BPE: only byte-level (ByteLevel pre-tokenizer, no subword prefix/suffix, "
                 "no byte_fallback) or SentencePiece-style (Metaspace or no pre-tokenizer) is supported");
        return fail_path(b, path, err, errlen);
    }
    b->ignore_merges = json_is_true(json_object_get(m, "ignore_merges"));
    if (load_vocab(b, json_object_get(m, "vocab"), err, errlen) ||
        load_merges_json(b, json_object_get(m, "merges"), err, errlen) ||
        set_byte_ids(b, err, errlen) ||
        tok_added_from_json(&b->c.added, json_object_get(root, "added_tokens"), err, errlen))
        return fail_path(b, path, err, errlen);
    /* the file's own pre-tokenizer says which family it is; a caller's family (e.g. the model's
     * config.json model_type: "gpt2" for a model trained with the byte tokenizer) must not
     * override that, or the byte tokenizer's <|bos|> would be lost */
    (void)family;
    return finish(b, detect_family(b, re_src));
}

/* tokenizer_config.json's "added_tokens_decoder" {"151643": {"content": …, "special": …}, …}. */
static int added_from_config(bpe *b, const char *vocab_path) {
    const char *slash = strrchr(vocab_path, '/');
    size_t d = slash ? (size_t)(slash - vocab_path + 1) : 0;
    char *p = xmalloc(d + 32);
    memcpy(p, vocab_path, d);
    strcpy(p + d, "tokenizer_config.json");
    json_t *j = json_load_file(p, 0, NULL);
    free(p);
    json_t *dec = json_object_get(j, "added_tokens_decoder");
    const char *k;
    json_t *o;
    int n = 0;
    json_object_foreach(dec, k, o) {
        json_t *c = json_object_get(o, "content");
        long id = strtol(k, NULL, 10);
        if (!json_is_string(c) || id < 0) continue;
        tok_added_add(&b->c.added, json_string_value(c), json_string_length(c), (int32_t)id,
                      json_is_true(json_object_get(o, "special")), json_is_true(json_object_get(o, "lstrip")),
                      json_is_true(json_object_get(o, "rstrip")), json_is_true(json_object_get(o, "single_word")));
        n++;
    }
    json_decref(j);
    return n;
}

/* The *_token entries of tokenizer_config.json and special_tokens_map.json (a string or an
 * {"content": …} object) that are vocabulary entries: transformers makes them special added
 * tokens (OPT's </s> and <pad>, RoBERTa's <s> </s> <unk> <pad> <mask>). Returns how many. */
static int added_from_token_keys(bpe *b, const char *vocab_path) {
    static const char *const files[] = {"tokenizer_config.json", "special_tokens_map.json"};
    static const char *const keys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                       "pad_token", "cls_token", "mask_token"};
    const char *slash = strrchr(vocab_path, '/');
    size_t d = slash ? (size_t)(slash - vocab_path + 1) : 0;
    int n = 0;
    for (size_t f = 0; f < 2; f++) {
        char *p = xmalloc(d + 32);
        memcpy(p, vocab_path, d);
        strcpy(p + d, files[f]);
        json_t *j = json_load_file(p, 0, NULL);
        free(p);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            json_t *v = json_object_get(j, keys[k]);
            if (json_is_object(v)) v = json_object_get(v, "content");
            if (!json_is_string(v)) continue;
            int32_t id = tok_map_get(&b->vocab, json_string_value(v), json_string_length(v));
            if (id < 0 || tok_added_id(&b->c.added, json_string_value(v), json_string_length(v)) >= 0) continue;
            tok_added_add(&b->c.added, json_string_value(v), json_string_length(v), id, 1, 0, 0, 0);
            n++;
        }
        json_decref(j);
    }
    return n;
}

static void add_llama3_specials(bpe *b);

tok *tok_bpe_from_files(const char *vocab_json, const char *merges_txt, const char *family,
                        char *err, size_t errlen) {
    json_t *v = tok_json_load(vocab_json, err, errlen);
    if (!v) return NULL;
    bpe *b = bpe_new();
    int rc = load_vocab(b, v, err, errlen);
    json_decref(v);
    if (rc) return fail_path(b, vocab_json, err, errlen);
    /* Without a config, the vocabulary says which: Qwen2's has ~151k entries and no <|endoftext|>. */
    const char *eot = "<|endoftext|>";
    int has_eot = tok_map_get(&b->vocab, eot, strlen(eot)) >= 0;
    const char *fam = family ? family : (b->vocab.n >= 150000 && !has_eot) ? "qwen2" : "gpt2";
    if (set_family_regex(b, fam, err, errlen)) return fail_path(b, vocab_json, err, errlen);
    if (load_merges_txt(b, merges_txt, err, errlen)) return fail_path(b, merges_txt, err, errlen);
    if (set_byte_ids(b, err, errlen)) return fail_path(b, vocab_json, err, errlen);
    if (!added_from_config(b, vocab_json) && !added_from_token_keys(b, vocab_json)) {
        if (has_eot) tok_added_add(&b->c.added, eot, strlen(eot), tok_map_get(&b->vocab, eot, strlen(eot)), 1, 0, 0, 0);
        if (!strcmp(fam, "qwen2") && !has_eot) {   /* Qwen2's specials live outside vocab.json */
            static const char *const q[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
            for (int i = 0; i < 3; i++)
                tok_added_add(&b->c.added, q[i], strlen(q[i]), b->npiece + i, 1, 0, 0, 0);
        }
        if (!strcmp(fam, "llama")) add_llama3_specials(b);
    }
    b->ignore_merges = !strcmp(fam, "llama");    /* byte-level Llama is Llama-3 */
    return finish(b, fam);
}

/* ---------------------------------------------------------------- tiktoken (Llama-3) */

/* Meta's Llama-3 special tokens, ids from 128000 on (tokenizer.py of Meta-Llama-3). */
static void add_llama3_specials(bpe *b) {
    int32_t base = b->npiece;
    static const char *const first[] = {
        "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
        "<|reserved_special_token_1|>", "<|reserved_special_token_2|>", "<|reserved_special_token_3|>",
        "<|start_header_id|>", "<|end_header_id|>", "<|reserved_special_token_4|>", "<|eot_id|>"};
    for (int i = 0; i < 10; i++) tok_added_add(&b->c.added, first[i], strlen(first[i]), base + i, 1, 0, 0, 0);
    for (int i = 5; i < 251; i++) {
        char s[48];
        int n = snprintf(s, sizeof s, "<|reserved_special_token_%d|>", i);
        tok_added_add(&b->c.added, s, (size_t)n, base + 10 + (i - 5), 1, 0, 0, 0);
    }
}

static int tiktoken_line(bpe *b, char *line, size_t n, long lineno, char *err, size_t errlen) {
    char *sp = memchr(line, ' ', n);
    char *end;
    if (!sp) goto bad;
    line[n] = 0;
    long rank = strtol(sp + 1, &end, 10);
    if (end == sp + 1 || *end || rank < 0 || rank >= (1 << 24)) goto bad;
    struct base64_decode_ctx ctx;
    size_t blen = (size_t)(sp - line), dlen = BASE64_DECODE_LENGTH(blen);
    uint8_t *dst = xmalloc(dlen + 1);
    base64_decode_init(&ctx);
    int ok = base64_decode_update(&ctx, &dlen, dst, blen, line) && base64_decode_final(&ctx) && dlen > 0;
    if (ok && !tok_map_put(&b->vocab, (char *)dst, dlen, (int32_t)rank)) {
        free(dst);
        tok_fail(err, errlen, "line %ld: duplicate token", lineno);
        return -1;
    }
    if (ok) set_piece(b, (int32_t)rank, (char *)dst, dlen);
    free(dst);
    if (ok) return 0;
bad:
    tok_fail(err, errlen, "line %ld: expected 'base64-token rank'", lineno);
    return -1;
}

/* tiktoken merges the adjacent pair whose concatenation has the lowest rank; the equivalent
 * pair table holds every split (a, b) of every token t with a and b tokens, ranked by t. */
static void tiktoken_pairs(bpe *b) {
    pair_init(&b->pairs, b->vocab.n * 4);
    for (size_t e = 0; e < b->vocab.cap; e++) {
        const tok_map_ent *t = &b->vocab.e[e];
        if (!t->key || t->len < 2) continue;
        for (uint32_t k = 1; k < t->len; k++) {
            int32_t a = tok_map_get(&b->vocab, t->key, k);
            if (a < 0) continue;
            int32_t c = tok_map_get(&b->vocab, t->key + k, t->len - k);
            if (c >= 0) pair_put(&b->pairs, a, c, t->val, t->val);
        }
    }
}

tok *tok_bpe_from_tiktoken(const char *path, const char *family, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) return tok_fail(err, errlen, "%s: cannot open", path);
    cli_input_note(path);
    bpe *b = bpe_new();
    tok_map_init(&b->vocab, 1 << 17);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if (n > 0) rc = tiktoken_line(b, line, (size_t)n, lineno, err, errlen);
    }
    free(line);
    fclose(f);
    if (rc == 0 && b->vocab.n == 0) { tok_fail(err, errlen, "no tokens (not a tiktoken file)"); rc = -1; }
    const char *fam = family ? family : "llama";
    if (rc || set_byte_ids(b, err, errlen) || set_family_regex(b, fam, err, errlen))
        return fail_path(b, path, err, errlen);
    tiktoken_pairs(b);
    b->ignore_merges = 1;               /* tiktoken: a pre-token that is a token is emitted whole */
    if (!strcmp(fam, "llama")) add_llama3_specials(b);
    return finish(b, fam);
}

/* ---------------------------------------------------------------- from a SentencePiece model */

typedef struct { float score; int32_t piece, l, r; } spm_merge;

/* transformers' SentencePieceExtractor order: by the merged piece's score (highest first), then
 * the piece's id, then the ids of the left and right parts. */
static int merge_cmp(const void *pa, const void *pb) {
    const spm_merge *a = pa, *c = pb;
    if (a->score != c->score) return a->score > c->score ? -1 : 1;
    if (a->piece != c->piece) return a->piece < c->piece ? -1 : 1;
    if (a->l != c->l) return a->l < c->l ? -1 : 1;
    return (a->r > c->r) - (a->r < c->r);
}

/* Every split of every piece at a character boundary into two pieces is a merge, except into
 * the pieces SentencePiece never produces from text (tok_spm_reserved). */
static void spm_derive_merges(bpe *b, const tok_spm_pieces *p) {
    spm_merge *v = NULL;
    size_t n = 0, cap = 0;
    for (int id = 0; id < p->n; id++) {
        if (tok_spm_reserved(p->type[id])) continue;
        const char *s = p->piece[id];
        for (uint32_t k = 1; k < p->len[id]; k++) {
            if (((unsigned char)s[k] & 0xC0) == 0x80) continue;
            int32_t l = tok_map_get(&b->vocab, s, k), r = tok_map_get(&b->vocab, s + k, p->len[id] - k);
            if (l < 0 || r < 0) continue;
            if (n == cap) v = xrealloc(v, (cap = cap ? 2 * cap : 4096) * sizeof *v);
            v[n++] = (spm_merge){p->score[id], id, l, r};
        }
    }
    if (n) qsort(v, n, sizeof *v, merge_cmp);
    pair_init(&b->pairs, n);
    for (size_t i = 0; i < n; i++) pair_put(&b->pairs, v[i].l, v[i].r, (int32_t)i, v[i].piece);
    free(v);
}

/* SentencePiece piece types: 2 unknown, 3 control, 4 user defined, 6 byte. As in SentencePiece,
 * only the user-defined pieces are matched in the text; <s>, </s>, <unk> typed there are text. */
tok *tok_bpe_from_spm(const tok_spm_pieces *p, const char *path, char *err, size_t errlen) {
    bpe *b = bpe_new();
    b->spm = 1;
    b->fuse_unk = 1;
    b->byte_fallback = p->byte_fallback;
    b->strip_first = p->add_dummy_prefix;
    tok_map_init(&b->vocab, (size_t)p->n);
    for (int id = 0; id < p->n; id++) {
        /* a later duplicate wins the lookup, as in the converter's dict */
        int32_t old = tok_map_get(&b->vocab, p->piece[id], p->len[id]);
        if (old >= 0) {
            tok_fail(err, errlen, "piece %d '%.40s' repeats piece %d", id, p->piece[id], old);
            return fail_path(b, path, err, errlen);
        }
        tok_map_put(&b->vocab, p->piece[id], p->len[id], id);
        set_piece(b, id, p->piece[id], p->len[id]);
        if (p->type[id] == TOK_SPM_USER_DEFINED) tok_added_add(&b->c.added, p->piece[id], p->len[id], id, 0, 0, 0, 0);
    }
    b->unk = p->unk;
    spm_derive_merges(b, p);
    set_spm_bytes(b);
    /* the converter's normaliser: the dummy prefix, then spaces as "▁" */
    tok_norm *nm = &b->c.norm;
    memset(nm, 0, sizeof *nm);
    if (p->add_dummy_prefix) {
        nm->step[nm->n] = TN_PREPEND;
        nm->a[nm->n] = xstrdup("\xe2\x96\x81");
        nm->alen[nm->n++] = 3;
    }
    nm->step[nm->n] = TN_REPLACE;
    nm->a[nm->n] = xstrdup(" ");
    nm->alen[nm->n] = 1;
    nm->b[nm->n] = xstrdup("\xe2\x96\x81");
    nm->blen[nm->n++] = 3;
    tok *t = finish(b, "spm");
    t->vocab = p->n;
    t->bos = p->bos >= 0 && p->bos < p->n ? p->bos : -1;
    t->eos = p->eos >= 0 && p->eos < p->n ? p->eos : -1;
    t->pad = p->pad >= 0 && p->pad < p->n ? p->pad : -1;
    return t;
}

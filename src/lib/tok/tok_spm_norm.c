/* tok_spm_norm: SentencePiece's precompiled_charsmap normaliser (HF's "Precompiled"), which T5,
 * XLM-R and other Unigram models carry instead of a named Unicode normal form.
 *
 * The charsmap is: a little-endian uint32 trie size in bytes, the trie (a Darts-clone double
 * array of uint32 units keyed by UTF-8 bytes, values are offsets into the string pool), then the
 * pool of NUL-terminated replacement strings. HF applies it per extended grapheme cluster: a
 * cluster shorter than 6 bytes whose bytes start with a key is replaced whole by that key's
 * string (the shortest matching key, as HF takes the first prefix hit); otherwise each character
 * is looked up alone. Clusters come from utf8proc's UAX #29 rules. */
#include "tok_spm_norm.h"
#include "tok_base.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

struct tok_precompiled {
    uint32_t *unit;
    size_t nunit;
    char *pool;
    size_t npool;
};

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

tok_precompiled *tok_precompiled_parse(const unsigned char *d, size_t n, char *err, size_t errlen) {
    if (n < 4) return tok_fail(err, errlen, "precompiled_charsmap: shorter than its 4-byte header");
    uint32_t size = le32(d);
    if (size % 4 || size > n - 4 || size < 4)
        return tok_fail(err, errlen, "precompiled_charsmap: trie size %u is not a multiple of 4 within the %zu bytes",
                        size, n - 4);
    tok_precompiled *pc = xcalloc(1, sizeof *pc);
    pc->nunit = size / 4;
    pc->unit = xmalloc(pc->nunit * sizeof *pc->unit);
    for (size_t i = 0; i < pc->nunit; i++) pc->unit[i] = le32(d + 4 + 4 * i);
    pc->npool = n - 4 - size;
    pc->pool = xmalloc(pc->npool + 1);
    memcpy(pc->pool, d + 4 + size, pc->npool);
    pc->pool[pc->npool] = 0;
    if (tok_utf8_check(pc->pool, pc->npool) != pc->npool) {
        tok_precompiled_free(pc);
        return tok_fail(err, errlen, "precompiled_charsmap: the replacement strings are not UTF-8");
    }
    return pc;
}

void tok_precompiled_free(tok_precompiled *pc) {
    if (!pc) return;
    free(pc->unit);
    free(pc->pool);
    free(pc);
}

/* Darts-clone unit fields. */
static uint32_t u_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
static uint32_t u_label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
static int u_has_leaf(uint32_t u) { return (u >> 8) & 1; }
static uint32_t u_value(uint32_t u) { return u & ((1u << 31) - 1); }

/* The replacement of the shortest key that is a prefix of s[0..n); NULL when none. A trie that
 * points outside itself or its pool, or into the middle of a character (the pool is UTF-8 as a
 * whole, so a string from a character's start to its NUL is UTF-8 too), just fails to match. */
static const char *lookup(const tok_precompiled *pc, const char *s, size_t n, size_t *outlen) {
    size_t pos = 0;
    if (pc->nunit == 0) return NULL;
    pos ^= u_offset(pc->unit[0]);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0) return NULL;
        pos ^= c;
        if (pos >= pc->nunit) return NULL;
        uint32_t u = pc->unit[pos];
        if (u_label(u) != c) return NULL;
        pos ^= u_offset(u);
        if (pos >= pc->nunit) return NULL;
        if (u_has_leaf(u)) {
            size_t at = u_value(pc->unit[pos]);
            if (at >= pc->npool || ((unsigned char)pc->pool[at] & 0xC0) == 0x80) return NULL;
            *outlen = strlen(pc->pool + at);
            return pc->pool + at;
        }
    }
    return NULL;
}

typedef struct { char *s; size_t n, cap; } buf;
static void put(buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) { b->cap = 2 * b->cap + n + 1; b->s = xrealloc(b->s, b->cap); }
    memcpy(b->s + b->n, s, n);
    b->n += n;
}

static size_t cp_at(const char *s, size_t len, size_t i, int32_t *c) { return tok_utf8_next(s, len, i, c) - i; }

static void one_cluster(const tok_precompiled *pc, const char *g, size_t n, buf *out) {
    size_t rl;
    const char *r;
    if (n < 6 && (r = lookup(pc, g, n, &rl))) { put(out, r, rl); return; }
    for (size_t i = 0; i < n;) {
        int32_t c;
        size_t k = cp_at(g, n, i, &c);
        if ((r = lookup(pc, g + i, k, &rl))) put(out, r, rl);
        else put(out, g + i, k);
        i += k;
    }
}

char *tok_precompiled_apply(const tok_precompiled *pc, const char *s, size_t len, size_t *outlen) {
    buf out = {xmalloc(len + 16), 0, len + 16};
    utf8proc_int32_t state = 0, prev = -1;
    size_t start = 0;
    for (size_t i = 0; i < len;) {
        int32_t c;
        size_t k = cp_at(s, len, i, &c);
        if (prev >= 0 && utf8proc_grapheme_break_stateful(prev, c, &state)) {
            one_cluster(pc, s + start, i - start, &out);
            start = i;
        }
        prev = c;
        i += k;
    }
    if (len > start) one_cluster(pc, s + start, len - start, &out);
    out.s[out.n] = 0;
    *outlen = out.n;
    return out.s;
}

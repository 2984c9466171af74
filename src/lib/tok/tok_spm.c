/* tok_spm: SentencePiece-style BPE as llama2.c's encode() does it, from a GGUF vocabulary
 * (tokenizer.ggml.tokens/scores/token_type) or a llama2.c tok*.bin file. Text gets a leading
 * space (SentencePiece's dummy prefix), is cut into UTF-8 characters (unknown characters fall
 * back to <0xNN> byte tokens), then the adjacent pair whose concatenation is the vocabulary piece
 * with the highest score is merged, leftmost first on ties, until no pair merges. A heap keeps
 * that O(n log n) while choosing exactly the pairs llama2.c's quadratic scan chooses.
 * Pieces are stored with spaces: GGUF's U+2581 "▁" is turned into ' ' at load, as llama2.c's
 * exporter does for tok*.bin. */
#include "core/util.h"
#include "tok_impl.h"
#include "io/gguf.h"
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* SentencePiece token types (GGUF tokenizer.ggml.token_type). */
enum { SPM_NORMAL = 1, SPM_UNKNOWN = 2, SPM_CONTROL = 3, SPM_USER = 4, SPM_UNUSED = 5, SPM_BYTE = 6 };

typedef struct {
    int n;
    char **piece;           /* NUL-terminated, spaces not ▁ */
    uint32_t *len;
    float *score;
    uint8_t *type;
    int byte_id[256];       /* <0xNN> token for each byte, -1 when absent */
    int unk;
    int add_space_prefix;
    int32_t *slot;          /* open-addressing hash of pieces → id (-1 empty) */
    size_t cap;
} spm;

/* ---- piece → id hash (FNV-1a, linear probing); the first id of a duplicate piece wins ---- */
static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static int spm_lookup(const spm *s, const char *str, size_t n)
{
    for (size_t i = fnv(str, n) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        int32_t id = s->slot[i];
        if (id < 0)
            return -1;
        if (s->len[id] == n && memcmp(s->piece[id], str, n) == 0)
            return id;
    }
}

/* Pieces that text can produce: not control/unknown/unused tokens and not <0xNN> bytes
 * (those enter only through byte fallback). */
static void spm_index(spm *s)
{
    s->cap = 16;
    while (s->cap < (size_t)s->n * 2 + 2)
        s->cap *= 2;
    s->slot = malloc(s->cap * sizeof *s->slot);
    memset(s->slot, 0xff, s->cap * sizeof *s->slot);
    for (int id = 0; id < s->n; id++) {
        if (s->type[id] == SPM_CONTROL || s->type[id] == SPM_UNKNOWN ||
            s->type[id] == SPM_UNUSED || s->type[id] == SPM_BYTE)
            continue;
        if (spm_lookup(s, s->piece[id], s->len[id]) >= 0)
            continue;
        size_t i = fnv(s->piece[id], s->len[id]) & (s->cap - 1);
        while (s->slot[i] >= 0)
            i = (i + 1) & (s->cap - 1);
        s->slot[i] = id;
    }
}

/* "<0xNN>" → NN, else -1. */
static int byte_piece(const char *p, size_t n)
{
    unsigned v;
    char tail;
    if (n != 6 || sscanf(p, "<0x%2X%c", &v, &tail) != 2 || tail != '>')
        return -1;
    return (int)v;
}

static void spm_alloc(spm *s, int n)
{
    s->n = n;
    s->piece = calloc(n, sizeof *s->piece);
    s->len = calloc(n, sizeof *s->len);
    s->score = calloc(n, sizeof *s->score);
    s->type = calloc(n, sizeof *s->type);
    s->unk = -1;
    s->add_space_prefix = 1;
}

/* Copy of raw piece bytes with every U+2581 "▁" (E2 96 81) turned into a space. */
static char *spm_unescape(const char *p, size_t n, uint32_t *outlen)
{
    char *d = malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 2 < n && (uint8_t)p[i] == 0xE2 && (uint8_t)p[i + 1] == 0x96 &&
            (uint8_t)p[i + 2] == 0x81) {
            d[k++] = ' ';
            i += 2;
        } else {
            d[k++] = p[i];
        }
    }
    d[k] = 0;
    *outlen = (uint32_t)k;
    return d;
}

static void spm_set_piece(spm *s, int id, const char *p, size_t n)
{
    s->piece[id] = spm_unescape(p, n, &s->len[id]);
}

/* Byte tokens, found by name; also marks them SPM_BYTE when the file has no types. */
static void spm_finish(spm *s)
{
    for (int b = 0; b < 256; b++)
        s->byte_id[b] = -1;
    for (int id = 0; id < s->n; id++) {
        int b = byte_piece(s->piece[id], s->len[id]);
        if (b >= 0 && (s->type[id] == SPM_BYTE || s->type[id] == SPM_NORMAL) &&
            s->byte_id[b] < 0) {
            s->byte_id[b] = id;
            s->type[id] = SPM_BYTE;
        }
        if (s->unk < 0 && s->type[id] == SPM_UNKNOWN)
            s->unk = id;
    }
    spm_index(s);
}

/* ---- encoding ---- */
typedef struct { float score; int left, right, id_l, id_r, merged; } cand;
typedef struct { cand *v; int n, cap; } heap;

static int cand_before(const cand *a, const cand *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(heap *h, cand c)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 64;
        h->v = realloc(h->v, h->cap * sizeof *h->v);
    }
    int i = h->n++;
    while (i > 0 && cand_before(&c, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = c;
}

static cand heap_pop(heap *h)
{
    cand top = h->v[0], last = h->v[--h->n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && cand_before(&h->v[c + 1], &h->v[c]))
            c++;
        if (!cand_before(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    h->v[i] = last;
    return top;
}

typedef struct {
    int *id, *prev, *next;
    char *buf;              /* concatenation scratch */
    size_t bufcap;
} symbols;

/* Push the pair (l, r) when its concatenation is a piece; llama2.c ignores scores ≤ -1e10. */
static void try_pair(const spm *s, symbols *sy, heap *h, int l, int r)
{
    if (l < 0 || r < 0)
        return;
    size_t a = s->len[sy->id[l]], b = s->len[sy->id[r]];
    if (a + b + 1 > sy->bufcap) {         /* + 1: two empty pieces still need a buffer */
        sy->bufcap = 2 * (a + b + 1);
        sy->buf = realloc(sy->buf, sy->bufcap);
    }
    memcpy(sy->buf, s->piece[sy->id[l]], a);
    memcpy(sy->buf + a, s->piece[sy->id[r]], b);
    int m = spm_lookup(s, sy->buf, a + b);
    if (m >= 0 && s->score[m] > -1e10f)
        heap_push(h, (cand){s->score[m], l, r, sy->id[l], sy->id[r], m});
}

/* Length of the UTF-8 character at p as llama2.c groups it: a byte plus up to three
 * continuation bytes (10xxxxxx). */
static size_t char_len(const unsigned char *p, size_t left)
{
    size_t n = 1;
    while (n < left && n < 4 && (p[n] & 0xC0) == 0x80)
        n++;
    return n;
}

/* Initial symbols: one per character, or its bytes' <0xNN> tokens (unk when even those lack). */
static int split_chars(const spm *s, const char *text, size_t len, int *id)
{
    int n = 0;
    for (size_t i = 0; i < len;) {
        size_t cl = char_len((const unsigned char *)text + i, len - i);
        int t = spm_lookup(s, text + i, cl);
        if (t >= 0) {
            id[n++] = t;
        } else {
            for (size_t k = 0; k < cl; k++) {
                int b = s->byte_id[(uint8_t)text[i + k]];
                id[n++] = b >= 0 ? b : (s->unk >= 0 ? s->unk : 0);
            }
        }
        i += cl;
    }
    return n;
}

/* 1 when text is valid UTF-8 (utf8proc's definition: no overlongs, surrogates or code points
 * above U+10FFFF), as every other tokenizer requires. */
static int valid_utf8(const char *text, size_t len)
{
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)(len - i), &c);
        if (n <= 0)
            return 0;
        i += (size_t)n;
    }
    return 1;
}

/* -1 (nothing allocated) on invalid UTF-8: llama2.c's encode() would turn the stray bytes into
 * <0xNN> pieces, but tok_encode's contract (and the Hugging Face tokenizers) refuse such text. */
static int spm_encode(const tok *t, const char *text, size_t len, int32_t **ids)
{
    const spm *s = t->impl;
    if (!valid_utf8(text, len)) {
        *ids = NULL;
        return -1;
    }
    if (len == 0) {
        *ids = malloc(sizeof **ids);
        return 0;
    }
    /* Dummy prefix: SentencePiece prepends "▁" to the text; here pieces use ' '. */
    char *src = malloc(len + 1);
    size_t n0 = 0;
    if (s->add_space_prefix)
        src[n0++] = ' ';
    memcpy(src + n0, text, len);
    n0 += len;
    symbols sy = {malloc(n0 * sizeof(int)), malloc(n0 * sizeof(int)), malloc(n0 * sizeof(int)),
                  NULL, 0};
    int n = split_chars(s, src, n0, sy.id);
    free(src);
    heap h = {0};
    for (int i = 0; i < n; i++) {
        sy.prev[i] = i - 1;
        sy.next[i] = i + 1 < n ? i + 1 : -1;
    }
    for (int i = 0; i + 1 < n; i++)
        try_pair(s, &sy, &h, i, i + 1);
    while (h.n) {
        cand c = heap_pop(&h);
        /* Stale when either side has merged since the candidate was pushed. */
        if (sy.id[c.left] != c.id_l || sy.id[c.right] != c.id_r || sy.next[c.left] != c.right)
            continue;
        sy.id[c.left] = c.merged;
        sy.id[c.right] = -1;
        sy.next[c.left] = sy.next[c.right];
        if (sy.next[c.left] >= 0)
            sy.prev[sy.next[c.left]] = c.left;
        try_pair(s, &sy, &h, sy.prev[c.left], c.left);
        try_pair(s, &sy, &h, c.left, sy.next[c.left]);
    }
    int32_t *out = malloc((n ? n : 1) * sizeof *out);
    int k = 0;
    for (int i = 0; i >= 0 && n; i = sy.next[i])
        out[k++] = sy.id[i];
    free(sy.id);
    free(sy.prev);
    free(sy.next);
    free(sy.buf);
    free(h.v);
    *ids = out;
    return k;
}

/* llama2.c's decode(): after BOS a piece's leading space is dropped; <0xNN> is the raw byte.
 * GGUF control tokens decode to nothing (as llama.cpp prints them). */
static int spm_decode_piece(const tok *t, int32_t prev, int32_t id, char *buf, int cap)
{
    const spm *s = t->impl;
    if (id < 0 || id >= s->n || cap <= 0)
        return 0;
    const char *p = s->piece[id];
    size_t n = s->len[id];
    if (s->type[id] == SPM_BYTE) {
        buf[0] = (char)byte_piece(p, n);
        return 1;
    }
    if (s->type[id] == SPM_CONTROL)
        return 0;
    if (prev == t->bos && n && p[0] == ' ')
        p++, n--;
    if (n > (size_t)cap)
        n = (size_t)cap;
    memcpy(buf, p, n);
    return (int)n;
}

/* Exact piece lookup over every token (control ones included); "▁" in the query means space. */
static int spm_id_of(const tok *t, const char *token)
{
    const spm *s = t->impl;
    uint32_t n;
    char *q = spm_unescape(token, strlen(token), &n);
    int found = -1;
    for (int id = 0; id < s->n && found < 0; id++)
        if (s->len[id] == n && memcmp(s->piece[id], q, n) == 0)
            found = id;
    free(q);
    return found;
}

static void spm_destroy(spm *s)
{
    if (s) {
        for (int i = 0; i < s->n; i++)
            free(s->piece[i]);
        free(s->piece);
        free(s->len);
        free(s->score);
        free(s->type);
        free(s->slot);
        free(s);
    }
}

static void spm_free(tok *t)
{
    spm_destroy(t->impl);
    free(t);
}

static const tok_ops SPM_OPS = {spm_encode, spm_decode_piece, spm_id_of, spm_free};

static tok *spm_wrap(spm *s, int bos, int eos, int pad)
{
    spm_finish(s);
    tok *t = calloc(1, sizeof *t);
    t->ops = &SPM_OPS;
    t->impl = s;
    t->vocab = s->n;
    t->bos = bos < s->n ? bos : -1;
    t->eos = eos < s->n ? eos : -1;
    t->pad = pad < s->n ? pad : -1;
    t->cls = t->sep = -1;
    return t;
}


/* ---- llama2.c tok*.bin: int32 max_token_length, then per token float score, int32 len,
 * bytes. The count is not stored: tokens run to the end of the file. ---- */
tok *tok_load_llama2c(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    cli_input_note(path);
    int32_t maxlen;
    spm *s = calloc(1, sizeof *s);
    int cap = 0, n = 0, bad = fread(&maxlen, 4, 1, f) != 1 || maxlen <= 0 || maxlen > 65536;
    char *buf = malloc(bad ? 1 : (size_t)maxlen + 1);
    while (!bad) {
        float score;
        int32_t len;
        size_t got = fread(&score, 1, 4, f);
        if (got == 0 && feof(f))
            break;                                  /* clean end of file */
        if (got != 4 || isnan(score) || fread(&len, 4, 1, f) != 1 || len < 0 || len > maxlen ||
            fread(buf, 1, (size_t)len, f) != (size_t)len) {
            bad = 1;
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            s->piece = realloc(s->piece, cap * sizeof *s->piece);
            s->len = realloc(s->len, cap * sizeof *s->len);
            s->score = realloc(s->score, cap * sizeof *s->score);
            s->type = realloc(s->type, cap * sizeof *s->type);
        }
        s->n = n + 1;
        spm_set_piece(s, n, buf, (size_t)len);
        s->score[n] = score;
        s->type[n] = SPM_NORMAL;
        n++;
    }
    free(buf);
    fclose(f);
    if (bad || n < 3) {
        snprintf(err, errlen, "not a llama2.c tokenizer file (%s)",
                 bad ? "bad header, NaN score, or truncated token record" : "fewer than 3 tokens");
        s->n = n;
        spm_destroy(s);
        cli_err_prefix(err, errlen, path);
        return NULL;
    }
    /* llama2.c's convention: 0 <unk>, 1 BOS, 2 EOS. */
    s->unk = 0;
    s->add_space_prefix = 1;
    s->type[0] = SPM_UNKNOWN;
    s->type[1] = s->type[2] = SPM_CONTROL;
    tok *t = spm_wrap(s, 1, 2, -1);
    /* tok512.bin stores BOS/EOS as "\n<s>\n" / "\n</s>\n" and run.c prints them: keep that. */
    return t;
}

/* ---- GGUF: tokenizer.ggml.model must be "llama" (SentencePiece). ---- */
static int gguf_spm_fill(gguf_file *g, spm *s, char *err, size_t errlen)
{
    const gguf_kv *tk = gguf_find(g, "tokenizer.ggml.tokens");
    if (!tk || tk->type != GGUF_ARRAY || tk->arr_type != GGUF_STRING || tk->n < 3 ||
        tk->n > (1u << 24)) {
        snprintf(err, errlen, "tokenizer.ggml.tokens is missing or not a string array");
        return -1;
    }
    const gguf_kv *sc = gguf_find(g, "tokenizer.ggml.scores");
    const gguf_kv *ty = gguf_find(g, "tokenizer.ggml.token_type");
    if ((sc && (sc->type != GGUF_ARRAY || sc->n != tk->n)) ||
        (ty && (ty->type != GGUF_ARRAY || ty->n != tk->n))) {
        snprintf(err, errlen, "tokenizer.ggml.scores/token_type do not match the token count");
        return -1;
    }
    spm_alloc(s, (int)tk->n);
    for (uint64_t i = 0; i < tk->n; i++) {
        uint64_t len;
        const char *p = gguf_arr_str(tk, i, &len);
        spm_set_piece(s, (int)i, p, len);
        double score = sc ? gguf_arr_num(sc, i) : 0.0;
        if (!isfinite(score) || fabs(score) > FLT_MAX) {
            snprintf(err, errlen, "tokenizer.ggml.scores[%llu] = %g is not a finite float",
                     (unsigned long long)i, score);
            return -1;
        }
        s->score[i] = (float)score;
        int64_t type = SPM_NORMAL;
        char why[96];
        if (ty && gguf_arr_int(ty, i, &type, why, sizeof why) < 0) {
            snprintf(err, errlen, "tokenizer.ggml.token_type[%llu]: %s", (unsigned long long)i, why);
            return -1;
        }
        if (type < SPM_NORMAL || type > SPM_BYTE) {
            snprintf(err, errlen, "tokenizer.ggml.token_type[%llu] = %lld is not a token type (1..6)",
                     (unsigned long long)i, (long long)type);
            return -1;
        }
        s->type[i] = (uint8_t)type;
    }
    const gguf_kv *asp = gguf_find(g, "tokenizer.ggml.add_space_prefix");
    if (asp && asp->type == GGUF_BOOL)
        s->add_space_prefix = asp->data[0] != 0;
    return 0;
}

static int gguf_special(gguf_file *g, const char *key, int def)
{
    int64_t v;
    return gguf_get_i64(g, key, &v) < 0 ? def : (v >= 0 && v < INT32_MAX ? (int)v : -1);
}

tok *tok_load_gguf(const char *path, char *err, size_t errlen)
{
    gguf_file *g = gguf_open(path, err, errlen);
    if (!g) {
        cli_err_prefix(err, errlen, path);
        return NULL;
    }
    uint64_t mlen;
    const char *model = gguf_get_str(g, "tokenizer.ggml.model", &mlen);
    if (!model || mlen != 5 || memcmp(model, "llama", 5)) {
        snprintf(err, errlen, "GGUF tokenizer model '%.*s' is not supported (only 'llama', "
                 "SentencePiece BPE; give --tokenizer a tokenizer.json instead)",
                 model ? (int)(mlen < 64 ? mlen : 64) : 9, model ? model : "(missing)");
        gguf_close(g);
        cli_err_prefix(err, errlen, path);
        return NULL;
    }
    spm *s = calloc(1, sizeof *s);
    if (gguf_spm_fill(g, s, err, errlen) < 0) {
        gguf_close(g);
        spm_destroy(s);
        cli_err_prefix(err, errlen, path);
        return NULL;
    }
    int bos = gguf_special(g, "tokenizer.ggml.bos_token_id", 1);
    int eos = gguf_special(g, "tokenizer.ggml.eos_token_id", 2);
    int pad = gguf_special(g, "tokenizer.ggml.padding_token_id", -1);
    int unk = gguf_special(g, "tokenizer.ggml.unknown_token_id", -1);
    gguf_close(g);
    if (unk >= 0 && unk < s->n)
        s->unk = unk;
    return spm_wrap(s, bos, eos, pad);
}

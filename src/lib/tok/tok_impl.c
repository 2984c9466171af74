/* tok_impl: the helpers the HF-style tokenizers (tok_bpe.c, tok_wordpiece.c, tok_unigram.c)
 * share: whole-file JSON reading, the added-token matcher, the normalizers (via utf8proc), the
 * "added tokens → normalize → model" pipeline, the Metaspace pre-tokenizer, the decoder's
 * leading-space rule and a family's special ids. It calls tok_base.c and tok_spm_norm.c, never
 * the tokenizers: choosing and loading one is tok.c's. */
#include "tok_impl.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <nettle/base64.h>
#include <pcre2.h>

/* ---------------------------------------------------------------- whole files */

/* Read into memory first: jansson's file reader takes one getc per byte, which dominated the
 * loading of multi-megabyte vocabularies. */
json_t *tok_json_load(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return tok_fail(err, errlen, "%s: cannot open", path);
    cli_input_note(path);
    size_t cap = 1 << 20, n = 0, got;
    char *buf = xmalloc(cap);
    while ((got = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += got) == cap) buf = xrealloc(buf, cap *= 2);
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(buf); return tok_fail(err, errlen, "%s: read error", path); }
    json_error_t je;
    json_t *j = json_loadb(buf, n, JSON_DECODE_ANY, &je);
    free(buf);
    if (!j) return tok_fail(err, errlen, "%s: line %d: %s", path, je.line, je.text);
    return j;
}

/* ---------------------------------------------------------------- added tokens */

/* Kept sorted by (first byte, length descending) so the first hit at a position is the longest. */
void tok_added_add(tok_addset *a, const char *s, size_t len, int32_t id, int special,
                   int lstrip, int rstrip, int single_word) {
    if (len == 0) return;
    for (int i = 0; i < a->n; i++)           /* same content twice: the first definition wins */
        if (a->v[i].len == len && memcmp(a->v[i].s, s, len) == 0) return;
    a->v = xrealloc(a->v, (size_t)(a->n + 1) * sizeof *a->v);
    int at = a->n;
    unsigned char f = (unsigned char)s[0];
    while (at > 0) {
        const tok_added *p = &a->v[at - 1];
        unsigned char pf = (unsigned char)p->s[0];
        if (pf < f || (pf == f && p->len >= len)) break;
        at--;
    }
    memmove(&a->v[at + 1], &a->v[at], (size_t)(a->n - at) * sizeof *a->v);
    tok_added *t = &a->v[at];
    t->s = xmalloc(len + 1);
    memcpy(t->s, s, len);
    t->s[len] = 0;
    t->len = len;
    t->id = id;
    t->special = special;
    t->lstrip = lstrip;
    t->rstrip = rstrip;
    t->single_word = single_word;
    a->n++;
    a->has_first[f] = 1;
}

static int json_flag(json_t *o, const char *k) { return json_is_true(json_object_get(o, k)); }

int tok_added_from_json(tok_addset *a, json_t *arr, char *err, size_t errlen) {
    if (!arr || json_is_null(arr)) return 0;
    if (!json_is_array(arr)) { tok_fail(err, errlen, "added_tokens is not an array"); return -1; }
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o) {
        json_t *id = json_object_get(o, "id"), *c = json_object_get(o, "content");
        if (!json_is_integer(id) || !json_is_string(c) || json_integer_value(id) < 0 ||
            json_integer_value(id) > INT32_MAX) {
            tok_fail(err, errlen, "added_tokens[%zu]: needs an integer id and a string content", i);
            return -1;
        }
        tok_added_add(a, json_string_value(c), json_string_length(c), (int32_t)json_integer_value(id),
                      json_flag(o, "special"), json_flag(o, "lstrip"), json_flag(o, "rstrip"),
                      json_flag(o, "single_word"));
    }
    return 0;
}

int32_t tok_added_id(const tok_addset *a, const char *s, size_t len) {
    for (int i = 0; i < a->n; i++)
        if (a->v[i].len == len && memcmp(a->v[i].s, s, len) == 0) return a->v[i].id;
    return -1;
}

const tok_added *tok_added_by_id(const tok_addset *a, int32_t id) {
    for (int i = 0; i < a->n; i++)
        if (a->v[i].id == id) return &a->v[i];
    return NULL;
}

void tok_added_free(tok_addset *a) {
    for (int i = 0; i < a->n; i++) free(a->v[i].s);
    free(a->v);
    memset(a, 0, sizeof *a);
}

static int is_word_byte(unsigned char c) {
    return c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
}
static int is_space_byte(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Next added token at or after from: its id and span [*ms, *me) (with lstrip/rstrip whitespace
 * absorbed); -1 when none. */
static int32_t added_next(const tok_addset *a, const char *s, size_t len, size_t from,
                          size_t *ms, size_t *me) {
    if (a->n == 0) return -1;
    for (size_t i = from; i < len; i++) {
        unsigned char f = (unsigned char)s[i];
        if (!a->has_first[f]) continue;
        for (int k = 0; k < a->n; k++) {
            const tok_added *t = &a->v[k];
            if ((unsigned char)t->s[0] != f || t->len > len - i || memcmp(t->s, s + i, t->len)) continue;
            size_t b = i, e = i + t->len;
            if (t->single_word && ((b > 0 && is_word_byte((unsigned char)s[b - 1])) ||
                                   (e < len && is_word_byte((unsigned char)s[e]))))
                continue;
            if (t->lstrip) while (b > from && is_space_byte(s[b - 1])) b--;
            if (t->rstrip) while (e < len && is_space_byte(s[e])) e++;
            *ms = b;
            *me = e;
            return t->id;
        }
    }
    return -1;
}

/* ---------------------------------------------------------------- normalizers */

void tok_norm_bert(tok_norm *nm, int clean, int cjk, int strip, int lower) {
    nm->n = 0;
    if (clean) nm->step[nm->n++] = TN_BERT_CLEAN;
    if (cjk) nm->step[nm->n++] = TN_BERT_CJK;
    if (strip) nm->step[nm->n++] = TN_STRIP_ACCENTS;
    if (lower) nm->step[nm->n++] = TN_LOWER;
}

static int norm_add(tok_norm *nm, int step, char *err, size_t errlen) {
    if (nm->n >= (int)(sizeof nm->step / sizeof nm->step[0])) {
        tok_fail(err, errlen, "normalizer: too many steps");
        return -1;
    }
    nm->step[nm->n++] = step;
    return 0;
}

static char *dup_len(const char *s, size_t n) {
    char *d = xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* Prepend {"prepend": s}; Replace {"pattern": {"String": s} | {"Regex": r}, "content": c}. */
static int norm_strings(tok_norm *nm, const char *type, json_t *j, char *err, size_t errlen) {
    int k = nm->n;
    if (!strcmp(type, "Prepend")) {
        json_t *p = json_object_get(j, "prepend");
        if (!json_is_string(p)) { tok_fail(err, errlen, "normalizer Prepend: \"prepend\" is not a string"); return -1; }
        if (norm_add(nm, TN_PREPEND, err, errlen)) return -1;
        nm->a[k] = dup_len(json_string_value(p), nm->alen[k] = json_string_length(p));
        return 0;
    }
    json_t *pat = json_object_get(j, "pattern"), *c = json_object_get(j, "content");
    json_t *str = json_object_get(pat, "String"), *rx = json_object_get(pat, "Regex");
    if (!json_is_string(c) || (!json_is_string(str) && !json_is_string(rx)) ||
        (json_is_string(str) && json_string_length(str) == 0)) {
        tok_fail(err, errlen, "normalizer Replace: needs a non-empty pattern String or Regex and a string content");
        return -1;
    }
    if (norm_add(nm, json_is_string(str) ? TN_REPLACE : TN_REPLACE_RE, err, errlen)) return -1;
    json_t *what = json_is_string(str) ? str : rx;
    nm->a[k] = dup_len(json_string_value(what), nm->alen[k] = json_string_length(what));
    nm->b[k] = dup_len(json_string_value(c), nm->blen[k] = json_string_length(c));
    if (json_is_string(rx)) {
        int ec;
        PCRE2_SIZE eo;
        nm->re[k] = pcre2_compile((PCRE2_SPTR)nm->a[k], nm->alen[k], PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
        if (!nm->re[k]) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(ec, msg, sizeof msg);
            tok_fail(err, errlen, "normalizer Replace regex: %s at offset %zu", (char *)msg, (size_t)eo);
            return -1;
        }
    }
    return 0;
}

static int norm_precompiled(tok_norm *nm, json_t *j, char *err, size_t errlen) {
    json_t *m = json_object_get(j, "precompiled_charsmap");
    if (json_is_null(m)) return 0;               /* HF: no charsmap, no normalisation */
    if (!json_is_string(m)) { tok_fail(err, errlen, "normalizer Precompiled: precompiled_charsmap is not a string"); return -1; }
    size_t blen = json_string_length(m), dlen = BASE64_DECODE_LENGTH(blen);
    uint8_t *d = xmalloc(dlen + 1);
    struct base64_decode_ctx ctx;
    base64_decode_init(&ctx);
    int ok = base64_decode_update(&ctx, &dlen, d, blen, json_string_value(m)) && base64_decode_final(&ctx);
    tok_precompiled *pc = ok ? tok_precompiled_parse(d, dlen, err, errlen) : NULL;
    free(d);
    if (!ok) tok_fail(err, errlen, "normalizer Precompiled: precompiled_charsmap is not base64");
    if (!pc) return -1;
    int k = nm->n;
    if (norm_add(nm, TN_PRECOMPILED, err, errlen)) { tok_precompiled_free(pc); return -1; }
    nm->pc[k] = pc;
    return 0;
}

void tok_norm_free(tok_norm *nm) {
    for (int k = 0; k < 16; k++) {
        free(nm->a[k]);
        free(nm->b[k]);
        if (nm->re[k]) pcre2_code_free(nm->re[k]);
        if (nm->pc[k]) tok_precompiled_free(nm->pc[k]);
    }
    memset(nm, 0, sizeof *nm);
}

static int norm_parse(tok_norm *nm, json_t *j, char *err, size_t errlen) {
    if (!j || json_is_null(j)) return 0;
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!type) { tok_fail(err, errlen, "normalizer without a type"); return -1; }
    if (!strcmp(type, "Sequence")) {
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(j, "normalizers"), i, x)
            if (norm_parse(nm, x, err, errlen)) return -1;
        return 0;
    }
    if (!strcmp(type, "NFC")) return norm_add(nm, TN_NFC, err, errlen);
    if (!strcmp(type, "NFD")) return norm_add(nm, TN_NFD, err, errlen);
    if (!strcmp(type, "NFKC")) return norm_add(nm, TN_NFKC, err, errlen);
    if (!strcmp(type, "NFKD")) return norm_add(nm, TN_NFKD, err, errlen);
    if (!strcmp(type, "Lowercase")) return norm_add(nm, TN_LOWER, err, errlen);
    if (!strcmp(type, "StripAccents")) return norm_add(nm, TN_STRIP_ACCENTS, err, errlen);
    if (!strcmp(type, "BertNormalizer")) {
        json_t *clean = json_object_get(j, "clean_text"), *cjk = json_object_get(j, "handle_chinese_chars");
        json_t *strip = json_object_get(j, "strip_accents"), *lower = json_object_get(j, "lowercase");
        int lo = lower ? json_is_true(lower) : 1;
        /* strip_accents null means "follow lowercase" */
        int st = (!strip || json_is_null(strip)) ? lo : json_is_true(strip);
        tok_norm sub;
        tok_norm_bert(&sub, clean ? json_is_true(clean) : 1, cjk ? json_is_true(cjk) : 1, st, lo);
        for (int i = 0; i < sub.n; i++)
            if (norm_add(nm, sub.step[i], err, errlen)) return -1;
        return 0;
    }
    if (!strcmp(type, "Prepend") || !strcmp(type, "Replace")) return norm_strings(nm, type, j, err, errlen);
    if (!strcmp(type, "Precompiled")) return norm_precompiled(nm, j, err, errlen);
    tok_fail(err, errlen, "unsupported normalizer type '%s'", type);
    return -1;
}

int tok_norm_from_json(tok_norm *nm, json_t *j, char *err, size_t errlen) {
    memset(nm, 0, sizeof *nm);
    return norm_parse(nm, j, err, errlen);
}

/* White_Space (what Rust's char::is_whitespace tests, as HF does). */
int tok_is_ws(int32_t c) {
    return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

static int is_cjk(int32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* BERT clean_text drops controls (Cc, Cf, Co) other than \t \n \r, NUL and U+FFFD. */
static int bert_drops(int32_t c) {
    if (c == 0 || c == 0xFFFD) return 1;
    if (c == '\t' || c == '\n' || c == '\r') return 0;
    utf8proc_category_t k = utf8proc_category(c);
    return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CO;
}

typedef struct { char *s; size_t n, cap; } obuf;
static void ob_cp(obuf *b, int32_t c) {
    if (b->n + 8 > b->cap) { b->cap = b->cap * 2 + 64; b->s = xrealloc(b->s, b->cap); }
    b->n += (size_t)utf8proc_encode_char(c, (utf8proc_uint8_t *)b->s + b->n);
}

/* One code-point-wise step (everything except the Unicode normal forms). */
static char *norm_cpwise(int step, const char *s, size_t len, size_t *outlen) {
    obuf b = {xmalloc(len + 16), 0, len + 16};
    size_t i = 0;
    while (i < len) {
        int32_t c;
        i = tok_utf8_next(s, len, i, &c);
        if (c < 0) continue;   /* not UTF-8 (normalizer input is checked): dropped, never looped on */
        switch (step) {
        case TN_LOWER: ob_cp(&b, utf8proc_tolower(c)); break;
        case TN_BERT_CLEAN:
            if (!bert_drops(c)) ob_cp(&b, tok_is_ws(c) ? ' ' : c);
            break;
        case TN_BERT_CJK:
            if (is_cjk(c)) { ob_cp(&b, ' '); ob_cp(&b, c); ob_cp(&b, ' '); } else ob_cp(&b, c);
            break;
        case TN_STRIP_ACCENTS:        /* input is NFD already */
            if (utf8proc_category(c) != UTF8PROC_CATEGORY_MN) ob_cp(&b, c);
            break;
        }
    }
    ob_cp(&b, 0);
    *outlen = b.n - 1;
    return b.s;
}

static char *norm_form(int opts, const char *s, size_t len, size_t *outlen) {
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &dst,
                                      (utf8proc_option_t)(UTF8PROC_STABLE | opts));
    if (n < 0) {                       /* cannot happen on valid UTF-8; keep the text as is */
        char *c = xmalloc(len + 1);
        memcpy(c, s, len);
        c[len] = 0;
        *outlen = len;
        return c;
    }
    *outlen = (size_t)n;
    return (char *)dst;
}

static int all_ascii(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] >= 0x80) return 0;
    return 1;
}

static char *cat3(const char *a, size_t an, const char *b, size_t bn, const char *c, size_t cn, size_t *outlen) {
    char *d = xmalloc(an + bn + cn + 1);
    memcpy(d, a, an);
    memcpy(d + an, b, bn);
    memcpy(d + an + bn, c, cn);
    d[*outlen = an + bn + cn] = 0;
    return d;
}

/* Every occurrence of pat, left to right, without overlaps. */
static char *replace_str(const char *pat, size_t pn, const char *rep, size_t rn, const char *s, size_t len,
                         size_t *outlen) {
    obuf b = {xmalloc(len + 16), 0, len + 16};
    for (size_t i = 0; i < len;) {
        int hit = pn <= len - i && memcmp(s + i, pat, pn) == 0;
        size_t add = hit ? rn : 1;
        if (b.n + add + 1 > b.cap) { b.cap = 2 * b.cap + add; b.s = xrealloc(b.s, b.cap); }
        memcpy(b.s + b.n, hit ? rep : s + i, add);
        b.n += add;
        i += hit ? pn : 1;
    }
    b.s[b.n] = 0;
    *outlen = b.n;
    return b.s;
}

static char *replace_re(void *re, const char *rep, size_t rn, const char *s, size_t len, size_t *outlen) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    obuf b = {xmalloc(len + 16), 0, len + 16};
    size_t at = 0, copied = 0;
    while (at <= len && pcre2_match(re, (PCRE2_SPTR)s, len, at, PCRE2_NO_UTF_CHECK, md, NULL) >= 0) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[1] == ov[0]) {                       /* empty match: replace nothing, step one character */
            if (ov[0] >= len) break;
            at = ov[0] + 1;
            while (at < len && ((unsigned char)s[at] & 0xC0) == 0x80) at++;
            continue;
        }
        size_t need = (ov[0] - copied) + rn + 1;
        if (b.n + need > b.cap) { b.cap = 2 * b.cap + need; b.s = xrealloc(b.s, b.cap); }
        memcpy(b.s + b.n, s + copied, ov[0] - copied);
        b.n += ov[0] - copied;
        memcpy(b.s + b.n, rep, rn);
        b.n += rn;
        copied = at = ov[1];
    }
    pcre2_match_data_free(md);
    if (b.n + (len - copied) + 1 > b.cap) { b.cap = b.n + (len - copied) + 1; b.s = xrealloc(b.s, b.cap); }
    memcpy(b.s + b.n, s + copied, len - copied);
    b.n += len - copied;
    b.s[b.n] = 0;
    *outlen = b.n;
    return b.s;
}

char *tok_normalize(const tok_norm *nm, const char *s, size_t len, size_t *outlen) {
    char *cur = xmalloc(len + 1);
    memcpy(cur, s, len);
    cur[len] = 0;
    size_t n = len;
    int ascii = all_ascii(s, len);
    for (int k = 0; k < nm->n; k++) {
        char *next;
        int st = nm->step[k];
        if (ascii && st >= TN_NFC && st <= TN_NFKD) continue;   /* ASCII is in every normal form */
        switch (st) {
        case TN_NFC: next = norm_form(UTF8PROC_COMPOSE, cur, n, &n); break;
        case TN_NFD: next = norm_form(UTF8PROC_DECOMPOSE, cur, n, &n); break;
        case TN_NFKC: next = norm_form(UTF8PROC_COMPOSE | UTF8PROC_COMPAT, cur, n, &n); break;
        case TN_NFKD: next = norm_form(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, cur, n, &n); break;
        case TN_STRIP_ACCENTS: {
            size_t m;
            char *d = norm_form(UTF8PROC_DECOMPOSE, cur, n, &m);
            next = norm_cpwise(TN_STRIP_ACCENTS, d, m, &n);
            free(d);
            break;
        }
        case TN_PREPEND: next = n ? cat3(nm->a[k], nm->alen[k], cur, n, "", 0, &n) : dup_len(cur, n); break;
        case TN_REPLACE: next = replace_str(nm->a[k], nm->alen[k], nm->b[k], nm->blen[k], cur, n, &n); break;
        case TN_REPLACE_RE: next = replace_re(nm->re[k], nm->b[k], nm->blen[k], cur, n, &n); break;
        case TN_PRECOMPILED: next = tok_precompiled_apply(nm->pc[k], cur, n, &n); break;
        default: next = norm_cpwise(nm->step[k], cur, n, &n); break;
        }
        free(cur);
        cur = next;
    }
    *outlen = n;
    return cur;
}

/* ---------------------------------------------------------------- the shared pipeline */

static void encode_segment(const tok *t, const tok_common *c, const char *s, size_t len, int at_start,
                           tok_ivec *out, void *scratch) {
    if (c->norm.n == 0) { c->segment(t, s, len, at_start, out, scratch); return; }
    size_t n;
    char *ns = tok_normalize(&c->norm, s, len, &n);
    c->segment(t, ns, n, at_start, out, scratch);
    free(ns);
}

int tok_common_encode(const tok *t, const char *text, size_t len, int32_t **ids) {
    *ids = NULL;
    if (tok_utf8_check(text, len) != len) return -1;
    const tok_common *c = t->impl;
    tok_ivec out = {0};
    void *scratch = c->scratch_new ? c->scratch_new(t) : NULL;
    size_t pos = 0;
    for (;;) {
        size_t ms = len, me = len;
        int32_t id = added_next(&c->added, text, len, pos, &ms, &me);
        size_t end = id >= 0 ? ms : len;
        if (end > pos) encode_segment(t, c, text + pos, end - pos, pos == 0, &out, scratch);
        if (id < 0) break;
        tok_ivec_push(&out, id);
        pos = me;
    }
    if (scratch) c->scratch_free(scratch);
    if (out.n > INT32_MAX) { free(out.v); return -1; }
    *ids = out.v ? out.v : xmalloc(sizeof(int32_t));
    return (int)out.n;
}

/* ---------------------------------------------------------------- Metaspace */

static int metaspace_parse(tok_metaspace *ms, json_t *p, char *err, size_t errlen) {
    const char *type = json_string_value(json_object_get(p, "type"));
    if (!type) return 0;
    if (!strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(p, "pretokenizers"), *x;
        size_t i;
        if (!json_is_array(arr)) return 0;
        json_array_foreach(arr, i, x) {
            int rc = metaspace_parse(ms, x, err, errlen);
            if (rc <= 0) return rc;
        }
        return 1;
    }
    if (!strcmp(type, "WhitespaceSplit")) {
        if (ms->on) { tok_fail(err, errlen, "pre_tokenizer: WhitespaceSplit after Metaspace is not supported"); return -1; }
        ms->ws_split = 1;
        return 1;
    }
    if (strcmp(type, "Metaspace")) return 0;
    if (ms->on) { tok_fail(err, errlen, "pre_tokenizer: two Metaspace steps"); return -1; }
    json_t *r = json_object_get(p, "replacement"), *sch = json_object_get(p, "prepend_scheme");
    json_t *aps = json_object_get(p, "add_prefix_space"), *sp = json_object_get(p, "split");
    const char *rs = json_string_value(r);
    if (!rs || json_string_length(r) == 0 || json_string_length(r) >= sizeof ms->rep ||
        utf8proc_iterate((const utf8proc_uint8_t *)rs, (utf8proc_ssize_t)json_string_length(r), &(utf8proc_int32_t){0}) !=
            (utf8proc_ssize_t)json_string_length(r)) {
        tok_fail(err, errlen, "pre_tokenizer Metaspace: replacement must be one character");
        return -1;
    }
    ms->on = 1;
    memcpy(ms->rep, rs, ms->replen = json_string_length(r));
    ms->split = sp ? json_is_true(sp) : 1;
    if (sch) {
        const char *v = json_string_value(sch);
        if (!v || (strcmp(v, "always") && strcmp(v, "first") && strcmp(v, "never"))) {
            tok_fail(err, errlen, "pre_tokenizer Metaspace: prepend_scheme must be always, first or never");
            return -1;
        }
        ms->prepend = !strcmp(v, "always") ? TOK_PREPEND_ALWAYS : !strcmp(v, "first") ? TOK_PREPEND_FIRST : TOK_PREPEND_NEVER;
    } else {           /* files written before prepend_scheme existed */
        ms->prepend = !aps || json_is_true(aps) ? TOK_PREPEND_ALWAYS : TOK_PREPEND_NEVER;
    }
    return 1;
}

int tok_metaspace_from_json(tok_metaspace *ms, json_t *p, char *err, size_t errlen) {
    memset(ms, 0, sizeof *ms);
    int rc = metaspace_parse(ms, p, err, errlen);
    if (rc == 1 && !ms->on) rc = 0;       /* WhitespaceSplit alone is not ours */
    if (rc <= 0) memset(ms, 0, sizeof *ms);
    return rc;
}

/* One whitespace-free piece: spaces to the replacement, the prefix, the cuts. */
static void metaspace_piece(const tok_metaspace *ms, const char *s, size_t len, int at_start,
                            void (*word)(const char *w, size_t n, void *ctx), void *ctx) {
    size_t cap = ms->replen * (len + 1) + 1, n = 0;
    char *b = xmalloc(cap);
    int pre = ms->prepend == TOK_PREPEND_ALWAYS || (ms->prepend == TOK_PREPEND_FIRST && at_start);
    if (pre && !(len >= ms->replen && !memcmp(s, ms->rep, ms->replen))) {
        /* the text may itself start with a space, which becomes the replacement below */
        if (!(len && s[0] == ' ')) { memcpy(b, ms->rep, ms->replen); n = ms->replen; }
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') { memcpy(b + n, ms->rep, ms->replen); n += ms->replen; }
        else b[n++] = s[i];
    }
    if (!ms->split) { if (n) word(b, n, ctx); free(b); return; }
    size_t from = 0;
    for (size_t i = 0; i < n;) {
        if (i > from && i + ms->replen <= n && !memcmp(b + i, ms->rep, ms->replen)) {
            word(b + from, i - from, ctx);
            from = i;
        }
        i += (i + ms->replen <= n && !memcmp(b + i, ms->rep, ms->replen)) ? ms->replen : 1;
    }
    if (n > from) word(b + from, n - from, ctx);
    free(b);
}

void tok_metaspace_split(const tok_metaspace *ms, const char *s, size_t len, int at_start,
                         void (*word)(const char *w, size_t n, void *ctx), void *ctx) {
    if (!ms->ws_split) { metaspace_piece(ms, s, len, at_start, word, ctx); return; }
    size_t i = 0, from = 0;
    int in_word = 0;
    while (i <= len) {
        int32_t c = 0;
        size_t step = 1;
        if (i < len) step = tok_utf8_next(s, len, i, &c) - i;
        int ws = i == len || tok_is_ws(c);
        if (ws && in_word) metaspace_piece(ms, s + from, i - from, at_start && from == 0, word, ctx);
        if (!ws && !in_word) from = i;
        in_word = !ws;
        i += step;
    }
}

int tok_decoder_strips_first(json_t *dec) {
    const char *type = json_string_value(json_object_get(dec, "type"));
    if (!type) return 0;
    if (!strcmp(type, "Sequence")) {
        json_t *x;
        size_t i;
        json_array_foreach(json_object_get(dec, "decoders"), i, x)
            if (tok_decoder_strips_first(x)) return 1;
        return 0;
    }
    if (!strcmp(type, "Strip"))
        return json_integer_value(json_object_get(dec, "start")) > 0;
    if (!strcmp(type, "Metaspace")) {
        const char *v = json_string_value(json_object_get(dec, "prepend_scheme"));
        json_t *aps = json_object_get(dec, "add_prefix_space");
        return v ? strcmp(v, "never") != 0 : (!aps || json_is_true(aps));
    }
    return 0;
}

/* ---------------------------------------------------------------- special ids of a family */

static int first_id(const tok *t, const char *const *names) {
    for (; *names; names++) {
        int id = t->ops->id_of(t, *names);
        if (id >= 0) return id;
    }
    return -1;
}

void tok_set_specials(tok *t, const char *family) {
    static const char *const eot[] = {"<|endoftext|>", NULL};
    static const char *const l_bos[] = {"<|begin_of_text|>", "<s>", NULL};
    static const char *const l_eos[] = {"<|end_of_text|>", "</s>", NULL};
    static const char *const b_bos[] = {"<|bos|>", "<|begin_of_text|>", "<s>", "<bos>", NULL};
    static const char *const b_eos[] = {"<|eos|>", "<|end_of_text|>", "</s>", "<eos>", NULL};
    static const char *const cls[] = {"[CLS]", NULL}, *const sep[] = {"[SEP]", NULL};
    static const char *const pad[] = {"[PAD]", NULL};
    const char *f = family ? family : "";
    t->bos = t->eos = t->cls = t->sep = t->pad = -1;
    if (!strcmp(f, "gpt2") || !strcmp(f, "gpt_neox")) {
        t->bos = t->eos = first_id(t, eot);
        static const char *const s_bos[] = {"<s>", NULL}, *const s_eos[] = {"</s>", NULL};
        /* a fairseq dictionary in GPT-2's byte-level BPE (RoBERTa, OPT, BART): <s> and </s> */
        if (!strcmp(f, "gpt2") && first_id(t, s_bos) >= 0 && first_id(t, s_eos) >= 0)
            t->bos = first_id(t, s_bos), t->eos = first_id(t, s_eos);
    } else if (!strcmp(f, "llama")) {
        t->bos = first_id(t, l_bos);
        t->eos = first_id(t, l_eos);
    } else if (!strcmp(f, "qwen2")) {
        t->eos = first_id(t, eot);
    } else if (!strcmp(f, "spm")) {
        static const char *const s_bos[] = {"<s>", "<bos>", NULL}, *const s_eos[] = {"</s>", "<eos>", NULL};
        static const char *const s_pad[] = {"<pad>", NULL};
        t->bos = first_id(t, s_bos);
        t->eos = first_id(t, s_eos);
        t->pad = first_id(t, s_pad);
    } else if (!strcmp(f, "bert")) {
        t->cls = first_id(t, cls);
        t->sep = first_id(t, sep);
        t->pad = first_id(t, pad);
    } else {
        t->bos = first_id(t, b_bos);
        t->eos = first_id(t, b_eos);
    }
}

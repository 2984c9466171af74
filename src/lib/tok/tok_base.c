/* tok_base: the small pieces every tokenizer file stands on: a byte-string hash map, an id vector,
 * the error-text helper and UTF-8 stepping. It calls nothing else in the tok module, so the
 * charsmap normaliser (tok_spm_norm.c) and the shared helpers (tok_impl.c) can both use it. */
#include "tok_base.h"
#include "core/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---------------------------------------------------------------- small containers */

static uint64_t fnv1a(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ull; }
    return h;
}

void tok_map_init(tok_map *m, size_t expect) {
    size_t cap = 16;
    while (cap < expect * 2) cap <<= 1;
    m->e = xcalloc(cap, sizeof *m->e);
    m->cap = cap;
    m->n = 0;
}

static void map_grow(tok_map *m) {
    tok_map old = *m;
    m->cap = old.cap * 2;
    m->e = xcalloc(m->cap, sizeof *m->e);
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.e[i].key) continue;
        size_t j = fnv1a(old.e[i].key, old.e[i].len) & (m->cap - 1);
        while (m->e[j].key) j = (j + 1) & (m->cap - 1);
        m->e[j] = old.e[i];
    }
    free(old.e);
}

int tok_map_put(tok_map *m, const char *key, size_t len, int32_t val) {
    if (!m->e) tok_map_init(m, 16);
    if ((m->n + 1) * 2 > m->cap) map_grow(m);
    size_t j = fnv1a(key, len) & (m->cap - 1);
    for (; m->e[j].key; j = (j + 1) & (m->cap - 1))
        if (m->e[j].len == len && memcmp(m->e[j].key, key, len) == 0) return 0;
    m->e[j].key = xmalloc(len + 1);
    memcpy(m->e[j].key, key, len);
    m->e[j].key[len] = 0;
    m->e[j].len = (uint32_t)len;
    m->e[j].val = val;
    m->n++;
    return 1;
}

int32_t tok_map_get(const tok_map *m, const char *key, size_t len) {
    if (!m->e) return -1;
    size_t j = fnv1a(key, len) & (m->cap - 1);
    for (; m->e[j].key; j = (j + 1) & (m->cap - 1))
        if (m->e[j].len == len && memcmp(m->e[j].key, key, len) == 0) return m->e[j].val;
    return -1;
}

void tok_map_free(tok_map *m) {
    for (size_t i = 0; i < m->cap; i++) free(m->e[i].key);
    free(m->e);
    m->e = NULL;
    m->cap = m->n = 0;
}

void tok_ivec_push(tok_ivec *a, int32_t x) {
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = xrealloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = x;
}

void *tok_fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return NULL;
}

/* ---------------------------------------------------------------- UTF-8 */

size_t tok_utf8_check(const char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                              (utf8proc_ssize_t)(len - i), &cp);
        if (n <= 0) return i;
        i += (size_t)n;
    }
    return len;
}

size_t tok_utf8_next(const char *s, size_t len, size_t i, int32_t *c) {
    utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(len - i), c);
    if (n <= 0) { *c = -1; return i + 1; }
    return i + (size_t)n;
}

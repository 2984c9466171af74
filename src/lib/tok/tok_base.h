/* tok_base: the bottom layer of the tok module (see tok_impl.h): a byte-string hash map, an id
 * vector, the error-text helper and UTF-8 stepping. It uses nothing else in the module. */
#ifndef ATTNCODA_TOK_BASE_H
#define ATTNCODA_TOK_BASE_H
#include <stddef.h>
#include <stdint.h>

/* Byte string → int32 map, open addressing (FNV-1a). Keys are copied. */
typedef struct { char *key; uint32_t len; int32_t val; } tok_map_ent;
typedef struct { tok_map_ent *e; size_t cap, n; } tok_map;
void tok_map_init(tok_map *m, size_t expect);
/* Inserts key → val unless key is present; returns 1 when inserted, 0 when already present. */
int tok_map_put(tok_map *m, const char *key, size_t len, int32_t val);
int32_t tok_map_get(const tok_map *m, const char *key, size_t len); /* -1 when absent */
void tok_map_free(tok_map *m);

/* Growable int32 vector. */
typedef struct { int32_t *v; size_t n, cap; } tok_ivec;
void tok_ivec_push(tok_ivec *a, int32_t x);

/* Offset of the first invalid UTF-8 byte, or len when all is valid. */
size_t tok_utf8_check(const char *s, size_t len);
/* The index after the code point at s[i] (i < len), which goes to *c; a byte that does not start
 * a valid UTF-8 sequence is one step with *c = -1, so every loop over text moves forward. */
size_t tok_utf8_next(const char *s, size_t len, size_t i, int32_t *c);
/* Family-specific error helper: snprintf into err, return NULL. */
void *tok_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#endif

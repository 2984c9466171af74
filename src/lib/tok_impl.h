/* tok_impl: what the tokenizer implementations (tok.c, tok_bpe.c, tok_wordpiece.c) share and
 * nobody else needs: a byte-string hash map, an id vector, the added-token matcher, the
 * normalizers and the HF tokenizer.json pipeline ("split on added tokens, normalize each
 * remaining segment, hand it to the model"). Private to the tok module. */
#ifndef ATTNCODA_TOK_IMPL_H
#define ATTNCODA_TOK_IMPL_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include "tok.h"

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

/* Added tokens, matched in the raw text before anything else (leftmost, then longest, like the
 * Aho-Corasick LeftmostLongest matcher of HF tokenizers). */
typedef struct {
    char *s; size_t len; int32_t id;
    int special, lstrip, rstrip, single_word;
} tok_added;
typedef struct {
    tok_added *v; int n;
    int has_first[256];   /* some token starts with this byte */
} tok_addset;
void tok_added_add(tok_addset *a, const char *s, size_t len, int32_t id, int special,
                   int lstrip, int rstrip, int single_word);
/* Parses tokenizer.json "added_tokens"; returns 0 or -1 with err filled. */
int tok_added_from_json(tok_addset *a, json_t *arr, char *err, size_t errlen);
int32_t tok_added_id(const tok_addset *a, const char *s, size_t len); /* -1 when none */
const tok_added *tok_added_by_id(const tok_addset *a, int32_t id);
void tok_added_free(tok_addset *a);

/* Normalizer: a sequence of steps (HF "Sequence" flattened). */
enum { TN_NFC, TN_NFD, TN_NFKC, TN_NFKD, TN_LOWER, TN_BERT_CLEAN, TN_BERT_CJK, TN_STRIP_ACCENTS };
typedef struct { int step[16]; int n; } tok_norm;
/* Parses a tokenizer.json "normalizer" (null allowed); 0 or -1 with err filled. */
int tok_norm_from_json(tok_norm *nm, json_t *j, char *err, size_t errlen);
void tok_norm_bert(tok_norm *nm, int clean, int cjk, int strip, int lower);
/* Normalizes valid UTF-8; returns malloc'd text (NUL-terminated) and its length. */
char *tok_normalize(const tok_norm *nm, const char *s, size_t len, size_t *outlen);

/* The pipeline every implementation here starts with; impl structs begin with this member. */
typedef struct tok_common {
    tok_addset added;
    tok_norm norm;
    /* encode one normalized segment (valid UTF-8), appending ids */
    void (*segment)(const tok *t, const char *s, size_t len, tok_ivec *out, void *scratch);
    void *(*scratch_new)(const tok *t);   /* per-call state (e.g. a BPE cache); may be NULL */
    void (*scratch_free)(void *scratch);
} tok_common;
/* tok_ops.encode for tok_common-based tokenizers: -1 on invalid UTF-8 (nothing allocated). */
int tok_common_encode(const tok *t, const char *text, size_t len, int32_t **ids);
/* Unicode White_Space (what Rust's char::is_whitespace tests, as HF does). */
int tok_is_ws(int32_t c);
/* Offset of the first invalid UTF-8 byte, or len when all is valid. */
size_t tok_utf8_check(const char *s, size_t len);
/* Reads a whole JSON file; NULL with err filled on failure. */
json_t *tok_json_load(const char *path, char *err, size_t errlen);
/* Family-specific error helper: snprintf into err, return NULL. */
void *tok_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Byte-level BPE loaders (tok_bpe.c). family may be NULL (detected). A tokenizer.json describes
 * itself (its pre-tokenizer decides the family), so tok_bpe_from_json ignores family. */
tok *tok_bpe_from_json(json_t *root, const char *path, const char *family, char *err, size_t errlen);
tok *tok_bpe_from_files(const char *vocab_json, const char *merges_txt, const char *family,
                        char *err, size_t errlen);
tok *tok_bpe_from_tiktoken(const char *path, const char *family, char *err, size_t errlen);
/* WordPiece loaders (tok_wordpiece.c). lower < 0: default (lowercase on). */
tok *tok_wp_from_json(json_t *root, const char *path, char *err, size_t errlen);
tok *tok_wp_from_vocab_txt(const char *path, int lower, char *err, size_t errlen);

/* Fill bos/eos/cls/sep/pad from the family and the tokens present. */
void tok_set_specials(tok *t, const char *family);
/* Family from config.json / tokenizer_config.json next to a tokenizer file (NULL if none). */
const char *tok_family_from_dir(const char *file_path);
#endif

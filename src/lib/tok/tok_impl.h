/* tok_impl: what the tokenizer implementations share and nobody else needs, private to the tok
 * module. Defined in layers, each calling only those before it: tok_base.c (byte-string hash map,
 * id vector, error text, UTF-8 stepping), tok_spm_norm.c (SentencePiece's charsmap normaliser),
 * tok_impl.c (added-token matcher, normalizers, the HF tokenizer.json pipeline "split on added
 * tokens, normalize each remaining segment, hand it to the model", Metaspace, special ids), then
 * the tokenizers (tok_bpe.c, tok_wordpiece.c, tok_unigram.c, tok_spm_model.c), then tok.c, which
 * chooses and loads one. */
#ifndef ATTNCODA_TOK_IMPL_H
#define ATTNCODA_TOK_IMPL_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include "tok_base.h"
#include "tok_spm_norm.h"

typedef struct tok tok;   /* as tok.h names it (C11 allows the repeat): this layer needs no more of
                            * the public interface, which is built on it */

/* A tokenizer (opaque in tok.h): each implementation registers its ops, and every tok_* call
 * dispatches through this table. */
typedef struct {
    int (*encode)(const tok *t, const char *text, size_t len, int32_t **ids);
    int (*decode_piece)(const tok *t, int32_t prev, int32_t id, char *buf, int cap);
    int (*id_of)(const tok *t, const char *token);
    void (*free)(tok *t);
} tok_ops;
struct tok {
    const tok_ops *ops;
    int vocab, bos, eos, cls, sep, pad;
    void *impl;
    /* add_special_tokens (tok_special_wrap), set by tok.c: wrap_state 0 not yet decided, 1 set,
     * -1 a post_processor type attncoda does not apply (named in wrap_unsupported) */
    int32_t *wrap_pre, *wrap_post;
    int wrap_npre, wrap_npost, wrap_state;
    char wrap_unsupported[48];
};


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
enum { TN_NFC, TN_NFD, TN_NFKC, TN_NFKD, TN_LOWER, TN_BERT_CLEAN, TN_BERT_CJK, TN_STRIP_ACCENTS,
       TN_PREPEND, TN_REPLACE, TN_REPLACE_RE, TN_PRECOMPILED };
/* Prepend/Replace keep their strings in a/b (owned); Replace with a regex keeps the compiled
 * pattern in re; Precompiled (SentencePiece's charsmap) keeps its parsed form in pc. */
typedef struct {
    int step[16]; int n;
    char *a[16], *b[16]; size_t alen[16], blen[16];
    void *re[16];
    tok_precompiled *pc[16];
} tok_norm;
void tok_norm_free(tok_norm *nm);
/* Parses a tokenizer.json "normalizer" (null allowed); 0 or -1 with err filled. */
int tok_norm_from_json(tok_norm *nm, json_t *j, char *err, size_t errlen);
void tok_norm_bert(tok_norm *nm, int clean, int cjk, int strip, int lower);
/* Normalizes valid UTF-8; returns malloc'd text (NUL-terminated) and its length. */
char *tok_normalize(const tok_norm *nm, const char *s, size_t len, size_t *outlen);

/* The pipeline every implementation here starts with; impl structs begin with this member. */
typedef struct tok_common {
    tok_addset added;
    tok_norm norm;
    /* encode one normalized segment (valid UTF-8), appending ids; at_start: the segment begins
     * the text (no added token before it), which Metaspace's prepend_scheme "first" asks */
    void (*segment)(const tok *t, const char *s, size_t len, int at_start, tok_ivec *out, void *scratch);
    void *(*scratch_new)(const tok *t);   /* per-call state (e.g. a BPE cache); may be NULL */
    void (*scratch_free)(void *scratch);
} tok_common;
/* tok_ops.encode for tok_common-based tokenizers: -1 on invalid UTF-8 (nothing allocated). */
int tok_common_encode(const tok *t, const char *text, size_t len, int32_t **ids);
/* Unicode White_Space (what Rust's char::is_whitespace tests, as HF does). */
int tok_is_ws(int32_t c);
/* Reads a whole JSON file; NULL with err filled on failure. */
json_t *tok_json_load(const char *path, char *err, size_t errlen);

/* Byte-level BPE loaders (tok_bpe.c). family may be NULL (detected). A tokenizer.json describes
 * itself (its pre-tokenizer decides the family), so tok_bpe_from_json ignores family. */
tok *tok_bpe_from_json(json_t *root, const char *path, const char *family, char *err, size_t errlen);
tok *tok_bpe_from_files(const char *vocab_json, const char *merges_txt, const char *family,
                        char *err, size_t errlen);
tok *tok_bpe_from_tiktoken(const char *path, const char *family, char *err, size_t errlen);
/* WordPiece loaders (tok_wordpiece.c). lower < 0: default (lowercase on). */
tok *tok_wp_from_json(json_t *root, const char *path, char *err, size_t errlen);
tok *tok_wp_from_vocab_txt(const char *path, int lower, char *err, size_t errlen);

/* HF's Metaspace pre-tokenizer (optionally after WhitespaceSplit): spaces become the replacement
 * "▁", which is prepended (always / first segment only / never) unless already there; with split
 * the text is cut before every replacement (MergedWithNext). */
enum { TOK_PREPEND_NEVER, TOK_PREPEND_ALWAYS, TOK_PREPEND_FIRST };
typedef struct {
    int on, ws_split, split, prepend;
    char rep[8]; size_t replen;
} tok_metaspace;
/* Parses a pre_tokenizer made of Metaspace and WhitespaceSplit (Sequence allowed); 1 when it is
 * one, 0 when it is something else (left for the caller), -1 with err filled when malformed. */
int tok_metaspace_from_json(tok_metaspace *ms, json_t *p, char *err, size_t errlen);
/* Calls word() on each pre-token of the segment s. */
void tok_metaspace_split(const tok_metaspace *ms, const char *s, size_t len, int at_start,
                         void (*word)(const char *w, size_t n, void *ctx), void *ctx);
/* The decoder's leading-space rule: 1 when a decoded text's first "▁" is dropped (Metaspace
 * decoder with a prepend scheme, or Strip of one leading space). */
int tok_decoder_strips_first(json_t *dec);

/* SentencePiece-style BPE (tok_bpe.c): pieces with "▁", byte fallback <0xNN>, unk fusing.
 * From a tokenizer.model (tok_spm_model.c): pieces/scores/types of the protobuf; the merges
 * are derived from the scores as transformers' converter does. */
typedef struct {
    int n;
    const char *const *piece; const uint32_t *len; const float *score; const uint8_t *type;
    int unk, bos, eos, pad;
    int byte_fallback, add_dummy_prefix;
    const unsigned char *charsmap; size_t charsmap_len;   /* Unigram normaliser, may be empty */
} tok_spm_pieces;
tok *tok_bpe_from_spm(const tok_spm_pieces *p, const char *path, char *err, size_t errlen);
/* The convention of a tokenizer.model is SentencePiece's own (not that of a tokenizer.json, whose
 * added tokens are matched in the text first): only user-defined pieces are matched in the text,
 * and the unknown, control and byte pieces are outside the piece set the model segments with, so
 * "<s>" or "</s>" typed in the text is encoded as text. */
enum { TOK_SPM_UNKNOWN = 2, TOK_SPM_CONTROL = 3, TOK_SPM_USER_DEFINED = 4, TOK_SPM_BYTE = 6 };
static inline int tok_spm_reserved(int type) {
    return type == TOK_SPM_UNKNOWN || type == TOK_SPM_CONTROL || type == TOK_SPM_BYTE;
}
/* Unigram (tok_unigram.c). */
tok *tok_unigram_from_json(json_t *root, const char *path, char *err, size_t errlen);
tok *tok_unigram_from_spm(const tok_spm_pieces *p, const char *path, char *err, size_t errlen);
/* SentencePiece ModelProto reader (tok_spm_model.c): tokenizer.model files whose first byte is
 * the tag of field 1 (pieces). */
tok *tok_load_spm_model(const char *path, char *err, size_t errlen);

/* Fill bos/eos/cls/sep/pad from the family and the tokens present. */
void tok_set_specials(tok *t, const char *family);
#endif

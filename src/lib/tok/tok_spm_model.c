/* tok_spm_model: SentencePiece tokenizer.model files (a serialized sentencepiece.ModelProto).
 * A small reader of the protobuf wire format takes the fields the tokenizer needs and skips the
 * others (as protobuf readers must):
 *   ModelProto      1 pieces (repeated message), 2 trainer_spec, 3 normalizer_spec
 *   SentencePiece   1 piece (string), 2 score (float), 3 type (enum: 1 normal, 2 unknown,
 *                   3 control, 4 user defined, 5 unused, 6 byte)
 *   TrainerSpec     3 model_type (1 unigram, 2 BPE), 35 byte_fallback, 40 unk_id, 41 bos_id,
 *                   42 eos_id, 43 pad_id
 *   NormalizerSpec  2 precompiled_charsmap (bytes), 3 add_dummy_prefix
 * A known field with another wire type than its declared one is an error, not skipped. The
 * model_type picks the tokenizer: BPE (Llama-2, Mistral, Gemma) or Unigram (T5, XLM-R). */
#include "tok_impl.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct { const unsigned char *p, *end; } pb;

/* One field: tag, and its value (varint / fixed value in v, bytes in d[0..n)). */
typedef struct { uint32_t field, wire; uint64_t v; const unsigned char *d; size_t n; } pb_field;

static int pb_varint(pb *r, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) return -1;
        unsigned char c = *r->p++;
        x |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) { *v = x; return 0; }
    }
    return -1;                                   /* more than 10 bytes */
}

/* 1: a field read, 0: end of message, -1: malformed (what in why). */
static int pb_next(pb *r, pb_field *f, const char **why) {
    if (r->p == r->end) return 0;
    uint64_t tag;
    if (pb_varint(r, &tag)) { *why = "truncated field tag"; return -1; }
    f->field = (uint32_t)(tag >> 3);
    f->wire = (uint32_t)(tag & 7);
    if (tag >> 3 == 0 || tag >> 3 > 536870911u) { *why = "field number 0 or out of range"; return -1; }
    switch (f->wire) {
    case WT_VARINT:
        if (pb_varint(r, &f->v)) { *why = "truncated varint"; return -1; }
        return 1;
    case WT_I64:
    case WT_I32: {
        size_t k = f->wire == WT_I64 ? 8 : 4;
        if ((size_t)(r->end - r->p) < k) { *why = "truncated fixed-width value"; return -1; }
        f->v = 0;
        for (size_t i = 0; i < k; i++) f->v |= (uint64_t)r->p[i] << (8 * i);
        f->d = r->p;
        f->n = k;
        r->p += k;
        return 1;
    }
    case WT_LEN: {
        uint64_t n;
        if (pb_varint(r, &n) || n > (uint64_t)(r->end - r->p)) { *why = "length runs past the end"; return -1; }
        f->d = r->p;
        f->n = (size_t)n;
        r->p += n;
        return 1;
    }
    default:
        *why = "unsupported wire type (groups or 6/7)";
        return -1;
    }
}

typedef struct {
    tok_spm_pieces p;
    char **piece; uint32_t *len; float *score; uint8_t *type;
    int cap;
    int model_type;
} spm_model;

static int wire_is(const pb_field *f, uint32_t w, char *err, size_t errlen, const char *what) {
    if (f->wire == w) return 0;
    tok_fail(err, errlen, "%s (field %u) has wire type %u, expected %u", what, f->field, f->wire, w);
    return -1;
}

/* An int32 field: varint of the two's complement, sign-extended to 64 bits when negative. */
static int int32_field(const pb_field *f, int *out, char *err, size_t errlen, const char *what) {
    if (wire_is(f, WT_VARINT, err, errlen, what)) return -1;
    int64_t v = (int64_t)f->v;
    if (v < INT32_MIN || v > INT32_MAX) { tok_fail(err, errlen, "%s = %lld is not an int32", what, (long long)v); return -1; }
    *out = (int)v;
    return 0;
}

static int read_piece(spm_model *m, const pb_field *outer, char *err, size_t errlen) {
    pb r = {outer->d, outer->d + outer->n};
    pb_field f;
    const char *why = NULL, *s = NULL;
    size_t sn = 0;
    float score = 0;
    uint64_t type = 1;
    int rc, have = 0, id = m->p.n;
    while ((rc = pb_next(&r, &f, &why)) == 1) {
        if (f.field == 1) {
            if (wire_is(&f, WT_LEN, err, errlen, "piece")) return -1;
            s = (const char *)f.d, sn = f.n, have = 1;
        } else if (f.field == 2) {
            if (wire_is(&f, WT_I32, err, errlen, "score")) return -1;
            uint32_t bits = (uint32_t)f.v;
            memcpy(&score, &bits, 4);
            if (!isfinite(score)) { tok_fail(err, errlen, "piece %d: score is not finite", id); return -1; }
        } else if (f.field == 3) {
            if (wire_is(&f, WT_VARINT, err, errlen, "type")) return -1;
            type = f.v;
            if (type < 1 || type > 6) { tok_fail(err, errlen, "piece %d: type %llu is not 1..6", id, (unsigned long long)type); return -1; }
        }
    }
    if (rc < 0) { tok_fail(err, errlen, "piece %d: %s", id, why); return -1; }
    if (!have || sn == 0 || sn > 4096 || memchr(s, 0, sn) || tok_utf8_check(s, sn) != sn) {
        tok_fail(err, errlen, "piece %d: missing, empty, over 4096 bytes, or not UTF-8", id);
        return -1;
    }
    if (id >= (1 << 24)) { tok_fail(err, errlen, "more than 2^24 pieces"); return -1; }
    if (id == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 1024;
        m->piece = xrealloc(m->piece, (size_t)m->cap * sizeof *m->piece);
        m->len = xrealloc(m->len, (size_t)m->cap * sizeof *m->len);
        m->score = xrealloc(m->score, (size_t)m->cap * sizeof *m->score);
        m->type = xrealloc(m->type, (size_t)m->cap * sizeof *m->type);
    }
    m->piece[id] = xmalloc(sn + 1);
    memcpy(m->piece[id], s, sn);
    m->piece[id][sn] = 0;
    m->len[id] = (uint32_t)sn;
    m->score[id] = score;
    m->type[id] = (uint8_t)type;
    m->p.n = id + 1;
    return 0;
}

static int read_trainer(spm_model *m, const pb_field *outer, char *err, size_t errlen) {
    pb r = {outer->d, outer->d + outer->n};
    pb_field f;
    const char *why = NULL;
    int rc;
    while ((rc = pb_next(&r, &f, &why)) == 1) {
        int bad = 0;
        if (f.field == 3) {
            bad = int32_field(&f, &m->model_type, err, errlen, "trainer_spec.model_type");
        } else if (f.field == 35) {
            bad = wire_is(&f, WT_VARINT, err, errlen, "trainer_spec.byte_fallback");
            m->p.byte_fallback = f.v != 0;
        } else if (f.field == 40) bad = int32_field(&f, &m->p.unk, err, errlen, "trainer_spec.unk_id");
        else if (f.field == 41) bad = int32_field(&f, &m->p.bos, err, errlen, "trainer_spec.bos_id");
        else if (f.field == 42) bad = int32_field(&f, &m->p.eos, err, errlen, "trainer_spec.eos_id");
        else if (f.field == 43) bad = int32_field(&f, &m->p.pad, err, errlen, "trainer_spec.pad_id");
        if (bad) return -1;
    }
    if (rc < 0) { tok_fail(err, errlen, "trainer_spec: %s", why); return -1; }
    return 0;
}

static int read_normalizer(spm_model *m, const pb_field *outer, char *err, size_t errlen) {
    pb r = {outer->d, outer->d + outer->n};
    pb_field f;
    const char *why = NULL;
    int rc;
    while ((rc = pb_next(&r, &f, &why)) == 1) {
        if (f.field == 2) {
            if (wire_is(&f, WT_LEN, err, errlen, "normalizer_spec.precompiled_charsmap")) return -1;
            m->p.charsmap = f.d;
            m->p.charsmap_len = f.n;
        } else if (f.field == 3) {
            if (wire_is(&f, WT_VARINT, err, errlen, "normalizer_spec.add_dummy_prefix")) return -1;
            m->p.add_dummy_prefix = f.v != 0;
        }
    }
    if (rc < 0) { tok_fail(err, errlen, "normalizer_spec: %s", why); return -1; }
    return 0;
}

static int read_model(spm_model *m, const unsigned char *d, size_t n, char *err, size_t errlen) {
    pb r = {d, d + n};
    pb_field f;
    const char *why = NULL;
    int rc;
    while ((rc = pb_next(&r, &f, &why)) == 1) {
        int bad = 0;
        if (f.field == 1) bad = wire_is(&f, WT_LEN, err, errlen, "pieces") || read_piece(m, &f, err, errlen);
        else if (f.field == 2) bad = wire_is(&f, WT_LEN, err, errlen, "trainer_spec") || read_trainer(m, &f, err, errlen);
        else if (f.field == 3) bad = wire_is(&f, WT_LEN, err, errlen, "normalizer_spec") || read_normalizer(m, &f, err, errlen);
        if (bad) return -1;
    }
    if (rc < 0) { tok_fail(err, errlen, "%s", why); return -1; }
    return 0;
}

/* The ids the trainer spec names must be pieces (pad may be -1, unk must exist). */
static int check_ids(const spm_model *m, char *err, size_t errlen) {
    const struct { const char *name; int id, optional; } ids[] = {
        {"unk_id", m->p.unk, 0}, {"bos_id", m->p.bos, 1}, {"eos_id", m->p.eos, 1}, {"pad_id", m->p.pad, 1}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        if (ids[i].optional && ids[i].id == -1) continue;
        if (ids[i].id < 0 || ids[i].id >= m->p.n) {
            tok_fail(err, errlen, "trainer_spec.%s = %d is not a piece id (0..%d)", ids[i].name, ids[i].id, m->p.n - 1);
            return -1;
        }
    }
    return 0;
}

static unsigned char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    cli_input_note(path);
    size_t cap = 1 << 16, n = 0, got;
    unsigned char *buf = xmalloc(cap);
    while ((got = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += got) == cap) buf = xrealloc(buf, cap *= 2);
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(buf); return NULL; }
    *len = n;
    return buf;
}

tok *tok_load_spm_model(const char *path, char *err, size_t errlen) {
    size_t n;
    unsigned char *d = read_all(path, &n);
    if (!d) return tok_fail(err, errlen, "%s: cannot read", path);
    spm_model m = {0};
    m.p.unk = 0, m.p.bos = 1, m.p.eos = 2, m.p.pad = -1;     /* the proto's defaults */
    m.p.add_dummy_prefix = 1;
    m.model_type = 1;
    tok *t = NULL;
    char why[512] = "";
    if (read_model(&m, d, n, why, sizeof why) == 0) {
        m.p.piece = (const char *const *)m.piece, m.p.len = m.len, m.p.score = m.score, m.p.type = m.type;
        if (m.p.n < 1) snprintf(why, sizeof why, "no pieces (not a SentencePiece model)");
        else if (m.model_type != 1 && m.model_type != 2)
            snprintf(why, sizeof why, "trainer_spec.model_type %d is not supported (1 unigram, 2 BPE)", m.model_type);
        else if (check_ids(&m, why, sizeof why) == 0)
            t = m.model_type == 2 ? tok_bpe_from_spm(&m.p, path, why, sizeof why)
                                  : tok_unigram_from_spm(&m.p, path, why, sizeof why);
    }
    for (int i = 0; i < m.p.n; i++) free(m.piece[i]);
    free(m.piece);
    free(m.len);
    free(m.score);
    free(m.type);
    free(d);
    if (!t) {
        if (!strncmp(why, path, strlen(path))) tok_fail(err, errlen, "%s", why);
        else tok_fail(err, errlen, "%s: %s", path, why);
    }
    return t;
}

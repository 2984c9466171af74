/* stwrite: safetensors writer (see stwrite.h). The header is built with jansson so names and
 * metadata are escaped correctly; keys are sorted, which is the order Hugging Face's writer uses
 * for tensors of one dtype. */
#include "stwrite.h"
#include "core/util.h"
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *name;
    const float *data;
    int ndim;
    int64_t shape[4];
    size_t n;
} st_entry;

struct st_writer {
    st_entry *e;
    int n, cap;
    json_t *meta;
    char bad[256];   /* the first tensor that could not be added, reported by st_write_finish */
};

st_writer *st_write_new(void) {
    st_writer *w = xcalloc(1, sizeof *w);
    w->meta = json_object();
    json_object_set_new(w->meta, "format", json_string("pt"));
    return w;
}

void st_write_add_f32(st_writer *w, const char *name, const float *data, int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > 4) {
        if (!w->bad[0]) snprintf(w->bad, sizeof w->bad, "st_write: tensor %s has %d dimensions", name, ndim);
        return;
    }
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 64;
        w->e = xrealloc(w->e, (size_t)w->cap * sizeof *w->e);
    }
    st_entry *e = &w->e[w->n++];
    e->name = xstrdup(name);
    e->data = data;
    e->ndim = ndim;
    e->n = 1;
    for (int i = 0; i < ndim; i++) {
        e->shape[i] = shape[i];
        e->n *= (size_t)shape[i];
    }
}

void st_write_meta(st_writer *w, const char *key, const char *value) {
    json_object_set_new(w->meta, key, json_string(value));
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const st_entry *)a)->name, ((const st_entry *)b)->name);
}

/* Header JSON: tensors in sorted order with contiguous data offsets, then padding to 8 bytes;
 * NULL with the message when two tensors have one name. */
static char *build_header(st_writer *w, uint64_t *hlen, char *err, size_t errlen) {
    qsort(w->e, (size_t)w->n, sizeof *w->e, cmp_entry);
    json_t *h = json_object();
    json_object_set(h, "__metadata__", w->meta);
    uint64_t off = 0;
    for (int i = 0; i < w->n; i++) {
        st_entry *e = &w->e[i];
        if (i > 0 && strcmp(e->name, w->e[i - 1].name) == 0) {
            snprintf(err, errlen, "st_write: duplicate tensor name %s", e->name);
            json_decref(h);
            return NULL;
        }
        json_t *shape = json_array();
        for (int d = 0; d < e->ndim; d++) json_array_append_new(shape, json_integer(e->shape[d]));
        uint64_t end = off + 4 * (uint64_t)e->n;
        json_object_set_new(h, e->name, json_pack("{s:s,s:o,s:[I,I]}", "dtype", "F32", "shape", shape,
                                                   "data_offsets", (json_int_t)off, (json_int_t)end));
        off = end;
    }
    char *s = json_dumps(h, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(h);
    size_t len = strlen(s), padded = (len + 7) / 8 * 8;
    s = xrealloc(s, padded + 1);
    memset(s + len, ' ', padded - len);
    s[padded] = 0;
    *hlen = padded;
    return s;
}

static void writer_free(st_writer *w) {
    for (int i = 0; i < w->n; i++) free(w->e[i].name);
    free(w->e);
    json_decref(w->meta);
    free(w);
}

/* The file's bytes to f (a temporary file or stdout); nonzero on a write error. */
static int write_all(const st_writer *w, FILE *f, const char *hdr, uint64_t hlen) {
    unsigned char lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)(hlen >> (8 * i));
    int bad = fwrite(lenb, 1, 8, f) != 8 || fwrite(hdr, 1, hlen, f) != hlen;
    for (int i = 0; i < w->n && !bad; i++)
        bad = fwrite(w->e[i].data, sizeof(float), w->e[i].n, f) != w->e[i].n;
    return bad;
}

/* Through the temporary-name protocol; path "-" is stdout. */
static int write_file(const st_writer *w, const char *path, const char *hdr, uint64_t hlen, char *err, size_t errlen) {
    const char *tmp;
    int rc = cli_out_begin_err(path, &tmp, err, errlen);
    if (rc) return rc;
    FILE *f = tmp ? fopen(tmp, "wb") : stdout;
    if (!f) {
        snprintf(err, errlen, "cannot create: %s", strerror(errno));
        return UTIL_ERR_DATA;
    }
    int bad = write_all(w, f, hdr, hlen);
    if (tmp) bad |= fclose(f) != 0;
    else bad |= fflush(f) != 0;
    if (bad) {
        snprintf(err, errlen, "write error: %s", strerror(errno));
        return UTIL_ERR_DATA;
    }
    return tmp ? cli_out_commit_err(path, err, errlen) : 0;
}

/* Floats are written as little-endian bytes; on a big-endian host they would need swapping. */
int st_write_finish(st_writer *w, const char *path, char *err, size_t errlen) {
    int rc = 0;
    uint64_t hlen;
    char *hdr = NULL;
    if (w->bad[0]) {
        snprintf(err, errlen, "%s", w->bad);
        rc = UTIL_ERR_USAGE;
    } else if (!(hdr = build_header(w, &hlen, err, errlen))) {
        rc = UTIL_ERR_USAGE;
    } else {
        rc = write_file(w, path, hdr, hlen, err, errlen);
    }
    free(hdr);
    writer_free(w);
    return rc;
}

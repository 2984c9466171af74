/* stwrite: safetensors writer (see stwrite.h). The header is built with jansson so names and
 * metadata are escaped correctly; keys are sorted, which is the order Hugging Face's writer uses
 * for tensors of one dtype. */
#include "stwrite.h"
#include "cli/cli.h"
#include <errno.h>
#include <jansson.h>
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
};

st_writer *st_write_new(void) {
    st_writer *w = xcalloc(1, sizeof *w);
    w->meta = json_object();
    json_object_set_new(w->meta, "format", json_string("pt"));
    return w;
}

void st_write_add_f32(st_writer *w, const char *name, const float *data, int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > 4) die_usage("st_write: tensor %s has %d dimensions", name, ndim);
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

/* Header JSON: tensors in sorted order with contiguous data offsets, then padding to 8 bytes. */
static char *build_header(st_writer *w, uint64_t *hlen) {
    qsort(w->e, (size_t)w->n, sizeof *w->e, cmp_entry);
    json_t *h = json_object();
    json_object_set(h, "__metadata__", w->meta);
    uint64_t off = 0;
    for (int i = 0; i < w->n; i++) {
        st_entry *e = &w->e[i];
        if (i > 0 && strcmp(e->name, w->e[i - 1].name) == 0)
            die_usage("st_write: duplicate tensor name %s", e->name);
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

/* Floats are written as little-endian bytes; on a big-endian host they would need swapping. */
void st_write_finish(st_writer *w, const char *path) {
    uint64_t hlen;
    char *hdr = build_header(w, &hlen);
    const char *tmp = cli_out_begin(path);
    FILE *f = tmp ? fopen(tmp, "wb") : stdout;
    if (!f) die_data(path, "cannot create: %s", strerror(errno));
    unsigned char lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)(hlen >> (8 * i));
    int bad = fwrite(lenb, 1, 8, f) != 8 || fwrite(hdr, 1, hlen, f) != hlen;
    for (int i = 0; i < w->n && !bad; i++)
        bad = fwrite(w->e[i].data, sizeof(float), w->e[i].n, f) != w->e[i].n;
    if (tmp) bad |= fclose(f) != 0;
    else bad |= fflush(f) != 0;
    if (bad) die_data(path, "write error: %s", strerror(errno));
    if (tmp) cli_out_commit(path);
    free(hdr);
    for (int i = 0; i < w->n; i++) free(w->e[i].name);
    free(w->e);
    json_decref(w->meta);
    free(w);
}

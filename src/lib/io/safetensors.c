/* safetensors: the .safetensors reader (see safetensors.h). */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "core/half.h"

/* The reference reader refuses headers above this size (safetensors/src/tensor.rs). */
#define ST_MAX_HEADER 100000000ULL

typedef struct {
    char *path;
    unsigned char *map;
    size_t size;
} st_file;

struct st_set {
    st_file *files;
    int nfiles;
    st_tensor *t;
    int n, cap;
    void **owned;              /* converted buffers */
    int nowned;
};


/* Element size of a dtype string; 0 for unknown. Sub-byte formats (F6, F4) are refused: no
 * model here stores them and their byte counts are not whole elements. */
static size_t dtype_size(const char *d) {
    static const struct { const char *n; size_t s; } tab[] = {
        {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1},
        {"F8_E4M3FNUZ", 1}, {"F8_E5M2FNUZ", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2},
        {"I32", 4}, {"U32", 4}, {"F32", 4}, {"I64", 8}, {"U64", 8}, {"F64", 8}, {"C64", 8}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(tab[i].n, d)) return tab[i].s;
    return 0;
}

static int map_file(st_file *f, const char *path, char *err, size_t errlen) {
    f->path = xstrdup(path);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return cli_fail_msg(err, errlen, path, "cannot open: %s", strerror(errno));
    cli_input_note(path);
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return cli_fail_msg(err, errlen, path, "not a regular file");
    }
    f->size = (size_t)sb.st_size;
    if (f->size == 0) {
        close(fd);
        return cli_fail_msg(err, errlen, path, "empty file (not safetensors)");
    }
    f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        return cli_fail_msg(err, errlen, path, "cannot map: %s", strerror(errno));
    }
    return 0;
}

static int parse_shape(json_t *shape, st_tensor *t) {
    if (!json_is_array(shape) || json_array_size(shape) > ST_MAX_RANK) return -1;
    t->rank = (int)json_array_size(shape);
    t->numel = 1;
    for (int i = 0; i < t->rank; i++) {
        json_t *d = json_array_get(shape, (size_t)i);
        if (!json_is_integer(d) || json_integer_value(d) < 0) return -1;
        t->shape[i] = json_integer_value(d);
        if (t->shape[i] && t->numel > INT64_MAX / t->shape[i]) return -1;
        t->numel *= t->shape[i];
    }
    return 0;
}

/* One header entry → tensor; offsets checked against the buffer and the dtype × shape size. */
static int parse_entry(const char *path, const char *name, json_t *v, const unsigned char *buf,
                       size_t buflen, st_tensor *t, char *err, size_t errlen) {
    json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape");
    json_t *off = json_object_get(v, "data_offsets");
    if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(off) || json_array_size(off) != 2)
        return cli_fail_msg(err, errlen, path, "header entry '%s' lacks dtype, shape or data_offsets", name);
    size_t es = dtype_size(json_string_value(dt));
    if (!es) return cli_fail_msg(err, errlen, path, "tensor '%s': unknown dtype '%s'", name, json_string_value(dt));
    if (parse_shape(sh, t) < 0) return cli_fail_msg(err, errlen, path, "tensor '%s': bad shape", name);
    json_t *b = json_array_get(off, 0), *e = json_array_get(off, 1);
    if (!json_is_integer(b) || !json_is_integer(e) || json_integer_value(b) < 0 ||
        json_integer_value(e) < json_integer_value(b) || (uint64_t)json_integer_value(e) > buflen)
        return cli_fail_msg(err, errlen, path, "tensor '%s': data_offsets outside the %zu-byte data buffer (truncated file?)",
                    name, buflen);
    size_t nb = (size_t)(json_integer_value(e) - json_integer_value(b));
    if ((uint64_t)t->numel > SIZE_MAX / es || nb != (size_t)t->numel * es)
        return cli_fail_msg(err, errlen, path, "tensor '%s': %zu bytes for %lld elements of %s", name, nb,
                    (long long)t->numel, json_string_value(dt));
    t->name = xstrdup(name);
    snprintf(t->dtype, sizeof t->dtype, "%s", json_string_value(dt));
    t->data = buf + json_integer_value(b);
    t->nbytes = nb;
    return 0;
}

static int cmp_data(const void *a, const void *b) {
    const st_tensor *x = *(st_tensor *const *)a, *y = *(st_tensor *const *)b;
    return x->data < y->data ? -1 : x->data > y->data;
}

/* The reference reader requires the tensors t[first..end-1] to tile the buffer with no gap or
 * overlap. t is NULL when no file so far had a tensor (a header of __metadata__ alone). */
static int check_tiling(const char *path, st_tensor *t, int first, int end, size_t buflen, const unsigned char *buf,
                        char *err, size_t errlen) {
    int n = end - first;
    st_tensor **p = xmalloc(sizeof *p * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) p[i] = &t[first + i];
    qsort(p, (size_t)n, sizeof *p, cmp_data);
    size_t at = 0;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if ((size_t)(p[i]->data - buf) != at)
            rc = cli_fail_msg(err, errlen, path, "tensor '%s': data does not follow the previous tensor (gap or overlap)",
                      p[i]->name);
        at += p[i]->nbytes;
    }
    if (!rc && at != buflen)
        rc = cli_fail_msg(err, errlen, path, "data buffer has %zu bytes, tensors cover %zu", buflen, at);
    free(p);
    return rc;
}

static void push(st_set *s, const st_tensor *t) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->t = xrealloc(s->t, sizeof *s->t * (size_t)s->cap);
    }
    s->t[s->n++] = *t;
}

/* Header of file fi: 8-byte little-endian length N, N bytes of JSON, then the data buffer. */
static int read_header(st_set *s, int fi, char *err, size_t errlen) {
    st_file *f = &s->files[fi];
    if (f->size < 8) return cli_fail_msg(err, errlen, f->path, "truncated: shorter than the 8-byte header length");
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->map[i];
    if (n > ST_MAX_HEADER)
        return cli_fail_msg(err, errlen, f->path, "header length %llu exceeds the limit of %llu bytes (not safetensors?)",
                    (unsigned long long)n, ST_MAX_HEADER);
    if (n + 8 > f->size)
        return cli_fail_msg(err, errlen, f->path, "truncated: header length %llu but the file has %zu bytes",
                    (unsigned long long)n, f->size);
    json_error_t je;
    json_t *h = json_loadb((const char *)f->map + 8, (size_t)n, 0, &je);
    if (!h || !json_is_object(h)) {
        json_decref(h);
        return cli_fail_msg(err, errlen, f->path, "header is not a JSON object (%s)", je.text);
    }
    const unsigned char *buf = f->map + 8 + n;
    size_t buflen = f->size - 8 - (size_t)n;
    int first = s->n, rc = 0;
    const char *key;
    json_t *v;
    json_object_foreach(h, key, v) {
        if (!strcmp(key, "__metadata__")) continue;
        if (st_find(s, key)) {
            rc = cli_fail_msg(err, errlen, f->path, "tensor '%s' appears twice", key);
            break;
        }
        st_tensor t = {0};
        t.file = fi;
        if ((rc = parse_entry(f->path, key, v, buf, buflen, &t, err, errlen))) break;
        push(s, &t);
    }
    json_decref(h);
    if (!rc) rc = check_tiling(f->path, s->t, first, s->n, buflen, buf, err, errlen);
    return rc;
}

static int add_file(st_set *s, const char *path, char *err, size_t errlen) {
    s->files = xrealloc(s->files, sizeof *s->files * (size_t)(s->nfiles + 1));
    memset(&s->files[s->nfiles], 0, sizeof *s->files);
    int fi = s->nfiles++;
    if (map_file(&s->files[fi], path, err, errlen)) return -1;
    return read_header(s, fi, err, errlen);
}

st_set *st_open_file(const char *path, char *err, size_t errlen) {
    st_set *s = xcalloc(1, sizeof *s);
    if (add_file(s, path, err, errlen)) {
        st_close(s);
        return NULL;
    }
    return s;
}

static int file_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Sharded: open every distinct shard the weight_map names, then check each mapped tensor is in
 * the shard the index says. */
static int open_index(st_set *s, const char *dir, const char *index, char *err, size_t errlen) {
    json_error_t je;
    json_t *root = json_load_file(index, 0, &je);
    json_t *wm = root ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(wm)) {
        json_decref(root);
        return cli_fail_msg(err, errlen, index, "no weight_map object (%s)", root ? "missing" : je.text);
    }
    int rc = 0;
    const char *key;
    json_t *v;
    char path[4096];
    json_object_foreach(wm, key, v) {
        if (!json_is_string(v) || strchr(json_string_value(v), '/')) {
            rc = cli_fail_msg(err, errlen, index, "weight_map entry '%s' is not a shard file name", key);
            break;
        }
        snprintf(path, sizeof path, "%s/%s", dir, json_string_value(v));
        int seen = 0;
        for (int i = 0; i < s->nfiles; i++) seen |= !strcmp(s->files[i].path, path);
        if (!seen && (rc = add_file(s, path, err, errlen))) break;
    }
    json_object_foreach(wm, key, v) {
        if (rc) break;
        const st_tensor *t = st_find(s, key);
        snprintf(path, sizeof path, "%s/%s", dir, json_string_value(v));
        if (!t || strcmp(s->files[t->file].path, path))
            rc = cli_fail_msg(err, errlen, index, "tensor '%s' is not in shard %s", key, json_string_value(v));
    }
    json_decref(root);
    return rc;
}

st_set *st_open_dir(const char *dir, char *err, size_t errlen) {
    char index[4096], single[4096];
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    snprintf(single, sizeof single, "%s/model.safetensors", dir);
    st_set *s = xcalloc(1, sizeof *s);
    int rc;
    if (file_exists(index))
        rc = open_index(s, dir, index, err, errlen);
    else if (file_exists(single))
        rc = add_file(s, single, err, errlen);
    else
        rc = cli_fail_msg(err, errlen, dir, "no model.safetensors or model.safetensors.index.json "
                                    "(pytorch_model.bin pickles cannot be read)");
    if (rc) {
        st_close(s);
        return NULL;
    }
    return s;
}

void st_close(st_set *s) {
    if (!s) return;
    for (int i = 0; i < s->nfiles; i++) {
        if (s->files[i].map) munmap(s->files[i].map, s->files[i].size);
        free(s->files[i].path);
    }
    for (int i = 0; i < s->n; i++) free(s->t[i].name);
    for (int i = 0; i < s->nowned; i++) free(s->owned[i]);
    free(s->owned);
    free(s->files);
    free(s->t);
    free(s);
}

int st_count(const st_set *s) { return s->n; }
const st_tensor *st_at(const st_set *s, int i) { return &s->t[i]; }
int st_nfiles(const st_set *s) { return s->nfiles; }
const char *st_file_path(const st_set *s, int i) { return s->files[i].path; }

const st_tensor *st_find(const st_set *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].name, name)) return &s->t[i];
    return NULL;
}

const float *st_f32(st_set *s, const st_tensor *t, char *err, size_t errlen) {
    int f32 = !strcmp(t->dtype, "F32"), f16 = !strcmp(t->dtype, "F16"), bf16 = !strcmp(t->dtype, "BF16");
    if (!f32 && !f16 && !bf16) {
        cli_fail_msg(err, errlen, s->files[t->file].path, "tensor '%s': unsupported dtype %s (need F32, F16 or BF16)",
             t->name, t->dtype);
        return NULL;
    }
    /* in place: the file is little-endian like every host this builds on (x86-64, arm64) */
    if (f32 && ((uintptr_t)t->data % sizeof(float)) == 0) return (const float *)(const void *)t->data;
    float *out = xmalloc(sizeof *out * (size_t)(t->numel ? t->numel : 1));
    if (f32) {
        memcpy(out, t->data, t->nbytes);
    } else {
        for (int64_t i = 0; i < t->numel; i++) {
            uint16_t h = (uint16_t)(t->data[2 * i] | t->data[2 * i + 1] << 8);
            out[i] = bf16 ? half_bf16_to_f32(h) : half_f16_to_f32(h);
        }
    }
    s->owned = xrealloc(s->owned, sizeof *s->owned * (size_t)(s->nowned + 1));
    s->owned[s->nowned++] = out;
    return out;
}

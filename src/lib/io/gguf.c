/* gguf: the GGUF container reader (gguf.h): header, metadata, tensor infos, and conversion of
 * F32/F16/BF16/Q8_0 tensors to float32. The mapping of architectures to a model is
 * model/model_gguf.c. */
#include "gguf.h"
#include "core/util.h"
#include "core/half.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NEST 4

/* ---- ggml tensor types: name, elements per block, bytes per block (0 = size unknown here) ---- */
typedef struct { const char *name; uint32_t blck; uint32_t size; } ggml_type_info;
static const ggml_type_info TYPES[] = {
    [0] = {"F32", 1, 4},      [1] = {"F16", 1, 2},      [2] = {"Q4_0", 32, 18},
    [3] = {"Q4_1", 32, 20},   [6] = {"Q5_0", 32, 22},   [7] = {"Q5_1", 32, 24},
    [8] = {"Q8_0", 32, 34},   [9] = {"Q8_1", 32, 36},   [10] = {"Q2_K", 256, 84},
    [11] = {"Q3_K", 256, 110}, [12] = {"Q4_K", 256, 144}, [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210}, [15] = {"Q8_K", 256, 292}, [16] = {"IQ2_XXS", 256, 0},
    [17] = {"IQ2_XS", 256, 0}, [18] = {"IQ3_XXS", 256, 0}, [19] = {"IQ1_S", 256, 0},
    [20] = {"IQ4_NL", 32, 18}, [21] = {"IQ3_S", 256, 0},  [22] = {"IQ2_S", 256, 0},
    [23] = {"IQ4_XS", 256, 0}, [24] = {"I8", 1, 1},       [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},     [27] = {"I64", 1, 8},     [28] = {"F64", 1, 8},
    [29] = {"IQ1_M", 256, 0}, [30] = {"BF16", 1, 2},
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

const char *gguf_type_name(uint32_t t)
{
    return t < N_TYPES && TYPES[t].name ? TYPES[t].name : "unknown";
}

/* ---- bounds-checked cursor over the mapping ---- */
typedef struct {
    const uint8_t *p;
    size_t pos, size;
    uint32_t version;
    char *err;
    size_t errlen;
} cursor;

static int fail(cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(cursor *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static size_t left(const cursor *c) { return c->size - c->pos; }

static int take(cursor *c, void *dst, size_t n, const char *what)
{
    if (n > left(c))
        return fail(c, "truncated GGUF file: %s at byte %zu runs past the end (%zu bytes)",
                    what, c->pos, c->size);
    memcpy(dst, c->p + c->pos, n);
    c->pos += n;
    return 0;
}

static int rd_u32(cursor *c, uint32_t *v, const char *what) { return take(c, v, 4, what); }

/* Counts and lengths are uint64 since version 2 (version 1 used uint32; rejected at open). */
static int rd_u64(cursor *c, uint64_t *v, const char *what) { return take(c, v, 8, what); }

/* A GGUF string: uint64 length then bytes (no NUL). Returns a malloc'd NUL-terminated copy. */
static int rd_str(cursor *c, char **out, const char *what)
{
    uint64_t n = 0;
    if (rd_u64(c, &n, what) < 0)
        return -1;
    if (n > left(c))
        return fail(c, "%s length %llu at byte %zu exceeds the file", what,
                    (unsigned long long)n, c->pos);
    *out = malloc(n + 1);
    if (!*out)
        return fail(c, "out of memory");
    memcpy(*out, c->p + c->pos, n);
    (*out)[n] = 0;
    c->pos += n;
    return 0;
}

static size_t scalar_size(uint32_t t)
{
    static const size_t sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t <= GGUF_F64 ? sz[t] : 0;
}

/* Skip one value of type t (recursing into nested arrays), checking every length. */
static int skip_value(cursor *c, uint32_t t, int depth, const char *key)
{
    if (t == GGUF_STRING) {
        uint64_t n = 0;
        if (rd_u64(c, &n, "string length") < 0)
            return -1;
        if (n > left(c))
            return fail(c, "string in key '%s' has length %llu beyond the end of the file", key,
                        (unsigned long long)n);
        c->pos += n;
        return 0;
    }
    if (t == GGUF_ARRAY) {
        uint32_t et = 0;
        uint64_t n = 0;
        if (depth >= GGUF_MAX_NEST)
            return fail(c, "key '%s': arrays nested deeper than %d", key, GGUF_MAX_NEST);
        if (rd_u32(c, &et, "array type") < 0 || rd_u64(c, &n, "array length") < 0)
            return -1;
        size_t es = scalar_size(et);
        if (es) {
            if (n > left(c) / es)
                return fail(c, "key '%s': array of %llu elements overflows the file", key,
                            (unsigned long long)n);
            c->pos += n * es;
            return 0;
        }
        if (et != GGUF_STRING && et != GGUF_ARRAY)
            return fail(c, "key '%s': unknown array element type %u", key, et);
        if (n > left(c) / 8)
            return fail(c, "key '%s': array of %llu elements overflows the file", key,
                        (unsigned long long)n);
        for (uint64_t i = 0; i < n; i++)
            if (skip_value(c, et, depth + 1, key) < 0)
                return -1;
        return 0;
    }
    size_t es = scalar_size(t);
    if (!es)
        return fail(c, "key '%s': unknown value type %u", key, t);
    if (es > left(c))
        return fail(c, "truncated GGUF file: value of key '%s' runs past the end", key);
    c->pos += es;
    return 0;
}

static int read_kv(cursor *c, gguf_kv *kv)
{
    char *key;
    if (rd_str(c, &key, "metadata key") < 0)
        return -1;
    kv->key = key;
    kv->n = 1;
    if (rd_u32(c, &kv->type, "metadata value type") < 0)
        return -1;
    size_t start = c->pos;
    if (kv->type == GGUF_ARRAY) {
        if (rd_u32(c, &kv->arr_type, "array type") < 0 || rd_u64(c, &kv->n, "array length") < 0)
            return -1;
        c->pos = start;
        kv->data = c->p + start + 12;
    } else {
        kv->data = c->p + start;
    }
    if (skip_value(c, kv->type, 0, key) < 0)
        return -1;
    /* String arrays: index the element offsets once so lookups are O(1). */
    if (kv->type == GGUF_ARRAY && kv->arr_type == GGUF_STRING) {
        kv->str_off = malloc((kv->n ? kv->n : 1) * sizeof *kv->str_off);
        if (!kv->str_off)
            return fail(c, "out of memory");
        uint64_t off = 0, len;
        for (uint64_t i = 0; i < kv->n; i++) {
            kv->str_off[i] = off;
            memcpy(&len, kv->data + off, 8);
            off += 8 + len;
        }
    }
    return 0;
}

static int read_tensor_info(cursor *c, gguf_tensor *t)
{
    char *name;
    if (rd_str(c, &name, "tensor name") < 0)
        return -1;
    t->name = name;
    if (rd_u32(c, &t->n_dims, "tensor dimension count") < 0)
        return -1;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return fail(c, "tensor '%s' has %u dimensions (1..%d allowed)", name, t->n_dims,
                    GGUF_MAX_DIMS);
    t->nelem = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++)
        t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (rd_u64(c, &t->ne[d], "tensor dimension") < 0)
            return -1;
        if (t->ne[d] == 0 || t->ne[d] > (UINT64_MAX >> 2) / t->nelem)
            return fail(c, "tensor '%s' has an invalid or overflowing shape", name);
        t->nelem *= t->ne[d];
    }
    if (rd_u32(c, &t->type, "tensor type") < 0 || rd_u64(c, &t->offset, "tensor offset") < 0)
        return -1;
    if (t->type >= N_TYPES || !TYPES[t->type].name)
        return fail(c, "tensor '%s' has unknown ggml type %u", name, t->type);
    const ggml_type_info *ti = &TYPES[t->type];
    if (t->ne[0] % ti->blck)
        return fail(c, "tensor '%s': row length %llu is not a multiple of the %s block size %u",
                    name, (unsigned long long)t->ne[0], ti->name, ti->blck);
    t->nbytes = t->nelem / ti->blck * ti->size;
    return 0;
}

static int check_tensor_extent(cursor *c, const gguf_file *g, const gguf_tensor *t)
{
    if (t->offset % g->alignment)
        return fail(c, "tensor '%s' offset %llu is not a multiple of the alignment %llu", t->name,
                    (unsigned long long)t->offset, (unsigned long long)g->alignment);
    uint64_t room = g->size - g->data_off;
    if (t->offset > room || t->nbytes > room - t->offset)
        return fail(c, "tensor '%s' (offset %llu, %llu bytes) lies beyond the end of the file",
                    t->name, (unsigned long long)t->offset, (unsigned long long)t->nbytes);
    return 0;
}

static int parse(gguf_file *g, cursor *c)
{
    char magic[4];
    if (take(c, magic, 4, "magic") < 0)
        return -1;
    if (memcmp(magic, "GGUF", 4))
        return fail(c, "not a GGUF file (bad magic)");
    if (rd_u32(c, &g->version, "version") < 0)
        return -1;
    if (g->version == 1 || g->version > 3)
        return fail(c, "unsupported GGUF version %u (2 and 3 are supported)%s", g->version,
                    g->version >= 0x01000000u ? "; big-endian files are not supported" : "");
    if (g->version == 0)
        return fail(c, "unsupported GGUF version 0");
    if (rd_u64(c, &g->n_tensors, "tensor count") < 0 || rd_u64(c, &g->n_kv, "metadata count") < 0)
        return -1;
    /* The smallest key/value takes 13 bytes and the smallest tensor info 32: larger counts
     * cannot fit in the file, so reject them before allocating. */
    if (g->n_kv > left(c) / 13)
        return fail(c, "metadata count %llu exceeds what the file can hold",
                    (unsigned long long)g->n_kv);
    if (g->n_tensors > left(c) / 32)
        return fail(c, "tensor count %llu exceeds what the file can hold",
                    (unsigned long long)g->n_tensors);
    g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors)
        return fail(c, "out of memory");
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (read_kv(c, &g->kv[i]) < 0)
            return -1;
    g->alignment = 32;
    const gguf_kv *al = gguf_find(g, "general.alignment");
    if (al) {
        int64_t a;
        if (gguf_get_i64(g, "general.alignment", &a) < 0 || a <= 0 || (a & (a - 1)))
            return fail(c, "general.alignment must be a positive power of two");
        g->alignment = (uint64_t)a;
    }
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (read_tensor_info(c, &g->tensors[i]) < 0)
            return -1;
    g->data_off = (c->pos + g->alignment - 1) / g->alignment * g->alignment;
    if (g->n_tensors && g->data_off > g->size)
        return fail(c, "truncated GGUF file: the data section starts beyond the end");
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (check_tensor_extent(c, g, &g->tensors[i]) < 0)
            return -1;
    return 0;
}

gguf_file *gguf_open(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return NULL;
    }
    cli_input_note(path);
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "not a regular file");
        close(fd);
        return NULL;
    }
    gguf_file *g = calloc(1, sizeof *g);
    g->size = (size_t)st.st_size;
    if (g->size) {
        void *m = mmap(NULL, g->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            snprintf(err, errlen, "cannot map: %s", strerror(errno));
            close(fd);
            free(g);
            return NULL;
        }
        g->map = m;
    }
    close(fd);
    cursor c = {g->map, 0, g->size, 0, err, errlen};
    if (parse(g, &c) < 0) {
        gguf_close(g);
        return NULL;
    }
    return g;
}

void gguf_close(gguf_file *g)
{
    if (!g)
        return;
    for (uint64_t i = 0; g->kv && i < g->n_kv; i++) {
        free((char *)g->kv[i].key);
        free(g->kv[i].str_off);
    }
    for (uint64_t i = 0; g->tensors && i < g->n_tensors; i++)
        free((char *)g->tensors[i].name);
    free(g->kv);
    free(g->tensors);
    if (g->map)
        munmap((void *)g->map, g->size);
    free(g);
}

/* ---- metadata access ---- */
const gguf_kv *gguf_find(const gguf_file *g, const char *key)
{
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (g->kv[i].key && strcmp(g->kv[i].key, key) == 0)
            return &g->kv[i];
    return NULL;
}

/* Scalar at p of type t as a double (unaligned reads through memcpy). -1: not a number. */
static int num_at(const uint8_t *p, uint32_t t, double *d)
{
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
            float f32; uint64_t u64; int64_t i64; double f64; } v;
    size_t es = scalar_size(t);
    if (!es || t == GGUF_STRING || t == GGUF_ARRAY)
        return -1;
    memcpy(&v, p, es);
    switch (t) {
    case GGUF_U8: case GGUF_BOOL: *d = v.u8; break;
    case GGUF_I8: *d = v.i8; break;
    case GGUF_U16: *d = v.u16; break;
    case GGUF_I16: *d = v.i16; break;
    case GGUF_U32: *d = v.u32; break;
    case GGUF_I32: *d = v.i32; break;
    case GGUF_U64: *d = (double)v.u64; break;
    case GGUF_I64: *d = (double)v.i64; break;
    case GGUF_F32: *d = v.f32; break;
    case GGUF_F64: *d = v.f64; break;
    default: return -1;
    }
    return 0;
}

/* Integer at p of type t: 64-bit integers exactly, floats only through the checked conversion.
 * -1: not a number; -2: not an integer in int64 (why says so, with the value). */
static int int_at(const uint8_t *p, uint32_t t, int64_t *out, char *why, size_t whylen)
{
    double d;
    if (t == GGUF_I64 || t == GGUF_U64) {
        uint64_t u;
        memcpy(&u, p, 8);
        if (t == GGUF_U64 && u > INT64_MAX) {
            snprintf(why, whylen, "%llu is out of range", (unsigned long long)u);
            return -2;
        }
        memcpy(out, &u, 8);
        return 0;
    }
    if (num_at(p, t, &d) < 0)
        return -1;
    long long v;
    if (cli_num_to_ll(d, INT64_MIN, INT64_MAX, &v, why, whylen) < 0)
        return -2;
    *out = v;
    return 0;
}

int gguf_get_int(const gguf_file *g, const char *key, int64_t *out, char *why, size_t whylen)
{
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv) {
        snprintf(why, whylen, "missing");
        return -1;
    }
    int r = int_at(kv->data, kv->type, out, why, whylen);
    if (r == -1)
        snprintf(why, whylen, "not a number");
    return r;
}

int gguf_get_i64(const gguf_file *g, const char *key, int64_t *out)
{
    char why[96];
    return gguf_get_int(g, key, out, why, sizeof why);
}

int gguf_get_f64(const gguf_file *g, const char *key, double *out)
{
    const gguf_kv *kv = gguf_find(g, key);
    return kv ? num_at(kv->data, kv->type, out) : -1;
}

const char *gguf_get_str(const gguf_file *g, const char *key, uint64_t *len)
{
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv || kv->type != GGUF_STRING)
        return NULL;
    memcpy(len, kv->data, 8);
    return (const char *)kv->data + 8;
}

const char *gguf_arr_str(const gguf_kv *kv, uint64_t i, uint64_t *len)
{
    if (kv->type != GGUF_ARRAY || kv->arr_type != GGUF_STRING || i >= kv->n)
        return NULL;
    memcpy(len, kv->data + kv->str_off[i], 8);
    return (const char *)kv->data + kv->str_off[i] + 8;
}

double gguf_arr_num(const gguf_kv *kv, uint64_t i)
{
    double d = 0;
    if (kv->type != GGUF_ARRAY || i >= kv->n)
        return 0;
    size_t es = scalar_size(kv->arr_type);
    if (!es || num_at(kv->data + i * es, kv->arr_type, &d) < 0)
        return 0;
    return d;
}

int gguf_arr_int(const gguf_kv *kv, uint64_t i, int64_t *out, char *why, size_t whylen)
{
    size_t es = kv->type == GGUF_ARRAY && i < kv->n ? scalar_size(kv->arr_type) : 0;
    int r = es ? int_at(kv->data + i * es, kv->arr_type, out, why, whylen) : -1;
    if (r == -1)
        snprintf(why, whylen, "not a number");
    return r;
}

const gguf_tensor *gguf_tensor_find(const gguf_file *g, const char *name)
{
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0)
            return &g->tensors[i];
    return NULL;
}

/* ---- conversion to float32 ---- */
int gguf_tensor_f32(const gguf_file *g, const gguf_tensor *t, float *out, char *err, size_t errlen)
{
    const uint8_t *p = g->map + g->data_off + t->offset;
    uint64_t n = t->nelem;
    switch (t->type) {
    case GGML_F32:
        memcpy(out, p, n * 4);
        return 0;
    case GGML_F16:
        for (uint64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = half_f16_to_f32(h);
        }
        return 0;
    case GGML_BF16:
        for (uint64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = half_bf16_to_f32(h);
        }
        return 0;
    case GGML_Q8_0:
        /* Blocks of 32: an F16 scale d then 32 int8 q; value = d * q. */
        for (uint64_t b = 0; b < n / 32; b++) {
            const uint8_t *blk = p + b * 34;
            uint16_t h;
            memcpy(&h, blk, 2);
            float d = half_f16_to_f32(h);
            for (int j = 0; j < 32; j++)
                out[b * 32 + j] = d * (float)(int8_t)blk[2 + j];
        }
        return 0;
    default:
        snprintf(err, errlen,
                 "tensor '%s' has type %s, which is not supported (F32, F16, BF16, Q8_0 are)",
                 t->name, gguf_type_name(t->type));
        return -1;
    }
}

/* gguf: the GGUF container reader (gguf.h) and model_load_gguf for the llama (Mistral too),
 * qwen2, qwen3, gpt2, phi2, gemma and gemma2 architectures. Tensors are converted to float32 into
 * one buffer owned by the model; llama q/k rows are permuted from Meta's interleaved-pair RoPE
 * order to half-split order (llama2c.h); the other RoPE architectures are NeoX-style in llama.cpp
 * and already half-split. */
#include "gguf.h"
#include "model/llama2c.h"
#include "model/model.h"
#include "cli/cli.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
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
/* IEEE binary16 → binary32, exact for every value including subnormals, inf and NaN. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f)
        bits = sign | 0x7f800000u | (man << 13);
    else if (exp)
        bits = sign | ((exp + 112) << 23) | (man << 13);
    else if (!man)
        bits = sign;
    else {
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

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
            out[i] = half_to_float(h);
        }
        return 0;
    case GGML_BF16:
        for (uint64_t i = 0; i < n; i++) {
            uint16_t h;
            uint32_t b;
            memcpy(&h, p + 2 * i, 2);
            b = (uint32_t)h << 16;
            memcpy(&out[i], &b, 4);
        }
        return 0;
    case GGML_Q8_0:
        /* Blocks of 32: an F16 scale d then 32 int8 q; value = d * q. */
        for (uint64_t b = 0; b < n / 32; b++) {
            const uint8_t *blk = p + b * 34;
            uint16_t h;
            memcpy(&h, blk, 2);
            float d = half_to_float(h);
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



/* ================================ model_load_gguf ================================ */
typedef struct {
    float *arena;       /* every weight, converted */
    size_t used, cap;   /* in floats */
    float *inv_freq;
    model_layer *layers;
} gguf_owner;

static void gguf_release(model *m)
{
    gguf_owner *o = m->owner;
    if (o) {
        free(o->arena);
        free(o->inv_freq);
        free(o->layers);
        free(o);
    }
    m->owner = NULL;
}

typedef struct {
    const gguf_file *g;
    gguf_owner *o;
    char *err;
    size_t errlen;
} loader;

/* Load tensor `name` (printf-style) whose shape must be ne0 × ne1 (ne1 = 0: a vector) into the
 * arena. optional: a missing tensor returns NULL without error. */
static float *load_t(loader *L, int optional, long ne0, long ne1, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static float *load_t(loader *L, int optional, long ne0, long ne1, const char *fmt, ...)
{
    char name[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const gguf_tensor *t = gguf_tensor_find(L->g, name);
    if (!t) {
        if (!optional)
            snprintf(L->err, L->errlen, "missing tensor '%s'", name);
        return NULL;
    }
    int ok = ne1 ? (t->n_dims == 2 && t->ne[0] == (uint64_t)ne0 && t->ne[1] == (uint64_t)ne1)
                 : (t->n_dims == 1 && t->ne[0] == (uint64_t)ne0);
    if (!ok) {
        snprintf(L->err, L->errlen, "tensor '%s' has shape [%llu, %llu], expected [%ld, %ld]", name,
                 (unsigned long long)t->ne[0], (unsigned long long)(t->n_dims > 1 ? t->ne[1] : 1),
                 ne0, ne1 ? ne1 : 1);
        return NULL;
    }
    if (L->o->used + t->nelem > L->o->cap) {
        snprintf(L->err, L->errlen, "internal error: weight buffer too small at '%s'", name);
        return NULL;
    }
    float *dst = L->o->arena + L->o->used;
    if (gguf_tensor_f32(L->g, t, dst, L->err, L->errlen) < 0)
        return NULL;
    L->o->used += t->nelem;
    return dst;
}

static int meta_int(const gguf_file *g, const char *arch, const char *suffix, int64_t def,
                    int64_t lo, int64_t hi, int *out, char *err, size_t errlen)
{
    char key[160], why[128];
    int64_t v;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int r = gguf_get_int(g, key, &v, why, sizeof why);
    const gguf_kv *kv = gguf_find(g, key);
    if (kv && kv->type == GGUF_BOOL) {   /* a size or count is never true/false */
        r = -2;
        snprintf(why, sizeof why, "a boolean, expected an integer");
    }
    if (r == -2) {
        snprintf(err, errlen, "metadata '%s': %s", key, why);
        return -1;
    }
    if (r < 0) {
        if (def < 0) {
            snprintf(err, errlen, "missing or non-numeric metadata key '%s'", key);
            return -1;
        }
        v = def;
    }
    if (v < lo || v > hi) {
        snprintf(err, errlen, "metadata '%s' = %lld is out of range [%lld, %lld]", key,
                 (long long)v, (long long)lo, (long long)hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* A real-valued "<arch>.<suffix>" key (def when absent; def NAN: required) that must lie in
 * [lo, hi]: a NaN or negative epsilon or RoPE base would turn every attention row into NaN. */
static int meta_real(const gguf_file *g, const char *arch, const char *suffix, double def, double lo,
                     double hi, double *out, char *err, size_t errlen)
{
    char key[160];
    double v;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (gguf_get_f64(g, key, &v) < 0) {
        if (isnan(def)) {
            snprintf(err, errlen, "missing or non-numeric metadata key '%s'", key);
            return -1;
        }
        v = def;
    }
    if (!(v >= lo && v <= hi)) {
        snprintf(err, errlen, "metadata '%s' = %g is out of range [%g, %g]", key, v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int special_id(const gguf_file *g, const char *key, int vocab, int def)
{
    int64_t v;
    if (gguf_get_i64(g, key, &v) < 0)
        return def;
    return v >= 0 && v < vocab ? (int)v : -1;
}

/* Hyperparameters from "<arch>.*" keys (llama.cpp's names). */
static int read_config(const gguf_file *g, const char *arch, model_config *c, char *err, size_t el)
{
    if (meta_int(g, arch, "embedding_length", -1, 1, 1 << 20, &c->d_model, err, el) < 0 ||
        meta_int(g, arch, "block_count", -1, 1, 4096, &c->n_layer, err, el) < 0 ||
        meta_int(g, arch, "attention.head_count", -1, 1, 4096, &c->n_head, err, el) < 0 ||
        meta_int(g, arch, "feed_forward_length", -1, 1, 1 << 24, &c->d_ff, err, el) < 0 ||
        meta_int(g, arch, "context_length", -1, 1, 1 << 24, &c->max_pos, err, el) < 0 ||
        meta_int(g, arch, "attention.head_count_kv", c->n_head, 1, c->n_head, &c->n_kv_head, err,
                 el) < 0)
        return -1;
    if (c->d_model % c->n_head || c->n_head % c->n_kv_head) {
        snprintf(err, el, "embedding_length %d / head_count %d / head_count_kv %d are inconsistent",
                 c->d_model, c->n_head, c->n_kv_head);
        return -1;
    }
    if (meta_int(g, arch, "attention.key_length", c->d_model / c->n_head, 1, 1 << 16, &c->head_dim,
                 err, el) < 0)
        return -1;
    return 0;
}

/* RoPE frequencies: inv_freq[i] = 1/base^(2i/dim), then llama.cpp's per-frequency divisors
 * (rope_freqs.weight, written for Llama-3 scaling) or a linear scaling factor. */
static int rope_setup(loader *L, const char *arch, model_config *c)
{
    /* Phi-2 rotates part of each head: llama.cpp's default (the whole head) would be wrong. */
    int def = c->family == FAM_PHI ? -1 : c->head_dim;
    if (meta_int(L->g, arch, "rope.dimension_count", def, 2, c->head_dim, &c->rotary_dim,
                 L->err, L->errlen) < 0)
        return -1;
    if (c->rotary_dim % 2) {
        snprintf(L->err, L->errlen, "%s.rope.dimension_count %d is odd", arch, c->rotary_dim);
        return -1;
    }
    double theta;
    if (meta_real(L->g, arch, "rope.freq_base", 10000.0, 1e-3, 1e30, &theta, L->err, L->errlen) < 0)
        return -1;
    c->rope_theta = (float)theta;
    int half = c->rotary_dim / 2;
    float *f = L->o->inv_freq = malloc(half * sizeof *f);
    model_rope_default(f, c->rotary_dim, c->rope_theta);   /* as the HF loader computes it */
    c->inv_freq = f;
    const gguf_tensor *rf = gguf_tensor_find(L->g, "rope_freqs.weight");
    if (rf) {
        float *fac = load_t(L, 0, half, 0, "rope_freqs.weight");
        if (!fac)
            return -1;
        for (int i = 0; i < half; i++)
            f[i] /= fac[i];
    }
    char key[96];
    uint64_t len;
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    const char *st = gguf_get_str(L->g, key, &len);
    if (st && len == 6 && memcmp(st, "linear", 6) == 0) {
        double fac;
        if (meta_real(L->g, arch, "rope.scaling.factor", 1.0, 1e-6, 1e6, &fac, L->err, L->errlen) < 0)
            return -1;
        for (int i = 0; i < half; i++)
            f[i] /= (float)fac;
    } else if (st && !(len == 4 && memcmp(st, "none", 4) == 0)) {
        snprintf(L->err, L->errlen, "RoPE scaling type '%.*s' is not supported", (int)len, st);
        return -1;
    }
    return 0;
}

/* Llama / Mistral / Qwen2 / Qwen3 / Gemma / Gemma2 blocks: RMSNorm, RoPE attention (GQA), gated
 * MLP. Qwen2 adds q/k/v biases, Qwen3 per-head attn_q_norm/attn_k_norm, Gemma2 the norms after
 * each branch (post_attention_norm, post_ffw_norm; ffn_norm is then its pre-MLP norm). Only
 * llama's q/k (and any biases) are permuted from Meta's interleaved order. */
static int load_llama_layer(loader *L, model_config *c, int l, model_layer *w, int permute)
{
    long d = c->d_model, qd = (long)c->n_head * c->head_dim, kd = (long)c->n_kv_head * c->head_dim;
    int bias = c->family == FAM_QWEN2, sandwich = c->block == BLOCK_SANDWICH;
    const float **mlp_norm = sandwich ? &w->ln3_w : &w->ln2_w;
    float *wq, *wk, *bq = NULL, *bk = NULL;
    if (!(w->ln1_w = load_t(L, 0, d, 0, "blk.%d.attn_norm.weight", l)) ||
        !(w->wq = wq = load_t(L, 0, d, qd, "blk.%d.attn_q.weight", l)) ||
        !(w->wk = wk = load_t(L, 0, d, kd, "blk.%d.attn_k.weight", l)) ||
        !(w->wv = load_t(L, 0, d, kd, "blk.%d.attn_v.weight", l)) ||
        !(w->wo = load_t(L, 0, qd, d, "blk.%d.attn_output.weight", l)) ||
        !(*mlp_norm = load_t(L, 0, d, 0, "blk.%d.ffn_norm.weight", l)) ||
        !(w->w_gate = load_t(L, 0, d, c->d_ff, "blk.%d.ffn_gate.weight", l)) ||
        !(w->w_up = load_t(L, 0, d, c->d_ff, "blk.%d.ffn_up.weight", l)) ||
        !(w->w_down = load_t(L, 0, c->d_ff, d, "blk.%d.ffn_down.weight", l)))
        return -1;
    if (sandwich && (!(w->ln2_w = load_t(L, 0, d, 0, "blk.%d.post_attention_norm.weight", l)) ||
                     !(w->ln4_w = load_t(L, 0, d, 0, "blk.%d.post_ffw_norm.weight", l))))
        return -1;
    if (c->qk_norm && (!(w->q_norm_w = load_t(L, 0, c->head_dim, 0, "blk.%d.attn_q_norm.weight", l)) ||
                       !(w->k_norm_w = load_t(L, 0, c->head_dim, 0, "blk.%d.attn_k_norm.weight", l))))
        return -1;
    w->bq = bq = load_t(L, !bias, qd, 0, "blk.%d.attn_q.bias", l);
    w->bk = bk = load_t(L, !bias, kd, 0, "blk.%d.attn_k.bias", l);
    w->bv = load_t(L, !bias, kd, 0, "blk.%d.attn_v.bias", l);
    if (bias && (!bq || !bk || !w->bv))
        return -1;
    if (L->err[0])
        return -1;
    if (permute) {
        llama2c_permute_qk(wq, c->n_head, c->head_dim, d);
        llama2c_permute_qk(wk, c->n_kv_head, c->head_dim, d);
        if (bq)
            llama2c_permute_qk(bq, c->n_head, c->head_dim, 1);
        if (bk)
            llama2c_permute_qk(bk, c->n_kv_head, c->head_dim, 1);
    }
    return 0;
}

/* Phi-2 blocks: one LayerNorm (attn_norm) feeding attention and MLP in parallel, biased q/k/v
 * (separate, or the fused attn_qkv of older conversions, q then k then v rows), attn_output,
 * GELU (tanh) ffn_up/ffn_down with biases. */
static int load_phi2_layer(loader *L, model_config *c, int l, model_layer *w)
{
    long d = c->d_model, qd = (long)c->n_head * c->head_dim, kd = (long)c->n_kv_head * c->head_dim;
    if (!(w->ln1_w = load_t(L, 0, d, 0, "blk.%d.attn_norm.weight", l)) ||
        !(w->ln1_b = load_t(L, 0, d, 0, "blk.%d.attn_norm.bias", l)))
        return -1;
    float *qkv = load_t(L, 1, d, qd + 2 * kd, "blk.%d.attn_qkv.weight", l);
    if (L->err[0])
        return -1;
    if (qkv) {
        float *bqkv = load_t(L, 0, qd + 2 * kd, 0, "blk.%d.attn_qkv.bias", l);
        if (!bqkv)
            return -1;
        w->wq = qkv, w->wk = qkv + qd * d, w->wv = qkv + (qd + kd) * d;
        w->bq = bqkv, w->bk = bqkv + qd, w->bv = bqkv + qd + kd;
    } else if (!(w->wq = load_t(L, 0, d, qd, "blk.%d.attn_q.weight", l)) ||
               !(w->bq = load_t(L, 0, qd, 0, "blk.%d.attn_q.bias", l)) ||
               !(w->wk = load_t(L, 0, d, kd, "blk.%d.attn_k.weight", l)) ||
               !(w->bk = load_t(L, 0, kd, 0, "blk.%d.attn_k.bias", l)) ||
               !(w->wv = load_t(L, 0, d, kd, "blk.%d.attn_v.weight", l)) ||
               !(w->bv = load_t(L, 0, kd, 0, "blk.%d.attn_v.bias", l))) {
        return -1;
    }
    if (!(w->wo = load_t(L, 0, qd, d, "blk.%d.attn_output.weight", l)) ||
        !(w->bo = load_t(L, 0, d, 0, "blk.%d.attn_output.bias", l)) ||
        !(w->w_up = load_t(L, 0, d, c->d_ff, "blk.%d.ffn_up.weight", l)) ||
        !(w->b_up = load_t(L, 0, c->d_ff, 0, "blk.%d.ffn_up.bias", l)) ||
        !(w->w_down = load_t(L, 0, c->d_ff, d, "blk.%d.ffn_down.weight", l)) ||
        !(w->b_down = load_t(L, 0, d, 0, "blk.%d.ffn_down.bias", l)))
        return -1;
    return 0;
}

/* GPT-2 blocks: LayerNorm with bias, fused QKV [3d, d] split into q, k, v, GELU (tanh) MLP. */
static int load_gpt2_layer(loader *L, model_config *c, int l, model_layer *w)
{
    long d = c->d_model;
    float *qkv, *bqkv;
    if (!(w->ln1_w = load_t(L, 0, d, 0, "blk.%d.attn_norm.weight", l)) ||
        !(w->ln1_b = load_t(L, 0, d, 0, "blk.%d.attn_norm.bias", l)) ||
        !(qkv = load_t(L, 0, d, 3 * d, "blk.%d.attn_qkv.weight", l)) ||
        !(bqkv = load_t(L, 0, 3 * d, 0, "blk.%d.attn_qkv.bias", l)) ||
        !(w->wo = load_t(L, 0, d, d, "blk.%d.attn_output.weight", l)) ||
        !(w->bo = load_t(L, 0, d, 0, "blk.%d.attn_output.bias", l)) ||
        !(w->ln2_w = load_t(L, 0, d, 0, "blk.%d.ffn_norm.weight", l)) ||
        !(w->ln2_b = load_t(L, 0, d, 0, "blk.%d.ffn_norm.bias", l)) ||
        !(w->w_up = load_t(L, 0, d, c->d_ff, "blk.%d.ffn_up.weight", l)) ||
        !(w->b_up = load_t(L, 0, c->d_ff, 0, "blk.%d.ffn_up.bias", l)) ||
        !(w->w_down = load_t(L, 0, c->d_ff, d, "blk.%d.ffn_down.weight", l)) ||
        !(w->b_down = load_t(L, 0, d, 0, "blk.%d.ffn_down.bias", l)))
        return -1;
    w->wq = qkv;
    w->wk = qkv + d * d;
    w->wv = qkv + 2 * d * d;
    w->bq = bqkv;
    w->bk = bqkv + d;
    w->bv = bqkv + 2 * d;
    return 0;
}

static size_t total_floats(const gguf_file *g)
{
    size_t n = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        n += g->tensors[i].nelem;
    return n;
}

/* The architectures, with llama.cpp's names, and what each one's block is. */
static const struct { const char *arch; model_family fam; } ARCHS[] = {
    {"llama", FAM_LLAMA}, {"qwen2", FAM_QWEN2}, {"qwen3", FAM_QWEN3}, {"gpt2", FAM_GPT2},
    {"phi2", FAM_PHI},    {"gemma", FAM_GEMMA}, {"gemma2", FAM_GEMMA2},
};
#define ARCH_LIST "llama, qwen2, gpt2, qwen3, phi2, gemma, gemma2"

static int arch_family(const char *arch, model_family *fam)
{
    for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++)
        if (strcmp(arch, ARCHS[i].arch) == 0) {
            *fam = ARCHS[i].fam;
            return 0;
        }
    return -1;
}

/* Gemma's norms are x/rms·(1 + w) in Hugging Face, but llama.cpp's converter stores 1 + w
 * (convert_hf_to_gguf.py adds 1 to every *norm.weight of gemma and gemma2), so here they are a
 * plain RMSNorm. */
static void set_family(model_config *c, const char *arch, model_family fam)
{
    c->causal = 1;
    c->pad_id = c->cls_id = c->sep_id = c->mask_id = -1;
    c->family = fam;
    c->block = BLOCK_PRE_LN;
    snprintf(c->model_type, sizeof c->model_type, "%s", arch);
    switch (fam) {
    case FAM_GPT2:
        c->norm = NORM_LAYER;
        c->act = ACT_GELU_TANH;
        c->learned_pos = 1;
        break;
    case FAM_PHI:
        c->norm = NORM_LAYER;
        c->act = ACT_GELU_TANH;   /* gelu_new */
        c->block = BLOCK_PARALLEL_ONE;
        break;
    case FAM_GEMMA:
    case FAM_GEMMA2:
        c->norm = NORM_RMS;
        c->act = ACT_GELU_TANH;
        c->gated_mlp = 1;
        c->block = fam == FAM_GEMMA2 ? BLOCK_SANDWICH : BLOCK_PRE_LN;
        break;
    default:   /* llama, qwen2, qwen3 */
        c->norm = NORM_RMS;
        c->act = ACT_SILU;
        c->gated_mlp = 1;
        c->qk_norm = fam == FAM_QWEN3;
    }
}

/* Gemma's √d embedding scale; Gemma2's soft-caps, query scale and sliding window on the even
 * layers (llama.cpp: window default 4096, caps 50 and 30; the query scale is not stored: it is
 * 1/√head_dim, or 1/√(d/H) for the 46-layer 27B, as llama.cpp's build_gemma2 takes it). */
static int gemma_setup(loader *L, const char *arch, model *m)
{
    model_config *c = &m->cfg;
    c->emb_scale = (float)sqrt((double)c->d_model);
    if (c->family != FAM_GEMMA2)
        return 0;
    double a, f;
    int W;
    if (meta_real(L->g, arch, "attn_logit_softcapping", 50.0, 1e-6, 1e6, &a, L->err, L->errlen) < 0 ||
        meta_real(L->g, arch, "final_logit_softcapping", 30.0, 1e-6, 1e6, &f, L->err, L->errlen) < 0 ||
        meta_int(L->g, arch, "attention.sliding_window", 4096, 1, 1 << 30, &W, L->err, L->errlen) < 0)
        return -1;
    c->attn_softcap = (float)a;
    c->final_softcap = (float)f;
    int scalar = c->n_layer == 46 ? c->d_model / c->n_head : c->head_dim;
    c->attn_scale = (float)pow((double)scalar, -0.5);   /* as the HF loader: query_pre_attn_scalar^-0.5 */
    for (int l = 0; l < c->n_layer; l++)
        m->w.layers[l].window = l % 2 == 0 ? W : 0;
    return 0;
}

/* Mistral converts to "llama"; llama.cpp's converter writes no window, but a file that carries
 * llama.attention.sliding_window gets it on every layer, as Mistral's config applies it. */
static int llama_window(loader *L, const char *arch, model *m)
{
    int W;
    if (meta_int(L->g, arch, "attention.sliding_window", 0, 0, 1 << 30, &W, L->err, L->errlen) < 0)
        return -1;
    for (int l = 0; l < m->cfg.n_layer; l++)
        m->w.layers[l].window = W;
    return 0;
}

static int load_layer(loader *L, model_config *c, int l, model_layer *w)
{
    switch (c->family) {
    case FAM_GPT2:
        return load_gpt2_layer(L, c, l, w);
    case FAM_PHI:
        return load_phi2_layer(L, c, l, w);
    default:
        return load_llama_layer(L, c, l, w, c->family == FAM_LLAMA);
    }
}

static int load_body(loader *L, model *m, const char *arch, model_family fam)
{
    model_config *c = &m->cfg;
    const gguf_file *g = L->g;
    set_family(c, arch, fam);
    /* llama.cpp requires the norm epsilon of the newer architectures; llama/qwen2/gpt2 files
     * without one keep the old default. */
    int newer = fam == FAM_PHI || fam == FAM_GEMMA || fam == FAM_GEMMA2 || fam == FAM_QWEN3;
    if (read_config(g, arch, c, L->err, L->errlen) < 0)
        return -1;
    const gguf_tensor *te = gguf_tensor_find(g, "token_embd.weight");
    if (!te || te->n_dims != 2) {
        snprintf(L->err, L->errlen, "missing or malformed tensor 'token_embd.weight'");
        return -1;
    }
    if (te->ne[1] < 1 || te->ne[1] > INT32_MAX) {
        snprintf(L->err, L->errlen, "tensor 'token_embd.weight' has %llu rows", (unsigned long long)te->ne[1]);
        return -1;
    }
    c->vocab = (int)te->ne[1];
    const char *eps_key = c->norm == NORM_RMS ? "attention.layer_norm_rms_epsilon"
                                              : "attention.layer_norm_epsilon";
    double eps;
    if (meta_real(g, arch, eps_key, newer ? NAN : 1e-5, 1e-30, 0.5, &eps, L->err, L->errlen) < 0)
        return -1;
    c->norm_eps = (float)eps;
    int gemma = fam == FAM_GEMMA || fam == FAM_GEMMA2;
    c->bos_id = special_id(g, "tokenizer.ggml.bos_token_id", c->vocab, fam == FAM_LLAMA ? 1 : gemma ? 2 : -1);
    c->eos_id = special_id(g, "tokenizer.ggml.eos_token_id", c->vocab, fam == FAM_LLAMA ? 2 : gemma ? 1 : -1);
    c->pad_id = special_id(g, "tokenizer.ggml.padding_token_id", c->vocab, gemma ? 0 : -1);
    L->o->cap = total_floats(g);
    L->o->arena = malloc((L->o->cap ? L->o->cap : 1) * sizeof(float));
    L->o->layers = calloc(c->n_layer, sizeof(model_layer));
    if (!L->o->arena || !L->o->layers) {
        snprintf(L->err, L->errlen, "out of memory for %zu weights", L->o->cap);
        return -1;
    }
    m->w.layers = L->o->layers;
    long d = c->d_model;
    if (!(m->w.tok_emb = load_t(L, 0, d, c->vocab, "token_embd.weight")) ||
        !(m->w.lnf_w = load_t(L, 0, d, 0, "output_norm.weight")))
        return -1;
    if (fam == FAM_GPT2 || fam == FAM_PHI) {
        if (!(m->w.lnf_b = load_t(L, 0, d, 0, "output_norm.bias")))
            return -1;
    }
    if (fam == FAM_GPT2) {
        if (!(m->w.pos_emb = load_t(L, 0, d, c->max_pos, "position_embd.weight")))
            return -1;
    } else if (rope_setup(L, arch, c) < 0) {
        return -1;
    }
    /* Gemma's head is always the embedding in llama.cpp (its converter drops lm_head.weight). */
    m->w.lm_head = gemma ? NULL : load_t(L, 1, d, c->vocab, "output.weight");
    if (L->err[0])
        return -1;
    c->tied_head = m->w.lm_head == NULL;
    if (c->tied_head)
        m->w.lm_head = m->w.tok_emb;
    if (fam == FAM_PHI && !(m->w.lm_head_b = load_t(L, 0, c->vocab, 0, "output.bias")))
        return -1;
    for (int l = 0; l < c->n_layer; l++)
        if (load_layer(L, c, l, &m->w.layers[l]) < 0)
            return -1;
    if (gemma)
        return gemma_setup(L, arch, m);
    return fam == FAM_LLAMA ? llama_window(L, arch, m) : 0;
}

model *model_load_gguf(const char *path, char *err, size_t errlen)
{
    err[0] = 0;
    gguf_file *g = gguf_open(path, err, errlen);
    if (!g) {
        cli_err_prefix(err, errlen, path);
        return NULL;
    }
    uint64_t alen;
    const char *a = gguf_get_str(g, "general.architecture", &alen);
    char arch[32] = "";
    if (a && alen < sizeof arch)
        memcpy(arch, a, alen), arch[alen] = 0;
    model_family fam;
    if (arch_family(arch, &fam) < 0) {
        snprintf(err, errlen, "general.architecture '%s' is not supported (" ARCH_LIST " are)",
                 a ? arch : "(missing)");
        gguf_close(g);
        cli_err_prefix(err, errlen, path);
        return NULL;
    }
    model *m = calloc(1, sizeof *m);
    gguf_owner *o = calloc(1, sizeof *o);
    m->owner = o;
    m->release = gguf_release;
    loader L = {g, o, err, errlen};
    int rc = load_body(&L, m, arch, fam);
    gguf_close(g);
    if (rc == 0 && cli_sha256_file(path, m->sha256) < 0) {
        snprintf(err, errlen, "cannot read for checksum");
        rc = -1;
    }
    if (rc < 0) {
        gguf_release(m);
        free(m);
        cli_err_prefix(err, errlen, path);
        return NULL;
    }
    snprintf(m->source, sizeof m->source, "%s", path);
    return m;
}

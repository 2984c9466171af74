/* Foreign arrays (.npy, .npz, safetensors, HDF5) read one block at a time. Errors are returned
 * with their text in the caller's err (arrayin.h); nothing here exits. */
#include "arrayin.h"

#include "core/util.h"
#include "core/half.h"
#include "h5io.h"
#include "safetensors.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

typedef enum { SRC_MEM, SRC_ZIP, SRC_H5 } src_kind;

struct ai_array {
    char *file, *name;
    ai_dtype type;
    int esize, swap, fortran, rank;
    int64_t shape[AI_MAX_RANK];
    src_kind kind;
    const unsigned char *data;     /* SRC_MEM: first element */
    unsigned char *owned;          /* SRC_MEM: a member read whole */
    zip_t *za;                     /* SRC_ZIP: the archive, member index, open stream */
    zip_uint64_t zidx;
    zip_file_t *zf;
    uint64_t zpos, zhdr;           /* bytes of data consumed; npy header length */
    hid_t dset;                    /* SRC_H5 */
    unsigned char *raw;            /* block bytes (SRC_ZIP) */
};

typedef struct {
    char *name, sha[65];
    unsigned char *map;            /* .npy mapping */
    size_t size;
    zip_t *za;
    st_set *st;
    hid_t h5;
} ai_file_rec;

struct ai_set {
    ai_array **a;
    int n;
    ai_file_rec *f;
    int nf, stdin_used;
};

ai_set *ai_new(void) { return xcalloc(1, sizeof(ai_set)); }
int ai_count(const ai_set *s) { return s->n; }
ai_array *ai_at(ai_set *s, int i) { return s->a[i]; }
int ai_nfiles(const ai_set *s) { return s->nf; }
const char *ai_file_name(const ai_set *s, int i) { return s->f[i].name; }
const char *ai_file_sha(const ai_set *s, int i) { return s->f[i].sha; }
const char *ai_file(const ai_array *a) { return a->file; }
const char *ai_name(const ai_array *a) { return a->name; }
int ai_rank(const ai_array *a) { return a->rank; }
const int64_t *ai_shape(const ai_array *a) { return a->shape; }
ai_dtype ai_type(const ai_array *a) { return a->type; }
int ai_streams(const ai_array *a) { return a->kind != SRC_MEM || !a->owned; }

const char *ai_dtype_name(ai_dtype t) {
    static const char *n[] = {"float16", "bfloat16", "float32", "float64"};
    return n[t];
}

static int64_t numel(const ai_array *a) {
    int64_t n = 1;
    for (int i = 0; i < a->rank; i++) n *= a->shape[i];
    return n;
}

static void push_array(ai_set *s, ai_array *a) {
    s->a = xrealloc(s->a, sizeof *s->a * (size_t)(s->n + 1));
    s->a[s->n++] = a;
}

/* ---- natural order of names: digit runs compare as numbers ---- */
static int natcmp(const char *a, const char *b) {
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (*a == '0') a++;
            while (*b == '0') b++;
            size_t la = 0, lb = 0;
            while (isdigit((unsigned char)a[la])) la++;
            while (isdigit((unsigned char)b[lb])) lb++;
            if (la != lb) return la < lb ? -1 : 1;
            int c = strncmp(a, b, la);
            if (c) return c;
            a += la;
            b += lb;
        } else {
            if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
            a++;
            b++;
        }
    }
    return (unsigned char)*a - (unsigned char)*b;
}
static int natcmp_ptr(const void *x, const void *y) { return natcmp(*(char *const *)x, *(char *const *)y); }

/* ---- .npy header: magic, version, length, then a Python dict literal ---- */
typedef struct { ai_dtype type; int esize, swap, fortran, rank; int64_t shape[AI_MAX_RANK]; } npy_info;

static const char *dict_value(const char *hdr, const char *key) {
    const char *p = strstr(hdr, key);
    if (!p) return NULL;
    p = strchr(p + strlen(key), ':');
    if (!p) return NULL;
    for (p++; *p == ' '; p++) {}
    return p;
}

static int parse_descr(const char *file, const char *name, const char *v, npy_info *o, char *err, size_t errlen) {
    char q = *v, d[32];
    size_t n = 0;
    if (q != '\'' && q != '"') return util_fail(err, errlen, file, "array '%s': malformed .npy header (descr)", name);
    for (v++; *v && *v != q && n + 1 < sizeof d; v++) d[n++] = *v;
    d[n] = 0;
    char order = d[0];
    const char *kind = strchr("<>=|", order) ? d + 1 : d;
    if (!strcmp(kind, "f2")) o->type = AI_F16, o->esize = 2;
    else if (!strcmp(kind, "f4")) o->type = AI_F32, o->esize = 4;
    else if (!strcmp(kind, "f8")) o->type = AI_F64, o->esize = 8;
    else return util_fail(err, errlen, file, "array '%s': dtype '%s' is not float16, float32 or float64", name, d);
    o->swap = order == '>';
    return 0;
}

static int parse_shape_tuple(const char *file, const char *name, const char *v, npy_info *o, char *err, size_t errlen) {
    if (*v != '(') return util_fail(err, errlen, file, "array '%s': malformed .npy header (shape)", name);
    o->rank = 0;
    for (v++;;) {
        while (*v == ' ' || *v == ',') v++;
        if (*v == ')') break;
        char *end;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (end == v || errno || x < 0 || x > (1LL << 40))
            return util_fail(err, errlen, file, "array '%s': malformed .npy header (shape)", name);
        if (o->rank == AI_MAX_RANK) return util_fail(err, errlen, file, "array '%s': rank above %d", name, AI_MAX_RANK);
        o->shape[o->rank++] = x;
        v = end;
    }
    return 0;
}

/* The fixed prefix: magic, version, then the header length, 2 bytes little-endian in version 1
 * (a 10-byte prefix) and 4 in versions 2 and 3 (12 bytes). Returns the prefix length and sets
 * *hl; n bytes are available at b (at least 10 tell the version, 12 are needed for 2 and 3).
 * 0 (no prefix is that short) with err when the bytes are not a .npy prefix. */
static size_t npy_prefix(const char *file, const char *name, const unsigned char *b, size_t n, size_t *hl,
                         char *err, size_t errlen) {
    if (n < 10 || memcmp(b, "\x93NUMPY", 6) != 0) return util_fail(err, errlen, file, "array '%s': not a .npy array", name), 0;
    if (b[6] == 1) {
        *hl = b[8] | (size_t)b[9] << 8;
        return 10;
    }
    if (b[6] != 2 && b[6] != 3) return util_fail(err, errlen, file, "array '%s': unsupported .npy version %d", name, b[6]), 0;
    if (n < 12) return util_fail(err, errlen, file, "array '%s': truncated .npy header", name), 0;
    *hl = b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    return 12;
}

#define NPY_MAX_HEADER (1 << 20)

/* fortran_order is a Python literal: True or False, nothing else. 1, 0, or -1 with err. */
static int parse_bool(const char *file, const char *name, const char *v, char *err, size_t errlen) {
    int t = !strncmp(v, "True", 4), f = !strncmp(v, "False", 5);
    char after = t ? v[4] : f ? v[5] : 0;
    if ((!t && !f) || (after != ',' && after != '}' && after != ' ')) {
        int n = (int)strcspn(v, ",}");
        return util_fail(err, errlen, file, "array '%s': fortran_order is '%.*s', not True or False", name, n < 20 ? n : 20, v);
    }
    return t;
}

/* The dictionary of a .npy header, hdr (NUL-terminated), into o; 0 or -1 with err. */
static int parse_npy_dict(const char *file, const char *name, const char *hdr, npy_info *o, char *err, size_t errlen) {
    const char *d = dict_value(hdr, "'descr'"), *f = dict_value(hdr, "'fortran_order'");
    const char *sh = dict_value(hdr, "'shape'");
    if (!d || !f || !sh) return util_fail(err, errlen, file, "array '%s': .npy header lacks descr, fortran_order or shape", name);
    if (parse_descr(file, name, d, o, err, errlen)) return -1;
    if ((o->fortran = parse_bool(file, name, f, err, errlen)) < 0) return -1;
    return parse_shape_tuple(file, name, sh, o, err, errlen);
}

/* Returns the header length (offset of the data), or 0 with err; n bytes are available at b. */
static size_t parse_npy(const char *file, const char *name, const unsigned char *b, size_t n, npy_info *o,
                        char *err, size_t errlen) {
    size_t hl, start = npy_prefix(file, name, b, n, &hl, err, errlen);
    if (!start) return 0;
    if (hl > NPY_MAX_HEADER || start + hl > n) return util_fail(err, errlen, file, "array '%s': truncated .npy header", name), 0;
    char *hdr = xmalloc(hl + 1);
    memcpy(hdr, b + start, hl);
    hdr[hl] = 0;
    int bad = parse_npy_dict(file, name, hdr, o, err, errlen);
    free(hdr);
    return bad ? 0 : start + hl;
}

/* The element count of a parsed header, checked so that count x 8 bytes fits an int64; -1 with
 * err when it does not. */
static int64_t npy_numel(const char *file, const char *name, const npy_info *in, char *err, size_t errlen) {
    int64_t n = 1;
    for (int i = 0; i < in->rank; i++) {
        if (in->shape[i] && n > (INT64_MAX / 8) / in->shape[i])
            return util_fail(err, errlen, file, "array '%s': too many elements", name);
        n *= in->shape[i];
    }
    return n;
}

/* Called once every check has passed, so a refusal has no array to free. */
static ai_array *array_from_npy(const char *file, const char *name, const npy_info *in) {
    ai_array *a = xcalloc(1, sizeof *a);
    a->file = xstrdup(file);
    a->name = xstrdup(name);
    a->type = in->type;
    a->esize = in->esize;
    a->swap = in->swap;
    a->fortran = in->fortran;
    a->rank = in->rank;
    memcpy(a->shape, in->shape, sizeof a->shape);
    return a;
}

/* ---- files ---- */
static ai_file_rec *file_rec(ai_set *s, const char *name, const char *path, char *err, size_t errlen) {
    for (int i = 0; i < s->nf; i++)
        if (!strcmp(s->f[i].name, name) && strcmp(name, "-")) return &s->f[i];
    char sha[65];
    if (cli_sha256_file(path, sha) != 0) {
        util_fail(err, errlen, name, "cannot read: %s", strerror(errno));
        return NULL;
    }
    s->f = xrealloc(s->f, sizeof *s->f * (size_t)(s->nf + 1));
    ai_file_rec *r = &s->f[s->nf++];
    memset(r, 0, sizeof *r);
    r->name = xstrdup(name);
    r->h5 = -1;
    memcpy(r->sha, sha, sizeof sha);
    return r;
}

/* stdin is copied to a temporary file, removed once opened (mappings and handles keep it).
 * NULL with err when it cannot be. */
static char *stdin_to_file(char *err, size_t errlen) {
    size_t len;
    unsigned char *buf = util_slurp("-", &len, err, errlen);
    if (!buf) return NULL;
    const char *dir = getenv("TMPDIR");
    const char *base = dir && *dir ? dir : "/tmp";
    size_t n = strlen(base) + 32;
    char *name = xmalloc(n);
    snprintf(name, n, "%s/attncoda-import-XXXXXX", base);
    int fd = mkstemp(name);
    if (fd < 0) {
        util_fail(err, errlen, "-", "cannot create a temporary file: %s", strerror(errno));
        free(buf);
        free(name);
        return NULL;
    }
    if (cli_temp_add_err(name, err, errlen)) {   /* past the fixed number of temporaries */
        close(fd);
        unlink(name);
        free(buf);
        free(name);
        return NULL;
    }   /* removed by ai_add on refusal, at exit and on signals */
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, buf + done, len - done);
        if (w <= 0) {
            util_fail(err, errlen, "-", "cannot write a temporary file: %s", strerror(errno));
            close(fd);
            free(buf);
            cli_temp_remove(name);
            free(name);
            return NULL;
        }
        done += (size_t)w;
    }
    close(fd);
    free(buf);
    return name;
}

/* A file named twice (a list of layers from one file) is opened once. */
static int add_npy(ai_set *s, ai_file_rec *r, const char *file, const char *path, char *err, size_t errlen) {
    if (!r->map) {
        int fd = open(path, O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) {
            util_fail(err, errlen, file, "cannot open: %s", strerror(errno));
            if (fd >= 0) close(fd);
            return -1;
        }
        r->size = (size_t)st.st_size;
        r->map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (r->map == MAP_FAILED) { r->map = NULL; return util_fail(err, errlen, file, "cannot map: %s", strerror(errno)); }
    }
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    char name[4096];
    snprintf(name, sizeof name, "%s", base);
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = 0;
    npy_info in;
    size_t off = parse_npy(file, name, r->map, r->size, &in, err, errlen);
    if (!off) return -1;
    int64_t n = npy_numel(file, name, &in, err, errlen);
    if (n < 0) return -1;
    if ((uint64_t)(r->size - off) < (uint64_t)n * (uint64_t)in.esize)
        return util_fail(err, errlen, file, "array '%s': truncated: %zu data bytes for %lld elements", name, r->size - off,
                    (long long)n);
    ai_array *a = array_from_npy(file, name, &in);
    a->kind = SRC_MEM;
    a->data = r->map + off;
    push_array(s, a);
    return 0;
}

/* ---- .npz ---- */
static zip_file_t *zip_member_open(ai_array *a, char *err, size_t errlen) {
    zip_file_t *zf = zip_fopen_index(a->za, a->zidx, 0);
    if (!zf) util_fail(err, errlen, a->file, "array '%s': cannot open member: %s", a->name, zip_strerror(a->za));
    return zf;
}

static int zip_read_exact(ai_array *a, zip_file_t *zf, void *buf, uint64_t n, char *err, size_t errlen) {
    zip_int64_t got = zip_fread(zf, buf, n);
    if (got < 0 || (uint64_t)got != n)
        return util_fail(err, errlen, a->file, "array '%s': truncated or corrupt member (%s)", a->name,
                    got < 0 ? zip_file_strerror(zf) : "short read");
    return 0;
}

/* Deflate cannot expand data more than 1032-fold (zlib's technical details), so a member whose
 * directory entry claims more is refused before its size is believed. */
#define DEFLATE_MAX_RATIO 1032
/* A Fortran-ordered member is read whole; the most it may hold (docs/IMPORT.md). */
#define AI_MAX_WHOLE_BYTES ((uint64_t)1 << 31)

/* The sizes the zip directory declares for member idx, checked against the archive's size and
 * what its compression method can produce, before any of them sizes an allocation. 0 and *size,
 * or -1 with err. */
static int npz_member_size(const char *file, const char *name, zip_t *za, zip_uint64_t idx,
                           uint64_t archive_bytes, uint64_t *size, char *err, size_t errlen) {
    zip_stat_t zs;
    const zip_uint64_t need = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD;
    if (zip_stat_index(za, idx, 0, &zs) != 0 || (zs.valid & need) != need)
        return util_fail(err, errlen, file, "array '%s': the zip directory gives no sizes for the member", name);
    if (zs.comp_size > archive_bytes)
        return util_fail(err, errlen, file, "array '%s': the zip directory claims %llu compressed bytes in a %llu-byte archive",
                    name, (unsigned long long)zs.comp_size, (unsigned long long)archive_bytes);
    if (zs.comp_method == ZIP_CM_STORE && zs.size != zs.comp_size)
        return util_fail(err, errlen, file, "array '%s': a stored member of %llu bytes claims %llu uncompressed bytes", name,
                    (unsigned long long)zs.comp_size, (unsigned long long)zs.size);
    if (zs.comp_method == ZIP_CM_DEFLATE && zs.size / DEFLATE_MAX_RATIO > zs.comp_size)
        return util_fail(err, errlen, file, "array '%s': the zip directory claims %llu uncompressed bytes from %llu deflated "
                                       "ones, more than deflate's %dx", name, (unsigned long long)zs.size,
                    (unsigned long long)zs.comp_size, DEFLATE_MAX_RATIO);
    if (zs.comp_method != ZIP_CM_STORE && zs.comp_method != ZIP_CM_DEFLATE)
        return util_fail(err, errlen, file, "array '%s': zip compression method %d is not stored or deflate (numpy's savez "
                                       "and savez_compressed)", name, zs.comp_method);
    *size = zs.size;
    return 0;
}

/* The .npy header at the start of tmp's open member: its length (prefix and dictionary) and
 * the parsed dictionary, or 0 with err. */
static size_t npz_member_header(ai_array *tmp, npy_info *in, char *err, size_t errlen) {
    const char *file = tmp->file, *name = tmp->name;
    zip_file_t *zf = tmp->zf;
    /* the prefix is 10 bytes (version 1) or 12: read what the version says, never more, so a
     * header length of 0 or 1 cannot make the prefix longer than the header buffer */
    unsigned char head[12];
    if (zip_read_exact(tmp, zf, head, 10, err, errlen)) return 0;
    if ((head[6] == 2 || head[6] == 3) && zip_read_exact(tmp, zf, head + 10, 2, err, errlen)) return 0;
    size_t len, start = npy_prefix(file, name, head, head[6] == 1 ? 10 : 12, &len, err, errlen);
    if (!start) return 0;
    if (len > NPY_MAX_HEADER) return util_fail(err, errlen, file, "array '%s': malformed .npy header (length %zu)", name, len), 0;
    size_t hl = start + len;
    unsigned char *hdr = xmalloc(hl);
    memcpy(hdr, head, start);
    int bad = zip_read_exact(tmp, zf, hdr + start, hl - start, err, errlen) || !parse_npy(file, name, hdr, hl, in, err, errlen);
    free(hdr);
    return bad ? 0 : hl;
}

/* The member's checks after its header: its size holds the data, a Fortran one fits the cap. */
static int npz_member_fits(const char *file, const char *name, const npy_info *in, uint64_t member_bytes, size_t hl,
                           char *err, size_t errlen) {
    int64_t n = npy_numel(file, name, in, err, errlen);
    if (n < 0) return -1;
    uint64_t data_bytes = (uint64_t)n * (uint64_t)in->esize;
    if (member_bytes < hl + data_bytes)
        return util_fail(err, errlen, file, "array '%s': truncated: %llu data bytes for %lld elements", name,
                    (unsigned long long)(member_bytes < hl ? 0 : member_bytes - hl), (long long)n);
    if (in->fortran && data_bytes > AI_MAX_WHOLE_BYTES)
        return util_fail(err, errlen, file, "array '%s': Fortran-ordered, so read whole: %llu bytes, above the cap of %llu",
                    name, (unsigned long long)data_bytes, (unsigned long long)AI_MAX_WHOLE_BYTES);
    return 0;
}

static int add_npz_member(ai_set *s, const char *file, zip_t *za, zip_uint64_t idx, const char *name,
                          uint64_t archive_bytes, char *err, size_t errlen) {
    uint64_t member_bytes = 0;
    if (npz_member_size(file, name, za, idx, archive_bytes, &member_bytes, err, errlen)) return -1;
    ai_array tmp = {.file = (char *)file, .name = (char *)name, .za = za, .zidx = idx};
    zip_file_t *zf = tmp.zf = zip_member_open(&tmp, err, errlen);
    if (!zf) return -1;
    npy_info in;
    size_t hl = npz_member_header(&tmp, &in, err, errlen);
    if (!hl || npz_member_fits(file, name, &in, member_bytes, hl, err, errlen)) {
        zip_fclose(zf);
        return -1;
    }
    ai_array *a = array_from_npy(file, name, &in);
    a->kind = SRC_ZIP;
    a->za = za;
    a->zidx = idx;
    a->zhdr = hl;
    a->zf = zf;
    push_array(s, a);
    return 0;
}

/* torch.save writes a zip of ARCHIVE/data.pkl and raw storages (or, before PyTorch 1.6, one
 * pickle stream): pickles are not arrays, and unpickling runs code, so say how to save instead. */
static int torch_refused(const char *file, char *err, size_t errlen) {
    return util_fail(err, errlen, file, "a PyTorch torch.save file (pickle), not arrays; save attention with "
                                   "numpy.save(f, t.float().numpy()) or safetensors.torch.save_file({'attn': t}, f)");
}

static int zip_has_member_ending(zip_t *za, const char *tail) {
    zip_int64_t n = zip_get_num_entries(za, 0);
    for (zip_int64_t i = 0; i < n; i++) {
        const char *nm = zip_get_name(za, (zip_uint64_t)i, 0);
        size_t l = nm ? strlen(nm) : 0, t = strlen(tail);
        if (l >= t && !strcmp(nm + l - t, tail) && (l == t || nm[l - t - 1] == '/')) return 1;
    }
    return 0;
}

/* The .npy member names of an archive without their extension, malloc'd, in natural order. */
static char **npz_names(zip_t *za, int *count) {
    zip_int64_t n = zip_get_num_entries(za, 0);
    char **names = xmalloc(sizeof *names * (size_t)(n > 0 ? n : 1));
    int k = 0;
    for (zip_int64_t i = 0; i < n; i++) {
        const char *nm = zip_get_name(za, (zip_uint64_t)i, 0);
        size_t l = nm ? strlen(nm) : 0;
        if (l > 4 && !strcmp(nm + l - 4, ".npy")) {
            names[k] = xstrdup(nm);
            names[k++][l - 4] = 0;
        }
    }
    qsort(names, (size_t)k, sizeof *names, natcmp_ptr);
    *count = k;
    return names;
}

/* Every member (or the one named want) added in order; 0 or -1 with err. */
static int add_npz_members(ai_set *s, zip_t *za, const char *file, char **names, int k, const char *want,
                           uint64_t archive_bytes, char *err, size_t errlen) {
    int found = 0;
    for (int i = 0; i < k; i++) {
        if (want && strcmp(names[i], want)) continue;
        char member[4096];
        snprintf(member, sizeof member, "%s.npy", names[i]);
        zip_int64_t idx = zip_name_locate(za, member, 0);
        if (idx < 0) return util_fail(err, errlen, file, "array '%s': member name too long", names[i]);
        if (add_npz_member(s, file, za, (zip_uint64_t)idx, names[i], archive_bytes, err, errlen)) return -1;
        found = 1;
    }
    if (want && !found) return util_fail(err, errlen, file, "no array '%s' in the archive", want);
    return 0;
}

static int add_npz(ai_set *s, ai_file_rec *r, const char *file, const char *path, const char *want,
                   char *err, size_t errlen) {
    int zerr = 0;
    if (!r->za) r->za = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
    if (!r->za) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        util_fail(err, errlen, file, "not a readable .npz (zip) archive: %s", zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return -1;
    }
    struct stat st;
    if (stat(path, &st) != 0) return util_fail(err, errlen, file, "cannot open: %s", strerror(errno));
    int k, rc;
    char **names = npz_names(r->za, &k);
    if (!k && zip_has_member_ending(r->za, "data.pkl")) rc = torch_refused(file, err, errlen);
    else if (!k) rc = util_fail(err, errlen, file, "the archive holds no .npy arrays");
    else rc = add_npz_members(s, r->za, file, names, k, want, (uint64_t)st.st_size, err, errlen);
    for (int i = 0; i < k; i++) free(names[i]);
    free(names);
    return rc;
}

/* ---- safetensors ---- */
static int natcmp_tensor(const void *x, const void *y) {
    return natcmp((*(const st_tensor *const *)x)->name, (*(const st_tensor *const *)y)->name);
}

static int add_st_tensor(ai_set *s, const char *file, const st_tensor *t, char *err, size_t errlen) {
    ai_dtype type;
    int esize;
    if (!strcmp(t->dtype, "F16")) type = AI_F16, esize = 2;
    else if (!strcmp(t->dtype, "BF16")) type = AI_BF16, esize = 2;
    else if (!strcmp(t->dtype, "F32")) type = AI_F32, esize = 4;
    else if (!strcmp(t->dtype, "F64")) type = AI_F64, esize = 8;
    else return util_fail(err, errlen, file, "array '%s': dtype %s is not F16, BF16, F32 or F64", t->name, t->dtype);
    if (t->rank > AI_MAX_RANK) return util_fail(err, errlen, file, "array '%s': rank above %d", t->name, AI_MAX_RANK);
    ai_array *a = xcalloc(1, sizeof *a);
    a->file = xstrdup(file);
    a->name = xstrdup(t->name);
    a->type = type, a->esize = esize;
    a->rank = t->rank;
    for (int i = 0; i < t->rank; i++) a->shape[i] = t->shape[i];
    a->kind = SRC_MEM;
    a->data = t->data;
    push_array(s, a);
    return 0;
}

static int add_safetensors(ai_set *s, ai_file_rec *r, const char *file, const char *path, const char *want,
                           char *err, size_t errlen) {
    char why[1024];
    if (!r->st) r->st = st_open_file(path, why, sizeof why);
    if (!r->st) {
        /* the reader names the path it opened: drop that prefix (a ':' in the name is no end) */
        size_t n = strlen(path);
        return util_fail(err, errlen, file, "%s", !strncmp(why, path, n) && !strncmp(why + n, ": ", 2) ? why + n + 2 : why);
    }
    int n = st_count(r->st);
    const st_tensor **t = xmalloc(sizeof *t * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) t[i] = st_at(r->st, i);
    qsort(t, (size_t)n, sizeof *t, natcmp_tensor);
    int found = 0, rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        if (!want || !strcmp(t[i]->name, want)) rc = add_st_tensor(s, file, t[i], err, errlen), found = 1;
    free(t);
    if (rc) return -1;
    if (!n) return util_fail(err, errlen, file, "the file holds no tensors");
    if (want && !found) return util_fail(err, errlen, file, "no tensor '%s' in the file", want);
    return 0;
}

/* ---- HDF5 ---- */
/* A filter's name for messages: the one the file records, else the registered name of the
 * common ones h5py and hdf5plugin write (their ids from the HDF Group's registry). */
static const char *filter_name(H5Z_filter_t id, const char *recorded) {
    static const struct { H5Z_filter_t id; const char *name; } known[] = {
        {H5Z_FILTER_DEFLATE, "deflate"}, {H5Z_FILTER_SZIP, "szip"}, {307, "bzip2"}, {32000, "lzf"},
        {32001, "blosc"}, {32004, "lz4"}, {32008, "bitshuffle"}, {32015, "zstd"}, {32026, "blosc2"}};
    if (recorded[0]) return recorded;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i].id == id) return known[i].name;
    return "unregistered";
}

/* Every filter of the pipeline must be available here, else reading fails deep inside HDF5.
 * Returns how many times its stored size the data can be: 1 without a compressing filter,
 * deflate's 1032 with gzip, 0 (no bound) with szip, nbit or scale-offset, in *ratio; 0 or -1 with
 * err. */
static int check_h5_filters(const char *file, const char *dset, hid_t dcpl, uint64_t *ratio, char *err, size_t errlen) {
    int n = H5Pget_nfilters(dcpl);
    *ratio = 1;
    for (int i = 0; i < n; i++) {
        unsigned flags, conf;
        size_t ncd = 0;
        char name[64] = "";
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, NULL, sizeof name, name, &conf);
        if (id < 0 || H5Zfilter_avail(id) <= 0)
            return util_fail(err, errlen, file, "array '%s': unsupported filter %s (HDF5 filter id %d); rewrite the dataset "
                                           "with gzip or no compression (h5repack -f NONE)", dset, filter_name(id, name), (int)id);
        if (id == H5Z_FILTER_DEFLATE && *ratio) *ratio = DEFLATE_MAX_RATIO;
        else if (id != H5Z_FILTER_SHUFFLE && id != H5Z_FILTER_FLETCHER32) *ratio = 0;
    }
    return 0;
}

/* The bytes the dataset declares must be stored in the file before any block is read: a few-kB
 * file can declare terabytes of fill value (unwritten chunks, unallocated contiguous storage) or
 * point at external files such as /dev/zero. Refuse all of those up front (docs/IMPORT.md).
 * 0 or -1 with err. */
static int check_h5_storage(const char *file, const ai_array *a, hid_t fid, char *err, size_t errlen) {
    hid_t dcpl = H5Dget_create_plist(a->dset);
    H5D_layout_t layout = H5Pget_layout(dcpl);
    int nexternal = H5Pget_external_count(dcpl);
    uint64_t max_ratio = 0;
    int bad = 0;
    if (nexternal != 0 || layout == H5D_VIRTUAL)
        bad = util_fail(err, errlen, file, "array '%s': its data are outside the file (%s); import reads only data stored in "
                                      "the file (h5repack copies them in)", a->name,
                   layout == H5D_VIRTUAL ? "a virtual dataset" : "external storage");
    else
        bad = check_h5_filters(file, a->name, dcpl, &max_ratio, err, errlen);
    hsize_t chunk[AI_MAX_RANK];
    int crank = !bad && layout == H5D_CHUNKED ? H5Pget_chunk(dcpl, AI_MAX_RANK, chunk) : 0;
    H5Pclose(dcpl);
    if (bad) return -1;
    hsize_t fsize = 0, stored = H5Dget_storage_size(a->dset);
    H5Fget_filesize(fid, &fsize);
    uint64_t declared = (uint64_t)numel(a) * (uint64_t)a->esize;
    if (stored > fsize)
        return util_fail(err, errlen, file, "array '%s': %llu bytes stored in a %llu-byte file (truncated or corrupt)", a->name,
                    (unsigned long long)stored, (unsigned long long)fsize);
    if (layout == H5D_CHUNKED) {
        if (crank != a->rank)
            return util_fail(err, errlen, file, "array '%s': chunk rank %d, dataset rank %d", a->name, crank, a->rank);
        double want = 1;   /* chunks covering the dataset; a double cannot overflow here */
        for (int i = 0; i < a->rank; i++) want *= chunk[i] ? (double)((a->shape[i] + chunk[i] - 1) / chunk[i]) : 0;
        hsize_t have = 0;
        hid_t fs = H5Dget_space(a->dset);
        herr_t e = H5Dget_num_chunks(a->dset, fs, &have);
        H5Sclose(fs);
        if (e < 0 || (double)have < want)
            return util_fail(err, errlen, file, "array '%s': %llu of %.0f chunks are stored, the rest is fill value never "
                                           "written (%llu bytes declared, %llu stored)", a->name, (unsigned long long)have,
                        want, (unsigned long long)declared, (unsigned long long)stored);
        if (max_ratio && stored < declared / max_ratio)
            return util_fail(err, errlen, file, "array '%s': %llu bytes declared from %llu stored, more than its filters can "
                                           "expand (%llux)", a->name, (unsigned long long)declared,
                        (unsigned long long)stored, (unsigned long long)max_ratio);
    } else if (stored < declared) {
        return util_fail(err, errlen, file, "array '%s': %llu of the %llu bytes declared are stored, the rest is fill value "
                                       "never written", a->name, (unsigned long long)stored, (unsigned long long)declared);
    }
    return 0;
}

/* The element type and shape of a's open dataset; 0 or -1 with err. */
static int h5_type_and_shape(const char *file, const char *dset, ai_array *a, char *err, size_t errlen) {
    hid_t t = H5Dget_type(a->dset);
    int cls = H5Tget_class(t);
    size_t sz = H5Tget_size(t), spos, epos, esz, mpos, msz;
    if (cls == H5T_FLOAT) H5Tget_fields(t, &spos, &epos, &esz, &mpos, &msz);
    H5Tclose(t);
    if (cls != H5T_FLOAT || (sz != 2 && sz != 4 && sz != 8))
        return util_fail(err, errlen, file, "array '%s': not a float16, bfloat16, float32 or float64 dataset", dset);
    a->esize = (int)sz;
    a->type = sz == 8 ? AI_F64 : sz == 4 ? AI_F32 : esz == 8 ? AI_BF16 : AI_F16;
    hid_t sp = H5Dget_space(a->dset);
    int rank = H5Sget_simple_extent_ndims(sp);
    hsize_t d[AI_MAX_RANK];
    if (rank < 0 || rank > AI_MAX_RANK) {
        H5Sclose(sp);
        return util_fail(err, errlen, file, "array '%s': rank %d outside 0..%d", dset, rank, AI_MAX_RANK);
    }
    H5Sget_simple_extent_dims(sp, d, NULL);
    H5Sclose(sp);
    a->rank = rank;
    double n = 1;
    for (int i = 0; i < rank; i++) a->shape[i] = (int64_t)d[i], n *= (double)d[i];
    if (n * (double)sz > (double)(INT64_MAX / 8)) return util_fail(err, errlen, file, "array '%s': too many elements", dset);
    return 0;
}

static void free_array(ai_array *a);

static int add_h5(ai_set *s, ai_file_rec *r, const char *file, const char *path, const char *dset,
                  char *err, size_t errlen) {
    if (!dset) return util_fail(err, errlen, file, "an HDF5 input names its dataset: FILE:/PATH");
    if (r->h5 < 0 && (r->h5 = h5io_open(path, NULL, err, errlen)) < 0) return -1;
    if (!h5io_exists(r->h5, dset)) return util_fail(err, errlen, file, "no dataset '%s'", dset);
    ai_array *a = xcalloc(1, sizeof *a);
    a->file = xstrdup(file);
    a->name = xstrdup(dset);
    a->kind = SRC_H5;
    a->dset = H5Dopen2(r->h5, dset, H5P_DEFAULT);
    int bad = a->dset < 0 ? util_fail(err, errlen, file, "'%s' is not a dataset", dset)
                          : h5_type_and_shape(file, dset, a, err, errlen) || check_h5_storage(file, a, r->h5, err, errlen);
    if (bad) {
        free_array(a);
        return -1;
    }
    push_array(s, a);
    return 0;
}

/* FILE, FILE:NAME or FILE:/PATH; a name that exists as a file is taken whole. */
static void split_spec(const char *spec, char **file, char **name) {
    struct stat st;
    const char *colon = strrchr(spec, ':');
    if (stat(spec, &st) == 0 || !strcmp(spec, "-") || !colon) {
        *file = xstrdup(spec);
        *name = NULL;
        return;
    }
    const char *first = strstr(spec, ":/");   /* HDF5 paths hold no second colon */
    if (first) colon = first;
    *file = xstrdup(spec);
    (*file)[colon - spec] = 0;
    *name = xstrdup(colon + 1);
}

/* The arrays of file (read at path), by its first bytes; 0 or -1 with err. */
static int add_file(ai_set *s, const char *file, const char *path, const char *name, char *err, size_t errlen) {
    struct stat st;
    if (stat(path, &st) != 0) return util_fail(err, errlen, file, "cannot open: %s", strerror(errno));
    if (S_ISDIR(st.st_mode)) return util_fail(err, errlen, file, "is a directory");
    ai_file_rec *r = file_rec(s, file, path, err, errlen);
    if (!r) return -1;
    unsigned char magic[8] = {0};
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(magic, 1, sizeof magic, f) : 0;
    if (f) fclose(f);
    if (got == 0) return util_fail(err, errlen, file, "empty file");
    if (!memcmp(magic, "\x93NUMPY", 6)) {
        if (name) return util_fail(err, errlen, file, "a .npy file holds one array; '%s' names none", name);
        return add_npy(s, r, file, path, err, errlen);
    }
    if (!memcmp(magic, "PK\x03\x04", 4) || !memcmp(magic, "PK\x05\x06", 4)) return add_npz(s, r, file, path, name, err, errlen);
    if (!memcmp(magic, "\x89HDF\r\n\x1a\n", 8)) return add_h5(s, r, file, path, name, err, errlen);
    if (got == 8 && (magic[7] | magic[6] | magic[5]) == 0) return add_safetensors(s, r, file, path, name, err, errlen);
    /* pickle protocol 2..5; after safetensors, whose header length may begin 80 02 */
    if (magic[0] == 0x80 && magic[1] >= 2 && magic[1] <= 5) return torch_refused(file, err, errlen);
    return util_fail(err, errlen, file, "not a .npy, .npz, safetensors or HDF5 file");
}

int ai_add(ai_set *s, const char *spec, char *err, size_t errlen) {
    char *file, *name;
    split_spec(spec, &file, &name);
    int is_stdin = !strcmp(file, "-"), rc = -1;
    char *path = NULL;
    if (is_stdin && s->stdin_used++) {
        snprintf(err, errlen, "stdin ('-') can be read only once");
        rc = -2;
    } else if ((path = is_stdin ? stdin_to_file(err, errlen) : xstrdup(file))) {
        rc = add_file(s, file, path, name, err, errlen);
        if (is_stdin) cli_temp_remove(path);
    }
    free(path);
    free(file);
    free(name);
    return rc;
}

/* ---- reading ---- */
static double decode(const unsigned char *p, ai_dtype t, int swap) {
    unsigned char b[8];
    int n = t == AI_F64 ? 8 : t == AI_F32 ? 4 : 2;
    for (int i = 0; i < n; i++) b[i] = swap ? p[n - 1 - i] : p[i];
    if (t == AI_F64) { double d; memcpy(&d, b, 8); return d; }
    if (t == AI_F32) { float f; memcpy(&f, b, 4); return f; }
    uint16_t h = (uint16_t)(b[0] | b[1] << 8);
    return t == AI_BF16 ? half_bf16_to_f32(h) : half_f16_to_f32(h);
}

/* Element strides (C or Fortran order). */
static void strides(const ai_array *a, int64_t *st) {
    int64_t acc = 1;
    if (a->fortran)
        for (int i = 0; i < a->rank; i++) st[i] = acc, acc *= a->shape[i];
    else
        for (int i = a->rank - 1; i >= 0; i--) st[i] = acc, acc *= a->shape[i];
}

static void read_mem(const ai_array *a, const int64_t *lead, double *out) {
    int64_t st[AI_MAX_RANK], base = 0;
    strides(a, st);
    int r = a->rank;
    for (int i = 0; i < r - 3; i++) base += lead[i] * st[i];
    int64_t n0 = a->shape[r - 3], n1 = a->shape[r - 2], n2 = a->shape[r - 1];
    size_t k = 0;
    for (int64_t i = 0; i < n0; i++)
        for (int64_t j = 0; j < n1; j++)
            for (int64_t m = 0; m < n2; m++) {
                int64_t off = base + i * st[r - 3] + j * st[r - 2] + m * st[r - 1];
                out[k++] = decode(a->data + off * a->esize, a->type, a->swap);
            }
}

/* A fresh stream positioned at the first data byte; 0 or -1 with err. */
static int zip_rewind(ai_array *a, char *err, size_t errlen) {
    if (a->zf) zip_fclose(a->zf);
    a->zf = zip_member_open(a, err, errlen);
    if (!a->zf) return -1;
    unsigned char *skip = xmalloc(a->zhdr);
    int rc = zip_read_exact(a, a->zf, skip, a->zhdr, err, errlen);
    free(skip);
    a->zpos = 0;
    return rc;
}

/* Fortran-ordered members cannot be streamed a block at a time: read them whole once. */
static int zip_load_whole(ai_array *a, char *err, size_t errlen) {
    uint64_t n = (uint64_t)numel(a) * a->esize;
    if (zip_rewind(a, err, errlen)) return -1;
    unsigned char *whole = xmalloc(n ? n : 1);
    if (zip_read_exact(a, a->zf, whole, n, err, errlen)) {
        free(whole);
        return -1;
    }
    a->owned = whole;
    zip_fclose(a->zf);
    a->zf = NULL;
    a->kind = SRC_MEM;
    a->data = a->owned;
    return 0;
}

static int read_zip(ai_array *a, const int64_t *lead, double *out, char *err, size_t errlen) {
    int64_t st[AI_MAX_RANK], base = 0;
    strides(a, st);
    int r = a->rank;
    for (int i = 0; i < r - 3; i++) base += lead[i] * st[i];
    uint64_t cnt = (uint64_t)(a->shape[r - 3] * a->shape[r - 2] * a->shape[r - 1]);
    uint64_t from = (uint64_t)base * a->esize, nbytes = cnt * a->esize;
    if ((!a->zf || from < a->zpos) && zip_rewind(a, err, errlen)) return -1;   /* a second pass starts over */
    a->raw = xrealloc(a->raw, nbytes ? nbytes : 1);
    while (a->zpos < from) {                  /* skip forward (blocks read in order do not) */
        uint64_t step = from - a->zpos < nbytes ? from - a->zpos : nbytes;
        if (zip_read_exact(a, a->zf, a->raw, step, err, errlen)) return -1;
        a->zpos += step;
    }
    if (zip_read_exact(a, a->zf, a->raw, nbytes, err, errlen)) return -1;
    a->zpos += nbytes;
    for (uint64_t i = 0; i < cnt; i++) out[i] = decode(a->raw + i * a->esize, a->type, a->swap);
    return 0;
}

static int read_h5(const ai_array *a, const int64_t *lead, double *out, char *err, size_t errlen) {
    hsize_t start[AI_MAX_RANK] = {0}, count[AI_MAX_RANK];
    int r = a->rank;
    for (int i = 0; i < r; i++) {
        start[i] = i < r - 3 ? (hsize_t)lead[i] : 0;
        count[i] = i < r - 3 ? 1 : (hsize_t)a->shape[i];
    }
    hid_t fs = H5Dget_space(a->dset);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(r, count, NULL);
    herr_t e = H5Dread(a->dset, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, out);
    H5Sclose(ms);
    H5Sclose(fs);
    if (e < 0) return util_fail(err, errlen, a->file, "array '%s': cannot read (truncated or corrupt dataset)", a->name);
    return 0;
}

int ai_read_block(ai_array *a, const int64_t *lead, double *out, char *err, size_t errlen) {
    if (a->kind == SRC_ZIP && a->fortran && zip_load_whole(a, err, errlen)) return -1;
    if (a->kind == SRC_MEM) {
        read_mem(a, lead, out);
        return 0;
    }
    if (a->kind == SRC_ZIP) return read_zip(a, lead, out, err, errlen);
    return read_h5(a, lead, out, err, errlen);
}

static void free_array(ai_array *a) {
    if (a->zf) zip_fclose(a->zf);
    if (a->kind == SRC_H5 && a->dset >= 0) H5Dclose(a->dset);
    free(a->owned);
    free(a->raw);
    free(a->file);
    free(a->name);
    free(a);
}

void ai_close(ai_set *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) free_array(s->a[i]);
    for (int i = 0; i < s->nf; i++) {
        ai_file_rec *r = &s->f[i];
        if (r->map) munmap(r->map, r->size);
        if (r->za) zip_discard(r->za);
        if (r->st) st_close(r->st);
        if (r->h5 >= 0) H5Fclose(r->h5);
        free(r->name);
    }
    free(s->a);
    free(s->f);
    free(s);
}

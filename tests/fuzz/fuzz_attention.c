/* The attention file (docs/FORMAT.md), structure-aware: HDF5's own parser is not ours to fuzz, so
 * the input bytes drive how a well-formed HDF5 file is written — each root attribute correct,
 * absent, an array, of the wrong class, a fixed or variable string of any size, or a null
 * dataspace; the attention dataset with a right or wrong shape and hostile values; optional
 * valid and tokens datasets — and the reader then opens it and reads every block. */
#include "fuzz.h"
#include <hdf5.h>
#include "attn/attnio.h"
#include "io/h5io.h"

#include <math.h>

typedef struct { const uint8_t *p; size_t n; } bytes;
static unsigned next(bytes *b) {
    if (!b->n) return 0;
    b->n--;
    return *b->p++;
}

static void attr(hid_t f, const char *key, hid_t type, hid_t sp, const void *val) {
    hid_t a = H5Acreate2(f, key, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0 && val) H5Awrite(a, type, val);
    if (a >= 0) H5Aclose(a);
}

static void attr_string(hid_t f, const char *key, const char *val, bytes *b) {
    unsigned how = next(b) % 4;
    hid_t t = H5Tcopy(H5T_C_S1);
    hsize_t n = how == 3 ? 1 + next(b) % 70 : 1;
    hid_t sp = how == 3 ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR);
    if (how == 1) {   /* variable-length */
        H5Tset_size(t, H5T_VARIABLE);
        const char **v = calloc(n, sizeof *v);
        for (hsize_t i = 0; i < n; i++) v[i] = val;
        attr(f, key, t, sp, v);
        free(v);
    } else {          /* fixed, of its own length or of a size from the input */
        size_t len = how == 2 ? 1 + next(b) * 37u : strlen(val) + 1;
        char *v = calloc(n, len);
        for (hsize_t i = 0; i < n; i++) memcpy(v + i * len, val, strlen(val) + 1 < len ? strlen(val) + 1 : len);
        H5Tset_size(t, len);
        attr(f, key, t, sp, v);
        free(v);
    }
    H5Sclose(sp);
    H5Tclose(t);
}

/* An integer attribute: right, absent, off by the input, an array, a float, a string, null. */
static void attr_int(hid_t f, const char *key, long long val, bytes *b) {
    unsigned how = next(b) % 10;
    if (how == 4) return;
    hsize_t n = how == 5 ? 1 + next(b) % 4096 : 1;
    hid_t sp = how == 7 ? H5Screate(H5S_NULL) : how == 5 ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR);
    if (how == 6) {
        double d = val + (next(b) - 128) / 64.0;
        attr(f, key, H5T_NATIVE_DOUBLE, sp, &d);
    } else if (how == 8) {
        attr_string(f, key, "7", b);
    } else {
        long long *v = calloc(n, sizeof *v);
        for (hsize_t i = 0; i < n; i++) v[i] = val;
        if (how == 9) v[0] = (long long)(((unsigned long long)next(b) << (next(b) % 64)) - next(b));
        attr(f, key, H5T_NATIVE_LLONG, sp, how == 7 ? NULL : v);
        free(v);
    }
    H5Sclose(sp);
}

static void attr_str(hid_t f, const char *key, const char *val, bytes *b) {
    unsigned how = next(b) % 6;
    if (how == 4) return;
    if (how == 5) {
        attr_int(f, key, 3, b);
        return;
    }
    attr_string(f, key, val, b);
}

static float hostile(unsigned c) {
    static const float v[] = {NAN, INFINITY, -INFINITY, 0, -0.0f, 1, 2, -1, 1e-45f, 3.4e38f, 0.5f, -1e30f};
    return v[c % (sizeof v / sizeof v[0])];
}

static void write_file(const char *path, bytes *b) {
    int S = 1 + next(b) % 3, L = 1 + next(b) % 2, H = 1 + next(b) % 2, T = 2 + next(b) % 3;
    int causal = next(b) & 1, logprob = next(b) & 1;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    attr_str(f, "format", "attncoda-attention", b);
    attr_int(f, "format_version", 1, b);
    attr_int(f, "sequences", S, b);
    attr_int(f, "layers", L, b);
    attr_int(f, "heads", H, b);
    attr_int(f, "tokens", T, b);
    attr_int(f, "causal", causal, b);
    attr_int(f, "sink", 0, b);
    attr_str(f, "values", logprob ? "logprob" : "prob", b);
    attr_str(f, "model", "fuzz", b);
    attr_str(f, "family", "gpt2", b);
    attr_str(f, "text", "t", b);
    attr_int(f, "seed", 1, b);
    attr_str(f, "provenance", "{}", b);
    hsize_t d[5] = {S, L, H, T, T};
    if (next(b) % 8 == 0) d[next(b) % 5] += 1;
    size_t n = d[0] * d[1] * d[2] * d[3] * d[4];
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        int t = (int)(i / T % T), j = (int)(i % T);
        double p = causal ? (j <= t ? 1.0 / (t + 1) : 0) : 1.0 / T;
        x[i] = logprob ? (p > 0 ? (float)log(p) : -INFINITY) : (float)p;
    }
    for (unsigned k = next(b) % 4; k > 0; k--) x[(next(b) * 256u + next(b)) % n] = hostile(next(b));
    hid_t sp = H5Screate_simple(5, d, NULL);
    hid_t ds = H5Dcreate2(f, "attention", next(b) % 16 ? H5T_IEEE_F32LE : H5T_STD_I32LE, sp, H5P_DEFAULT,
                          H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x);
    H5Dclose(ds);
    H5Sclose(sp);
    free(x);
    for (int k = 0; k < 2; k++) {   /* valid, tokens */
        if (next(b) % 2) continue;
        hsize_t v[2] = {S, T};
        if (next(b) % 8 == 0) v[1] += 1;
        int *y = malloc(v[0] * v[1] * sizeof *y);
        for (size_t i = 0; i < v[0] * v[1]; i++) y[i] = k == 0 ? next(b) % 5 != 0 : (int)next(b) - 3;
        sp = H5Screate_simple(2, v, NULL);
        ds = H5Dcreate2(f, k == 0 ? "valid" : "tokens", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dwrite(ds, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, y);
        H5Dclose(ds);
        H5Sclose(sp);
        free(y);
    }
    H5Fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    h5io_quiet();
    bytes b = {data, size};
    static char path[160];
    snprintf(path, sizeof path, "%s/attention.h5", fz_tmpdir());
    write_file(path, &b);
    char err[2048];
    attn_reader *r = attn_open(path, err, sizeof err);
    if (!r) return 0;
    const attn_meta *m = attn_meta_get(r);
    float *blk = malloc((size_t)m->H * m->Q * m->T * sizeof *blk);
    uint8_t *valid = malloc((size_t)m->S * m->T);
    int32_t *tokens = malloc((size_t)m->S * m->T * sizeof *tokens);
    attn_read_valid(r, valid);
    int bad = attn_read_tokens(r, tokens, err, sizeof err);
    for (int s = 0; s < m->S && !bad; s++)
        for (int l = 0; l < m->L && !bad; l++) bad = attn_read_block(r, s, l, blk, err, sizeof err);
    free(blk);
    free(valid);
    free(tokens);
    attn_close(r);
    return 0;
}

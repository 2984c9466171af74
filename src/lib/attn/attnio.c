/* The attention file (docs/FORMAT.md): reading validates every kept row as it streams. Errors
 * are returned, never fatal here (see attnio.h). */
#include "attnio.h"

#include "core/util.h"
#include "coda.h"
#include "io/h5io.h"

#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define ROW_TOL 1e-4   /* |Σp − 1| or |logsumexp| allowed before a row is rejected */

struct attn_reader {
    hid_t f, dset;
    attn_meta m;
    char *path, *prov, sha[65];
    uint8_t *valid;   /* S*T, NULL when the file has none */
    int32_t *qpos;    /* S*Q from query_pos, or 0..T-1 once (every row stored) */
    int sampled;
};

/* A required integer attribute of the root, in [lo, hi], into *v; 0 or -1 with err. */
static int need_int(hid_t f, const char *path, const char *key, long long lo, long long hi, long long *v,
                    char *err, size_t errlen) {
    int got = h5io_get_attr_int(f, "/", key, v, err, errlen);
    if (got < 0) return -1;
    if (got > 0) return util_fail(err, errlen, path, "missing integer attribute '%s'", key);
    if (*v < lo || *v > hi) return util_fail(err, errlen, path, "attribute '%s' = %lld is out of range [%lld, %lld]", key, *v, lo, hi);
    return 0;
}

static int copy_attr_str(hid_t f, const char *key, char *dst, size_t cap, char *err, size_t errlen) {
    char *s = h5io_get_attr_str(f, "/", key, err, errlen);
    if (!s && err[0]) return -1;
    snprintf(dst, cap, "%s", s ? s : "");
    free(s);
    return 0;
}

/* The root string attribute 'format' is want; 0 or -1 with err. */
static int check_format(attn_reader *r, char *err, size_t errlen) {
    char *fmt = h5io_get_attr_str(r->f, "/", "format", err, errlen);
    if (!fmt && err[0]) return -1;
    int ok = fmt && strcmp(fmt, "attncoda-attention") == 0;
    if (!ok) util_fail(err, errlen, r->path, "not an attncoda attention file (attribute 'format' is %s)", fmt ? fmt : "missing");
    free(fmt);
    return ok ? 0 : -1;
}

/* The integer attributes, in the order they are checked. */
static int read_shape_attrs(attn_reader *r, char *err, size_t errlen) {
    hid_t f = r->f;
    const char *p = r->path;
    attn_meta *m = &r->m;
    long long v, S, L, H, T, causal, sink;
    if (need_int(f, p, "format_version", 1, 1, &v, err, errlen) || need_int(f, p, "sequences", 1, 1 << 30, &S, err, errlen) ||
        need_int(f, p, "layers", 1, 4096, &L, err, errlen) || need_int(f, p, "heads", 1, 4096, &H, err, errlen) ||
        need_int(f, p, "tokens", 1, 1 << 20, &T, err, errlen) || need_int(f, p, "causal", 0, 1, &causal, err, errlen) ||
        need_int(f, p, "sink", 0, T - 1, &sink, err, errlen))
        return -1;
    m->S = (int)S, m->L = (int)L, m->H = (int)H, m->T = (int)T, m->causal = (int)causal, m->sink = (int)sink;
    return 0;
}

static int read_meta(attn_reader *r, char *err, size_t errlen) {
    hid_t f = r->f;
    const char *p = r->path;
    if (check_format(r, err, errlen) || read_shape_attrs(r, err, errlen)) return -1;
    attn_meta *m = &r->m;
    char *vals = h5io_get_attr_str(f, "/", "values", err, errlen);
    if (!vals && err[0]) return -1;
    if (!vals || (strcmp(vals, "logprob") && strcmp(vals, "prob"))) {
        util_fail(err, errlen, p, "attribute 'values' must be \"logprob\" or \"prob\" (is %s)", vals ? vals : "missing");
        free(vals);
        return -1;
    }
    m->logprob = strcmp(vals, "logprob") == 0;
    free(vals);
    if (copy_attr_str(f, "model", m->model, sizeof m->model, err, errlen) ||
        copy_attr_str(f, "family", m->family, sizeof m->family, err, errlen) ||
        copy_attr_str(f, "text", m->text, sizeof m->text, err, errlen))
        return -1;
    int got = h5io_get_attr_int(f, "/", "seed", &m->seed, err, errlen);
    if (got < 0) return -1;
    if (got > 0) m->seed = -1;
    return 0;
}

static int check_shapes(attn_reader *r, char *err, size_t errlen) {
    const attn_meta *m = &r->m;
    hsize_t d[8];
    int rank = h5io_dims(r->f, r->path, "attention", d, 8, err, errlen);
    if (rank < 0) return -1;
    if (rank != 5) return util_fail(err, errlen, r->path, "dataset 'attention' has rank %d, expected 5 [S,L,H,T,T]", rank);
    hsize_t want[5] = {m->S, m->L, m->H, m->Q, m->T};
    for (int i = 0; i < 5; i++)
        if (d[i] != want[i])
            return util_fail(err, errlen, r->path,
                        "dataset 'attention' shape [%llu,%llu,%llu,%llu,%llu] disagrees with attributes [%d,%d,%d,%d,%d]",
                        (unsigned long long)d[0], (unsigned long long)d[1], (unsigned long long)d[2],
                        (unsigned long long)d[3], (unsigned long long)d[4], m->S, m->L, m->H, m->Q, m->T);
    /* Q = T unless the file holds sampled rows (query_pos) */
    long long block = (long long)m->H * m->Q * m->T;
    if (block > ATTN_MAX_BLOCK_ENTRIES)
        return util_fail(err, errlen, r->path, "one (sequence, layer) block is H*Q*T = %d*%d*%d = %lld floats (%.1f GiB), "
                    "above the cap of 2^28 floats (1 GiB)", m->H, m->Q, m->T, block, (double)block * 4 / (1 << 30));
    return 0;
}

static int check_storage(attn_reader *r, char *err, size_t errlen) {
    const attn_meta *m = &r->m;
    char why[160];
    unsigned long long n = (unsigned long long)m->S * m->L * m->H * m->Q * m->T;
    if (h5io_storage_problem(r->dset, n, why, sizeof why))
        return util_fail(err, errlen, r->path, "dataset 'attention' %s", why);
    return 0;
}

/* Why the valid mask v (S*T) is unusable, into err, or 0: see read_valid. */
static int check_valid(const attn_reader *r, const int *v, char *err, size_t errlen) {
    const attn_meta *m = &r->m;
    for (int s = 0; s < m->S; s++) {
        const int *vs = v + (size_t)s * m->T;
        int any = 0;
        for (int t = 0; t < m->T; t++) {
            if (vs[t] != 0 && vs[t] != 1)
                return util_fail(err, errlen, r->path, "dataset 'valid': value %d at (sequence %d, token %d), want 0 or 1",
                            vs[t], s, t);
            if (m->causal && t > 0 && vs[t] && !vs[t - 1])
                return util_fail(err, errlen, r->path, "dataset 'valid': sequence %d of a causal file has padding before "
                            "token %d (only right padding is allowed)", s, t);
            any |= vs[t];
        }
        if (!any) return util_fail(err, errlen, r->path, "dataset 'valid': sequence %d has no valid token", s);
    }
    return 0;
}

/* valid: 0 or 1; every sequence has a valid token (else its head statistics would be 0/0); a
 * causal file pads on the right only (a causal row t has keys 0..t: left padding would put
 * padding keys inside rows). */
static int read_valid(attn_reader *r, char *err, size_t errlen) {
    const attn_meta *m = &r->m;
    hsize_t w[2] = {m->S, m->T};
    int *v = h5io_read_i32(r->f, r->path, "valid", 2, w, NULL, err, errlen);
    if (!v) return -1;
    if (check_valid(r, v, err, errlen)) {
        free(v);
        return -1;
    }
    r->valid = xmalloc((size_t)m->S * m->T);
    for (size_t i = 0; i < (size_t)m->S * m->T; i++) r->valid[i] = (uint8_t)v[i];
    free(v);
    return 0;
}

/* layer_index [L] / head_index [H]: the original numbers of a subset, never negative. */
static int check_index(attn_reader *r, const char *name, int n, char *err, size_t errlen) {
    if (!h5io_exists(r->f, name)) return 0;
    hsize_t w[1] = {(hsize_t)n};
    int *x = h5io_read_i32(r->f, r->path, name, 1, w, NULL, err, errlen);
    if (!x) return -1;
    int bad = -1;
    for (int i = 0; i < n && bad < 0; i++)
        if (x[i] < 0) bad = i;
    int value = bad >= 0 ? x[bad] : 0;
    free(x);
    if (bad >= 0) return util_fail(err, errlen, r->path, "dataset '%s': entry %d is %d, want a non-negative index", name, bad, value);
    return 0;
}

const char *attn_check_query_pos(const int32_t *pos, int Q, int T) {
    for (int i = 0; i < Q; i++) {
        if (pos[i] < 0 || pos[i] >= T) return "query position outside [0, T)";
        if (i && pos[i] <= pos[i - 1]) return "query positions not strictly increasing";
    }
    return NULL;
}

/* query_pos [S,Q] int32 (sampled rows), checked before any block is sized by it; without it
 * every row is stored and the positions are the identity. */
static int read_query_pos(attn_reader *r, char *err, size_t errlen) {
    attn_meta *m = &r->m;
    if (!h5io_exists(r->f, "query_pos")) {
        m->Q = m->T;
        r->qpos = xmalloc(sizeof *r->qpos * (size_t)m->T);
        for (int t = 0; t < m->T; t++) r->qpos[t] = t;
        return 0;
    }
    hsize_t d[8];
    int rank = h5io_dims(r->f, r->path, "query_pos", d, 8, err, errlen);
    if (rank < 0) return -1;
    if (rank != 2 || d[0] != (hsize_t)m->S || d[1] < 1 || d[1] > (hsize_t)m->T)
        return util_fail(err, errlen, r->path, "dataset 'query_pos' must be [S=%d, Q] with 1 <= Q <= T=%d", m->S, m->T);
    m->Q = (int)d[1];
    hsize_t want[2] = {m->S, m->Q};
    r->qpos = (int32_t *)h5io_read_i32(r->f, r->path, "query_pos", 2, want, NULL, err, errlen);
    if (!r->qpos) return -1;
    r->sampled = 1;
    for (int s = 0; s < m->S; s++) {
        const char *why = attn_check_query_pos(r->qpos + (size_t)s * m->Q, m->Q, m->T);
        if (why) return util_fail(err, errlen, r->path, "dataset 'query_pos': sequence %d: %s", s, why);
    }
    return 0;
}

const int32_t *attn_query_pos(const attn_reader *r, int s) {
    return r->sampled ? r->qpos + (size_t)s * r->m.Q : r->qpos;
}
int attn_is_sampled(const attn_reader *r) { return r->sampled; }

/* The attention dataset opened: floating point, its declared bytes stored. */
static int open_attention(attn_reader *r, char *err, size_t errlen) {
    r->dset = H5Dopen2(r->f, "attention", H5P_DEFAULT);
    if (r->dset < 0) return util_fail(err, errlen, r->path, "cannot open dataset 'attention'");
    hid_t t = H5Dget_type(r->dset);
    int is_float = H5Tget_class(t) == H5T_FLOAT;
    H5Tclose(t);
    if (!is_float) return util_fail(err, errlen, r->path, "dataset 'attention' is not floating point");
    return check_storage(r, err, errlen);
}

attn_reader *attn_open(const char *path, char *err, size_t errlen) {
    attn_reader *r = xcalloc(1, sizeof *r);
    r->path = xstrdup(path);
    r->dset = -1;
    r->f = h5io_open(path, r->sha, err, errlen);
    int bad = r->f < 0 || read_meta(r, err, errlen) || read_query_pos(r, err, errlen) || check_shapes(r, err, errlen) ||
              (h5io_exists(r->f, "valid") && read_valid(r, err, errlen)) ||
              check_index(r, "layer_index", r->m.L, err, errlen) || check_index(r, "head_index", r->m.H, err, errlen);
    if (!bad) {
        r->prov = h5io_get_attr_str(r->f, "/", "provenance", err, errlen);
        bad = !r->prov && err[0];
        if (!bad && !r->prov) r->prov = xstrdup("{}");
    }
    if (bad || open_attention(r, err, errlen)) {
        attn_close(r);
        return NULL;
    }
    return r;
}

const attn_meta *attn_meta_get(const attn_reader *r) { return &r->m; }
const char *attn_provenance(const attn_reader *r) { return r->prov; }
const char *attn_checksum(const attn_reader *r) { return r->sha; }
const char *attn_path(const attn_reader *r) { return r->path; }
h5io_id attn_reader_file(const attn_reader *r) { return r->f; }
int attn_has_valid(const attn_reader *r) { return r->valid != NULL; }

int attn_row_parts(const attn_meta *m, const uint8_t *valid_s, int t) {
    if (m->causal) return t + 1;
    if (!valid_s) return m->T;
    int n = 0;
    for (int j = 0; j < m->T; j++) n += valid_s[j] != 0;
    return n;
}

/* Returns a reason string when a row is not a closed composition, else NULL. */
static const char *check_row(const float *row, const attn_meta *m, const uint8_t *vs, int t) {
    double mx = -INFINITY, acc = 0;
    for (int j = 0; j < m->T; j++) {
        if (!attn_key_in_row(m, vs, t, j)) continue;
        float v = row[j];
        if (isnan(v)) return "NaN";
        if (m->logprob) {
            if (v == INFINITY || v > ROW_TOL) return "log-probability above 0 or +Inf";
            if (v == -INFINITY) return "zero probability (-inf log) inside a row";
            if (v > mx) mx = v;
        } else {
            if (isinf(v)) return "Inf";
            if (v < 0) return "negative probability";
            acc += v;
        }
    }
    if (m->logprob) {
        /* single precision is ample for a 1e-4 tolerance and several times cheaper */
        float s = 0, fm = (float)mx;
        for (int j = 0; j < m->T; j++)
            if (attn_key_in_row(m, vs, t, j)) s += expf(row[j] - fm);
        double lse = mx + log(s);
        if (fabs(lse) > ROW_TOL) return "log row does not close (logsumexp differs from 0 by more than 1e-4)";
    } else if (fabs(acc - 1) > ROW_TOL) {
        return "row does not sum to 1 (beyond 1e-4)";
    }
    return NULL;
}

/* One (s, l) block of H×T×T floats through a hyperslab: the unit of every attention read and
 * write (one chunk, so one decompression or compression per call). */
static herr_t block_io(hid_t dset, const attn_meta *m, int s, int l, float *buf, int write) {
    h5io_quiet();   /* readers call this from OpenMP threads (decompose reads ahead in omp single) */
    hsize_t start[5] = {s, l, 0, 0, 0}, count[5] = {1, 1, m->H, m->Q, m->T};
    hid_t fs = H5Dget_space(dset);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(5, count, NULL);
    herr_t e = write ? H5Dwrite(dset, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf)
                     : H5Dread(dset, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf);
    H5Sclose(ms);
    H5Sclose(fs);
    return e;
}

int attn_read_block_raw(attn_reader *r, int s, int l, float *buf, char *err, size_t errlen) {
    if (block_io(r->dset, &r->m, s, l, buf, 0) < 0)
        return util_fail(err, errlen, r->path, "cannot read attention block (sequence %d, layer %d): truncated or corrupt", s, l);
    return 0;
}

int attn_read_block(attn_reader *r, int s, int l, float *buf, char *err, size_t errlen) {
    const attn_meta *m = &r->m;
    if (attn_read_block_raw(r, s, l, buf, err, errlen)) return -1;
    const uint8_t *vs = r->valid ? r->valid + (size_t)s * m->T : NULL;
    const int32_t *qp = attn_query_pos(r, s);
    int bad_h = -1, bad_t = -1;
    const char *why = NULL;
    #pragma omp parallel for schedule(static) if (m->H * m->Q > 256)
    for (int h = 0; h < m->H; h++) {
        for (int i = 0; i < m->Q; i++) {
            int t = qp[i];
            if (vs && !vs[t]) continue;
            const char *w = check_row(buf + ((size_t)h * m->Q + i) * m->T, m, vs, t);
            if (w) {
                #pragma omp critical
                if (!why || h < bad_h) { why = w; bad_h = h; bad_t = t; }
                break;
            }
        }
    }
    if (why) return util_fail(err, errlen, r->path, "%s in row (sequence %d, layer %d, head %d, query %d)", why, s, l, bad_h, bad_t);
    return 0;
}

int attn_read_tokens(attn_reader *r, int32_t *tokens, char *err, size_t errlen) {
    size_t n = (size_t)r->m.S * r->m.T;
    if (!h5io_exists(r->f, "tokens")) { memset(tokens, 0, n * sizeof *tokens); return 0; }
    hsize_t w[2] = {r->m.S, r->m.T};
    int *v = h5io_read_i32(r->f, r->path, "tokens", 2, w, NULL, err, errlen);
    if (!v) return -1;
    for (size_t i = 0; i < n; i++) tokens[i] = v[i];
    free(v);
    return 0;
}

void attn_read_valid(attn_reader *r, uint8_t *valid) {
    size_t n = (size_t)r->m.S * r->m.T;
    if (r->valid) memcpy(valid, r->valid, n);
    else memset(valid, 1, n);
}

void attn_close(attn_reader *r) {
    if (!r) return;
    if (r->dset >= 0) H5Dclose(r->dset);
    if (r->f >= 0) H5Fclose(r->f);
    free(r->valid);
    free(r->qpos);
    free(r->prov);
    free(r->path);
    free(r);
}

struct attn_writer {
    hid_t f, dset;
    attn_meta m;
    char *path;
    int tokens_written;
};

int attn_write_shape_attrs(hid_t f, const char *format, const attn_meta *m) {
    int rc = h5io_attr_str(f, "/", "format", format);
    rc |= h5io_attr_int(f, "/", "format_version", 1);
    rc |= h5io_attr_int(f, "/", "sequences", m->S);
    rc |= h5io_attr_int(f, "/", "layers", m->L);
    rc |= h5io_attr_int(f, "/", "heads", m->H);
    rc |= h5io_attr_int(f, "/", "tokens", m->T);
    rc |= h5io_attr_int(f, "/", "causal", m->causal);
    return rc ? -1 : 0;
}

static void write_meta(hid_t f, const attn_meta *m, const char *prov) {
    attn_write_shape_attrs(f, "attncoda-attention", m);
    h5io_attr_int(f, "/", "sink", m->sink);
    h5io_attr_str(f, "/", "values", m->logprob ? "logprob" : "prob");
    h5io_attr_str(f, "/", "model", m->model);
    h5io_attr_str(f, "/", "family", m->family);
    h5io_attr_str(f, "/", "text", m->text);
    h5io_attr_int(f, "/", "seed", m->seed);
    h5io_attr_str(f, "/", "provenance", prov ? prov : "{}");
}

static int g_deflate = 1;
void attn_set_deflate(int level) { g_deflate = level < 0 ? 0 : level > 9 ? 9 : level; }

int attn_create(attn_writer **w, const char *path, const attn_meta *m, const char *prov, char *err, size_t errlen) {
    return attn_create_rows(w, path, m, prov, NULL, err, errlen);
}

int attn_create_rows(attn_writer **w_out, const char *path, const attn_meta *m, const char *prov,
                     const int32_t *query_pos, char *err, size_t errlen) {
    *w_out = NULL;
    hid_t f = h5io_create(path, err, errlen);
    if (f < 0) return (int)f;
    attn_writer *w = xcalloc(1, sizeof *w);
    w->path = xstrdup(path);
    w->m = *m;
    w->m.Q = query_pos ? m->Q : m->T;
    m = &w->m;
    w->f = f;
    write_meta(w->f, m, prov);
    if (query_pos) {
        hsize_t qd[2] = {m->S, m->Q};
        h5io_write_i32(w->f, "query_pos", 2, qd, query_pos);
    }
    hsize_t dims[5] = {m->S, m->L, m->H, m->Q, m->T}, chunk[5] = {1, 1, m->H, m->Q, m->T};
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(dcpl, 0);
    H5Pset_chunk(dcpl, 5, chunk);
    if (g_deflate > 0) {
        H5Pset_shuffle(dcpl);
        H5Pset_deflate(dcpl, g_deflate);
    }
    float fill = m->logprob ? -INFINITY : 0.0f;
    H5Pset_fill_value(dcpl, H5T_NATIVE_FLOAT, &fill);
    hid_t sp = H5Screate_simple(5, dims, NULL);
    w->dset = H5Dcreate2(w->f, "attention", H5T_IEEE_F32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Sclose(sp);
    H5Pclose(dcpl);
    if (w->dset < 0) {
        util_fail(err, errlen, path, "cannot create dataset 'attention'");
        h5io_discard(w->f);
        free(w->path);
        free(w);
        return -1;
    }
    *w_out = w;
    return 0;
}

int attn_write_block(attn_writer *w, int s, int l, const float *buf) {
    if (block_io(w->dset, &w->m, s, l, (float *)buf, 1) >= 0) return 0;
    char msg[1024];
    util_fail(msg, sizeof msg, w->path, "cannot write attention block (sequence %d, layer %d)", s, l);
    h5io_note_error(w->f, msg);
    return -1;
}

int attn_write_tokens(attn_writer *w, const int32_t *tokens) {
    hsize_t d[2] = {w->m.S, w->m.T};
    w->tokens_written = 1;
    return h5io_write_i32(w->f, "tokens", 2, d, (const int *)tokens);
}

int attn_write_valid(attn_writer *w, const uint8_t *valid) {
    size_t n = (size_t)w->m.S * w->m.T;
    int *v = xmalloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = valid[i];
    hsize_t d[2] = {w->m.S, w->m.T};
    int rc = h5io_write_i32(w->f, "valid", 2, d, v);
    free(v);
    return rc;
}

h5io_id attn_writer_file(const attn_writer *w) { return w->f; }

int attn_finish(attn_writer *w, char *err, size_t errlen) {
    H5Dclose(w->dset);
    int rc = h5io_finish(w->f, w->path, err, errlen);
    free(w->path);
    free(w);
    return rc;
}

int attn_row_kept(const attn_meta *m, const uint8_t *vs, int t, int sink, int min_query, int excl) {
    if (vs && !vs[t]) return 0;
    if (m->causal && (t < min_query || t < sink)) return 0;
    if (!m->causal && vs && !vs[sink]) return 0;
    if (excl && t == sink) return 0;
    return attn_row_parts(m, vs, t) >= 3;
}

/* libmvec supplies vector variants of exp (linked through libm's AS_NEEDED script); this
 * declaration lets the simd loop below call them: closing every row is on the hot path of
 * decompose, and the vector loop makes it about as cheap as the read. */
#pragma omp declare simd notinbranch
double exp(double);

/* ℓ − logsumexp ℓ in place; the logsumexp, or a non-finite value when the row has no finite
 * part. The sum of D terms in (0, 1], one of them 1, is accurate to D·2^-53 relative, far below
 * the 1e-12 the closed rows are checked to. */
static double close_log(double *x, int D) {
    double m = -INFINITY;
    for (int i = 0; i < D; i++) m = x[i] > m ? x[i] : m;
    if (!isfinite(m)) return m;
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < D; i++) s += exp(x[i] - m);
    double lse = m + log(s);
#pragma omp simd
    for (int i = 0; i < D; i++) x[i] -= lse;
    return lse;
}

int attn_close_row(double *x, int D, int logprob, double zero_delta) {
    if (logprob) return isfinite(close_log(x, D)) ? 0 : -1;
    double sum = coda_sum(x, D);
    if (!(sum > 0) || !isfinite(sum)) return -1;
    int z = 0;
    for (int i = 0; i < D; i++) {
        x[i] /= sum;
        z += x[i] <= 0;
    }
    if (z * zero_delta >= 1) return -1;
    coda_zero_replace_log(x, D, zero_delta);
    return z;
}

int attn_gather_row(const attn_meta *m, const uint8_t *vs, const float *row, int t, int sink,
                    double zero_delta, double *out, int *sink_pos, long long *zeros) {
    int D = 0;
    *sink_pos = -1;
    for (int j = 0; j < m->T; j++) {
        if (!attn_key_in_row(m, vs, t, j)) continue;
        if (j == sink) *sink_pos = D;
        out[D++] = row[j];
    }
    int z = attn_close_row(out, D, m->logprob, zero_delta);
    if (z < 0) return -1;
    if (zeros) *zeros += z;
    return D;
}

/* analysis: see analysis.h. */
#include "analysis.h"
#include "core/util.h"
#include "io/h5io.h"
#include <errno.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_matrix.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* libmvec supplies vector variants of log (linked through libm's AS_NEEDED script); this
 * declaration lets the simd loops of the pair kernel call them. */
#pragma omp declare simd notinbranch
double log(double);

const char *const dist_metric_names[DIST_NMETRIC] = {
    "cos_keep", "cos_drop", "js_keep", "js_drop", "euc_keep", "euc_drop",
    "aitchison", "content_full", "content_drop", "sink_balance"};

int dist_metric_index(const char *name) {
    for (int m = 0; m < DIST_NMETRIC; m++)
        if (strcmp(name, dist_metric_names[m]) == 0) return m;
    return -1;
}

/* ---------------- exact fixed-point sums ---------------- */
an_fix an_fix_from(double x) { return (an_fix)rint(ldexp(x, 64)); }
double an_fix_to(an_fix v) { return ldexp((double)v, -64); }

void an_fix_pack(an_fix v, int limbs[4]) {
    unsigned __int128 u = (unsigned __int128)v;
    for (int i = 0; i < 4; i++) {
        unsigned int w = (unsigned int)(u >> (32 * i));
        memcpy(&limbs[i], &w, sizeof w);
    }
}

an_fix an_fix_unpack(const int limbs[4]) {
    unsigned __int128 u = 0;
    for (int i = 3; i >= 0; i--) {
        unsigned int w;
        memcpy(&w, &limbs[i], sizeof w);
        u = (u << 32) | w;
    }
    return (an_fix)u;
}

/* ---------------- per-row preparation ---------------- */
static double lse(const double *x, int n) {
    double mx = x[0];
    for (int i = 1; i < n; i++) if (x[i] > mx) mx = x[i];
    double s = 0;
    for (int i = 0; i < n; i++) s += exp(x[i] - mx);
    return mx + log(s);
}

int an_row_prep(const double *l, int D, double *P, double *PI, double *C, double *V, double *W,
                an_rowinfo *ri) {
    int n = D - 1;
    double sum_all = 0, sum_c = 0;
    for (int i = 0; i < D; i++) {
        if (!isfinite(l[i])) return -1;
        sum_all += l[i];
    }
    sum_c = sum_all - l[0];
    double mean_all = sum_all / D, mean_c = sum_c / n;
    double lse_c = lse(l + 1, n);
    /* balance direction e: e_k = √((D−1)/D), e_i = −1/√(D(D−1)) on content parts */
    double ek = sqrt((double)n / D), ec = -1.0 / sqrt((double)D * n);
    ri->s = exp(l[0]);
    ri->b = ek * (l[0] - mean_c);
    ri->clrk = l[0] - mean_all;
    ri->vk = ri->clrk - ri->b * ek;
    double n2 = ri->s * ri->s, n2pi = 0, hp = -ri->s * l[0], hpi = 0, sum_lpi = 0;
    for (int i = 0; i < n; i++) {
        double li = l[i + 1], lpi = li - lse_c;
        P[i] = exp(li);
        PI[i] = exp(lpi);
        C[i] = li - mean_all;
        V[i] = C[i] - ri->b * ec;
        W[i] = lpi;
        sum_lpi += lpi;
        n2 += P[i] * P[i];
        n2pi += PI[i] * PI[i];
        hp -= P[i] * li;
        hpi -= PI[i] * lpi;
    }
    double mean_lpi = sum_lpi / n;
    for (int i = 0; i < n; i++) W[i] -= mean_lpi;
    ri->n2 = n2;
    ri->n2pi = n2pi;
    ri->Hp = hp;
    ri->Hpi = hpi;
    return 0;
}

/* One fused pass over the content parts; the sink part of the keep-sink quantities is added
 * from the scalars. m·ln m uses ln(m + 2^-1022) so that m = 0 contributes 0 without a branch. */
__attribute__((target_clones("avx2", "default")))
void an_pair_kernel(int n, const double *const a[5], const an_rowinfo *ra,
                    const double *const b[5], const an_rowinfo *rb, double out[DIST_NMETRIC]) {
    const double *pa = a[0], *pia = a[1], *ca = a[2], *va = a[3], *wa = a[4];
    const double *pb = b[0], *pib = b[1], *cb = b[2], *vb = b[3], *wb = b[4];
    double dot = 0, dd = 0, hm = 0, dotpi = 0, ddpi = 0, hmpi = 0, dc = 0, dv = 0, dw = 0;
    const double tiny = 0x1p-1022;
#pragma omp simd reduction(+ : dot, dd, hm, dotpi, ddpi, hmpi, dc, dv, dw)
    for (int i = 0; i < n; i++) {
        double x = pa[i], y = pb[i], m = 0.5 * (x + y);
        dot += x * y;
        dd += (x - y) * (x - y);
        hm += m * log(m + tiny);
        double u = pia[i], w = pib[i], mu = 0.5 * (u + w);
        dotpi += u * w;
        ddpi += (u - w) * (u - w);
        hmpi += mu * log(mu + tiny);
        double e1 = ca[i] - cb[i], e2 = va[i] - vb[i], e3 = wa[i] - wb[i];
        dc += e1 * e1;
        dv += e2 * e2;
        dw += e3 * e3;
    }
    double sa = ra->s, sb = rb->s, mk = 0.5 * (sa + sb), ek = ra->clrk - rb->clrk,
           evk = ra->vk - rb->vk;
    dot += sa * sb;
    dd += (sa - sb) * (sa - sb);
    hm += mk > 0 ? mk * log(mk) : 0;
    dc += ek * ek;
    dv += evk * evk;
    const double inv_ln2 = 1.0 / M_LN2;
    out[M_COS_KEEP] = 1.0 - dot / sqrt(ra->n2 * rb->n2);
    out[M_COS_DROP] = 1.0 - dotpi / sqrt(ra->n2pi * rb->n2pi);
    out[M_JS_KEEP] = fmax(0.0, (-hm - 0.5 * (ra->Hp + rb->Hp)) * inv_ln2);
    out[M_JS_DROP] = fmax(0.0, (-hmpi - 0.5 * (ra->Hpi + rb->Hpi)) * inv_ln2);
    out[M_EUC_KEEP] = sqrt(dd);
    out[M_EUC_DROP] = sqrt(ddpi);
    out[M_AITCHISON] = sqrt(dc);
    out[M_CONTENT_FULL] = sqrt(dv);
    out[M_CONTENT_DROP] = sqrt(dw);
    out[M_SINK_BALANCE] = fabs(ra->b - rb->b);
}

/* ---------------- distance files ---------------- */
static int dist_check_finite(const dist_file *d, const char *what, const double *x, size_t n, char *err, size_t errlen) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return util_fail(err, errlen, d->path, "%s: value %zu is not finite", what, i);
    return 0;
}

/* Root attributes format, layers and heads; 0 or -1 with err. */
static int dist_read_shape(dist_file *d, char *err, size_t errlen) {
    const char *path = d->path;
    char *fmt = h5io_get_attr_str(d->f, "/", "format", err, errlen);
    if (!fmt && err[0]) return -1;
    int ok = fmt && strcmp(fmt, "attncoda-distance") == 0;
    free(fmt);
    if (!ok) return util_fail(err, errlen, path, "not a distance file (attribute format is not attncoda-distance)");
    long long L, H;
    int got = h5io_get_attr_int(d->f, "/", "layers", &L, err, errlen);
    if (got == 0) got = h5io_get_attr_int(d->f, "/", "heads", &H, err, errlen);
    if (got < 0) return -1;
    if (got > 0) return util_fail(err, errlen, path, "missing attribute layers/heads");
    if (L < 1 || H < 1 || L * H > 100000) return util_fail(err, errlen, path, "bad layers/heads %lld/%lld", L, H);
    d->L = (int)L;
    d->H = (int)H;
    d->N = (int)(L * H);
    return 0;
}

/* Datasets rows, head_layer, head_index and head_sink_mass; 0 or -1 with err. */
static int dist_read_heads(dist_file *d, char *err, size_t errlen) {
    const char *path = d->path;
    hsize_t wn[1] = {(hsize_t)d->N}, w1[1] = {1};
    int *r = h5io_read_i32(d->f, path, "rows", 1, w1, NULL, err, errlen);
    if (!r) return -1;
    long long rows = r[0];
    free(r);
    if (rows < 1) return util_fail(err, errlen, path, "rows: %lld kept rows", rows);
    d->rows = rows;
    if (!(d->head_layer = h5io_read_i32(d->f, path, "head_layer", 1, wn, NULL, err, errlen)) ||
        !(d->head_index = h5io_read_i32(d->f, path, "head_index", 1, wn, NULL, err, errlen)) ||
        !(d->head_sink = h5io_read_f64(d->f, path, "head_sink_mass", 1, wn, NULL, err, errlen)) ||
        dist_check_finite(d, "head_sink_mass", d->head_sink, d->N, err, errlen))
        return -1;
    for (int a = 0; a < d->N; a++)
        if (d->head_layer[a] < 0 || d->head_index[a] < 0 || d->head_layer[a] != d->head_layer[a - a % d->H] ||
            d->head_index[a] != d->head_index[a % d->H])
            return util_fail(err, errlen, path, "head_layer/head_index: head %d breaks the layer-major layout", a);
    return 0;
}

dist_file *dist_open(const char *path, char *err, size_t errlen) {
    dist_file *d = xcalloc(1, sizeof *d);
    d->path = xstrdup(path);
    d->f = h5io_open(path, d->sha, err, errlen);
    if (d->f < 0 || dist_read_shape(d, err, errlen) || dist_read_heads(d, err, errlen)) {
        dist_close(d);
        return NULL;
    }
    d->model = h5io_get_attr_str(d->f, "/", "model", err, errlen);
    if (!d->model && !err[0]) d->model = xstrdup(path);
    if (d->model) d->provenance = h5io_get_attr_str(d->f, "/", "provenance", err, errlen);
    if (!d->model || (!d->provenance && err[0])) {
        dist_close(d);
        return NULL;
    }
    return d;
}

/* Why the N×N matrix x is not a distance matrix (zero diagonal, symmetric, no negative entry:
 * linkage and MDS assume distances, so a negative one is corrupt), or 0 when it is one. */
static int not_a_distance(const double *x, int N, char *why, size_t cap) {
    for (int a = 0; a < N; a++) {
        if (x[(size_t)a * N + a] != 0) return snprintf(why, cap, "diagonal entry %d is not 0", a);
        for (int b = 0; b < a; b++) {
            if (x[(size_t)a * N + b] != x[(size_t)b * N + a])
                return snprintf(why, cap, "not symmetric at (%d, %d)", a, b);
            if (x[(size_t)a * N + b] < 0)
                return snprintf(why, cap, "entry (%d, %d) = %g is negative", a, b, x[(size_t)a * N + b]);
        }
    }
    return 0;
}

double *dist_matrix(dist_file *d, const char *metric, char *err, size_t errlen) {
    char name[128], why[160];
    snprintf(name, sizeof name, "distance/%s", metric);
    hsize_t w[2] = {(hsize_t)d->N, (hsize_t)d->N};
    double *x = h5io_read_f64(d->f, d->path, name, 2, w, NULL, err, errlen);
    if (!x) return NULL;
    int N = d->N;
    int bad = dist_check_finite(d, name, x, (size_t)N * N, err, errlen);
    if (!bad && not_a_distance(x, N, why, sizeof why)) bad = util_fail(err, errlen, d->path, "%s: %s", name, why);
    if (bad) {
        free(x);
        return NULL;
    }
    return x;
}

void dist_close(dist_file *d) {
    if (!d) return;
    if (d->f >= 0) H5Fclose(d->f);
    free(d->path);
    free(d->head_layer);
    free(d->head_index);
    free(d->head_sink);
    free(d->model);
    free(d->provenance);
    free(d);
}

/* ---------------- clustering ---------------- */
void an_linkage_merges(const double *D, int n, int *mi, int *mj) {
    /* d: current cluster distances (only active rows used); a cluster's id is its smallest member
     * (a merge keeps the lower id), which makes the tie-break order well defined. */
    double *d = xmalloc((size_t)n * n * sizeof *d);
    memcpy(d, D, (size_t)n * n * sizeof *d);
    int *size = xmalloc(n * sizeof *size);
    char *active = xmalloc(n);
    for (int i = 0; i < n; i++) size[i] = 1, active[i] = 1;
    for (int step = 0; step < n - 1; step++) {
        int bi = -1, bj = -1;
        double best = INFINITY;
        for (int i = 0; i < n; i++) {
            if (!active[i]) continue;
            const double *row = d + (size_t)i * n;
            for (int j = i + 1; j < n; j++)
                if (active[j] && row[j] < best) best = row[j], bi = i, bj = j;
        }
        if (bi < 0) { /* all remaining distances infinite: merge the first two active clusters */
            for (int i = 0; i < n && bj < 0; i++)
                if (active[i]) { if (bi < 0) bi = i; else bj = i; }
        }
        for (int m = 0; m < n; m++) {
            if (!active[m] || m == bi || m == bj) continue;
            double v = (size[bi] * d[(size_t)bi * n + m] + size[bj] * d[(size_t)bj * n + m]) / (size[bi] + size[bj]);
            d[(size_t)bi * n + m] = d[(size_t)m * n + bi] = v;
        }
        size[bi] += size[bj];
        active[bj] = 0;
        mi[step] = bi;
        mj[step] = bj;
    }
    free(d);
    free(size);
    free(active);
}

void an_linkage_cut(const int *mi, const int *mj, int n, int k, int *labels) {
    int *owner = xmalloc(n * sizeof *owner), *map = xmalloc(n * sizeof *map), next = 0;
    for (int i = 0; i < n; i++) owner[i] = i, map[i] = -1;
    if (k < 1) k = 1;
    for (int step = 0; step < n - k; step++)
        for (int i = 0; i < n; i++)
            if (owner[i] == mj[step]) owner[i] = mi[step];
    for (int i = 0; i < n; i++) {   /* owner ids are smallest members: number in order of them */
        if (map[owner[i]] < 0) map[owner[i]] = next++;
        labels[i] = map[owner[i]];
    }
    free(owner);
    free(map);
}

void an_average_linkage(const double *D, int n, int k, int *labels) {
    int *mi = xmalloc((n + 1) * sizeof *mi), *mj = xmalloc((n + 1) * sizeof *mj);
    an_linkage_merges(D, n, mi, mj);
    an_linkage_cut(mi, mj, n, k, labels);
    free(mi);
    free(mj);
}

static double choose2(double x) { return x * (x - 1) / 2; }

double an_ari(const int *x, const int *y, int n) {
    if (n < 2) return 1.0;
    int kx = 0, ky = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] + 1 > kx) kx = x[i] + 1;
        if (y[i] + 1 > ky) ky = y[i] + 1;
    }
    long *tab = xcalloc((size_t)kx * ky, sizeof *tab), *ra = xcalloc(kx, sizeof *ra), *cb = xcalloc(ky, sizeof *cb);
    for (int i = 0; i < n; i++) tab[(size_t)x[i] * ky + y[i]]++, ra[x[i]]++, cb[y[i]]++;
    double sij = 0, sa = 0, sb = 0;
    for (int i = 0; i < kx * ky; i++) sij += choose2(tab[i]);
    for (int i = 0; i < kx; i++) sa += choose2(ra[i]);
    for (int j = 0; j < ky; j++) sb += choose2(cb[j]);
    free(tab);
    free(ra);
    free(cb);
    double expct = sa * sb / choose2(n), mx = 0.5 * (sa + sb);
    if (mx == expct) return 1.0;   /* both partitions trivial (all singletons or one cluster) */
    return (sij - expct) / (mx - expct);
}

void an_mds(const double *D, int n, int dim, double *coords, double *ev) {
    gsl_matrix *B = gsl_matrix_alloc(n, n), *evec = gsl_matrix_alloc(n, n);
    gsl_vector *eval = gsl_vector_alloc(n);
    double *rm = xcalloc(n, sizeof *rm), gm = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) rm[i] += D[(size_t)i * n + j] * D[(size_t)i * n + j];
        gm += rm[i];
        rm[i] /= n;
    }
    gm /= (double)n * n;
    /* B = −½ J D² J with J the centring matrix */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            gsl_matrix_set(B, i, j, -0.5 * (D[(size_t)i * n + j] * D[(size_t)i * n + j] - rm[i] - rm[j] + gm));
    gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc(n);
    gsl_eigen_symmv(B, eval, evec, w);
    gsl_eigen_symmv_sort(eval, evec, GSL_EIGEN_SORT_VAL_DESC);
    for (int c = 0; c < dim; c++) {
        double lam = c < n ? gsl_vector_get(eval, c) : 0, sc = lam > 0 ? sqrt(lam) : 0;
        int imax = 0;
        for (int i = 0; i < n && c < n; i++)
            if (fabs(gsl_matrix_get(evec, i, c)) > fabs(gsl_matrix_get(evec, imax, c))) imax = i;
        double sign = (c < n && gsl_matrix_get(evec, imax, c) < 0) ? -1 : 1;
        for (int i = 0; i < n; i++) coords[(size_t)i * dim + c] = c < n ? sign * sc * gsl_matrix_get(evec, i, c) : 0;
        if (ev) ev[c] = lam;
    }
    gsl_eigen_symmv_free(w);
    gsl_matrix_free(B);
    gsl_matrix_free(evec);
    gsl_vector_free(eval);
    free(rm);
}

void an_wilson(long k, long n, double z, double *lo, double *hi) {
    if (n <= 0) { *lo = NAN; *hi = NAN; return; }
    double p = (double)k / n, z2 = z * z, den = 1 + z2 / n;
    double c = (p + z2 / (2.0 * n)) / den, h = z * sqrt(p * (1 - p) / n + z2 / (4.0 * n * n)) / den;
    *lo = fmax(0.0, c - h);
    *hi = fmin(1.0, c + h);
}

/* ---------------- TSV ---------------- */
void tsv_begin(FILE *out, const char *prov_json, const char *header) {
    fprintf(out, "# provenance: %s\n%s\n", prov_json, header);
}

static char **split_tabs(char *line, int *n) {
    int cap = 8, k = 0;
    char **f = xmalloc(cap * sizeof *f);
    for (char *p = line;;) {
        char *t = strchr(p, '\t');
        if (k == cap) f = xrealloc(f, (cap *= 2) * sizeof *f);
        if (t) *t = 0;
        f[k++] = xstrdup(p);
        if (!t) break;
        p = t + 1;
    }
    *n = k;
    return f;
}

static void free_fields(char **f, int n) {
    for (int i = 0; i < n; i++) free(f[i]);
    free(f);
}

tsv_table *tsv_read(const char *path, char *err, size_t errlen) {
    size_t len;
    char *buf = (char *)util_slurp(path, &len, err, errlen);
    if (!buf) return NULL;
    if (memchr(buf, 0, len)) {
        free(buf);
        util_fail(err, errlen, path, "not a text table (NUL byte)");
        return NULL;
    }
    tsv_table *t = xcalloc(1, sizeof *t);
    t->path = xstrdup(path);
    int cap = 0, lineno = 0;
    char *save = NULL;
    for (char *ln = strtok_r(buf, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        lineno++;
        size_t l = strlen(ln);
        if (l && ln[l - 1] == '\r') ln[--l] = 0;
        if (ln[0] == '#' || l == 0) continue;
        int nf;
        char **f = split_tabs(ln, &nf);
        if (!t->col) { t->col = f; t->ncol = nf; continue; }
        if (nf != t->ncol) {
            util_fail(err, errlen, path, "line %d: %d fields, header has %d", lineno, nf, t->ncol);
            free_fields(f, nf);
            free(buf);
            tsv_free(t);
            return NULL;
        }
        if (t->nrow == cap) {
            cap = cap ? 2 * cap : 16;
            t->cell = xrealloc(t->cell, cap * sizeof *t->cell);
            t->line = xrealloc(t->line, cap * sizeof *t->line);
        }
        t->line[t->nrow] = lineno;
        t->cell[t->nrow++] = f;
    }
    free(buf);
    if (!t->col) {
        util_fail(err, errlen, path, "no header line (empty table)");
        tsv_free(t);
        return NULL;
    }
    return t;
}

int tsv_col(const tsv_table *t, const char *name) {
    for (int c = 0; c < t->ncol; c++)
        if (strcmp(t->col[c], name) == 0) return c;
    return -1;
}

void tsv_free(tsv_table *t) {
    if (!t) return;
    for (int r = 0; r < t->nrow; r++) {
        for (int c = 0; c < t->ncol; c++) free(t->cell[r][c]);
        free(t->cell[r]);
    }
    for (int c = 0; c < t->ncol; c++) free(t->col[c]);
    free(t->col);
    free(t->cell);
    free(t->line);
    free(t->path);
    free(t);
}

/* One list entry: what cli_parse_double accepts (a finite number in [lo, hi]), with its message. */
static int parse_entry(const char *opt, const char *s, double lo, double hi, double *v, char *err, size_t errlen) {
    const char *bare = opt;
    while (*bare == '-') bare++;
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(*v) || *v < lo || *v > hi) {
        snprintf(err, errlen, "--%s: '%s' is not a number in [%g, %g]", bare, s, lo, hi);
        return -1;
    }
    return 0;
}

int an_parse_list(const char *opt, const char *s, double *out, int max, char *err, size_t errlen) {
    char *dup = xstrdup(s), *save = NULL;
    int n = 0;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == max) {
            snprintf(err, errlen, "--%s: more than %d values", opt, max);
            n = -1;
            break;
        }
        if (parse_entry(opt, tok, -1e300, 1e300, &out[n++], err, errlen)) {
            n = -1;
            break;
        }
    }
    free(dup);
    if (n == 0) {
        snprintf(err, errlen, "--%s: empty list", opt);
        n = -1;
    }
    return n;
}

int an_is_hdf5(const char *path) {
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    unsigned char b[8];
    size_t n = fread(b, 1, 8, f);
    fclose(f);
    return n == 8 && memcmp(b, sig, 8) == 0;
}

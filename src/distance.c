/* distance: the N×N head distance matrices of METHODS §4, every metric and convention in one
 * streaming pass (one sequence's L blocks at a time), with exact sums so shards merge
 * bit-identically (distance --merge). */
#include "analysis.h"
#include "attnio.h"
#include "cli.h"
#include "h5io.h"
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
    "Usage: distance [options] IN.h5|- OUT.h5|-\n"
    "       distance --merge OUT.h5|- SHARD.h5...\n"
    "Head distance matrices (METHODS §4) for every metric and convention in one pass:\n"
    "  cos_keep cos_drop js_keep js_drop euc_keep euc_drop aitchison content_full content_drop\n"
    "  sink_balance (|b(p)-b(q)|). Head a = layer*H + head; N = L*H.\n"
    "Options:\n"
    "  --min-query N        skip causal query rows t < N (default 2)\n"
    "  --exclude-sink-query skip the sink's own query row t = k\n"
    "  --aggregate mean|sum distance/<metric> = sum/rows (mean, default) or the sum\n"
    "  --sink K             sink key index (default: the file's sink attribute)\n"
    "  --zero-delta X       zero replacement for probability input (default 1e-9)\n"
    "  --seqs A:B           only sequences A..B-1 (a shard; merge shards with --merge)\n"
    "  --merge              add shards of one input made with the same options (exact)\n"
    "  -h, --help / --version\n"
    "Output (HDF5): sum/<metric> [N,N], exact/<metric> [N,N,4] (128-bit fixed-point sums),\n"
    "  distance/<metric> [N,N], rows, head_sink_mass/head_layer/head_index [N]; see\n"
    "  docs/ANALYSIS.md. Stdout (when OUT is a file): per-head TSV (head layer index sink_mass).\n"
    "Rows kept: query valid, t >= min-query (causal), D >= 3 parts, sink key in the row.\n"
    "Threads: OMP_NUM_THREADS (results do not depend on it).\n"
    "Memory: L*H*T*T*4 bytes (one sequence's blocks) + 640*N*T bytes (prepared rows) +\n"
    "  about 6*N*N*24 bytes (sums and exact totals) + 2*N*N*(8+16) bytes while writing.\n";

typedef struct {
    int min_query, excl_sink_q, agg_sum, sink, seq_a, seq_b;
    double zero_delta;
} dopts;

/* Accumulators: per-sequence double sums (upper triangle, pair index), then exact totals. */
typedef struct {
    int N, npair;
    int *pa, *pb;            /* pair index → heads */
    double *seq[DIST_NMETRIC];
    an_fix *tot[DIST_NMETRIC];
    double *seq_sink;        /* N */
    an_fix *tot_sink;
    long long rows;
} accum;

static void accum_init(accum *A, int N) {
    A->N = N;
    A->npair = N * (N - 1) / 2;
    A->pa = xmalloc((A->npair + 1) * sizeof(int));
    A->pb = xmalloc((A->npair + 1) * sizeof(int));
    int k = 0;
    for (int a = 0; a < N; a++)
        for (int b = a + 1; b < N; b++) A->pa[k] = a, A->pb[k] = b, k++;
    for (int m = 0; m < DIST_NMETRIC; m++) {
        A->seq[m] = xcalloc(A->npair + 1, sizeof(double));
        A->tot[m] = xcalloc(A->npair + 1, sizeof(an_fix));
    }
    A->seq_sink = xcalloc(N, sizeof(double));
    A->tot_sink = xcalloc(N, sizeof(an_fix));
    A->rows = 0;
}

static void accum_free(accum *A) {
    free(A->pa);
    free(A->pb);
    for (int m = 0; m < DIST_NMETRIC; m++) free(A->seq[m]), free(A->tot[m]);
    free(A->seq_sink);
    free(A->tot_sink);
}

/* Adds the finished sequence into the exact totals and clears the sequence sums. */
static void accum_flush(accum *A) {
    for (int m = 0; m < DIST_NMETRIC; m++)
        for (int p = 0; p < A->npair; p++) A->tot[m][p] += an_fix_from(A->seq[m][p]), A->seq[m][p] = 0;
    for (int a = 0; a < A->N; a++) A->tot_sink[a] += an_fix_from(A->seq_sink[a]), A->seq_sink[a] = 0;
}

/* Working memory for a chunk of up to TCHUNK kept rows: five content vectors per (row, head).
 * Chunking keeps OpenMP barriers to two per chunk instead of several per row. */
#define TCHUNK 16
#ifndef TILE
#define TILE 16
#endif
typedef struct {
    int N, T;
    double *vec;          /* TCHUNK × N × 5 × T */
    an_rowinfo *info;     /* TCHUNK × N */
} rowbuf;

static void rowbuf_init(rowbuf *rb, int N, int T) {
    rb->N = N;
    rb->T = T;
    rb->vec = xmalloc((size_t)TCHUNK * N * 5 * T * sizeof(double));
    rb->info = xcalloc((size_t)TCHUNK * N, sizeof(an_rowinfo));
}

static double *vec_of(const rowbuf *rb, int r, int a, int v) {
    return rb->vec + (((size_t)r * rb->N + a) * 5 + v) * rb->T;
}

/* Row t of head a in the L blocks through the library's row path (closed, zero-replaced, valid
 * keys only), then with the sink moved to the front as an_row_prep wants it. Returns D, or −1
 * when the row cannot be closed. */
static int gather_row(const float *blocks, const attn_meta *m, const uint8_t *vs, int a, int i, int t,
                      const dopts *o, double *l, long long *nrep) {
    int H = m->H, T = m->T, ly = a / H, h = a % H, k;
    const float *row = blocks + ((size_t)ly * H + h) * m->Q * T + (size_t)i * T;   /* stored row i = query t */
    int D = attn_gather_row(m, vs, row, t, o->sink, o->zero_delta, l, &k, nrep);
    if (D < 0) return -1;
    double lk = l[k];
    memmove(l + 1, l, k * sizeof *l);
    l[0] = lk;
    return D;
}

/* Prepares rows rows[0..nr) of every head (parallel over (row, head)), then accumulates every
 * head pair over those rows in row order (parallel over pairs): each pair's sum has the same
 * order whatever the thread count, so results do not depend on it. Returns −1, or the first
 * (row·N + head) index whose row is unusable (*unclosable: it could not be closed; else it holds
 * a zero probability). */
static int process_chunk(const float *blocks, const attn_meta *m, const uint8_t *vs, const int32_t *qp,
                         const dopts *o, const int *rows, int nr, rowbuf *rb, accum *A, long long *nrep,
                         int *unclosable) {
    int N = A->N, bad = -1, nparts[TCHUNK];
    long long rep = 0;
    for (int r = 0; r < nr; r++) nparts[r] = attn_row_parts(m, vs, qp[rows[r]]) - 1;   /* content parts */
#pragma omp parallel
    {
        double *lrow = xmalloc(m->T * sizeof *lrow);
#pragma omp for schedule(dynamic, 8) reduction(+ : rep)
        for (int ra = 0; ra < nr * N; ra++) {
            int r = ra / N, a = ra % N, D = gather_row(blocks, m, vs, a, rows[r], qp[rows[r]], o, lrow, &rep);
            if (D < 0 || an_row_prep(lrow, D, vec_of(rb, r, a, 0), vec_of(rb, r, a, 1), vec_of(rb, r, a, 2),
                            vec_of(rb, r, a, 3), vec_of(rb, r, a, 4), &rb->info[(size_t)r * N + a]) != 0) {
#pragma omp critical
                if (bad < 0 || ra < bad) bad = ra, *unclosable = D < 0;
            }
        }
        free(lrow);
        if (bad < 0) {
            /* Head tiles of TILE×TILE pairs: for each row the tile's 2·TILE heads' vectors stay in
             * cache while all its pairs use them, instead of streaming one head per pair. */
            int nt = (N + TILE - 1) / TILE;
#pragma omp for schedule(dynamic, 1)
            for (int k = 0; k < nt * nt; k++) {
                int ta = k / nt, tb = k % nt;
                if (tb < ta) continue;
                int a1 = (ta + 1) * TILE < N ? (ta + 1) * TILE : N, b1 = (tb + 1) * TILE < N ? (tb + 1) * TILE : N;
                for (int r = 0; r < nr; r++) {
                    const an_rowinfo *info = rb->info + (size_t)r * N;
                    for (int a = ta * TILE; a < a1; a++) {
                        const double *va[5], *vb[5];
                        for (int v = 0; v < 5; v++) va[v] = vec_of(rb, r, a, v);
                        size_t base = (size_t)a * N - (size_t)a * (a + 1) / 2 - a - 1;  /* pair (a,b) = base + b */
                        for (int b = (tb * TILE > a + 1 ? tb * TILE : a + 1); b < b1; b++) {
                            for (int v = 0; v < 5; v++) vb[v] = vec_of(rb, r, b, v);
                            double out[DIST_NMETRIC];
                            an_pair_kernel(nparts[r], va, &info[a], vb, &info[b], out);
                            for (int mm = 0; mm < DIST_NMETRIC; mm++) A->seq[mm][base + b] += out[mm];
                        }
                    }
                }
            }
        }
    }
    *nrep += rep;
    if (bad >= 0) return bad;
    for (int r = 0; r < nr; r++)
        for (int a = 0; a < N; a++) A->seq_sink[a] += rb->info[(size_t)r * N + a].s;
    A->rows += nr;
    return -1;
}

static void process_sequence(attn_reader *r, int s, const dopts *o, float *blocks, const uint8_t *vs,
                             rowbuf *rb, accum *A, long long *nrep) {
    const attn_meta *m = attn_meta_get(r);
    int T = m->T, Q = m->Q, rows[TCHUNK], nr = 0;   /* rows: stored row indices i (query qp[i]) */
    const int32_t *qp = attn_query_pos(r, s);
    for (int l = 0; l < m->L; l++) attn_read_block(r, s, l, blocks + (size_t)l * m->H * Q * T);
    for (int i = 0; i <= Q; i++) {
        if (i < Q && attn_row_kept(m, vs, qp[i], o->sink, o->min_query, o->excl_sink_q)) rows[nr++] = i;
        if (nr == TCHUNK || (i == Q && nr > 0)) {
            int unclosable = 0, bad = process_chunk(blocks, m, vs, qp, o, rows, nr, rb, A, nrep, &unclosable);
            if (bad >= 0)
                die_data(attn_path(r), "%s in row (sequence %d, layer %d, head %d, query %d)",
                         unclosable ? ATTN_ROW_UNCLOSABLE : "zero probability (log-probability -inf)",
                         s, bad % A->N / m->H, bad % A->N % m->H, qp[rows[bad / A->N]]);
            nr = 0;
        }
    }
}

/* ---------------- output ---------------- */
/* Named axes (head_a, head_b) for h5py and xarray; the exact/ fixed-point limbs stay unlabelled. */
static void label_axes(hid_t f) {
    static const char *const ab[2] = {"head_a", "head_b"};
    char name[64];
    for (int m = 0; m < DIST_NMETRIC; m++) {
        snprintf(name, sizeof name, "sum/%s", dist_metric_names[m]);
        h5io_label_dims(f, name, "/", 2, ab);
        snprintf(name, sizeof name, "distance/%s", dist_metric_names[m]);
        h5io_label_dims(f, name, "/", 2, ab);
    }
    h5io_label_dims(f, "head_sink_mass", "/", 1, ab);
}

static void write_matrices(hid_t f, const accum *A, int agg_sum) {
    int N = A->N;
    hsize_t d2[2] = {N, N}, d3[3] = {N, N, 4}, d1[1] = {N}, one[1] = {1};
    double *sum = xmalloc((size_t)N * N * sizeof *sum), *dist = xmalloc((size_t)N * N * sizeof *dist);
    int *ex = xmalloc((size_t)N * N * 4 * sizeof *ex);
    char name[64];
    for (int m = 0; m < DIST_NMETRIC; m++) {
        memset(sum, 0, (size_t)N * N * sizeof *sum);
        memset(ex, 0, (size_t)N * N * 4 * sizeof *ex);
        for (int p = 0; p < A->npair; p++) {
            size_t ab = (size_t)A->pa[p] * N + A->pb[p], ba = (size_t)A->pb[p] * N + A->pa[p];
            sum[ab] = sum[ba] = an_fix_to(A->tot[m][p]);
            an_fix_pack(A->tot[m][p], ex + 4 * ab);
            an_fix_pack(A->tot[m][p], ex + 4 * ba);
        }
        for (size_t i = 0; i < (size_t)N * N; i++) dist[i] = agg_sum ? sum[i] : sum[i] / (double)A->rows;
        snprintf(name, sizeof name, "sum/%s", dist_metric_names[m]);
        h5io_write_f64(f, name, 2, d2, sum);
        snprintf(name, sizeof name, "exact/%s", dist_metric_names[m]);
        h5io_write_i32(f, name, 3, d3, ex);
        snprintf(name, sizeof name, "distance/%s", dist_metric_names[m]);
        h5io_write_f64(f, name, 2, d2, dist);
    }
    int *exs = xmalloc(N * 4 * sizeof *exs);
    double *hs = xmalloc(N * sizeof *hs);
    for (int a = 0; a < N; a++) {
        hs[a] = an_fix_to(A->tot_sink[a]) / (double)A->rows;
        an_fix_pack(A->tot_sink[a], exs + 4 * a);
    }
    h5io_write_f64(f, "head_sink_mass", 1, d1, hs);
    hsize_t d14[2] = {N, 4};
    h5io_write_i32(f, "exact/head_sink_mass", 2, d14, exs);
    int rows = (int)A->rows;
    h5io_write_i32(f, "rows", 1, one, &rows);
    label_axes(f);
    free(exs); free(hs); free(sum); free(dist); free(ex);
}

/* Original layer and head numbers: the attention file's layer_index/head_index datasets when
 * extract wrote a subset, else 0..L-1 and 0..H-1. */
typedef struct { int L, H, *layer, *head; } head_ids;

static head_ids ids_from_attn(attn_reader *r) {
    const attn_meta *m = attn_meta_get(r);
    head_ids h = {m->L, m->H, xmalloc(m->L * sizeof(int)), xmalloc(m->H * sizeof(int))};
    hid_t f = attn_reader_file(r);
    hsize_t wl[1] = {m->L}, wh[1] = {m->H};
    if (h5io_exists(f, "layer_index")) {
        int *x = h5io_read_i32(f, attn_path(r), "layer_index", 1, wl, NULL);
        memcpy(h.layer, x, m->L * sizeof(int));
        free(x);
    } else for (int l = 0; l < m->L; l++) h.layer[l] = l;
    if (h5io_exists(f, "head_index")) {
        int *x = h5io_read_i32(f, attn_path(r), "head_index", 1, wh, NULL);
        memcpy(h.head, x, m->H * sizeof(int));
        free(x);
    } else for (int i = 0; i < m->H; i++) h.head[i] = i;
    return h;
}

static head_ids ids_from_dist(const dist_file *d) {
    head_ids h = {d->L, d->H, xmalloc(d->L * sizeof(int)), xmalloc(d->H * sizeof(int))};
    for (int l = 0; l < d->L; l++) h.layer[l] = d->head_layer[l * d->H];
    for (int i = 0; i < d->H; i++) h.head[i] = d->head_index[i];
    return h;
}

static void write_heads(hid_t f, const head_ids *id) {
    int N = id->L * id->H;
    int *hl = xmalloc(N * sizeof *hl), *hi = xmalloc(N * sizeof *hi);
    for (int a = 0; a < N; a++) hl[a] = id->layer[a / id->H], hi[a] = id->head[a % id->H];
    hsize_t d1[1] = {N};
    h5io_write_i32(f, "head_layer", 1, d1, hl);
    h5io_write_i32(f, "head_index", 1, d1, hi);
    free(hl);
    free(hi);
}

static void print_heads_tsv(const char *prov, const accum *A, const head_ids *id) {
    tsv_begin(stdout, prov, "head\tlayer\tindex\tsink_mass");
    for (int a = 0; a < A->N; a++)
        printf("%d\t%d\t%d\t%.17g\n", a, id->layer[a / id->H], id->head[a % id->H],
               an_fix_to(A->tot_sink[a]) / (double)A->rows);
}

/* Attributes every distance file carries; the "options" string must match for a merge. */
static char *options_string(const dopts *o) {
    char *s = xmalloc(256);
    snprintf(s, 256, "min_query=%d exclude_sink_query=%d aggregate=%s sink=%d zero_delta=%.17g",
             o->min_query, o->excl_sink_q, o->agg_sum ? "sum" : "mean", o->sink, o->zero_delta);
    return s;
}

static void write_attrs(hid_t f, const char *prov, const char *model, const char *in_sha, const char *optstr,
                        int L, int H, const char *seqs, int agg_sum, long long nrep) {
    h5io_attr_str(f, "/", "format", "attncoda-distance");
    h5io_attr_int(f, "/", "format_version", 1);
    h5io_attr_str(f, "/", "provenance", prov);
    h5io_attr_str(f, "/", "model", model);
    h5io_attr_str(f, "/", "input_sha256", in_sha);
    h5io_attr_str(f, "/", "options", optstr);
    h5io_attr_str(f, "/", "sequences", seqs);
    h5io_attr_str(f, "/", "aggregate", agg_sum ? "sum" : "mean");
    h5io_attr_int(f, "/", "layers", L);
    h5io_attr_int(f, "/", "heads", H);
    h5io_attr_int(f, "/", "zero_replaced", nrep);
}

static void parse_seqs(const char *s, int *a, int *b) {
    char *colon = strchr(s, ':');
    if (!colon) die_usage("--seqs: '%s' is not A:B", s);
    char *x = xstrdup(s);
    x[colon - s] = 0;
    *a = (int)cli_parse_long("seqs", x, 0, 1 << 30);
    *b = (int)cli_parse_long("seqs", x + (colon - s) + 1, 0, 1 << 30);
    free(x);
    if (*b <= *a) die_usage("--seqs: empty range '%s'", s);
}

static void run_distance(const char *in, const char *out, dopts *o, int sink_given) {
    attn_reader *r = attn_open(in);
    const attn_meta *m = attn_meta_get(r);
    if (!sink_given) o->sink = m->sink;
    if (o->sink >= m->T) die_usage("--sink %d: the file has %d tokens", o->sink, m->T);
    if (o->seq_b < 0) o->seq_a = 0, o->seq_b = m->S;
    if (o->seq_b > m->S) die_usage("--seqs %d:%d: the file has %d sequences", o->seq_a, o->seq_b, m->S);
    if (m->L * m->H < 2) die_data(in, "only %d head: nothing to compare", m->L * m->H);
    int N = m->L * m->H, T = m->T;
    accum A;
    accum_init(&A, N);
    rowbuf rb;
    rowbuf_init(&rb, N, T);
    float *blocks = xmalloc((size_t)m->L * m->H * m->Q * T * sizeof *blocks);
    uint8_t *valid = xmalloc((size_t)m->S * T);
    attn_read_valid(r, valid);
    long long nrep = 0;
    progress pg;
    progress_begin(&pg, "distance", o->seq_b - o->seq_a);
    for (int s = o->seq_a; s < o->seq_b; s++) {
        process_sequence(r, s, o, blocks, attn_has_valid(r) ? valid + (size_t)s * T : NULL, &rb, &A, &nrep);
        accum_flush(&A);
        progress_update(&pg, s + 1 - o->seq_a);
    }
    progress_end(&pg);
    if (A.rows == 0) die_data(in, "no rows kept (need D >= 3 parts, t >= --min-query %d)", o->min_query);
    char *optstr = options_string(o), seqs[64];
    snprintf(seqs, sizeof seqs, "%d:%d", o->seq_a, o->seq_b);
    prov *p = prov_new();
    prov_input(p, in, attn_checksum(r));
    prov_opt_int(p, "min_query", o->min_query);
    prov_opt_int(p, "exclude_sink_query", o->excl_sink_q);
    prov_opt_str(p, "aggregate", o->agg_sum ? "sum" : "mean");
    prov_opt_int(p, "sink", o->sink);
    prov_opt_dbl(p, "zero_delta", o->zero_delta);
    prov_opt_str(p, "seqs", seqs);
    prov_opt_int(p, "zero_replaced", nrep);
    prov_upstream(p, attn_provenance(r));
    char *pj = prov_json(p);
    hid_t f = h5io_create(out);
    write_attrs(f, pj, m->model[0] ? m->model : in, attn_checksum(r), optstr, m->L, m->H, seqs, o->agg_sum, nrep);
    head_ids id = ids_from_attn(r);
    write_heads(f, &id);
    write_matrices(f, &A, o->agg_sum);
    if (!cli_is_stdio(out)) print_heads_tsv(pj, &A, &id);
    free(id.layer);
    free(id.head);
    h5io_finish(f, out);
    free(pj);
    free(optstr);
    prov_free(p);
    attn_close(r);
    accum_free(&A);
    free(rb.vec);
    free(rb.info);
    free(blocks);
    free(valid);
}

/* ---------------- merge ---------------- */
typedef struct { int a, b; } range;
static int cmp_range(const void *x, const void *y) {
    const range *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

static void add_exact(hid_t f, const char *path, const char *name, an_fix *tot, int N, int full) {
    hsize_t w3[3] = {N, N, 4}, w2[2] = {N, 4};
    int *ex = full ? h5io_read_i32(f, path, name, 3, w3, NULL) : h5io_read_i32(f, path, name, 2, w2, NULL);
    if (full) {
        int p = 0;
        for (int a = 0; a < N; a++)
            for (int b = a + 1; b < N; b++) tot[p++] += an_fix_unpack(ex + 4 * ((size_t)a * N + b));
    } else {
        for (int a = 0; a < N; a++) tot[a] += an_fix_unpack(ex + 4 * a);
    }
    free(ex);
}

/* Copies a root string attribute into buf (no allocation survives, so a later die_data leaks
 * nothing). */
static void need_str(dist_file *d, const char *key, char *buf, size_t cap) {
    char *s = h5io_get_attr_str(d->f, "/", key);
    if (!s) die_data(d->path, "missing attribute '%s'", key);
    snprintf(buf, cap, "%s", s);
    free(s);
}

static void run_merge(const char *out, char **in, int nin) {
    dist_file **d = xmalloc(nin * sizeof *d);
    range *rg = xmalloc(nin * sizeof *rg);
    char optstr[512] = "", sha[80] = "", agg[16] = "";
    accum A = {0};
    prov *p = prov_new();
    for (int i = 0; i < nin; i++) {
        d[i] = dist_open(in[i]);
        char o[512], s[80], sq[4096], ag[16];
        need_str(d[i], "options", o, sizeof o);
        need_str(d[i], "input_sha256", s, sizeof s);
        need_str(d[i], "sequences", sq, sizeof sq);
        need_str(d[i], "aggregate", ag, sizeof ag);
        if (i == 0) {
            strcpy(optstr, o), strcpy(sha, s), strcpy(agg, ag);
            accum_init(&A, d[0]->N);
        } else {
            if (d[i]->L != d[0]->L || d[i]->H != d[0]->H) die_data(in[i], "%d×%d heads, first shard has %d×%d", d[i]->L, d[i]->H, d[0]->L, d[0]->H);
            if (strcmp(o, optstr)) die_data(in[i], "options differ from the first shard (%s vs %s)", o, optstr);
            if (strcmp(s, sha)) die_data(in[i], "computed from a different input file than the first shard");
        }
        if (sscanf(sq, "%d:%d", &rg[i].a, &rg[i].b) != 2) die_data(in[i], "attribute 'sequences' is '%s', not A:B (already merged?)", sq);
        for (int m = 0; m < DIST_NMETRIC; m++) {
            char name[64];
            snprintf(name, sizeof name, "exact/%s", dist_metric_names[m]);
            add_exact(d[i]->f, in[i], name, A.tot[m], A.N, 1);
        }
        add_exact(d[i]->f, in[i], "exact/head_sink_mass", A.tot_sink, A.N, 0);
        A.rows += d[i]->rows;
        prov_input(p, in[i], d[i]->sha);
        if (d[i]->provenance) prov_upstream(p, d[i]->provenance);
    }
    qsort(rg, nin, sizeof *rg, cmp_range);
    for (int i = 1; i < nin; i++)
        if (rg[i].a < rg[i - 1].b) die_data(in[0], "shards overlap: sequences %d:%d and %d:%d", rg[i - 1].a, rg[i - 1].b, rg[i].a, rg[i].b);
    strbuf sq = {0};
    for (int i = 0; i < nin; i++) sb_printf(&sq, "%s%d:%d", i ? "," : "", rg[i].a, rg[i].b);
    /* Contiguous shards are recorded as one range, exactly as a single run over it would be. */
    int contiguous = 1;
    for (int i = 1; i < nin; i++) contiguous &= rg[i].a == rg[i - 1].b;
    char whole[64];
    snprintf(whole, sizeof whole, "%d:%d", rg[0].a, rg[nin - 1].b);
    prov_opt_str(p, "merge", contiguous ? whole : sq.s);
    char *pj = prov_json(p);
    hid_t f = h5io_create(out);
    long long nrep = 0, x;
    for (int i = 0; i < nin; i++)
        if (h5io_get_attr_int(d[i]->f, "/", "zero_replaced", &x) == 0) nrep += x;
    int agg_sum = strcmp(agg, "sum") == 0;
    write_attrs(f, pj, d[0]->model, sha, optstr, d[0]->L, d[0]->H, contiguous ? whole : sq.s, agg_sum, nrep);
    head_ids id = ids_from_dist(d[0]);
    write_heads(f, &id);
    write_matrices(f, &A, agg_sum);
    if (!cli_is_stdio(out)) print_heads_tsv(pj, &A, &id);
    free(id.layer);
    free(id.head);
    h5io_finish(f, out);
    for (int i = 0; i < nin; i++) dist_close(d[i]);
    free(d);
    free(rg);
    accum_free(&A);
    free(pj);
    sb_free(&sq);
    prov_free(p);
}

int main(int argc, char **argv) {
    cli_init("distance");
    h5io_quiet();
    dopts o = {2, 0, 0, 0, 0, -1, 1e-9};
    int sink_given = 0, merge = 0;
    static struct option lo[] = {
        {"min-query", required_argument, 0, 'q'}, {"exclude-sink-query", no_argument, 0, 'x'},
        {"aggregate", required_argument, 0, 'a'}, {"sink", required_argument, 0, 'k'},
        {"zero-delta", required_argument, 0, 'z'}, {"seqs", required_argument, 0, 's'},
        {"merge", no_argument, 0, 'm'}, {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 'q': o.min_query = (int)cli_parse_long("min-query", optarg, 0, 1 << 20); break;
        case 'x': o.excl_sink_q = 1; break;
        case 'a':
            if (strcmp(optarg, "mean") && strcmp(optarg, "sum")) die_usage("--aggregate: '%s' is not mean or sum", optarg);
            o.agg_sum = strcmp(optarg, "sum") == 0;
            break;
        case 'k': o.sink = (int)cli_parse_long("sink", optarg, 0, 1 << 20), sink_given = 1; break;
        case 'z': o.zero_delta = cli_parse_double("zero-delta", optarg, 1e-300, 0.01); break;
        case 's': parse_seqs(optarg, &o.seq_a, &o.seq_b); break;
        case 'm': merge = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': cli_print_version(); return 0;
        default: die_usage("try 'distance --help'");
        }
    }
    if (merge) {
        if (argc - optind < 2) die_usage("--merge needs OUT and at least one shard");
        run_merge(argv[optind], argv + optind + 1, argc - optind - 1);
        return 0;
    }
    if (argc - optind != 2) die_usage("need IN and OUT (try 'distance --help')");
    run_distance(argv[optind], argv[optind + 1], &o, sink_given);
    return 0;
}

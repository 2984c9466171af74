/* distance: the N×N head distance matrices of METHODS §4, every metric and convention in one
 * streaming pass (one sequence's L blocks at a time), with exact sums so shards merge
 * bit-identically (distance --merge). */
#include "attn/analysis.h"
#include "attn/attnio.h"
#include "cli/cli.h"
#include "io/h5io.h"
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
    "  --tsv FILE|-         also write the per-head table (head layer index sink_mass, after a\n"
    "                       '# provenance:' line) to FILE ('-' = stdout, when OUT is a file)\n"
    "  --progress           progress bar on stderr; --no-progress: none (default: when\n"
    "                       stderr is a terminal)\n"
    "  -h, --help / --version\n"
    "Output (HDF5, netCDF-4): sum/<metric> [N,N], exact/<metric> [N,N,4] (128-bit fixed-point\n"
    "  sums), distance/<metric> [N,N] (mean over rows, or the sum), rms/<metric> [N,N] (root mean\n"
    "  square over rows: keeps d_A^2 = d_Aperp^2 + db^2), sum_sq/, exact_sq/ (sums of squares),\n"
    "  rows, head_sink_mass/head_layer/head_index [N]; see\n"
    "  docs/ANALYSIS.md. Nothing else goes to stdout unless --tsv - asks for the table.\n"
    "Rows kept: query valid, t >= min-query (causal), D >= 3 parts, sink key in the row.\n"
    "Threads: OMP_NUM_THREADS (results do not depend on it).\n"
    "Memory: L*H*T*T*4 bytes (one sequence's blocks) + 640*N*T bytes (prepared rows) +\n"
    "  about 12*N*N*24 bytes (sums, sums of squares, exact totals) + 2*N*N*(8+16) bytes while\n"
    "  writing.\n";

typedef struct {
    int min_query, excl_sink_q, agg_sum, sink, seq_a, seq_b;
    double zero_delta;
    const char *tsv;         /* --tsv: the per-head table, or NULL */
} dopts;

/* Accumulators: per-sequence double sums (upper triangle, pair index), then exact totals. */
typedef struct {
    int N, npair;
    int *pa, *pb;            /* pair index → heads */
    double *seq[DIST_NMETRIC], *seq_sq[DIST_NMETRIC];   /* sums of distances and of their squares */
    an_fix *tot[DIST_NMETRIC], *tot_sq[DIST_NMETRIC];
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
        A->seq_sq[m] = xcalloc(A->npair + 1, sizeof(double));
        A->tot_sq[m] = xcalloc(A->npair + 1, sizeof(an_fix));
    }
    A->seq_sink = xcalloc(N, sizeof(double));
    A->tot_sink = xcalloc(N, sizeof(an_fix));
    A->rows = 0;
}

static void accum_free(accum *A) {
    free(A->pa);
    free(A->pb);
    for (int m = 0; m < DIST_NMETRIC; m++) free(A->seq[m]), free(A->tot[m]), free(A->seq_sq[m]), free(A->tot_sq[m]);
    free(A->seq_sink);
    free(A->tot_sink);
}

/* Adds the finished sequence into the exact totals and clears the sequence sums. */
static void accum_flush(accum *A) {
    for (int m = 0; m < DIST_NMETRIC; m++)
        for (int p = 0; p < A->npair; p++) {
            A->tot[m][p] += an_fix_from(A->seq[m][p]), A->seq[m][p] = 0;
            A->tot_sq[m][p] += an_fix_from(A->seq_sq[m][p]), A->seq_sq[m][p] = 0;
        }
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
                            for (int mm = 0; mm < DIST_NMETRIC; mm++) {
                                A->seq[mm][base + b] += out[mm];
                                A->seq_sq[mm][base + b] += out[mm] * out[mm];
                            }
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
    char err[2048];
    for (int l = 0; l < m->L; l++)
        if (attn_read_block(r, s, l, blocks + (size_t)l * m->H * Q * T, err, sizeof err)) die_data(NULL, "%s", err);
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
/* One metric's exact totals as the [N,N] double sum and the [N,N,4] fixed-point limbs. */
static void unpack_totals(const accum *A, const an_fix *tot, double *sum, int *ex) {
    int N = A->N;
    memset(sum, 0, (size_t)N * N * sizeof *sum);
    memset(ex, 0, (size_t)N * N * 4 * sizeof *ex);
    for (int p = 0; p < A->npair; p++) {
        size_t ab = (size_t)A->pa[p] * N + A->pb[p], ba = (size_t)A->pb[p] * N + A->pa[p];
        sum[ab] = sum[ba] = an_fix_to(tot[p]);
        an_fix_pack(tot[p], ex + 4 * ab);
        an_fix_pack(tot[p], ex + 4 * ba);
    }
}

/* distance/, sum/, exact/ (and, with_sq, rms/, sum_sq/, exact_sq/: the root mean square over
 * rows, from exact sums of squared per-row distances), head_sink_mass and rows. */
typedef enum { AGG_MEAN, AGG_SUM, AGG_RMS } aggregate;

/* One metric's totals as three datasets: the double sums, the exact 128-bit totals and the
 * matrix: distance/ = sum/rows (mean) or sum; rms/ = sqrt(sum of squares/rows). sum, dist and ex
 * are N*N (ex N*N*4) work buffers. */
static void write_aggregate(h5io_id f, const accum *A, const an_fix *tot, int m, aggregate agg, double *sum,
                            double *dist, int *ex) {
    static const char *group[3][3] = {{"sum", "exact", "distance"}, {"sum", "exact", "distance"},
                                      {"sum_sq", "exact_sq", "rms"}};
    int N = A->N;
    h5io_size d2[2] = {N, N}, d3[3] = {N, N, 4};
    unpack_totals(A, tot, sum, ex);
    for (size_t i = 0; i < (size_t)N * N; i++)
        dist[i] = agg == AGG_SUM ? sum[i] : agg == AGG_MEAN ? sum[i] / (double)A->rows : sqrt(sum[i] / (double)A->rows);
    char name[64];
    snprintf(name, sizeof name, "%s/%s", group[agg][0], dist_metric_names[m]);
    h5io_write_f64(f, name, 2, d2, sum);
    snprintf(name, sizeof name, "%s/%s", group[agg][1], dist_metric_names[m]);
    h5io_write_i32(f, name, 3, d3, ex);
    snprintf(name, sizeof name, "%s/%s", group[agg][2], dist_metric_names[m]);
    h5io_write_f64(f, name, 2, d2, dist);
}

static void write_matrices(h5io_id f, const accum *A, int agg_sum, int with_sq) {
    int N = A->N;
    h5io_size d1[1] = {N}, one[1] = {1};
    double *sum = xmalloc((size_t)N * N * sizeof *sum), *dist = xmalloc((size_t)N * N * sizeof *dist);
    int *ex = xmalloc((size_t)N * N * 4 * sizeof *ex);
    for (int m = 0; m < DIST_NMETRIC; m++)
        write_aggregate(f, A, A->tot[m], m, agg_sum ? AGG_SUM : AGG_MEAN, sum, dist, ex);
    for (int m = 0; with_sq && m < DIST_NMETRIC; m++) write_aggregate(f, A, A->tot_sq[m], m, AGG_RMS, sum, dist, ex);
    int *exs = xmalloc(N * 4 * sizeof *exs);
    double *hs = xmalloc(N * sizeof *hs);
    for (int a = 0; a < N; a++) {
        hs[a] = an_fix_to(A->tot_sink[a]) / (double)A->rows;
        an_fix_pack(A->tot_sink[a], exs + 4 * a);
    }
    h5io_write_f64(f, "head_sink_mass", 1, d1, hs);
    h5io_size d14[2] = {N, 4};
    h5io_write_i32(f, "exact/head_sink_mass", 2, d14, exs);
    int rows = (int)A->rows;
    h5io_write_i32(f, "rows", 1, one, &rows);
    free(exs); free(hs); free(sum); free(dist); free(ex);
}

/* Original layer and head numbers: the attention file's layer_index/head_index datasets when
 * extract wrote a subset, else 0..L-1 and 0..H-1. */
typedef struct { int L, H, *layer, *head; } head_ids;

static head_ids ids_from_attn(attn_reader *r) {
    const attn_meta *m = attn_meta_get(r);
    head_ids h = {m->L, m->H, xmalloc(m->L * sizeof(int)), xmalloc(m->H * sizeof(int))};
    h5io_id f = attn_reader_file(r);
    h5io_size wl[1] = {m->L}, wh[1] = {m->H};
    char err[2048];
    if (h5io_exists(f, "layer_index")) {
        int *x = h5io_read_i32(f, attn_path(r), "layer_index", 1, wl, NULL, err, sizeof err);
        if (!x) die_data(NULL, "%s", err);
        memcpy(h.layer, x, m->L * sizeof(int));
        free(x);
    } else for (int l = 0; l < m->L; l++) h.layer[l] = l;
    if (h5io_exists(f, "head_index")) {
        int *x = h5io_read_i32(f, attn_path(r), "head_index", 1, wh, NULL, err, sizeof err);
        if (!x) die_data(NULL, "%s", err);
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

static void write_heads(h5io_id f, const head_ids *id) {
    int N = id->L * id->H;
    int *hl = xmalloc(N * sizeof *hl), *hi = xmalloc(N * sizeof *hi);
    for (int a = 0; a < N; a++) hl[a] = id->layer[a / id->H], hi[a] = id->head[a % id->H];
    h5io_size d1[1] = {N};
    h5io_write_i32(f, "head_layer", 1, d1, hl);
    h5io_write_i32(f, "head_index", 1, d1, hi);
    free(hl);
    free(hi);
}

/* ---------------- netCDF-4 / CF description ---------------- */
/* Every axis named by a dimension scale of its own group (netCDF dimensions belong to a group, so
 * xarray opens each group on its own), the original layer and head of each head as auxiliary
 * coordinates of head_a and head_b in every group, long_name and units on every dataset. */
static const char *const metric_long[DIST_NMETRIC] = {
    "cosine distance of the full rows (sink kept)",
    "cosine distance of the content rows (sink dropped, renormalised)",
    "Jensen-Shannon divergence of the full rows",
    "Jensen-Shannon divergence of the content rows",
    "Euclidean distance of the full rows",
    "Euclidean distance of the content rows",
    "Aitchison distance d_A",
    "content distance d_A⊥ (clr projected off the sink-balance direction)",
    "content distance d_A⊥ of the dropped, renormalised rows",
    "sink-balance difference |b(p) - b(q)|"};

/* squared: holds squared distances; limbs: fixed-point limbs; sq: made from the sums of squares */
typedef struct { const char *group, *what; int squared, limbs, sq; } group_desc;
static const group_desc dist_groups[] = {
    {"distance", NULL, 0, 0, 0},        /* what: from --aggregate */
    {"sum", "sum over kept rows of the", 0, 0, 0},
    {"exact", "exact sum over kept rows (128-bit fixed point, 64 fraction bits, as 32-bit limbs, "
              "least significant first) of the", 0, 1, 0},
    {"rms", "root mean square over kept rows of the", 0, 0, 1},
    {"sum_sq", "sum over kept rows of the square of the", 1, 0, 1},
    {"exact_sq", "exact sum over kept rows (128-bit fixed point, 64 fraction bits, as 32-bit limbs, "
                 "least significant first) of the square of the", 1, 1, 1}};

static const char *metric_units(int m, const group_desc *g) {
    if (g->limbs) return "1";
    if (m != M_JS_KEEP && m != M_JS_DROP) return "1";
    return g->squared ? "bit2" : "bit";
}

static void write_coord(h5io_id f, const char *path, const char *scope, const char *axis, const int *x, int N,
                        const char *long_name) {
    h5io_size d1[1] = {N};
    h5io_write_i32(f, path, 1, d1, x);
    h5io_label_dims(f, path, scope, 1, &axis);
    h5io_describe(f, path, long_name, "1");
}

/* group/head_layer_X and group/head_index_X for both head axes X = a, b. */
static void write_group_coords(h5io_id f, const char *group, const int *hl, const int *hi, int N) {
    static const char *const ab[2] = {"a", "b"};
    char path[96], axis[16], what[96];
    for (int i = 0; i < 2; i++) {
        snprintf(axis, sizeof axis, "head_%s", ab[i]);
        snprintf(path, sizeof path, "%s/head_layer_%s", group, ab[i]);
        snprintf(what, sizeof what, "original layer of head %s", ab[i]);
        write_coord(f, path, group, axis, hl, N, what);
        snprintf(path, sizeof path, "%s/head_index_%s", group, ab[i]);
        snprintf(what, sizeof what, "original head (within its layer) of head %s", ab[i]);
        write_coord(f, path, group, axis, hi, N, what);
    }
}

static void describe_axes(h5io_id f, const char *group, int limbs) {
    char path[96];
    snprintf(path, sizeof path, "%s/head_a", group);
    h5io_describe(f, path, "head a = layer slot * heads + head slot", "1");
    if (!strcmp(group, "/")) return;
    snprintf(path, sizeof path, "%s/head_b", group);
    h5io_describe(f, path, "head b = layer slot * heads + head slot", "1");
    snprintf(path, sizeof path, "%s/limb", group);
    if (limbs) h5io_describe(f, path, "32-bit limb of a 128-bit fixed-point number", "1");
}

static void describe_group(h5io_id f, const group_desc *g, const int *hl, const int *hi, int N, int agg_sum) {
    static const char *const axes[3] = {"head_a", "head_b", "limb"};
    char path[96], what[320];
    write_group_coords(f, g->group, hl, hi, N);
    for (int m = 0; m < DIST_NMETRIC; m++) {
        snprintf(path, sizeof path, "%s/%s", g->group, dist_metric_names[m]);
        h5io_label_dims(f, path, g->group, g->limbs ? 3 : 2, axes);
        const char *w = g->what ? g->what : agg_sum ? "sum over kept rows of the" : "mean over kept rows of the";
        snprintf(what, sizeof what, "%s %s", w, metric_long[m]);
        h5io_describe(f, path, what, metric_units(m, g));
        h5io_attr_str(f, path, "coordinates", "head_layer_a head_index_a head_layer_b head_index_b");
    }
    if (g->limbs && !g->squared) {
        static const char *const sink_axes[2] = {"head_a", "limb"};
        h5io_label_dims(f, "exact/head_sink_mass", "exact", 2, sink_axes);
        snprintf(what, sizeof what, "%s sink mass of head a", g->what);
        h5io_describe(f, "exact/head_sink_mass", what, "1");
        h5io_attr_str(f, "exact/head_sink_mass", "coordinates", "head_layer_a head_index_a");
    }
    describe_axes(f, g->group, g->limbs);
}

static void describe_file(h5io_id f, const head_ids *id, int agg_sum, int with_sq) {
    static const char *const head_a = "head_a", *const one = "one";
    int N = id->L * id->H;
    int *hl = xmalloc(N * sizeof *hl), *hi = xmalloc(N * sizeof *hi);
    for (int a = 0; a < N; a++) hl[a] = id->layer[a / id->H], hi[a] = id->head[a % id->H];
    for (size_t i = 0; i < sizeof dist_groups / sizeof *dist_groups; i++)
        if (with_sq || !dist_groups[i].sq)
            describe_group(f, &dist_groups[i], hl, hi, N, agg_sum);
    h5io_label_dims(f, "head_sink_mass", "/", 1, &head_a);
    h5io_label_dims(f, "head_layer", "/", 1, &head_a);
    h5io_label_dims(f, "head_index", "/", 1, &head_a);
    h5io_label_dims(f, "rows", "/", 1, &one);
    h5io_describe(f, "head_sink_mass", "mean sink mass of head a over kept rows", "1");
    h5io_attr_str(f, "head_sink_mass", "coordinates", "head_layer head_index");
    h5io_describe(f, "head_layer", "original layer of head a", "1");
    h5io_describe(f, "head_index", "original head (within its layer) of head a", "1");
    h5io_describe(f, "rows", "kept rows (query rows used for every head pair)", "1");
    h5io_describe(f, "one", "single-entry axis", "1");
    describe_axes(f, "/", 0);
    free(hl);
    free(hi);
}

/* --tsv: the per-head table, only when asked (stdout stays free for a pipeline's next program). */
static void write_heads_tsv(const char *path, const char *prov, const accum *A, const head_ids *id) {
    if (!path) return;
    strbuf sb = {0};
    sb_printf(&sb, "# provenance: %s\nhead\tlayer\tindex\tsink_mass\n", prov);
    for (int a = 0; a < A->N; a++)
        sb_printf(&sb, "%d\t%d\t%d\t%.17g\n", a, id->layer[a / id->H], id->head[a % id->H],
                  an_fix_to(A->tot_sink[a]) / (double)A->rows);
    cli_write_bytes(path, sb.s, sb.len);
    sb_free(&sb);
}

/* Attributes every distance file carries; the "options" string must match for a merge. */
static char *options_string(const dopts *o) {
    char *s = xmalloc(256);
    snprintf(s, 256, "min_query=%d exclude_sink_query=%d aggregate=%s sink=%d zero_delta=%.17g",
             o->min_query, o->excl_sink_q, o->agg_sum ? "sum" : "mean", o->sink, o->zero_delta);
    return s;
}

/* sequences: how many sequences were used (an integer, as in attention files); seq_range: which
 * ("A:B", or "A:B,C:D" for a merge of non-contiguous shards). */
static void write_attrs(h5io_id f, const char *prov, const char *model, const char *in_sha, const char *optstr,
                        int L, int H, long long nseq, const char *seq_range, int agg_sum, long long nrep) {
    h5io_attr_str(f, "/", "format", "attncoda-distance");
    h5io_attr_int(f, "/", "format_version", 2);
    h5io_attr_str(f, "/", "provenance", prov);
    h5io_attr_str(f, "/", "model", model);
    h5io_attr_str(f, "/", "input_sha256", in_sha);
    h5io_attr_str(f, "/", "options", optstr);
    h5io_attr_int(f, "/", "sequences", nseq);
    h5io_attr_str(f, "/", "sequence_range", seq_range);
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
    char err[2048];
    attn_reader *r = attn_open(in, err, sizeof err);
    if (!r) die_data(NULL, "%s", err);
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
    progress_begin(&pg, "distance", "seq", o->seq_b - o->seq_a);
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
    h5io_id f = h5io_create_netcdf(out, err, sizeof err);
    if (f < 0) cli_check((int)f, err);
    write_attrs(f, pj, m->model[0] ? m->model : in, attn_checksum(r), optstr, m->L, m->H, o->seq_b - o->seq_a, seqs,
                o->agg_sum, nrep);
    head_ids id = ids_from_attn(r);
    write_heads(f, &id);
    write_matrices(f, &A, o->agg_sum, 1);
    describe_file(f, &id, o->agg_sum, 1);
    cli_check(h5io_finish(f, out, err, sizeof err), err);
    write_heads_tsv(o->tsv, pj, &A, &id);
    free(id.layer);
    free(id.head);
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

static void add_exact(h5io_id f, const char *path, const char *name, an_fix *tot, int N, int full) {
    h5io_size w3[3] = {N, N, 4}, w2[2] = {N, 4};
    char err[2048];
    int *ex = full ? h5io_read_i32(f, path, name, 3, w3, NULL, err, sizeof err)
                   : h5io_read_i32(f, path, name, 2, w2, NULL, err, sizeof err);
    if (!ex) die_data(NULL, "%s", err);
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
    char err[2048];
    char *s = h5io_get_attr_str(d->f, "/", key, err, sizeof err);
    if (!s && err[0]) die_data(NULL, "%s", err);
    if (!s) die_data(d->path, "missing attribute '%s'", key);
    snprintf(buf, cap, "%s", s);
    free(s);
}

/* The shard's sequence range A:B: attribute sequence_range, or in files of format_version 1 the
 * string attribute sequences. A merge of non-contiguous shards ("A:B,C:D") is not a shard. */
static range shard_range(dist_file *d) {
    char sq[4096];
    const char *key = h5io_attr_exists(d->f, "/", "sequence_range") ? "sequence_range" : "sequences";
    need_str(d, key, sq, sizeof sq);
    range r;
    int end = 0;
    if (sscanf(sq, "%d:%d%n", &r.a, &r.b, &end) != 2 || sq[end] != 0)
        die_data(d->path, "attribute '%s' is '%s', not A:B (a merge of non-contiguous shards?)", key, sq);
    if (r.a < 0 || r.b <= r.a) die_data(d->path, "attribute '%s' is '%s', not a range of sequences", key, sq);
    return r;
}

/* Contiguous shards merge into exactly what one run over their union writes, provenance included:
 * every shard's provenance, with its own range and zero count replaced by the union's, must be the
 * same string. NULL when one is not (shards of differently named inputs, or unreadable). */
static char *single_run_provenance(dist_file **d, int nin, const char *whole, long long nrep) {
    char *first = NULL;
    int agree = 1;
    for (int i = 0; i < nin && agree; i++) {
        prov *p = prov_parse(d[i]->provenance);
        if (!p) {
            agree = 0;
            break;
        }
        prov_opt_str(p, "seqs", whole);
        prov_opt_int(p, "zero_replaced", nrep);
        char *j = prov_json(p);
        prov_free(p);
        if (!first) first = j;
        else {
            agree = strcmp(first, j) == 0;
            free(j);
        }
    }
    if (agree) return first;
    free(first);
    return NULL;
}

static void run_merge(const char *out, char **in, int nin, const char *tsv) {
    char err[2048];
    dist_file **d = xmalloc(nin * sizeof *d);
    range *rg = xmalloc(nin * sizeof *rg);
    char optstr[512] = "", sha[80] = "", agg[16] = "";
    accum A = {0};
    int with_sq = 1;
    long long nseq = 0;
    prov *p = prov_new();
    for (int i = 0; i < nin; i++) {
        d[i] = dist_open(in[i], err, sizeof err);
        if (!d[i]) die_data(NULL, "%s", err);
        char o[512], s[80], ag[16];
        need_str(d[i], "options", o, sizeof o);
        need_str(d[i], "input_sha256", s, sizeof s);
        need_str(d[i], "aggregate", ag, sizeof ag);
        if (i == 0) {
            strcpy(optstr, o), strcpy(sha, s), strcpy(agg, ag);
            accum_init(&A, d[0]->N);
        } else {
            if (d[i]->L != d[0]->L || d[i]->H != d[0]->H) die_data(in[i], "%d×%d heads, first shard has %d×%d", d[i]->L, d[i]->H, d[0]->L, d[0]->H);
            if (strcmp(o, optstr)) die_data(in[i], "options differ from the first shard (%s vs %s)", o, optstr);
            if (strcmp(s, sha)) die_data(in[i], "computed from a different input file than the first shard");
        }
        rg[i] = shard_range(d[i]);
        /* shards of format_version 1 have no sums of squares: then the merge has no rms/ */
        int shard_sq = h5io_exists(d[i]->f, "exact_sq");
        with_sq &= shard_sq;
        for (int m = 0; m < DIST_NMETRIC; m++) {
            char name[64];
            snprintf(name, sizeof name, "exact/%s", dist_metric_names[m]);
            add_exact(d[i]->f, in[i], name, A.tot[m], A.N, 1);
            snprintf(name, sizeof name, "exact_sq/%s", dist_metric_names[m]);
            if (shard_sq) add_exact(d[i]->f, in[i], name, A.tot_sq[m], A.N, 1);
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
    for (int i = 0; i < nin; i++) sb_printf(&sq, "%s%d:%d", i ? "," : "", rg[i].a, rg[i].b), nseq += rg[i].b - rg[i].a;
    /* Contiguous shards are recorded as one range, exactly as a single run over it would be. */
    int contiguous = 1;
    for (int i = 1; i < nin; i++) contiguous &= rg[i].a == rg[i - 1].b;
    char whole[64];
    snprintf(whole, sizeof whole, "%d:%d", rg[0].a, rg[nin - 1].b);
    prov_opt_str(p, "merge", contiguous ? whole : sq.s);
    long long nrep = 0, x;
    for (int i = 0; i < nin; i++) {
        int got = h5io_get_attr_int(d[i]->f, "/", "zero_replaced", &x, err, sizeof err);
        if (got < 0) die_data(NULL, "%s", err);
        if (got == 0) nrep += x;
    }
    char *pj = contiguous ? single_run_provenance(d, nin, whole, nrep) : NULL;
    if (!pj) pj = prov_json(p);
    h5io_id f = h5io_create_netcdf(out, err, sizeof err);
    if (f < 0) cli_check((int)f, err);
    int agg_sum = strcmp(agg, "sum") == 0;
    write_attrs(f, pj, d[0]->model, sha, optstr, d[0]->L, d[0]->H, nseq, contiguous ? whole : sq.s, agg_sum, nrep);
    head_ids id = ids_from_dist(d[0]);
    write_heads(f, &id);
    write_matrices(f, &A, agg_sum, with_sq);
    describe_file(f, &id, agg_sum, with_sq);
    cli_check(h5io_finish(f, out, err, sizeof err), err);
    write_heads_tsv(tsv, pj, &A, &id);
    free(id.layer);
    free(id.head);
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
    dopts o = {2, 0, 0, 0, 0, -1, 1e-9, NULL};
    int sink_given = 0, merge = 0;
    static struct option lo[] = {
        {"min-query", required_argument, 0, 'q'}, {"exclude-sink-query", no_argument, 0, 'x'},
        {"aggregate", required_argument, 0, 'a'}, {"sink", required_argument, 0, 'k'},
        {"zero-delta", required_argument, 0, 'z'}, {"seqs", required_argument, 0, 's'},
        {"merge", no_argument, 0, 'm'}, {"tsv", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'}, CLI_PROGRESS_OPTIONS, {0, 0, 0, 0}};
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
        case 't': o.tsv = optarg; break;
        case CLI_OPT_PROGRESS: case CLI_OPT_NO_PROGRESS: cli_progress_option(c); break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': cli_print_version(); return 0;
        default: cli_bad_option(argv, lo, "h");
        }
    }
    if (merge) cli_operands(argc, argv, 2, -1, "OUTPUT and at least one shard after --merge");
    else cli_operands(argc, argv, 2, 2, "INPUT and OUTPUT");
    const char *out = merge ? argv[optind] : argv[optind + 1];
    if (o.tsv && cli_is_stdio(o.tsv) && cli_is_stdio(out)) die_usage("OUTPUT and --tsv cannot both be stdout");
    cli_out_plan(out);
    cli_out_plan(o.tsv);
    if (merge) run_merge(out, argv + optind + 1, argc - optind - 1, o.tsv);
    else run_distance(argv[optind], out, &o, sink_given);
    return 0;
}

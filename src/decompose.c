/* decompose: the sink/content split of every attention row (METHODS §2) — sink mass, sink
 * balance, content dispersion, H(p), H_b(s), H(π) — per row, and per head as the mean over the
 * kept rows (METHODS §1). */
#include "attn/attnio.h"
#include "cli/cli.h"
#include "attn/coda.h"
#include "io/h5io.h"

#include <getopt.h>
#include <omp.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { Q_SINK, Q_BAL, Q_DISP, Q_H, Q_HB, Q_HC, Q_HCW, NQ };
static const char *QNAME[NQ] = {"sink_mass", "sink_balance", "content_dispersion", "entropy",
                                "entropy_sink", "entropy_content", "entropy_content_weighted"};

typedef struct {
    int sink, min_query, excl, threads, read_only;
    double zero_delta;
    const char *in, *out, *tsv, *by_position;
} dec_opts;

static void usage(void) {
    printf("Usage: %s [options] INPUT|- OUTPUT|-\n"
           "Per-row and per-head sink/content decomposition of an attention file (METHODS §2).\n"
           "A file of sampled query rows (query_pos) gives [S,L,H,Q] per row, Q the stored rows,\n"
           "and query_pos is copied.\n"
           "Per row, float64 [S,L,H,T] (NaN where the row lacks the sink or has < 2 parts):\n"
           "  row/sink_mass row/sink_balance row/content_dispersion row/entropy row/entropy_sink\n"
           "  row/entropy_content row/entropy_content_weighted   (H = H_b(s) + (1-s)H(pi))\n"
           "Per head, float64 [L,H]: head/<same names> = mean over kept rows; head/rows.\n\n"
           "      --sink K              sink key index (default: the file's 'sink' attribute)\n"
           "      --min-query Q         causal rows t < Q are not kept (2)\n"
           "      --exclude-sink-query  do not keep the sink's own query row\n"
           "      --zero-delta X        zero replacement for probability input (1e-9)\n"
           "      --tsv FILE            also write the per-head table (TSV, '-' = stdout)\n"
           "      --by-position FILE    also write sink mass, H, H_b(s) and H(pi) per layer in\n"
           "                            log-spaced query-position bins [0,1), [2^k, 2^(k+1))\n"
           "                            (TSV, '-' = stdout; docs/FORMAT.md)\n"
           "      --threads N           OpenMP threads (default: all cores)\n"
           "      --read-only           only read the attention dataset and print the time taken\n"
           "                            (the baseline of `make bench`); OUTPUT is not written\n"
           "      --progress            progress bar on stderr; --no-progress: none (default:\n"
           "                            when stderr is a terminal)\n"
           "  -h, --help, -V, --version\n\n"
           "Memory: one (sequence, layer) block (4*H*T*T bytes) plus 56*S*L*H*T bytes of per-row\n"
           "results, and the input/output images when reading stdin / writing stdout.\n", cli_prog());
}

static void parse_args(int argc, char **argv, dec_opts *o) {
    enum { O_SINK = 256, O_MINQ, O_EXCL, O_ZD, O_TSV, O_THR, O_RO, O_BYPOS };
    static const struct option lo[] = {
        {"sink", 1, 0, O_SINK}, {"min-query", 1, 0, O_MINQ}, {"exclude-sink-query", 0, 0, O_EXCL},
        {"zero-delta", 1, 0, O_ZD}, {"tsv", 1, 0, O_TSV}, {"threads", 1, 0, O_THR}, {"read-only", 0, 0, O_RO},
        {"by-position", 1, 0, O_BYPOS}, {"help", 0, 0, 'h'}, {"version", 0, 0, 'V'}, CLI_PROGRESS_OPTIONS, {0, 0, 0, 0}};
    *o = (dec_opts){.sink = -1, .min_query = 2, .zero_delta = 1e-9};
    int c;
    while ((c = getopt_long(argc, argv, "hV", lo, NULL)) != -1) {
        switch (c) {
        case O_SINK: o->sink = cli_parse_long("sink", optarg, 0, 1 << 20); break;
        case O_MINQ: o->min_query = cli_parse_long("min-query", optarg, 0, 1 << 20); break;
        case O_EXCL: o->excl = 1; break;
        case O_ZD: o->zero_delta = cli_parse_double("zero-delta", optarg, 1e-300, 1e-2); break;
        case O_TSV: o->tsv = optarg; break;
        case O_RO: o->read_only = 1; break;
        case O_BYPOS: o->by_position = optarg; break;
        case O_THR: o->threads = cli_parse_long("threads", optarg, 1, 1024); break;
        case CLI_OPT_PROGRESS: case CLI_OPT_NO_PROGRESS: cli_progress_option(c); break;
        case 'h': usage(); exit(0);
        case 'V': cli_print_version(); exit(0);
        default: cli_bad_option(argv, lo, "hV");
        }
    }
    cli_operands(argc, argv, 2, 2, "INPUT and OUTPUT");
    o->in = argv[optind];
    o->out = argv[optind + 1];
    if (o->tsv && cli_is_stdio(o->tsv) && cli_is_stdio(o->out))
        die_usage("OUTPUT and --tsv cannot both be stdout");
    if (o->by_position && cli_is_stdio(o->by_position) && ((o->tsv && cli_is_stdio(o->tsv)) || cli_is_stdio(o->out)))
        die_usage("only one of OUTPUT, --tsv and --by-position can be stdout");
}

/* All stored rows of head h of one (s, l) block into q[k][h*Q + i] (stored row i is query
 * qp[i]); returns zero replacements. *bad_t: the first query whose row cannot be closed (left
 * as is when every row can). */
static long long head_stats(const attn_meta *m, const uint8_t *vs, const int32_t *qp, const float *buf, int h,
                            int sink, double zd, double *q[NQ], int *bad_t) {
    int T = m->T;
    long long z = 0;
    double lr[T];
    for (int r = 0; r < m->Q; r++) {
        int t = qp[r];
        size_t i = (size_t)h * m->Q + r;
        for (int k = 0; k < NQ; k++) q[k][i] = NAN;
        if (vs && !vs[t]) continue;
        int spos, D = attn_gather_row(m, vs, buf + i * T, t, sink, zd, lr, &spos, &z);
        if (D < 0 && *bad_t < 0) *bad_t = t;
        if (spos < 0 || D < 2) continue;
        coda_row st;
        coda_row_stats(lr, D, spos, &st);
        q[Q_SINK][i] = st.s; q[Q_BAL][i] = st.b; q[Q_DISP][i] = st.cperp;
        q[Q_H][i] = st.H; q[Q_HB][i] = st.Hb; q[Q_HC][i] = st.Hc;
        q[Q_HCW][i] = st.cmass * st.Hc;
    }
    return z;
}

/* Block b's rows while one thread reads (and validates) block b+1 into the other buffer: the
 * read is serial HDF5 work, so overlapping it with the arithmetic is what keeps decompose near
 * the speed of the bare read. Only the reading thread calls HDF5. A row of block b that cannot
 * be closed, then a refused read of block b+1, is fatal once both are done. */
static long long block_stats_overlapped(attn_reader *r, int b, const uint8_t *vs, const float *cur,
                                        float *next, int sink, double zd, double *q[NQ]) {
    const int32_t *qp = attn_query_pos(r, b / attn_meta_get(r)->L);
    const attn_meta *m = attn_meta_get(r);
    int nb = m->S * m->L;
    long long z = 0;
    int bad_h = -1, bad_t = -1, read_failed = 0;
    char err[2048];
    #pragma omp parallel
    {
        #pragma omp single nowait
        if (b + 1 < nb) read_failed = attn_read_block(r, (b + 1) / m->L, (b + 1) % m->L, next, err, sizeof err) != 0;
        #pragma omp for schedule(dynamic) reduction(+ : z)
        for (int h = 0; h < m->H; h++) {
            int t = -1;
            z += head_stats(m, vs, qp, cur, h, sink, zd, q, &t);
            if (t >= 0) {
                #pragma omp critical
                if (bad_h < 0 || h < bad_h) bad_h = h, bad_t = t;
            }
        }
    }
    if (bad_h >= 0)
        die_data(attn_path(r), ATTN_ROW_UNCLOSABLE " in row (sequence %d, layer %d, head %d, query %d)",
                 b / m->L, b % m->L, bad_h, bad_t);
    if (read_failed) die_data(NULL, "%s", err);
    return z;
}

static char *provenance(const dec_opts *o, attn_reader *r, int sink) {
    prov *p = prov_new();
    prov_input(p, o->in, attn_checksum(r));
    prov_upstream(p, attn_provenance(r));
    prov_opt_int(p, "sink", sink);
    prov_opt_int(p, "min_query", o->min_query);
    prov_opt_int(p, "exclude_sink_query", o->excl);
    prov_opt_dbl(p, "zero_delta", o->zero_delta);
    prov_opt_str(p, "aggregate", "mean");
    char *js = prov_json(p);
    prov_free(p);
    return js;
}

/* Named axes for h5py and xarray; each group holds its own scales (netCDF-4 dimensions are
 * per group, and the root cannot hold a "head" scale beside the head/ group). */
static void label_axes(h5io_id f, int sampled) {
    static const char *const query_axes[4] = {"sequence", "layer", "head", "query"};
    /* sampled rows: the stored-row axis is "query_row" (query_pos names each row's position) */
    static const char *const sampled_axes[4] = {"sequence", "layer", "head", "query_row"};
    const char *const *row_axes = sampled ? sampled_axes : query_axes;
    if (sampled) h5io_label_dims(f, "query_pos", "/", 2, (const char *const[]){"sequence", "query_row"});
    char name[64];
    for (int k = 0; k < NQ; k++) {
        snprintf(name, sizeof name, "row/%s", QNAME[k]);
        h5io_label_dims(f, name, "row", 4, row_axes);
        snprintf(name, sizeof name, "head/%s", QNAME[k]);
        h5io_label_dims(f, name, "head", 2, row_axes + 1);
    }
    h5io_label_dims(f, "head/rows", "head", 2, row_axes + 1);
}

static void write_tsv(const dec_opts *o, const attn_meta *m, const char *pj, double *head[NQ],
                      const long long *rows) {
    strbuf sb = {0};
    sb_printf(&sb, "# provenance: %s\n# model: %s\n", pj, m->model);
    sb_printf(&sb, "layer\thead\trows");
    for (int k = 0; k < NQ; k++) sb_printf(&sb, "\t%s", QNAME[k]);
    sb_printf(&sb, "\n");
    for (int i = 0; i < m->L * m->H; i++) {
        sb_printf(&sb, "%d\t%d\t%lld", i / m->H, i % m->H, rows[i]);
        for (int k = 0; k < NQ; k++) sb_printf(&sb, "\t%.10g", head[k][i]);
        sb_printf(&sb, "\n");
    }
    cli_write_bytes(o->tsv, sb.s, sb.len);
    sb_free(&sb);
}

/* --by-position: per layer and query-position bin, sums over the kept rows of every head.
 * Bin 0 is [0, 1), bin k ≥ 1 is [2^(k−1), 2^k): log-spaced, the same edges for every T. */
enum { BP_SINK, BP_H, BP_HB, BP_HC, BP_N };
static const int BP_Q[BP_N] = {Q_SINK, Q_H, Q_HB, Q_HC};
typedef struct {
    int L, nbin;
    double *sum;       /* [(L+1)·nbin·BP_N]; layer L holds every layer together */
    long long *rows;   /* [(L+1)·nbin] */
} bypos;

static int bypos_bin(int t) {
    int k = 0;
    while (t > 0) t >>= 1, k++;
    return k;   /* t = 0 → 0; 2^(k−1) ≤ t < 2^k → k */
}

static void bypos_init(bypos *bp, int L, int T) {
    bp->L = L;
    bp->nbin = bypos_bin(T - 1) + 1;
    bp->sum = xcalloc((size_t)(L + 1) * bp->nbin * BP_N, sizeof *bp->sum);
    bp->rows = xcalloc((size_t)(L + 1) * bp->nbin, sizeof *bp->rows);
}

/* Stored row i (query t) of every head of layer l. */
static void bypos_add(bypos *bp, int l, int t, double *q[NQ], int H, int Q, int i) {
    int b = bypos_bin(t);
    for (int h = 0; h < H; h++)
        for (int which = 0; which < 2; which++) {
            size_t at = (size_t)(which ? bp->L : l) * bp->nbin + b;
            for (int k = 0; k < BP_N; k++) bp->sum[at * BP_N + k] += q[BP_Q[k]][(size_t)h * Q + i];
            bp->rows[at]++;
        }
}

static void bypos_write(const bypos *bp, const char *path, const char *pj, const char *model) {
    strbuf sb = {0};
    sb_printf(&sb, "# provenance\t%s\n# model\t%s\n", pj, model);
    sb_printf(&sb, "layer\tbin_lo\tbin_hi\trows\tsink_mass\tentropy\tentropy_sink\tentropy_content\n");
    for (int l = 0; l <= bp->L; l++)
        for (int b = 0; b < bp->nbin; b++) {
            size_t at = (size_t)l * bp->nbin + b;
            if (!bp->rows[at]) continue;
            if (l == bp->L) sb_printf(&sb, "all");
            else sb_printf(&sb, "%d", l);
            sb_printf(&sb, "\t%d\t%d\t%lld", b ? 1 << (b - 1) : 0, b ? 1 << b : 1, bp->rows[at]);
            for (int k = 0; k < BP_N; k++) sb_printf(&sb, "\t%.10g", bp->sum[at * BP_N + k] / (double)bp->rows[at]);
            sb_printf(&sb, "\n");
        }
    cli_write_bytes(path, sb.s, sb.len);
    sb_free(&sb);
}

static void bypos_free(bypos *bp) {
    free(bp->sum);
    free(bp->rows);
}

static int read_only(attn_reader *r) {
    char err[2048];
    const attn_meta *m = attn_meta_get(r);
    float *buf = xmalloc((size_t)m->H * m->Q * m->T * sizeof *buf);
    double t0 = cli_now();
    for (int s = 0; s < m->S; s++)
        for (int l = 0; l < m->L; l++)
            if (attn_read_block_raw(r, s, l, buf, err, sizeof err)) die_data(NULL, "%s", err);
    printf("read_seconds\t%.6f\n", cli_now() - t0);
    free(buf);
    attn_close(r);
    return 0;
}

int main(int argc, char **argv) {
    char err[2048];
    cli_init(argv[0]);
    dec_opts o;
    parse_args(argc, argv, &o);
    cli_out_plan(o.out);
    cli_out_plan(o.tsv);
    if (o.threads) omp_set_num_threads(o.threads);
    attn_reader *r = attn_open(o.in, err, sizeof err);
    if (!r) die_data(NULL, "%s", err);
    const attn_meta *m = attn_meta_get(r);
    int sink = o.sink >= 0 ? o.sink : m->sink;
    if (sink >= m->T) die_usage("--sink %d is not below T = %d", sink, m->T);
    int S = m->S, L = m->L, H = m->H, T = m->T, N = L * H, Q = m->Q;
    if (o.read_only) return read_only(r);
    char *pj = provenance(&o, r, sink);

    h5io_id f = h5io_create(o.out, err, sizeof err);
    if (f < 0) cli_check((int)f, err);
    h5io_size d4[4] = {S, L, H, Q}, c4[4] = {1, 1, H, Q};
    h5io_id ds[NQ];
    double *q[NQ], *sum[NQ];
    char name[64];
    for (int k = 0; k < NQ; k++) {
        snprintf(name, sizeof name, "row/%s", QNAME[k]);
        ds[k] = h5io_chunked_f64(f, name, 4, d4, c4);
        q[k] = xmalloc((size_t)H * Q * sizeof(double));
        sum[k] = xcalloc(N, sizeof(double));
    }
    long long *rows = xcalloc(N, sizeof *rows), zeros = 0;
    float *buf[2] = {xmalloc((size_t)H * Q * T * sizeof(float)), xmalloc((size_t)H * Q * T * sizeof(float))};
    bypos bp = {0};
    if (o.by_position) bypos_init(&bp, L, T);
    uint8_t *valid = xmalloc((size_t)S * T);
    attn_read_valid(r, valid);
    progress pg;
    progress_begin(&pg, "decompose", "blocks", (double)S * L);
    if (attn_read_block(r, 0, 0, buf[0], err, sizeof err)) die_data(NULL, "%s", err);
    for (int b = 0; b < S * L; b++) {
        int s = b / L, l = b % L;
        const uint8_t *vs = attn_has_valid(r) ? valid + (size_t)s * T : NULL;
        zeros += block_stats_overlapped(r, b, vs, buf[b & 1], buf[(b + 1) & 1], sink, o.zero_delta, q);
        h5io_size st[4] = {s, l, 0, 0};
        for (int k = 0; k < NQ; k++) h5io_write_slab_f64(ds[k], 4, st, c4, q[k]);
        const int32_t *qp = attn_query_pos(r, s);
        for (int i = 0; i < Q; i++) {
            if (!attn_row_kept(m, vs, qp[i], sink, o.min_query, o.excl)) continue;
            for (int h = 0; h < H; h++) {
                for (int k = 0; k < NQ; k++) sum[k][l * H + h] += q[k][(size_t)h * Q + i];
                rows[l * H + h]++;
            }
            if (o.by_position) bypos_add(&bp, l, qp[i], q, H, Q, i);
        }
        progress_update(&pg, b + 1.0);
    }
    progress_end(&pg);
    h5io_size d2[2] = {L, H};
    for (int k = 0; k < NQ; k++) {
        h5io_close_dataset(ds[k]);
        for (int i = 0; i < N; i++) sum[k][i] = rows[i] ? sum[k][i] / rows[i] : NAN;
        snprintf(name, sizeof name, "head/%s", QNAME[k]);
        h5io_write_f64(f, name, 2, d2, sum[k]);
    }
    int *rows_i = xmalloc(N * sizeof *rows_i);
    for (int i = 0; i < N; i++) rows_i[i] = (int)rows[i];
    h5io_write_i32(f, "head/rows", 2, d2, rows_i);
    attn_write_shape_attrs(f, "attncoda-decompose", m);
    h5io_attr_int(f, "/", "sink", sink);
    h5io_attr_int(f, "/", "min_query", o.min_query);
    h5io_attr_int(f, "/", "exclude_sink_query", o.excl);
    h5io_attr_dbl(f, "/", "zero_delta", o.zero_delta);
    h5io_attr_int(f, "/", "zero_replaced", zeros);
    h5io_attr_str(f, "/", "model", m->model);
    h5io_attr_str(f, "/", "provenance", pj);
    if (o.tsv) write_tsv(&o, m, pj, sum, rows);
    if (attn_is_sampled(r)) {   /* the positions of the stored rows (contiguous [S][Q]) */
        h5io_size dq[2] = {S, Q};
        h5io_write_i32(f, "query_pos", 2, dq, attn_query_pos(r, 0));
    }
    if (o.by_position) {
        bypos_write(&bp, o.by_position, pj, m->model);
        bypos_free(&bp);
    }
    label_axes(f, attn_is_sampled(r));
    cli_check(h5io_finish(f, o.out, err, sizeof err), err);
    attn_close(r);
    for (int k = 0; k < NQ; k++) { free(q[k]); free(sum[k]); }
    free(rows); free(rows_i); free(buf[0]); free(buf[1]); free(valid); free(pj);
    return 0;
}

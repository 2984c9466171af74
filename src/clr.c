/* clr: centred log-ratio coordinates of every attention row — the full rows (clr), the content
 * rows (clr of π, the sink dropped), and the sink balance — added to a copy of the input. */
#include "attn/attnio.h"
#include "cli/cli.h"
#include "attn/coda.h"
#include "io/h5io.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    printf("Usage: %s [options] INPUT|- OUTPUT|-\n"
           "Copy an attention file and add clr coordinates (METHODS §2):\n"
           "  clr          float64 [S,L,H,T,T]  clr(p) over the row's keys, NaN elsewhere\n"
           "  clr_content  float64 [S,L,H,T,T]  clr(π) over the content keys, NaN at the sink\n"
           "  sink_balance float64 [S,L,H,T]    b(p); NaN where the row lacks the sink\n\n"
           "      --sink K          sink key index (default: the file's 'sink' attribute)\n"
           "      --zero-delta X    zero replacement for probability input (1e-9)\n"
           "      --progress        progress bar on stderr; --no-progress: none (default: when\n"
           "                        stderr is a terminal)\n"
           "  -h, --help, -V, --version\n\n"
           "A file of sampled query rows (query_pos) gives one: Q stored rows in place of T.\n"
           "Memory: two (sequence, layer) blocks, 20*H*Q*T bytes (Q = T: every row), plus the input image when\n"
           "reading stdin and the output image when writing stdout.\n", cli_prog());
}

typedef struct { int sink; double zero_delta; const char *in, *out; } clr_opts;

static void parse_args(int argc, char **argv, clr_opts *o) {
    static const struct option lo[] = {{"sink", 1, 0, 's'}, {"zero-delta", 1, 0, 'z'},
                                       {"help", 0, 0, 'h'}, {"version", 0, 0, 'V'}, CLI_PROGRESS_OPTIONS, {0, 0, 0, 0}};
    *o = (clr_opts){.sink = -1, .zero_delta = 1e-9};
    int c;
    while ((c = getopt_long(argc, argv, "hV", lo, NULL)) != -1) {
        switch (c) {
        case 's': o->sink = cli_parse_long("sink", optarg, 0, 1 << 20); break;
        case 'z': o->zero_delta = cli_parse_double("zero-delta", optarg, 1e-300, 1e-2); break;
        case CLI_OPT_PROGRESS: case CLI_OPT_NO_PROGRESS: cli_progress_option(c); break;
        case 'h': usage(); exit(0);
        case 'V': cli_print_version(); exit(0);
        default: cli_bad_option(argv, lo, "hV");
        }
    }
    cli_operands(argc, argv, 2, 2, "INPUT and OUTPUT");
    o->in = argv[optind];
    o->out = argv[optind + 1];
}

/* clr of one gathered row, scattered back to key positions. */
static void row_clr(const attn_meta *m, const uint8_t *vs, int t, int sink, const double *lr, int D,
                    int spos, double *clr, double *clrc, double *bal, double *work) {
    for (int j = 0; j < m->T; j++) clr[j] = clrc[j] = NAN;
    *bal = NAN;
    coda_clr(lr, D, work);
    for (int j = 0, d = 0; j < m->T; j++) if (attn_key_in_row(m, vs, t, j)) clr[j] = work[d++];
    if (spos < 0 || D < 2) return;
    coda_clr_content(lr, D, spos, work);
    for (int j = 0, d = 0; j < m->T; j++)
        if (attn_key_in_row(m, vs, t, j)) { if (j != sink) clrc[j] = work[d]; d++; }
    *bal = coda_sink_balance(lr, D, spos);
}

int main(int argc, char **argv) {
    cli_init(argv[0]);
    clr_opts o;
    parse_args(argc, argv, &o);
    cli_out_plan(o.out);
    char err[2048];
    attn_reader *r = attn_open(o.in, err, sizeof err);
    if (!r) die_data(NULL, "%s", err);
    attn_meta m = *attn_meta_get(r);
    int sink = o.sink >= 0 ? o.sink : m.sink;
    if (sink >= m.T) die_usage("--sink %d is not below T = %d", sink, m.T);
    m.sink = sink;

    prov *p = prov_new();
    prov_input(p, o.in, attn_checksum(r));
    prov_upstream(p, attn_provenance(r));
    prov_opt_int(p, "sink", sink);
    prov_opt_dbl(p, "zero_delta", o.zero_delta);
    char *pj = prov_json(p);
    prov_free(p);

    /* a file of sampled rows stays one: the same query_pos, every dataset over the stored rows */
    int sampled = attn_is_sampled(r);
    attn_writer *w;
    cli_check(attn_create_rows(&w, o.out, &m, pj, sampled ? attn_query_pos(r, 0) : NULL, err, sizeof err), err);
    h5io_id f = attn_writer_file(w);
    int S = m.S, L = m.L, H = m.H, T = m.T, Q = m.Q;
    h5io_size d5[5] = {S, L, H, Q, T}, c5[5] = {1, 1, H, Q, T}, d4[4] = {S, L, H, Q}, c4[4] = {1, 1, H, Q};
    h5io_id dclr = h5io_chunked_f64(f, "clr", 5, d5, c5), dclrc = h5io_chunked_f64(f, "clr_content", 5, d5, c5);
    h5io_id dbal = h5io_chunked_f64(f, "sink_balance", 4, d4, c4);

    size_t blk = (size_t)H * Q * T;
    float *buf = xmalloc(blk * sizeof *buf);
    double *clr = xmalloc(blk * sizeof *clr), *clrc = xmalloc(blk * sizeof *clrc);
    double *bal = xmalloc((size_t)H * Q * sizeof *bal), *lr = xmalloc(2 * (size_t)T * sizeof *lr);
    uint8_t *valid = xmalloc((size_t)S * T);
    int32_t *tokens = xmalloc((size_t)S * T * sizeof *tokens);
    attn_read_valid(r, valid);
    if (attn_read_tokens(r, tokens, err, sizeof err)) die_data(NULL, "%s", err);
    long long zeros = 0;
    progress pg;
    progress_begin(&pg, "clr", "blocks", (double)S * L);
    for (int s = 0; s < S; s++) {
        const uint8_t *vs = attn_has_valid(r) ? valid + (size_t)s * T : NULL;
        const int32_t *qp = attn_query_pos(r, s);
        for (int l = 0; l < L; l++) {
            if (attn_read_block(r, s, l, buf, err, sizeof err)) die_data(NULL, "%s", err);
            attn_write_block(w, s, l, buf);
            for (int h = 0; h < H; h++)
                for (int i = 0; i < Q; i++) {
                    int t = qp[i];
                    size_t off = ((size_t)h * Q + i) * T;
                    if (vs && !vs[t]) {
                        for (int j = 0; j < T; j++) clr[off + j] = clrc[off + j] = NAN;
                        bal[(size_t)h * Q + i] = NAN;
                        continue;
                    }
                    int spos, D = attn_gather_row(&m, vs, buf + off, t, sink, o.zero_delta, lr, &spos, &zeros);
                    if (D < 0)
                        die_data(o.in, ATTN_ROW_UNCLOSABLE " in row (sequence %d, layer %d, head %d, query %d)", s, l, h, t);
                    row_clr(&m, vs, t, sink, lr, D, spos, clr + off, clrc + off, bal + (size_t)h * Q + i, lr + T);
                }
            h5io_size st5[5] = {s, l, 0, 0, 0}, st4[4] = {s, l, 0, 0};
            h5io_write_slab_f64(dclr, 5, st5, c5, clr);
            h5io_write_slab_f64(dclrc, 5, st5, c5, clrc);
            h5io_write_slab_f64(dbal, 4, st4, c4, bal);
            progress_update(&pg, (double)s * L + l + 1);
        }
    }
    progress_end(&pg);
    h5io_close_dataset(dclr); h5io_close_dataset(dclrc); h5io_close_dataset(dbal);
    attn_write_tokens(w, tokens);
    if (attn_has_valid(r)) attn_write_valid(w, valid);
    h5io_attr_int(f, "/", "zero_replaced", zeros);
    static const char *const query_axes[5] = {"sequence", "layer", "head", "query", "key"};
    static const char *const row_axes[5] = {"sequence", "layer", "head", "query_row", "key"};
    const char *const *axes = sampled ? row_axes : query_axes;
    h5io_label_attention(f);
    h5io_label_dims(f, "clr", "/", 5, axes);
    h5io_label_dims(f, "clr_content", "/", 5, axes);
    h5io_label_dims(f, "sink_balance", "/", 4, axes);
    cli_check(attn_finish(w, err, sizeof err), err);
    attn_close(r);
    free(buf); free(clr); free(clrc); free(bal); free(lr); free(valid); free(tokens); free(pj);
    return 0;
}

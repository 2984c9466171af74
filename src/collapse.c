/* collapse: METHODS §5.5 — entropy over training checkpoints and the exact Shapley split of the
 * entropy drop into a sink part and a content part, row by row (H = H_b(s) + (1−s)·H(π)). */
#include "attn/analysis.h"
#include "attn/attnio.h"
#include "cli/cli.h"
#include "attn/coda.h"
#include "io/h5io.h"
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
    "Usage: collapse [options] CKPT0.h5 CKPT1.h5 ...\n"
    "Attention files of checkpoints of one model on the same token windows (token ids must agree).\n"
    "Per checkpoint: mean entropy H, binary sink entropy H_b(s), content term (1-s)H(pi) and sink\n"
    "mass, per model and per layer. Split of the drop from the checkpoint of highest mean H to the\n"
    "last, per row (Shapley, both orders averaged):\n"
    "  sink part    dH_b(s) + d(1-s) * (H(pi)_0 + H(pi)_1)/2\n"
    "  content part (1 - (s_0 + s_1)/2) * dH(pi)\n"
    "averaged over rows and heads; the parts add up to the total drop exactly (up to rounding).\n"
    "Options:\n"
    "  --steps LIST      step labels, one per file (default: each file's 'step' attribute, else 0,1,..)\n"
    "  --min-query N     skip causal query rows t < N (default 2)\n"
    "  --sink K          sink key index (default: each file's sink attribute; must agree)\n"
    "  --zero-delta X    zero replacement for probability input (default 1e-9)\n"
    "  --series FILE     per-checkpoint table: step layer rows H Hb content_term sink_mass\n"
    "  -o FILE           HDF5: split [L+1,6], series [checkpoints,L+1,4], steps (row 0 = all)\n"
    "  --progress        progress bar on stderr; --no-progress: none (default: when stderr is\n"
    "                    a terminal)\n"
    "  -h, --help / --version\n"
    "Stdout (TSV): layer from_step to_step rows H_from H_to total_drop sink_drop content_drop\n"
    "  sink_share (layer all first, then each layer).\n"
    "Memory: two (sequence, layer) blocks (8*H*T*T bytes) and 8 doubles per layer per checkpoint.\n";

typedef struct { double H, Hb, cH, s, n; } sums;       /* per layer */
typedef struct { double dH, sink, content, H0, H1, n; } split;

typedef struct {
    int min_query, sink, sink_given;
    double delta;
} copts;

static int row_kept(const attn_meta *m, const uint8_t *vs, int t, const copts *o) {
    if (vs && !vs[t]) return 0;
    if (m->causal && t < o->min_query) return 0;
    if (!attn_key_in_row(m, vs, t, o->sink)) return 0;
    return attn_row_parts(m, vs, t) >= 2;
}

/* Row stats of head h, stored row i (query t) of a block through the library's row path. */
static void row_stats(attn_reader *r, const float *blk, const uint8_t *vs, int s, int ly, int h, int i, int t,
                      const copts *o, double *l, coda_row *st) {
    const attn_meta *m = attn_meta_get(r);
    int k, D = attn_gather_row(m, vs, blk + ((size_t)h * m->Q + i) * m->T, t, o->sink, o->delta, l, &k, NULL);
    if (D < 0)
        die_data(attn_path(r), ATTN_ROW_UNCLOSABLE " in row (sequence %d, layer %d, head %d, query %d)", s, ly, h, t);
    coda_row_stats(l, D, k, st);
}

static void check_same(attn_reader *r0, attn_reader *r, int32_t *tok0, int32_t *tok) {
    char err[2048];
    const attn_meta *a = attn_meta_get(r0), *b = attn_meta_get(r);
    if (a->S != b->S || a->L != b->L || a->H != b->H || a->T != b->T || a->causal != b->causal)
        die_data(attn_path(r), "shape S=%d L=%d H=%d T=%d causal=%d differs from %s (S=%d L=%d H=%d T=%d causal=%d)",
                 b->S, b->L, b->H, b->T, b->causal, attn_path(r0), a->S, a->L, a->H, a->T, a->causal);
    /* sampled rows pair only when every checkpoint kept the same queries */
    if (attn_is_sampled(r0) != attn_is_sampled(r) ||
        (attn_is_sampled(r) && (a->Q != b->Q || memcmp(attn_query_pos(r0, 0), attn_query_pos(r, 0),
                                                        sizeof(int32_t) * (size_t)a->S * a->Q))))
        die_data(attn_path(r), "stored query rows (query_pos) differ from %s", attn_path(r0));
    if (attn_read_tokens(r, tok, err, sizeof err)) die_data(NULL, "%s", err);
    for (size_t i = 0; i < (size_t)a->S * a->T; i++)
        if (tok[i] != tok0[i])
            die_data(attn_path(r), "token ids differ from %s at sequence %zu, position %zu (%d vs %d)",
                     attn_path(r0), i / a->T, i % a->T, tok[i], tok0[i]);
}

static void pass_series(attn_reader *r, const copts *o, sums *per_layer) {
    char err[2048];
    const attn_meta *m = attn_meta_get(r);
    float *blk = xmalloc((size_t)m->H * m->Q * m->T * sizeof *blk);
    double *l = xmalloc(m->T * sizeof *l);
    uint8_t *valid = xmalloc((size_t)m->S * m->T);
    attn_read_valid(r, valid);
    progress pg;
    progress_begin(&pg, attn_path(r), "seq", m->S);
    for (int s = 0; s < m->S; s++) {
        progress_update(&pg, s);
        const uint8_t *vs = attn_has_valid(r) ? valid + (size_t)s * m->T : NULL;
        for (int ly = 0; ly < m->L; ly++) {
            if (attn_read_block(r, s, ly, blk, err, sizeof err)) die_data(NULL, "%s", err);
            sums *q = &per_layer[ly];
            const int32_t *qp = attn_query_pos(r, s);
            for (int h = 0; h < m->H; h++)
                for (int i = 0; i < m->Q; i++) {
                    int t = qp[i];
                    if (!row_kept(m, vs, t, o)) continue;
                    coda_row st;
                    row_stats(r, blk, vs, s, ly, h, i, t, o, l, &st);
                    q->H += st.H, q->Hb += st.Hb, q->cH += (1 - st.s) * st.Hc, q->s += st.s, q->n += 1;
                }
        }
    }
    progress_end(&pg);
    free(blk);
    free(l);
    free(valid);
}

static void pass_split(attn_reader *r0, attn_reader *r1, const copts *o, split *per_layer) {
    char err[2048];
    const attn_meta *m = attn_meta_get(r0);
    size_t bs = (size_t)m->H * m->Q * m->T;
    float *b0 = xmalloc(bs * sizeof *b0), *b1 = xmalloc(bs * sizeof *b1);
    double *l = xmalloc(m->T * sizeof *l);
    uint8_t *valid = xmalloc((size_t)m->S * m->T);
    attn_read_valid(r0, valid);
    progress pg;
    progress_begin(&pg, "split", "seq", m->S);
    for (int s = 0; s < m->S; s++) {
        progress_update(&pg, s);
        const uint8_t *vs = attn_has_valid(r0) ? valid + (size_t)s * m->T : NULL;
        for (int ly = 0; ly < m->L; ly++) {
            if (attn_read_block(r0, s, ly, b0, err, sizeof err)) die_data(NULL, "%s", err);
            if (attn_read_block(r1, s, ly, b1, err, sizeof err)) die_data(NULL, "%s", err);
            split *q = &per_layer[ly];
            const int32_t *qp = attn_query_pos(r0, s);
            for (int h = 0; h < m->H; h++)
                for (int i = 0; i < m->Q; i++) {
                    int t = qp[i];
                    if (!row_kept(m, vs, t, o)) continue;
                    coda_row x, y;
                    row_stats(r0, b0, vs, s, ly, h, i, t, o, l, &x);
                    row_stats(r1, b1, vs, s, ly, h, i, t, o, l, &y);
                    double sink = (y.Hb - x.Hb) + ((1 - y.s) - (1 - x.s)) * 0.5 * (x.Hc + y.Hc);
                    double content = (1 - 0.5 * (x.s + y.s)) * (y.Hc - x.Hc);
                    q->dH += y.H - x.H, q->sink += sink, q->content += content;
                    q->H0 += x.H, q->H1 += y.H, q->n += 1;
                }
        }
    }
    progress_end(&pg);
    free(b0);
    free(b1);
    free(l);
    free(valid);
}

static void print_split(const char *layer, long long f, long long t, const split *q) {
    double n = q->n, total = -q->dH / n, sk = -q->sink / n, ct = -q->content / n;
    printf("%s\t%lld\t%lld\t%.0f\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%.6f\n", layer, f, t, n, q->H0 / n, q->H1 / n,
           total, sk, ct, total != 0 ? sk / total : NAN);
}

static void write_series(const char *path, const char *pj, int nf, const long long *step, sums **ser, int L) {
    const char *tmp = cli_out_begin(path);
    FILE *f = tmp ? fopen(tmp, "w") : stdout;
    if (!f) die_data(path, "cannot create: %s", strerror(errno));
    tsv_begin(f, pj, "step\tlayer\trows\tH\tHb\tcontent_term\tsink_mass");
    for (int c = 0; c < nf; c++) {
        sums all = {0};
        for (int ly = 0; ly < L; ly++)
            all.H += ser[c][ly].H, all.Hb += ser[c][ly].Hb, all.cH += ser[c][ly].cH, all.s += ser[c][ly].s, all.n += ser[c][ly].n;
        for (int ly = -1; ly < L; ly++) {
            const sums *q = ly < 0 ? &all : &ser[c][ly];
            char lname[16];
            snprintf(lname, sizeof lname, "%d", ly);
            fprintf(f, "%lld\t%s\t%.0f\t%.10g\t%.10g\t%.10g\t%.10g\n", step[c], ly < 0 ? "all" : lname, q->n,
                    q->H / q->n, q->Hb / q->n, q->cH / q->n, q->s / q->n);
        }
    }
    if (tmp && fclose(f) != 0) die_data(path, "write error");
    if (tmp) cli_out_commit(path);
}

/* -o FILE: split [L+1, 6] (rows: all, layer 0..; columns H_from H_to total_drop sink_drop
 * content_drop sink_share) and series [n_ckpt, L+1, 4] (H Hb content_term sink_mass), steps. */
static void write_h5(const char *path, const char *pj, int nf, const long long *step, sums **ser,
                     const split *sp, const split *all, int L, int best) {
    char err[2048];
    h5io_id f = h5io_create(path, err, sizeof err);
    if (f < 0) cli_check((int)f, err);
    h5io_attr_str(f, "/", "format", "attncoda-collapse");
    h5io_attr_str(f, "/", "provenance", pj);
    h5io_attr_int(f, "/", "from_step", step[best]);
    h5io_attr_int(f, "/", "to_step", step[nf - 1]);
    double *x = xmalloc((size_t)(L + 1) * 6 * sizeof *x), *y = xmalloc((size_t)nf * (L + 1) * 4 * sizeof *y);
    for (int ly = -1; ly < L; ly++) {
        const split *q = ly < 0 ? all : &sp[ly];
        double n = q->n, tot = -q->dH / n, sk = -q->sink / n;
        double row[6] = {q->H0 / n, q->H1 / n, tot, sk, -q->content / n, tot != 0 ? sk / tot : NAN};
        memcpy(x + (size_t)(ly + 1) * 6, row, sizeof row);
    }
    for (int c = 0; c < nf; c++) {
        sums a = {0};
        for (int ly = 0; ly < L; ly++)
            a.H += ser[c][ly].H, a.Hb += ser[c][ly].Hb, a.cH += ser[c][ly].cH, a.s += ser[c][ly].s, a.n += ser[c][ly].n;
        for (int ly = -1; ly < L; ly++) {
            const sums *q = ly < 0 ? &a : &ser[c][ly];
            double row[4] = {q->H / q->n, q->Hb / q->n, q->cH / q->n, q->s / q->n};
            memcpy(y + ((size_t)c * (L + 1) + ly + 1) * 4, row, sizeof row);
        }
    }
    h5io_size ds[2] = {L + 1, 6}, dr[3] = {nf, L + 1, 4}, dn[1] = {nf};
    h5io_write_f64(f, "split", 2, ds, x);
    h5io_write_f64(f, "series", 3, dr, y);
    double *st = xmalloc(nf * sizeof *st);
    for (int c = 0; c < nf; c++) st[c] = (double)step[c];
    h5io_write_f64(f, "steps", 1, dn, st);
    cli_check(h5io_finish(f, path, err, sizeof err), err);
    free(x);
    free(y);
    free(st);
}

int main(int argc, char **argv) {
    char err[2048];
    cli_init("collapse");
    h5io_quiet();
    copts o = {2, 0, 0, 1e-9};
    const char *steps_arg = NULL, *series = NULL, *out = NULL;
    static struct option lo[] = {{"steps", required_argument, 0, 's'}, {"min-query", required_argument, 0, 'q'},
                                 {"sink", required_argument, 0, 'k'}, {"zero-delta", required_argument, 0, 'z'},
                                 {"series", required_argument, 0, 'S'}, {"help", no_argument, 0, 'h'},
                                 {"version", no_argument, 0, 'V'}, CLI_PROGRESS_OPTIONS, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "ho:", lo, NULL)) != -1) {
        switch (c) {
        case 's': steps_arg = optarg; break;
        case 'q': o.min_query = (int)cli_parse_long("min-query", optarg, 0, 1 << 20); break;
        case 'k': o.sink = (int)cli_parse_long("sink", optarg, 0, 1 << 20), o.sink_given = 1; break;
        case 'z': o.delta = cli_parse_double("zero-delta", optarg, 1e-300, 0.01); break;
        case 'S': series = optarg; break;
        case 'o': out = optarg; break;
        case CLI_OPT_PROGRESS: case CLI_OPT_NO_PROGRESS: cli_progress_option(c); break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': cli_print_version(); return 0;
        default: cli_bad_option(argv, lo, "ho:");
        }
    }
    int nf = argc - optind;
    cli_operands(argc, argv, 2, -1, "at least two checkpoint files");
    cli_out_plan(out);
    cli_out_plan(series);
    if ((series && cli_is_stdio(series)) || (out && cli_is_stdio(out)))
        die_usage("--series/-o: give a file name (the split goes to stdout)");
    long long *step = xmalloc(nf * sizeof *step);
    if (steps_arg) {
        double v[4096];
        char why[256];
        int n = an_parse_list("steps", steps_arg, v, 4096, why, sizeof why);
        if (n < 0) die_usage("%s", why);
        if (n != nf) die_usage("--steps: %d labels for %d files", n, nf);
        for (int i = 0; i < nf; i++) step[i] = (long long)v[i];
    }
    attn_reader **r = xmalloc(nf * sizeof *r);
    r[0] = attn_open(argv[optind], err, sizeof err);
    if (!r[0]) die_data(NULL, "%s", err);
    const attn_meta *m = attn_meta_get(r[0]);
    if (!o.sink_given) o.sink = m->sink;
    if (o.sink >= m->T) die_usage("--sink %d: the files have %d tokens", o.sink, m->T);
    int32_t *tok0 = xmalloc((size_t)m->S * m->T * sizeof *tok0), *tok = xmalloc((size_t)m->S * m->T * sizeof *tok);
    if (attn_read_tokens(r[0], tok0, err, sizeof err)) die_data(NULL, "%s", err);
    for (int i = 1; i < nf; i++) {
        r[i] = attn_open(argv[optind + i], err, sizeof err);
        if (!r[i]) die_data(NULL, "%s", err);
        check_same(r[0], r[i], tok0, tok);
        if (!o.sink_given && attn_meta_get(r[i])->sink != o.sink)
            die_data(argv[optind + i], "sink %d differs from the first file's %d (give --sink)", attn_meta_get(r[i])->sink, o.sink);
    }
    for (int i = 0; i < nf && !steps_arg; i++) {
        int got = h5io_get_attr_int(attn_reader_file(r[i]), "/", "step", &step[i], err, sizeof err);
        if (got < 0) die_data(NULL, "%s", err);
        if (got > 0) step[i] = i;
    }
    int L = m->L;
    sums **ser = xmalloc(nf * sizeof *ser);
    int best = 0;
    double bestH = -INFINITY;
    for (int i = 0; i < nf; i++) {
        ser[i] = xcalloc(L, sizeof **ser);
        pass_series(r[i], &o, ser[i]);
        double H = 0, n = 0;
        for (int ly = 0; ly < L; ly++) H += ser[i][ly].H, n += ser[i][ly].n;
        if (n == 0) die_data(argv[optind + i], "no rows kept (t >= --min-query %d, D >= 2)", o.min_query);
        if (H / n > bestH) bestH = H / n, best = i;
    }
    split *sp = xcalloc(L, sizeof *sp), all = {0};
    pass_split(r[best], r[nf - 1], &o, sp);
    for (int ly = 0; ly < L; ly++)
        all.dH += sp[ly].dH, all.sink += sp[ly].sink, all.content += sp[ly].content,
        all.H0 += sp[ly].H0, all.H1 += sp[ly].H1, all.n += sp[ly].n;
    prov *p = prov_new();
    strbuf st = {0};
    for (int i = 0; i < nf; i++) {
        prov_input(p, argv[optind + i], attn_checksum(r[i]));
        prov_upstream(p, attn_provenance(r[i]));
        sb_printf(&st, "%s%lld", i ? "," : "", step[i]);
    }
    prov_opt_str(p, "steps", st.s);
    prov_opt_int(p, "min_query", o.min_query);
    prov_opt_int(p, "sink", o.sink);
    prov_opt_dbl(p, "zero_delta", o.delta);
    prov_opt_str(p, "model", m->model);
    char *pj = prov_json(p);
    tsv_begin(stdout, pj, "layer\tfrom_step\tto_step\trows\tH_from\tH_to\ttotal_drop\tsink_drop\tcontent_drop\tsink_share");
    print_split("all", step[best], step[nf - 1], &all);
    for (int ly = 0; ly < L; ly++) {
        char lname[16];
        snprintf(lname, sizeof lname, "%d", ly);
        print_split(lname, step[best], step[nf - 1], &sp[ly]);
    }
    if (series) write_series(series, pj, nf, step, ser, L);
    if (out) write_h5(out, pj, nf, step, ser, sp, &all, L, best);
    for (int i = 0; i < nf; i++) attn_close(r[i]), free(ser[i]);
    free(ser);
    free(sp);
    free(step);
    free(tok0);
    free(tok);
    free(r);
    free(pj);
    sb_free(&st);
    prov_free(p);
    return 0;
}

#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <nettle/sha2.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *g_prog = "attncoda";

void cli_init(const char *prog) {
    opterr = 0;   /* getopt's own message would make usage errors two lines; die_usage reports */
    const char *slash = strrchr(prog, '/');
    g_prog = slash ? slash + 1 : prog;
}
const char *cli_prog(void) { return g_prog; }

void cli_print_version(void) { printf("%s (attncoda) %s\n", g_prog, ATTNCODA_VERSION); }

/* Messages are one line: newlines inside a formatted reason are flattened. */
static void vmessage(const char *file, const char *fmt, va_list ap) {
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    for (char *c = msg; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    if (file)
        fprintf(stderr, "%s: %s: %s\n", g_prog, cli_display_name(file), msg);
    else
        fprintf(stderr, "%s: %s\n", g_prog, msg);
}

static void (*g_exit_hook)(int);
void cli_set_exit_hook(void (*hook)(int status)) { g_exit_hook = hook; }

static _Noreturn void die_exit(int status) {
    if (g_exit_hook) g_exit_hook(status);
    exit(status);
}

void die_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage(NULL, fmt, ap);
    va_end(ap);
    cli_out_abort_all();
    die_exit(EXIT_USAGE);
}

void die_data(const char *file, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage(file, fmt, ap);
    va_end(ap);
    cli_out_abort_all();
    die_exit(EXIT_DATA);
}

void cli_err_prefix(char *err, size_t errlen, const char *path) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", err);
    snprintf(err, errlen, "%s: %s", path, tmp);
}

long cli_parse_long(const char *opt, const char *s, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        die_usage("--%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo, hi);
    return v;
}

double cli_parse_double(const char *opt, const char *s, double lo, double hi) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        die_usage("--%s: '%s' is not a number in [%g, %g]", opt, s, lo, hi);
    return v;
}

uint64_t cli_parse_u64(const char *opt, const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        die_usage("--%s: '%s' is not a non-negative integer", opt, s);
    return (uint64_t)v;
}

int cli_num_to_ll(double x, long long lo, long long hi, long long *out, char *why, size_t whylen) {
    if (isnan(x)) {
        snprintf(why, whylen, "NaN is not an integer");
        return -1;
    }
    if (x != floor(x)) {   /* ±Inf passes here and is out of range below */
        snprintf(why, whylen, "%.17g is not an integer", x);
        return -1;
    }
    /* 2^63 is exact as a double; LLONG_MAX is not, so compare before converting */
    if (x < -9223372036854775808.0 || x >= 9223372036854775808.0 || (long long)x < lo || (long long)x > hi) {
        snprintf(why, whylen, "%.17g is out of range [%lld, %lld]", x, lo, hi);
        return -1;
    }
    *out = (long long)x;
    return 0;
}

int cli_is_stdio(const char *path) { return path && strcmp(path, "-") == 0; }
const char *cli_display_name(const char *path) { return cli_is_stdio(path) ? "(stdin)" : path; }

unsigned char *cli_slurp(const char *path, size_t *len) {
    FILE *f = cli_is_stdio(path) ? stdin : fopen(path, "rb");
    if (!f) die_data(path, "cannot open: %s", strerror(errno));
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = xmalloc(cap);
    for (;;) {
        if (n == cap) buf = xrealloc(buf, cap *= 2);
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) die_data(path, "read error: %s", strerror(errno));
    if (f != stdin) fclose(f);
    if (n == cap) buf = xrealloc(buf, cap + 1);
    buf[n] = 0;
    *len = n;
    return buf;
}

char *cli_slurp_text(const char *path, size_t *len) {
    unsigned char *buf = cli_slurp(path, len);
    const unsigned char *nul = memchr(buf, 0, *len);
    if (!nul) return (char *)buf;
    long line = 1;
    for (const unsigned char *p = buf; p < nul; p++) line += *p == '\n';
    free(buf);
    die_data(path, "line %ld: NUL byte (a binary file, not text?)", line);
}

/* Registered outputs: final path and temporary path, removed on abort. */
#define MAX_OUTS 64
static struct { char *final, *tmp; } g_outs[MAX_OUTS];
static int g_nouts;

const char *cli_out_begin(const char *path) {
    if (cli_is_stdio(path)) return NULL;
    if (g_nouts == MAX_OUTS) die_usage("too many output files");
    size_t n = strlen(path) + 32;
    char *tmp = xmalloc(n);
    snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
    g_outs[g_nouts].final = xstrdup(path);
    g_outs[g_nouts].tmp = tmp;
    return g_outs[g_nouts++].tmp;
}

void cli_out_commit(const char *path) {
    for (int i = 0; i < g_nouts; i++) {
        if (g_outs[i].final && strcmp(g_outs[i].final, path) == 0) {
            if (rename(g_outs[i].tmp, g_outs[i].final) != 0)
                die_data(path, "cannot rename temporary output into place: %s", strerror(errno));
            free(g_outs[i].final);
            free(g_outs[i].tmp);
            g_outs[i].final = g_outs[i].tmp = NULL;
            return;
        }
    }
}

void cli_out_abort_all(void) {
    for (int i = 0; i < g_nouts; i++)
        if (g_outs[i].tmp) unlink(g_outs[i].tmp);
}

void cli_write_bytes(const char *path, const void *buf, size_t len) {
    if (cli_is_stdio(path)) {
        if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0)
            die_data("-", "cannot write to stdout: %s", strerror(errno));
        return;
    }
    const char *tmp = cli_out_begin(path);
    FILE *f = fopen(tmp, "wb");
    if (!f) die_data(path, "cannot create: %s", strerror(errno));
    if (fwrite(buf, 1, len, f) != len || fclose(f) != 0)
        die_data(path, "write error: %s", strerror(errno));
    cli_out_commit(path);
}

void cli_sha256_hex(const void *buf, size_t len, char hex[65]) {
    struct sha256_ctx ctx;
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_init(&ctx);
    sha256_update(&ctx, len, buf);
    sha256_digest(&ctx, sizeof d, d);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) sprintf(hex + 2 * i, "%02x", d[i]);
}

int cli_sha256_file(const char *path, char hex[65]) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    struct sha256_ctx ctx;
    uint8_t d[SHA256_DIGEST_SIZE];
    static unsigned char chunk[1 << 16];
    sha256_init(&ctx);
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) sha256_update(&ctx, got, chunk);
    int bad = ferror(f);
    fclose(f);
    if (bad) return -1;
    sha256_digest(&ctx, sizeof d, d);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) sprintf(hex + 2 * i, "%02x", d[i]);
    return 0;
}

struct prov { json_t *inputs, *options, *upstream; };

prov *prov_new(void) {
    prov *p = xmalloc(sizeof *p);
    p->inputs = json_array();
    p->options = json_object();
    p->upstream = json_array();
    return p;
}

void prov_input(prov *p, const char *name, const char *sha) {
    json_array_append_new(p->inputs, json_pack("{s:s,s:s}", "name", cli_display_name(name), "sha256", sha));
}

void prov_input_buf(prov *p, const char *name, const void *buf, size_t len) {
    char hex[65];
    cli_sha256_hex(buf, len, hex);
    prov_input(p, name, hex);
}

void prov_opt_str(prov *p, const char *k, const char *v) { json_object_set_new(p->options, k, json_string(v ? v : "")); }
void prov_opt_int(prov *p, const char *k, long long v) { json_object_set_new(p->options, k, json_integer(v)); }
void prov_opt_dbl(prov *p, const char *k, double v) { json_object_set_new(p->options, k, json_real(v)); }

/* Lists are recorded as one comma-joined string, so the provenance stays a flat key/value map. */
void prov_opt_int_list(prov *p, const char *k, const int *v, int n) {
    strbuf sb = {0};
    sb_printf(&sb, "%s", "");
    for (int i = 0; i < n; i++) sb_printf(&sb, "%s%d", i ? "," : "", v[i]);
    prov_opt_str(p, k, sb.s);
    sb_free(&sb);
}

void prov_opt_dbl_list(prov *p, const char *k, const double *v, int n) {
    strbuf sb = {0};
    sb_printf(&sb, "%s", "");
    for (int i = 0; i < n; i++) sb_printf(&sb, "%s%.17g", i ? "," : "", v[i]);
    prov_opt_str(p, k, sb.s);
    sb_free(&sb);
}

prov *prov_parse(const char *js) {
    json_t *j = js ? json_loads(js, 0, NULL) : NULL;
    json_t *prog = json_object_get(j, "program"), *in = json_object_get(j, "inputs");
    json_t *opt = json_object_get(j, "options"), *up = json_object_get(j, "upstream");
    prov *p = NULL;
    if (json_is_string(prog) && !strcmp(json_string_value(prog), g_prog) && json_is_array(in) &&
        json_is_object(opt) && json_is_array(up)) {
        p = xmalloc(sizeof *p);
        p->inputs = json_incref(in);
        p->options = json_incref(opt);
        p->upstream = json_incref(up);
    }
    json_decref(j);
    return p;
}

void prov_upstream(prov *p, const char *js) {
    json_t *j = js ? json_loads(js, 0, NULL) : NULL;
    json_array_append_new(p->upstream, j ? j : json_string(js ? js : ""));
}

char *prov_json(const prov *p) {
    json_t *o = json_pack("{s:s,s:s,s:O,s:O,s:O}", "program", g_prog, "version", ATTNCODA_VERSION,
                          "inputs", p->inputs, "options", p->options, "upstream", p->upstream);
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(o);
    return s;
}

void prov_free(prov *p) {
    if (!p) return;
    json_decref(p->inputs);
    json_decref(p->options);
    json_decref(p->upstream);
    free(p);
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

void progress_begin(progress *pg, const char *label, double total) {
    pg->label = label;
    pg->total = total > 0 ? total : 1;
    pg->start = cli_now();
    pg->last_draw = 0;
    pg->active = isatty(STDERR_FILENO);
}

void progress_update(progress *pg, double done) {
    if (!pg->active) return;
    double now = cli_now();
    if (now - pg->last_draw < 0.2 && done < pg->total) return;
    pg->last_draw = now;
    double frac = done / pg->total, el = now - pg->start;
    double rate = el > 0 ? done / el : 0, eta = rate > 0 ? (pg->total - done) / rate : 0;
    char bar[31];
    int fill = (int)(frac * 30);
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
    bar[30] = 0;
    fprintf(stderr, "\r%s: [%s] %5.1f%% %.3g/s ETA %.0fs ", pg->label, bar, 100 * frac, rate, eta);
}

void progress_end(progress *pg) {
    if (!pg->active) return;
    progress_update(pg, pg->total);
    fprintf(stderr, "\n");
}

void sb_printf(strbuf *b, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        size_t room = b->cap - b->len;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if ((size_t)n < room) { b->len += n; return; }
        b->cap = (b->cap + n + 1) * 2;
        b->s = xrealloc(b->s, b->cap);
    }
}
void sb_free(strbuf *b) { free(b->s); b->s = NULL; b->len = b->cap = 0; }

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "%s: out of memory (%zu bytes)\n", g_prog, n); cli_out_abort_all(); exit(EXIT_DATA); }
    return p;
}
void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) { fprintf(stderr, "%s: out of memory\n", g_prog); cli_out_abort_all(); exit(EXIT_DATA); }
    return p;
}
void *xrealloc(void *q, size_t n) {
    void *p = realloc(q, n ? n : 1);
    if (!p) { fprintf(stderr, "%s: out of memory (%zu bytes)\n", g_prog, n); cli_out_abort_all(); exit(EXIT_DATA); }
    return p;
}
char *xstrdup(const char *s) { char *d = xmalloc(strlen(s) + 1); strcpy(d, s); return d; }

int cli_fail_msg(char *err, size_t errlen, const char *name, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "%s: %s", name, msg);
    return -1;
}

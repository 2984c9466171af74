#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *g_prog = "attncoda";

static void install_signal_handlers(void);
static void at_exit_cleanup(void);
static void on_library_fatal(int kind, const char *msg);

void cli_init(const char *prog) {
    opterr = 0;   /* getopt's own message would make usage errors two lines; cli_bad_option reports */
    const char *slash = strrchr(prog, '/');
    g_prog = slash ? slash + 1 : prog;
    util_set_program(g_prog);
    install_signal_handlers();
    atexit(at_exit_cleanup);
    util_set_fatal_handler(on_library_fatal);
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

static int g_dying;   /* a die_* is exiting: its status and message stand */

static _Noreturn void die_exit(int status) {
    g_dying = 1;
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

/* The library's two fatal conditions (core/util.h) end as they did when the library exited itself:
 * a planned output read as an input is a usage error; out of memory prints, removes the outputs
 * and exits 1. */
static void on_library_fatal(int kind, const char *msg) {
    if (kind == UTIL_ERR_USAGE) die_usage("%s", msg);
    fprintf(stderr, "%s: %s\n", g_prog, msg);
    cli_out_abort_all();
    exit(EXIT_DATA);
}

/* ---- option errors ---- */

/* Edits between a and b, an adjacent transposition counting as one ("qeury" is one from "query"). */
static int edit_distance(const char *a, const char *b) {
    enum { MAXLEN = 64 };
    size_t n = strlen(a), m = strlen(b);
    if (n > MAXLEN || m > MAXLEN) return INT_MAX;
    int d[MAXLEN + 1][MAXLEN + 1];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

/* The one long option nearest to name when it is close enough to be a typo of it, else NULL. */
static const char *nearest_option(const char *name, const struct option *lo) {
    const char *best = NULL;
    int bestd = INT_MAX, tie = 0;
    for (; lo->name; lo++) {
        int d = edit_distance(name, lo->name);
        if (d < bestd) bestd = d, best = lo->name, tie = 0;
        else if (d == bestd) tie = 1;
    }
    size_t len = strlen(name);
    int limit = len < 4 ? 1 : len < 9 ? 2 : 3;
    return best && !tie && bestd <= limit ? best : NULL;
}

/* The long option that "--name" selects as getopt_long does (exact name, else a unique prefix);
 * *nprefix = how many options name is a prefix of. */
static const struct option *find_long(const struct option *lo, const char *name, int *nprefix) {
    const struct option *hit = NULL;
    size_t len = strlen(name);
    *nprefix = 0;
    for (; lo->name; lo++) {
        if (!strcmp(lo->name, name)) { *nprefix = 1; return lo; }
        if (!strncmp(lo->name, name, len)) hit = lo, ++*nprefix;
    }
    return *nprefix == 1 ? hit : NULL;
}

static _Noreturn void bad_long_option(const char *arg, const struct option *lo) {
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
    int nprefix;
    const struct option *o = find_long(lo, name, &nprefix);
    if (o && o->val == optopt && optopt != 0) {   /* a known option used wrongly */
        if (o->has_arg == no_argument) die_usage("option '--%s' takes no value", o->name);
        die_usage("option '--%s' needs a value", o->name);
    }
    if (nprefix > 1) {
        char list[512] = "";
        size_t used = 0, len = strlen(name);
        for (const struct option *p = lo; p->name; p++)
            if (!strncmp(p->name, name, len) && used < sizeof list)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s--%s", used ? ", " : "", p->name);
        die_usage("option '--%s' is ambiguous (%s)", name, list);
    }
    const char *near = nearest_option(name, lo);
    if (near) die_usage("unknown option '--%s' (did you mean '--%s'?)", name, near);
    die_usage("unknown option '--%s' (see --help)", name);
}

void cli_bad_option(char **argv, const struct option *lo, const char *shortopts) {
    /* getopt_long leaves the failing argument at argv[optind - 1] when it was a long option; a short
     * option inside a cluster ("-xq") may not have advanced optind yet, so those are named by optopt. */
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    int nprefix = 0;
    int is_long = !strncmp(arg, "--", 2) && arg[2];
    if (is_long && optopt != 0) {   /* the short-option case only when the long one does not fit */
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
        const struct option *o = find_long(lo, name, &nprefix);
        is_long = o && o->val == optopt;
    }
    if (is_long) bad_long_option(arg, lo);
    const char *spec = optopt > 0 && optopt < 256 && optopt != ':' ? strchr(shortopts, optopt) : NULL;
    if (spec && spec[1] == ':') die_usage("option '-%c' needs a value", optopt);
    if (optopt > 32 && optopt < 127) die_usage("unknown option '-%c' (see --help)", optopt);
    die_usage("unknown option '%s' (see --help)", arg);
}

void cli_operands(int argc, char **argv, int min, int max, const char *what) {
    int n = argc - optind;
    if (n < min) die_usage("expected %s (see --help)", what);
    if (max >= 0 && n > max) die_usage("unexpected argument '%s' (expected %s; see --help)", argv[optind + max], what);
}

/* Options are named without their dashes; a caller's "--steps" must not print as "----steps". */
static const char *bare(const char *opt) {
    while (*opt == '-') opt++;
    return opt;
}

long cli_parse_long(const char *opt, const char *s, long lo, long hi) {
    opt = bare(opt);
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        die_usage("--%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo, hi);
    return v;
}

double cli_parse_double(const char *opt, const char *s, double lo, double hi) {
    char err[1024];
    double v;
    if (cli_parse_double_err(opt, s, lo, hi, &v, err, sizeof err)) die_usage("%s", err);
    return v;
}

uint64_t cli_parse_u64(const char *opt, const char *s) {
    opt = bare(opt);
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        die_usage("--%s: '%s' is not a non-negative integer", opt, s);
    return (uint64_t)v;
}

unsigned char *cli_slurp(const char *path, size_t *len) {
    char err[1024];
    unsigned char *buf = cli_slurp_err(path, len, err, sizeof err);
    if (!buf) die_data(path, "%s", err);
    return buf;
}

char *cli_slurp_text(const char *path, size_t *len) {
    char err[1024];
    char *buf = cli_slurp_text_err(path, len, err, sizeof err);
    if (!buf) die_data(path, "%s", err);
    return buf;
}

/* ---- outputs and temporary files (the registries are in core/util.c) ---- */

void cli_out_plan(const char *path) {
    char err[1024];
    if (cli_out_plan_err(path, err, sizeof err)) die_usage("%s", err);
}

/* At exit: a table printed to a full disk or closed stdout is an error (exit 1, naming stdout),
 * not a silent success; and no temporary file outlives the program. */
static void at_exit_cleanup(void) {
    if (!g_dying && fflush(stdout) != 0) {
        fprintf(stderr, "%s: (stdout): write error: %s\n", g_prog, strerror(errno));
        util_temps_unlink_all();
        _exit(EXIT_DATA);
    }
    util_temps_unlink_all();
}

static const int FATAL_SIGNALS[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT};

/* Async-signal-safe: unlink only, then die of the same signal with its default action. */
static void on_fatal_signal(int sig) {
    util_temps_unlink_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_signal_handlers(void) {
    for (size_t i = 0; i < sizeof FATAL_SIGNALS / sizeof *FATAL_SIGNALS; i++) {
        struct sigaction old, sa;
        /* a signal ignored by the parent (nohup, a background job of a script) stays ignored,
         * and a handler already there (libFuzzer's, in tests/fuzz) stays */
        if (sigaction(FATAL_SIGNALS[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        for (size_t j = 0; j < sizeof FATAL_SIGNALS / sizeof *FATAL_SIGNALS; j++) sigaddset(&sa.sa_mask, FATAL_SIGNALS[j]);
        sigaction(FATAL_SIGNALS[i], &sa, NULL);
    }
}

/* Usage errors are the whole message; data errors name the file. */
static _Noreturn void die_util(int rc, const char *file, const char *err) {
    if (rc == UTIL_ERR_USAGE) die_usage("%s", err);
    die_data(file, "%s", err);
}

void cli_check(int rc, const char *err) {
    if (rc) die_util(rc, NULL, err);
}

const char *cli_out_begin(const char *path) {
    char err[1024];
    const char *tmp;
    int rc = cli_out_begin_err(path, &tmp, err, sizeof err);
    if (rc) die_util(rc, path, err);
    return tmp;
}

void cli_out_commit(const char *path) {
    char err[1024];
    int rc = cli_out_commit_err(path, err, sizeof err);
    if (rc) die_util(rc, path, err);
}

void cli_write_bytes(const char *path, const void *buf, size_t len) {
    char err[1024];
    const char *file;
    int rc = cli_write_bytes_err(path, buf, len, &file, err, sizeof err);
    if (rc) die_util(rc, file, err);
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

static int g_progress = -1;   /* -1: when stderr is a terminal; 0/1: --no-progress / --progress */

void cli_progress_option(int code) { g_progress = code == CLI_OPT_PROGRESS; }

void progress_begin(progress *pg, const char *label, const char *unit, double total) {
    pg->label = label;
    pg->unit = unit;
    pg->total = total > 0 ? total : 1;
    pg->start = cli_now();
    pg->last_draw = 0;
    pg->active = g_progress >= 0 ? g_progress : isatty(STDERR_FILENO);
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
    fprintf(stderr, "\r%s: [%s] %5.1f%% %.3g %s/s ETA %.0fs ", pg->label, bar, 100 * frac, rate, pg->unit, eta);
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

/* util: the library's edges that never exit (util.h): error texts, number checks, whole inputs,
 * the input, temporary-file and output registries, SHA-256 and allocation. Moved out of src/cli,
 * which wraps the failing ones into calls that print the same messages and exit. */
#include "util.h"
#include "hashcache.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <nettle/sha2.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *g_program = "attncoda";
void util_set_program(const char *name) { g_program = name; }

void util_warn(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", g_program, msg);
}

static void (*g_fatal)(int kind, const char *msg);
void util_set_fatal_handler(void (*handler)(int kind, const char *msg)) { g_fatal = handler; }

void util_out_of_memory(const char *msg) {
    if (g_fatal) g_fatal(UTIL_ERR_DATA, msg);
    fprintf(stderr, "%s: %s\n", g_program, msg);
    abort();
}

void cli_err_prefix(char *err, size_t errlen, const char *path) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", err);
    snprintf(err, errlen, "%s: %s", path, tmp);
}

int util_vfail(char *err, size_t errlen, const char *file, const char *fmt, va_list ap) {
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    snprintf(err, errlen, "%s: %s", cli_display_name(file), msg);
    return UTIL_ERR_DATA;
}

int util_fail(char *err, size_t errlen, const char *file, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    util_vfail(err, errlen, file, fmt, ap);
    va_end(ap);
    return UTIL_ERR_DATA;
}

int cli_fail_msg(char *err, size_t errlen, const char *name, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "%s: %s", name, msg);
    return -1;
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

int cli_parse_double_err(const char *opt, const char *s, double lo, double hi, double *out, char *err,
                         size_t errlen) {
    while (*opt == '-') opt++;   /* a caller's "--steps" must not print as "----steps" */
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
        snprintf(err, errlen, "--%s: '%s' is not a number in [%g, %g]", opt, s, lo, hi);
        return UTIL_ERR_USAGE;
    }
    *out = v;
    return 0;
}

int cli_is_stdio(const char *path) { return path && strcmp(path, "-") == 0; }
const char *cli_display_name(const char *path) { return cli_is_stdio(path) ? "(stdin)" : path; }

unsigned char *cli_slurp_err(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = cli_is_stdio(path) ? stdin : fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return NULL;
    }
    cli_input_note(path);
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = xmalloc(cap);
    for (;;) {
        if (n == cap) buf = xrealloc(buf, cap *= 2);
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "read error: %s", strerror(errno));
        if (f != stdin) fclose(f);
        free(buf);
        return NULL;
    }
    if (f != stdin) fclose(f);
    if (n == cap) buf = xrealloc(buf, cap + 1);
    buf[n] = 0;
    *len = n;
    return buf;
}

unsigned char *util_slurp(const char *path, size_t *len, char *err, size_t errlen) {
    unsigned char *buf = cli_slurp_err(path, len, err, errlen);
    if (!buf) cli_err_prefix(err, errlen, cli_display_name(path));
    return buf;
}

char *cli_slurp_text_err(const char *path, size_t *len, char *err, size_t errlen) {
    unsigned char *buf = cli_slurp_err(path, len, err, errlen);
    if (!buf) return NULL;
    const unsigned char *nul = memchr(buf, 0, *len);
    if (!nul) return (char *)buf;
    long line = 1;
    for (const unsigned char *p = buf; p < nul; p++) line += *p == '\n';
    free(buf);
    snprintf(err, errlen, "line %ld: NUL byte (a binary file, not text?)", line);
    return NULL;
}

/* ---- inputs: refuse an output that is the same file ---- */

/* Static storage, no malloc: a reader notes its input while a fuzz harness (tests/fuzz) tracks
 * and then frees what a rejected input allocated. Names go into one pool (the messages need them);
 * past the limits a file is not noted, which only weakens the check. */
typedef struct { dev_t dev; ino_t ino; const char *name; } file_id;
enum { MAX_INPUTS = 4096, MAX_PLANNED = 512, NAME_POOL = 1 << 17 };
static file_id g_inputs[MAX_INPUTS], g_planned[MAX_PLANNED];
static int g_ninputs, g_nplanned;
static char g_name_pool[NAME_POOL];
static size_t g_name_used;

static int refuse(const char *out, const char *in, char *err, size_t errlen) {
    if (cli_is_stdio(out))
        snprintf(err, errlen, "stdout is the input '%s' (the same file); refusing to overwrite it", in);
    else
        snprintf(err, errlen, "output '%s' is the input '%s' (the same file); refusing to overwrite it", out, in);
    return UTIL_ERR_USAGE;
}

/* The file path names (stdout for "-" on the output side, stdin on the input side), if regular. */
static int regular_file_id(const char *path, int fd_for_dash, struct stat *st) {
    int got = cli_is_stdio(path) ? fstat(fd_for_dash, st) : stat(path, st);
    return got == 0 && S_ISREG(st->st_mode);
}

static int same_file(const file_id *f, const struct stat *st) { return f->dev == st->st_dev && f->ino == st->st_ino; }

static void add_id(file_id *list, int *n, int max, const struct stat *st, const char *name) {
    size_t len = strlen(name) + 1;
    if (*n == max) return;
    const char *kept = "(an input)";
    if (len <= NAME_POOL - g_name_used) {
        kept = memcpy(g_name_pool + g_name_used, name, len);
        g_name_used += len;
    }
    list[(*n)++] = (file_id){st->st_dev, st->st_ino, kept};
}

void cli_input_note(const char *path) {
    struct stat st;
    if (!path || !regular_file_id(path, STDIN_FILENO, &st)) return;
    for (int i = 0; i < g_nplanned; i++)
        if (same_file(&g_planned[i], &st) && g_fatal) {
            char err[1024];
            refuse(g_planned[i].name, cli_display_name(path), err, sizeof err);
            g_fatal(UTIL_ERR_USAGE, err);
        }
    for (int i = 0; i < g_ninputs; i++)
        if (same_file(&g_inputs[i], &st)) return;
    add_id(g_inputs, &g_ninputs, MAX_INPUTS, &st, cli_display_name(path));
}

/* UTIL_ERR_USAGE when the output path, or stdout for "-", is a file already read as an input. */
static int refuse_output_on_input(const char *path, char *err, size_t errlen) {
    struct stat st;
    if (!regular_file_id(path, STDOUT_FILENO, &st)) return 0;
    for (int i = 0; i < g_ninputs; i++)
        if (same_file(&g_inputs[i], &st)) return refuse(path, g_inputs[i].name, err, errlen);
    return 0;
}

int cli_out_plan_err(const char *path, char *err, size_t errlen) {
    struct stat st;
    if (!path || !regular_file_id(path, STDOUT_FILENO, &st)) return 0;
    int rc = refuse_output_on_input(path, err, errlen);
    if (rc) return rc;
    add_id(g_planned, &g_nplanned, MAX_PLANNED, &st, path);
    return 0;
}

/* ---- temporary files and uncommitted outputs: removed on every exit path ---- */

/* Fixed storage, so that a signal handler only reads plain arrays and calls unlink. */
#define MAX_TEMPS 64
static char g_temp_path[MAX_TEMPS][PATH_MAX];
static volatile sig_atomic_t g_temp_used[MAX_TEMPS];

static int temp_slot_add(const char *path, char *err, size_t errlen) {
    if (strlen(path) >= PATH_MAX) {
        snprintf(err, errlen, "path too long: %.64s...", path);
        return UTIL_ERR_USAGE;
    }
    for (int i = 0; i < MAX_TEMPS; i++)
        if (!g_temp_used[i]) {
            strcpy(g_temp_path[i], path);
            atomic_signal_fence(memory_order_seq_cst);   /* the path is whole before a handler sees it */
            g_temp_used[i] = 1;
            return i;
        }
    snprintf(err, errlen, "too many output and temporary files");
    return UTIL_ERR_USAGE;
}

static int temp_slot_find(const char *path) {
    for (int i = 0; i < MAX_TEMPS; i++)
        if (g_temp_used[i] && !strcmp(g_temp_path[i], path)) return i;
    return -1;
}

int cli_temp_add_err(const char *path, char *err, size_t errlen) {
    int slot = temp_slot_add(path, err, errlen);
    return slot < 0 ? slot : 0;
}

void cli_temp_remove(const char *path) {
    int i = temp_slot_find(path);
    struct stat st;
    if (stat(path, &st) == 0)   /* a temporary read back is no input: its inode may be reused */
        for (int k = 0; k < g_ninputs; k++)
            if (same_file(&g_inputs[k], &st)) g_inputs[k].ino = 0, g_inputs[k].dev = 0;
    unlink(path);
    if (i >= 0) g_temp_used[i] = 0;
}

void util_temps_unlink_all(void) {
    for (int i = 0; i < MAX_TEMPS; i++)
        if (g_temp_used[i]) {
            unlink(g_temp_path[i]);
            g_temp_used[i] = 0;
        }
}

/* Registered outputs: final path and the temporary-file slot that holds it until commit. */
#define MAX_OUTS 64
static struct { char *final; int slot; } g_outs[MAX_OUTS];

int cli_out_begin_err(const char *path, const char **tmp_out, char *err, size_t errlen) {
    *tmp_out = NULL;
    int rc = refuse_output_on_input(path, err, errlen);
    if (rc) return rc;
    if (cli_is_stdio(path)) return 0;
    /* the rename that commits an output would replace a device node (/dev/null, as root) or a
     * FIFO by a regular file: refused, with the way that works ('-' and a redirection) */
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "output '%s' is a directory", path);
        return UTIL_ERR_USAGE;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "output '%s' is a device or pipe, not a file: give '-' and redirect stdout to it", path);
        return UTIL_ERR_USAGE;
    }
    int k = 0;
    while (k < MAX_OUTS && g_outs[k].final) k++;
    if (k == MAX_OUTS) {
        snprintf(err, errlen, "too many output files");
        return UTIL_ERR_USAGE;
    }
    size_t n = strlen(path) + 32;
    char *tmp = xmalloc(n);
    snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
    int slot = temp_slot_add(tmp, err, errlen);
    free(tmp);
    if (slot < 0) return slot;
    g_outs[k].slot = slot;
    g_outs[k].final = xstrdup(path);
    *tmp_out = g_temp_path[slot];
    return 0;
}

int cli_out_commit_err(const char *path, char *err, size_t errlen) {
    for (int i = 0; i < MAX_OUTS; i++) {
        if (g_outs[i].final && strcmp(g_outs[i].final, path) == 0) {
            /* again here: an input may have been read after the output was begun */
            int rc = refuse_output_on_input(path, err, errlen);
            if (rc) return rc;
            int slot = g_outs[i].slot;
            if (rename(g_temp_path[slot], g_outs[i].final) != 0) {
                snprintf(err, errlen, "cannot rename temporary output into place: %s", strerror(errno));
                return UTIL_ERR_DATA;
            }
            g_temp_used[slot] = 0;
            free(g_outs[i].final);
            g_outs[i].final = NULL;
            return 0;
        }
    }
    return 0;
}

void cli_out_abort_all(void) {
    util_temps_unlink_all();
    for (int i = 0; i < MAX_OUTS; i++) {
        free(g_outs[i].final);
        g_outs[i].final = NULL;
    }
}

int cli_write_bytes_err(const char *path, const void *buf, size_t len, const char **errfile, char *err,
                        size_t errlen) {
    *errfile = path;
    if (cli_is_stdio(path)) {
        if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0) {
            *errfile = "(stdout)";
            snprintf(err, errlen, "write error: %s", strerror(errno));
            return UTIL_ERR_DATA;
        }
        return 0;
    }
    const char *tmp;
    int rc = cli_out_begin_err(path, &tmp, err, errlen);
    if (rc) return rc;
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "cannot create: %s", strerror(errno));
        return UTIL_ERR_DATA;
    }
    if (fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        snprintf(err, errlen, "write error: %s", strerror(errno));
        return UTIL_ERR_DATA;
    }
    return cli_out_commit_err(path, err, errlen);
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
    cli_input_note(path);
    struct stat st;
    int cacheable = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);   /* large files: hashcache.h */
    if (cacheable && hashcache_get(&st, hex)) {
        fclose(f);
        return 0;
    }
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
    if (cacheable) hashcache_put(&st, hex);
    return 0;
}

/* ---- allocation ---- */

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        char msg[64];
        snprintf(msg, sizeof msg, "out of memory (%zu bytes)", n);
        util_out_of_memory(msg);
    }
    return p;
}
void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) util_out_of_memory("out of memory");
    return p;
}
void *xrealloc(void *q, size_t n) {
    void *p = realloc(q, n ? n : 1);
    if (!p) {
        char msg[64];
        snprintf(msg, sizeof msg, "out of memory (%zu bytes)", n);
        util_out_of_memory(msg);
    }
    return p;
}
char *xstrdup(const char *s) { char *d = xmalloc(strlen(s) + 1); strcpy(d, s); return d; }

/* cli: what every attncoda program shares at its edges: error lines and exit codes, output files
 * that appear only when complete (temporary name, then rename), reading whole inputs or stdin,
 * SHA-256 checksums, provenance records and a progress bar for terminals. */
#ifndef ATTNCODA_CLI_H
#define ATTNCODA_CLI_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ATTNCODA_VERSION "0.1.0"

enum { EXIT_DATA = 1, EXIT_USAGE = 2 };

void cli_init(const char *prog);          /* program name used in every message */
const char *cli_prog(void);
/* "prog: msg", exit 2 */
_Noreturn void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "prog: file: msg", exit 1; removes every uncommitted output file first */
_Noreturn void die_data(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_print_version(void);
/* For the fuzz harnesses only (tests/fuzz): die_* call hook(status) instead of exit(), so that a
 * harness can longjmp back and try the next input; the hook must not return. NULL restores exit. */
void cli_set_exit_hook(void (*hook)(int status));
/* Prefix a loader's error message with the file it concerns: "path: message" in place. */
void cli_err_prefix(char *err, size_t errlen, const char *path);             /* "prog (attncoda) 0.1.0" on stdout */

/* Strict number parsing for options; bad values are usage errors naming the option. */
long   cli_parse_long(const char *opt, const char *s, long lo, long hi);
double cli_parse_double(const char *opt, const char *s, double lo, double hi);
uint64_t cli_parse_u64(const char *opt, const char *s);

/* The one checked number-to-integer conversion for every integer read from a file (JSON, GGUF,
 * text): 0 and *out = x when x is an integer in [lo, hi]; else -1 with why = "<value> is not an
 * integer" / "is NaN" / "<value> is out of range [lo, hi]", for the caller to prefix with the key.
 * Casting a double outside the target range is undefined behaviour, so no reader casts itself. */
int cli_num_to_ll(double x, long long lo, long long hi, long long *out, char *why, size_t whylen);

/* Whole input in memory ("-" = stdin). Returns malloc'd bytes followed by a NUL (not counted
 * in *len), so text callers can parse it as a string; dies with exit 1 on failure. */
unsigned char *cli_slurp(const char *path, size_t *len);
/* A text input parsed line by line (recipes, id lists, masks, tables): as cli_slurp, but a NUL
 * byte is fatal, naming its line, since string parsing would silently stop there. */
char *cli_slurp_text(const char *path, size_t *len);
int cli_is_stdio(const char *path);       /* path is "-" */
const char *cli_display_name(const char *path); /* "-" shows as "(stdin)" */

/* Output files. cli_out_begin returns the name to write to: a temporary file beside the final one
 * (or NULL for "-", where the caller writes to stdout). cli_out_commit renames it into place.
 * A die_* before commit removes it, so no partial file is ever left. */
const char *cli_out_begin(const char *path);
void cli_out_commit(const char *path);
void cli_out_abort_all(void);
/* Write a buffer to stdout or to path (through the temporary-name protocol). */
void cli_write_bytes(const char *path, const void *buf, size_t len);

/* SHA-256 of a buffer as 64 hex chars + NUL. */
void cli_sha256_hex(const void *buf, size_t len, char hex[65]);
int cli_sha256_file(const char *path, char hex[65]); /* 0 ok, -1 unreadable */

/* Provenance: a JSON object {"program","version","inputs":[{"name","sha256"}],"options":{},
 * "upstream":[...]} serialised into every output. */
typedef struct prov prov;
prov *prov_new(void);
void prov_input(prov *p, const char *name, const char *sha256_hex);
void prov_input_buf(prov *p, const char *name, const void *buf, size_t len);
void prov_opt_str(prov *p, const char *key, const char *val);
void prov_opt_int(prov *p, const char *key, long long val);
void prov_opt_dbl(prov *p, const char *key, double val);
void prov_opt_int_list(prov *p, const char *key, const int *val, int n);
void prov_opt_dbl_list(prov *p, const char *key, const double *val, int n);
void prov_upstream(prov *p, const char *json);   /* provenance string of an input file */
/* A provenance string written by this program read back, so that options can be replaced: how a
 * merge of shards records what one run over their union records. NULL when json is not one. */
prov *prov_parse(const char *json);
char *prov_json(const prov *p);                  /* malloc'd, compact, deterministic key order */
void prov_free(prov *p);

/* Progress on stderr (bar, rate, ETA) only when stderr is a terminal. */
typedef struct {
    const char *label;
    double total, start, last_draw;
    int active;
} progress;
void progress_begin(progress *pg, const char *label, double total);
void progress_update(progress *pg, double done);
void progress_end(progress *pg);
double cli_now(void);                            /* monotonic seconds */

/* Growable string buffer for TSV output. */
typedef struct { char *s; size_t len, cap; } strbuf;
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_free(strbuf *b);
/* For readers that report into a caller's buffer: writes "NAME: message" to err, returns -1. */
int cli_fail_msg(char *err, size_t errlen, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
#endif

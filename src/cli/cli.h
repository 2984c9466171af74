/* cli: what every attncoda program shares at its edges: error lines and exit codes, output files
 * that appear only when complete (temporary name, then rename), reading whole inputs or stdin,
 * SHA-256 checksums, provenance records and a progress bar for terminals. */
#ifndef ATTNCODA_CLI_H
#define ATTNCODA_CLI_H
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/util.h"   /* the parts of the edges that never exit, which the library uses too */

#define ATTNCODA_VERSION "0.1.0"

enum { EXIT_DATA = 1, EXIT_USAGE = 2 };

/* Program name used in every message; also installs the SIGINT/SIGTERM/SIGHUP/SIGPIPE/SIGQUIT
 * handlers that remove every uncommitted output and temporary file before dying of the signal. */
void cli_init(const char *prog);
const char *cli_prog(void);
/* "prog: msg", exit 2 */
_Noreturn void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "prog: file: msg", exit 1; removes every uncommitted output file first */
_Noreturn void die_data(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A library result: 0 returns; UTIL_ERR_USAGE dies as die_usage("%s", err), any other value as
 * die_data(NULL, "%s", err) (err holds "FILE: what is wrong"). */
void cli_check(int rc, const char *err);
void cli_print_version(void);             /* "prog (attncoda) 0.1.0" on stdout */

/* Option errors in one style for every program (getopt_long with opterr = 0, set by cli_init):
 * call from the switch's default case. Exit 2 with "unknown option '--min-qeury' (did you mean
 * '--min-query'?)", "option '--seed' needs a value", "option '--help' takes no value" or
 * "option '--s' is ambiguous (--sink, --seed)". */
_Noreturn void cli_bad_option(char **argv, const struct option *longopts, const char *shortopts);
/* Positional arguments argv[optind..argc): at least min and at most max (-1: no limit); else
 * exit 2 with "expected WHAT (see --help)" or "unexpected argument 'X' (expected WHAT; see --help)". */
void cli_operands(int argc, char **argv, int min, int max, const char *what);

/* Strict number parsing for options; bad values are usage errors naming the option. */
long   cli_parse_long(const char *opt, const char *s, long lo, long hi);
double cli_parse_double(const char *opt, const char *s, double lo, double hi);
uint64_t cli_parse_u64(const char *opt, const char *s);

/* The *_err functions of core/util.h, exiting on failure with their message: data errors exit 1
 * naming the file, usage errors (an output that is an input, a directory or a device) exit 2. */
unsigned char *cli_slurp(const char *path, size_t *len);   /* exit 1 */
char *cli_slurp_text(const char *path, size_t *len);       /* exit 1 */
/* Programs plan their output paths (NULL and "-" for stdout are fine) right after parsing the
 * options, so that the refusal comes before anything is written: cli_out_plan refuses (exit 2) a
 * path that is an input already noted, and cli_input_note then refuses (exit 2) an input that is
 * a planned output; without plans it never exits. */
void cli_out_plan(const char *path);
/* cli_out_begin returns the name to write to (NULL for "-"); a die_* before cli_out_commit
 * removes it, so no partial file is ever left. */
const char *cli_out_begin(const char *path);
void cli_out_commit(const char *path);
void cli_write_bytes(const char *path, const void *buf, size_t len);

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

/* Progress on stderr (bar, rate in units per second, ETA): by default only when stderr is a
 * terminal; --progress / --no-progress (CLI_PROGRESS_OPTIONS, handled by cli_progress_option)
 * force it on or off. */
typedef struct {
    const char *label, *unit;
    double total, start, last_draw;
    int active;
} progress;
void progress_begin(progress *pg, const char *label, const char *unit, double total);
void progress_update(progress *pg, double done);
void progress_end(progress *pg);
double cli_now(void);                            /* monotonic seconds */
enum { CLI_OPT_PROGRESS = 0x1000, CLI_OPT_NO_PROGRESS };
#define CLI_PROGRESS_OPTIONS {"progress", 0, 0, CLI_OPT_PROGRESS}, {"no-progress", 0, 0, CLI_OPT_NO_PROGRESS}
void cli_progress_option(int code);              /* CLI_OPT_PROGRESS or CLI_OPT_NO_PROGRESS */

/* Growable string buffer for TSV output. */
typedef struct { char *s; size_t len, cap; } strbuf;
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_free(strbuf *b);
#endif

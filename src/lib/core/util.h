/* util: what the library shares at its edges and never exits for: error texts in the callers'
 * buffers, the checked number-to-integer conversion, reading whole inputs, noting which files are
 * inputs, temporary files and outputs that appear only when complete (temporary name, then rename),
 * SHA-256 checksums and allocation. src/cli (the program layer) wraps the functions that can fail
 * here into ones that print "prog: file: what is wrong" and exit; the names keep their cli_ prefix
 * so that code moving between the two layers reads the same.
 *
 * Convention: a function that can fail takes char *err, size_t errlen, fills err with the message
 * (the text after "prog: file: " when the caller knows the file, else after "prog: ") and returns
 * UTIL_ERR_DATA (the program exits 1) or UTIL_ERR_USAGE (the program exits 2), or NULL. */
#ifndef ATTNCODA_UTIL_H
#define ATTNCODA_UTIL_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

enum { UTIL_ERR_DATA = -1, UTIL_ERR_USAGE = -2 };

/* A note on stderr that is not an error ("prog: message"): prog is the name util_set_program
 * gave (cli_init sets it), else "attncoda". The library's only output besides its results. */
void util_set_program(const char *name);
void util_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The two conditions the library cannot return from: an allocation that fails (kind
 * UTIL_ERR_DATA, "out of memory (N bytes)") and a reader opening a file that a program planned as
 * an output (kind UTIL_ERR_USAGE, "output 'X' is the input 'Y' (the same file); ..."). cli_init
 * installs a handler that prints the message and exits; without one a failed allocation aborts
 * and a planned output read as an input is only noted (cli_out_begin_err refuses it later). */
void util_set_fatal_handler(void (*handler)(int kind, const char *msg));
/* An allocation failed: msg ("out of memory (N bytes)", or prefixed by what failed) goes to the
 * handler; without one, to stderr, and the process aborts. */
_Noreturn void util_out_of_memory(const char *msg);

/* Prefix a loader's error message with the file it concerns: "path: message" in place. */
void cli_err_prefix(char *err, size_t errlen, const char *path);
/* For readers that report into a caller's buffer: writes "NAME: message" to err, returns -1. */
/* "FILE: message" into err, FILE as a program's error line shows it ("-" is "(stdin)"); returns
 * -1 (UTIL_ERR_DATA). The readers' and writers' common way to report bad data. */
int util_fail(char *err, size_t errlen, const char *file, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int util_vfail(char *err, size_t errlen, const char *file, const char *fmt, va_list ap);
int cli_fail_msg(char *err, size_t errlen, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The one checked number-to-integer conversion for every integer read from a file (JSON, GGUF,
 * text): 0 and *out = x when x is an integer in [lo, hi]; else -1 with why = "<value> is not an
 * integer" / "is NaN" / "<value> is out of range [lo, hi]", for the caller to prefix with the key.
 * Casting a double outside the target range is undefined behaviour, so no reader casts itself. */
int cli_num_to_ll(double x, long long lo, long long hi, long long *out, char *why, size_t whylen);
/* Strict number parsing for an option value: 0 and *out, or UTIL_ERR_USAGE with
 * "--opt: 's' is not a number in [lo, hi]" (the option named without its dashes). */
int cli_parse_double_err(const char *opt, const char *s, double lo, double hi, double *out, char *err,
                         size_t errlen);

int cli_is_stdio(const char *path);       /* path is "-" */
const char *cli_display_name(const char *path); /* "-" shows as "(stdin)" */

/* Whole input in memory ("-" = stdin), noted as an input. Returns malloc'd bytes followed by a NUL
 * (not counted in *len), so text callers can parse it as a string; NULL with "cannot open: why" or
 * "read error: why" in err. */
unsigned char *cli_slurp_err(const char *path, size_t *len, char *err, size_t errlen);
/* A text input parsed line by line (recipes, id lists, masks, tables): as cli_slurp_err, but a NUL
 * byte is an error ("line N: NUL byte (a binary file, not text?)"), since string parsing would
 * silently stop there. */
char *cli_slurp_text_err(const char *path, size_t *len, char *err, size_t errlen);
/* cli_slurp_err with the readers' error text: err = "FILE: why", FILE as error lines show it. */
unsigned char *util_slurp(const char *path, size_t *len, char *err, size_t errlen);

/* Never an output that overwrites an input: every file a program reads is noted by device and
 * inode ("-": stdin, when it is a regular file), and the outputs refuse (UTIL_ERR_USAGE, naming
 * both) to be the same file as an input by any name (hard link, symlink), before it is replaced.
 * Readers call cli_input_note where they open a file; an unreadable path is not noted. An input
 * that is a planned output (cli_out_plan_err) goes to the fatal handler above. */
void cli_input_note(const char *path);
int cli_out_plan_err(const char *path, char *err, size_t errlen);

/* Temporary files (stdin spooled to disk, stdout images): removed by cli_out_abort_all (every
 * die_* calls it), at exit and on the signals cli_init handles. cli_temp_add_err fails
 * (UTIL_ERR_USAGE) only past the fixed number of slots or PATH_MAX; cli_temp_remove unlinks the
 * file and forgets it. */
int cli_temp_add_err(const char *path, char *err, size_t errlen);
void cli_temp_remove(const char *path);
/* Unlink every temporary and uncommitted output; async-signal-safe (unlink only). */
void util_temps_unlink_all(void);

/* Output files. cli_out_begin_err sets *tmp to the name to write to: a temporary file beside the
 * final one (or NULL for "-", where the caller writes to stdout). cli_out_commit_err renames it
 * into place. cli_out_abort_all removes every uncommitted one, so no partial file is ever left.
 * Errors: UTIL_ERR_USAGE (an input, a directory, a device, too many outputs) with the whole
 * message; UTIL_ERR_DATA (the rename failed) with the message after "prog: path: ". */
int cli_out_begin_err(const char *path, const char **tmp, char *err, size_t errlen);
int cli_out_commit_err(const char *path, char *err, size_t errlen);
void cli_out_abort_all(void);
/* Write a buffer to stdout or to path (through the temporary-name protocol). On UTIL_ERR_DATA,
 * *errfile is the file the message is about (path, or "(stdout)"). */
int cli_write_bytes_err(const char *path, const void *buf, size_t len, const char **errfile, char *err,
                        size_t errlen);

/* SHA-256 of a buffer as 64 hex chars + NUL. */
void cli_sha256_hex(const void *buf, size_t len, char hex[65]);
int cli_sha256_file(const char *path, char hex[65]); /* 0 ok, -1 unreadable */

/* Allocation that does not return NULL: a failure goes to the fatal handler. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
#endif

/* What every harness shares. The readers take paths, so each input is written to a file in a
 * private temporary directory. Every reader returns its errors (nothing under src/lib exits), so
 * a rejection is the expected outcome: only a crash, a sanitizer report or a leak is a finding. */
#ifndef ATTNCODA_FUZZ_H
#define ATTNCODA_FUZZ_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static char fz_dir[64];

/* The temporary directory, made on first use (and removed at exit with its files). */
static void fz_cleanup(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fz_dir);
    if (system(cmd)) {}
}
static const char *fz_tmpdir(void) {
    if (!fz_dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fz_dir, sizeof fz_dir, "%s/attncoda-fuzz-XXXXXX", t && *t && strlen(t) < 30 ? t : "/tmp");
        if (!mkdtemp(fz_dir)) abort();
        atexit(fz_cleanup);
        cli_init("fuzz");
    }
    return fz_dir;
}

/* path of name in the directory, holding size bytes of data. */
__attribute__((unused)) static const char *fz_file(const char *name, const uint8_t *data, size_t size) {
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", fz_tmpdir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f)) abort();
    return path;
}
#endif

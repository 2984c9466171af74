/* What every harness shares. The readers take paths, so each input is written to a file in a
 * private temporary directory. Most readers return their errors; those that still die (the
 * attention file's and arrayin's: fuzz_attention, fuzz_arrayin) jump back here through the cli
 * exit hook, so one rejected input does not end the run. A rejection is the expected outcome:
 * only a crash, a sanitizer report or (where the reader returns rather than dies) a leak is a
 * finding. */
#ifndef ATTNCODA_FUZZ_H
#define ATTNCODA_FUZZ_H
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static jmp_buf fz_jump;
static void fz_exit_hook(int status) {
    (void)status;
    longjmp(fz_jump, 1);
}

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
        cli_set_exit_hook(fz_exit_hook);
    }
    return fz_dir;
}

/* What a reader held when it died (no harness uses this since the recipe and --ids/--mask readers
 * return their errors; kept for a reader that dies and allocates with malloc alone). The programs
 * exit there, so those blocks are not leaks of theirs, but in one fuzzing process they add up (a
 * 64 KiB slurp buffer per rejected input ran fuzz_recipe out of memory after 350 k inputs). While an input runs, the sanitizer's allocation
 * hooks keep the live blocks; after a rejection the harness frees them, so rejected inputs leak
 * nothing and the harness can be leak-checked like a reader that returns. Only for readers that
 * allocate with malloc alone: a library's internal state (HDF5's) must not be freed behind it. */
#include <sanitizer/allocator_interface.h>
enum { FZ_TRACK_MAX = 1 << 14 };
static const volatile void *fz_live[FZ_TRACK_MAX];
static size_t fz_nlive;
static int fz_tracking, fz_track_overflow;
static void fz_on_malloc(const volatile void *ptr, size_t size) {
    (void)size;
    if (!fz_tracking) return;
    if (fz_nlive == FZ_TRACK_MAX) fz_track_overflow = 1;
    else fz_live[fz_nlive++] = ptr;
}
static void fz_on_free(const volatile void *ptr) {
    if (!fz_tracking) return;
    for (size_t i = fz_nlive; i-- > 0;)
        if (fz_live[i] == ptr) {
            fz_live[i] = fz_live[--fz_nlive];
            return;
        }
}
__attribute__((unused)) static void fz_track_begin(void) {
    static int installed;
    if (!installed && !__sanitizer_install_malloc_and_free_hooks(fz_on_malloc, fz_on_free)) abort();
    installed = 1;
    fz_nlive = 0;
    fz_tracking = 1;
}
/* end of the input; rejected: free what the reader still held */
__attribute__((unused)) static void fz_track_end(int rejected) {
    fz_tracking = 0;
    if (fz_track_overflow) abort();   /* more than FZ_TRACK_MAX live blocks: raise it */
    if (rejected)
        for (size_t i = 0; i < fz_nlive; i++) free((void *)fz_live[i]);
    fz_nlive = 0;
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

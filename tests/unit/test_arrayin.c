/* arrayin's .npz reader on members whose .npy prefix is odd: a header-length field of 0 or 1
 * (version 1, a 10-byte prefix) once made add_npz_member copy 12 bytes into a 10- or 11-byte
 * buffer (issue 39; ASan: heap-buffer-overflow). Each bad member is read in a child process, which
 * must exit 1 with exactly one stderr line naming the file and the reason; under the sanitizer
 * build an overflow prints a report instead and fails the check. A valid member is read and its
 * values compared, and the deflate-ratio and fortran_order checks are exercised the same way. */
#include "io/arrayin.h"
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zip.h>

static int n_fail;
static void ok(int cond, const char *name) {
    printf("%s - %s\n", cond ? "ok" : "not ok", name);
    n_fail += !cond;
}

static char dir[64];

/* An archive holding one member layer_0.npy of the given bytes (stored or deflated). */
static void write_npz(const char *path, const void *member, size_t n, int deflate) {
    int err;
    zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err);
    zip_source_t *src = zip_source_buffer(z, member, n, 0);
    zip_int64_t i = zip_file_add(z, "layer_0.npy", src, ZIP_FL_OVERWRITE);
    zip_set_file_compression(z, (zip_uint64_t)i, deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
    if (zip_close(z) != 0) abort();
}

/* A .npy stream: version, header text, then data. */
static size_t npy(unsigned char *b, int version, const char *hdr, const float *data, size_t nd) {
    size_t hl = strlen(hdr), k = 8;
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)version, b[7] = 0;
    b[k++] = (unsigned char)(hl & 255), b[k++] = (unsigned char)(hl >> 8);
    if (version > 1) b[k++] = 0, b[k++] = 0;
    memcpy(b + k, hdr, hl);
    memcpy(b + k + hl, data, nd * sizeof *data);
    return k + hl + nd * sizeof *data;
}

/* ai_add(path) in a child that dies with its error the way import does: its exit status and its
 * stderr (one line expected). */
static int add_in_child(const char *path, char *err, size_t errlen) {
    char errfile[128];
    snprintf(errfile, sizeof errfile, "%s/stderr", dir);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(errfile, "w", stderr)) _exit(99);
        ai_set *s = ai_new();
        char why[2048];
        if (ai_add(s, path, why, sizeof why)) die_data(NULL, "%s", why);
        ai_close(s);
        exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    FILE *f = fopen(errfile, "r");
    size_t n = f ? fread(err, 1, errlen - 1, f) : 0;
    err[n] = 0;
    if (f) fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* exit 1, one line "arrayin: PATH: array 'layer_0': WHY..." */
static void expect_refused(const char *path, const char *why, const char *name) {
    char err[4096], want[512];
    int st = add_in_child(path, err, sizeof err);
    snprintf(want, sizeof want, "test_arrayin: %s: array 'layer_0': %s", path, why);
    char *nl = strchr(err, '\n');
    int one_line = nl && nl[1] == 0;
    ok(st == 1 && one_line && !strncmp(err, want, strlen(want)), name);
    if (!(st == 1 && one_line && !strncmp(err, want, strlen(want)))) {
        for (char *p = err; *p; p++)
            if (*p == '\n') *p = ' ';
        printf("# status %d, stderr: %.300s\n", st, err);
    }
}

int main(void) {
    cli_init("test_arrayin");
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/arrayin-XXXXXX", t && *t && strlen(t) < 40 ? t : "/tmp");
    if (!mkdtemp(dir)) return 1;
    float v[8] = {1, 0, 0.5f, 0.5f, 1, 0, 0.25f, 0.75f};
    unsigned char b[512];
    char path[128];

    /* a valid member [2,2,2] is read back exactly */
    const char *good = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 2, 2), }   \n";
    snprintf(path, sizeof path, "%s/good.npz", dir);
    write_npz(path, b, npy(b, 1, good, v, 8), 1);
    ai_set *s = ai_new();
    char why[2048];
    int added = ai_add(s, path, why, sizeof why) == 0;
    double out[8];
    int64_t lead[1] = {0};
    int same = added && ai_count(s) == 1 && ai_rank(ai_at(s, 0)) == 4 && ai_read_block(ai_at(s, 0), lead, out, why, sizeof why) == 0;
    for (int i = 0; i < 8; i++) same &= out[i] == v[i];
    ok(same, "a valid deflated member [1,2,2,2] reads back exactly");
    ai_close(s);

    /* header-length field 0 and 1 (version 1: the 10-byte prefix is the whole header buffer) */
    const char *hdrs[] = {"", "{"};
    for (int k = 0; k < 2; k++) {
        char name[128];
        snprintf(path, sizeof path, "%s/hl%d.npz", dir, k);
        write_npz(path, b, npy(b, 1, hdrs[k], v, 8), 0);
        snprintf(name, sizeof name, "header-length field %d (version 1): refused, no overflow", k);
        expect_refused(path, ".npy header lacks descr, fortran_order or shape", name);
    }
    snprintf(path, sizeof path, "%s/v2hl0.npz", dir);
    write_npz(path, b, npy(b, 2, "", v, 8), 0);
    expect_refused(path, ".npy header lacks descr, fortran_order or shape", "header-length field 0 (version 2): refused");
    snprintf(path, sizeof path, "%s/v9.npz", dir);
    size_t n = npy(b, 1, good, v, 8);
    b[6] = 9;
    write_npz(path, b, n, 0);
    expect_refused(path, "unsupported .npy version 9", "version 9: refused");
    snprintf(path, sizeof path, "%s/short.npz", dir);
    write_npz(path, b, 7, 0);
    expect_refused(path, "truncated or corrupt member", "a 7-byte member: refused");

    const char *maybe = "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1, 2, 2, 2), }   \n";
    snprintf(path, sizeof path, "%s/maybe.npz", dir);
    write_npz(path, b, npy(b, 1, maybe, v, 8), 0);
    expect_refused(path, "fortran_order is 'Maybe', not True or False", "fortran_order: Maybe is refused");
    const char *truex = "{'descr': '<f4', 'fortran_order': Truex, 'shape': (1, 2, 2, 2), }   \n";
    snprintf(path, sizeof path, "%s/truex.npz", dir);
    write_npz(path, b, npy(b, 1, truex, v, 8), 0);
    expect_refused(path, "fortran_order is 'Truex', not True or False", "fortran_order: Truex is refused");

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) {}
    return n_fail != 0;
}

/* test_hashcache: cli_sha256_file's cache of large files' hashes (hashcache.h) gives the file's
 * real SHA-256 (against nettle over the bytes in memory), is used while the file's identity and
 * times hold, is not used after an in-place edit that keeps the size and restores the mtime, is
 * not written for racy, small or disabled cases. About 5 s (it waits out the racy window). */
#include "core/hashcache.h"
#include "core/util.h"
#include <dirent.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { BYTES = HASHCACHE_MIN_BYTES + 4097 };
static int t, bad;
static void check(int ok, const char *name) {
    bad += !ok;
    printf("%sok %d - %s\n", ok ? "" : "not ", ++t, name);
}

static void reference(const unsigned char *buf, size_t n, char hex[65]) {
    struct sha256_ctx c;
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_init(&c);
    sha256_update(&c, n, buf);
    sha256_digest(&c, sizeof d, d);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) sprintf(hex + 2 * i, "%02x", d[i]);
}

static int write_file(const char *path, const unsigned char *buf, size_t n) {
    FILE *f = fopen(path, "wb");
    return f && fwrite(buf, 1, n, f) == n && fclose(f) == 0;
}

/* Entries in the cache directory (temporary files not counted); 0 when it does not exist. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.' && !strstr(e->d_name, ".tmp");
    if (d) closedir(d);
    return n;
}

int main(void) {
    char dir[] = "/tmp/test_hashcacheXXXXXX", cache[256], file[256], small[256], hex[65], ref[65], ref2[65];
    if (!mkdtemp(dir)) return 1;
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(file, sizeof file, "%s/big.bin", dir);
    snprintf(small, sizeof small, "%s/small.bin", dir);
    setenv("ATTNCODA_HASH_CACHE", cache, 1);
    unsigned char *buf = malloc(BYTES);
    for (size_t i = 0; i < BYTES; i++) buf[i] = (unsigned char)(i * 2654435761u >> 13);
    reference(buf, BYTES, ref);
    check(write_file(file, buf, BYTES) && write_file(small, buf, 1000), "files written");

    check(cli_sha256_file(file, hex) == 0 && !strcmp(hex, ref), "a fresh file: its real hash");
    check(count_entries(cache) <= 0, "changed within 2 s: not remembered (racy)");
    sleep(3);
    check(cli_sha256_file(file, hex) == 0 && !strcmp(hex, ref) && count_entries(cache) == 1,
          "after 3 s: the real hash, and one entry");
    check(cli_sha256_file(small, hex) == 0 && count_entries(cache) == 1, "a small file: no entry");

    /* The entry is what answers: a planted hash comes back while the stat data match. */
    char entry[4096], line[512] = "", *sp = NULL;
    struct stat st;
    stat(file, &st);
    snprintf(entry, sizeof entry, "%s/%llx-%llx", cache, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    FILE *e = fopen(entry, "r");
    int read_ok = e && fgets(line, sizeof line, e);
    if (e) fclose(e);
    check(read_ok && (sp = strrchr(line, ' ')) && !strncmp(sp + 1, ref, 64), "the entry holds the hash");
    if (sp) memset(sp + 1, 'a', 64);
    e = fopen(entry, "w");
    check(e && fputs(line, e) >= 0 && fclose(e) == 0 && cli_sha256_file(file, hex) == 0 && hex[0] == 'a' &&
              hex[63] == 'a', "a matching entry is used without reading the file");

    /* Edit one byte in place, same size, mtime put back: the ctime moved, the hash is recomputed. */
    buf[BYTES / 2] ^= 1;
    reference(buf, BYTES, ref2);
    int fd = open(file, O_WRONLY);
    check(fd >= 0 && pwrite(fd, buf + BYTES / 2, 1, BYTES / 2) == 1 && futimens(fd, (struct timespec[]){st.st_atim, st.st_mtim}) == 0 &&
              close(fd) == 0, "one byte edited, mtime restored");
    check(cli_sha256_file(file, hex) == 0 && !strcmp(hex, ref2) && strcmp(ref, ref2), "the edit is seen: the new real hash");

    setenv("ATTNCODA_HASH_CACHE", "off", 1);
    char off[256];
    snprintf(off, sizeof off, "%s/off", dir);
    check(cli_sha256_file(file, hex) == 0 && !strcmp(hex, ref2) && count_entries(off) <= 0, "ATTNCODA_HASH_CACHE=off: hashed, nothing written");

    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) bad++;
    free(buf);
    printf("1..%d\n", t);
    return bad != 0;
}

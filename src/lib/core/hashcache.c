/* hashcache: see hashcache.h. */
#include "hashcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { RACY_SECONDS = 2 };

/* The cache directory into dir (created when create is set); 0 when the cache is off. */
static int cache_dir(char *dir, size_t n, int create) {
    const char *env = getenv("ATTNCODA_HASH_CACHE");
    if (env && !strcmp(env, "off")) return 0;
    if (env && *env)
        snprintf(dir, n, "%s", env);
    else {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg)
            snprintf(dir, n, "%s/attncoda/sha256", xdg);
        else if (home && *home)
            snprintf(dir, n, "%s/.cache/attncoda/sha256", home);
        else
            return 0;
    }
    if (create)   /* each missing level; an existing one is fine */
        for (char *p = dir + 1;; p++)
            if (*p == '/' || !*p) {
                char c = *p;
                *p = 0;
                mkdir(dir, 0755);
                if (!(*p = c)) break;
            }
    return 1;
}

static int entry_path(char *path, size_t n, const struct stat *st, int create) {
    char dir[3072];
    if (st->st_size < HASHCACHE_MIN_BYTES || !cache_dir(dir, sizeof dir, create)) return 0;
    return snprintf(path, n, "%s/%llx-%llx", dir, (unsigned long long)st->st_dev, (unsigned long long)st->st_ino) <
           (int)n;
}

/* The entry's line: the stat data it answers for, then the hash. */
static void entry_line(char *line, size_t n, const struct stat *st, const char hex[65]) {
    snprintf(line, n, "%lld %lld.%09ld %lld.%09ld %s\n", (long long)st->st_size, (long long)st->st_mtim.tv_sec,
             st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, hex);
}

int hashcache_get(const struct stat *st, char hex[65]) {
    char path[4096], got[256] = "", want[256];
    if (!entry_path(path, sizeof path, st, 0)) return 0;
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(got, sizeof got, f) != NULL;
    fclose(f);
    size_t len = strlen(got);
    if (!ok || len < 66 || got[len - 1] != '\n') return 0;
    memcpy(hex, got + len - 65, 64);
    hex[64] = 0;
    for (int i = 0; i < 64; i++)
        if (!strchr("0123456789abcdef", hex[i])) return 0;
    entry_line(want, sizeof want, st, hex);
    return strcmp(got, want) == 0;
}

void hashcache_put(const struct stat *st, const char hex[65]) {
    char path[4096], tmp[4200], line[256];
    /* A file changed in the last seconds could change again within one tick of the file
     * system's clock without its times moving (git's "racy" entries): not remembered. */
    if ((long long)time(NULL) - (long long)st->st_ctim.tv_sec < RACY_SECONDS) return;
    if (!entry_path(path, sizeof path, st, 1)) return;
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    entry_line(line, sizeof line, st, hex);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    int bad = fputs(line, f) < 0;
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) unlink(tmp);
}

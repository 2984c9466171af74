/* hashcache: the SHA-256 of large input files remembered by their identity, so that a 500 MB
 * checkpoint is not read and hashed again on every run (issue 38: loading and hashing should
 * cost at most 0.5 CPU-s).
 *
 * An entry is keyed by the file's device and inode and holds its size, modification time and
 * status-change time (nanoseconds) with the hash. It is used only when all five still match the
 * open file, as git's index trusts its stat data: any write to the file changes its mtime and
 * ctime, and ctime cannot be set by a user (touch -d, cp -p and rsync -t reset mtime only).
 * Files below HASHCACHE_MIN_BYTES are always hashed, and a file whose status changed in the last
 * two seconds is not remembered (it could change again within one tick of the file system's
 * clock: git's "racy" entries).
 *
 * Where: $ATTNCODA_HASH_CACHE when set (a directory; "off" disables the cache), else
 * ${XDG_CACHE_HOME:-$HOME/.cache}/attncoda/sha256. One small file per entry, written to a
 * temporary name and renamed, so concurrent runs never see half an entry. Every failure to read
 * or write the cache is silent: the hash is then computed. */
#ifndef ATTNCODA_HASHCACHE_H
#define ATTNCODA_HASHCACHE_H
#include <sys/stat.h>

enum { HASHCACHE_MIN_BYTES = 64 << 20 };

/* 1 and hex set when the cache holds the hash of the file whose fstat is st; else 0. */
int hashcache_get(const struct stat *st, char hex[65]);
/* Remembers hex for that file (when it is large enough and the cache is on). */
void hashcache_put(const struct stat *st, const char hex[65]);

#endif

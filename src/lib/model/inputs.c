/* inputs: the id, mask, list and query-position parsers (see inputs.h), moved from extract.c.
 * Every error frees what the parser held and returns the message the program prints. */
#include "inputs.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int inputs_parse_list(const char *opt, const char *s, int n, int *idx, char *err, size_t errlen) {
    int *flag = xcalloc((size_t)n, sizeof *flag), k = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p) goto not_a_list;
        if (*end == '-') {
            p = end + 1;
            b = strtol(p, &end, 10);
            if (end == p) goto not_a_list;
        }
        if (a < 0 || b >= n || a > b) {
            free(flag);
            fail(err, errlen, "--%s: '%s' selects outside 0..%d", opt, s, n - 1);
            return UTIL_ERR_USAGE;
        }
        for (long i = a; i <= b; i++) flag[i] = 1;
        if (*end && *end != ',') goto not_a_list;
        p = *end ? end + 1 : end;
    }
    for (int i = 0; i < n; i++)
        if (flag[i]) idx[k++] = i;
    free(flag);
    if (!k) {
        fail(err, errlen, "--%s: empty selection", opt);
        return UTIL_ERR_USAGE;
    }
    return k;
not_a_list:
    free(flag);
    fail(err, errlen, "--%s: '%s' is not a list like 0,2,5-7", opt, s);
    return UTIL_ERR_USAGE;
}

/* What inputs_read_ids holds while it parses. */
typedef struct {
    char *buf;
    int *lens;
    int32_t *all;
    int nseq, cap;
    size_t nall, allcap;
} ids_parse;

static void ids_parse_free(ids_parse *ip) {
    free(ip->all);
    free(ip->lens);
    free(ip->buf);
}

/* The lines of ip->buf into lens/all (and the upstream provenance line into b). */
static int ids_lines(ids_parse *ip, int vocab, seq_batch *b, char *err, size_t errlen) {
    char *save = NULL;
    int lineno = 0;
    for (char *line = strtok_r(ip->buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (!strncmp(p, "# {", 3) && !b->upstream) b->upstream = xstrdup(p + 2);
        if (!*p || *p == '#') continue;
        if (ip->nseq == ip->cap) ip->lens = xrealloc(ip->lens, sizeof *ip->lens * (size_t)(ip->cap = ip->cap ? 2 * ip->cap : 64));
        ip->lens[ip->nseq] = 0;
        while (*p) {
            char *end;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (end == p || errno || v < INT32_MIN || v > INT32_MAX || (*end && !isspace((unsigned char)*end)))
                return fail(err, errlen, "line %d: '%.20s' is not a token id", lineno, p);
            if (v < 0 || v >= vocab)
                return fail(err, errlen, "line %d: token id %ld out of range [0, %d)", lineno, v, vocab);
            if (ip->nall == ip->allcap) ip->all = xrealloc(ip->all, sizeof *ip->all * (ip->allcap = ip->allcap ? 2 * ip->allcap : 1024));
            ip->all[ip->nall++] = (int32_t)v;
            ip->lens[ip->nseq]++;
            p = end;
            while (isspace((unsigned char)*p)) p++;
        }
        ip->nseq++;
    }
    return 0;
}

/* The sequences, padded to the longest, into b. */
static int ids_pad(const ids_parse *ip, int pad_id, int causal, seq_batch *b, char *err, size_t errlen) {
    int nseq = ip->nseq, T = 0;
    for (int s = 0; s < nseq; s++) T = ip->lens[s] > T ? ip->lens[s] : T;
    if (T < 2) return fail(err, errlen, "sequences need at least 2 tokens");
    for (int s = 0; s < nseq; s++)
        if (ip->lens[s] != T && causal)
            return fail(err, errlen, "sequence %d has %d ids, the longest has %d (causal models need equal lengths)",
                        s + 1, ip->lens[s], T);
    b->S = nseq, b->T = T;
    b->ids = xcalloc((size_t)nseq * T, sizeof *b->ids);
    b->valid = xcalloc((size_t)nseq * T, 1);
    int pad = pad_id >= 0 ? pad_id : 0;
    for (int s = 0, at = 0; s < nseq; at += ip->lens[s], s++) {
        for (int t = 0; t < T; t++) {
            b->ids[(size_t)s * T + t] = t < ip->lens[s] ? ip->all[at + t] : pad;
            b->valid[(size_t)s * T + t] = t < ip->lens[s];
        }
        b->padded |= ip->lens[s] != T;
    }
    return 0;
}

int inputs_read_ids(const char *path, int vocab, int pad_id, int causal, seq_batch *b, char *err, size_t errlen) {
    size_t len;
    ids_parse ip = {0};
    ip.buf = cli_slurp_text_err(path, &len, err, errlen);
    if (!ip.buf) return -1;
    cli_sha256_hex(ip.buf, len, b->sha);
    int rc = ids_lines(&ip, vocab, b, err, errlen);
    if (!rc && !ip.nseq) rc = fail(err, errlen, "no token ids");
    if (!rc) rc = ids_pad(&ip, pad_id, causal, b, err, errlen);
    ids_parse_free(&ip);
    if (rc) {
        free(b->upstream);
        b->upstream = NULL;
    }
    return rc;
}

uint8_t *inputs_read_mask(const char *path, int n_layer, int n_head, char *err, size_t errlen) {
    size_t len;
    char *buf = cli_slurp_text_err(path, &len, err, errlen);
    if (!buf) return NULL;
    /* a file with only comments prunes nothing; a zero-byte one is more likely a failed write */
    if (!len) {
        free(buf);
        fail(err, errlen, "empty mask file (a mask that prunes nothing still has a comment line)");
        return NULL;
    }
    uint8_t *keep = xmalloc((size_t)n_layer * n_head);
    memset(keep, 1, (size_t)n_layer * n_head);
    char *save = NULL;
    int lineno = 0, rc = 0;
    for (char *line = strtok_r(buf, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (!*p || *p == '#') continue;
        int l, h, used = 0;
        if (sscanf(p, "%d %d %n", &l, &h, &used) != 2 || p[used])
            rc = fail(err, errlen, "line %d: expected 'layer head'", lineno);
        else if (l < 0 || l >= n_layer || h < 0 || h >= n_head)
            rc = fail(err, errlen, "line %d: head %d %d outside %d layers x %d heads", lineno, l, h, n_layer, n_head);
        else
            keep[(size_t)l * n_head + h] = 0;
    }
    free(buf);
    if (rc) {
        free(keep);
        return NULL;
    }
    return keep;
}

int32_t *inputs_read_query_list(const char *path, int T, int *Q, char *err, size_t errlen) {
    size_t len;
    char *buf = cli_slurp_text_err(path, &len, err, errlen);
    if (!buf) return NULL;
    int32_t *pos = xcalloc((size_t)T, sizeof *pos);   /* flags first, then the positions in order */
    int lineno = 1, n = 0, rc = 0;
    for (char *p = buf; *p && !rc;) {
        if (*p == '\n') lineno++;
        if (isspace((unsigned char)*p)) { p++; continue; }
        if (*p == '#') { while (*p && *p != '\n') p++; continue; }
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || (*end && !isspace((unsigned char)*end) && *end != '#'))
            rc = fail(err, errlen, "line %d: '%.20s' is not a query position", lineno, p);
        else if (v < 0 || v >= T) rc = fail(err, errlen, "line %d: query position %ld outside [0, %d)", lineno, v, T);
        else if (pos[v]) rc = fail(err, errlen, "line %d: query position %ld given twice", lineno, v);
        else pos[v] = 1, n++;
        p = end;
    }
    if (!rc && !n) rc = fail(err, errlen, "no query positions");
    free(buf);
    if (rc) {
        free(pos);
        return NULL;
    }
    for (int t = 0, k = 0; t < T; t++)
        if (pos[t]) pos[k++] = t;
    *Q = n;
    return pos;
}

/* bpe_learn: the merge rule in bpe_learn.h, incrementally. Every pair keeps its count and the
 * list of pre-tokens it was ever seen in; a merge rewrites only the pre-tokens in the merged
 * pair's list, taking their old pairs out of the counts and putting their new ones in. The best
 * pair comes from a max-heap with lazy deletion: an entry is pushed whenever a pair's count
 * changes and is discarded when popped with a count that is no longer the pair's. Everything is
 * integer arithmetic in a fixed order, so the result depends on the text alone. */
#include "bpe_learn.h"
#include "core/util.h"
#include "tok.h"
#include "tok_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- state */

typedef struct {
    int32_t *sym;    /* current symbols */
    uint32_t n;      /* number of symbols */
    int64_t freq;
} word;

typedef struct {
    int32_t a, b;
    int64_t count;
    int32_t *where;  /* words the pair was seen in (each word once per appearance run) */
    uint32_t nwhere, capwhere;
} pair;

typedef struct { int64_t count; int32_t a, b; } hent;

typedef struct {
    word *w;
    size_t nw, capw;
    tok_map wmap;       /* pre-token bytes -> word index */
    pair *p;
    size_t np, capp;
    tok_map pmap;       /* the 8 bytes of (a, b) -> pair index */
    hent *heap;
    size_t nh, caph;
    tok_map tmap;       /* token bytes -> id, for the one-id-per-string rule */
    bpe_vocab *v;
    int32_t *stamp;     /* per word: the last merge that rewrote it */
    uint32_t *touched;  /* pairs whose count changed in this merge */
    size_t ntouched, captouched;
    int32_t *pstamp;    /* per pair: the last merge that put it in touched */
    size_t cappstamp;
    const char *full;   /* set when the text outgrows the 32-bit indices: what bpe_learn reports */
} learner;

/* A pair as a tok_map key. */
static int32_t pair_get(const learner *L, int32_t a, int32_t b) {
    int32_t key[2] = {a, b};
    return tok_map_get(&L->pmap, (const char *)key, sizeof key);
}

/* ---------------------------------------------------------------- counting */

static void count_word(const char *s, size_t n, void *ctx) {
    learner *L = ctx;
    if (L->full) return;
    int32_t i = tok_map_get(&L->wmap, s, n);
    if (i >= 0) {
        L->w[i].freq++;
        return;
    }
    if (L->nw == L->capw) L->w = xrealloc(L->w, (L->capw = L->capw ? 2 * L->capw : 4096) * sizeof *L->w);
    if (n > UINT32_MAX || L->nw >= INT32_MAX) { L->full = "bpe_learn: text too large"; return; }
    word *w = &L->w[L->nw];
    *w = (word){xmalloc(n * sizeof(int32_t)), (uint32_t)n, 1};
    for (size_t j = 0; j < n; j++) w->sym[j] = (unsigned char)s[j];
    tok_map_put(&L->wmap, s, n, (int32_t)L->nw);
    L->nw++;
}

/* The index of pair (a, b), made when new; -1 (and L->full set) when there is no room. */
static int64_t pair_index(learner *L, int32_t a, int32_t b) {
    int32_t i = pair_get(L, a, b);
    if (i >= 0) return i;
    if (L->np >= INT32_MAX) { L->full = "bpe_learn: too many pairs"; return -1; }
    if (L->np == L->capp) L->p = xrealloc(L->p, (L->capp = L->capp ? 2 * L->capp : 4096) * sizeof *L->p);
    L->p[L->np] = (pair){a, b, 0, NULL, 0, 0};
    int32_t key[2] = {a, b};
    tok_map_put(&L->pmap, (const char *)key, sizeof key, (int32_t)L->np);
    return (int64_t)L->np++;
}

static void note_word(pair *p, int32_t w) {
    if (p->nwhere && p->where[p->nwhere - 1] == w) return;
    if (p->nwhere == p->capwhere) p->where = xrealloc(p->where, (p->capwhere = p->capwhere ? 2 * p->capwhere : 4) * sizeof *p->where);
    p->where[p->nwhere++] = w;
}

static void touch(learner *L, uint32_t pi, int32_t merge) {
    if (L->np > L->cappstamp) {
        size_t old = L->cappstamp;
        L->cappstamp = L->capp;
        L->pstamp = xrealloc(L->pstamp, L->cappstamp * sizeof *L->pstamp);
        for (size_t i = old; i < L->cappstamp; i++) L->pstamp[i] = -1;
    }
    if (L->pstamp[pi] == merge) return;
    L->pstamp[pi] = merge;
    if (L->ntouched == L->captouched)
        L->touched = xrealloc(L->touched, (L->captouched = L->captouched ? 2 * L->captouched : 1024) * sizeof *L->touched);
    L->touched[L->ntouched++] = pi;
}

/* Adds sign x freq for every adjacent pair of word wi to the counts (stops when L->full). */
static void add_pairs(learner *L, int32_t wi, int sign, int32_t merge) {
    const word *w = &L->w[wi];
    for (uint32_t i = 0; i + 1 < w->n; i++) {
        int64_t pi = pair_index(L, w->sym[i], w->sym[i + 1]);
        if (pi < 0) return;
        L->p[pi].count += sign * w->freq;
        if (sign > 0) note_word(&L->p[pi], wi);
        if (merge >= 0) touch(L, (uint32_t)pi, merge);
    }
}

/* ---------------------------------------------------------------- heap: highest count, then smallest (a, b) */

static int hent_before(const hent *x, const hent *y) {
    if (x->count != y->count) return x->count > y->count;
    if (x->a != y->a) return x->a < y->a;
    return x->b < y->b;
}

static void heap_push(learner *L, hent e) {
    if (L->nh == L->caph) L->heap = xrealloc(L->heap, (L->caph = L->caph ? 2 * L->caph : 4096) * sizeof *L->heap);
    size_t i = L->nh++;
    while (i > 0 && hent_before(&e, &L->heap[(i - 1) / 2])) {
        L->heap[i] = L->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    L->heap[i] = e;
}

static hent heap_pop(learner *L) {
    hent top = L->heap[0], last = L->heap[--L->nh];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= L->nh) break;
        if (c + 1 < L->nh && hent_before(&L->heap[c + 1], &L->heap[c])) c++;
        if (!hent_before(&L->heap[c], &last)) break;
        L->heap[i] = L->heap[c];
        i = c;
    }
    if (L->nh) L->heap[i] = last;
    return top;
}

static void push_if_repeated(learner *L, uint32_t pi) {
    const pair *p = &L->p[pi];
    if (p->count >= 2) heap_push(L, (hent){p->count, p->a, p->b});
}

/* The best pair whose heap entry is current; -1 when no pair occurs twice. */
static long best_pair(learner *L) {
    while (L->nh) {
        hent e = heap_pop(L);
        long pi = pair_get(L, e.a, e.b);
        if (pi >= 0 && L->p[pi].count == e.count) return pi;
    }
    return -1;
}

/* ---------------------------------------------------------------- merging */

static int32_t token_for(learner *L, int32_t a, int32_t b) {
    bpe_vocab *v = L->v;
    size_t n = (size_t)v->plen[a] + v->plen[b];
    char *s = xmalloc(n);
    memcpy(s, v->piece[a], v->plen[a]);
    memcpy(s + v->plen[a], v->piece[b], v->plen[b]);
    int32_t id = tok_map_get(&L->tmap, s, n);
    if (id >= 0) {
        free(s);
        return (int32_t)id;
    }
    int32_t nid = v->n_ids++;
    v->piece[nid] = s;
    v->plen[nid] = (uint32_t)n;
    tok_map_put(&L->tmap, s, n, nid);
    return nid;
}

/* Rewrites word wi with (a, b) -> nid, left to right; 0 when the word holds no (a, b). */
static int merge_word(word *w, int32_t a, int32_t b, int32_t nid) {
    uint32_t o = 0, found = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        if (i + 1 < w->n && w->sym[i] == a && w->sym[i + 1] == b) {
            w->sym[o++] = nid;
            i++;
            found = 1;
        } else {
            w->sym[o++] = w->sym[i];
        }
    }
    w->n = o;
    return (int)found;
}

static int has_pair(const word *w, int32_t a, int32_t b) {
    for (uint32_t i = 0; i + 1 < w->n; i++)
        if (w->sym[i] == a && w->sym[i + 1] == b) return 1;
    return 0;
}

static void do_merge(learner *L, uint32_t pi, int32_t merge) {
    int32_t a = L->p[pi].a, b = L->p[pi].b, nid = token_for(L, a, b);
    bpe_vocab *v = L->v;
    v->left[merge] = a;
    v->right[merge] = b;
    v->made[merge] = nid;
    /* the merged pair's own list is never appended to while it is walked: new pairs hold nid */
    const int32_t *ws = L->p[pi].where;
    uint32_t nws = L->p[pi].nwhere;
    L->ntouched = 0;
    for (uint32_t j = 0; j < nws && !L->full; j++) {
        int32_t wi = ws[j];
        word *w = &L->w[wi];
        if (L->stamp[wi] == merge || !has_pair(w, a, b)) continue;
        L->stamp[wi] = merge;
        add_pairs(L, wi, -1, merge);
        merge_word(w, a, b, nid);
        add_pairs(L, wi, +1, merge);
    }
    for (size_t t = 0; t < L->ntouched; t++) push_if_repeated(L, L->touched[t]);
}

/* ---------------------------------------------------------------- entry point */

int bpe_learn(const char *text, size_t len, int max_merges, bpe_vocab *v, char *err, size_t errlen) {
    if (max_merges < 0) max_merges = 0;
    learner L;
    memset(&L, 0, sizeof L);
    memset(v, 0, sizeof *v);
    L.v = v;
    tok_map_init(&L.wmap, 1024);
    tok_map_init(&L.pmap, 1024);
    tok_map_init(&L.tmap, 1024);
    int rc = tok_gpt2_pretokenize(text, len, count_word, &L, err, errlen);
    if (rc == 0 && !L.full) {
        size_t cap = BPE_FIRST_ID + (size_t)max_merges;
        v->piece = xcalloc(cap, sizeof *v->piece);
        v->plen = xcalloc(cap, sizeof *v->plen);
        v->left = xmalloc(((size_t)max_merges + 1) * sizeof *v->left);
        v->right = xmalloc(((size_t)max_merges + 1) * sizeof *v->right);
        v->made = xmalloc(((size_t)max_merges + 1) * sizeof *v->made);
        for (int c = 0; c < 256; c++) {
            v->piece[c] = xmalloc(1);
            v->piece[c][0] = (char)c;
            v->plen[c] = 1;
            tok_map_put(&L.tmap, v->piece[c], 1, c);
        }
        v->n_ids = BPE_FIRST_ID;
        L.stamp = xmalloc((L.nw ? L.nw : 1) * sizeof *L.stamp);
        for (size_t i = 0; i < L.nw && !L.full; i++) {
            L.stamp[i] = -1;
            add_pairs(&L, (int32_t)i, +1, -1);
        }
        for (size_t i = 0; i < L.np; i++) push_if_repeated(&L, (uint32_t)i);
        long pi;
        while (!L.full && v->n_merges < max_merges && (pi = best_pair(&L)) >= 0) {
            do_merge(&L, (uint32_t)pi, v->n_merges);
            v->n_merges++;
        }
    }
    for (size_t i = 0; i < L.nw; i++) free(L.w[i].sym);
    for (size_t i = 0; i < L.np; i++) free(L.p[i].where);
    free(L.w);
    free(L.p);
    free(L.heap);
    tok_map_free(&L.wmap);
    tok_map_free(&L.pmap);
    tok_map_free(&L.tmap);
    free(L.stamp);
    free(L.touched);
    free(L.pstamp);
    if (rc == 0 && L.full) {
        snprintf(err, errlen, "%s", L.full);
        bpe_vocab_free(v);
        rc = -2;
    }
    return rc;
}

void bpe_vocab_free(bpe_vocab *v) {
    if (v->piece)
        for (int i = 0; i < v->n_ids; i++) free(v->piece[i]);
    free(v->piece);
    free(v->plen);
    free(v->left);
    free(v->right);
    free(v->made);
    memset(v, 0, sizeof *v);
}

/* gemm_half: F16/BF16 weights widened block by block (see gemm_half.h). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/util.h"
#include "gemm.h"
#include "gemm_half.h"
#include "half.h"

typedef struct {
    uintptr_t lo, hi;             /* the reserved range [lo, hi), 4 bytes per element */
    const unsigned char *data;    /* a half view's values */
    half_kind kind;               /* 0: a transposed view of w */
    const float *w;
    size_t in, out;
} view;

static view *views;
static int nviews;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static const float *view_add(size_t n, view v) {
    size_t bytes = sizeof(float) * (n ? n : 1);
    void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return NULL;
    v.lo = (uintptr_t)p, v.hi = (uintptr_t)p + bytes;
    pthread_mutex_lock(&lock);
    views = xrealloc(views, sizeof *views * (size_t)(nviews + 1));
    views[nviews++] = v;
    pthread_mutex_unlock(&lock);
    return p;
}

/* The view whose range holds p, copied into *v (ranges never overlap); 0 when none does. */
static int view_at(const float *p, view *v) {
    uintptr_t a = (uintptr_t)p;
    int found = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nviews && !found; i++)
        if (a >= views[i].lo && a < views[i].hi) *v = views[i], found = 1;
    pthread_mutex_unlock(&lock);
    return found;
}

const float *half_view(const unsigned char *data, size_t n, half_kind kind) {
    return view_add(n, (view){.data = data, .kind = kind});
}

const float *xposed_view(const float *w, size_t in, size_t out) {
    return view_add(in * out, (view){.kind = 0, .w = w, .in = in, .out = out});
}

int xposed_find(const float *p, const float **col, int *ld) {
    view v;
    if (!view_at(p, &v) || v.kind != 0) return 0;
    size_t e = ((uintptr_t)p - v.lo) / sizeof(float);
    if (e % v.in) return 0;
    *col = v.w + e / v.in;
    *ld = (int)v.out;
    return 1;
}

void half_view_drop(const float *v) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nviews; i++)
        if (views[i].lo == (uintptr_t)v) {
            munmap((void *)views[i].lo, views[i].hi - views[i].lo);
            views[i] = views[--nviews];
            break;
        }
    if (!nviews) {
        free(views);
        views = NULL;
    }
    pthread_mutex_unlock(&lock);
}

int half_find(const float *p, const unsigned char **data, half_kind *kind) {
    view v;
    if (!view_at(p, &v) || v.kind == 0) return 0;
    *data = v.data + ((uintptr_t)p - v.lo) / sizeof(float) * 2;
    *kind = v.kind;
    return 1;
}

void half_widen(float *dst, const unsigned char *src, size_t n, half_kind kind) {
    for (size_t i = 0; i < n; i++) {
        uint16_t h = (uint16_t)(src[2 * i] | src[2 * i + 1] << 8);
        dst[i] = kind == HALF_BF16 ? half_bf16_to_f32(h) : half_f16_to_f32(h);
    }
}

void half_copy(float *dst, const float *src, size_t n) {
    const unsigned char *h;
    half_kind k;
    if (half_find(src, &h, &k))
        half_widen(dst, h, n, k);
    else
        memcpy(dst, src, sizeof(float) * n);
}

/* Rows of W per widened block: wide enough for the kernel's vectors across j, small enough that
 * the buffer (ROWS·K floats) stays a few MB for K up to ~14k. */
enum { ROWS = 64 };

void gemm_half_xwt(int M, int N, int K, const float *X, int ldx, const unsigned char *W, half_kind kind,
                   float *C, int ldc) {
    float *buf = xmalloc(sizeof(float) * (size_t)ROWS * (size_t)(K ? K : 1));
    for (int r0 = 0; r0 < N; r0 += ROWS) {
        int n = N - r0 < ROWS ? N - r0 : ROWS;
        half_widen(buf, W + (size_t)r0 * (size_t)K * 2, (size_t)n * (size_t)K, kind);
        gemm_f32(0, 1, M, n, K, 1.0f, X, ldx, buf, K, 0.0f, C + r0, ldc);
    }
    free(buf);
}

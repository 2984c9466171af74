/* posenc: position-encoding names and formulas, RoPE frequencies and the q/k row permutation
 * (see posenc.h). */
#include "posenc.h"
#include "core/detmath.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const NAMES[POS_COUNT] = {"learned", "sinusoidal", "rope", "rope-ntk", "alibi", "none"};

const char *posenc_name(int pos) { return pos >= 0 && pos < POS_COUNT ? NAMES[pos] : "?"; }

int posenc_parse(const char *s) {
    for (int i = 0; i < POS_COUNT; i++)
        if (!strcmp(s, NAMES[i])) return i;
    return -1;
}

double posenc_ntk_theta(double base, double s, int dim) {
    return base * det_pow(s, (double)dim / (double)(dim - 2));
}

double posenc_alibi_slope(int h, int H) {
    int n = 1;
    while (n * 2 <= H) n *= 2;
    if (h < n) return det_pow(2.0, -8.0 * (h + 1) / n);
    return det_pow(2.0, -8.0 * (2 * (h - n) + 1) / (2 * n));   /* odd steps of the 2n ladder */
}

double posenc_sinusoid(int t, int j, int d) {
    double ang = (double)t * det_pow(10000.0, -(double)(j - j % 2) / (double)d);
    return j % 2 ? det_cos(ang) : det_sin(ang);
}

void model_rope_default(float *inv, int dim, double theta) {
    for (int i = 0; i < dim / 2; i++) {
        float e = (float)(2 * i) / (float)dim;
        inv[i] = 1.0f / (float)det_pow((float)theta, e);
    }
}

/* §2.4: the low band is divided by factor, the high band kept, the medium band (bounds
 * inclusive) interpolated with the smooth factor computed from the unmodified frequency. */
void model_rope_llama3(float *inv, int dim, double factor, double low, double high, double orig) {
    float lo_wl = (float)(orig / low), hi_wl = (float)(orig / high);
    for (int i = 0; i < dim / 2; i++) {
        float f = inv[i], wl = 2.0f * (float)M_PI / f;
        if (wl < hi_wl) continue;
        if (wl > lo_wl) {
            inv[i] = f / (float)factor;
            continue;
        }
        float smooth = ((float)orig / wl - (float)low) / (float)(high - low);
        inv[i] = (1.0f - smooth) * f / (float)factor + smooth * f;
    }
}

void llama2c_permute_qk(float *w, int n_head, int head_dim, long cols)
{
    int half = head_dim / 2;
    float *tmp = malloc((size_t)head_dim * cols * sizeof *tmp);
    for (int h = 0; h < n_head; h++) {
        float *blk = w + (size_t)h * head_dim * cols;
        for (int i = 0; i < half; i++)
            for (int j = 0; j < 2; j++)
                memcpy(tmp + (size_t)(j * half + i) * cols, blk + (size_t)(2 * i + j) * cols,
                       cols * sizeof *tmp);
        memcpy(blk, tmp, (size_t)head_dim * cols * sizeof *tmp);
    }
    free(tmp);
}

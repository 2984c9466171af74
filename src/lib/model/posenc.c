/* posenc: position-encoding names and formulas (see posenc.h). */
#include "posenc.h"
#include "core/detmath.h"
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

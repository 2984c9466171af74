/* train_synth: synthetic trigger -> copy windows (see train_synth.h). */
#include "train_synth.h"
#include "cli.h"
#include <stdlib.h>

/* Fill s[0..n-1]: text bytes, and at each position i >= 1 with probability rate (and room for
 * the copy) a trigger followed by the byte the task asks for. */
static void synth_stream(const unsigned char *text, size_t len, size_t start, int n, const tr_synth *sy,
                         gsl_rng *rng, unsigned char *s) {
    int last[64];                       /* position after the latest trigger of each kind, or -1 */
    for (int k = 0; k < 64; k++) last[k] = -1;
    size_t src = start;
    for (int i = 0; i < n;) {
        if (i >= 1 && i + 1 < n && gsl_rng_uniform(rng) < sy->rate) {
            int k = (int)gsl_rng_uniform_int(rng, (unsigned long)sy->triggers);
            s[i] = (unsigned char)(TR_SYNTH_TRIGGER0 + k);
            unsigned char copy;
            if (sy->task == TR_SYNTH_BACKCOPY) copy = s[i - 1];
            else copy = last[k] >= 0 ? s[last[k]] : text[src < len ? src++ : len - 1];
            s[i + 1] = copy;
            last[k] = i + 1;
            i += 2;
        } else {
            s[i++] = text[src < len ? src++ : len - 1];
        }
    }
}

void tr_synth_window(const unsigned char *text, size_t len, size_t start, int T, const tr_synth *sy,
                     gsl_rng *rng, int32_t bos, int32_t *ids, int32_t *tg) {
    unsigned char *s = xmalloc((size_t)T);
    synth_stream(text, len, start, T, sy, rng, s);
    ids[0] = bos;
    for (int t = 0; t < T; t++) {
        if (t > 0) ids[t] = s[t - 1];
        tg[t] = s[t];
    }
    free(s);
}

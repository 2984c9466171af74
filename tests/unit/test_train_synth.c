/* Unit tests of the synthetic trigger -> copy windows (train_synth.h): the window layout (BOS,
 * then the stream shifted by one as targets), the trigger share, the copy rule of each task,
 * that text bytes appear in their original order, and reproducibility from the seed. */
#include "cli.h"
#include "train_synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(name, cond) do { if (cond) printf("ok - %s\n", name); else { printf("not ok - %s\n", name); failures++; } } while (0)

enum { T = 512, NWIN = 200, BOS = 256 };

#define SRC(i) (tokens ? tokens[i] : (int32_t)text[i])

static int is_trigger(int32_t x, int k) { return x >= TR_SYNTH_TRIGGER0 && x < TR_SYNTH_TRIGGER0 + k; }

/* Runs NWIN windows of one task; checks every rule on the target stream tg (= s). */
/* tokens == NULL: the byte windows of text; else the token windows of tokens (same length). */
static void check_task(const unsigned char *text, const int32_t *tokens, size_t len, int task, int ntrig, int rules) {
    static const int offset[6] = {1, -1, 2, -2, 3, -3};   /* docs/TRAIN.md's table, restated */
    tr_synth sy = {task, 0.05, ntrig, rules};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    int32_t ids[T], tg[T];
    long trig = 0, pos = 0, layout_ok = 1, copy_ok = 1, text_ok = 1, recalls = 0, by_rule[6] = {0};
    for (int w = 0; w < NWIN; w++) {
        size_t start = gsl_rng_uniform_int(rng, (unsigned long)(len - T));
        if (tokens) tr_synth_window_ids(tokens, len, start, T, &sy, rng, BOS, ids, tg);
        else tr_synth_window(text, len, start, T, &sy, rng, BOS, ids, tg);
        if (ids[0] != BOS) layout_ok = 0;
        for (int t = 1; t < T; t++) if (ids[t] != tg[t - 1]) layout_ok = 0;
        int last[64];
        for (int k = 0; k < 64; k++) last[k] = -1;
        size_t src = start;
        for (int t = 0; t < T; t++) {
            pos++;
            if (is_trigger(tg[t], ntrig)) {
                int k = tg[t] - TR_SYNTH_TRIGGER0;
                trig++;
                if (t == 0 || t + 1 >= T) { copy_ok = 0; continue; }
                /* last[k]: the previous trigger of kind k; mixed: kind k follows rule k % rules */
                int rule = task == TR_SYNTH_MIXED ? k % rules : 0, j = last[k], at = j + offset[rule];
                int has = task != TR_SYNTH_BACKCOPY && j >= 0 && at >= 0 && at < t;
                int32_t want = task == TR_SYNTH_BACKCOPY ? tg[t - 1] : has ? tg[at] : SRC(src);
                if (has) recalls++, by_rule[rule]++;
                if (tg[t + 1] != want) copy_ok = 0;
                if (task != TR_SYNTH_BACKCOPY && !has) src++;
                last[k] = t;
                t++;
                pos++;
            } else {
                if (tg[t] != SRC(src)) text_ok = 0;
                src++;
            }
        }
    }
    gsl_rng_free(rng);
    double share = (double)trig / pos;
    char name[128];
    const char *kind = tokens ? "tokens" : "bytes";
    snprintf(name, sizeof name, "%s, task %d: BOS then the stream shifted by one", kind, task);
    CHECK(name, layout_ok);
    snprintf(name, sizeof name, "%s, task %d: the byte after every trigger follows the copy rule", kind, task);
    CHECK(name, copy_ok);
    snprintf(name, sizeof name, "%s, task %d: the other bytes are the text in order", kind, task);
    CHECK(name, text_ok);
    /* a position is a trigger with p = 0.05 unless the one before was: share ~ 0.05 / 1.05 */
    snprintf(name, sizeof name, "%s, task %d: trigger share %.4f near 0.0476", kind, task, share);
    CHECK(name, share > 0.043 && share < 0.052);
    snprintf(name, sizeof name, "%s, task %d: repeated triggers occur", kind, task);
    if (task != TR_SYNTH_BACKCOPY) CHECK(name, recalls > 1000);
    if (task == TR_SYNTH_MIXED) {
        long least = by_rule[0];
        for (int r = 1; r < rules; r++) least = by_rule[r] < least ? by_rule[r] : least;
        snprintf(name, sizeof name, "%s, mixed with %d rules: every rule copies (fewest %ld)", kind, rules, least);
        CHECK(name, least > 150);
    }
}

int main(void) {
    size_t len = 20000;
    unsigned char *text = xmalloc(len);
    for (size_t i = 0; i < len; i++) text[i] = (unsigned char)('a' + (i * 7 + i / 13) % 26);
    check_task(text, NULL, len, TR_SYNTH_BACKCOPY, 4, 3);
    check_task(text, NULL, len, TR_SYNTH_RECALL, 4, 3);
    check_task(text, NULL, len, TR_SYNTH_MIXED, 4, 3);
    check_task(text, NULL, len, TR_SYNTH_MIXED, 12, 6);
    /* a BPE stream: ids 257.. (learned tokens) and ASCII bytes, never a trigger id */
    int32_t *tokens = xmalloc(sizeof(int32_t) * len), *bytes = xmalloc(sizeof(int32_t) * len);
    for (size_t i = 0; i < len; i++) {
        tokens[i] = i % 3 ? 257 + (int32_t)((i * 31 + i / 7) % 1900) : text[i];
        bytes[i] = text[i];
    }
    check_task(NULL, tokens, len, TR_SYNTH_BACKCOPY, 4, 3);
    check_task(NULL, tokens, len, TR_SYNTH_RECALL, 4, 3);
    check_task(NULL, tokens, len, TR_SYNTH_MIXED, 4, 3);
    check_task(NULL, tokens, len, TR_SYNTH_MIXED, 12, 6);
    tr_synth tsy = {TR_SYNTH_RECALL, 0.05, 4, 3};
    CHECK("a stream without triggers: none found", tr_synth_find_trigger(tokens, len, &tsy) == -1);
    tokens[777] = TR_SYNTH_TRIGGER0 + 3;
    CHECK("the first trigger id is found at its position", tr_synth_find_trigger(tokens, len, &tsy) == 777);
    tsy.triggers = 3;
    CHECK("an id past the last trigger kind is not a trigger", tr_synth_find_trigger(tokens, len, &tsy) == -1);

    tr_synth sy = {TR_SYNTH_RECALL, 0.2, 3, 3};
    int32_t a[2][T], b[2][T];
    for (int r = 0; r < 2; r++) {
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, 11);
        tr_synth_window(text, len, 100, T, &sy, rng, BOS, a[r], b[r]);
        gsl_rng_free(rng);
    }
    CHECK("same seed, same window", !memcmp(a[0], a[1], sizeof a[0]) && !memcmp(b[0], b[1], sizeof b[0]));
    /* the byte windows are the token windows of the same bytes: one copy rule for both */
    int32_t c[2][T];
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    tr_synth_window_ids(bytes, len, 100, T, &sy, rng, BOS, c[0], c[1]);
    gsl_rng_free(rng);
    CHECK("bytes as tokens: the same window", !memcmp(a[0], c[0], sizeof a[0]) && !memcmp(b[0], c[1], sizeof b[0]));
    free(text);
    free(tokens);
    free(bytes);
    printf("1..%d\n", 47);
    return failures != 0;
}

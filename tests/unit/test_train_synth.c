/* Unit tests of the synthetic trigger -> copy windows (train_synth.h): the window layout (BOS,
 * then the stream shifted by one as targets), the trigger share, the copy rule of each task,
 * that text bytes appear in their original order, and reproducibility from the seed. */
#include "cli/cli.h"
#include "train/train_synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(name, cond) do { if (cond) printf("ok - %s\n", name); else { printf("not ok - %s\n", name); failures++; } } while (0)

enum { T = 512, NWIN = 200, BOS = 256 };

#define SRC(i) (tokens ? tokens[i] : (int32_t)text[i])

static int is_trigger(int32_t x, int k) { return x >= TR_SYNTH_TRIGGER0 && x < TR_SYNTH_TRIGGER0 + k; }

/* chain != NULL: pairs[a * pairs_V + b] says whether b follows a somewhere in the stream */
static const tr_bigram *chain;
static unsigned char *pairs;
static int pairs_V;

static void use_chain(const tr_bigram *bg, const unsigned char *text, const int32_t *tokens, size_t len, int V) {
    chain = bg;
    free(pairs);
    pairs = NULL;
    if (!bg) return;
    pairs_V = V;
    pairs = xcalloc((size_t)V * V, 1);
    for (size_t i = 0; i + 1 < len; i++) pairs[(size_t)SRC(i) * V + SRC(i + 1)] = 1;
}

/* The carrier's next item: the text's item at src, or with a chain any successor of prev. */
static int carrier_ok(const unsigned char *text, const int32_t *tokens, size_t src, int32_t prev, int32_t x) {
    if (!chain) return x == SRC(src);
    return prev < 0 || pairs[(size_t)prev * pairs_V + x];
}

/* Runs NWIN windows of one task; checks every rule on the target stream tg (= s). */
/* tokens == NULL: the byte windows of text; else the token windows of tokens (same length). */
/* depths, two-step recall (docs/TRAIN.md, restated): y = the item after the previous trigger of
 * the kind (at j), then the item after the latest occurrence of y at or before j; -1: none. */
static int32_t two_step(const int32_t *tg, int t, int j) {
    if (j < 0 || j + 1 >= t) return -1;
    for (int m = j; m >= 0; m--)
        if (tg[m] == tg[j + 1]) return tg[m + 1];
    return -1;
}

/* The item the task asks for after a trigger of kind k at t (previous one of the kind at j), or
 * -1 when the rule has nothing to copy; *rule: the rule (mixed) or depth (depths) it used. */
static int32_t want_copy(int task, const int32_t *tg, int t, int j, int k, int rules, int *rule) {
    static const int offset[6] = {1, -1, 2, -2, 3, -3};   /* docs/TRAIN.md's table, restated */
    *rule = task == TR_SYNTH_MIXED ? k % rules : task == TR_SYNTH_DEPTHS ? k % 3 : 0;
    if (task == TR_SYNTH_BACKCOPY || (task == TR_SYNTH_DEPTHS && *rule == 0)) return tg[t - 1];
    if (task == TR_SYNTH_DEPTHS && *rule == 2) return two_step(tg, t, j);
    int at = j + offset[task == TR_SYNTH_MIXED ? *rule : 0];
    return j >= 0 && at >= 0 && at < t ? tg[at] : -1;
}

static void check_task(const unsigned char *text, const int32_t *tokens, size_t len, int task, int ntrig, int rules) {
    tr_synth sy = {task, 0.05, ntrig, rules, chain ? TR_CARRIER_BIGRAM : TR_CARRIER_TEXT};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    int32_t ids[T], tg[T];
    long trig = 0, pos = 0, layout_ok = 1, copy_ok = 1, text_ok = 1, recalls = 0, by_rule[6] = {0};
    for (int w = 0; w < NWIN; w++) {
        size_t start = gsl_rng_uniform_int(rng, (unsigned long)(len - T));
        if (tokens) tr_synth_window_ids(tokens, len, start, T, &sy, chain, rng, BOS, ids, tg);
        else tr_synth_window(text, len, start, T, &sy, chain, rng, BOS, ids, tg);
        int32_t prev = -1;    /* the carrier's previous item */
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
                int rule;
                int32_t want = want_copy(task, tg, t, last[k], k, rules, &rule);
                int has = want >= 0;
                if (has && (task == TR_SYNTH_MIXED || task == TR_SYNTH_RECALL || rule > 0)) recalls++;
                if (has) by_rule[rule]++;
                if (!has) {
                    /* nothing to recall: the copy slot carries the carrier's next item */
                    if (!carrier_ok(text, tokens, src, prev, tg[t + 1])) copy_ok = 0;
                    prev = tg[t + 1];
                    src++;
                } else if (tg[t + 1] != want) copy_ok = 0;
                last[k] = t;
                t++;
                pos++;
            } else {
                if (!carrier_ok(text, tokens, src, prev, tg[t])) text_ok = 0;
                prev = tg[t];
                src++;
            }
        }
    }
    gsl_rng_free(rng);
    double share = (double)trig / pos;
    char name[128];
    const char *kind = tokens ? "tokens" : "bytes";
    if (chain) kind = tokens ? "tokens on the bigram chain" : "bytes on the bigram chain";
    snprintf(name, sizeof name, "%s, task %d: BOS then the stream shifted by one", kind, task);
    CHECK(name, layout_ok);
    snprintf(name, sizeof name, "%s, task %d: the byte after every trigger follows the copy rule", kind, task);
    CHECK(name, copy_ok);
    snprintf(name, sizeof name, chain ? "%s, task %d: the other items are bigrams of the text"
                                      : "%s, task %d: the other bytes are the text in order", kind, task);
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
    if (task == TR_SYNTH_DEPTHS) {
        snprintf(name, sizeof name, "%s, depths: every depth copies (backcopy %ld, recall %ld, two-step %ld)", kind,
                 by_rule[0], by_rule[1], by_rule[2]);
        CHECK(name, by_rule[0] > 150 && by_rule[1] > 150 && by_rule[2] > 150);
    }
}

/* The chain itself: its groups hold exactly the stream's successor counts, a walk follows the
 * empirical transition probabilities, and the windows on it keep every copy rule. */
static void check_chain(const unsigned char *text, const int32_t *tokens, size_t len) {
    /* 0 is followed by 1 three times in four and by 2 once; 1 and 2 go back to 0 */
    int32_t s[4001];
    for (int i = 0; i < 4000; i += 2) s[i] = 0, s[i + 1] = i % 8 == 6 ? 2 : 1;
    s[4000] = 3;   /* id 3 ends the stream: no successors */
    tr_bigram bg;
    tr_bigram_build(&bg, s, 4001, 4);
    CHECK("chain: 3000 successors 0 -> 1, 1000 0 -> 2, none of 3",
          bg.first[1] - bg.first[0] == 2000 && bg.first[4] == 4000 && bg.first[4] - bg.first[3] == 0);
    long n01 = 0, n02 = 0, bad = 0;
    for (size_t g = bg.first[0]; g < bg.first[1]; g++) n01 += bg.next[g] == 1, n02 += bg.next[g] == 2;
    CHECK("chain: id 0's group is 1500 x 1 and 500 x 2", n01 == 1500 && n02 == 500);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    int32_t w[20000];
    tr_bigram_walk(&bg, 0, 20000, rng, w);
    n01 = n02 = 0;
    for (int i = 0; i + 1 < 20000; i++) {
        if (w[i] == 0) n01 += w[i + 1] == 1, n02 += w[i + 1] == 2;
        /* the stream's pairs: 0 -> 1, 0 -> 2, 1 -> 0, 2 -> 0, 2 -> 3; 3 -> any */
        int a = w[i], b = w[i + 1];
        if ((a == 0 && b != 1 && b != 2) || (a == 1 && b != 0) || (a == 2 && b != 0 && b != 3)) bad++;
    }
    char name[128];
    snprintf(name, sizeof name, "chain walk: P(1 | 0) = %.4f near 0.75, no pair the stream lacks",
             (double)n01 / (double)(n01 + n02));
    CHECK(name, fabs((double)n01 / (double)(n01 + n02) - 0.75) < 0.02 && bad == 0 && w[0] == 0);
    tr_bigram_walk(&bg, 3, 3, rng, w);
    CHECK("chain walk: an id without successors continues from a stream successor", w[0] == 3 && w[1] >= 0 && w[1] <= 2);
    gsl_rng_free(rng);
    tr_bigram_free(&bg);

    int32_t *bytes = xmalloc(sizeof(int32_t) * len);
    for (size_t i = 0; i < len; i++) bytes[i] = text[i];
    tr_bigram bb, bt;
    tr_bigram_build(&bb, bytes, len, 256);
    tr_bigram_build(&bt, tokens, len, 257 + 1900);
    use_chain(&bb, text, NULL, len, 256);
    check_task(text, NULL, len, TR_SYNTH_BACKCOPY, 4, 3);
    check_task(text, NULL, len, TR_SYNTH_MIXED, 6, 3);
    use_chain(&bt, NULL, tokens, len, 257 + 1900);
    check_task(NULL, tokens, len, TR_SYNTH_RECALL, 4, 3);
    check_task(NULL, tokens, len, TR_SYNTH_MIXED, 6, 3);
    check_task(NULL, tokens, len, TR_SYNTH_DEPTHS, 12, 3);
    use_chain(NULL, NULL, NULL, 0, 0);
    tr_bigram_free(&bb);
    tr_bigram_free(&bt);
    free(bytes);
}

int main(void) {
    size_t len = 20000;
    unsigned char *text = xmalloc(len);
    for (size_t i = 0; i < len; i++) text[i] = (unsigned char)('a' + (i * 7 + i / 13) % 26);
    check_task(text, NULL, len, TR_SYNTH_BACKCOPY, 4, 3);
    check_task(text, NULL, len, TR_SYNTH_RECALL, 4, 3);
    check_task(text, NULL, len, TR_SYNTH_MIXED, 4, 3);
    check_task(text, NULL, len, TR_SYNTH_MIXED, 12, 6);
    check_task(text, NULL, len, TR_SYNTH_DEPTHS, 12, 3);
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
    check_task(NULL, tokens, len, TR_SYNTH_DEPTHS, 12, 3);
    check_chain(text, tokens, len);
    tr_synth tsy = {TR_SYNTH_RECALL, 0.05, 4, 3, TR_CARRIER_TEXT};
    CHECK("a stream without triggers: none found", tr_synth_find_trigger(tokens, len, &tsy) == -1);
    tokens[777] = TR_SYNTH_TRIGGER0 + 3;
    CHECK("the first trigger id is found at its position", tr_synth_find_trigger(tokens, len, &tsy) == 777);
    tsy.triggers = 3;
    CHECK("an id past the last trigger kind is not a trigger", tr_synth_find_trigger(tokens, len, &tsy) == -1);

    tr_synth sy = {TR_SYNTH_RECALL, 0.2, 3, 3, TR_CARRIER_TEXT};
    int32_t a[2][T], b[2][T];
    for (int r = 0; r < 2; r++) {
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, 11);
        tr_synth_window(text, len, 100, T, &sy, NULL, rng, BOS, a[r], b[r]);
        gsl_rng_free(rng);
    }
    CHECK("same seed, same window", !memcmp(a[0], a[1], sizeof a[0]) && !memcmp(b[0], b[1], sizeof b[0]));
    /* the byte windows are the token windows of the same bytes: one copy rule for both */
    int32_t c[2][T];
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    tr_synth_window_ids(bytes, len, 100, T, &sy, NULL, rng, BOS, c[0], c[1]);
    gsl_rng_free(rng);
    CHECK("bytes as tokens: the same window", !memcmp(a[0], c[0], sizeof a[0]) && !memcmp(b[0], c[1], sizeof b[0]));
    free(text);
    free(tokens);
    free(bytes);
    printf("1..%d\n", 90);
    return failures != 0;
}

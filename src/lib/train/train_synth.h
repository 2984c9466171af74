/* train_synth: synthetic "dormant-making" training windows for `train` (recipe key
 * synthetic_share). Inspired by Bigram-Backcopy (Guo et al. 2024, arXiv:2410.13835): a task that a
 * head is needed for only at rare trigger tokens, so on ordinary text the head has nothing to do
 * and may park its attention on BOS. Here the carrier is real training text (so the language
 * signal is kept) and the triggers are bytes 0x80.. that never occur in the ASCII corpus. With a
 * learned BPE vocabulary the carrier is the token stream and the triggers are the same byte
 * tokens (ids 0x80.., which an ASCII text never produces), so the copied item is a token. */
#ifndef ATTNCODA_TRAIN_SYNTH_H
#define ATTNCODA_TRAIN_SYNTH_H
#include <gsl/gsl_rng.h>
#include <stddef.h>
#include <stdint.h>

enum { TR_SYNTH_BACKCOPY = 0, TR_SYNTH_RECALL = 1, TR_SYNTH_MIXED = 2, TR_SYNTH_DEPTHS = 3 };
/* TR_SYNTH_DEPTHS: trigger kind k asks for a head at depth k % 3 (issue 44: parked heads in more
 * than one layer). 0: backcopy (the item before the trigger; a previous-token head, any layer);
 * 1: recall (the item after the previous trigger of kind k, at j + 1: an induction head, layer
 * >= 1); 2: two-step recall (y = that recalled item; the item after the latest earlier occurrence
 * of y before j + 1: a second induction on the first one's result, layer >= 2). Where an item is
 * missing, the text's next item, as for recall. */
/* What a recall trigger of kind k copies, relative to the previous trigger of kind k at j: the
 * item at j + offset, offset by rule = k % rules: j + 1 (recall's rule), j - 1, j + 2, j - 2,
 * j + 3, j - 3. Each needs its own attention pattern in a layer >= 1 (its key carries the item
 * that offset away), so the mixed task asks for `rules` sometimes-needed heads where recall asks
 * for one. */
enum { TR_SYNTH_MAX_RULES = 6 };
#define TR_SYNTH_TRIGGER0 0x80   /* trigger k is byte (or byte token) 0x80 + k */

typedef struct {
    int task;       /* TR_SYNTH_BACKCOPY: the byte after a trigger repeats the byte before it;
                     * TR_SYNTH_RECALL: it repeats the byte that followed the previous trigger of
                     * the same kind in the window (first occurrence: the text's next byte);
                     * TR_SYNTH_MIXED: trigger k follows rule k % rules (above), the
                     * text's next byte where the rule has nothing to copy;
                     * TR_SYNTH_DEPTHS: trigger k asks for depth k % 3 (above) */
    double rate;    /* probability that a position becomes a trigger */
    int triggers;   /* number of trigger kinds, 1..64 */
    int rules;      /* TR_SYNTH_MIXED: number of recall rules, 1..TR_SYNTH_MAX_RULES (default 3) */
    int carrier;    /* TR_CARRIER_TEXT: the triggers go into the training text itself;
                     * TR_CARRIER_BIGRAM: into a walk on the training text's bigram chain, on
                     * which no head has work away from the triggers (Guo et al.'s Bigram-Backcopy) */
} tr_synth;

enum { TR_CARRIER_TEXT = 0, TR_CARRIER_BIGRAM = 1 };

/* The training stream's bigram chain: the successors of every occurrence of each id, grouped by
 * id, so that a uniform draw from a group follows the empirical transition P(next | id). */
typedef struct {
    size_t *first;      /* [V+1]: successors of id c are next[first[c] .. first[c+1]-1] */
    int32_t *next;      /* [n-1] */
    size_t n;           /* stream length the chain was built from */
} tr_bigram;

/* s[0..n-1] with every id in 0..V-1, n >= 2. */
void tr_bigram_build(tr_bigram *bg, const int32_t *s, size_t n, int V);
void tr_bigram_free(tr_bigram *bg);
/* out[0] = s0, out[i+1] drawn from the successors of out[i]; an id without successors (only the
 * stream's last one can be) continues from a successor drawn over the whole stream. */
void tr_bigram_walk(const tr_bigram *bg, int32_t s0, int n, gsl_rng *rng, int32_t *out);
/* "text" or "bigram": the recipe's spelling. */
const char *tr_synth_carrier_name(int carrier);

/* One window: ids = BOS, s[0..T-2]; targets s[0..T-1], where s is text[start..] with triggers
 * and their copies inserted (it consumes at most T bytes of text: start + T <= len). Draws from
 * rng only. With chain (sy->carrier = bigram) the carrier is instead a walk on chain from
 * text[start]. */
void tr_synth_window(const unsigned char *text, size_t len, size_t start, int T, const tr_synth *sy,
                     const tr_bigram *chain, gsl_rng *rng, int32_t bos, int32_t *ids, int32_t *tg);
/* The same on a token stream: tokens[start..] (start + T <= len) with the triggers inserted. */
void tr_synth_window_ids(const int32_t *tokens, size_t len, size_t start, int T, const tr_synth *sy,
                         const tr_bigram *chain, gsl_rng *rng, int32_t bos, int32_t *ids, int32_t *tg);
/* "backcopy", "recall", "mixed" or "depths": the recipe's spelling. */
const char *tr_synth_task_name(int task);
/* Whether x (a byte or a token id) is one of the sy->triggers trigger ids. */
int tr_synth_is_trigger(const tr_synth *sy, int32_t x);
/* The first position of tokens[0..len-1] that holds a trigger id, or -1. */
long tr_synth_find_trigger(const int32_t *tokens, size_t len, const tr_synth *sy);
#endif

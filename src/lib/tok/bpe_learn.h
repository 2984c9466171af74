/* bpe_learn: a byte-level BPE vocabulary learned on a text (train's recipe key bpe_merges;
 * docs/TRAIN.md, "BPE vocabulary").
 *
 * The text is cut into pre-tokens by GPT-2's regex (tok_gpt2_pretokenize, what HF's ByteLevel
 * pre-tokenizer with use_regex = true does). Each distinct pre-token is counted once with its
 * frequency and starts as one symbol per byte. A pair's count is the sum, over distinct
 * pre-tokens, of frequency x the number of positions where it is adjacent (overlaps counted, as
 * HF's trainer counts). Each step merges the pair with the highest count, ties going to the
 * smallest (left id, right id), in every pre-token left to right without overlap. It stops after
 * max_merges merges or when no pair occurs twice. Ids: bytes 0-255, 256 is BOS (no piece), a
 * merge makes id 257 + (number of new tokens before it); where the merged bytes already are a
 * token (two pairs can spell the same string) the merge reuses that id, as HF's trainer does,
 * so the vocabulary keeps one id per string. */
#ifndef ATTNCODA_BPE_LEARN_H
#define ATTNCODA_BPE_LEARN_H
#include <stddef.h>
#include <stdint.h>

#define BPE_FIRST_ID 257    /* bytes 0-255, BOS 256 */

typedef struct {
    int n_merges;           /* merges learned (<= max_merges) */
    int32_t *left, *right;  /* merge k joins left[k] and right[k] ... */
    int32_t *made;          /* ... into id made[k] */
    int n_ids;              /* BPE_FIRST_ID + new tokens: the vocabulary size with BOS */
    char **piece;           /* id -> bytes (piece[256] = NULL), plen[id] bytes each */
    uint32_t *plen;
} bpe_vocab;

/* Learns at most max_merges (>= 0) merges. Returns 0; -1 when the text is not valid UTF-8; -2
 * with err filled when it cannot learn (a text too large for the 32-bit indices, an internal
 * error). v holds a vocabulary only on 0. */
int bpe_learn(const char *text, size_t len, int max_merges, bpe_vocab *v, char *err, size_t errlen);
void bpe_vocab_free(bpe_vocab *v);
#endif

/* inputs: the small text inputs that choose what a model run covers: token id sequences (--ids),
 * a head mask (--mask), layer and head lists (--layers 0,2,5-7) and query positions
 * (--query-list). Each parser returns an error text rather than exiting (core/util.h); the
 * messages are the ones extract prints after "extract: FILE: " (or "extract: " for the lists). */
#ifndef ATTNCODA_INPUTS_H
#define ATTNCODA_INPUTS_H
#include <stddef.h>
#include <stdint.h>

/* S sequences of T positions; shorter ones padded (valid 0 there). */
typedef struct {
    int S, T;
    int32_t *ids;      /* S*T */
    uint8_t *valid;    /* S*T */
    int padded;        /* some position is padding */
    char sha[65];      /* of the text or ids input, as read (stdin included) */
    char *upstream;    /* provenance JSON of an --ids file written by sample/tokenize */
} seq_batch;

/* --ids ("-" = stdin): one sequence per line of token ids in [0, vocab); '#' lines are comments,
 * and the first "# {...}" one is kept as upstream provenance. Padded with pad_id (0 when < 0) to
 * the longest line; causal models need equal lines. 0, or -1 with err and nothing left in b. */
int inputs_read_ids(const char *path, int vocab, int pad_id, int causal, seq_batch *b, char *err, size_t errlen);
/* --mask: "layer head" per line → n_layer*n_head flags, 1 = kept, 0 = pruned; NULL with err. */
uint8_t *inputs_read_mask(const char *path, int n_layer, int n_head, char *err, size_t errlen);
/* "0,2,5-7" → the selected indices of [0, n) in order into idx (n entries); their count, or
 * UTIL_ERR_USAGE with the whole message ("--opt: ..."). */
int inputs_parse_list(const char *opt, const char *s, int n, int *idx, char *err, size_t errlen);
/* --query-list: positions in [0, T), whitespace separated, '#' to the end of a line comments;
 * any order, each once. The positions in order (*Q of them), or NULL with err. */
int32_t *inputs_read_query_list(const char *path, int T, int *Q, char *err, size_t errlen);
#endif

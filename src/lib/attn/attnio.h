/* attnio: the attention file (docs/FORMAT.md) — the project's BAM. Readers move one
 * (sequence, layer) block of H×T×T floats per HDF5 call; writers stream blocks in any order.
 * "-" reads an HDF5 file image from stdin / writes one to stdout.
 *
 * Errors follow h5io (io/h5io.h): nothing here exits. Readers take char *err, size_t errlen and
 * return NULL or -1 with err = "FILE: what is wrong" (a program dies with die_data(NULL, "%s",
 * err), which also removes its unfinished outputs). Writers keep their file's first failure and
 * attn_finish returns it. attn_create and attn_finish may also return UTIL_ERR_USAGE (core/util.h)
 * for an output path that cannot be one: a program passes their result to cli_die. */
#ifndef ATTNCODA_ATTNIO_H
#define ATTNCODA_ATTNIO_H
#include "io/h5io.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int S, L, H, T;          /* sequences, layers, heads, tokens per sequence */
    int causal;              /* 1: row t has keys 0..t; 0: every valid key */
    int sink;                /* sink key index k (METHODS §1) */
    int logprob;             /* 1: natural-log probabilities; 0: probabilities (imported) */
    char model[256];         /* model identity (path, hub name or "synth") */
    char family[64];         /* gpt2, gpt_neox, llama, qwen2, bert, synth, ... */
    char text[256];          /* input text or sampling description */
    long long seed;          /* seed used to choose/sample the inputs (-1 if none) */
    int Q;                   /* query rows stored per sequence: T, or the length of a sampled
                              * file's query_pos (docs/FORMAT.md "Sampled query rows"); writers
                              * read it only in attn_create_rows */
} attn_meta;

typedef struct attn_reader attn_reader;
/* The largest (sequence, layer) block a reader accepts, in entries H·T·T: 2^28 floats (1 GiB),
 * the cap `import` applies too. attn_open refuses a larger block, and a file whose attention
 * dataset holds fewer bytes than its shape needs, before any block is allocated. */
#define ATTN_MAX_BLOCK_ENTRIES (1LL << 28)
/* Opens and validates everything but the blocks: attributes, the shapes, the storage behind
 * 'attention', 'valid' (0/1, no sequence without a valid token, right padding only in causal
 * files), 'layer_index' [L] and 'head_index' [H] (non-negative). */
attn_reader *attn_open(const char *path, char *err, size_t errlen);
const attn_meta *attn_meta_get(const attn_reader *r);
const char *attn_provenance(const attn_reader *r);  /* JSON string of the file's provenance */
const char *attn_checksum(const attn_reader *r);    /* SHA-256 hex of the file's bytes */
const char *attn_path(const attn_reader *r);
h5io_id attn_reader_file(const attn_reader *r);     /* for extra datasets (h5io helpers) */
/* The query position of each stored row of sequence s: Q ascending positions in [0, T), read
 * from the file's query_pos dataset, or 0, 1, …, T−1 when the file stores every row. Stored row
 * i of a block is query pos[i]: every reader loops over i and takes t = pos[i]. */
const int32_t *attn_query_pos(const attn_reader *r, int s);
int attn_is_sampled(const attn_reader *r);   /* the file has query_pos (Q may still equal T) */
/* One (s, l) block: buf[h*Q*T + i*T + j], row i holding query attn_query_pos(r, s)[i] (Q = T
 * and i = t for a file of every row). Values are validated on read: NaN, +Inf, negative
 * probabilities and rows not summing to 1 (or log rows whose logsumexp is not 0) beyond 1e-4
 * are errors (-1). Entries outside a row's keys are not read. Returns 0 or -1 with err. */
int attn_read_block(attn_reader *r, int s, int l, float *buf, char *err, size_t errlen);
/* The same block without validation (benchmarks of the bare read). */
int attn_read_block_raw(attn_reader *r, int s, int l, float *buf, char *err, size_t errlen);
/* S*T; zeros when absent. 0, or -1 with err. */
int attn_read_tokens(attn_reader *r, int32_t *tokens, char *err, size_t errlen);
/* key/query validity (bidirectional padding), S*T; all ones when absent */
void attn_read_valid(attn_reader *r, uint8_t *valid);
int attn_has_valid(const attn_reader *r);
void attn_close(attn_reader *r);

/* Number of keys of row t in sequence s: t+1 (causal) or the count of valid keys. */
int attn_row_parts(const attn_meta *m, const uint8_t *valid_s, int t);
/* Key j belongs to row t. */
static inline int attn_key_in_row(const attn_meta *m, const uint8_t *valid_s, int t, int j) {
    return m->causal ? (j <= t) : (valid_s ? valid_s[j] != 0 : 1);
}

/* Whether row t enters per-head means and distances (METHODS §1): the query is valid, the row
 * has at least 3 parts and holds the sink, causal rows have t ≥ min_query, and the sink's own
 * query is dropped when exclude_sink_query is set. */
int attn_row_kept(const attn_meta *m, const uint8_t *valid_s, int t, int sink, int min_query,
                  int exclude_sink_query);
/* The one path from stored values to the row every quantity is computed on (docs/FORMAT.md,
 * "From stored values to rows"). x holds the D stored values of one row's keys as doubles:
 * log-probabilities (logprob = 1) or probabilities. On return x is the closed natural-log row:
 *   logprob: x_i − logsumexp(x), the logsumexp taken in double;
 *   prob:    p_i = x_i / Σx (double), then multiplicative zero replacement (Martín-Fernández et
 *            al. 2003): zeros become zero_delta, the other parts are multiplied by
 *            1 − z·zero_delta, so the row still sums to 1; then natural logs.
 * Returns the number z of replaced parts (0 for log input), or −1 when the row cannot be made a
 * composition: non-finite logsumexp or sum, no positive part, or z·zero_delta ≥ 1. Programs that
 * import rows from elsewhere call this on each gathered row; readers of attention files call
 * attn_gather_row. */
int attn_close_row(double *x, int D, int logprob, double zero_delta);
#define ATTN_ROW_UNCLOSABLE "row cannot be closed (no positive part, or zeros × --zero-delta >= 1)"

/* Gather row t of one head (row = block + (h*Q + i)*T, t = the row's query position): the row's keys in key order (the valid
 * mask of the sequence honoured for bidirectional files), closed by attn_close_row into out
 * (D doubles, D = attn_row_parts). Returns D, or −1 when attn_close_row fails (message:
 * ATTN_ROW_UNCLOSABLE). *sink_pos is the sink's index among the gathered parts (−1 if the row
 * lacks it); *zeros (may be NULL) is increased by the number of replaced parts. Every program
 * that reads attention rows uses this and nothing else. */
int attn_gather_row(const attn_meta *m, const uint8_t *valid_s, const float *row, int t, int sink,
                    double zero_delta, double *out, int *sink_pos, long long *zeros);

typedef struct attn_writer attn_writer;
/* provenance: JSON (prov_json); the writer stores it as the file's "provenance" attribute.
 * 0 and *w; or, with err, -1 (UTIL_ERR_DATA) when the file or its attention dataset cannot be
 * created and UTIL_ERR_USAGE when the path cannot be an output (h5io_create). */
int attn_create(attn_writer **w, const char *path, const attn_meta *m, const char *provenance, char *err,
                size_t errlen);
/* A file of sampled query rows: m->Q rows per sequence, query_pos [S*Q] (each sequence's
 * positions strictly increasing in [0, T)) stored as the query_pos dataset; blocks are then
 * [H][Q][T]. attn_create(w, path, m, prov) is the file of every row (m->Q is ignored). */
int attn_create_rows(attn_writer **w, const char *path, const attn_meta *m, const char *provenance,
                     const int32_t *query_pos, char *err, size_t errlen);
/* Why query positions are unusable (not strictly increasing, outside [0, T)), or NULL. */
const char *attn_check_query_pos(const int32_t *pos, int Q, int T);
/* Deflate level (0 = none, 1..9) of attention files created after the call; default 1.
 * Level 0 trades about twice the file size for about 40% less writing time. */
void attn_set_deflate(int level);
/* Writers return 0 or -1; the first failure is kept for attn_finish. */
int attn_write_block(attn_writer *w, int s, int l, const float *buf);
int attn_write_tokens(attn_writer *w, const int32_t *tokens);  /* S*T */
int attn_write_valid(attn_writer *w, const uint8_t *valid);    /* S*T, optional */
h5io_id attn_writer_file(const attn_writer *w);  /* to add datasets before attn_finish */
/* The root attributes every per-file analysis output shares: format name, version 1, S, L, H, T, causal. */
int attn_write_shape_attrs(h5io_id f, const char *format, const attn_meta *m);
/* Close; rename into place or image to stdout. Frees w either way; -1 with the first failure of
 * any write to the file in err, or UTIL_ERR_USAGE as h5io_finish. */
int attn_finish(attn_writer *w, char *err, size_t errlen);
#endif

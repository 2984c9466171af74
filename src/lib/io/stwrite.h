/* stwrite: writes a safetensors file (huggingface/safetensors format) of F32 tensors.
 * The header lists tensors in sorted name order, the data follows in the same order, the header
 * is padded with spaces to a multiple of 8 bytes (so the data starts 8-aligned), and
 * "__metadata__" holds {"format":"pt"} plus any extra string pairs (attncoda writes its provenance
 * there). Tensors are not copied: the data pointers must stay valid until st_write_finish. */
#ifndef ATTNCODA_STWRITE_H
#define ATTNCODA_STWRITE_H
#include <stddef.h>
#include <stdint.h>

typedef struct st_writer st_writer;

st_writer *st_write_new(void);
/* Add one F32 tensor (ndim ≤ 4). The name is copied; duplicate names are a programming error. */
void st_write_add_f32(st_writer *w, const char *name, const float *data, int ndim, const int64_t *shape);
/* Add a string pair to __metadata__ (key must not be "format"). */
void st_write_meta(st_writer *w, const char *key, const char *value);
/* Write the file through the temporary-name protocol (cli_out_begin/commit) and free w.
 * Dies with exit 1 (die_data) on I/O errors. */
void st_write_finish(st_writer *w, const char *path);
#endif

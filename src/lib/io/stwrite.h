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
/* Add one F32 tensor (ndim ≤ 4). The name is copied; more dimensions and duplicate names are
 * programming errors, which st_write_finish reports. */
void st_write_add_f32(st_writer *w, const char *name, const float *data, int ndim, const int64_t *shape);
/* Add a string pair to __metadata__ (key must not be "format"). */
void st_write_meta(st_writer *w, const char *key, const char *value);
/* Write the file through the temporary-name protocol (cli_out_begin_err/commit_err, core/util.h;
 * "-" is stdout) and free w. 0, or UTIL_ERR_DATA with err = "cannot create: why" / "write error:
 * why" / a failed rename (the caller names path), or UTIL_ERR_USAGE with the whole message (the
 * output is an input, a directory or a device; a programming error above). */
int st_write_finish(st_writer *w, const char *path, char *err, size_t errlen);
#endif

/* safetensors: read-only access to Hugging Face .safetensors files (one file, or the shards named
 * by model.safetensors.index.json). Files are memory-mapped; headers are validated the way the
 * reference reader does (length limit, offsets that tile the data buffer, byte counts matching
 * shape × dtype size). Tensors are handed out as float32: F32 in place when aligned, F16 and BF16
 * converted (core/half.h) into buffers the set owns. Errors fill err with "file: what is wrong". */
#ifndef ATTNCODA_SAFETENSORS_H
#define ATTNCODA_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>

#define ST_MAX_RANK 8

typedef struct {
    char *name;
    char dtype[16];            /* as in the header: F32, F16, BF16, I64, BOOL, ... */
    int rank;
    int64_t shape[ST_MAX_RANK];
    int64_t numel;
    const unsigned char *data; /* into the mapping; may be unaligned */
    size_t nbytes;
    int file;                  /* index into the set's files */
} st_tensor;

typedef struct st_set st_set;

/* One file. */
st_set *st_open_file(const char *path, char *err, size_t errlen);
/* A model directory: model.safetensors.index.json (sharded) or model.safetensors. */
st_set *st_open_dir(const char *dir, char *err, size_t errlen);
void st_close(st_set *s);

int st_count(const st_set *s);
const st_tensor *st_at(const st_set *s, int i);
const st_tensor *st_find(const st_set *s, const char *name);   /* NULL when absent */
int st_nfiles(const st_set *s);
const char *st_file_path(const st_set *s, int i);               /* every file the set read */

/* The tensor as float32 (numel values). F32 aligned: a pointer into the mapping; otherwise a
 * converted copy owned by the set. NULL + err for dtypes other than F32/F16/BF16. */
const float *st_f32(st_set *s, const st_tensor *t, char *err, size_t errlen);
#endif

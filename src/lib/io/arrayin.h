/* arrayin: floating-point arrays saved by other tools, read a block at a time: NumPy .npy
 * (memory-mapped), .npz (zip members streamed through libzip), safetensors (the project's
 * reader, memory-mapped) and HDF5 datasets (hyperslabs). A block is the trailing three
 * dimensions at one leading index, converted to double. "-" reads stdin through a temporary
 * file (removed at once), so stdin costs disk, not memory. Nothing here exits: a call that fails
 * returns -1 with err = "FILE: array 'NAME': what is wrong" (the program dies with
 * die_data(NULL, "%s", err)); ai_add returns -2 for a usage error (stdin named twice), whose
 * text the program passes to die_usage. */
#ifndef ATTNCODA_ARRAYIN_H
#define ATTNCODA_ARRAYIN_H
#include <stddef.h>
#include <stdint.h>

#define AI_MAX_RANK 8

typedef enum { AI_F16, AI_BF16, AI_F32, AI_F64 } ai_dtype;

typedef struct ai_array ai_array;
typedef struct ai_set ai_set;

ai_set *ai_new(void);
/* Add the arrays an INPUT names, in order: FILE (every array of an .npz or safetensors file in
 * natural name order: layer2 before layer10), FILE:NAME (one .npz member or safetensors tensor)
 * or FILE:/PATH (an HDF5 dataset). */
int ai_add(ai_set *s, const char *spec, char *err, size_t errlen);
int ai_count(const ai_set *s);
ai_array *ai_at(ai_set *s, int i);
void ai_close(ai_set *s);

/* Distinct files read, with their SHA-256 (for provenance). */
int ai_nfiles(const ai_set *s);
const char *ai_file_name(const ai_set *s, int i);
const char *ai_file_sha(const ai_set *s, int i);

const char *ai_file(const ai_array *a);    /* as the user gave it ("-" for stdin) */
const char *ai_name(const ai_array *a);    /* member, tensor or dataset name */
int ai_rank(const ai_array *a);
const int64_t *ai_shape(const ai_array *a);
ai_dtype ai_type(const ai_array *a);
const char *ai_dtype_name(ai_dtype t);
/* Whether the array can be read a block at a time (Fortran-ordered .npz members are read whole
 * on first use). */
int ai_streams(const ai_array *a);
/* The block at leading index lead[0..rank-4] (the last three dimensions), as double; 0 or -1
 * with err. */
int ai_read_block(ai_array *a, const int64_t *lead, double *out, char *err, size_t errlen);
#endif

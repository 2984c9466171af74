/* gguf: reader for llama.cpp's GGUF container (versions 2 and 3, little-endian): header, metadata
 * key/values of every value type (arrays included), tensor infos and the aligned data section.
 * The file is memory-mapped and every count, length and offset is checked against the file size
 * before use, so a damaged file yields one error message and never a read past the end. */
#ifndef ATTNCODA_GGUF_H
#define ATTNCODA_GGUF_H
#include <stddef.h>
#include <stdint.h>

/* Metadata value types, numbered as in the GGUF specification. */
enum {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5,
    GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10, GGUF_I64 = 11,
    GGUF_F64 = 12
};
/* Tensor types this reader converts to float32 (ggml numbering); others are named in errors. */
enum { GGML_F32 = 0, GGML_F16 = 1, GGML_Q8_0 = 8, GGML_BF16 = 30 };

typedef struct {
    const char *key;          /* NUL-terminated copy */
    uint32_t type;            /* GGUF_* */
    uint32_t arr_type;        /* element type when type == GGUF_ARRAY */
    uint64_t n;               /* array length (1 for scalars) */
    const uint8_t *data;      /* value bytes in the mapping (array: first element) */
    uint64_t *str_off;        /* string arrays: byte offset of element i from data */
} gguf_kv;

typedef struct {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[4];           /* ne[0] is the innermost (contiguous) dimension */
    uint32_t type;            /* GGML_* */
    uint64_t offset;          /* from the start of the data section */
    uint64_t nelem, nbytes;
} gguf_tensor;

typedef struct {
    const uint8_t *map;
    size_t size;
    uint32_t version;
    uint64_t n_kv, n_tensors;
    gguf_kv *kv;
    gguf_tensor *tensors;
    uint64_t alignment, data_off;

} gguf_file;

/* Open and validate. NULL + message in err (no file name in it) on failure. */
gguf_file *gguf_open(const char *path, char *err, size_t errlen);
void gguf_close(gguf_file *g);

const gguf_kv *gguf_find(const gguf_file *g, const char *key);
/* Scalars of any integer / float / bool type, converted; 0 ok, -1 absent or not a number. */
int gguf_get_i64(const gguf_file *g, const char *key, int64_t *out);
/* An integer (a boolean reads as 0/1): 0 ok; -1 absent or not a number; -2 a float that is not an
 * integer in int64, or a u64 beyond it (floats go through cli_num_to_ll). why gets the reason, with the value. gguf_get_i64 is this
 * without the reason. */
int gguf_get_int(const gguf_file *g, const char *key, int64_t *out, char *why, size_t whylen);
/* Element i of a numeric array as an integer, as gguf_get_int. */
int gguf_arr_int(const gguf_kv *kv, uint64_t i, int64_t *out, char *why, size_t whylen);
int gguf_get_f64(const gguf_file *g, const char *key, double *out);
/* String value (scalar) or element i of a string array: pointer into the mapping + length. */
const char *gguf_get_str(const gguf_file *g, const char *key, uint64_t *len);
const char *gguf_arr_str(const gguf_kv *kv, uint64_t i, uint64_t *len);
/* Element i of a numeric array as double (0 when kv is not a numeric array). */
double gguf_arr_num(const gguf_kv *kv, uint64_t i);

const gguf_tensor *gguf_tensor_find(const gguf_file *g, const char *name);
/* Dequantise/convert a whole tensor to float32; 0 ok, -1 + err for unsupported types. */
int gguf_tensor_f32(const gguf_file *g, const gguf_tensor *t, float *out, char *err, size_t errlen);
const char *gguf_type_name(uint32_t ggml_type);
#endif

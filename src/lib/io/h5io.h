/* h5io: small HDF5 helpers shared by every reader and writer: open a path or a stdin image,
 * create a file that becomes a path (temporary name + rename) or a stdout image, and typed,
 * shape-checked dataset/attribute access.
 *
 * HDF5 stays behind this header: it does not include HDF5's own headers, and no program does.
 * Files, datasets and other objects are h5io_id values and extents are h5io_size values; h5io.c
 * checks at compile time that they are HDF5's own hid_t and hsize_t, so library code that does
 * include HDF5 passes them to the HDF5 calls unchanged. Programs get from here (and attnio.h)
 * every reader and writer they need.
 *
 * Errors: nothing here exits on bad data or a failed HDF5 call. (The cli helpers used for stdin,
 * output files and memory, cli_slurp, cli_out_begin/commit and xmalloc, keep their own exits.)
 * The text of an error names its file the way every program's error line does ("FILE: what is
 * wrong", "-" shown as "(stdin)"), so a program dies with die_data(NULL, "%s", err).
 *   - Readers (h5io_open, h5io_create, h5io_dims, h5io_read_*, h5io_get_attr_*) take
 *     char *err, size_t errlen and return -1 or NULL with err filled.
 *   - Writers to a created file (h5io_write_*, h5io_attr_*, h5io_chunked_f64, the slab writers,
 *     h5io_label_*, h5io_describe, h5io_copy) return 0 or -1 and keep the file's first failure;
 *     h5io_finish returns it (and then neither renames nor writes stdout). A caller may ignore
 *     their result and check only h5io_finish. */
#ifndef ATTNCODA_H5IO_H
#define ATTNCODA_H5IO_H
#include <stddef.h>
#include <stdint.h>

typedef int64_t h5io_id;                /* HDF5's hid_t: a file, dataset or other object */
typedef unsigned long long h5io_size;   /* HDF5's hsize_t: one extent of a dataset */

void h5io_quiet(void);                         /* silence HDF5's own error stack printing */
/* Open for reading; "-" reads stdin into a file image. Not HDF5 / empty / truncated: -1. */
h5io_id h5io_open(const char *path, char sha256_hex[65], char *err, size_t errlen);
/* Create for writing: a temporary file beside path, or an in-memory image for "-". Negative when
 * the file cannot be created: -1 (UTIL_ERR_DATA) with "FILE: why", or UTIL_ERR_USAGE (-2) with the
 * whole line when the path cannot be an output (an input, a directory, a device). */
h5io_id h5io_create(const char *path, char *err, size_t errlen);
/* The same for a netCDF-4 file that xarray, h5netcdf and netCDF-C read as such: creation order
 * of links and attributes tracked and indexed, every dataset with a fill value of its own type
 * (`_FillValue` = NaN on float datasets), root attribute Conventions = "CF-1.8". Name every axis
 * with h5io_label_dims and describe every dataset with h5io_describe. */
h5io_id h5io_create_netcdf(const char *path, char *err, size_t errlen);
/* Flush and close; rename into place, or write the image to stdout. -1 with the file's first
 * write failure (or a failure to close, rename or copy it) in err; the output is then left
 * uncommitted. UTIL_ERR_USAGE when the output was read as an input after it was created. */
int h5io_finish(h5io_id f, const char *path, char *err, size_t errlen);
/* Close a created file without committing it (its temporary output goes with the program's
 * error exit): for a writer that fails before it is complete. */
void h5io_discard(h5io_id f);
/* Keep msg (already "FILE: what") as the first failure of the created file f belongs to, for
 * writers layered on h5io (the attention file's block writes). */
void h5io_note_error(h5io_id obj, const char *msg);

int h5io_exists(h5io_id f, const char *name);
int h5io_attr_exists(h5io_id f, const char *obj, const char *key);
/* NULL when dataset d, of n elements, is backed by data the file holds, else a reason written
 * into why: external storage, no data written (every element the fill value), or fewer stored
 * bytes than deflate (at most 1032:1) could expand to n elements of the dataset's own type.
 * Called before anything is allocated for the data. */
const char *h5io_storage_problem(h5io_id d, unsigned long long n, char *why, size_t cap);
/* Rank and dims of a dataset; a missing dataset is an error naming file and dataset. */
int h5io_dims(h5io_id f, const char *file, const char *name, h5io_size *dims, int maxrank, char *err, size_t errlen);
/* Whole dataset as double / int32 / float with the given expected rank; checks shape when
 * want != NULL (0 entries mean "any"). Returns malloc'd data, or NULL with err. */
double *h5io_read_f64(h5io_id f, const char *file, const char *name, int rank, const h5io_size *want, h5io_size *dims,
                      char *err, size_t errlen);
int    *h5io_read_i32(h5io_id f, const char *file, const char *name, int rank, const h5io_size *want, h5io_size *dims,
                      char *err, size_t errlen);
float  *h5io_read_f32(h5io_id f, const char *file, const char *name, int rank, const h5io_size *want, h5io_size *dims,
                      char *err, size_t errlen);
int h5io_write_f64(h5io_id f, const char *name, int rank, const h5io_size *dims, const double *data);
int h5io_write_i32(h5io_id f, const char *name, int rank, const h5io_size *dims, const int *data);
int h5io_write_f32(h5io_id f, const char *name, int rank, const h5io_size *dims, const float *data);
/* Attributes on an object (use "/" for the root). */
int h5io_attr_str(h5io_id f, const char *obj, const char *key, const char *val);
int h5io_attr_int(h5io_id f, const char *obj, const char *key, long long val);
int h5io_attr_dbl(h5io_id f, const char *obj, const char *key, double val);
/* malloc'd value; NULL with err = "" when absent, NULL with err filled when unreadable. */
char *h5io_get_attr_str(h5io_id f, const char *obj, const char *key, char *err, size_t errlen);
/* 0 and *val when present, 1 when absent, -1 with err when unreadable. */
int h5io_get_attr_int(h5io_id f, const char *obj, const char *key, long long *val, char *err, size_t errlen);
int h5io_get_attr_dbl(h5io_id f, const char *obj, const char *key, double *val, char *err, size_t errlen);
/* A chunked float64 dataset written a slab at a time (per-row outputs). Uncompressed: doubles
 * deflate by only ~15% and compressing them cost decompose a third of its time. -1 on failure. */
h5io_id h5io_chunked_f64(h5io_id f, const char *name, int rank, const h5io_size *dims, const h5io_size *chunk);
int h5io_write_slab_f64(h5io_id dset, int rank, const h5io_size *start, const h5io_size *count, const double *data);
/* A contiguous float32 dataset with HDF5's default creation properties, written a slab at a
 * time (extract's logits and pixels). -1 on failure. */
h5io_id h5io_dataset_f32(h5io_id f, const char *name, int rank, const h5io_size *dims);
int h5io_write_slab_f32(h5io_id dset, int rank, const h5io_size *start, const h5io_size *count, const float *data);
void h5io_close_dataset(h5io_id dset);
/* Deflate level (0 when uncompressed) of dataset name, or -1 when it cannot be read. */
int h5io_deflate_level(h5io_id f, const char *name);
/* Name the axes of a dataset: an index dimension scale per name (datasets scope/NAME, created
 * when missing) attached to each axis, and the names as dimension labels, so h5py and
 * xarray/h5netcdf read labelled arrays. Call after the dataset is complete. */
int h5io_label_dims(h5io_id f, const char *dset, const char *scope, int rank, const char *const *names);
/* CF attributes of a dataset: long_name (what it holds) and units ("1" when dimensionless). */
int h5io_describe(h5io_id f, const char *dset, const char *long_name, const char *units);
/* The attention dataset's axes: sequence, layer, head, query, key (query_row instead of query, and
 * query_pos as (sequence, query_row), in a file of sampled rows); tokens and valid (sequence,
 * query) and layer_index/head_index when present. Call after they are written, before
 * attn_finish. */
int h5io_label_attention(h5io_id f);
/* Copy an object (dataset/group) between files (clr passes its input through). */
int h5io_copy(h5io_id src, const char *name, h5io_id dst);
#endif

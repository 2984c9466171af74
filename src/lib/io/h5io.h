/* h5io: small HDF5 helpers shared by every reader and writer: open a path or a stdin image,
 * create a file that becomes a path (temporary name + rename) or a stdout image, and typed,
 * shape-checked dataset/attribute access that dies with one clear line on bad data. */
#ifndef ATTNCODA_H5IO_H
#define ATTNCODA_H5IO_H
#include <hdf5.h>
#include <stddef.h>

void h5io_quiet(void);                         /* silence HDF5's own error stack printing */
/* Open for reading; "-" reads stdin into a file image. Not HDF5 / empty / truncated: exit 1. */
hid_t h5io_open(const char *path, char sha256_hex[65]);
/* Create for writing: a temporary file beside path, or an in-memory image for "-". */
hid_t h5io_create(const char *path);
/* The same for a netCDF-4 file that xarray, h5netcdf and netCDF-C read as such: creation order
 * of links and attributes tracked and indexed, every dataset with a fill value of its own type
 * (`_FillValue` = NaN on float datasets), root attribute Conventions = "CF-1.8". Name every axis
 * with h5io_label_dims and describe every dataset with h5io_describe. */
hid_t h5io_create_netcdf(const char *path);
/* Flush and close; rename into place, or write the image to stdout. */
void h5io_finish(hid_t f, const char *path);

int h5io_exists(hid_t f, const char *name);
/* NULL when dataset d, of n elements, is backed by data the file holds, else a reason written
 * into why: external storage, no data written (every element the fill value), or fewer stored
 * bytes than deflate (at most 1032:1) could expand to n elements of the dataset's own type.
 * Called before anything is allocated for the data. */
const char *h5io_storage_problem(hid_t d, unsigned long long n, char *why, size_t cap);
/* Rank and dims of a dataset; missing dataset is fatal (names file and dataset). */
int h5io_dims(hid_t f, const char *file, const char *name, hsize_t *dims, int maxrank);
/* Whole dataset as double / int32 / float with the given expected rank; checks shape when
 * want != NULL (0 entries mean "any"). Returns malloc'd data. */
double *h5io_read_f64(hid_t f, const char *file, const char *name, int rank, const hsize_t *want, hsize_t *dims);
int    *h5io_read_i32(hid_t f, const char *file, const char *name, int rank, const hsize_t *want, hsize_t *dims);
float  *h5io_read_f32(hid_t f, const char *file, const char *name, int rank, const hsize_t *want, hsize_t *dims);
void h5io_write_f64(hid_t f, const char *name, int rank, const hsize_t *dims, const double *data);
void h5io_write_i32(hid_t f, const char *name, int rank, const hsize_t *dims, const int *data);
void h5io_write_f32(hid_t f, const char *name, int rank, const hsize_t *dims, const float *data);
/* Attributes on an object (use "/" for the root). */
void h5io_attr_str(hid_t f, const char *obj, const char *key, const char *val);
void h5io_attr_int(hid_t f, const char *obj, const char *key, long long val);
void h5io_attr_dbl(hid_t f, const char *obj, const char *key, double val);
char *h5io_get_attr_str(hid_t f, const char *obj, const char *key);      /* NULL if absent */
int h5io_get_attr_int(hid_t f, const char *obj, const char *key, long long *val);  /* 0 if present */
int h5io_get_attr_dbl(hid_t f, const char *obj, const char *key, double *val);
/* A chunked float64 dataset written a slab at a time (per-row outputs). Uncompressed: doubles
 * deflate by only ~15% and compressing them cost decompose a third of its time. */
hid_t h5io_chunked_f64(hid_t f, const char *name, int rank, const hsize_t *dims, const hsize_t *chunk);
void h5io_write_slab_f64(hid_t dset, int rank, const hsize_t *start, const hsize_t *count, const double *data);
/* Name the axes of a dataset: an index dimension scale per name (datasets scope/NAME, created
 * when missing) attached to each axis, and the names as dimension labels, so h5py and
 * xarray/h5netcdf read labelled arrays. Call after the dataset is complete. */
void h5io_label_dims(hid_t f, const char *dset, const char *scope, int rank, const char *const *names);
/* CF attributes of a dataset: long_name (what it holds) and units ("1" when dimensionless). */
void h5io_describe(hid_t f, const char *dset, const char *long_name, const char *units);
/* The attention dataset's axes: sequence, layer, head, query, key (query_row instead of query, and
 * query_pos as (sequence, query_row), in a file of sampled rows); tokens and valid (sequence,
 * query) and layer_index/head_index when present. Call after they are written, before
 * attn_finish. */
void h5io_label_attention(hid_t f);
/* Copy an object (dataset/group) between files (clr passes its input through). */
void h5io_copy(hid_t src, const char *name, hid_t dst);
#endif

/* HDF5 plumbing shared by all readers and writers. Files are created with object time tracking
 * off and fixed library-version bounds so that identical content gives identical bytes. Errors
 * are returned (readers) or kept as each created file's first failure (writers): see h5io.h. */
#include "h5io.h"

#include "core/util.h"

#include <hdf5.h>   /* before the high-level headers, which use its types */
#include <H5DSpublic.h>
#include <H5LTpublic.h>
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* HDF5's error-printing setting is per thread in thread-safe builds: every function that may
 * call HDF5 from an OpenMP thread calls this first. */
void h5io_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

/* h5io.h promises that its id and size types are HDF5's own. */
_Static_assert(_Generic((hid_t)0, h5io_id: 1, default: 0), "h5io_id is not hid_t");
_Static_assert(_Generic((hsize_t)0, h5io_size: 1, default: 0), "h5io_size is not hsize_t");

/* err, a message about FILE, becomes "FILE: message"; returns -1. */
static int fail_prefix(char *err, size_t errlen, const char *file) {
    cli_err_prefix(err, errlen, cli_display_name(file));
    return -1;
}

static const unsigned char HDF5_SIG[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

/* The superblock sits at 0, 512, 1024, 2048, … */
static int image_is_hdf5(const unsigned char *buf, size_t len) {
    for (size_t off = 0; off + 8 <= len; off = off ? off * 2 : 512)
        if (memcmp(buf + off, HDF5_SIG, 8) == 0) return 1;
    return 0;
}

static hid_t open_image(const char *path, char sha[65], char *err, size_t errlen) {
    size_t len;
    unsigned char *buf = util_slurp(path, &len, err, errlen);
    if (!buf) return -1;
    if (sha) cli_sha256_hex(buf, len, sha);
    const char *why = len == 0 ? "empty input, expected an HDF5 file"
                      : !image_is_hdf5(buf, len) ? "not an HDF5 file" : NULL;
    /* HDF5 keeps its own copy of the image */
    hid_t f = why ? -1 : H5LTopen_file_image(buf, len, 0);
    free(buf);
    if (why) return util_fail(err, errlen, path, "%s", why);
    if (f < 0) return util_fail(err, errlen, path, "truncated or corrupt HDF5 file");
    return f;
}

/* Display names of the files h5io_open opened, so that an attribute reader given only an id can
 * name the file in its error line. */
#define MAX_OPENED 64
static struct { hid_t f; char *name; } g_opened[MAX_OPENED];
static int g_nopened;

static void remember_name(hid_t f, const char *path) {
    int slot = g_nopened++ % MAX_OPENED;
    free(g_opened[slot].name);
    g_opened[slot].f = f;
    g_opened[slot].name = xstrdup(cli_display_name(path));
}

static const char *file_name(hid_t obj) {
    for (int i = 0; i < MAX_OPENED; i++)
        if (g_opened[i].name && g_opened[i].f == obj) return g_opened[i].name;
    static char buf[1024];
    if (H5Fget_name(obj, buf, sizeof buf) <= 0) snprintf(buf, sizeof buf, "(HDF5 file)");
    return buf;
}

hid_t h5io_open(const char *path, char sha[65], char *err, size_t errlen) {
    h5io_quiet();
    if (cli_is_stdio(path)) {
        hid_t f = open_image(path, sha, err, errlen);
        if (f >= 0) remember_name(f, path);
        return f;
    }
    struct stat st;
    if (stat(path, &st) != 0) return util_fail(err, errlen, path, "cannot open: %s", strerror(errno));
    if (S_ISDIR(st.st_mode)) return util_fail(err, errlen, path, "is a directory, expected an HDF5 file");
    if (st.st_size == 0) return util_fail(err, errlen, path, "empty file, expected an HDF5 file");
    if (H5Fis_hdf5(path) <= 0) return util_fail(err, errlen, path, "not an HDF5 file");
    cli_input_note(path);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return util_fail(err, errlen, path, "truncated or corrupt HDF5 file");
    if (sha && cli_sha256_file(path, sha) != 0) {
        H5Fclose(f);
        return util_fail(err, errlen, path, "cannot read for checksum");
    }
    remember_name(f, path);
    return f;
}

/* Which created file belongs to which output path (stdout images have no file name). */
#define MAX_CREATED 32
static struct { hid_t f; char *image, *file, *shown, *err; int netcdf; } g_created[MAX_CREATED];
/* The first failure of a write whose file is not one h5io_create made (none should be). */
static char g_stray_err[2048];

/* The created file an object being written belongs to, or -1. */
static int created_slot(hid_t obj) {
    char buf[4096];
    if (H5Fget_name(obj, buf, sizeof buf) > 0)
        for (int i = 0; i < MAX_CREATED; i++)
            if (g_created[i].f && !strcmp(g_created[i].file, buf)) return i;
    return -1;
}

/* The output an object being written belongs to, for error lines: its path, or (stdout). Not
 * "-", which names stdin. */
static const char *out_name(hid_t obj) {
    int i = created_slot(obj);
    return i >= 0 ? g_created[i].shown : "(output)";
}

void h5io_note_error(hid_t obj, const char *msg) {
    int i = created_slot(obj);
    if (i < 0) {
        if (!g_stray_err[0]) snprintf(g_stray_err, sizeof g_stray_err, "%s", msg);
    } else if (!g_created[i].err) {
        g_created[i].err = xstrdup(msg);
    }
}

/* A failed write: "OUTPUT: message" kept as the first failure of obj's file; returns -1. */
static int __attribute__((format(printf, 2, 3))) write_failed(hid_t obj, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    util_vfail(msg, sizeof msg, out_name(obj), fmt, ap);
    va_end(ap);
    h5io_note_error(obj, msg);
    return -1;
}

/* netCDF-4 wants the creation order of links and attributes tracked and indexed in every group
 * (and of attributes on every dataset), so that netCDF-C lists them in the order written. */
static void track_order(hid_t plist, int links) {
    unsigned flags = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;
    if (links) H5Pset_link_creation_order(plist, flags);
    H5Pset_attr_creation_order(plist, flags);
}

static hid_t file_create_plist(int netcdf) {
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    H5Pset_obj_track_times(fcpl, 0);
    if (netcdf) track_order(fcpl, 1);
    return fcpl;
}

/* Whether f was made by h5io_create_netcdf (f is the file id every writer passes). */
static int is_netcdf(hid_t f) {
    for (int i = 0; i < MAX_CREATED; i++)
        if (g_created[i].f == f) return g_created[i].netcdf;
    return 0;
}

/* Stdout outputs go through a private temporary file: HDF5 1.10's in-memory file images of
 * files with v2 superblocks can carry stale superblock checksums. */
static int stdout_tmp_name(char **name_out, char *err, size_t errlen) {
    *name_out = NULL;
    const char *dir = getenv("TMPDIR");
    size_t n = strlen(dir && *dir ? dir : "/tmp") + 40;
    char *name = xmalloc(n);
    snprintf(name, n, "%s/attncoda-stdout-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(name);
    if (fd < 0) {
        util_fail(err, errlen, "(stdout)", "cannot create a temporary file for stdout: %s", strerror(errno));
        free(name);
        return -1;
    }
    int rc = cli_temp_add_err(name, err, errlen);   /* at once, before anything else can fail */
    close(fd);
    if (rc) {
        unlink(name);
        free(name);
        return rc;
    }
    *name_out = name;
    return 0;
}

/* -1 with "FILE: why", or UTIL_ERR_USAGE with the whole line (an output that is an input, a
 * directory or a device; too many outputs). */
static hid_t create_file(const char *path, int netcdf, char *err, size_t errlen) {
    h5io_quiet();
    const char *tmp;
    int rc = cli_out_begin_err(path, &tmp, err, errlen);
    if (rc == UTIL_ERR_USAGE) return rc;
    if (rc) return fail_prefix(err, errlen, path);
    char *image = NULL;
    if (!tmp && (rc = stdout_tmp_name(&image, err, errlen))) return rc;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    /* v18 object headers allow attributes over 64 KiB (long provenance chains) */
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V110);
    hid_t fcpl = file_create_plist(netcdf);
    hid_t f = H5Fcreate(tmp ? tmp : image, H5F_ACC_TRUNC, fcpl, fapl);
    H5Pclose(fapl);
    H5Pclose(fcpl);
    if (f < 0) {
        free(image);   /* still registered as a temporary: removed at exit */
        return util_fail(err, errlen, path, "cannot create HDF5 output");
    }
    for (int i = 0; i < MAX_CREATED; i++)
        if (g_created[i].f == 0) {
            g_created[i].f = f, g_created[i].image = image, g_created[i].netcdf = netcdf;
            g_created[i].file = xstrdup(tmp ? tmp : image), g_created[i].shown = xstrdup(tmp ? path : "(stdout)");
            break;
        }
    return f;
}

hid_t h5io_create(const char *path, char *err, size_t errlen) { return create_file(path, 0, err, errlen); }

hid_t h5io_create_netcdf(const char *path, char *err, size_t errlen) {
    hid_t f = create_file(path, 1, err, errlen);
    if (f >= 0) h5io_attr_str(f, "/", "Conventions", "CF-1.8");
    return f;
}

/* Forget created file f; returns its stdout image name (or NULL) and, in *first_err, its first
 * write failure (malloc'd, or NULL). */
static char *forget_created(hid_t f, char **first_err) {
    char *image = NULL;
    *first_err = NULL;
    for (int i = 0; i < MAX_CREATED; i++)
        if (g_created[i].f == f) {
            image = g_created[i].image;
            *first_err = g_created[i].err;
            free(g_created[i].file), free(g_created[i].shown);
            g_created[i].f = 0, g_created[i].image = g_created[i].file = g_created[i].shown = NULL;
            g_created[i].err = NULL;
            g_created[i].netcdf = 0;
            break;
        }
    return image;
}

void h5io_discard(hid_t f) {
    char *first_err, *image = forget_created(f, &first_err);
    H5Fclose(f);
    if (image) cli_temp_remove(image);
    free(image);
    free(first_err);
}

int h5io_finish(hid_t f, const char *path, char *err, size_t errlen) {
    char *first_err, *image = forget_created(f, &first_err);
    int closed = H5Fclose(f) >= 0;
    if (first_err || g_stray_err[0] || !closed) {
        if (first_err) snprintf(err, errlen, "%s", first_err);
        else if (g_stray_err[0]) snprintf(err, errlen, "%s", g_stray_err), g_stray_err[0] = 0;
        else util_fail(err, errlen, path, "cannot close HDF5 output");
        free(first_err);
        if (image) cli_temp_remove(image);
        free(image);
        return -1;
    }
    if (!image) {
        int rc = cli_out_commit_err(path, err, errlen);
        return rc == UTIL_ERR_DATA ? fail_prefix(err, errlen, path) : rc;
    }
    size_t n;
    unsigned char *buf = util_slurp(image, &n, err, errlen);
    cli_temp_remove(image);
    free(image);
    if (!buf) return -1;
    const char *errfile;
    int rc = cli_write_bytes_err("-", buf, n, &errfile, err, errlen);
    free(buf);
    return rc == UTIL_ERR_DATA ? fail_prefix(err, errlen, errfile) : rc;
}

int h5io_exists(hid_t f, const char *name) {
    /* walk the path so that a missing intermediate group is not an error */
    char buf[512];
    snprintf(buf, sizeof buf, "%s", name);
    for (char *p = buf + 1; ; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (H5Lexists(f, buf, H5P_DEFAULT) <= 0) return 0;
            if (!c) return 1;
            *p = c;
        }
    }
}

int h5io_attr_exists(hid_t f, const char *obj, const char *key) {
    return H5Aexists_by_name(f, obj, key, H5P_DEFAULT) > 0;
}

int h5io_dims(hid_t f, const char *file, const char *name, hsize_t *dims, int maxrank, char *err, size_t errlen) {
    if (!h5io_exists(f, name)) return util_fail(err, errlen, file, "missing dataset '%s'", name);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return util_fail(err, errlen, file, "cannot open dataset '%s'", name);
    hid_t sp = H5Dget_space(d);
    int rank = H5Sget_simple_extent_ndims(sp);
    if (rank < 0 || rank > maxrank) {
        H5Sclose(sp);
        H5Dclose(d);
        return util_fail(err, errlen, file, "dataset '%s' has rank %d, expected at most %d", name, rank, maxrank);
    }
    H5Sget_simple_extent_dims(sp, dims, NULL);
    H5Sclose(sp);
    H5Dclose(d);
    return rank;
}

/* Deflate expands at most 1032:1 (RFC 1951: 258 bytes from a 2-bit code at best); shuffle and
 * Fletcher-32 do not shrink data. */
#define DEFLATE_MAX_RATIO 1032ULL

/* 1 when every filter of dcpl is deflate, shuffle or fletcher32 (a bound on expansion is known). */
static int deflate_only(hid_t dcpl) {
    int n = H5Pget_nfilters(dcpl);
    for (int i = 0; i < n; i++) {
        unsigned flags, conf;
        size_t ne = 0;
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ne, NULL, 0, NULL, &conf);
        if (id != H5Z_FILTER_DEFLATE && id != H5Z_FILTER_SHUFFLE && id != H5Z_FILTER_FLETCHER32) return 0;
    }
    return 1;
}

const char *h5io_storage_problem(hid_t d, unsigned long long n, char *why, size_t cap) {
    hid_t type = H5Dget_type(d);
    unsigned long long raw = n * (unsigned long long)H5Tget_size(type);   /* as stored, not as read */
    H5Tclose(type);
    hid_t dcpl = H5Dget_create_plist(d);
    int external = H5Pget_external_count(dcpl) > 0, nfilters = H5Pget_nfilters(dcpl), bounded = deflate_only(dcpl);
    H5Pclose(dcpl);
    unsigned long long held = H5Dget_storage_size(d);
    if (external) snprintf(why, cap, "uses external storage (not supported)");
    else if (raw == 0) return NULL;
    else if (held == 0) snprintf(why, cap, "holds no data (%llu bytes declared, none written)", raw);
    else if ((nfilters == 0 && held < raw) || (bounded && held < raw / DEFLATE_MAX_RATIO))
        snprintf(why, cap, "declares %llu bytes but the file holds only %llu bytes of it", raw, held);
    else return NULL;
    return why;
}

/* The element count of dataset name after its rank and shape are checked, or -1 with err. */
static long long checked_count(hid_t f, const char *file, const char *name, int rank, const hsize_t *want,
                               hsize_t *dims, size_t elsize, char *err, size_t errlen) {
    hsize_t got[16];
    int r = h5io_dims(f, file, name, got, 16, err, errlen);
    if (r < 0) return -1;
    if (r != rank) return util_fail(err, errlen, file, "dataset '%s' has rank %d, expected %d", name, r, rank);
    size_t n = 1;
    for (int i = 0; i < r; i++) {
        if (want && want[i] && got[i] != want[i])
            return util_fail(err, errlen, file, "dataset '%s' dimension %d is %llu, expected %llu", name, i,
                        (unsigned long long)got[i], (unsigned long long)want[i]);
        if (got[i] && n > (SIZE_MAX / elsize) / got[i])
            return util_fail(err, errlen, file, "dataset '%s' is too large to read (dimension %d is %llu)", name, i,
                        (unsigned long long)got[i]);
        n *= got[i];
        if (dims) dims[i] = got[i];
    }
    return (long long)n;
}

static void *read_typed(hid_t f, const char *file, const char *name, int rank, const hsize_t *want,
                        hsize_t *dims, hid_t memtype, size_t elsize, char *err, size_t errlen) {
    long long n = checked_count(f, file, name, rank, want, dims, elsize, err, errlen);
    if (n < 0) return NULL;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    char why[160];
    if (h5io_storage_problem(d, (unsigned long long)n, why, sizeof why)) {
        H5Dclose(d);
        util_fail(err, errlen, file, "dataset '%s' %s", name, why);
        return NULL;
    }
    void *buf = xmalloc((size_t)n * elsize);
    if (H5Dread(d, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        free(buf);
        buf = NULL;
        util_fail(err, errlen, file, "cannot read dataset '%s' (truncated or wrong type)", name);
    }
    H5Dclose(d);
    return buf;
}

double *h5io_read_f64(hid_t f, const char *file, const char *name, int rank, const hsize_t *want, hsize_t *dims,
                      char *err, size_t errlen) {
    return read_typed(f, file, name, rank, want, dims, H5T_NATIVE_DOUBLE, sizeof(double), err, errlen);
}
int *h5io_read_i32(hid_t f, const char *file, const char *name, int rank, const hsize_t *want, hsize_t *dims,
                   char *err, size_t errlen) {
    return read_typed(f, file, name, rank, want, dims, H5T_NATIVE_INT, sizeof(int), err, errlen);
}
float *h5io_read_f32(hid_t f, const char *file, const char *name, int rank, const hsize_t *want, hsize_t *dims,
                     char *err, size_t errlen) {
    return read_typed(f, file, name, rank, want, dims, H5T_NATIVE_FLOAT, sizeof(float), err, errlen);
}

/* Groups on the way to name, created without timestamps (the default group creation list
 * would record times and break byte-identical outputs). */
static int ensure_groups(hid_t f, const char *name) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", name);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (H5Lexists(f, buf, H5P_DEFAULT) <= 0) {
            hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
            H5Pset_obj_track_times(gcpl, 0);
            if (is_netcdf(f)) track_order(gcpl, 1);
            hid_t g = H5Gcreate2(f, buf, H5P_DEFAULT, gcpl, H5P_DEFAULT);
            H5Pclose(gcpl);
            if (g < 0) return write_failed(f, "cannot create group '%s'", buf);
            H5Gclose(g);
        }
        *p = '/';
    }
    return 0;
}

/* netCDF-4 files: a fill value of the dataset's own type, NaN for floats (the `_FillValue`
 * attribute too) and netCDF's default NC_FILL_INT for integers. Integers get no `_FillValue`
 * attribute: every int32 is a valid value there (fixed-point limbs, counts, indices), and xarray
 * would turn any integer variable with one into float64. */
static void netcdf_fill(hid_t dcpl, hid_t filetype) {
    if (H5Tget_class(filetype) == H5T_FLOAT) {
        double nan = NAN;
        H5Pset_fill_value(dcpl, H5T_NATIVE_DOUBLE, &nan);
    } else {
        int fill = -2147483647;
        H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
    }
}

static int netcdf_fill_attr(hid_t d, hid_t filetype) {
    if (H5Tget_class(filetype) != H5T_FLOAT) return 0;
    double nan = NAN;
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(d, "_FillValue", filetype, sp, H5P_DEFAULT, H5P_DEFAULT);
    int ok = a >= 0 && H5Awrite(a, H5T_NATIVE_DOUBLE, &nan) >= 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return ok ? 0 : write_failed(d, "cannot write attribute '_FillValue'");
}

/* Create intermediate groups, then a contiguous (small) or chunked+deflated (large) dataset. */
static int write_typed(hid_t f, const char *name, int rank, const hsize_t *dims, hid_t memtype,
                       hid_t filetype, const void *data) {
    if (ensure_groups(f, name) < 0) return -1;
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(dcpl, 0);
    int netcdf = is_netcdf(f);
    if (netcdf) track_order(dcpl, 0), netcdf_fill(dcpl, filetype);
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(f, name, filetype, sp, lcpl, dcpl, H5P_DEFAULT);
    int rc = 0;
    if (d < 0 || H5Dwrite(d, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
        rc = write_failed(f, "cannot write dataset '%s'", name);
    else if (netcdf)
        rc = netcdf_fill_attr(d, filetype);
    if (d >= 0) H5Dclose(d);
    H5Sclose(sp);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
    return rc;
}

int h5io_write_f64(hid_t f, const char *name, int rank, const hsize_t *dims, const double *data) {
    return write_typed(f, name, rank, dims, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, data);
}
int h5io_write_i32(hid_t f, const char *name, int rank, const hsize_t *dims, const int *data) {
    return write_typed(f, name, rank, dims, H5T_NATIVE_INT, H5T_STD_I32LE, data);
}
int h5io_write_f32(hid_t f, const char *name, int rank, const hsize_t *dims, const float *data) {
    return write_typed(f, name, rank, dims, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, data);
}

static int attr_write(hid_t f, const char *obj, const char *key, hid_t type, hid_t memtype, const void *val) {
    if (H5Aexists_by_name(f, obj, key, H5P_DEFAULT) > 0) H5Adelete_by_name(f, obj, key, H5P_DEFAULT);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate_by_name(f, obj, key, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int ok = a >= 0 && H5Awrite(a, memtype, val) >= 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return ok ? 0 : write_failed(f, "cannot write attribute '%s'", key);
}

/* Variable-length UTF-8, so h5py returns str (fixed-length ASCII strings come back as bytes);
 * h5io_get_attr_str reads both, so files written before this still read. */
int h5io_attr_str(hid_t f, const char *obj, const char *key, const char *val) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    int rc = attr_write(f, obj, key, t, t, &val);
    H5Tclose(t);
    return rc;
}
int h5io_attr_int(hid_t f, const char *obj, const char *key, long long val) {
    return attr_write(f, obj, key, H5T_STD_I64LE, H5T_NATIVE_LLONG, &val);
}
int h5io_attr_dbl(hid_t f, const char *obj, const char *key, double val) {
    return attr_write(f, obj, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &val);
}

static const char *class_name(H5T_class_t c) {
    switch (c) {
    case H5T_INTEGER: return "an integer";
    case H5T_FLOAT: return "a float";
    case H5T_STRING: return "a string";
    case H5T_ENUM: return "an enum (boolean?)";
    case H5T_COMPOUND: return "a compound";
    case H5T_ARRAY: return "an array type";
    case H5T_VLEN: return "a variable-length sequence";
    default: return "of an unsupported type";
    }
}

/* An attribute opened for reading one value: it must be a scalar or a rank-1 array of length 1
 * (h5py writes both), since H5Aread writes every element into the caller's single value.
 * Returns the attribute, -1 when absent (err = ""), -2 with err when unusable. */
static hid_t attr_open(hid_t f, const char *obj, const char *key, H5T_class_t *cls, char *err, size_t errlen) {
    if (errlen) err[0] = 0;
    if (H5Aexists_by_name(f, obj, key, H5P_DEFAULT) <= 0) return -1;
    hid_t a = H5Aopen_by_name(f, obj, key, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) return util_fail(err, errlen, file_name(f), "cannot open attribute '%s'", key), -2;
    hid_t sp = H5Aget_space(a);
    H5S_class_t sc = H5Sget_simple_extent_type(sp);
    int rank = H5Sget_simple_extent_ndims(sp);
    hssize_t n = H5Sget_simple_extent_npoints(sp);
    H5Sclose(sp);
    if (sc == H5S_NULL || rank < 0 || rank > 1 || n != 1) {
        H5Aclose(a);
        if (sc == H5S_NULL) util_fail(err, errlen, file_name(f), "attribute '%s' holds no value (null dataspace)", key);
        else util_fail(err, errlen, file_name(f), "attribute '%s' holds %lld values (rank %d), expected a single value",
                  key, (long long)n, rank);
        return -2;
    }
    hid_t t = H5Aget_type(a);
    *cls = H5Tget_class(t);
    H5Tclose(t);
    return a;
}

/* Longest fixed-size string attribute accepted (provenance chains are the longest real ones). */
#define ATTR_STR_MAX ((size_t)64 << 20)

static char *read_str(hid_t f, hid_t a, const char *key, char *err, size_t errlen) {
    hid_t t = H5Aget_type(a);
    hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_cset(mt, H5Tget_cset(t));
    char *out = NULL;
    int too_long = 0;
    size_t n = 0;
    if (H5Tis_variable_str(t) > 0) {
        char *v = NULL;
        H5Tset_size(mt, H5T_VARIABLE);
        if (H5Aread(a, mt, &v) >= 0) {
            out = xstrdup(v ? v : "");
            H5free_memory(v);
        }
    } else if ((n = H5Tget_size(t)) == 0 || n > ATTR_STR_MAX) {
        too_long = 1;
    } else {
        out = xcalloc(n + 1, 1);
        H5Tset_size(mt, n + 1);
        H5Tset_strpad(mt, H5T_STR_NULLTERM);
        if (H5Aread(a, mt, out) < 0) {
            free(out);
            out = NULL;
        }
    }
    H5Tclose(mt);
    H5Tclose(t);
    if (too_long) util_fail(err, errlen, file_name(f), "attribute '%s' is a fixed-size string of %zu bytes", key, n);
    else if (!out) util_fail(err, errlen, file_name(f), "cannot read string attribute '%s'", key);
    return out;
}

char *h5io_get_attr_str(hid_t f, const char *obj, const char *key, char *err, size_t errlen) {
    H5T_class_t c;
    hid_t a = attr_open(f, obj, key, &c, err, errlen);
    if (a < 0) return NULL;
    char *out = NULL;
    if (c != H5T_STRING) util_fail(err, errlen, file_name(f), "attribute '%s' is %s, expected a string", key, class_name(c));
    else out = read_str(f, a, key, err, errlen);
    H5Aclose(a);
    return out;
}

/* A numeric attribute read as memtype: an integer one when integer is set, else any number. */
static int get_attr_num(hid_t f, const char *obj, const char *key, hid_t memtype, void *val, int integer,
                        char *err, size_t errlen) {
    H5T_class_t c;
    hid_t a = attr_open(f, obj, key, &c, err, errlen);
    if (a == -1) return 1;
    if (a < 0) return -1;
    int rc = 0;
    if (integer ? c != H5T_INTEGER : c != H5T_FLOAT && c != H5T_INTEGER)
        rc = util_fail(err, errlen, file_name(f), "attribute '%s' is %s, expected %s", key, class_name(c),
                  integer ? "an integer" : "a number");
    else if (H5Aread(a, memtype, val) < 0)
        rc = util_fail(err, errlen, file_name(f), "cannot read %s attribute '%s'", integer ? "integer" : "numeric", key);
    H5Aclose(a);
    return rc;
}

int h5io_get_attr_int(hid_t f, const char *obj, const char *key, long long *val, char *err, size_t errlen) {
    return get_attr_num(f, obj, key, H5T_NATIVE_LLONG, val, 1, err, errlen);
}

int h5io_get_attr_dbl(hid_t f, const char *obj, const char *key, double *val, char *err, size_t errlen) {
    return get_attr_num(f, obj, key, H5T_NATIVE_DOUBLE, val, 0, err, errlen);
}

int h5io_copy(hid_t src, const char *name, hid_t dst) {
    hid_t ocpy = H5Pcreate(H5P_OBJECT_COPY);
    herr_t e = H5Ocopy(src, name, dst, name, ocpy, H5P_DEFAULT);
    H5Pclose(ocpy);
    return e < 0 ? write_failed(dst, "cannot copy '%s'", name) : 0;
}

hid_t h5io_chunked_f64(hid_t f, const char *name, int rank, const hsize_t *dims, const hsize_t *chunk) {
    if (ensure_groups(f, name) < 0) return -1;
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(dcpl, 0);
    H5Pset_chunk(dcpl, rank, chunk);
    double nan = NAN;
    H5Pset_fill_value(dcpl, H5T_NATIVE_DOUBLE, &nan);
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(f, name, H5T_IEEE_F64LE, sp, lcpl, dcpl, H5P_DEFAULT);
    H5Sclose(sp);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
    if (d < 0) return write_failed(f, "cannot create dataset '%s'", name);
    return d;
}

/* count elements at start of dataset d from data (memtype in memory). */
static herr_t write_slab(hid_t d, int rank, const hsize_t *start, const hsize_t *count, hid_t memtype, const void *data) {
    hid_t fs = H5Dget_space(d);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(rank, count, NULL);
    herr_t e = H5Dwrite(d, memtype, ms, fs, H5P_DEFAULT, data);
    H5Sclose(ms);
    H5Sclose(fs);
    return e;
}

int h5io_write_slab_f64(hid_t d, int rank, const hsize_t *start, const hsize_t *count, const double *data) {
    if (write_slab(d, rank, start, count, H5T_NATIVE_DOUBLE, data) < 0)
        return write_failed(d, "cannot write a slab of a float64 dataset");
    return 0;
}

hid_t h5io_dataset_f32(hid_t f, const char *name, int rank, const hsize_t *dims) {
    hid_t sp = H5Screate_simple(rank, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(dcpl, 0);   /* no creation time in the header: the same bytes every run */
    hid_t d = H5Dcreate2(f, name, H5T_IEEE_F32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(sp);
    if (d < 0) return write_failed(f, "cannot create dataset '%s'", name);
    return d;
}

int h5io_write_slab_f32(hid_t d, int rank, const hsize_t *start, const hsize_t *count, const float *data) {
    if (write_slab(d, rank, start, count, H5T_NATIVE_FLOAT, data) < 0)
        return write_failed(d, "cannot write a slab of a float32 dataset");
    return 0;
}

void h5io_close_dataset(hid_t d) {
    if (d >= 0) H5Dclose(d);
}

int h5io_deflate_level(hid_t f, const char *name) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    hid_t dcpl = d < 0 ? -1 : H5Dget_create_plist(d);
    int level = 0, n = dcpl < 0 ? -1 : H5Pget_nfilters(dcpl);
    for (int i = 0; i < n; i++) {
        unsigned flags, cd[8];
        size_t ncd = 8;
        if (H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, 0, NULL, NULL) == H5Z_FILTER_DEFLATE && ncd >= 1)
            level = cd[0] <= 9 ? (int)cd[0] : -1;
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    if (d >= 0) H5Dclose(d);
    return n < 0 ? -1 : level;
}

/* The scale dataset path (int32 0..n-1) for axis `name`, made a dimension scale when new. */
static int ensure_scale(hid_t f, const char *path, const char *name, hsize_t n) {
    if (h5io_exists(f, path)) return 0;
    int *idx = xmalloc(sizeof *idx * (n ? n : 1));
    for (hsize_t k = 0; k < n; k++) idx[k] = (int)k;
    int rc = h5io_write_i32(f, path, 1, &n, idx);
    free(idx);
    if (rc < 0) return -1;
    hid_t s = H5Dopen2(f, path, H5P_DEFAULT);
    H5DSset_scale(s, name);
    H5Dclose(s);
    return 0;
}

/* Dimension scales: one int32 dataset 0..n-1 per axis name in group scope (netCDF-4 style, so
 * h5netcdf/xarray name the axes), made on first use, attached to the dataset; plus the same
 * names as dimension labels (h5py's dset.dims[i].label). A scale of another length under the
 * same name is a programming error. */
int h5io_label_dims(hid_t f, const char *dset, const char *scope, int rank, const char *const *names) {
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
    if (d < 0) return write_failed(f, "cannot open dataset '%s' to label its axes", dset);
    hsize_t dims[16];
    hid_t sp = H5Dget_space(d);
    int r = H5Sget_simple_extent_ndims(sp);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    H5Sclose(sp);
    int rc = 0;
    if (r != rank || r > 16) rc = write_failed(f, "dataset '%s' has rank %d, %d axis names given", dset, r, rank);
    for (int i = 0; i < rank && rc == 0; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", strcmp(scope, "/") ? scope : "", names[i]);
        if (ensure_scale(f, path, names[i], dims[i]) < 0) { rc = -1; break; }
        hid_t s = H5Dopen2(f, path, H5P_DEFAULT);
        hsize_t n;
        hid_t ssp = H5Dget_space(s);
        H5Sget_simple_extent_dims(ssp, &n, NULL);
        H5Sclose(ssp);
        if (n != dims[i] || H5DSattach_scale(d, s, (unsigned)i) < 0)
            rc = write_failed(f, "cannot attach axis '%s' to dataset '%s'", names[i], dset);
        else
            H5DSset_label(d, (unsigned)i, names[i]);
        H5Dclose(s);
    }
    H5Dclose(d);
    return rc;
}

int h5io_label_attention(hid_t f) {
    static const char *const axes[5] = {"sequence", "layer", "head", "query", "key"};
    /* sampled rows (query_pos): the stored-row axis is "query_row", of length Q, not T */
    static const char *const row_axes[5] = {"sequence", "layer", "head", "query_row", "key"};
    int sampled = h5io_exists(f, "query_pos"), rc = 0;
    rc |= h5io_label_dims(f, "attention", "/", 5, sampled ? row_axes : axes);
    if (sampled) rc |= h5io_label_dims(f, "query_pos", "/", 2, (const char *const[]){"sequence", "query_row"});
    /* token positions are the query axis */
    static const char *const pos[2] = {"sequence", "query"};
    if (h5io_exists(f, "tokens")) rc |= h5io_label_dims(f, "tokens", "/", 2, pos);
    if (h5io_exists(f, "valid")) rc |= h5io_label_dims(f, "valid", "/", 2, pos);
    if (h5io_exists(f, "layer_index")) rc |= h5io_label_dims(f, "layer_index", "/", 1, axes + 1);
    if (h5io_exists(f, "head_index")) rc |= h5io_label_dims(f, "head_index", "/", 1, axes + 2);
    return rc ? -1 : 0;
}

int h5io_describe(hid_t f, const char *dset, const char *long_name, const char *units) {
    int rc = h5io_attr_str(f, dset, "long_name", long_name);
    return h5io_attr_str(f, dset, "units", units) | rc;
}

/* HDF5 plumbing shared by all readers and writers. Files are created with object time tracking
 * off and fixed library-version bounds so that identical content gives identical bytes. */
#include "h5io.h"

#include "cli/cli.h"

#include <H5DSpublic.h>
#include <H5LTpublic.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* HDF5's error-printing setting is per thread in thread-safe builds: every function that may
 * call HDF5 from an OpenMP thread calls this first. */
void h5io_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

static const unsigned char HDF5_SIG[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

/* The superblock sits at 0, 512, 1024, 2048, … */
static int image_is_hdf5(const unsigned char *buf, size_t len) {
    for (size_t off = 0; off + 8 <= len; off = off ? off * 2 : 512)
        if (memcmp(buf + off, HDF5_SIG, 8) == 0) return 1;
    return 0;
}

static hid_t open_image(const char *path, char sha[65]) {
    size_t len;
    unsigned char *buf = cli_slurp(path, &len);
    if (sha) cli_sha256_hex(buf, len, sha);
    if (len == 0) die_data(path, "empty input, expected an HDF5 file");
    if (!image_is_hdf5(buf, len)) die_data(path, "not an HDF5 file");
    /* HDF5 keeps its own copy of the image */
    hid_t f = H5LTopen_file_image(buf, len, 0);
    free(buf);
    if (f < 0) die_data(path, "truncated or corrupt HDF5 file");
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

hid_t h5io_open(const char *path, char sha[65]) {
    h5io_quiet();
    if (cli_is_stdio(path)) {
        hid_t f = open_image(path, sha);
        remember_name(f, path);
        return f;
    }
    struct stat st;
    if (stat(path, &st) != 0) die_data(path, "cannot open: %s", strerror(errno));
    if (S_ISDIR(st.st_mode)) die_data(path, "is a directory, expected an HDF5 file");
    if (st.st_size == 0) die_data(path, "empty file, expected an HDF5 file");
    if (H5Fis_hdf5(path) <= 0) die_data(path, "not an HDF5 file");
    cli_input_note(path);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) die_data(path, "truncated or corrupt HDF5 file");
    if (sha && cli_sha256_file(path, sha) != 0) die_data(path, "cannot read for checksum");
    remember_name(f, path);
    return f;
}

/* Which created file belongs to which output path (stdout images have no file name). */
#define MAX_CREATED 32
static struct { hid_t f; char *image, *file, *shown; int netcdf; } g_created[MAX_CREATED];

/* The output an object being written belongs to, for error lines: its path, or (stdout). Not
 * "-", which names stdin. */
static const char *out_name(hid_t obj) {
    char buf[4096];
    if (H5Fget_name(obj, buf, sizeof buf) > 0)
        for (int i = 0; i < MAX_CREATED; i++)
            if (g_created[i].f && !strcmp(g_created[i].file, buf)) return g_created[i].shown;
    return "(output)";
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
static char *stdout_tmp_name(void) {
    const char *dir = getenv("TMPDIR");
    size_t n = strlen(dir && *dir ? dir : "/tmp") + 40;
    char *name = xmalloc(n);
    snprintf(name, n, "%s/attncoda-stdout-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(name);
    if (fd < 0) die_data("(stdout)", "cannot create a temporary file for stdout: %s", strerror(errno));
    cli_temp_add(name);
    close(fd);
    return name;
}

static hid_t create_file(const char *path, int netcdf) {
    h5io_quiet();
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    /* v18 object headers allow attributes over 64 KiB (long provenance chains) */
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V110);
    hid_t fcpl = file_create_plist(netcdf);
    const char *tmp = cli_out_begin(path);
    char *image = tmp ? NULL : stdout_tmp_name();
    hid_t f = H5Fcreate(tmp ? tmp : image, H5F_ACC_TRUNC, fcpl, fapl);
    H5Pclose(fapl);
    H5Pclose(fcpl);
    if (f < 0) die_data(path, "cannot create HDF5 output");
    for (int i = 0; i < MAX_CREATED; i++)
        if (g_created[i].f == 0) {
            g_created[i].f = f, g_created[i].image = image, g_created[i].netcdf = netcdf;
            g_created[i].file = xstrdup(tmp ? tmp : image), g_created[i].shown = xstrdup(tmp ? path : "(stdout)");
            break;
        }
    return f;
}

hid_t h5io_create(const char *path) { return create_file(path, 0); }

hid_t h5io_create_netcdf(const char *path) {
    hid_t f = create_file(path, 1);
    h5io_attr_str(f, "/", "Conventions", "CF-1.8");
    return f;
}

void h5io_finish(hid_t f, const char *path) {
    char *image = NULL;
    for (int i = 0; i < MAX_CREATED; i++)
        if (g_created[i].f == f) {
            image = g_created[i].image;
            free(g_created[i].file), free(g_created[i].shown);
            g_created[i].f = 0, g_created[i].image = g_created[i].file = g_created[i].shown = NULL;
            g_created[i].netcdf = 0;
            break;
        }
    if (H5Fclose(f) < 0) die_data(path, "cannot close HDF5 output");
    if (!image) { cli_out_commit(path); return; }
    size_t n;
    unsigned char *buf = cli_slurp(image, &n);
    cli_temp_remove(image);
    free(image);
    cli_write_bytes("-", buf, n);
    free(buf);
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

int h5io_dims(hid_t f, const char *file, const char *name, hsize_t *dims, int maxrank) {
    if (!h5io_exists(f, name)) die_data(file, "missing dataset '%s'", name);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) die_data(file, "cannot open dataset '%s'", name);
    hid_t sp = H5Dget_space(d);
    int rank = H5Sget_simple_extent_ndims(sp);
    if (rank < 0 || rank > maxrank) die_data(file, "dataset '%s' has rank %d, expected at most %d", name, rank, maxrank);
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

static void *read_typed(hid_t f, const char *file, const char *name, int rank, const hsize_t *want,
                        hsize_t *dims, hid_t memtype, size_t elsize) {
    hsize_t got[16];
    int r = h5io_dims(f, file, name, got, 16);
    if (r != rank) die_data(file, "dataset '%s' has rank %d, expected %d", name, r, rank);
    size_t n = 1;
    for (int i = 0; i < r; i++) {
        if (want && want[i] && got[i] != want[i])
            die_data(file, "dataset '%s' dimension %d is %llu, expected %llu", name, i,
                     (unsigned long long)got[i], (unsigned long long)want[i]);
        if (got[i] && n > (SIZE_MAX / elsize) / got[i])
            die_data(file, "dataset '%s' is too large to read (dimension %d is %llu)", name, i, (unsigned long long)got[i]);
        n *= got[i];
        if (dims) dims[i] = got[i];
    }
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    char why[160];
    if (h5io_storage_problem(d, (unsigned long long)n, why, sizeof why))
        die_data(file, "dataset '%s' %s", name, why);
    void *buf = xmalloc(n * elsize);
    if (H5Dread(d, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
        die_data(file, "cannot read dataset '%s' (truncated or wrong type)", name);
    H5Dclose(d);
    return buf;
}

double *h5io_read_f64(hid_t f, const char *file, const char *name, int rank, const hsize_t *want, hsize_t *dims) {
    return read_typed(f, file, name, rank, want, dims, H5T_NATIVE_DOUBLE, sizeof(double));
}
int *h5io_read_i32(hid_t f, const char *file, const char *name, int rank, const hsize_t *want, hsize_t *dims) {
    return read_typed(f, file, name, rank, want, dims, H5T_NATIVE_INT, sizeof(int));
}
float *h5io_read_f32(hid_t f, const char *file, const char *name, int rank, const hsize_t *want, hsize_t *dims) {
    return read_typed(f, file, name, rank, want, dims, H5T_NATIVE_FLOAT, sizeof(float));
}

/* Groups on the way to name, created without timestamps (the default group creation list
 * would record times and break byte-identical outputs). */
static void ensure_groups(hid_t f, const char *name) {
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
            if (g < 0) die_data(out_name(f), "cannot create group '%s'", buf);
            H5Gclose(g);
            H5Pclose(gcpl);
        }
        *p = '/';
    }
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

static void netcdf_fill_attr(hid_t d, hid_t filetype) {
    if (H5Tget_class(filetype) != H5T_FLOAT) return;
    double nan = NAN;
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(d, "_FillValue", filetype, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, H5T_NATIVE_DOUBLE, &nan) < 0) die_data(out_name(d), "cannot write attribute '_FillValue'");
    H5Aclose(a);
    H5Sclose(sp);
}

/* Create intermediate groups, then a contiguous (small) or chunked+deflated (large) dataset. */
static void write_typed(hid_t f, const char *name, int rank, const hsize_t *dims, hid_t memtype,
                        hid_t filetype, const void *data) {
    ensure_groups(f, name);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(dcpl, 0);
    int netcdf = is_netcdf(f);
    if (netcdf) track_order(dcpl, 0), netcdf_fill(dcpl, filetype);
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(f, name, filetype, sp, lcpl, dcpl, H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
        die_data(out_name(f), "cannot write dataset '%s'", name);
    if (netcdf) netcdf_fill_attr(d, filetype);
    H5Dclose(d);
    H5Sclose(sp);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
}

void h5io_write_f64(hid_t f, const char *name, int rank, const hsize_t *dims, const double *data) {
    write_typed(f, name, rank, dims, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, data);
}
void h5io_write_i32(hid_t f, const char *name, int rank, const hsize_t *dims, const int *data) {
    write_typed(f, name, rank, dims, H5T_NATIVE_INT, H5T_STD_I32LE, data);
}
void h5io_write_f32(hid_t f, const char *name, int rank, const hsize_t *dims, const float *data) {
    write_typed(f, name, rank, dims, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, data);
}

static void attr_write(hid_t f, const char *obj, const char *key, hid_t type, hid_t memtype, const void *val) {
    if (H5Aexists_by_name(f, obj, key, H5P_DEFAULT) > 0) H5Adelete_by_name(f, obj, key, H5P_DEFAULT);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate_by_name(f, obj, key, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, memtype, val) < 0) die_data(out_name(f), "cannot write attribute '%s'", key);
    H5Aclose(a);
    H5Sclose(sp);
}

/* Variable-length UTF-8, so h5py returns str (fixed-length ASCII strings come back as bytes);
 * h5io_get_attr_str reads both, so files written before this still read. */
void h5io_attr_str(hid_t f, const char *obj, const char *key, const char *val) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    attr_write(f, obj, key, t, t, &val);
    H5Tclose(t);
}
void h5io_attr_int(hid_t f, const char *obj, const char *key, long long val) {
    attr_write(f, obj, key, H5T_STD_I64LE, H5T_NATIVE_LLONG, &val);
}
void h5io_attr_dbl(hid_t f, const char *obj, const char *key, double val) {
    attr_write(f, obj, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &val);
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
 * (h5py writes both), since H5Aread writes every element into the caller's single value. */
static hid_t attr_open(hid_t f, const char *obj, const char *key, H5T_class_t *cls) {
    if (H5Aexists_by_name(f, obj, key, H5P_DEFAULT) <= 0) return -1;
    hid_t a = H5Aopen_by_name(f, obj, key, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) die_data(file_name(f), "cannot open attribute '%s'", key);
    hid_t sp = H5Aget_space(a);
    H5S_class_t sc = H5Sget_simple_extent_type(sp);
    int rank = H5Sget_simple_extent_ndims(sp);
    hssize_t n = H5Sget_simple_extent_npoints(sp);
    H5Sclose(sp);
    if (sc == H5S_NULL) die_data(file_name(f), "attribute '%s' holds no value (null dataspace)", key);
    if (rank < 0 || rank > 1 || n != 1)
        die_data(file_name(f), "attribute '%s' holds %lld values (rank %d), expected a single value", key,
                 (long long)n, rank);
    hid_t t = H5Aget_type(a);
    *cls = H5Tget_class(t);
    H5Tclose(t);
    return a;
}

/* Longest fixed-size string attribute accepted (provenance chains are the longest real ones). */
#define ATTR_STR_MAX ((size_t)64 << 20)

static char *read_str(hid_t f, hid_t a, const char *key) {
    hid_t t = H5Aget_type(a);
    hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_cset(mt, H5Tget_cset(t));
    char *out = NULL;
    if (H5Tis_variable_str(t) > 0) {
        char *v = NULL;
        H5Tset_size(mt, H5T_VARIABLE);
        if (H5Aread(a, mt, &v) >= 0) {
            out = xstrdup(v ? v : "");
            H5free_memory(v);
        }
    } else {
        size_t n = H5Tget_size(t);
        if (n == 0 || n > ATTR_STR_MAX)
            die_data(file_name(f), "attribute '%s' is a fixed-size string of %zu bytes", key, n);
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
    if (!out) die_data(file_name(f), "cannot read string attribute '%s'", key);
    return out;
}

char *h5io_get_attr_str(hid_t f, const char *obj, const char *key) {
    H5T_class_t c;
    hid_t a = attr_open(f, obj, key, &c);
    if (a < 0) return NULL;
    if (c != H5T_STRING) die_data(file_name(f), "attribute '%s' is %s, expected a string", key, class_name(c));
    char *out = read_str(f, a, key);
    H5Aclose(a);
    return out;
}

int h5io_get_attr_int(hid_t f, const char *obj, const char *key, long long *val) {
    H5T_class_t c;
    hid_t a = attr_open(f, obj, key, &c);
    if (a < 0) return -1;
    if (c != H5T_INTEGER) die_data(file_name(f), "attribute '%s' is %s, expected an integer", key, class_name(c));
    if (H5Aread(a, H5T_NATIVE_LLONG, val) < 0) die_data(file_name(f), "cannot read integer attribute '%s'", key);
    H5Aclose(a);
    return 0;
}

int h5io_get_attr_dbl(hid_t f, const char *obj, const char *key, double *val) {
    H5T_class_t c;
    hid_t a = attr_open(f, obj, key, &c);
    if (a < 0) return -1;
    if (c != H5T_FLOAT && c != H5T_INTEGER)
        die_data(file_name(f), "attribute '%s' is %s, expected a number", key, class_name(c));
    if (H5Aread(a, H5T_NATIVE_DOUBLE, val) < 0) die_data(file_name(f), "cannot read numeric attribute '%s'", key);
    H5Aclose(a);
    return 0;
}

void h5io_copy(hid_t src, const char *name, hid_t dst) {
    hid_t ocpy = H5Pcreate(H5P_OBJECT_COPY);
    if (H5Ocopy(src, name, dst, name, ocpy, H5P_DEFAULT) < 0) die_data(out_name(dst), "cannot copy '%s'", name);
    H5Pclose(ocpy);
}

hid_t h5io_chunked_f64(hid_t f, const char *name, int rank, const hsize_t *dims, const hsize_t *chunk) {
    ensure_groups(f, name);
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
    if (d < 0) die_data(out_name(f), "cannot create dataset '%s'", name);
    return d;
}

void h5io_write_slab_f64(hid_t d, int rank, const hsize_t *start, const hsize_t *count, const double *data) {
    hid_t fs = H5Dget_space(d);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(rank, count, NULL);
    herr_t e = H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, data);
    H5Sclose(ms);
    H5Sclose(fs);
    if (e < 0) die_data(out_name(d), "cannot write a slab of a float64 dataset");
}

/* Dimension scales: one int32 dataset 0..n-1 per axis name in group scope (netCDF-4 style, so
 * h5netcdf/xarray name the axes), made on first use, attached to the dataset; plus the same
 * names as dimension labels (h5py's dset.dims[i].label). A scale of another length under the
 * same name is a programming error. */
void h5io_label_dims(hid_t f, const char *dset, const char *scope, int rank, const char *const *names) {
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
    if (d < 0) die_data(out_name(f), "cannot open dataset '%s' to label its axes", dset);
    hsize_t dims[16];
    hid_t sp = H5Dget_space(d);
    int r = H5Sget_simple_extent_ndims(sp);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    H5Sclose(sp);
    if (r != rank || r > 16) die_data(out_name(f), "dataset '%s' has rank %d, %d axis names given", dset, r, rank);
    for (int i = 0; i < rank; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", strcmp(scope, "/") ? scope : "", names[i]);
        if (!h5io_exists(f, path)) {
            int *idx = xmalloc(sizeof *idx * (dims[i] ? dims[i] : 1));
            for (hsize_t k = 0; k < dims[i]; k++) idx[k] = (int)k;
            h5io_write_i32(f, path, 1, &dims[i], idx);
            free(idx);
            hid_t s = H5Dopen2(f, path, H5P_DEFAULT);
            H5DSset_scale(s, names[i]);
            H5Dclose(s);
        }
        hid_t s = H5Dopen2(f, path, H5P_DEFAULT);
        hsize_t n;
        hid_t ssp = H5Dget_space(s);
        H5Sget_simple_extent_dims(ssp, &n, NULL);
        H5Sclose(ssp);
        if (n != dims[i] || H5DSattach_scale(d, s, (unsigned)i) < 0)
            die_data(out_name(f), "cannot attach axis '%s' to dataset '%s'", names[i], dset);
        H5DSset_label(d, (unsigned)i, names[i]);
        H5Dclose(s);
    }
    H5Dclose(d);
}

void h5io_label_attention(hid_t f) {
    static const char *const axes[5] = {"sequence", "layer", "head", "query", "key"};
    /* sampled rows (query_pos): the stored-row axis is "query_row", of length Q, not T */
    static const char *const row_axes[5] = {"sequence", "layer", "head", "query_row", "key"};
    int sampled = h5io_exists(f, "query_pos");
    h5io_label_dims(f, "attention", "/", 5, sampled ? row_axes : axes);
    if (sampled) h5io_label_dims(f, "query_pos", "/", 2, (const char *const[]){"sequence", "query_row"});
    /* token positions are the query axis */
    static const char *const pos[2] = {"sequence", "query"};
    if (h5io_exists(f, "tokens")) h5io_label_dims(f, "tokens", "/", 2, pos);
    if (h5io_exists(f, "valid")) h5io_label_dims(f, "valid", "/", 2, pos);
    if (h5io_exists(f, "layer_index")) h5io_label_dims(f, "layer_index", "/", 1, axes + 1);
    if (h5io_exists(f, "head_index")) h5io_label_dims(f, "head_index", "/", 1, axes + 2);
}

void h5io_describe(hid_t f, const char *dset, const char *long_name, const char *units) {
    h5io_attr_str(f, dset, "long_name", long_name);
    h5io_attr_str(f, dset, "units", units);
}

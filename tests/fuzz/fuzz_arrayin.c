/* import's foreign-array reader (arrayin), opened the way import opens an INPUT and then read a
 * block at a time. The first byte picks the mode: 0 and 1 take the rest as a .npy, .npz (libzip)
 * or safetensors file, named FILE or FILE:layer_0; 2 is structure-aware HDF5 (as fuzz_attention:
 * libhdf5's own parser is not the project's to fuzz, and raw HDF5 bytes are skipped): the bytes
 * decide how dataset /a is written -- shape (up to 2^40 rows), contiguous, chunked, compact or
 * external storage (/dev/zero or a short file), allocation time, fill value, filters (gzip,
 * shuffle, fletcher32, an optional LZF absent here), a float or integer type, and none, some or
 * all of its data written -- and FILE:/a is read. Blocks are read while the array is small enough
 * to read here (import's own per-block cap is in import.c), so what is fuzzed is every size check
 * before an allocation, the .npy header parser and the streaming of .npz members. */
#include "fuzz.h"

#include <hdf5.h>

#include "io/arrayin.h"
#include "io/h5io.h"

enum { MAX_READ_ELEMS = 1 << 16, MAX_READ_BLOCKS = 16 };

static void read_blocks(ai_array *a) {
    int r = ai_rank(a);
    if (r < 3) return;
    const int64_t *sh = ai_shape(a);
    int64_t blk = sh[r - 3] * sh[r - 2] * sh[r - 1], nlead = 1;
    for (int i = 0; i < r - 3; i++) nlead = sh[i] && nlead > INT64_MAX / sh[i] ? INT64_MAX : nlead * sh[i];
    if (blk <= 0 || blk > MAX_READ_ELEMS || nlead > MAX_READ_ELEMS) return;
    double *out = malloc((size_t)blk * sizeof *out);
    int64_t lead[AI_MAX_RANK] = {0};
    char err[2048];
    for (int64_t k = 0; k < nlead && k < MAX_READ_BLOCKS; k++) {
        int64_t rest = k;
        for (int i = r - 4; i >= 0; i--) lead[i] = rest % sh[i], rest /= sh[i];
        if (ai_read_block(a, lead, out, err, sizeof err)) break;
    }
    free(out);
}

typedef struct { const uint8_t *p; size_t n; } bytes;
static unsigned next(bytes *b) {
    if (!b->n) return 0;
    b->n--;
    return *b->p++;
}

static void write_h5(const char *path, bytes *b) {
    int rank = 3 + (int)(next(b) % 3);
    hsize_t d[5], c[5], n = 1;
    for (int i = 0; i < rank; i++) d[i] = 1 + next(b) % 5;
    int big = next(b) % 4 == 0;
    if (big) d[0] = (hsize_t)1 << (next(b) % 41);     /* declared, never written here */
    for (int i = 0; i < rank; i++) n *= d[i];
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    unsigned layout = next(b) % 4;
    float fill = (float)((int)next(b) - 128) / 64;
    H5Pset_fill_value(dcpl, H5T_NATIVE_FLOAT, &fill);
    /* (a huge dataset: late allocation, no fill written, no data: HDF5 would write it all) */
    H5Pset_alloc_time(dcpl, next(b) % 2 || big ? H5D_ALLOC_TIME_LATE : H5D_ALLOC_TIME_DEFAULT);
    if (big) H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    if (layout == 1) {
        for (int i = 0; i < rank; i++) c[i] = 1 + next(b) % 5;
        H5Pset_chunk(dcpl, rank, c);
        unsigned f = next(b);
        if (f & 1) H5Pset_shuffle(dcpl);
        if (f & 2) H5Pset_deflate(dcpl, 6);
        if (f & 4) H5Pset_fletcher32(dcpl);
        if (f & 8) H5Pset_filter(dcpl, 32000, H5Z_FLAG_OPTIONAL, 0, NULL);
    } else if (layout == 2 && n * 4 < 60000) {
        H5Pset_layout(dcpl, H5D_COMPACT);
    } else if (layout == 3) {
        const char *ext = next(b) % 2 ? "/dev/zero" : fz_file("ext.bin", (const uint8_t *)"0123456789abcdef", 16);
        H5Pset_external(dcpl, ext, 0, n * 4);
    }
    hid_t t = next(b) % 8 ? H5T_IEEE_F32LE : H5T_STD_I32LE;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t sp = H5Screate_simple(rank, d, NULL);
    hid_t ds = H5Dcreate2(f, "a", t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    /* none, the first rows, or all of it (when small), probabilities 1/T with a hostile value */
    unsigned how = next(b) % 3;
    hsize_t rows = how == 0 ? 0 : how == 1 ? 1 + next(b) % d[0] : d[0];
    if (ds >= 0 && rows && !big && n <= (1 << 16)) {
        hsize_t start[5] = {0}, cnt[5];
        memcpy(cnt, d, sizeof cnt);
        cnt[0] = rows;
        size_t m = (size_t)(n / d[0] * rows);
        float *x = malloc(m * sizeof *x);
        for (size_t i = 0; i < m; i++) x[i] = 1.0f / (float)d[rank - 1];
        if (next(b) % 2) x[next(b) % m] = (float)((int)next(b) - 128);
        hid_t ms = H5Screate_simple(rank, cnt, NULL);
        H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, cnt, NULL);
        H5Dwrite(ds, H5T_NATIVE_FLOAT, ms, sp, H5P_DEFAULT, x);
        H5Sclose(ms);
        free(x);
    }
    if (ds >= 0) H5Dclose(ds);
    H5Sclose(sp);
    H5Pclose(dcpl);
    H5Fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    h5io_quiet();
    unsigned mode = data[0] % 3;
    static char path[160];
    if (mode == 2) {
        bytes b = {data + 1, size - 1};
        snprintf(path, sizeof path, "%s/array.h5", fz_tmpdir());
        write_h5(path, &b);
    } else {
        if (size >= 9 && !memcmp(data + 1, "\x89HDF", 4)) return 0;   /* libhdf5's parser: not ours */
        snprintf(path, sizeof path, "%s", fz_file("array.bin", data + 1, size - 1));
    }
    char spec[200];
    snprintf(spec, sizeof spec, "%s%s", path, mode == 2 ? ":/a" : mode == 1 ? ":layer_0" : "");
    ai_set *set = ai_new();
    char err[2048];
    if (ai_add(set, spec, err, sizeof err) == 0)
        for (int i = 0; i < ai_count(set); i++) read_blocks(ai_at(set, i));
    ai_close(set);
    return 0;
}

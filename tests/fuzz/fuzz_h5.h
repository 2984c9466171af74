/* fuzz_h5.h: for the harnesses whose reader opens HDF5 files. */
#ifndef ATTNCODA_FUZZ_H5_H
#define ATTNCODA_FUZZ_H5_H
#include <hdf5.h>
#include <stdlib.h>

/* A die_* of the program layer (cli: out of memory, an unreadable file) jumped out of a reader with
 * HDF5 objects open: close them all before the next input, so that neither leaks nor open files
 * pile up. The readers themselves return their errors with what they opened closed. */
static void fz_close_h5_objects(void) {
    ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    if (n <= 0) return;
    hid_t *ids = malloc((size_t)n * sizeof *ids);
    n = H5Fget_obj_ids(H5F_OBJ_ALL, H5F_OBJ_ALL, (size_t)n, ids);
    for (ssize_t i = 0; i < n; i++)
        while (H5Iis_valid(ids[i]) > 0 && H5Idec_ref(ids[i]) > 0) {}
    free(ids);
}
#endif

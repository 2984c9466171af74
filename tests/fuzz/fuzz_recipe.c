/* Training recipes (configs/kjv-*.conf): key = value lines. The reader returns its errors and
 * frees what it held, so a rejected input is no jump and no leak. */
#include "fuzz.h"
#include "train/train_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_file("recipe.conf", data, size);
    tr_recipe r;
    char err[1024];
    tr_recipe_load(&r, path, err, sizeof err);
    return 0;
}

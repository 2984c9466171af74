/* Training recipes (configs/kjv-*.conf): key = value lines. */
#include "fuzz.h"
#include "train/train_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_file("recipe.conf", data, size);
    fz_track_begin();
    if (setjmp(fz_jump)) {   /* rejected: one line, as the program would exit 1 */
        fz_track_end(1);
        return 0;
    }
    tr_recipe r;
    tr_recipe_load(&r, path);
    fz_track_end(0);
    return 0;
}

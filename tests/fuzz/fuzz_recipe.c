/* Training recipes (configs/kjv-*.conf): key = value lines. */
#include "fuzz.h"
#include "train_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_file("recipe.conf", data, size);
    if (setjmp(fz_jump)) return 0;   /* rejected: one line, as the program would exit 1 */
    tr_recipe r;
    tr_recipe_load(&r, path);
    return 0;
}

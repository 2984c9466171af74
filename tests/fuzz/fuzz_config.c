/* config.json of a Hugging Face directory: everything parse_config reads, up to the missing
 * weights (the directory holds no safetensors, so the loader always stops there or earlier). */
#include "fuzz.h"
#include "model/model.h"
#include "model/model_load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_file("config.json", data, size);
    char err[1024];
    model *m = model_load_hf(fz_tmpdir(), err, sizeof err);
    if (m) model_free(m);
    return 0;
}

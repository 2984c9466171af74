/* safetensors: the header and every tensor as float32. */
#include "fuzz.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_file("model.safetensors", data, size);
    char err[1024];
    st_set *s = st_open_file(path, err, sizeof err);
    if (!s) return 0;
    for (int i = 0; i < st_count(s); i++) {
        const st_tensor *t = st_at(s, i);
        const float *x = st_f32(s, t, err, sizeof err);
        volatile float sum = 0;
        for (int64_t k = 0; x && k < t->numel; k++) sum += x[k];
        (void)sum;
    }
    st_close(s);
    return 0;
}

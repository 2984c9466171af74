/* extract's --ids and --mask parsers (model/inputs.h). The first byte picks the parser and
 * whether the model is causal. The parsers return their errors and free what they held, so a
 * rejected input is no jump and no leak. */
#include "fuzz.h"
#include "model/inputs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    enum { VOCAB = 512, LAYERS = 4, HEADS = 4 };
    int causal = data[0] & 1, mask = data[0] & 2;
    const char *path = fz_file(mask ? "mask.txt" : "ids.txt", data + 1, size - 1);
    char err[1024];
    if (mask) {
        free(inputs_read_mask(path, LAYERS, HEADS, err, sizeof err));
        return 0;
    }
    seq_batch b;
    memset(&b, 0, sizeof b);
    if (inputs_read_ids(path, VOCAB, -1, causal, &b, err, sizeof err)) return 0;
    free(b.ids);
    free(b.valid);
    free(b.upstream);
    return 0;
}

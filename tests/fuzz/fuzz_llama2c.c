/* llama2.c: a checkpoint (header + weights) and a tok*.bin tokenizer from the same bytes. */
#include "fuzz.h"
#include "model/model.h"
#include "model/model_load.h"
#include "tok/tok.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_file("model.bin", data, size);
    char err[1024];
    model *m = model_load_llama2c(path, err, sizeof err);
    if (m) model_free(m);
    tok *t = tok_load_llama2c(path, err, sizeof err);
    if (t) {
        int32_t *ids = NULL;
        int n = tok_encode(t, "In the beginning", 16, &ids);
        char buf[256];
        for (int i = 0; i < tok_vocab_size(t) && i < 1024; i++) tok_decode_piece(t, -1, i, buf, sizeof buf);
        for (int i = 0; i < n; i++) tok_decode_piece(t, i ? ids[i - 1] : -1, ids[i], buf, sizeof buf);
        free(ids);
        tok_free(t);
    }
    return 0;
}

/* extract's --ids and --mask parsers (static in src/extract.c, so the program is included here
 * with its main renamed). The first byte picks the parser and whether the model is causal. */
#define main extract_main
#include "../../src/extract.c"
#undef main
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    model m;
    memset(&m, 0, sizeof m);
    m.cfg.vocab = 512, m.cfg.n_layer = 4, m.cfg.n_head = 4, m.cfg.pad_id = -1, m.cfg.causal = data[0] & 1;
    int mask = data[0] & 2;
    const char *path = fz_file(mask ? "mask.txt" : "ids.txt", data + 1, size - 1);
    fz_track_begin();
    if (setjmp(fz_jump)) {   /* rejected, as the program would exit 1 */
        fz_track_end(1);
        return 0;
    }
    if (mask) {
        free(read_mask(path, &m.cfg));
        fz_track_end(0);
        return 0;
    }
    opts o;
    memset(&o, 0, sizeof o);
    o.ids = path;
    batch b;
    memset(&b, 0, sizeof b);
    read_ids(&o, &m, &b);
    free(b.ids);
    free(b.valid);
    free(b.upstream);
    fz_track_end(0);
    return 0;
}

/* Every tokenizer file format, chosen by the first byte: tokenizer.json (byte-level BPE,
 * SentencePiece-style BPE, WordPiece, Unigram), vocab.txt, a tokenizer.model (tiktoken text, or a
 * SentencePiece protobuf when it starts with byte 0x0A), or vocab.json + merges.txt (the rest
 * split at the first NUL). Then a fixed text
 * with added-token, byte-fallback and non-ASCII cases is encoded and decoded again. */
#include "fuzz.h"
#include "tok/tok.h"

static const char *const FAMILIES[] = {"gpt2", "gpt_neox", "llama", "qwen2", "bert", "spm"};
static const char TEXT[] = "In the beginning God created\n\t the heaven <|endoftext|> [CLS] <s> caf\xc3\xa9 \xe4\xb8\xad  x"
                           "\xef\xac\x81 e\xcc\x81 \xe2\x96\x81\xe2\x96\x81 \xf0\x9f\x98\x8a";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *family = FAMILIES[(data[0] >> 2) % 6];
    int kind = data[0] & 3;
    data++, size--;
    char path[160];
    if (kind == 0) snprintf(path, sizeof path, "%s", fz_file("tokenizer.json", data, size));
    else if (kind == 1) snprintf(path, sizeof path, "%s", fz_file("vocab.txt", data, size));
    else if (kind == 2) snprintf(path, sizeof path, "%s", fz_file("tokenizer.model", data, size));
    else {
        const uint8_t *nul = memchr(data, 0, size);
        size_t a = nul ? (size_t)(nul - data) : size;
        fz_file("merges.txt", nul ? nul + 1 : data + size, nul ? size - a - 1 : 0);
        snprintf(path, sizeof path, "%s", fz_file("vocab.json", data, a));
    }
    char err[1024];
    tok *t = tok_load(path, family, err, sizeof err);
    if (!t) return 0;
    int32_t *ids = NULL;
    int n = tok_encode(t, TEXT, sizeof TEXT - 1, &ids);
    char buf[256];
    for (int i = 0; i < n; i++) tok_decode_piece(t, i ? ids[i - 1] : -1, ids[i], buf, sizeof buf);
    free(ids);
    tok_free(t);
    return 0;
}

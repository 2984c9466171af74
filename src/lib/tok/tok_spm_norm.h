/* tok_spm_norm: SentencePiece's precompiled charsmap normaliser, on tok_base alone. */
#ifndef ATTNCODA_TOK_SPM_NORM_H
#define ATTNCODA_TOK_SPM_NORM_H
#include <stddef.h>

typedef struct tok_precompiled tok_precompiled;
/* SentencePiece's precompiled_charsmap (tok_spm_norm.c): parse the raw bytes (after base64);
 * NULL with err filled when malformed. Apply: HF's Precompiled normalizer on valid UTF-8. */
tok_precompiled *tok_precompiled_parse(const unsigned char *d, size_t n, char *err, size_t errlen);
char *tok_precompiled_apply(const tok_precompiled *pc, const char *s, size_t len, size_t *outlen);
void tok_precompiled_free(tok_precompiled *pc);
#endif

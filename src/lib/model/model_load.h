/* model_load: the three loaders side by side (model_hf.c, model_gguf.c, llama2c.c), each a file
 * reader's output mapped onto model.h's structure, and the dispatch that picks one (model_load.c).
 * None of them uses another. */
#ifndef ATTNCODA_MODEL_LOAD_H
#define ATTNCODA_MODEL_LOAD_H
#include <stddef.h>

#include "model.h"

/* Loaders. model_load dispatches on the path: a directory (Hugging Face config.json +
 * safetensors), *.gguf, or a llama2.c *.bin. NULL + message in err on failure. */
model *model_load(const char *path, char *err, size_t errlen);
model *model_load_hf(const char *dir, char *err, size_t errlen);
/* The configuration of a Hugging Face directory from config.json alone (no weights read;
 * w.layers holds only each layer's window). */
model *model_load_hf_config(const char *dir, char *err, size_t errlen);
model *model_load_gguf(const char *path, char *err, size_t errlen);
model *model_load_llama2c(const char *path, char *err, size_t errlen);
#endif

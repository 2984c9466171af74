/* model_load: one entry point for every model file kind. A directory is a Hugging Face
 * checkpoint, a *.gguf file goes to the GGUF loader, anything else is taken as a llama2.c
 * checkpoint. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "model.h"
#include "model_load.h"

model *model_load(const char *path, char *err, size_t errlen) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(err, errlen, "%s: no such file or directory", path);
        return NULL;
    }
    if (S_ISDIR(sb.st_mode)) return model_load_hf(path, err, errlen);
    size_t n = strlen(path);
    if (n >= 5 && !strcmp(path + n - 5, ".gguf")) return model_load_gguf(path, err, errlen);
    return model_load_llama2c(path, err, errlen);
}

/* image: PNG/JPEG decoding (libpng, libjpeg-turbo behind image_decode), then the bilinear resize
 * and ViT preprocessing of whatever decoded. The first byte picks the target size (1..32). */
#include <stdlib.h>

#include "fuzz.h"
#include "io/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int side = 1 + data[0] % 32;
    char err[1024];
    image_rgb im;
    if (image_decode("fuzz.png", data + 1, size - 1, &im, err, sizeof err)) return 0;
    if ((long long)im.w * im.h <= 1 << 22) {   /* keep one run short; bigger images only decode */
        image_prep p = {.do_resize = 1, .height = side, .width = side, .do_rescale = 1, .rescale_factor = 1.0 / 255,
                        .do_normalize = 1, .mean = {0.5f, 0.5f, 0.5f}, .std = {0.5f, 0.5f, 0.5f}};
        float *px = malloc(sizeof(float) * 3 * side * side);
        uint8_t *tmp = malloc((size_t)3 * side * side);
        image_pixels(&p, &im, px, tmp);
        free(px);
        free(tmp);
    }
    image_free(&im);
    return 0;
}

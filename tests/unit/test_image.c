/* test_image: the bilinear resize against the facts of docs/FAMILIES.md §12, worked out
 * by hand, and the colour conversions and EXIF orientations on tiny in-memory images. Pillow
 * itself is the reference in tests/t-vit.sh; these are the cases one can check on paper. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/image.h"

static int failures;
#define CHECK(cond, ...)                                        \
    do {                                                        \
        printf("%s - ", (cond) ? "ok" : "not ok");              \
        printf(__VA_ARGS__);                                    \
        printf("\n");                                           \
        failures += !(cond);                                    \
    } while (0)

/* grey image of w×h as RGB */
static uint8_t *grey_rgb(const uint8_t *g, int w, int h) {
    uint8_t *rgb = malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h; i++) rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = g[i];
    return rgb;
}

int main(void) {
    /* shrinking 32 → 8 along x: weights (1,3,5,7,7,5,3,1)/32, so one bright column in four
     * becomes about 255·16/64 ≈ 64 everywhere (the spec's example) */
    enum { W = 32, H = 1 };
    uint8_t g[W * H], out[8 * 3];
    for (int x = 0; x < W; x++) g[x] = x % 4 == 0 ? 255 : 0;
    uint8_t *rgb = grey_rgb(g, W, H);
    image_resize_bilinear(rgb, W, H, out, 8, 1);
    int lo = 255, hi = 0;
    for (int x = 1; x < 7; x++) lo = out[3 * x] < lo ? out[3 * x] : lo, hi = out[3 * x] > hi ? out[3 * x] : hi;
    CHECK(lo >= 62 && hi <= 66, "shrink x4 averages all covered pixels: interior outputs in [%d, %d] ~ 64", lo, hi);
    /* output 1: centre 6, taps 2..9 with weights (1,3,5,7,7,5,3,1)/32; the bright columns 4 and 8
     * carry 5 + 3 → 255·8/32 = 63.75 → 64 */
    CHECK(out[3] == 64, "shrink x4, output 1 = round(255*8/32) = 64 (got %d)", out[3]);
    free(rgb);

    /* same size: a copy, no resampling */
    uint8_t px[6] = {10, 20, 30, 40, 50, 60}, same[6];
    image_resize_bilinear(px, 2, 1, same, 2, 1);
    CHECK(!memcmp(px, same, 6), "same size is an exact copy");

    /* upscaling 2 → 4: centres at 0.5: outputs 0.25/0.75 of the way → 0, 64, 191, 255 for 0, 255 */
    uint8_t two[2] = {0, 255}, up[12];
    rgb = grey_rgb(two, 2, 1);
    image_resize_bilinear(rgb, 2, 1, up, 4, 1);
    CHECK(up[0] == 0 && up[3] == 64 && up[6] == 191 && up[9] == 255, "upscale x2 = 0 64 191 255 (got %d %d %d %d)",
          up[0], up[3], up[6], up[9]);
    free(rgb);

    /* pixel values: rescale 1/255 in double then float32, normalise (t − 0.5)/0.5 in float32 */
    image_prep p = {.do_resize = 1, .height = 1, .width = 1, .do_rescale = 1, .rescale_factor = 1.0 / 255,
                    .do_normalize = 1, .mean = {0.5f, 0.5f, 0.5f}, .std = {0.5f, 0.5f, 0.5f}};
    uint8_t c[3] = {0, 255, 128}, tmp[3];
    image_rgb im = {.w = 1, .h = 1, .rgb = c};
    float v[3];
    image_pixels(&p, &im, v, tmp);
    float t = (float)(128 * (1.0 / 255));
    CHECK(v[0] == -1.0f && v[1] == 1.0f && v[2] == (t - 0.5f) / 0.5f, "pixel values -1, 1, (float(128/255)-0.5)/0.5");

    /* decoding refuses what is not a PNG or JPEG, by its bytes */
    char err[256];
    image_rgb out2;
    const unsigned char tiff[8] = {'I', 'I', '*', 0, 8, 0, 0, 0}, text[] = "hello";
    CHECK(image_decode("a.png", tiff, 8, &out2, err, sizeof err) && strstr(err, "a.png: TIFF"), "TIFF bytes: %s", err);
    CHECK(image_decode("b.png", text, 5, &out2, err, sizeof err) && strstr(err, "not a PNG or JPEG"), "text: %s", err);
    CHECK(image_decode("c.png", text, 0, &out2, err, sizeof err) && strstr(err, "empty file"), "empty: %s", err);
    return failures != 0;
}

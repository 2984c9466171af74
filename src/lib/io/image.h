/* image: PNG and JPEG files in, a vision transformer's pixel_values out. Decoding goes through
 * Debian's libpng and libjpeg-turbo (no hand-written decoders); colour conversion to RGB follows
 * PIL's convert("RGB"), and the preprocessing is Hugging Face's ViTImageProcessor with PIL's
 * antialiased bilinear resize, exactly (docs/FAMILIES.md §12). Every function
 * that reads a file returns 0, or -1 with "file: what is wrong" in err. */
#ifndef ATTNCODA_IMAGE_H
#define ATTNCODA_IMAGE_H
#include <stddef.h>
#include <stdint.h>

/* Decoded pixels, 8-bit RGB interleaved, row-major: rgb[(y*w + x)*3 + c]. */
typedef struct {
    int w, h;
    uint8_t *rgb;
} image_rgb;

/* The largest image accepted, in pixels (PIL's decompression-bomb error threshold). */
#define IMAGE_MAX_PIXELS 178956970LL

/* Decode a PNG or JPEG held in memory (the format is taken from its first bytes, never from the
 * name; name only labels the messages). PIL's convert("RGB"): grey (1, 2, 4, 8 bits) is
 * repeated, palettes are looked up, alpha is dropped without compositing, 16-bit colour keeps
 * the high byte, 16-bit grey is clipped to 255 (PIL's mode I), CMYK JPEG (Adobe-inverted) becomes
 * (255−k)−c(255−k)/255 per channel. Then the EXIF orientation (JPEG APP1, PNG eXIf) is applied
 * as PIL's ImageOps.exif_transpose, which HF's load_image calls. */
int image_decode(const char *name, const unsigned char *buf, size_t len, image_rgb *out, char *err, size_t errlen);
void image_free(image_rgb *im);

/* PIL's Image.resize(..., BILINEAR) of an 8-bit RGB image (libImaging/Resample.c): separable
 * triangle filter widened by the shrink factor, 22-bit fixed-point weights, horizontal pass
 * first, uint8 between the passes; a pass whose size is unchanged is skipped. */
void image_resize_bilinear(const uint8_t *in, int iw, int ih, uint8_t *out, int ow, int oh);

/* ViTImageProcessor settings (preprocessor_config.json, else the class defaults). */
typedef struct {
    int do_resize, height, width;
    int do_rescale;
    double rescale_factor;
    int do_normalize;
    float mean[3], std[3];
    int from_file;        /* 1 when preprocessor_config.json was read */
    char sha256[65];      /* its checksum when read */
} image_prep;

/* dir/preprocessor_config.json when present (defaults otherwise); the target size must equal
 * the model's image_size, since positions are not interpolated. */
int image_prep_load(const char *dir, int image_size, image_prep *p, char *path, size_t pathlen, char *err,
                    size_t errlen);
/* pixel_values of one image, channels first: px[c][y][x], c = R, G, B (3·height·width floats).
 * tmp is scratch of 3·height·width bytes. Returns -1 when the image does not have the target size
 * and do_resize is off. */
int image_pixels(const image_prep *p, const image_rgb *im, float *px, uint8_t *tmp);

/* The images of an --images argument: a directory (its *.png, *.jpg, *.jpeg files, by byte
 * order of name; *.tif, *.tiff, *.webp, *.gif, *.bmp are refused by name as unsupported; other
 * files are ignored) or a list file (one path per line, relative to the list's folder; blank
 * and '#' lines skipped; "-" = a list on stdin, relative to "."). A file named like an image (*.png, *.jpg, *.tiff, ...) or starting
 * like a PNG or JPEG is that one image. */
int image_list(const char *arg, char ***paths, int *n, char *err, size_t errlen);
void image_list_free(char **paths, int n);
#endif

/* image: PNG (libpng) and JPEG (libjpeg-turbo) decoding with PIL's colour conversion, PIL's
 * bilinear resize and ViTImageProcessor's rescale + normalise (docs/FAMILIES.md §12). */
#include <stdio.h>   /* before jpeglib.h, which uses FILE */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <jpeglib.h>
#include <libgen.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utf8proc.h>

#include "core/util.h"
#include "image.h"


void image_free(image_rgb *im) {
    if (!im) return;
    free(im->rgb);
    im->rgb = NULL;
    im->w = im->h = 0;
}

static int size_ok(long long w, long long h) {
    return w > 0 && h > 0 && w <= IMAGE_MAX_PIXELS / h;
}

/* ---- EXIF orientation (PIL's ImageOps.exif_transpose, which HF's load_image applies) --------- */

static unsigned rd16(const uint8_t *p, int be) {
    return be ? (unsigned)p[0] << 8 | p[1] : (unsigned)p[1] << 8 | p[0];
}

static uint32_t rd32(const uint8_t *p, int be) {
    return be ? (uint32_t)rd16(p, 1) << 16 | rd16(p + 2, 1) : (uint32_t)rd16(p + 2, 0) << 16 | rd16(p, 0);
}

/* Tag 0x0112 of IFD0 of a TIFF-structured EXIF block (an "Exif\0\0" prefix allowed); 1 (as
 * stored) when absent, malformed or outside 1..8. */
static int exif_orientation(const uint8_t *p, size_t n) {
    if (n >= 6 && !memcmp(p, "Exif\0\0", 6)) p += 6, n -= 6;
    if (n < 8 || !(!memcmp(p, "II*\0", 4) || !memcmp(p, "MM\0*", 4))) return 1;
    int be = p[0] == 'M';
    uint32_t ifd = rd32(p + 4, be);
    if (ifd > n - 2) return 1;
    unsigned count = rd16(p + ifd, be);
    for (unsigned i = 0; i < count; i++) {
        size_t at = (size_t)ifd + 2 + (size_t)i * 12;
        if (at + 12 > n) return 1;
        if (rd16(p + at, be) != 0x0112) continue;
        unsigned type = rd16(p + at + 2, be), v = type == 3 ? rd16(p + at + 8, be) : type == 4 ? rd32(p + at + 8, be) : 1;
        return v >= 1 && v <= 8 ? (int)v : 1;
    }
    return 1;
}

/* Transpose as PIL does for orientation o: 2 mirror, 3 rotate 180, 4 flip, 5 transpose,
 * 6 rotate 90 clockwise, 7 transverse, 8 rotate 90 counter-clockwise. */
static void orient(image_rgb *im, int o) {
    if (o <= 1) return;
    int w = im->w, h = im->h, swap = o >= 5, ow = swap ? h : w, oh = swap ? w : h;
    uint8_t *out = xmalloc((size_t)w * h * 3);
    for (int y = 0; y < oh; y++)
        for (int x = 0; x < ow; x++) {
            int sx = x, sy = y;
            switch (o) {
            case 2: sx = w - 1 - x; break;
            case 3: sx = w - 1 - x, sy = h - 1 - y; break;
            case 4: sy = h - 1 - y; break;
            case 5: sx = y, sy = x; break;
            case 6: sx = y, sy = h - 1 - x; break;
            case 7: sx = w - 1 - y, sy = h - 1 - x; break;
            default: sx = w - 1 - y, sy = x; break;
            }
            memcpy(out + ((size_t)y * ow + x) * 3, im->rgb + ((size_t)sy * w + sx) * 3, 3);
        }
    free(im->rgb);
    *im = (image_rgb){.w = ow, .h = oh, .rgb = out};
}

/* ---- PNG ---------------------------------------------------------------------------------- */

typedef struct {
    const unsigned char *buf;
    size_t len, at;
    char msg[256];
    jmp_buf jb;
} png_src;

/* libpng allocates a text or eXIf chunk's declared length before reading it, and neither
 * png_set_chunk_malloc_max nor Debian's build caps that: a 1.3 kB file declaring a 1.46 GB iTXt
 * chunk took 1.4 GB and seconds (fuzz_image). No chunk is longer than the file, and libpng's own
 * buffers (rows of at most 2^20 pixels, zlib state) stay under PNG_ALLOC_SLACK; a larger request
 * fails, which skips an ancillary chunk with a warning and stops the decode otherwise. */
enum { PNG_ALLOC_SLACK = 32 << 20 };
static png_voidp png_alloc_bounded(png_structp png, png_alloc_size_t n) {
    const png_src *s = png_get_mem_ptr(png);
    return n > s->len + PNG_ALLOC_SLACK ? NULL : malloc(n);
}
static void png_free_mem(png_structp png, png_voidp p) {
    (void)png;
    free(p);
}

static void png_read_mem(png_structp png, png_bytep out, png_size_t n) {
    png_src *s = png_get_io_ptr(png);
    if (n > s->len - s->at) png_error(png, "file is truncated");
    memcpy(out, s->buf + s->at, n);
    s->at += n;
}

static void png_fail(png_structp png, png_const_charp msg) {
    png_src *s = png_get_error_ptr(png);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    longjmp(s->jb, 1);
}

/* libpng's warnings (unknown chunks, sRGB profile remarks) do not change the pixels PIL gets */
static void png_warn(png_structp png, png_const_charp msg) {
    (void)png, (void)msg;
}

/* Rows as libpng delivers them after the transforms chosen below → RGB. ch channels of 8 bits,
 * or (grey16) one 16-bit big-endian channel that PIL's mode I clips to 255. */
static void png_rows_to_rgb(uint8_t *rgb, const uint8_t *rows, int w, int h, int ch, int grey16) {
    size_t stride = (size_t)w * ch * (grey16 ? 2 : 1);
    for (int y = 0; y < h; y++) {
        const uint8_t *r = rows + stride * y;
        uint8_t *o = rgb + (size_t)y * w * 3;
        for (int x = 0; x < w; x++, o += 3) {
            if (grey16) {
                unsigned v = (unsigned)r[2 * x] << 8 | r[2 * x + 1];
                o[0] = o[1] = o[2] = (uint8_t)(v > 255 ? 255 : v);
            } else if (ch <= 2) {
                o[0] = o[1] = o[2] = r[(size_t)x * ch];
            } else {
                memcpy(o, r + (size_t)x * ch, 3);
            }
        }
    }
}

/* Whether a file of len bytes can hold the image data of w x h pixels of ch channels of depth
 * bits: the pixel bytes come out of deflate, which expands at most 1032:1, so a 100-byte file
 * claiming 13000 x 13000 pixels is refused before the rows (676 MB) are allocated. */
static int png_data_fits(int ch, int depth, png_uint_32 w, png_uint_32 h, size_t len) {
    double row = ((double)w * ch * depth + 7) / 8, need = row * h;
    return need <= (double)len * 1032;
}

static int decode_png(const char *name, const unsigned char *buf, size_t len, image_rgb *out, char *err,
                      size_t errlen) {
    png_src s = {.buf = buf, .len = len};
    png_structp png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &s, png_fail, png_warn, &s, png_alloc_bounded,
                                               png_free_mem);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return cli_fail_msg(err, errlen, name, "cannot start the PNG decoder");
    }
    uint8_t *volatile rows = NULL, *volatile rgb = NULL;
    png_bytep *volatile ptrs = NULL;
    if (setjmp(s.jb)) {
        png_destroy_read_struct(&png, &info, NULL);
        free(rows), free(rgb), free(ptrs);
        return cli_fail_msg(err, errlen, name, "bad PNG: %s", s.msg);
    }
    png_set_read_fn(png, &s, png_read_mem);
    png_set_user_limits(png, 1u << 20, 1u << 20);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int type = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    if (!size_ok(w, h)) png_error(png, "image size out of range");
    if (!png_data_fits(png_get_channels(png, info), depth, w, h, len)) {
        snprintf(s.msg, sizeof s.msg, "%ux%u pixels need more compressed data than the file's %zu bytes can hold "
                 "(deflate expands at most 1032:1)", (unsigned)w, (unsigned)h, len);
        longjmp(s.jb, 1);
    }
    int grey16 = type == PNG_COLOR_TYPE_GRAY && depth == 16;
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16 && !grey16) png_set_strip_16(png);   /* the high byte, as PIL's ;16B modes */
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int ch = png_get_channels(png, info);
    size_t stride = png_get_rowbytes(png, info);
    if (ch < 1 || ch > 4 || stride != (size_t)w * ch * (grey16 ? 2 : 1)) png_error(png, "unexpected row layout");
    rows = xmalloc(stride * h);
    ptrs = xmalloc(sizeof(png_bytep) * h);
    for (png_uint_32 y = 0; y < h; y++) ptrs[y] = rows + stride * y;
    png_read_image(png, ptrs);
    png_read_end(png, info);   /* an eXIf chunk may follow the image data */
    rgb = xmalloc((size_t)w * h * 3);
    png_rows_to_rgb(rgb, rows, (int)w, (int)h, ch, grey16);
    png_bytep exif = NULL;
    png_uint_32 nexif = 0;
    int o = png_get_eXIf_1(png, info, &nexif, &exif) ? exif_orientation(exif, nexif) : 1;
    png_destroy_read_struct(&png, &info, NULL);
    free(rows), free(ptrs);
    *out = (image_rgb){.w = (int)w, .h = (int)h, .rgb = rgb};
    orient(out, o);
    return 0;
}

/* ---- JPEG --------------------------------------------------------------------------------- */

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
} jpeg_err;

static void jpeg_fail(j_common_ptr ci) {
    jpeg_err *e = (jpeg_err *)ci->err;
    ci->err->format_message(ci, e->msg);
    longjmp(e->jb, 1);
}

/* A warning (premature end of data, corrupt entropy data) means libjpeg filled in pixels the
 * file does not hold; PIL refuses such files ("image file is truncated"), so they are errors. */
static void jpeg_message(j_common_ptr ci, int level) {
    if (level < 0) jpeg_fail(ci);
}

/* PIL reads CMYK JPEGs as Adobe-inverted ("CMYK;I") and converts with
 * nk = 255 − k, v = nk − round(c·nk/255) (Convert.c cmyk2rgb, MULDIV255). */
static uint8_t cmyk_channel(uint8_t stored_c, uint8_t stored_k) {
    int c = 255 - stored_c, nk = stored_k, t = c * nk + 128;
    int v = nk - (((t >> 8) + t) >> 8);
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Huffman-coded JPEG spends at least one bit on every MCU (each block's DC code is at least one
 * bit long, in the first DC scan of a progressive file too), so a file shorter than MCUs / 8
 * bytes cannot hold its image: refused before libjpeg allocates the image (or, progressive, its
 * whole coefficient buffer). Arithmetic coding has no such bound and is not checked. */
static int jpeg_data_fits(const struct jpeg_decompress_struct *ci, size_t len) {
    if (ci->arith_code || ci->max_h_samp_factor < 1 || ci->max_v_samp_factor < 1) return 1;
    double mw = 8.0 * ci->max_h_samp_factor, mh = 8.0 * ci->max_v_samp_factor;
    double mcus = ceil(ci->image_width / mw) * ceil(ci->image_height / mh);
    return mcus <= (double)len * 8;
}

static int decode_jpeg(const char *name, const unsigned char *buf, size_t len, image_rgb *out, char *err,
                       size_t errlen) {
    struct jpeg_decompress_struct ci;
    jpeg_err je;
    ci.err = jpeg_std_error(&je.base);
    je.base.error_exit = jpeg_fail;
    je.base.emit_message = jpeg_message;
    uint8_t *volatile rgb = NULL, *volatile line = NULL;
    if (setjmp(je.jb)) {
        jpeg_destroy_decompress(&ci);
        free(rgb), free(line);
        return cli_fail_msg(err, errlen, name, "bad JPEG: %s", je.msg);
    }
    jpeg_create_decompress(&ci);
    jpeg_mem_src(&ci, buf, (unsigned long)len);
    jpeg_save_markers(&ci, JPEG_APP0 + 1, 0xffff);
    jpeg_read_header(&ci, TRUE);
    if (!jpeg_data_fits(&ci, len)) {
        snprintf(je.msg, sizeof je.msg, "%ux%u pixels need more entropy-coded data than the file's %zu bytes can hold",
                 (unsigned)ci.image_width, (unsigned)ci.image_height, len);
        longjmp(je.jb, 1);
    }
    int o = 1;   /* the first APP1 "Exif" segment, as Pillow keeps */
    for (jpeg_saved_marker_ptr mk = ci.marker_list; mk; mk = mk->next)
        if (mk->marker == JPEG_APP0 + 1 && mk->data_length >= 6 && !memcmp(mk->data, "Exif\0\0", 6)) {
            o = exif_orientation(mk->data, mk->data_length);
            break;
        }
    int cmyk = ci.jpeg_color_space == JCS_CMYK || ci.jpeg_color_space == JCS_YCCK;
    ci.out_color_space = cmyk ? JCS_CMYK : ci.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&ci);
    int w = (int)ci.output_width, h = (int)ci.output_height, ch = ci.output_components;
    if (!size_ok(w, h) || ch != (cmyk ? 4 : ci.out_color_space == JCS_GRAYSCALE ? 1 : 3)) {
        snprintf(je.msg, sizeof je.msg, "image size or components out of range");
        longjmp(je.jb, 1);
    }
    rgb = xmalloc((size_t)w * h * 3);
    line = xmalloc((size_t)w * ch);
    while (ci.output_scanline < ci.output_height) {
        uint8_t *o = rgb + (size_t)ci.output_scanline * w * 3;
        JSAMPROW row = line;
        jpeg_read_scanlines(&ci, &row, 1);
        for (int x = 0; x < w; x++, o += 3) {
            const uint8_t *p = line + (size_t)x * ch;
            if (ch == 1)
                o[0] = o[1] = o[2] = p[0];
            else if (ch == 3)
                memcpy(o, p, 3);
            else
                for (int c = 0; c < 3; c++) o[c] = cmyk_channel(p[c], p[3]);
        }
    }
    jpeg_finish_decompress(&ci);
    jpeg_destroy_decompress(&ci);
    free(line);
    *out = (image_rgb){.w = w, .h = h, .rgb = rgb};
    orient(out, o);
    return 0;
}

/* ---- format by signature ------------------------------------------------------------------ */

static const char *other_format(const unsigned char *b, size_t n) {
    if (n >= 4 && (!memcmp(b, "II*\0", 4) || !memcmp(b, "MM\0*", 4))) return "TIFF";
    if (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WEBP", 4)) return "WebP";
    if (n >= 6 && (!memcmp(b, "GIF87a", 6) || !memcmp(b, "GIF89a", 6))) return "GIF";
    if (n >= 2 && !memcmp(b, "BM", 2)) return "BMP";
    return NULL;
}

int image_decode(const char *name, const unsigned char *buf, size_t len, image_rgb *out, char *err, size_t errlen) {
    *out = (image_rgb){0};
    static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (!len) return cli_fail_msg(err, errlen, name, "empty file (0 bytes), not an image");
    if (len >= 8 && !memcmp(buf, png_sig, 8)) return decode_png(name, buf, len, out, err, errlen);
    if (len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff) return decode_jpeg(name, buf, len, out, err, errlen);
    const char *other = other_format(buf, len);
    if (other) return cli_fail_msg(err, errlen, name, "%s images are not supported (PNG or JPEG only)", other);
    return cli_fail_msg(err, errlen, name, "not a PNG or JPEG image");
}

/* ---- PIL's bilinear resize ---------------------------------------------------------------- */

enum { PRECISION_BITS = 32 - 8 - 2 };

/* Taps of one axis (Resample.c precompute_coeffs + normalize_coeffs_8bpc): bounds[2o] = first
 * input index, bounds[2o+1] = count; k[o*ksize + i] the fixed-point weights. */
static int resample_coeffs(int in, int out, int **bounds, int **kk) {
    double scale = (double)in / out, fs = scale < 1.0 ? 1.0 : scale, support = 1.0 * fs;
    int ksize = (int)ceil(support) * 2 + 1;
    double *k = xmalloc(sizeof(double) * ksize);
    *bounds = xmalloc(sizeof(int) * 2 * (size_t)out);
    *kk = xcalloc((size_t)out * ksize, sizeof(int));
    for (int o = 0; o < out; o++) {
        double center = (o + 0.5) * scale, ww = 0.0, ss = 1.0 / fs;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);
        if (xmin < 0) xmin = 0;
        if (xmax > in) xmax = in;
        xmax -= xmin;
        for (int x = 0; x < xmax; x++) {
            double t = fabs((x + xmin - center + 0.5) * ss), w = t < 1.0 ? 1.0 - t : 0.0;
            k[x] = w;
            ww += w;
        }
        for (int x = 0; x < xmax; x++) {
            double w = ww != 0.0 ? k[x] / ww : k[x];
            (*kk)[(size_t)o * ksize + x] = (int)(w < 0 ? -0.5 + w * (1 << PRECISION_BITS) : 0.5 + w * (1 << PRECISION_BITS));
        }
        (*bounds)[2 * o] = xmin, (*bounds)[2 * o + 1] = xmax;
    }
    free(k);
    return ksize;
}

static uint8_t clip8(int v) {
    v >>= PRECISION_BITS;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* One separable pass along x (horizontal) or y, 3 channels. */
static void resample_pass(const uint8_t *in, int iw, int ih, uint8_t *out, int ow, int oh, int horizontal) {
    int *bounds, *kk;
    int ksize = resample_coeffs(horizontal ? iw : ih, horizontal ? ow : oh, &bounds, &kk);
    for (int y = 0; y < oh; y++)
        for (int x = 0; x < ow; x++) {
            int o = horizontal ? x : y, lo = bounds[2 * o], n = bounds[2 * o + 1];
            const int *k = kk + (size_t)o * ksize;
            for (int c = 0; c < 3; c++) {
                int acc = 1 << (PRECISION_BITS - 1);
                for (int i = 0; i < n; i++) {
                    size_t at = horizontal ? ((size_t)y * iw + lo + i) : ((size_t)(lo + i) * iw + x);
                    acc += in[at * 3 + c] * k[i];
                }
                out[((size_t)y * ow + x) * 3 + c] = clip8(acc);
            }
        }
    free(bounds);
    free(kk);
}

void image_resize_bilinear(const uint8_t *in, int iw, int ih, uint8_t *out, int ow, int oh) {
    if (iw == ow && ih == oh) {
        memcpy(out, in, (size_t)iw * ih * 3);
        return;
    }
    if (iw == ow) {
        resample_pass(in, iw, ih, out, ow, oh, 0);
        return;
    }
    if (ih == oh) {
        resample_pass(in, iw, ih, out, ow, oh, 1);
        return;
    }
    uint8_t *mid = xmalloc((size_t)ow * ih * 3);
    resample_pass(in, iw, ih, mid, ow, ih, 1);
    resample_pass(mid, ow, ih, out, ow, oh, 0);
    free(mid);
}

/* ---- ViTImageProcessor -------------------------------------------------------------------- */

/* A JSON number, or a list of three, as float32 per channel. */
static int json_triple(json_t *v, float out[3]) {
    if (json_is_number(v)) {
        out[0] = out[1] = out[2] = (float)json_number_value(v);
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) != 3) return -1;
    for (int i = 0; i < 3; i++) {
        json_t *e = json_array_get(v, (size_t)i);
        if (!json_is_number(e)) return -1;
        out[i] = (float)json_number_value(e);
    }
    return 0;
}

static int json_flag(json_t *o, const char *key, int def, int *out) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return *out = def, 0;
    if (!json_is_boolean(v)) return -1;
    *out = json_is_true(v);
    return 0;
}

/* size: an integer (square), or {height, width}; other forms belong to other processors. */
static int json_size(json_t *v, int *h, int *w) {
    long long a, b;
    char why[64];
    if (json_is_integer(v)) {
        if (cli_num_to_ll((double)json_integer_value(v), 1, 1 << 15, &a, why, sizeof why)) return -1;
        *h = *w = (int)a;
        return 0;
    }
    json_t *jh = json_object_get(v, "height"), *jw = json_object_get(v, "width");
    if (!json_is_object(v) || !json_is_integer(jh) || !json_is_integer(jw) || json_object_size(v) != 2) return -1;
    if (cli_num_to_ll((double)json_integer_value(jh), 1, 1 << 15, &a, why, sizeof why) ||
        cli_num_to_ll((double)json_integer_value(jw), 1, 1 << 15, &b, why, sizeof why))
        return -1;
    *h = (int)a, *w = (int)b;
    return 0;
}

static int parse_prep(json_t *o, image_prep *p, const char *path, char *err, size_t errlen) {
    json_t *v;
    if (json_flag(o, "do_resize", 1, &p->do_resize) || json_flag(o, "do_rescale", 1, &p->do_rescale) ||
        json_flag(o, "do_normalize", 1, &p->do_normalize))
        return cli_fail_msg(err, errlen, path, "do_resize, do_rescale and do_normalize must be true or false");
    int crop = 0;
    if (json_flag(o, "do_center_crop", 0, &crop) || crop)
        return cli_fail_msg(err, errlen, path, "do_center_crop is not supported (ViTImageProcessor does not crop)");
    if ((v = json_object_get(o, "size")) && json_size(v, &p->height, &p->width))
        return cli_fail_msg(err, errlen, path, "'size' must be an integer in [1, 32768] or {\"height\", \"width\"}");
    if ((v = json_object_get(o, "resample")) && !(json_is_integer(v) && json_integer_value(v) == 2))
        return cli_fail_msg(err, errlen, path, "'resample' other than 2 (PIL bilinear) is not supported");
    if ((v = json_object_get(o, "rescale_factor"))) {
        if (!json_is_number(v) || !(json_number_value(v) > 0 && json_number_value(v) < 1e6))
            return cli_fail_msg(err, errlen, path, "'rescale_factor' must be a positive number");
        p->rescale_factor = json_number_value(v);
    }
    if ((v = json_object_get(o, "image_mean")) && json_triple(v, p->mean))
        return cli_fail_msg(err, errlen, path, "'image_mean' must be a number or a list of 3 numbers");
    if ((v = json_object_get(o, "image_std")) && json_triple(v, p->std))
        return cli_fail_msg(err, errlen, path, "'image_std' must be a number or a list of 3 numbers");
    for (int c = 0; c < 3; c++)
        if (!(p->std[c] > 0 && isfinite(p->std[c]) && isfinite(p->mean[c])))
            return cli_fail_msg(err, errlen, path, "'image_std' must be positive and 'image_mean' finite");
    return 0;
}

int image_prep_load(const char *dir, int image_size, image_prep *p, char *path, size_t pathlen, char *err,
                    size_t errlen) {
    /* ViTImageProcessor's class defaults (IMAGENET_STANDARD_MEAN/STD = 0.5) */
    *p = (image_prep){.do_resize = 1, .height = 224, .width = 224, .do_rescale = 1, .rescale_factor = 1.0 / 255,
                      .do_normalize = 1, .mean = {0.5f, 0.5f, 0.5f}, .std = {0.5f, 0.5f, 0.5f}};
    snprintf(path, pathlen, "%s/preprocessor_config.json", dir);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        json_error_t je;
        cli_input_note(path);
        json_t *o = S_ISREG(sb.st_mode) ? json_load_file(path, 0, &je) : NULL;
        if (!json_is_object(o)) {
            json_decref(o);
            return cli_fail_msg(err, errlen, path, "%s", S_ISREG(sb.st_mode) ? "not a JSON object" : "not a regular file");
        }
        int rc = parse_prep(o, p, path, err, errlen);
        json_decref(o);
        if (rc) return rc;
        if (cli_sha256_file(path, p->sha256)) return cli_fail_msg(err, errlen, path, "cannot read");
        p->from_file = 1;
    } else {
        path[0] = 0;
    }
    if (p->height != image_size || p->width != image_size)
        return cli_fail_msg(err, errlen, p->from_file ? path : dir, "images resized to %dx%d, but the model takes %dx%d",
                    p->width, p->height, image_size, image_size);
    return 0;
}

int image_pixels(const image_prep *p, const image_rgb *im, float *px, uint8_t *tmp) {
    int H = p->height, W = p->width;
    const uint8_t *src = im->rgb;
    if (im->w != W || im->h != H) {
        if (!p->do_resize) return -1;
        image_resize_bilinear(im->rgb, im->w, im->h, tmp, W, H);
        src = tmp;
    }
    size_t plane = (size_t)H * W;
    for (size_t i = 0; i < plane; i++)
        for (int c = 0; c < 3; c++) {
            float t = p->do_rescale ? (float)(src[i * 3 + c] * p->rescale_factor) : (float)src[i * 3 + c];
            px[c * plane + i] = p->do_normalize ? (t - p->mean[c]) / p->std[c] : t;
        }
    return 0;
}

/* ---- --images ----------------------------------------------------------------------------- */

static int has_ext(const char *name, const char *const *exts) {
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    for (int i = 0; exts[i]; i++)
        if (!strcasecmp(dot + 1, exts[i])) return 1;
    return 0;
}

static const char *const IMAGE_EXTS[] = {"png", "jpg", "jpeg", NULL};
static const char *const OTHER_EXTS[] = {"tif", "tiff", "webp", "gif", "bmp", NULL};

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void push(char ***v, int *n, char *s) {
    *v = xrealloc(*v, sizeof **v * (size_t)(*n + 1));
    (*v)[(*n)++] = s;
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *s = xmalloc(n);
    snprintf(s, n, "%s/%s", dir, name);
    return s;
}

static int list_dir(const char *dir, char ***paths, int *n, char *err, size_t errlen) {
    DIR *d = opendir(dir);
    if (!d) return cli_fail_msg(err, errlen, dir, "cannot open folder");
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (has_ext(e->d_name, OTHER_EXTS)) {
            char *p = join(dir, e->d_name);
            const char *ext = strrchr(e->d_name, '.') + 1;
            const char *fmt = tolower((unsigned char)ext[0]) == 't' ? "TIFF" : tolower((unsigned char)ext[0]) == 'w' ? "WebP"
                              : tolower((unsigned char)ext[0]) == 'g' ? "GIF" : "BMP";
            rc = cli_fail_msg(err, errlen, p, "%s images are not supported (PNG or JPEG only)", fmt);
            free(p);
            break;
        }
        if (has_ext(e->d_name, IMAGE_EXTS)) push(paths, n, join(dir, e->d_name));
    }
    closedir(d);
    if (!rc && !*n) rc = cli_fail_msg(err, errlen, dir, "no PNG or JPEG images (*.png, *.jpg, *.jpeg) in this folder");
    if (!rc) qsort(*paths, (size_t)*n, sizeof **paths, cmp_str);
    return rc;
}

/* A listed line must be a printable UTF-8 path: a binary file read as a list would otherwise
 * put raw bytes (terminal escapes included) into every message that names the path. Returns
 * the offset of the first bad byte, or -1. */
static long bad_path_byte(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) return (long)i;
        i += (size_t)k;
    }
    return -1;
}

static int list_file(const char *path, char ***paths, int *n, char *err, size_t errlen) {
    size_t len;
    if (has_ext(path, IMAGE_EXTS) || has_ext(path, OTHER_EXTS)) {   /* one image; decoding judges it */
        push(paths, n, xstrdup(path));
        return 0;
    }
    unsigned char *buf = util_slurp(path, &len, err, errlen);
    if (!buf) return -1;
    if ((len >= 8 && buf[0] == 0x89 && !memcmp(buf + 1, "PNG", 3)) || (len >= 3 && buf[0] == 0xff && buf[1] == 0xd8)) {
        free(buf);
        push(paths, n, xstrdup(path));
        return 0;
    }
    if (memchr(buf, 0, len)) {
        free(buf);
        return cli_fail_msg(err, errlen, path, "not a PNG or JPEG image, nor a list of image paths");
    }
    char *copy = xstrdup(path);
    const char *dir = dirname(copy);
    int ln = 0, rc = 0;
    for (char *line = (char *)buf, *next; !rc && line < (char *)buf + len; line = next) {
        char *nl = memchr(line, '\n', (size_t)((char *)buf + len - line));
        next = nl ? nl + 1 : (char *)buf + len;
        ln++;
        size_t l = nl ? (size_t)(nl - line) : (size_t)((char *)buf + len - line);
        line[l] = 0;   /* buf has one spare byte (cli_slurp_err NUL-terminates) */
        while (l && isspace((unsigned char)line[l - 1])) line[--l] = 0;
        while (isspace((unsigned char)*line)) line++, l--;
        if (!l || *line == '#') continue;
        long bad = bad_path_byte(line, l);
        if (bad >= 0)
            rc = cli_fail_msg(err, errlen, path, "line %d: byte 0x%02X at column %ld is not part of a printable UTF-8 "
                              "path (a binary file, not a list of image paths?)", ln, (unsigned char)line[bad], bad + 1);
        else push(paths, n, line[0] == '/' ? xstrdup(line) : join(dir, line));
    }
    free(copy);
    free(buf);
    if (rc) return rc;
    if (!*n) return cli_fail_msg(err, errlen, path, "no image paths in this list");
    return 0;
}

/* Every image must be a regular file: a FIFO or device named x.png would block the reader (or
 * never end). Opened without blocking, so that a FIFO with no writer is reported, not waited on. */
static int check_regular(const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return cli_fail_msg(err, errlen, path, "cannot open image: %s", strerror(errno));
    struct stat sb;
    int regular = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    close(fd);
    if (!regular) return cli_fail_msg(err, errlen, path, "not a regular file (a FIFO, device or folder), not an image");
    return 0;
}

int image_list(const char *arg, char ***paths, int *n, char *err, size_t errlen) {
    *paths = NULL, *n = 0;
    struct stat sb;
    int rc;
    if (cli_is_stdio(arg)) rc = list_file(arg, paths, n, err, errlen);   /* a list on stdin, paths from . */
    else if (stat(arg, &sb) != 0) return cli_fail_msg(err, errlen, arg, "no such file or folder");
    else rc = S_ISDIR(sb.st_mode) ? list_dir(arg, paths, n, err, errlen) : list_file(arg, paths, n, err, errlen);
    for (int i = 0; !rc && i < *n; i++) rc = check_regular((*paths)[i], err, errlen);
    if (rc) {
        image_list_free(*paths, *n);
        *paths = NULL, *n = 0;
    }
    return rc;
}

void image_list_free(char **paths, int n) {
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

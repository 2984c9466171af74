#!/usr/bin/python3
"""Test images for extract --images, written with Pillow from one real photograph: every colour
layout that PIL's convert("RGB") handles differently, and the bad inputs extract must refuse.

usage: make_images.py SOURCE.png GOOD_DIR BAD_DIR
  GOOD_DIR: grey 1/2/4/8/16-bit, palette (with and without transparency), grey+alpha, RGB, RGBA,
            16-bit RGB/RGBA, interlaced, greyscale, RGB and CMYK JPEG, a small image (upscaled),
            one of exactly 32x32 (no resampling), a non-square one, EXIF orientations 2-8 (JPEG)
            and 6 (PNG eXIf); plus notes.txt (ignored)
  BAD_DIR:  truncated.png, truncated.jpg, empty.png (0 bytes), zero-width.png (IHDR width 0),
            text.png (a text file), image.tiff, image.webp, webp-named.png (WebP bytes), nothing/
"""
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image


def main():
    src, good, bad = sys.argv[1:4]
    os.makedirs(good, exist_ok=True)
    os.makedirs(bad, exist_ok=True)
    os.makedirs(os.path.join(bad, "nothing"), exist_ok=True)
    im = Image.open(src).convert("RGB").resize((97, 61), Image.BILINEAR)
    rgba = im.copy()
    rgba.putalpha(Image.linear_gradient("L").resize(im.size))
    grey = im.convert("L")
    arr = np.asarray(grey).astype(np.uint16)
    save = lambda img, name, **kw: img.save(os.path.join(good, name), **kw)
    save(grey.convert("1"), "grey1.png")
    save(grey.convert("P", palette=Image.ADAPTIVE, colors=4), "pal2.png", bits=2)
    save(grey.convert("P", palette=Image.ADAPTIVE, colors=16), "pal4.png", bits=4)
    save(grey, "grey8.png")
    save(Image.fromarray(arr * 257), "grey16.png")             # PIL mode I: clipped to 255
    save(Image.fromarray(arr), "grey16-low.png")               # values < 256 survive the clip
    pal = im.convert("P", palette=Image.ADAPTIVE, colors=50)
    save(pal, "palette.png")
    save(pal, "palette-trns.png", transparency=3)
    save(rgba.convert("LA"), "grey-alpha.png")
    save(im, "rgb.png")
    save(rgba, "rgba.png")
    write_png16(os.path.join(good, "interlaced.png"), None, 2, interlaced=im)
    a16 = (np.asarray(rgba).astype(np.uint16) * 257 + np.arange(4, dtype=np.uint16)).astype(">u2")
    write_png16(os.path.join(good, "rgb16.png"), a16[..., :3], 2)
    write_png16(os.path.join(good, "rgba16.png"), a16, 6)
    write_png16(os.path.join(good, "grey-alpha16.png"), a16[..., [0, 3]], 4)
    save(grey, "grey.jpg", quality=90)
    save(im, "rgb.jpg", quality=90)
    save(im.convert("CMYK"), "cmyk.jpg", quality=95)
    save(im.resize((10, 7), Image.BILINEAR), "small.png")
    save(im.resize((32, 32), Image.BILINEAR), "exact32.png")
    save(im.crop((0, 0, 40, 61)), "tall.png")
    save(im, "progressive.jpg", quality=85, progressive=True)
    for k in range(2, 9):   # EXIF orientations 2..8 (ImageOps.exif_transpose), JPEG APP1 and PNG eXIf
        ex = Image.Exif()
        ex[0x0112] = k
        save(im, f"orient{k}.jpg", quality=90, exif=ex)
    ex = Image.Exif()
    ex[0x0112] = 6
    save(im, "orient6.png", exif=ex)
    with open(os.path.join(good, "notes.txt"), "w") as f:
        f.write("not an image: ignored in a folder\n")
    # bad inputs
    b = lambda name: os.path.join(bad, name)
    im.save(b("full.png"))
    raw = open(b("full.png"), "rb").read()
    open(b("truncated.png"), "wb").write(raw[: len(raw) // 2])
    os.remove(b("full.png"))
    im.save(b("full.jpg"), quality=90)
    raw = open(b("full.jpg"), "rb").read()
    open(b("truncated.jpg"), "wb").write(raw[: len(raw) // 2])
    os.remove(b("full.jpg"))
    open(b("empty.png"), "wb").close()
    write_png16(b("zero-width.png"), np.zeros((1, 0, 3), dtype=">u2"), 2)
    open(b("text.png"), "w").write("this is a text file, not a PNG\n")
    im.save(b("image.tiff"))
    im.save(b("image.webp"))
    im.save(b("webp-named.png"), format="WEBP")


def adam7(rgb):
    """8-bit RGB rows in Adam7 order (Pillow cannot write interlaced PNGs)."""
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    out = b""
    for x0, y0, dx, dy in passes:
        sub = rgb[y0::dy, x0::dx]
        if sub.size:
            out += b"".join(b"\0" + sub[y].tobytes() for y in range(sub.shape[0]))
    return out


def write_png16(path, a, color_type, interlaced=None):
    """A 16-bit PNG by hand (Pillow writes 16-bit only for grey): big-endian samples; or, with
    interlaced (a Pillow RGB image), an 8-bit Adam7-interlaced one."""
    depth, ilace = 16, 0
    if interlaced is not None:
        a = np.asarray(interlaced)
        depth, ilace = 8, 1
    h, w = a.shape[:2]
    raw = adam7(a) if ilace else b"".join(b"\0" + a[y].tobytes() for y in range(h))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, ilace)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


if __name__ == "__main__":
    main()

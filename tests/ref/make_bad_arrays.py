#!/usr/bin/python3
"""Write foreign-array inputs for `import` whose sizes, headers or storage lie (issue 39, 43).

Usage: make_bad_arrays.py DIR
Each file is small (a few kB) and differs from a valid one by one defect:
  good.npz            a valid [H,T,T] = [2,4,4] causal member 'layer_0' (control)
  npz_hl0.npz         its member's .npy header-length field is 0 (version 1)
  npz_hl1.npz         ... is 1
  npz_v2_hl0.npz      version 2, header length 0
  npz_2gib_deflate.npz  a deflated member whose zip directory claims 2 GiB uncompressed, with an
                      .npy header to match ([1,16384,16384] float64)
  npz_2gib_stored.npz   the same, stored (sizes in both headers patched, data absent)
  npz_bzip2.npz       a member compressed with bzip2 (numpy never writes it)
  npz_maybe.npz       fortran_order: Maybe
  torch_zip.pt        the layout torch.save writes (a zip holding archive/data.pkl)
  torch_legacy.pt     the legacy torch.save layout (a pickle stream)
  h5_sparse.h5        /a chunked [100000,12,12,64,64] float32, no chunk written (fill 1/64)
  h5_partial.h5       /a chunked [4,2,4,4], one chunk of four written
  h5_unalloc.h5       /a contiguous [2,2,4,4], never written (late allocation)
  h5_external.h5      /a [1,16384,16384] float32 (1 GiB) stored externally in /dev/zero
  h5_lzf.h5           /a [2,4,4] LZF-compressed (h5py's filter, absent from libhdf5)
  h5_bomb.h5          /a [1,512,512] float32 gzip, its one 1 MiB chunk stored as 10 bytes
  h5_good.h5          /a chunked, gzip-compressed [2,4,4] causal (control)
  logp.npy            log-probabilities (causal, -inf above the diagonal)
  logp_bidir.npy      bidirectional log-probabilities (no -inf)
  scores.npy          raw scores (before a softmax)
  st640.safetensors   a valid [2,4,4] tensor whose header length, 640, begins 80 02 like a pickle
  lhtt.npy            [2,3,4,4] causal: read as [L,H,T,T] or (--layout SHTT) [S,H,T,T]
"""
import bz2
import os
import struct
import sys
import zipfile
import zlib

import h5py
import numpy as np

H, T = 2, 4


def causal(h=H, t=T, lead=()):
    p = np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]
    return np.broadcast_to(p, lead + (h, t, t)).astype(np.float32).copy()


def npy_bytes(arr=None, header=None, version=1):
    """A .npy stream: the real one of arr, or this header text with the given version."""
    if header is None:
        import io
        b = io.BytesIO()
        np.save(b, arr)
        return b.getvalue()
    h = header.encode("latin1")
    if version == 1:
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", len(h)) + h


def npz(path, members, method=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", method) as z:
        for name, data in members:
            z.writestr(name, data)


def patch_sizes(path, usize, csize=None):
    """Rewrite the sizes of the archive's one member in its local and central headers."""
    b = bytearray(open(path, "rb").read())
    lo = b.index(b"PK\x03\x04")
    ce = b.index(b"PK\x01\x02")
    if csize is not None:
        struct.pack_into("<I", b, lo + 18, csize)
        struct.pack_into("<I", b, ce + 20, csize)
    struct.pack_into("<I", b, lo + 22, usize)
    struct.pack_into("<I", b, ce + 24, usize)
    open(path, "wb").write(bytes(b))


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    p = lambda n: os.path.join(d, n)
    good = npy_bytes(causal())
    npz(p("good.npz"), [("layer_0.npy", good)])
    # header-length field 0 or 1: the data follow at once (version 1: 10 bytes; version 2: 12)
    npz(p("npz_hl0.npz"), [("layer_0.npy", npy_bytes(header="") + good[128:])])
    npz(p("npz_hl1.npz"), [("layer_0.npy", npy_bytes(header="{") + good[128:])])
    npz(p("npz_v2_hl0.npz"), [("layer_0.npy", npy_bytes(header="", version=2) + good[128:])])
    # a 2 GiB member declared: header for [1,16384,16384] float64 (= 2 GiB), a few data bytes
    hdr = "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 16384, 16384), }"
    hdr += " " * (117 - len(hdr)) + "\n"
    big = npy_bytes(header=hdr) + bytes(64)
    npz(p("npz_2gib_deflate.npz"), [("a.npy", big)], zipfile.ZIP_DEFLATED)
    patch_sizes(p("npz_2gib_deflate.npz"), 128 + (1 << 31))
    npz(p("npz_2gib_stored.npz"), [("a.npy", big)])
    patch_sizes(p("npz_2gib_stored.npz"), 128 + (1 << 31), 128 + (1 << 31))
    npz(p("npz_bzip2.npz"), [("layer_0.npy", good)], zipfile.ZIP_BZIP2)
    maybe = "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 4, 4), }"
    maybe += " " * (117 - len(maybe)) + "\n"
    npz(p("npz_maybe.npz"), [("layer_0.npy", npy_bytes(header=maybe) + good[128:])])
    # torch.save: a zip of archive/data.pkl + archive/data/0, or (legacy) a pickle stream
    npz(p("torch_zip.pt"), [("archive/data.pkl", b"\x80\x02}q\x00."), ("archive/data/0", bytes(64)),
                            ("archive/version", b"3\n")])
    open(p("torch_legacy.pt"), "wb").write(b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19.\x80\x02M\xe9\x03.")

    with h5py.File(p("h5_sparse.h5"), "w") as f:
        f.create_dataset("a", shape=(100000, 12, 12, 64, 64), dtype="f4", chunks=(1, 1, 1, 64, 64),
                         fillvalue=np.float32(1 / 64))
    with h5py.File(p("h5_partial.h5"), "w") as f:
        x = f.create_dataset("a", shape=(4, 2, 4, 4), dtype="f4", chunks=(1, 2, 4, 4))
        x[0] = causal()
    with h5py.File(p("h5_unalloc.h5"), "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_LATE)
        sp = h5py.h5s.create_simple((2, 2, 4, 4))
        h5py.h5d.create(f.id, b"a", h5py.h5t.IEEE_F32LE, sp, dcpl=dcpl)
    with h5py.File(p("h5_external.h5"), "w") as f:
        f.create_dataset("a", shape=(1, 16384, 16384), dtype="f4", external=[("/dev/zero", 0, 1 << 30)])
    with h5py.File(p("h5_lzf.h5"), "w") as f:
        f.create_dataset("a", data=causal(), compression="lzf")
    with h5py.File(p("h5_bomb.h5"), "w") as f:
        x = f.create_dataset("a", shape=(1, 512, 512), dtype="f4", chunks=(1, 512, 512), compression="gzip")
        x.id.write_direct_chunk((0, 0, 0), zlib.compress(b"\0" * 16)[:10])
    with h5py.File(p("h5_good.h5"), "w") as f:
        f.create_dataset("a", data=causal(), compression="gzip", chunks=(1, T, T))

    with np.errstate(divide="ignore"):
        lp = np.log(causal(3, 5, (2,)).astype(np.float64))
    np.save(p("logp.npy"), lp.astype(np.float32))
    b = np.full((2, 3, 5, 5), 1 / 5)
    np.save(p("logp_bidir.npy"), np.log(b).astype(np.float32))
    rng = np.random.default_rng(39)
    np.save(p("scores.npy"), rng.normal(0, 1, (2, 3, 5, 5)).astype(np.float32))
    np.save(p("lhtt.npy"), causal(3, 4, (2,)))
    hdr = '{"layer_0":{"dtype":"F32","shape":[2,4,4],"data_offsets":[0,128]}}'.ljust(640).encode()
    open(p("st640.safetensors"), "wb").write(struct.pack("<Q", 640) + hdr + causal().tobytes())


if __name__ == "__main__":
    main()

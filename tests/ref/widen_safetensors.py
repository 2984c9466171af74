"""Rewrite a single-file safetensors checkpoint with every F16/BF16 tensor widened to F32 (exact
conversions, numpy's float16 and the BF16 bit shift), other tensors copied; config.json copied.
tests/t-memory.sh compares extract on the two: kept-half and float32 weights must give the
same bytes.

usage: widen_safetensors.py INDIR OUTDIR"""
import json, os, shutil, struct, sys
import numpy as np


def main():
    src, dst = sys.argv[1:3]
    os.makedirs(dst, exist_ok=True)
    shutil.copy(os.path.join(src, "config.json"), dst)
    raw = open(os.path.join(src, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out, parts, off = {}, [], 0
    for name, t in hdr.items():
        if name == "__metadata__":
            out[name] = t
            continue
        a, b = t["data_offsets"]
        chunk = body[a:b]
        if t["dtype"] == "F16":
            chunk, t["dtype"] = np.frombuffer(chunk, "<f2").astype("<f4").tobytes(), "F32"
        elif t["dtype"] == "BF16":
            u = np.frombuffer(chunk, "<u2").astype(np.uint32) << 16
            chunk, t["dtype"] = u.astype("<u4").tobytes(), "F32"
        t["data_offsets"] = [off, off + len(chunk)]
        off += len(chunk)
        out[name] = t
        parts.append(chunk)
    hb = json.dumps(out).encode()
    hb += b" " * (-len(hb) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + b"".join(parts))


if __name__ == "__main__":
    main()

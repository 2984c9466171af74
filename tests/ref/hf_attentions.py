#!/usr/bin/python3
"""Attention maps as other tools save them, for tests of `import` (docs/IMPORT.md).

  hf_attentions.py random DIR [--seed N]
      softmax of random scores in torch, causal (masked with finfo.min like Hugging Face) and
      bidirectional with right padding, saved as every layout and dtype `import` reads:
      .npy [S,L,H,T,T] / [L,H,T,T] (float16/32/64, big-endian, Fortran order), .npz one array
      per layer (stored and deflated), safetensors per layer (F16/BF16/F32/F64), HDF5 datasets
      (h5py). Each variant's source values are also written as DIR/NAME.ref.npy (float64,
      [S,L,H,T,T]) and a list of variants as DIR/variants.tsv.
  hf_attentions.py model CKPT IDS DIR
      the tiny checkpoint's attention by the independent PyTorch forward of
      reference_forward.py, as Hugging Face output_attentions gives it (a tuple of L [S,H,T,T]
      tensors), saved as attn.npy (stacked [S,L,H,T,T]), attn.safetensors (layer.0..),
      attn.npz (per layer) and attn.h5:/attentions.
  hf_attentions.py check ATT.h5 REF.npy [--log] [--delta X] [--tag TAG]
      the stored log-probabilities against the source, computed here from the definition:
      l = ln C(p) over the row's keys (ln p where |ln sum p| <= 1e-6: kept as given), zeros replaced by delta and the rest shrunk by 1 - z*delta
      (METHODS §1); float32 precision (|a-b| <= 2e-7 * max(1, |b|) plus the float32 rounding of
      the stored value). Prints TAP lines.
"""
import argparse
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tiny import encode, f32_to_bf16_bits  # noqa: E402


def write_safetensors(path, tensors):
    """tensors: list of (name, array, dtype) with dtype F16/BF16/F32/F64; data in given order."""
    import json
    header, blobs, off = {}, [], 0
    for name, arr, dt in tensors:
        b = np.ascontiguousarray(arr, dtype="<f8").tobytes() if dt == "F64" else encode(arr, dt)
        header[name] = {"dtype": dt, "shape": list(np.shape(arr)), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def bf16_values(a):
    return (f32_to_bf16_bits(a).astype(np.uint32) << 16).view(np.float32)


def random_attention(S, L, H, T, causal, valid, gen):
    """HF eager attention: softmax(scores + mask) with the mask at finfo(float32).min."""
    z = torch.randn(S, L, H, T, T, generator=gen, dtype=torch.float32) * 2.0
    add = torch.zeros(S, 1, 1, T, T)
    neg = torch.finfo(torch.float32).min
    if causal:
        add = add + torch.triu(torch.full((T, T), neg), diagonal=1)
    else:
        add = add + torch.where(torch.tensor(valid, dtype=torch.bool)[:, None, None, None, :], 0.0, neg)
    p = torch.softmax(z + add, dim=-1)
    p[:, :, :, :, 1] = torch.where(torch.rand(S, L, H, T, generator=gen) < 0.05, 0.0, p[:, :, :, :, 1])
    p = p / p.sum(-1, keepdim=True)   # a few exact zeros inside rows, still closed
    return p.numpy()


def save_variants(d, tag, p, variants):
    """Every layout and dtype of one [S,L,H,T,T] float32 array."""
    import h5py
    S, L = p.shape[:2]

    def ref(name, values, opts=""):
        np.save(os.path.join(d, name + ".ref.npy"), np.asarray(values, dtype=np.float64))
        variants.append((name, opts))

    np.save(os.path.join(d, f"{tag}_f32.npy"), p)
    np.save(os.path.join(d, f"{tag}_f64.npy"), p.astype(np.float64))
    np.save(os.path.join(d, f"{tag}_f16.npy"), p.astype(np.float16))
    np.save(os.path.join(d, f"{tag}_be.npy"), p.astype(">f4"))
    np.save(os.path.join(d, f"{tag}_fortran.npy"), np.asfortranarray(p))
    np.save(os.path.join(d, f"{tag}_seq0.npy"), p[0])                       # [L,H,T,T]
    layers = {f"layer_{l}": p[:, l] for l in range(L)}                       # HF tuple
    np.savez(os.path.join(d, f"{tag}_layers.npz"), **layers)
    np.savez_compressed(os.path.join(d, f"{tag}_layersz.npz"), *[p[:, l] for l in range(L)])
    np.savez(os.path.join(d, f"{tag}_fortran.npz"), **{k: np.asfortranarray(v) for k, v in layers.items()})
    write_safetensors(os.path.join(d, f"{tag}_f32.safetensors"),
                      [(f"layer.{l}", p[:, l], "F32") for l in reversed(range(L))])
    write_safetensors(os.path.join(d, f"{tag}_f16.safetensors"), [(f"layer.{l}", p[:, l], "F16") for l in range(L)])
    write_safetensors(os.path.join(d, f"{tag}_bf16.safetensors"), [(f"layer.{l}", p[:, l], "BF16") for l in range(L)])
    write_safetensors(os.path.join(d, f"{tag}_f64.safetensors"), [(f"layer.{l}", p[:, l], "F64") for l in range(L)])
    with h5py.File(os.path.join(d, f"{tag}.h5"), "w") as f:
        f["attn"] = p
        f["half"] = p.astype(np.float16)
        for l in range(L):
            f[f"layers/{l}"] = p[:, l]
    f16, b16 = p.astype(np.float16).astype(np.float64), bf16_values(p).astype(np.float64)
    for name, vals, spec in [
        ("f32", p, f"{tag}_f32.npy"), ("f64", p.astype(np.float64), f"{tag}_f64.npy"), ("f16", f16, f"{tag}_f16.npy"),
        ("be", p, f"{tag}_be.npy"), ("fortran", p, f"{tag}_fortran.npy"),
        ("seq0", p[:1], f"{tag}_seq0.npy"), ("npz", p, f"{tag}_layers.npz"),
        ("npzdeflate", p, f"{tag}_layersz.npz"), ("npzfortran", p, f"{tag}_fortran.npz"),
        ("npzpick", p, " ".join(f"{tag}_layers.npz:layer_{l}" for l in range(L))),
        ("st32", p, f"{tag}_f32.safetensors"), ("st16", f16, f"{tag}_f16.safetensors"),
        ("stbf16", b16, f"{tag}_bf16.safetensors"), ("st64", p.astype(np.float64), f"{tag}_f64.safetensors"),
        ("h5", p, f"{tag}.h5:/attn"), ("h5half", f16, f"{tag}.h5:/half"),
        ("h5layers", p, " ".join(f"{tag}.h5:/layers/{l}" for l in range(L))),
    ]:
        ref(f"{tag}_{name}", vals, spec)


def cmd_random(a):
    os.makedirs(a.dir, exist_ok=True)
    gen = torch.Generator().manual_seed(a.seed)
    S, L, H, T = 3, 2, 4, 9
    valid = [[1] * T, [1] * 6 + [0] * 3, [1] * 4 + [0] * 5]
    variants = []
    save_variants(a.dir, "causal", random_attention(S, L, H, T, True, None, gen), variants)
    save_variants(a.dir, "bidir", random_attention(S, L, H, T, False, valid, gen), variants)
    with open(os.path.join(a.dir, "valid.txt"), "w") as f:
        for v in valid:
            f.write(" ".join(map(str, v)) + "\n")
    with open(os.path.join(a.dir, "variants.tsv"), "w") as f:
        for name, spec in variants:
            f.write(f"{name}\t{spec}\n")


def cmd_model(a):
    import h5py
    import reference_forward as rf
    cfg, w = rf.load(a.ckpt)
    seqs, valid = rf.read_ids(a.ids, cfg.get("pad_token_id") or 0)
    per_seq = [rf.forward(cfg, w, ids, valid[s], None)[0] for s, ids in enumerate(seqs)]
    L = len(per_seq[0])
    # output_attentions=True: a tuple of L tensors [batch, heads, T, T]
    attentions = tuple(torch.stack([per_seq[s][l] for s in range(len(seqs))]) for l in range(L))
    os.makedirs(a.dir, exist_ok=True)
    stacked = torch.stack(attentions, dim=1).numpy()          # [S, L, H, T, T]
    np.save(os.path.join(a.dir, "attn.npy"), stacked)
    write_safetensors(os.path.join(a.dir, "attn.safetensors"),
                      [(f"layer.{l}", t.numpy(), "F32") for l, t in enumerate(attentions)])
    np.savez(os.path.join(a.dir, "attn.npz"), *[t.numpy() for t in attentions])
    with h5py.File(os.path.join(a.dir, "attn.h5"), "w") as f:
        f["attentions"] = stacked
    np.save(os.path.join(a.dir, "attn.ref.npy"), stacked.astype(np.float64))


def expected_log(p, causal, valid, delta, log_input):
    """ln C(p) over each row's keys with METHODS §1 zero replacement; -inf outside rows."""
    S, L, H, T, _ = p.shape
    out, zeros = np.full(p.shape, -np.inf), 0
    for s in range(S):
        for t in range(T):
            if valid is not None and not valid[s][t]:
                continue
            keys = np.arange(t + 1) if causal else np.array([j for j in range(T) if valid is None or valid[s][j]])
            row = p[s, :, :, t][..., keys]
            pr = np.exp(row) if log_input else row
            tot = pr.sum(-1, keepdims=True)
            pr = np.where(np.abs(np.log(tot)) > 1e-6, pr / tot, pr)   # already closed: kept
            z = (pr == 0).sum(-1, keepdims=True)
            zeros += int(z.sum())
            r = np.where(pr == 0, np.log(delta), np.log(np.where(pr == 0, 1, pr)) + np.log1p(-z * delta))
            out[s, :, :, t][..., keys] = r
    return out, zeros


def cmd_check(a):
    import h5py
    f = h5py.File(a.att, "r")
    got = f["attention"][:].astype(np.float64)
    p = np.load(a.ref)
    valid = f["valid"][:] if "valid" in f else None
    causal = int(f.attrs["causal"])
    want, zeros = expected_log(p, causal, valid, a.delta, a.log)
    fin = np.isfinite(want)
    same_mask = np.array_equal(fin, np.isfinite(got)) and np.all(got[~fin] == -np.inf)
    err = np.abs(got[fin] - want[fin]) / np.maximum(1, np.abs(want[fin]))
    worst = float(err.max()) if err.size else 0.0
    ok = same_mask and worst <= 2e-7 and got.shape == p.shape and int(f.attrs["zero_replaced"]) == zeros
    print(("ok" if ok else "not ok") + f" - {a.tag}: stored log-probabilities equal ln C(p) to float32 "
          f"precision (max rel {worst:.1e}, shape {got.shape}, {zeros} zeros replaced)")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("random")
    r.add_argument("dir")
    r.add_argument("--seed", type=int, default=1)
    m = sub.add_parser("model")
    m.add_argument("ckpt")
    m.add_argument("ids")
    m.add_argument("dir")
    c = sub.add_parser("check")
    c.add_argument("att")
    c.add_argument("ref")
    c.add_argument("--log", action="store_true")
    c.add_argument("--delta", type=float, default=1e-9)
    c.add_argument("--tag", default="import")
    a = ap.parse_args()
    {"random": cmd_random, "model": cmd_model, "check": cmd_check}[a.cmd](a)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Independent reference forward pass of a llama2.c-style Llama model in PyTorch (float64).

Written from llama2.c's model description (not from attncoda's C code): RMSNorm, RoPE on the
ORIGINAL weights in the rotation style the file uses (llama2.c and GGUF "llama": interleaved
pairs (2i, 2i+1); GGUF "qwen2": half-split pairs (i, i+d/2)), grouped-query attention where query
head h reads key/value head h // (n_heads / n_kv_heads), SwiGLU w2(silu(w1 x) * w3 x).

Weights come from a llama2.c legacy .bin (--bin) or from an .npz written by make_gguf.py
(--npz: the dequantised tensors under GGUF names plus the config). Token ids come from a file
in sample's format (one sequence per line, '#' lines skipped). Writes an .npz with
probs [S, L, H, T, T] (attention probabilities) and logits [S, T, V].

With --check-attn A.h5 (an attncoda attention file: log-probabilities [S,L,H,T,T]) and/or
--check-logits L.h5 (extract --logits), compares instead of (or besides) writing: attention
probabilities must agree to 1e-5 absolute, logits to 1e-4 relative (|c-r| <= 1e-4 (|r| + 1));
prints the largest differences and exits 1 when a tolerance is exceeded.

--tok tok512.bin --encode TEXT prints llama2.c's token ids for each line of TEXT instead.

usage: llama2c_reference.py (--bin FILE | --npz FILE) --ids FILE [--out FILE.npz]
                            [--check-attn A.h5] [--check-logits L.h5]
"""
import argparse
import struct
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)


def load_bin(path):
    """llama2.c legacy export: 7 int32 header, float32 weights grouped by kind across layers."""
    raw = open(path, "rb").read()
    dim, hidden, n_layers, n_heads, n_kv, vocab, seq_len = struct.unpack_from("<7i", raw, 0)
    shared = vocab > 0
    vocab = abs(vocab)
    f = np.frombuffer(raw, dtype="<f4", offset=28).astype(np.float64)
    hd = dim // n_heads
    kv = n_kv * hd
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        a = f[pos:pos + n].reshape(shape)
        pos += n
        return torch.from_numpy(a.copy())

    w = {"emb": take(vocab, dim), "rms_att": take(n_layers, dim), "wq": take(n_layers, dim, dim),
         "wk": take(n_layers, kv, dim), "wv": take(n_layers, kv, dim),
         "wo": take(n_layers, dim, dim), "rms_ffn": take(n_layers, dim),
         "w1": take(n_layers, hidden, dim), "w2": take(n_layers, dim, hidden),
         "w3": take(n_layers, hidden, dim), "rms_final": take(dim)}
    take(seq_len, hd // 2)  # freq_cis_real (recomputed below)
    take(seq_len, hd // 2)  # freq_cis_imag
    w["wcls"] = w["emb"] if shared else take(vocab, dim)
    assert pos == f.size, "file size does not match the header"
    cfg = dict(dim=dim, n_layers=n_layers, n_heads=n_heads, n_kv=n_kv, vocab=vocab, eps=1e-5,
               theta=10000.0, rope="interleaved", bias=False)
    return cfg, w


def load_npz(path):
    """make_gguf.py's dump: GGUF tensor names, rows = output features (nn.Linear layout)."""
    z = np.load(path)
    cfg = {k: z["cfg_" + k].item() for k in ("dim", "n_layers", "n_heads", "n_kv", "vocab")}
    cfg.update(eps=float(z["cfg_eps"]), theta=float(z["cfg_theta"]), rope=str(z["cfg_rope"]),
               bias=bool(z["cfg_bias"]))
    t = {k: torch.from_numpy(z[k].astype(np.float64)) for k in z.files if not k.startswith("cfg_")}
    L = cfg["n_layers"]

    def stack(name):
        return torch.stack([t["blk.%d.%s" % (i, name)] for i in range(L)])

    w = {"emb": t["token_embd.weight"], "rms_att": stack("attn_norm.weight"),
         "wq": stack("attn_q.weight"), "wk": stack("attn_k.weight"), "wv": stack("attn_v.weight"),
         "wo": stack("attn_output.weight"), "rms_ffn": stack("ffn_norm.weight"),
         "w1": stack("ffn_gate.weight"), "w2": stack("ffn_down.weight"),
         "w3": stack("ffn_up.weight"), "rms_final": t["output_norm.weight"],
         "wcls": t.get("output.weight", t["token_embd.weight"])}
    if cfg["bias"]:
        for k in ("q", "k", "v"):
            w["b" + k] = stack("attn_%s.bias" % k)
    return cfg, w


def rmsnorm(x, g, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * g


def rope(x, theta, style):
    """x: [T, n, hd]. Rotate pairs by angle pos * theta^(-2i/hd)."""
    T, n, hd = x.shape
    i = torch.arange(hd // 2, dtype=torch.float64)
    freq = 1.0 / theta ** (2.0 * i / hd)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * freq[None, :]  # [T, hd/2]
    c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    if style == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
        out = torch.empty_like(x)
        out[..., 0::2] = a * c - b * s
        out[..., 1::2] = a * s + b * c
        return out
    a, b = x[..., : hd // 2], x[..., hd // 2:]
    return torch.cat([a * c - b * s, a * s + b * c], dim=-1)


def forward(cfg, w, ids):
    dim, H, KV = cfg["dim"], cfg["n_heads"], cfg["n_kv"]
    hd = dim // H
    T = len(ids)
    x = w["emb"][torch.tensor(ids)]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    probs = []
    for l in range(cfg["n_layers"]):
        xn = rmsnorm(x, w["rms_att"][l], cfg["eps"])
        q, k, v = xn @ w["wq"][l].T, xn @ w["wk"][l].T, xn @ w["wv"][l].T
        if cfg["bias"]:
            q, k, v = q + w["bq"][l], k + w["bk"][l], v + w["bv"][l]
        q = rope(q.view(T, H, hd), cfg["theta"], cfg["rope"])
        k = rope(k.view(T, KV, hd), cfg["theta"], cfg["rope"])
        v = v.view(T, KV, hd)
        rep = H // KV
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        sc = torch.einsum("thd,shd->hts", q, k) / hd ** 0.5
        sc = sc.masked_fill(mask, float("-inf"))
        p = torch.softmax(sc, dim=-1)
        probs.append(p)
        o = torch.einsum("hts,shd->thd", p, v).reshape(T, dim)
        x = x + o @ w["wo"][l].T
        xn = rmsnorm(x, w["rms_ffn"][l], cfg["eps"])
        h = torch.nn.functional.silu(xn @ w["w1"][l].T) * (xn @ w["w3"][l].T)
        x = x + h @ w["w2"][l].T
    x = rmsnorm(x, w["rms_final"], cfg["eps"])
    return torch.stack(probs).numpy(), (x @ w["wcls"].T).numpy()


def load_vocab(path):
    """llama2.c tok*.bin: int32 max_token_length, then per token float score, int32 len, bytes."""
    raw = open(path, "rb").read()
    pos, pieces, scores = 4, [], []
    while pos < len(raw):
        sc, n = struct.unpack_from("<fi", raw, pos)
        pieces.append(raw[pos + 8:pos + 8 + n])
        scores.append(sc)
        pos += 8 + n
    return pieces, scores


def encode(pieces, scores, text):
    """llama2.c's encode() without BOS/EOS, written out directly (quadratic scan): dummy-prefix
    space, UTF-8 characters (byte fallback to id byte+3), then repeatedly merge the leftmost
    adjacent pair whose concatenation is the highest-scoring piece."""
    lookup = {}
    for i, p in enumerate(pieces):
        lookup.setdefault(p, i)
    data = text.encode()
    if not data:
        return []
    data = b" " + data
    toks, i = [], 0
    while i < len(data):
        j = i + 1
        while j < len(data) and j - i < 4 and (data[j] & 0xC0) == 0x80:
            j += 1
        ch = data[i:j]
        toks += [lookup[ch]] if ch in lookup else [b + 3 for b in ch]
        i = j
    while True:
        best, at = -1e10, -1
        for k in range(len(toks) - 1):
            m = lookup.get(pieces[toks[k]] + pieces[toks[k + 1]])
            if m is not None and scores[m] > best:
                best, at, mid = scores[m], k, m
        if at < 0:
            return toks
        toks[at:at + 2] = [mid]


def read_ids(path):
    seqs = []
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        seqs.append([int(v) for v in line.split()])
    return seqs


def main():
    ap = argparse.ArgumentParser()
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--bin")
    src.add_argument("--npz")
    src.add_argument("--tok", help="with --encode: print llama2.c's ids per text line")
    ap.add_argument("--encode")
    ap.add_argument("--ids")
    ap.add_argument("--out")
    ap.add_argument("--check-attn")
    ap.add_argument("--check-logits")
    a = ap.parse_args()
    if a.tok:
        pieces, scores = load_vocab(a.tok)
        lines = open(a.encode, encoding="utf-8").read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for line in lines:
            print(" ".join(str(t) for t in encode(pieces, scores, line)))
        return
    cfg, w = load_bin(a.bin) if a.bin else load_npz(a.npz)
    res = [forward(cfg, w, s) for s in read_ids(a.ids)]
    probs, logits = np.stack([r[0] for r in res]), np.stack([r[1] for r in res])
    if a.out:
        np.savez(a.out, probs=probs, logits=logits)
    ok = True
    if a.check_attn:
        import h5py
        got = np.exp(h5py.File(a.check_attn, "r")["attention"][:].astype(np.float64))
        err = np.abs(got - probs).max() if got.shape == probs.shape else np.inf
        print("attention max abs diff %.3g (shape %s)" % (err, got.shape))
        ok &= bool(err <= 1e-5)
    if a.check_logits:
        import h5py
        got = h5py.File(a.check_logits, "r")["logits"][:].astype(np.float64)
        err = (np.abs(got - logits) / (np.abs(logits) + 1)).max() if got.shape == logits.shape else np.inf
        print("logits max rel diff %.3g (max |logit| %.3g)" % (err, np.abs(logits).max()))
        ok &= bool(err <= 1e-4)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

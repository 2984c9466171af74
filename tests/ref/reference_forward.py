#!/usr/bin/python3
"""Independent PyTorch forward pass for the five checkpoint families, written from
shared/spec/hf-checkpoints.md (not from transformers, which is not installed here). It reads the
checkpoint with its own safetensors reader, runs the token ids of an --ids file (BERT lines are
padded with pad_token_id and masked as keys, like HF's attention_mask), and either compares with
extract's outputs or times itself.

  reference_forward.py MODEL_DIR IDS --attn ATT.h5 [--logits LOGITS.h5] [--mask FILE]
      compare: attention probabilities exp(logp) within 1e-5 absolute, logits within 1e-4
      relative (max |a-b| over a sequence / max |b|); prints one TAP line per check.
  reference_forward.py MODEL_DIR --bench -S N -T N [--threads N]
      prints tokens/s of an eager forward that returns every attention map.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch

DT = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "BOOL": np.bool_, "BF16": np.uint16}


def read_safetensors(path, out):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    base = 8 + n
    for name, v in hdr.items():
        if name == "__metadata__":
            continue
        b, e = v["data_offsets"]
        a = np.frombuffer(raw[base + b:base + e], dtype=DT[v["dtype"]])
        if v["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name] = torch.from_numpy(a.astype(np.float32) if a.dtype != np.bool_ else a.copy()).reshape(v["shape"])


def load(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    w = {}
    idx = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(idx):
        for fn in sorted(set(json.load(open(idx))["weight_map"].values())):
            read_safetensors(os.path.join(d, fn), w)
    else:
        read_safetensors(os.path.join(d, "model.safetensors"), w)
    return cfg, w


def layer_norm(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_inv_freq(cfg, head_dim, neox):
    rp = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    theta = rp.get("rope_theta") or cfg.get("rope_theta") or (cfg.get("rotary_emb_base") if neox else None) or 10000.0
    pf = rp.get("partial_rotary_factor") or cfg.get("partial_rotary_factor") or \
        (cfg.get("rotary_pct", 0.25) if neox else 1.0)
    dim = int(head_dim * pf)
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    kind = rp.get("rope_type", rp.get("type", "default"))
    if kind == "llama3":
        factor, lo, hi = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"]
        old = rp["original_max_position_embeddings"]
        lo_wl, hi_wl = old / lo, old / hi
        wl = 2 * math.pi / inv
        scaled = torch.where(wl > lo_wl, inv / factor, inv)
        smooth = (old / wl - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        med = ~(wl < hi_wl) * ~(wl > lo_wl)
        inv = torch.where(med, smoothed, scaled)
    elif kind == "linear":
        inv = inv / rp["factor"]
    return inv, dim


def apply_rope(x, inv, dim, T):
    """x [nh, T, hd]; half-split rotation of the first dim components."""
    pos = torch.arange(T, dtype=torch.float32)
    freqs = pos[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    r, rest = x[..., :dim], x[..., dim:]
    return torch.cat((r * cos + rotate_half(r) * sin, rest), dim=-1)


def attend(q, k, v, mask_add, keep):
    """q [nh,T,hd], k/v [nh,T,hd] (already repeated for GQA); returns ctx [T, nh*hd], probs."""
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) + mask_add
    p = torch.softmax(s, dim=-1)
    o = torch.matmul(p, v)
    if keep is not None:
        o = o * keep[:, None, None]
    return o.transpose(0, 1).reshape(q.shape[1], -1), p


def causal_mask(T):
    m = torch.full((T, T), torch.finfo(torch.float32).min)
    return torch.triu(m, diagonal=1)


def fwd_gpt2(cfg, w, ids, keep):
    p = "transformer." if "transformer.wte.weight" in w else ""
    T, d, nh = len(ids), cfg.get("n_embd", 768), cfg.get("n_head", 12)
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    x = w[p + "wte.weight"][ids] + w[p + "wpe.weight"][:T]
    atts = []
    for l in range(cfg.get("n_layer", 12)):
        h = f"{p}h.{l}."
        a = layer_norm(x, w[h + "ln_1.weight"], w[h + "ln_1.bias"], eps)
        qkv = a @ w[h + "attn.c_attn.weight"] + w[h + "attn.c_attn.bias"]
        q, k, v = (t.view(T, nh, d // nh).transpose(0, 1) for t in qkv.split(d, dim=-1))
        ctx, pr = attend(q, k, v, causal_mask(T), keep[l] if keep is not None else None)
        atts.append(pr)
        x = x + ctx @ w[h + "attn.c_proj.weight"] + w[h + "attn.c_proj.bias"]
        m = layer_norm(x, w[h + "ln_2.weight"], w[h + "ln_2.bias"], eps)
        x = x + gelu_new(m @ w[h + "mlp.c_fc.weight"] + w[h + "mlp.c_fc.bias"]) @ w[h + "mlp.c_proj.weight"] \
            + w[h + "mlp.c_proj.bias"]
    hN = layer_norm(x, w[p + "ln_f.weight"], w[p + "ln_f.bias"], eps)
    head = w.get("lm_head.weight", w[p + "wte.weight"]) if cfg.get("tie_word_embeddings", True) is False \
        else w[p + "wte.weight"]
    return atts, lm_head(cfg, hN, head)


def lm_head(cfg, h, W):
    """Logits, or None when timing an attention-only forward (HF's base model)."""
    return None if cfg.get("_no_head") else h @ W.T


def fwd_neox(cfg, w, ids, keep):
    p = "gpt_neox."
    T, d, nh = len(ids), cfg["hidden_size"], cfg["num_attention_heads"]
    hs, eps = d // nh, cfg.get("layer_norm_eps", 1e-5)
    inv, dim = rope_inv_freq(cfg, hs, True)
    x = w[p + "embed_in.weight"][ids]
    atts = []
    for l in range(cfg["num_hidden_layers"]):
        h = f"{p}layers.{l}."
        a = layer_norm(x, w[h + "input_layernorm.weight"], w[h + "input_layernorm.bias"], eps)
        qkv = torch.nn.functional.linear(a, w[h + "attention.query_key_value.weight"],
                                         w[h + "attention.query_key_value.bias"])
        qkv = qkv.view(T, nh, 3 * hs).transpose(0, 1)
        q, k, v = qkv[..., :hs], qkv[..., hs:2 * hs], qkv[..., 2 * hs:]
        q, k = apply_rope(q, inv, dim, T), apply_rope(k, inv, dim, T)
        ctx, pr = attend(q, k, v, causal_mask(T), keep[l] if keep is not None else None)
        atts.append(pr)
        att = torch.nn.functional.linear(ctx, w[h + "attention.dense.weight"], w[h + "attention.dense.bias"])
        parallel = cfg.get("use_parallel_residual", True)
        y = x if parallel else x + att
        m = layer_norm(y, w[h + "post_attention_layernorm.weight"], w[h + "post_attention_layernorm.bias"], eps)
        mlp = torch.nn.functional.linear(
            torch.nn.functional.gelu(torch.nn.functional.linear(m, w[h + "mlp.dense_h_to_4h.weight"],
                                                                w[h + "mlp.dense_h_to_4h.bias"])),
            w[h + "mlp.dense_4h_to_h.weight"], w[h + "mlp.dense_4h_to_h.bias"])
        x = mlp + att + x if parallel else y + mlp
    hN = layer_norm(x, w[p + "final_layer_norm.weight"], w[p + "final_layer_norm.bias"], eps)
    return atts, lm_head(cfg, hN, w["embed_out.weight"])


def fwd_llama(cfg, w, ids, keep, qwen):
    p = "model."
    T, d, nh = len(ids), cfg["hidden_size"], cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads") or nh
    hd = cfg.get("head_dim") or d // nh
    eps = cfg.get("rms_norm_eps", 1e-6)
    inv, dim = rope_inv_freq(cfg, hd, False)
    lin = torch.nn.functional.linear
    x = w[p + "embed_tokens.weight"][ids]
    atts = []
    for l in range(cfg["num_hidden_layers"]):
        h = f"{p}layers.{l}.self_attn."
        a = rms_norm(x, w[f"{p}layers.{l}.input_layernorm.weight"], eps)
        # biases: Qwen2 always on q/k/v; Llama when attention_bias / mlp_bias put them in the file
        q = lin(a, w[h + "q_proj.weight"], w.get(h + "q_proj.bias"))
        k = lin(a, w[h + "k_proj.weight"], w.get(h + "k_proj.bias"))
        v = lin(a, w[h + "v_proj.weight"], w.get(h + "v_proj.bias"))
        q = q.view(T, nh, hd).transpose(0, 1)
        k = k.view(T, nkv, hd).transpose(0, 1)
        v = v.view(T, nkv, hd).transpose(0, 1)
        q, k = apply_rope(q, inv, dim, T), apply_rope(k, inv, dim, T)
        k, v = k.repeat_interleave(nh // nkv, dim=0), v.repeat_interleave(nh // nkv, dim=0)
        ctx, pr = attend(q, k, v, causal_mask(T), keep[l] if keep is not None else None)
        atts.append(pr)
        x = x + lin(ctx, w[h + "o_proj.weight"], w.get(h + "o_proj.bias"))
        m = rms_norm(x, w[f"{p}layers.{l}.post_attention_layernorm.weight"], eps)
        g = f"{p}layers.{l}.mlp."
        x = x + lin(torch.nn.functional.silu(lin(m, w[g + "gate_proj.weight"], w.get(g + "gate_proj.bias")))
                    * lin(m, w[g + "up_proj.weight"], w.get(g + "up_proj.bias")),
                    w[g + "down_proj.weight"], w.get(g + "down_proj.bias"))
    hN = rms_norm(x, w[p + "norm.weight"], eps)
    return atts, lm_head(cfg, hN, w.get("lm_head.weight", w[p + "embed_tokens.weight"]))


def ln_params(w, base):
    if base + ".weight" in w:
        return w[base + ".weight"], w[base + ".bias"]
    return w[base + ".gamma"], w[base + ".beta"]


def fwd_bert(cfg, w, ids, keep, valid):
    p = "bert."
    T, d, nh = len(ids), cfg["hidden_size"], cfg["num_attention_heads"]
    eps = cfg.get("layer_norm_eps", 1e-12)
    lin = torch.nn.functional.linear
    e = w[p + "embeddings.word_embeddings.weight"][ids] + w[p + "embeddings.token_type_embeddings.weight"][0]
    e = e + w[p + "embeddings.position_embeddings.weight"][:T]
    x = layer_norm(e, *ln_params(w, p + "embeddings.LayerNorm"), eps)
    mask = torch.where(torch.tensor(valid, dtype=torch.bool), 0.0, torch.finfo(torch.float32).min)[None, :]
    atts = []
    for l in range(cfg["num_hidden_layers"]):
        h = f"{p}encoder.layer.{l}."
        q, k, v = (lin(x, w[h + f"attention.self.{n}.weight"], w[h + f"attention.self.{n}.bias"])
                   .view(T, nh, d // nh).transpose(0, 1) for n in ("query", "key", "value"))
        ctx, pr = attend(q, k, v, mask, keep[l] if keep is not None else None)
        atts.append(pr)
        a = lin(ctx, w[h + "attention.output.dense.weight"], w[h + "attention.output.dense.bias"])
        x = layer_norm(a + x, *ln_params(w, h + "attention.output.LayerNorm"), eps)
        f = lin(torch.nn.functional.gelu(lin(x, w[h + "intermediate.dense.weight"], w[h + "intermediate.dense.bias"])),
                w[h + "output.dense.weight"], w[h + "output.dense.bias"])
        x = layer_norm(f + x, *ln_params(w, h + "output.LayerNorm"), eps)
    return atts, None


def forward(cfg, w, ids, valid, keep):
    mt = cfg["model_type"]
    ids = torch.tensor(ids, dtype=torch.long)
    with torch.no_grad():
        if mt == "gpt2":
            return fwd_gpt2(cfg, w, ids, keep)
        if mt == "gpt_neox":
            return fwd_neox(cfg, w, ids, keep)
        if mt in ("llama", "qwen2"):
            return fwd_llama(cfg, w, ids, keep, mt == "qwen2")
        return fwd_bert(cfg, w, ids, keep, valid)


def read_ids(path, pad):
    seqs = [[int(x) for x in ln.split()] for ln in open(path) if ln.strip() and not ln.lstrip().startswith("#")]
    T = max(len(s) for s in seqs)
    return [s + [pad] * (T - len(s)) for s in seqs], [[1] * len(s) + [0] * (T - len(s)) for s in seqs]


def read_mask(path, L, H):
    keep = torch.ones(L, H)
    for ln in open(path):
        if ln.strip() and not ln.lstrip().startswith("#"):
            l, h = ln.split()
            keep[int(l), int(h)] = 0
    return keep


def compare(a, cfg, w):
    import h5py
    seqs, valid = read_ids(a.ids, cfg.get("pad_token_id") or 0)
    f = h5py.File(a.attn, "r")
    att = f["attention"]
    lg = h5py.File(a.logits, "r")["logits"] if a.logits else None
    keep = None
    if a.mask:
        keep = read_mask(a.mask, len(att[0]), att.shape[2])
    worst_p, worst_l, ok_tokens = 0.0, 0.0, True
    for s, ids in enumerate(seqs):
        ok_tokens &= bool(np.array_equal(f["tokens"][s], ids))
        atts, logits = forward(cfg, w, ids, valid[s], keep)
        mine = np.exp(att[s].astype(np.float64))
        ref = np.stack([p.numpy() for p in atts])
        worst_p = max(worst_p, float(np.abs(mine - ref).max()))
        if lg is not None:
            r = logits.numpy()
            worst_l = max(worst_l, float(np.abs(lg[s] - r).max() / np.abs(r).max()))
    tag = a.tag
    print(("ok" if ok_tokens else "not ok") + f" - {tag}: token ids stored")
    print(("ok" if worst_p <= 1e-5 else "not ok") + f" - {tag}: attention within 1e-5 (max {worst_p:.2e})")
    if lg is not None:
        print(("ok" if worst_l <= 1e-4 else "not ok") + f" - {tag}: logits within 1e-4 relative (max {worst_l:.2e})")


def bench(a, cfg, w):
    """Eager forward returning every attention map, no LM head (like extract without --nll)."""
    torch.set_num_threads(a.threads)
    cfg["_no_head"] = True
    V = cfg.get("vocab_size", 50257)
    rng = np.random.default_rng(1)
    seqs = [rng.integers(0, V, a.T).tolist() for _ in range(a.S)]
    forward(cfg, w, seqs[0], [1] * a.T, None)   # warm-up
    t0, c0 = time.perf_counter(), time.process_time()
    for s in seqs:
        forward(cfg, w, s, [1] * a.T, None)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    print(f"pytorch_tokens_per_s\t{a.S * a.T / dt:.1f}\t{a.S * a.T / dc:.1f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("ids", nargs="?")
    ap.add_argument("--attn")
    ap.add_argument("--logits")
    ap.add_argument("--mask")
    ap.add_argument("--tag", default="reference")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("-S", type=int, default=8)
    ap.add_argument("-T", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    cfg, w = load(a.model)
    if a.bench:
        bench(a, cfg, w)
    else:
        compare(a, cfg, w)


if __name__ == "__main__":
    sys.exit(main())

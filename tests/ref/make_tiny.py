#!/usr/bin/python3
"""Write a tiny Hugging Face checkpoint with random weights: config.json plus safetensors with the
exact tensor names of the family (hf-checkpoints.md §3.2, §4.2, §5.2, §6.2, §7.2), including the
extra buffers real files carry. The safetensors bytes are written by hand (8-byte little-endian
header length, JSON header padded with spaces to a multiple of 8, then the data), because the
`safetensors` package is not available here.

usage: make_tiny.py FAMILY OUTDIR [--dtype F32|F16|BF16] [--shards N] [--no-prefix] [--prefix]
                    [--llama3] [--gqa] [--tied|--untied] [--v5] [--seed N] [--size small|gpt2-small]
"""
import argparse
import json
import os
import struct

import numpy as np


def f32_to_bf16_bits(a):
    """Round-to-nearest-even float32 → bfloat16 bits (what torch's .to(bfloat16) does)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def encode(arr, dtype):
    if dtype == "F32":
        return np.ascontiguousarray(arr, dtype="<f4").tobytes()
    if dtype == "F16":
        return np.ascontiguousarray(arr, dtype="<f2").tobytes()
    if dtype == "BF16":
        return f32_to_bf16_bits(arr).astype("<u2").tobytes()
    if dtype == "I64":
        return np.ascontiguousarray(arr, dtype="<i8").tobytes()
    if dtype == "BOOL":
        return np.ascontiguousarray(arr, dtype=np.uint8).tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors):
    """tensors: list of (name, array, dtype). Data in sorted-name order, tiled from offset 0."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, arr, dt in sorted(tensors, key=lambda x: x[0]):
        b = encode(arr, dt)
        header[name] = {"dtype": dt, "shape": list(np.shape(arr)), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


class Gen:
    def __init__(self, seed, dtype):
        self.rng = np.random.default_rng(seed)
        self.dtype = dtype
        self.t = []

    def w(self, name, *shape, scale=0.3, base=0.0):
        a = (base + scale * self.rng.standard_normal(shape)).astype(np.float32)
        self.t.append((name, a, self.dtype))

    def buf(self, name, arr, dt):
        self.t.append((name, arr, dt))


def gpt2(g, a, sz):
    d, L, nh, V, P, ff = sz["d"], sz["L"], sz["nh"], sz["V"], sz["P"], 4 * sz["d"]
    p = "transformer." if a.prefix else ""
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": V, "n_positions": P,
           "n_ctx": P, "n_embd": d, "n_layer": L, "n_head": nh, "n_inner": None,
           "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "bos_token_id": V - 1,
           "eos_token_id": V - 1, "torch_dtype": "float32"}
    g.w(p + "wte.weight", V, d)
    g.w(p + "wpe.weight", P, d, scale=0.1)
    g.w(p + "ln_f.weight", d, scale=0.1, base=1.0)
    g.w(p + "ln_f.bias", d, scale=0.1)
    for l in range(L):
        h = f"{p}h.{l}."
        for ln in ("ln_1", "ln_2"):
            g.w(h + ln + ".weight", d, scale=0.1, base=1.0)
            g.w(h + ln + ".bias", d, scale=0.1)
        g.w(h + "attn.c_attn.weight", d, 3 * d, scale=0.5 / np.sqrt(d) * 4)
        g.w(h + "attn.c_attn.bias", 3 * d, scale=0.1)
        g.w(h + "attn.c_proj.weight", d, d, scale=1 / np.sqrt(d))
        g.w(h + "attn.c_proj.bias", d, scale=0.1)
        g.w(h + "mlp.c_fc.weight", d, ff, scale=1 / np.sqrt(d))
        g.w(h + "mlp.c_fc.bias", ff, scale=0.1)
        g.w(h + "mlp.c_proj.weight", ff, d, scale=1 / np.sqrt(ff))
        g.w(h + "mlp.c_proj.bias", d, scale=0.1)
        if sz["buffers"]:
            g.buf(h + "attn.bias", np.tril(np.ones((1, 1, P, P), np.float32)), "F32")
            g.buf(h + "attn.masked_bias", np.array(-1e4, np.float32), "F32")
    if a.untied:
        cfg["tie_word_embeddings"] = False
        g.w("lm_head.weight", V, d)
    return cfg


def neox(g, a, sz):
    d, L, nh, V, P, ff = 64, 2, 4, sz["V"], 64, 128
    hs = d // nh
    cfg = {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "vocab_size": V,
           "hidden_size": d, "num_hidden_layers": L, "num_attention_heads": nh, "intermediate_size": ff,
           "hidden_act": "gelu", "max_position_embeddings": P, "layer_norm_eps": 1e-5,
           "use_parallel_residual": not a.serial, "tie_word_embeddings": False, "bos_token_id": 0, "eos_token_id": 0,
           "torch_dtype": "float16"}
    if a.v5:
        cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}
        cfg["dtype"] = cfg.pop("torch_dtype")
    else:
        cfg.update({"rotary_pct": 0.25, "rotary_emb_base": 10000})
    p = "gpt_neox."
    g.w(p + "embed_in.weight", V, d)
    g.w(p + "final_layer_norm.weight", d, scale=0.1, base=1.0)
    g.w(p + "final_layer_norm.bias", d, scale=0.1)
    g.w("embed_out.weight", V, d, scale=0.2)
    for l in range(L):
        h = f"{p}layers.{l}."
        for ln in ("input_layernorm", "post_attention_layernorm"):
            g.w(h + ln + ".weight", d, scale=0.1, base=1.0)
            g.w(h + ln + ".bias", d, scale=0.1)
        g.w(h + "attention.query_key_value.weight", 3 * d, d, scale=2 / np.sqrt(d))
        g.w(h + "attention.query_key_value.bias", 3 * d, scale=0.1)
        g.w(h + "attention.dense.weight", d, d, scale=1 / np.sqrt(d))
        g.w(h + "attention.dense.bias", d, scale=0.1)
        g.w(h + "mlp.dense_h_to_4h.weight", ff, d, scale=1 / np.sqrt(d))
        g.w(h + "mlp.dense_h_to_4h.bias", ff, scale=0.1)
        g.w(h + "mlp.dense_4h_to_h.weight", d, ff, scale=1 / np.sqrt(ff))
        g.w(h + "mlp.dense_4h_to_h.bias", d, scale=0.1)
        g.buf(h + "attention.bias", np.tril(np.ones((1, 1, P, P), np.uint8)), "BOOL")
        g.buf(h + "attention.rotary_emb.inv_freq", (1.0 / 10000 ** (np.arange(0, 4, 2) / 4)).astype(np.float32), "F32")
    return cfg


def llama(g, a, sz, qwen=False):
    d, L, nh, V, P, ff = 64, 2, 4, sz["V"], 128, 96
    nkv = 2 if a.gqa else nh
    hd = d // nh
    cfg = {"model_type": "qwen2" if qwen else "llama", "vocab_size": V, "hidden_size": d,
           "intermediate_size": ff, "num_hidden_layers": L, "num_attention_heads": nh,
           "num_key_value_heads": nkv, "hidden_act": "silu", "max_position_embeddings": P,
           "rms_norm_eps": 1e-6 if qwen else 1e-5, "tie_word_embeddings": bool(a.tied),
           "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"}
    if a.bias:
        cfg.update(attention_bias=True, mlp_bias=True)
    theta = 1000000.0 if qwen else 500000.0
    scaling = None
    if a.llama3:
        scaling = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 64, "rope_type": "llama3"}
        if a.old_type_key:
            scaling["type"] = scaling.pop("rope_type")
    if a.v5:
        rp = {"rope_type": "default", "rope_theta": theta}
        if scaling:
            rp.update(scaling)
        cfg["rope_parameters"] = rp
        cfg["dtype"] = cfg.pop("torch_dtype")
    else:
        cfg["rope_theta"] = theta
        cfg["rope_scaling"] = scaling
    if a.head_dim:
        cfg["head_dim"] = a.head_dim
        hd = a.head_dim
    p = "model."
    g.w(p + "embed_tokens.weight", V, d)
    g.w(p + "norm.weight", d, scale=0.1, base=1.0)
    if not a.tied:
        g.w("lm_head.weight", V, d, scale=0.2)
    for l in range(L):
        h = f"{p}layers.{l}."
        g.w(h + "input_layernorm.weight", d, scale=0.1, base=1.0)
        g.w(h + "post_attention_layernorm.weight", d, scale=0.1, base=1.0)
        g.w(h + "self_attn.q_proj.weight", nh * hd, d, scale=2 / np.sqrt(d))
        g.w(h + "self_attn.k_proj.weight", nkv * hd, d, scale=2 / np.sqrt(d))
        g.w(h + "self_attn.v_proj.weight", nkv * hd, d, scale=1 / np.sqrt(d))
        g.w(h + "self_attn.o_proj.weight", d, nh * hd, scale=1 / np.sqrt(d))
        if qwen or a.bias:
            g.w(h + "self_attn.q_proj.bias", nh * hd, scale=0.2)
            g.w(h + "self_attn.k_proj.bias", nkv * hd, scale=0.2)
            g.w(h + "self_attn.v_proj.bias", nkv * hd, scale=0.2)
        if a.bias:
            g.w(h + "self_attn.o_proj.bias", d, scale=0.2)
        g.w(h + "mlp.gate_proj.weight", ff, d, scale=1 / np.sqrt(d))
        g.w(h + "mlp.up_proj.weight", ff, d, scale=1 / np.sqrt(d))
        g.w(h + "mlp.down_proj.weight", d, ff, scale=1 / np.sqrt(ff))
        if a.bias:
            g.w(h + "mlp.gate_proj.bias", ff, scale=0.2)
            g.w(h + "mlp.up_proj.bias", ff, scale=0.2)
            g.w(h + "mlp.down_proj.bias", d, scale=0.2)
        if not qwen:
            g.buf(h + "self_attn.rotary_emb.inv_freq", np.ones(hd // 2, np.float32), "F32")
    return cfg


def bert(g, a, sz):
    d, L, nh, V, P, ff = 32, 2, 4, sz["V"], 64, 64
    cfg = {"model_type": "bert", "architectures": ["BertForMaskedLM"], "vocab_size": V, "hidden_size": d,
           "num_hidden_layers": L, "num_attention_heads": nh, "intermediate_size": ff, "hidden_act": "gelu",
           "max_position_embeddings": P, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "pad_token_id": 0,
           "position_embedding_type": "absolute"}
    p = "bert."
    gb = ("gamma", "beta") if a.gamma else ("weight", "bias")
    g.w(p + "embeddings.word_embeddings.weight", V, d)
    g.w(p + "embeddings.position_embeddings.weight", P, d, scale=0.1)
    g.w(p + "embeddings.token_type_embeddings.weight", 2, d, scale=0.1)
    g.w(p + "embeddings.LayerNorm." + gb[0], d, scale=0.1, base=1.0)
    g.w(p + "embeddings.LayerNorm." + gb[1], d, scale=0.1)
    g.buf(p + "embeddings.position_ids", np.arange(P, dtype=np.int64)[None, :], "I64")
    for l in range(L):
        h = f"{p}encoder.layer.{l}."
        for n in ("query", "key", "value"):
            g.w(h + f"attention.self.{n}.weight", d, d, scale=2 / np.sqrt(d))
            g.w(h + f"attention.self.{n}.bias", d, scale=0.1)
        g.w(h + "attention.output.dense.weight", d, d, scale=1 / np.sqrt(d))
        g.w(h + "attention.output.dense.bias", d, scale=0.1)
        g.w(h + "attention.output.LayerNorm." + gb[0], d, scale=0.1, base=1.0)
        g.w(h + "attention.output.LayerNorm." + gb[1], d, scale=0.1)
        g.w(h + "intermediate.dense.weight", ff, d, scale=1 / np.sqrt(d))
        g.w(h + "intermediate.dense.bias", ff, scale=0.1)
        g.w(h + "output.dense.weight", d, ff, scale=1 / np.sqrt(ff))
        g.w(h + "output.dense.bias", d, scale=0.1)
        g.w(h + "output.LayerNorm." + gb[0], d, scale=0.1, base=1.0)
        g.w(h + "output.LayerNorm." + gb[1], d, scale=0.1)
    g.w(p + "pooler.dense.weight", d, d)
    g.w(p + "pooler.dense.bias", d)
    g.w("cls.predictions.bias", V)
    g.w("cls.predictions.transform.dense.weight", d, d)
    g.w("cls.predictions.transform.dense.bias", d)
    g.w("cls.predictions.transform.LayerNorm." + gb[0], d)
    g.w("cls.predictions.transform.LayerNorm." + gb[1], d)
    if a.decoder:   # an untied decoder stored in the file (older conversions store the copy)
        g.w("cls.predictions.decoder.weight", V, d)
        cfg["tie_word_embeddings"] = False
    return cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("family", choices=["gpt2", "gpt_neox", "llama", "qwen2", "bert"])
    ap.add_argument("outdir")
    ap.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--prefix", action="store_true", help="GPT-2 with transformer. prefix")
    ap.add_argument("--untied", action="store_true", help="GPT-2 with its own lm_head")
    ap.add_argument("--tied", action="store_true", help="Llama/Qwen2 tied head (no lm_head tensor)")
    ap.add_argument("--llama3", action="store_true")
    ap.add_argument("--old-type-key", action="store_true", help="rope_scaling uses 'type'")
    ap.add_argument("--gqa", action="store_true")
    ap.add_argument("--bias", action="store_true", help="Llama attention_bias and mlp_bias")
    ap.add_argument("--serial", action="store_true", help="NeoX use_parallel_residual false")
    ap.add_argument("--head-dim", type=int, default=0)
    ap.add_argument("--v5", action="store_true", help="rope_parameters / dtype spellings")
    ap.add_argument("--gamma", action="store_true", help="BERT LayerNorm.gamma/beta names")
    ap.add_argument("--size", default="tiny", choices=["tiny", "gpt2-small"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--vocab", type=int, default=0, help="vocabulary size (to match a real tokenizer)")
    ap.add_argument("--decoder", action="store_true", help="BERT: an untied cls.predictions.decoder.weight")
    ap.add_argument("--no-head", action="store_true",
                    help="encoders: leave out the masked-LM head tensors (a bare encoder; same other weights)")
    a = ap.parse_args()
    sz = {"d": 32, "L": 2, "nh": 4, "V": 101, "P": 64, "buffers": True}
    if a.size == "gpt2-small":
        sz = {"d": 768, "L": 12, "nh": 12, "V": 50257, "P": 1024, "buffers": False}
    if a.vocab:
        sz["V"] = a.vocab
    g = Gen(a.seed, a.dtype)
    cfg = {"gpt2": gpt2, "gpt_neox": neox, "llama": llama, "bert": bert,
           "qwen2": lambda g, a, sz: llama(g, a, sz, qwen=True)}[a.family](g, a, sz)
    if a.no_head:
        g.t = [t for t in g.t if not t[0].startswith(("cls.", "lm_head."))]
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    if a.shards <= 1:
        write_safetensors(os.path.join(a.outdir, "model.safetensors"), g.t)
        return
    names = sorted(t[0] for t in g.t)
    wm, K = {}, a.shards
    for k in range(K):
        fn = f"model-{k + 1:05d}-of-{K:05d}.safetensors"
        part = [t for t in g.t if names.index(t[0]) % K == k]
        write_safetensors(os.path.join(a.outdir, fn), part)
        for t in part:
            wm[t[0]] = fn
    total = sum(len(encode(t[1], t[2])) for t in g.t)
    with open(os.path.join(a.outdir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2)


if __name__ == "__main__":
    main()

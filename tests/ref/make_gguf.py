#!/usr/bin/python3
"""Write small GGUF v3 files for attncoda's tests, by hand with struct (no gguf package here).

  make_gguf.py llama OUT.gguf OUT.npz   tiny random Llama (GQA, untied head) in Meta's
                                        interleaved-RoPE q/k order, tensors in F32, F16, BF16 and
                                        Q8_0; the .npz holds the dequantised weights and config
                                        for llama2c_reference.py --npz
  make_gguf.py qwen2 OUT.gguf OUT.npz   tiny random Qwen2 (q/k/v biases, tied head, half-split)
  make_gguf.py from-hf DIR OUT.gguf     convert a tiny Hugging Face checkpoint (make_tiny.py: gpt2,
                                        llama, qwen2; make_tiny_more.py: phi, mistral, gemma,
                                        gemma2, qwen3; one F32 safetensors file) the way llama.cpp's
                                        convert_hf_to_gguf.py lays it out: GPT-2 Conv1D weights
                                        transposed, llama (and Mistral, which converts to llama)
                                        q/k rows permuted back to Meta's interleaved order, the
                                        NeoX-RoPE archs (qwen2, qwen3, phi2, gemma, gemma2) left
                                        half-split, 1 added to every gemma *norm.weight and its
                                        lm_head dropped (see from_hf_more for the metadata)
  make_gguf.py from-hf DIR OUT.gguf --drop NAME
                                        the same without metadata key or tensor NAME (bad input,
                                        or a Mistral file without its window as the converter
                                        writes it)
  make_gguf.py from-hf DIR OUT.gguf --fuse-qkv
                                        phi: one blk.N.attn_qkv (q, k, v rows stacked, biases
                                        too), as older Phi-2 conversions (Wqkv) carry it
  make_gguf.py bad DIR                  damaged and unsupported files, one per failure case,
                                        named <case>.gguf (the list is printed, one per line)
The layout follows the GGUF specification: magic, version, tensor count, metadata count,
key/values, tensor infos (name, n_dims, ne[] innermost first, type, offset), padding to the
alignment, tensor data.
"""
import os
import struct
import sys

import numpy as np

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
T_F32, T_F16, T_Q4_0, T_Q8_0, T_BF16 = 0, 1, 2, 8, 30
SCALAR = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?",
          U64: "Q", I64: "q", F64: "d"}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value(t, v):
    if t == STR:
        return gstr(v)
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(value(et, x) for x in items)
    return struct.pack("<" + SCALAR[t], v)


def quant(a, ttype):
    """Encode float32 array a (rows contiguous) as ttype; return (bytes, dequantised float32)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    if ttype == T_F32:
        return a.tobytes(), a
    if ttype == T_F16:
        h = a.astype(np.float16)
        return h.tobytes(), h.astype(np.float32)
    if ttype == T_BF16:
        hi = (a.view(np.uint32) >> 16).astype(np.uint16)
        return hi.tobytes(), (hi.astype(np.uint32) << 16).view(np.float32).reshape(a.shape)
    if ttype == T_Q8_0:
        blocks = a.reshape(-1, 32)
        d = np.abs(blocks).max(axis=1) / 127.0
        d16 = d.astype(np.float16)
        inv = np.where(d > 0, 1.0 / np.maximum(d, 1e-30), 0.0)
        q = np.clip(np.rint(blocks * inv[:, None]), -127, 127).astype(np.int8)
        out = b"".join(d16[i].tobytes() + q[i].tobytes() for i in range(len(q)))
        deq = d16.astype(np.float32)[:, None] * q.astype(np.float32)
        return out, deq.reshape(a.shape)
    if ttype == T_Q4_0:  # only its size matters: the reader must refuse it by name
        return bytes(a.size // 32 * 18), a
    raise ValueError(ttype)


def gguf_bytes(kvs, tensors, version=3, align=32, magic=b"GGUF"):
    """kvs: [(key, type, value)]; tensors: [(name, ne list, ttype, data bytes)]."""
    head = magic + struct.pack("<IQQ", version, len(tensors), len(kvs))
    head += b"".join(gstr(k) + struct.pack("<I", t) + value(t, v) for k, t, v in kvs)
    infos, data = b"", b""
    for name, ne, ttype, raw in tensors:
        data += bytes((-len(data)) % align)
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", ttype, len(data))
        data += raw
    body = head + infos
    return body + bytes((-len(body)) % align) + data


def tiny(arch, rng):
    """Config, metadata and tensors of a tiny random model; returns (kvs, tensors, dump)."""
    d, L, H, KV, ff, V, ctx = 32, 2, 4, 2, 64, 48, 64
    hd = d // H
    qwen = arch == "qwen2"
    kvs = [("general.architecture", STR, arch), ("general.name", STR, "tiny-" + arch),
           (arch + ".context_length", U32, ctx), (arch + ".embedding_length", U32, d),
           (arch + ".feed_forward_length", U32, ff), (arch + ".block_count", U32, L),
           (arch + ".attention.head_count", U32, H), (arch + ".attention.head_count_kv", U32, KV),
           (arch + ".rope.dimension_count", U32, hd),
           (arch + ".rope.freq_base", F32, 1000000.0 if qwen else 10000.0),
           (arch + ".attention.layer_norm_rms_epsilon", F32, 1e-6 if qwen else 1e-5),
           ("tokenizer.ggml.bos_token_id", U32, 1), ("tokenizer.ggml.eos_token_id", U32, 2)]
    # name → (shape [rows, cols] as nn.Linear, ggml type); a mix of every supported type.
    spec = [("token_embd.weight", (V, d), T_F16 if not qwen else T_F32),
            ("output_norm.weight", (d,), T_F32)]
    if not qwen:
        spec.append(("output.weight", (V, d), T_Q8_0))
    for l in range(L):
        p = "blk.%d." % l
        spec += [(p + "attn_norm.weight", (d,), T_F32), (p + "attn_q.weight", (H * hd, d), T_Q8_0),
                 (p + "attn_k.weight", (KV * hd, d), T_F16), (p + "attn_v.weight", (KV * hd, d), T_BF16),
                 (p + "attn_output.weight", (d, H * hd), T_F32), (p + "ffn_norm.weight", (d,), T_F32),
                 (p + "ffn_gate.weight", (ff, d), T_Q8_0), (p + "ffn_up.weight", (ff, d), T_BF16),
                 (p + "ffn_down.weight", (d, ff), T_F16)]
        if qwen:
            spec += [(p + "attn_q.bias", (H * hd,), T_F32), (p + "attn_k.bias", (KV * hd,), T_F32),
                     (p + "attn_v.bias", (KV * hd,), T_F32)]
    tensors, dump = [], {}
    for name, shape, ttype in spec:
        if name.endswith("norm.weight"):
            a = 1.0 + 0.1 * rng.standard_normal(shape)
        else:
            a = rng.standard_normal(shape) * (0.5 if "bias" in name else 1.0 / np.sqrt(shape[-1]))
        raw, deq = quant(a.astype(np.float32), ttype)
        tensors.append((name, list(reversed(shape)), ttype, raw))
        dump[name] = deq
    cfg = dict(cfg_dim=d, cfg_n_layers=L, cfg_n_heads=H, cfg_n_kv=KV, cfg_vocab=V,
               cfg_eps=1e-6 if qwen else 1e-5, cfg_theta=1000000.0 if qwen else 10000.0,
               cfg_rope="half" if qwen else "interleaved", cfg_bias=qwen)
    dump.update({k: np.array(v) for k, v in cfg.items()})
    return kvs, tensors, dump


def bad_files(outdir):
    rng = np.random.default_rng(7)
    kvs, tensors, _ = tiny("llama", rng)
    good = gguf_bytes(kvs, tensors)
    hdr_end = len(gguf_bytes(kvs, []))  # header + metadata only (no tensor infos)
    cases = {
        "bad_magic": gguf_bytes(kvs, tensors, magic=b"GGUG"),
        "version1": gguf_bytes(kvs, tensors, version=1),
        "version4": gguf_bytes(kvs, tensors, version=4),
        "empty": b"",
        "truncated_header": good[:10],
        "truncated_metadata": good[:hdr_end // 2],
        "truncated_data": good[:len(good) - 100],
        "huge_kv_count": b"GGUF" + struct.pack("<IQQ", 3, 0, 1 << 60),
        "huge_tensor_count": b"GGUF" + struct.pack("<IQQ", 3, 1 << 61, 0),
        "huge_array": gguf_bytes([("x", ARR, (U32, []))], []).replace(
            struct.pack("<IQ", U32, 0), struct.pack("<IQ", U32, 1 << 62)),
        "huge_string": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 63) + bytes(16),
        "bad_value_type": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gstr("x") + struct.pack("<I", 99),
        "too_many_dims": gguf_bytes([("general.architecture", STR, "llama")],
                                    [("t", [1, 1, 1, 1, 1], T_F32, bytes(4))]),
        "unknown_tensor_type": gguf_bytes(kvs, [(n, ne, 99 if n == "output_norm.weight" else t, r)
                                                for n, ne, t, r in tensors]),
        "unsupported_q4_0": gguf_bytes(kvs, [(n, ne, T_Q4_0, quant(np.zeros(int(np.prod(ne)), np.float32), T_Q4_0)[0])
                                             if n == "blk.0.ffn_gate.weight" else (n, ne, t, r)
                                             for n, ne, t, r in tensors]),
        "unknown_arch": gguf_bytes([(k, t, "mamba" if k == "general.architecture" else v)
                                    for k, t, v in kvs], tensors),
        "missing_tensor": gguf_bytes(kvs, [x for x in tensors if x[0] != "blk.1.attn_v.weight"]),
        "wrong_shape": gguf_bytes(kvs, [(n, [ne[0], ne[1] - 1] if n == "blk.0.attn_k.weight" else ne, t,
                                         r[:len(r) // ne[1] * (ne[1] - 1)] if n == "blk.0.attn_k.weight" else r)
                                        for n, ne, t, r in tensors]),
        "bad_alignment": gguf_bytes(kvs + [("general.alignment", U32, 24)], tensors),
        "missing_key": gguf_bytes([x for x in kvs if x[0] != "llama.block_count"], tensors),
    }
    # A tensor whose offset points past the end of the file: patch the last tensor info.
    name = tensors[-1][0].encode()
    i = good.index(struct.pack("<Q", len(name)) + name)
    j = i + 8 + len(name)
    nd = struct.unpack_from("<I", good, j)[0]
    off_pos = j + 4 + 8 * nd + 4
    cases["offset_beyond_end"] = good[:off_pos] + struct.pack("<Q", 1 << 40) + good[off_pos + 8:]
    cases["offset_misaligned"] = good[:off_pos] + struct.pack(
        "<Q", struct.unpack_from("<Q", good, off_pos)[0] + 4) + good[off_pos + 8:]
    os.makedirs(outdir, exist_ok=True)
    for k, v in cases.items():
        with open(os.path.join(outdir, k + ".gguf"), "wb") as f:
            f.write(v)
        print(k)


def read_safetensors(path):
    import json
    raw = open(path, "rb").read()
    n = struct.unpack_from("<Q", raw, 0)[0]
    hdr = json.loads(raw[8:8 + n])
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        assert v["dtype"] == "F32", "from-hf converts F32 checkpoints only"
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(v["shape"])
    return out


def to_meta_order(w, n_head):
    """HF half-split rows → Meta interleaved rows (llama.cpp's convert permute)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def from_hf_more(cfg, st, add, fuse_qkv=False):
    """The families of make_tiny_more.py, as convert_hf_to_gguf.py (Phi2Model, LlamaModel,
    GemmaModel, Gemma2Model, Qwen3Model) writes them; returns the metadata. Where the converter
    would need a key the tiny config leaves to the class default (phi partial_rotary_factor,
    gemma head_dim, gemma2 soft-caps and window) the default is written. Two deliberate
    departures: phi2.feed_forward_length is intermediate_size (the converter writes 4·n_embd,
    the same number for every released Phi-2), and a Mistral sliding_window is written as
    llama.attention.sliding_window (the converter drops it)."""
    mt = cfg["model_type"]
    arch = {"phi": "phi2", "mistral": "llama"}.get(mt, mt)
    nh, L, d_ = cfg["num_attention_heads"], cfg["num_hidden_layers"], cfg["hidden_size"]
    nkv = cfg.get("num_key_value_heads") or nh
    kv = lambda k, t, v: (arch + "." + k, t, v)
    kvs = [("general.architecture", STR, arch), kv("context_length", U32, cfg["max_position_embeddings"]),
           kv("embedding_length", U32, d_), kv("feed_forward_length", U32, cfg["intermediate_size"]),
           kv("block_count", U32, L), kv("attention.head_count", U32, nh)]
    if mt == "phi":
        kvs += [kv("attention.head_count_kv", U32, nh),
                kv("attention.layer_norm_epsilon", F32, cfg["layer_norm_eps"]),
                kv("rope.dimension_count", U32, int(cfg.get("partial_rotary_factor", 0.5) * d_) // nh)]
    else:
        kvs += [kv("attention.head_count_kv", U32, nkv),
                kv("attention.layer_norm_rms_epsilon", F32, cfg["rms_norm_eps"])]
    gem = mt in ("gemma", "gemma2")
    hd = cfg.get("head_dim") or (256 if gem else d_ // nh)
    if gem or "head_dim" in cfg:
        kvs += [kv("attention.key_length", U32, hd), kv("attention.value_length", U32, hd)]
    if mt in ("mistral", "qwen3"):   # Gemma and Phi2 write no base: llama.cpp's 10000 applies
        kvs.append(kv("rope.freq_base", F32, cfg["rope_theta"]))
    if mt == "mistral":
        kvs.append(kv("rope.dimension_count", U32, hd))
        if cfg.get("sliding_window", 4096) is not None:
            kvs.append(kv("attention.sliding_window", U32, cfg.get("sliding_window", 4096)))
    if mt == "gemma2":
        kvs += [(arch + ".attn_logit_softcapping", F32, cfg.get("attn_logit_softcapping", 50.0)),
                (arch + ".final_logit_softcapping", F32, cfg.get("final_logit_softcapping", 30.0)),
                kv("attention.sliding_window", U32, cfg.get("sliding_window", 4096))]
    norm1 = lambda w: (w.astype(np.float32) + np.float32(1)) if gem else w
    p = "model."
    if mt == "phi":
        add("token_embd.weight", st[p + "embed_tokens.weight"])
        add("output_norm.weight", st[p + "final_layernorm.weight"])
        add("output_norm.bias", st[p + "final_layernorm.bias"])
        if "lm_head.weight" in st:
            add("output.weight", st["lm_head.weight"])
        add("output.bias", st["lm_head.bias"])
        names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
                 "self_attn.v_proj": "attn_v", "self_attn.dense": "attn_output", "mlp.fc1": "ffn_up",
                 "mlp.fc2": "ffn_down"}
    else:
        add("token_embd.weight", st[p + "embed_tokens.weight"])
        add("output_norm.weight", norm1(st[p + "norm.weight"]))
        if "lm_head.weight" in st and not gem:
            add("output.weight", st["lm_head.weight"])
        names = {"input_layernorm": "attn_norm",
                 "post_attention_layernorm": "post_attention_norm" if mt == "gemma2" else "ffn_norm",
                 "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffw_norm",
                 "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
                 "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                 "mlp.down_proj": "ffn_down"}
    for l in range(L):
        if fuse_qkv:
            h = "%slayers.%d.self_attn." % (p, l)
            for kind in ("weight", "bias"):
                add("blk.%d.attn_qkv.%s" % (l, kind),
                    np.concatenate([st[h + n + "_proj." + kind] for n in "qkv"]))
        for hf, gg in names.items():
            if fuse_qkv and gg in ("attn_q", "attn_k", "attn_v"):
                continue
            for kind in ("weight", "bias"):
                key = "%slayers.%d.%s.%s" % (p, l, hf, kind)
                if key not in st:
                    continue
                w = st[key]
                if mt == "mistral" and gg in ("attn_q", "attn_k"):
                    w = to_meta_order(w, nh if gg == "attn_q" else nkv)
                if key.endswith("norm.weight"):
                    w = norm1(w)
                add("blk.%d.%s.%s" % (l, gg, kind), w)
    return kvs


def from_hf(d, out, drop=None, fuse_qkv=False):
    import json
    cfg = json.load(open(os.path.join(d, "config.json")))
    st = read_safetensors(os.path.join(d, "model.safetensors"))
    mt = cfg["model_type"]
    T = []

    def add(name, a):
        a = np.ascontiguousarray(a, dtype=np.float32)
        T.append((name, list(reversed(a.shape)), T_F32, a.tobytes()))

    if mt in ("phi", "mistral", "gemma", "gemma2", "qwen3"):
        kvs = from_hf_more(cfg, st, add, fuse_qkv)
    elif mt == "gpt2":
        p = "transformer." if "transformer.wte.weight" in st else ""
        d_, L = cfg["n_embd"], cfg["n_layer"]
        kvs = [("general.architecture", STR, "gpt2"), ("gpt2.context_length", U32, cfg["n_ctx"]),
               ("gpt2.embedding_length", U32, d_), ("gpt2.feed_forward_length", U32, 4 * d_),
               ("gpt2.block_count", U32, L), ("gpt2.attention.head_count", U32, cfg["n_head"]),
               ("gpt2.attention.layer_norm_epsilon", F32, cfg["layer_norm_epsilon"]),
               ("tokenizer.ggml.bos_token_id", U32, cfg["bos_token_id"]),
               ("tokenizer.ggml.eos_token_id", U32, cfg["eos_token_id"])]
        add("token_embd.weight", st[p + "wte.weight"])
        add("position_embd.weight", st[p + "wpe.weight"])
        add("output_norm.weight", st[p + "ln_f.weight"])
        add("output_norm.bias", st[p + "ln_f.bias"])
        if "lm_head.weight" in st:
            add("output.weight", st["lm_head.weight"])
        names = {"ln_1": "attn_norm", "ln_2": "ffn_norm", "attn.c_attn": "attn_qkv",
                 "attn.c_proj": "attn_output", "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
        for l in range(L):
            for hf, gg in names.items():
                w = st["%sh.%d.%s.weight" % (p, l, hf)]
                add("blk.%d.%s.weight" % (l, gg), w if hf.startswith("ln") else w.T)
                add("blk.%d.%s.bias" % (l, gg), st["%sh.%d.%s.bias" % (p, l, hf)])
    else:
        nh, nkv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
        d_, L = cfg["hidden_size"], cfg["num_hidden_layers"]
        kvs = [("general.architecture", STR, mt), (mt + ".context_length", U32, cfg["max_position_embeddings"]),
               (mt + ".embedding_length", U32, d_), (mt + ".feed_forward_length", U32, cfg["intermediate_size"]),
               (mt + ".block_count", U32, L), (mt + ".attention.head_count", U32, nh),
               (mt + ".attention.head_count_kv", U32, nkv),
               (mt + ".rope.freq_base", F32, cfg["rope_theta"]),
               (mt + ".attention.layer_norm_rms_epsilon", F32, cfg["rms_norm_eps"]),
               ("tokenizer.ggml.bos_token_id", U32, cfg["bos_token_id"]),
               ("tokenizer.ggml.eos_token_id", U32, cfg["eos_token_id"])]
        add("token_embd.weight", st["model.embed_tokens.weight"])
        add("output_norm.weight", st["model.norm.weight"])
        if "lm_head.weight" in st:
            add("output.weight", st["lm_head.weight"])
        names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
                 "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                 "mlp.down_proj": "ffn_down"}
        for l in range(L):
            for hf, gg in names.items():
                for kind in ("weight", "bias"):
                    key = "model.layers.%d.%s.%s" % (l, hf, kind)
                    if key not in st:
                        continue
                    w = st[key]
                    if mt == "llama" and gg in ("attn_q", "attn_k"):
                        w = to_meta_order(w, nh if gg == "attn_q" else nkv)
                    add("blk.%d.%s.%s" % (l, gg, kind), w)
    if drop is not None:
        n = len(kvs) + len(T)
        kvs, T = [x for x in kvs if x[0] != drop], [x for x in T if x[0] != drop]
        assert len(kvs) + len(T) == n - 1, "--drop %s: no such key or tensor" % drop
    with open(out, "wb") as f:
        f.write(gguf_bytes(kvs, T))


def main():
    mode = sys.argv[1]
    if mode == "from-hf":
        opts = sys.argv[4:]
        drop = opts[opts.index("--drop") + 1] if "--drop" in opts else None
        from_hf(sys.argv[2], sys.argv[3], drop, "--fuse-qkv" in opts)
        return
    if mode == "bad":
        bad_files(sys.argv[2])
        return
    rng = np.random.default_rng(11 if mode == "llama" else 12)
    kvs, tensors, dump = tiny(mode, rng)
    with open(sys.argv[2], "wb") as f:
        f.write(gguf_bytes(kvs, tensors))
    np.savez(sys.argv[3], **dump)


if __name__ == "__main__":
    main()

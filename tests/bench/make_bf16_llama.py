"""A Llama-shaped random checkpoint for the memory benchmark (tests/bench/memory.sh): Llama-3.2-1B
widths (hidden 2048, 32 heads, 8 KV heads, FFN 8192) with a 32000 vocabulary and an untied head,
so 16 layers are 1.10e9 parameters (2.2 GB in BF16). Values are N(0, 0.02²) rounded to BF16; the
F32 file holds the same values widened, so both files give the same outputs.

usage: make_bf16_llama.py OUTDIR [--layers N] [--dtype BF16|F32] [--seed S] [--max-pos P]
--max-pos: max_position_embeddings of config.json (2048; tests/bench/queries.sh uses 8192).
Prints the parameter count."""
import argparse, json, os
import numpy as np

D, H, KV, FF, V, P = 2048, 32, 8, 8192, 32000, 2048


def tensors(L):
    hd = D // H
    yield "model.embed_tokens.weight", (V, D)
    for l in range(L):
        p = f"model.layers.{l}."
        yield p + "input_layernorm.weight", (D,)
        yield p + "post_attention_layernorm.weight", (D,)
        yield p + "self_attn.q_proj.weight", (H * hd, D)
        yield p + "self_attn.k_proj.weight", (KV * hd, D)
        yield p + "self_attn.v_proj.weight", (KV * hd, D)
        yield p + "self_attn.o_proj.weight", (D, H * hd)
        yield p + "mlp.gate_proj.weight", (FF, D)
        yield p + "mlp.up_proj.weight", (FF, D)
        yield p + "mlp.down_proj.weight", (D, FF)
    yield "model.norm.weight", (D,)
    yield "lm_head.weight", (V, D)


def bf16_bits(rng, shape, norm):
    n = int(np.prod(shape))
    x = np.ones(n, np.float32) if norm else rng.standard_normal(n, dtype=np.float32) * np.float32(0.02)
    return (x.view(np.uint32) >> 16).astype("<u2")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--dtype", default="BF16", choices=["BF16", "F32"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-pos", type=int, default=P)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    size = 2 if a.dtype == "BF16" else 4
    header, off, total = {}, 0, 0
    for name, shape in tensors(a.layers):
        n = int(np.prod(shape))
        header[name] = {"dtype": a.dtype, "shape": list(shape), "data_offsets": [off, off + n * size]}
        off += n * size
        total += n
    hb = json.dumps(header).encode()
    hb += b" " * (-len(hb) % 8)
    rng = np.random.default_rng(a.seed)
    path = os.path.join(a.outdir, "model.safetensors")
    with open(path + ".tmp", "wb") as f:
        f.write(len(hb).to_bytes(8, "little") + hb)
        for name, shape in tensors(a.layers):
            b = bf16_bits(rng, shape, len(shape) == 1)
            f.write(b.tobytes() if a.dtype == "BF16" else (b.astype(np.uint32) << 16).astype("<u4").tobytes())
    os.replace(path + ".tmp", path)
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": V, "hidden_size": D,
           "intermediate_size": FF, "num_hidden_layers": a.layers, "num_attention_heads": H,
           "num_key_value_heads": KV, "hidden_act": "silu", "max_position_embeddings": a.max_pos,
           "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": False,
           "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16" if a.dtype == "BF16" else "float32"}
    with open(os.path.join(a.outdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    print(total)


if __name__ == "__main__":
    main()

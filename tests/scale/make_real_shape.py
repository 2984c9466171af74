#!/usr/bin/python3
"""A random-weight checkpoint at the exact shape of one of the paper's models, for the rehearsal
(tests/scale/rehearse.sh, docs/SCALE.md): config.json (the real one from the shared data folder
where there is one, else the documented dimensions of hf-checkpoints.md), one model.safetensors
in the dtype the model is released in, the tensor names and buffers of the released file, and the
tokenizer (or image preprocessor) files the model directory would hold.

Planted sinks (why: the analysis chain should see attention shaped like a trained model's, with
heads that put most of their mass on position 0). Two residual directions are reserved: every
token embedding gets +1 along e1, and the token at position 0 (BOS / <|endoftext|> / [CLS] /
ViT's cls_token) gets +4 along e0. In every layer, each head's query gains BETA·u·x[e1] and its key
BETA·u·x[e0], u being one head coordinate that rotary embeddings leave (almost) unrotated, so
the queries of three heads in four score position 0's key highly (the fourth is left as drawn). Qwen2.5 puts no BOS first: its position 0 is an
ordinary text token, so no sink is planted there (the costs measured are unaffected).

The file is written tensor by tensor in chunks, so memory stays near the largest chunk.
usage: make_real_shape.py MODEL OUTDIR [--layers N] [--seed S]     (MODEL: a configs/ name)
Prints the parameter count (buffers excluded) and the file's bytes."""
import argparse, json, os, shutil, struct, sys
import numpy as np

SHARED = os.environ.get("SHARED_DATA", "/work/shared/data")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOK = os.path.join(REPO, "pipelines/data/tokenizers")
BETA, SINK, MEAN = 1.0, 4.0, 1.0
# residual-branch output projections drawn 10x smaller (GPT-2's init shrinks them too), so that the
# two reserved directions still dominate the normalised residual in the last layer
OUT_SCALE = 0.002
OUT_NAMES = ("c_proj.weight", "attention.dense.weight", "dense_4h_to_h.weight", "o_proj.weight",
             "down_proj.weight", "output.dense.weight")
CHUNK = 1 << 24   # elements generated at a time


def neox_cfg(L, d, nh):
    return {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "vocab_size": 50304,
            "hidden_size": d, "num_hidden_layers": L, "num_attention_heads": nh, "intermediate_size": 4 * d,
            "hidden_act": "gelu", "rotary_pct": 0.25, "rotary_emb_base": 10000, "max_position_embeddings": 2048,
            "layer_norm_eps": 1e-5, "use_parallel_residual": True, "tie_word_embeddings": False,
            "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "float16"}


VIT_CFG = {"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": 768,
           "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
           "layer_norm_eps": 1e-12, "image_size": 224, "patch_size": 16, "num_channels": 3, "qkv_bias": True,
           "encoder_stride": 16, "id2label": {str(i): f"LABEL_{i}" for i in range(1000)}}
VIT_PRE = {"do_normalize": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
           "resample": 2, "size": 224}

# model: (config source: shared path or a dict, released dtype, tokenizer files: (source, name))
MODELS = {
    "gpt2": ("hf/gpt2/config.json", "F32", [("hf/gpt2/" + f, f) for f in
             ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json")]),
    "pythia-70m": (neox_cfg(6, 512, 8), "F16", [(TOK + "/pythia/20B_tokenizer.json", "tokenizer.json")]),
    "pythia-160m": (neox_cfg(12, 768, 12), "F16", [(TOK + "/pythia/20B_tokenizer.json", "tokenizer.json")]),
    "pythia-410m": (neox_cfg(24, 1024, 16), "F16", [(TOK + "/pythia/20B_tokenizer.json", "tokenizer.json")]),
    "pythia-1b": (neox_cfg(16, 2048, 8), "F16", [(TOK + "/pythia/20B_tokenizer.json", "tokenizer.json")]),
    "pythia-1.4b": (neox_cfg(24, 2048, 16), "F16", [(TOK + "/pythia/20B_tokenizer.json", "tokenizer.json")]),
    "qwen2.5-0.5b": ("hf/Qwen2.5-0.5B/config.json", "BF16", [("hf/Qwen2.5-0.5B/" + f, f) for f in
                     ("vocab.json", "merges.txt", "tokenizer_config.json")]),
    "llama-3.2-1b": ("hf/Llama-3.2-1B/config.UNVERIFIED.json", "BF16",
                     [("tokenizers/llama3/tokenizer.model", "tokenizer.model")]),
    "bert-base-uncased": ("hf/bert-base-uncased/config.json", "F32", [("hf/bert-base-uncased/" + f, f) for f in
                          ("vocab.txt", "tokenizer.json", "tokenizer_config.json")]),
    "vit-base-patch16-224": (VIT_CFG, "F32", []),
    "llama-3.1-8b": ("hf/Llama-3.1-8B/config.json", "BF16", [("tokenizers/llama3/tokenizer.model", "tokenizer.model")]),
}
DTYPE_CFG = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


class Spec:
    """One tensor: name, shape, how to draw it (scale, base), and a hook that plants the sinks."""
    def __init__(self, name, shape, scale=0.02, base=0.0, hook=None, dtype=None, const=None):
        self.name, self.shape, self.scale, self.base = name, tuple(shape), scale, base
        self.hook, self.dtype, self.const = hook, dtype, const


def add_rows(rows, col, val):
    """hook: add val at column col of the listed rows (a chunk starting at row r0)."""
    def h(a, r0):
        for r in rows:
            if r0 <= r < r0 + a.shape[0]:
                a[r - r0, col] += val
    return h


def add_all(col, val):
    def h(a, r0):
        a[..., col] += val
    return h


def add_cols(rows_of_out, in_col, val, transposed=False):
    """Weights [out, in] (nn.Linear): add val at (row, in_col) for each output row listed;
    transposed (GPT-2 Conv1D, [in, out]): at (in_col, row)."""
    def h(a, r0):
        for r in rows_of_out:
            if transposed:
                if r0 <= in_col < r0 + a.shape[0]:
                    a[in_col - r0, r] += val
            elif r0 <= r < r0 + a.shape[0]:
                a[r - r0, in_col] += val
    return h


def both(*hooks):
    def h(a, r0):
        for k in hooks:
            k(a, r0)
    return h


def ln(p, d, bias=True):
    out = [Spec(p + ".weight", (d,), 0.0, 1.0)]
    return out + [Spec(p + ".bias", (d,), 0.0)] if bias else out


def gpt2(c, L):
    d, V, P, nh = c["n_embd"], c["vocab_size"], c["n_positions"], c["n_head"]
    hs, bos = d // nh, c.get("bos_token_id", V - 1)
    u = [h * hs + hs - 1 for h in range(nh)]
    uq = [r for k, r in enumerate(u) if k % 4 != 3]
    t = [Spec("wte.weight", (V, d), hook=both(add_all(1, MEAN), add_rows([bos], 0, SINK))),
         Spec("wpe.weight", (P, d), 0.01)] + ln("ln_f", d)
    for l in range(L):
        p = f"h.{l}."
        qk = both(add_cols(uq, 1, BETA, True), add_cols([d + r for r in u], 0, BETA, True))
        t += ln(p + "ln_1", d) + ln(p + "ln_2", d) + [
            Spec(p + "attn.c_attn.weight", (d, 3 * d), hook=qk), Spec(p + "attn.c_attn.bias", (3 * d,), 0.0),
            Spec(p + "attn.c_proj.weight", (d, d)), Spec(p + "attn.c_proj.bias", (d,), 0.0),
            Spec(p + "mlp.c_fc.weight", (d, 4 * d)), Spec(p + "mlp.c_fc.bias", (4 * d,), 0.0),
            Spec(p + "mlp.c_proj.weight", (4 * d, d)), Spec(p + "mlp.c_proj.bias", (d,), 0.0),
            Spec(p + "attn.bias", (1, 1, P, P), dtype="F32", const="tril")]
    return t


def neox(c, L):
    d, V, nh, ff, P = c["hidden_size"], c["vocab_size"], c["num_attention_heads"], c["intermediate_size"], \
        c["max_position_embeddings"]
    hs = d // nh
    uq = [h * 3 * hs + hs - 1 for h in range(nh)]   # last coordinate: beyond the 25% rotary part
    uk = [r + hs for r in uq]
    p = "gpt_neox."
    t = [Spec(p + "embed_in.weight", (V, d), hook=both(add_all(1, MEAN), add_rows([c["bos_token_id"]], 0, SINK))),
         Spec("embed_out.weight", (V, d))] + ln(p + "final_layer_norm", d)
    for l in range(L):
        h = f"{p}layers.{l}."
        t += ln(h + "input_layernorm", d) + ln(h + "post_attention_layernorm", d) + [
            Spec(h + "attention.query_key_value.weight", (3 * d, d),
                 hook=both(add_cols([r for k, r in enumerate(uq) if k % 4 != 3], 1, BETA), add_cols(uk, 0, BETA))),
            Spec(h + "attention.query_key_value.bias", (3 * d,), 0.0),
            Spec(h + "attention.dense.weight", (d, d)), Spec(h + "attention.dense.bias", (d,), 0.0),
            Spec(h + "mlp.dense_h_to_4h.weight", (ff, d)), Spec(h + "mlp.dense_h_to_4h.bias", (ff,), 0.0),
            Spec(h + "mlp.dense_4h_to_h.weight", (d, ff)), Spec(h + "mlp.dense_4h_to_h.bias", (d,), 0.0),
            Spec(h + "attention.bias", (1, 1, P, P), dtype="BOOL", const="tril"),
            Spec(h + "attention.masked_bias", (), dtype="F32", const=-1e9)]
    return t


def llama(c, L):
    d, V, nh, ff = c["hidden_size"], c["vocab_size"], c["num_attention_heads"], c["intermediate_size"]
    nkv = c.get("num_key_value_heads", nh)
    hd = c.get("head_dim") or d // nh
    qwen = c["model_type"] == "qwen2"
    u = hd // 2 - 1   # the lowest rotary frequency: almost unrotated over the window
    hook = add_all(1, MEAN) if qwen else both(add_all(1, MEAN), add_rows([c["bos_token_id"]], 0, SINK))
    t = [Spec("model.embed_tokens.weight", (V, d), hook=hook), Spec("model.norm.weight", (d,), 0.0, 1.0)]
    if not c.get("tie_word_embeddings", False):
        t.append(Spec("lm_head.weight", (V, d)))
    for l in range(L):
        h = f"model.layers.{l}."
        t += [Spec(h + "input_layernorm.weight", (d,), 0.0, 1.0),
              Spec(h + "post_attention_layernorm.weight", (d,), 0.0, 1.0),
              Spec(h + "self_attn.q_proj.weight", (nh * hd, d), hook=add_cols([k * hd + u for k in range(nh) if k % 4 != 3], 1, BETA)),
              Spec(h + "self_attn.k_proj.weight", (nkv * hd, d), hook=add_cols([k * hd + u for k in range(nkv)], 0, BETA)),
              Spec(h + "self_attn.v_proj.weight", (nkv * hd, d)), Spec(h + "self_attn.o_proj.weight", (d, nh * hd)),
              Spec(h + "mlp.gate_proj.weight", (ff, d)), Spec(h + "mlp.up_proj.weight", (ff, d)),
              Spec(h + "mlp.down_proj.weight", (d, ff))]
        if qwen:
            t += [Spec(h + "self_attn.q_proj.bias", (nh * hd,), 0.0), Spec(h + "self_attn.k_proj.bias", (nkv * hd,), 0.0),
                  Spec(h + "self_attn.v_proj.bias", (nkv * hd,), 0.0)]
    return t


def encoder_layer(h, d, ff, self_name, ln_names, uq):
    """BERT and ViT layers: separate query/key/value with biases."""
    a = h + self_name
    t = [Spec(a + "query.weight", (d, d), hook=add_cols([r for k, r in enumerate(uq) if k % 4 != 3], 1, BETA)), Spec(a + "query.bias", (d,), 0.0),
         Spec(a + "key.weight", (d, d), hook=add_cols(uq, 0, BETA)), Spec(a + "key.bias", (d,), 0.0),
         Spec(a + "value.weight", (d, d)), Spec(a + "value.bias", (d,), 0.0),
         Spec(h + "attention.output.dense.weight", (d, d)), Spec(h + "attention.output.dense.bias", (d,), 0.0),
         Spec(h + "intermediate.dense.weight", (ff, d)), Spec(h + "intermediate.dense.bias", (ff,), 0.0),
         Spec(h + "output.dense.weight", (d, ff)), Spec(h + "output.dense.bias", (d,), 0.0)]
    for n in ln_names:
        t += ln(h + n, d)
    return t


def bert(c, L):
    d, V, nh, ff, P = c["hidden_size"], c["vocab_size"], c["num_attention_heads"], c["intermediate_size"], \
        c["max_position_embeddings"]
    hs, cls = d // nh, 101
    uq = [k * hs + hs - 1 for k in range(nh)]
    p = "bert."
    t = [Spec(p + "embeddings.word_embeddings.weight", (V, d), hook=both(add_all(1, MEAN), add_rows([cls], 0, SINK))),
         Spec(p + "embeddings.position_embeddings.weight", (P, d)),
         Spec(p + "embeddings.token_type_embeddings.weight", (c.get("type_vocab_size", 2), d)),
         Spec(p + "embeddings.position_ids", (1, P), dtype="I64", const="arange")] + ln(p + "embeddings.LayerNorm", d)
    for l in range(L):
        t += encoder_layer(f"{p}encoder.layer.{l}.", d, ff, "attention.self.",
                           ("attention.output.LayerNorm", "output.LayerNorm"), uq)
    t += [Spec(p + "pooler.dense.weight", (d, d)), Spec(p + "pooler.dense.bias", (d,), 0.0),
          Spec("cls.predictions.bias", (V,), 0.0), Spec("cls.predictions.transform.dense.weight", (d, d)),
          Spec("cls.predictions.transform.dense.bias", (d,), 0.0)] + ln("cls.predictions.transform.LayerNorm", d)
    return t


def vit(c, L):
    d, nh, ff = c["hidden_size"], c["num_attention_heads"], c["intermediate_size"]
    hs, n = d // nh, (c["image_size"] // c["patch_size"]) ** 2 + 1
    uq = [k * hs + hs - 1 for k in range(nh)]
    p = "vit."
    t = [Spec(p + "embeddings.cls_token", (1, 1, d), hook=both(add_all(0, SINK), add_all(1, MEAN))),
         Spec(p + "embeddings.position_embeddings", (1, n, d)),
         Spec(p + "embeddings.patch_embeddings.projection.weight", (d, 3, 16, 16)),
         Spec(p + "embeddings.patch_embeddings.projection.bias", (d,), 0.0, hook=lambda a, r0: a.__setitem__(1, MEAN))]
    for l in range(L):
        t += encoder_layer(f"{p}encoder.layer.{l}.", d, ff, "attention.attention.",
                           ("layernorm_before", "layernorm_after"), uq)
    t += ln(p + "layernorm", d) + [Spec("classifier.weight", (1000, d)), Spec("classifier.bias", (1000,), 0.0)]
    return t


SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8, "BOOL": 1}


def encode(a, dt):
    if dt == "F32":
        return a.astype("<f4").tobytes()
    if dt == "F16":
        return a.astype("<f2").tobytes()
    if dt == "BF16":   # truncation: random values need no rounding rule
        return (np.ascontiguousarray(a, np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
    if dt == "I64":
        return a.astype("<i8").tobytes()
    return a.astype(np.uint8).tobytes()


def chunks(s, rng):
    """(array, first row) pieces of the tensor, row-major."""
    if s.const is not None:
        if s.const == "tril":
            P = s.shape[-1]
            yield np.tril(np.ones((P, P), np.float32)), 0
        elif s.const == "arange":
            yield np.arange(s.shape[-1], dtype=np.int64), 0
        else:
            yield np.array(s.const, np.float32), 0
        return
    rows = s.shape[0] if s.shape else 1
    per = max(1, int(np.prod(s.shape[1:], dtype=np.int64)))
    step = max(1, CHUNK // per)
    for r0 in range(0, rows, step):
        shape = (min(step, rows - r0),) + s.shape[1:]
        a = rng.standard_normal(shape, dtype=np.float32) * np.float32(s.scale) + np.float32(s.base) \
            if s.scale else np.full(shape, s.base, np.float32)
        if s.hook:
            s.hook(a, r0)
        yield a, r0


def write(path, specs, dtype, seed):
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for s in specs:
        dt = s.dtype or dtype
        n = int(np.prod(s.shape, dtype=np.int64)) * SIZE[dt]
        header[s.name] = {"dtype": dt, "shape": list(s.shape), "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    rng = np.random.default_rng(seed)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for s in specs:
            for a, _ in chunks(s, rng):
                f.write(encode(a, s.dtype or dtype))
    os.replace(path + ".tmp", path)
    return 8 + len(h) + off


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("outdir")
    ap.add_argument("--layers", type=int, default=0, help="keep only the first N layers (0: all)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    src, dtype, toks = MODELS[a.model]
    c = dict(src) if isinstance(src, dict) else json.load(open(os.path.join(SHARED, src)))
    layers_key = "n_layer" if c["model_type"] == "gpt2" else "num_hidden_layers"
    full = c[layers_key]
    if a.layers:
        c[layers_key] = min(a.layers, full)
    c["torch_dtype"] = DTYPE_CFG[dtype]
    fam = {"gpt2": gpt2, "gpt_neox": neox, "llama": llama, "qwen2": llama, "bert": bert, "vit": vit}[c["model_type"]]
    specs = fam(c, c[layers_key])
    for s in specs:
        if s.name.endswith(OUT_NAMES):
            s.scale = OUT_SCALE
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    for s, name in toks:
        shutil.copyfile(s if s.startswith("/") else os.path.join(SHARED, s), os.path.join(a.outdir, name))
    if c["model_type"] == "vit":
        with open(os.path.join(a.outdir, "preprocessor_config.json"), "w") as f:
            json.dump(VIT_PRE, f, indent=2)
    nbytes = write(os.path.join(a.outdir, "model.safetensors"), specs, dtype, a.seed)
    params = sum(int(np.prod(s.shape, dtype=np.int64)) for s in specs if s.const is None and s.dtype is None)
    print(params, nbytes, full, c[layers_key], dtype)


if __name__ == "__main__":
    sys.exit(main())

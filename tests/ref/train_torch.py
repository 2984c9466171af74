#!/usr/bin/python3
"""Independent PyTorch reference for `train` (torch 1.13, no transformers package needed).

  check DIR VALID_TEXT N_WINDOWS   Load a model directory written by train (config.json +
                                   model.safetensors, read with numpy), run the Hugging Face
                                   GPT-2 / Llama forward written here from the HF definitions, and
                                   print val_loss and per-head sink mass on the same validation
                                   windows train uses (TSV: quantity layer head value).
  ids VALID_TEXT N T OUT [bert]     Write those validation windows as token-id lines (extract --ids);
                                   bert: [CLS] + T-2 bytes + [SEP], unmasked.
  check-stream DIR STREAM N        bpe_merges models: the same as check on the validation text's
                                   token ids STREAM (whitespace-separated, e.g. from npm
                                   tokenizers): windows BOS + T-1 tokens at evenly spaced token
                                   offsets; val_loss per token, and val_nats_per_byte = total nats /
                                   bytes of the target tokens (their tokenizer.json spellings
                                   mapped back through GPT-2's byte-to-unicode table, built here).
  ids-stream STREAM N T OUT        Those windows as token-id lines (extract --ids).
  attn DIR IDS H5                  Recompute the attention of the model in DIR on the id lines IDS
                                   and print the largest |difference| of the probabilities from
                                   the attention file H5 (extract's log-probabilities).

Position encodings (config.json attncoda_position_encoding, absent = the family's own: learned
for gpt2, rope for llama) are written here from their papers, not from train's code: the
sinusoidal table of Vaswani et al. 2017 §3.5 (recomputed, the stored table only compared with
it), RoPE with the NTK-aware base recomputed as base * s^(d/(d-2)) (bloc97 2023 / YaRN §3.1),
ALiBi slopes as BLOOM's build_alibi_tensor builds them, added as slope * key position (the
row-constant shift of the paper's -slope * (i - j)).

family = bert (BertForMaskedLM, HF modeling_bert.py): check regenerates train's masked validation
windows with its own MT19937 (GSL's mt19937: init_genrand seeding, 0 -> 4357; gsl_rng_uniform =
word / 2^32; gsl_rng_uniform_int by division with rejection) and BERT's 15 % / 80-10-10 rule, and
scores the masked positions only.
  bench CONF STEPS THREADS [V]     Train the recipe's model with torch autograd + AdamW on the
                                   same batch shape and print tokens/s (V: vocabulary, 257).
"""
import json, math, struct, sys, time
import numpy as np
import torch
import torch.nn.functional as F

BOS = 256
PAD, CLS, SEP, MASK = 256, 257, 258, 259


class MT19937:
    """GSL's gsl_rng_mt19937, written from the Matsumoto-Nishimura reference (genrand_int32)."""

    def __init__(self, seed):
        seed = seed or 4357
        self.mt = [seed & 0xffffffff]
        for i in range(1, 624):
            self.mt.append((1812433253 * (self.mt[-1] ^ (self.mt[-1] >> 30)) + i) & 0xffffffff)
        self.i = 624

    def word(self):
        if self.i >= 624:
            mt = self.mt
            for k in range(624):
                y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7fffffff)
                mt[k] = mt[(k + 397) % 624] ^ (y >> 1) ^ (0x9908b0df if y & 1 else 0)
            self.i = 0
        y = self.mt[self.i]
        self.i += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9d2c5680
        y ^= (y << 15) & 0xefc60000
        return y ^ (y >> 18)

    def uniform(self):
        return self.word() / 4294967296.0

    def uniform_int(self, n):
        scale = 0xffffffff // n
        while True:
            k = self.word() // scale
            if k < n:
                return k


def bert_windows(text, n, T, seed):
    """train's masked validation windows: [CLS] bytes [SEP]; 15 % of the bytes selected, of those
    80 % -> [MASK], 10 % a random byte, 10 % unchanged; targets -100 where not selected."""
    rng = MT19937(seed)
    ids, tg = [], []
    for w in range(n):
        s = int(float(w) * float(len(text) - T) / float(n))
        row, tgt = [CLS] + list(text[s:s + T - 2]) + [SEP], [-100] * T
        for t in range(1, T - 1):
            if rng.uniform() >= 0.15:
                continue
            tgt[t] = row[t]
            u = rng.uniform()
            if u < 0.8:
                row[t] = MASK
            elif u < 0.9:
                row[t] = rng.uniform_int(256)
        ids.append(row)
        tg.append(tgt)
    return torch.tensor(ids), torch.tensor(tg)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        buf = f.read()
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        assert v["dtype"] == "F32", k
        a, b = v["data_offsets"]
        out[k] = torch.from_numpy(np.frombuffer(buf[a:b], dtype="<f4").reshape(v["shape"]).copy())
    return out


def windows(text, n, T):
    """Evenly spaced validation windows, exactly as train's evaluate(): BOS + T-1 bytes (or tokens
    of a token stream), targets."""
    ids, tg = [], []
    for w in range(n):
        s = int(float(w) * float(len(text) - T) / float(n))
        ids.append([BOS] + list(text[s:s + T - 1]))
        tg.append(list(text[s:s + T]))
    return torch.tensor(ids), torch.tensor(tg)


def layer_norm(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def pos_kind(cfg):
    return cfg.get("attncoda_position_encoding", "rope" if cfg["model_type"] == "llama" else "learned")


def sinusoid_table(T, d):
    pe = np.zeros((T, d))
    for t in range(T):
        for i in range(0, d, 2):
            a = t / 10000.0 ** (i / d)
            pe[t, i] = math.sin(a)
            if i + 1 < d:
                pe[t, i + 1] = math.cos(a)
    return torch.from_numpy(pe.astype(np.float32))


def alibi_slopes(H):
    """BLOOM's build_alibi_tensor slopes (Press et al. 2022 for non-powers of two)."""
    n = 2 ** math.floor(math.log2(H))
    base = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
    out = [base ** p for p in range(1, n + 1)]
    if n != H:
        extra = 2.0 ** (-(2.0 ** -(math.log2(2 * n) - 3)))
        out += [extra ** p for p in range(1, 2 * min(n, H - n), 2)]
    return torch.tensor(out, dtype=torch.float32)


def rope_theta(cfg, hd):
    """The base in use; for rope-ntk recomputed from the base and the factor and checked."""
    theta = cfg.get("rope_theta", 10000.0)
    if pos_kind(cfg) == "rope-ntk":
        want = cfg["attncoda_rope_base_theta"] * cfg["attncoda_rope_ntk_factor"] ** (hd / (hd - 2))
        assert abs(theta - want) <= 1e-9 * want, ("rope_theta is not the NTK-aware base", theta, want)
    return theta


def position_add(W, cfg, name, T, d):
    """What is added to the token embeddings: a learned table, the sinusoidal one, or nothing."""
    kind = pos_kind(cfg)
    if kind == "learned":
        return W[name][:T]
    if kind == "sinusoidal":
        pe = sinusoid_table(T, d)
        assert (W[name][:T] - pe).abs().max().item() < 1e-6, "stored sinusoidal table differs"
        return pe
    return 0


def alibi_bias(cfg, H, T):
    if pos_kind(cfg) != "alibi":
        return None
    return alibi_slopes(H)[:, None, None] * torch.arange(T, dtype=torch.float32)[None, None, :]


def attend(q, k, v, bias=None):
    """q [B,H,T,hd], k/v [B,H,T,hd] -> output [B,T,H*hd], probabilities [B,H,T,T]."""
    B, H, T, hd = q.shape
    s = q @ k.transpose(-1, -2) / math.sqrt(hd)
    if bias is not None:
        s = s + bias
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
    p = torch.softmax(s, -1)
    return (p @ v).transpose(1, 2).reshape(B, T, H * hd), p


def gpt2_forward(W, cfg, ids):
    d, H, L, eps = cfg["n_embd"], cfg["n_head"], cfg["n_layer"], cfg["layer_norm_epsilon"]
    B, T = ids.shape
    x = W["wte.weight"][ids] + position_add(W, cfg, "wpe.weight", T, d)
    rot = pos_kind(cfg) in ("rope", "rope-ntk")
    theta = rope_theta(cfg, d // H) if rot else None
    bias = alibi_bias(cfg, H, T)
    probs = []
    for l in range(L):
        p = lambda n: W["h.%d.%s" % (l, n)]
        a = layer_norm(x, p("ln_1.weight"), p("ln_1.bias"), eps)
        qkv = a @ p("attn.c_attn.weight") + p("attn.c_attn.bias")          # Conv1D [in,out]
        q, k, v = (t.reshape(B, T, H, d // H).transpose(1, 2) for t in qkv.split(d, -1))
        if rot:
            q, k = rope(q, theta), rope(k, theta)
        o, pr = attend(q, k, v, bias)
        probs.append(pr)
        x = x + o @ p("attn.c_proj.weight") + p("attn.c_proj.bias")
        m = layer_norm(x, p("ln_2.weight"), p("ln_2.bias"), eps)
        x = x + gelu_new(m @ p("mlp.c_fc.weight") + p("mlp.c_fc.bias")) @ p("mlp.c_proj.weight") + p("mlp.c_proj.bias")
    h = layer_norm(x, W["ln_f.weight"], W["ln_f.bias"], eps)
    return h @ W["wte.weight"].T, probs


def rope(x, theta):
    """HF half-split rotary embedding on [B,H,T,hd], float32 inv_freq and angles."""
    hd, T = x.shape[-1], x.shape[-2]
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
    emb = torch.cat([ang, ang], -1)
    cos, sin = emb.cos(), emb.sin()
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def llama_forward(W, cfg, ids):
    H, KV, L, eps = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["num_hidden_layers"], cfg["rms_norm_eps"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    B, T = ids.shape
    x = W["model.embed_tokens.weight"][ids] + position_add(W, cfg, "model.embed_positions.weight", T, cfg["hidden_size"])
    rot = pos_kind(cfg) in ("rope", "rope-ntk")
    theta = rope_theta(cfg, hd) if rot else None
    bias = alibi_bias(cfg, H, T)
    probs = []
    for l in range(L):
        p = lambda n: W["model.layers.%d.%s" % (l, n)]
        a = rms_norm(x, p("input_layernorm.weight"), eps)
        q = (a @ p("self_attn.q_proj.weight").T).reshape(B, T, H, hd).transpose(1, 2)
        k = (a @ p("self_attn.k_proj.weight").T).reshape(B, T, KV, hd).transpose(1, 2)
        v = (a @ p("self_attn.v_proj.weight").T).reshape(B, T, KV, hd).transpose(1, 2)
        if rot:
            q, k = rope(q, theta), rope(k, theta)
        k, v = k.repeat_interleave(H // KV, 1), v.repeat_interleave(H // KV, 1)
        o, pr = attend(q, k, v, bias)
        probs.append(pr)
        x = x + o @ p("self_attn.o_proj.weight").T
        m = rms_norm(x, p("post_attention_layernorm.weight"), eps)
        x = x + (F.silu(m @ p("mlp.gate_proj.weight").T) * (m @ p("mlp.up_proj.weight").T)) @ p("mlp.down_proj.weight").T
    h = rms_norm(x, W["model.norm.weight"], eps)
    return h @ W["lm_head.weight"].T, probs


def bert_forward(W, cfg, ids):
    """BertForMaskedLM: embeddings (word + position + token type 0, LayerNorm), post-LN layers
    with exact GELU, bidirectional attention (no padding here), the transform + tied decoder head."""
    d, H, L, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"], cfg["layer_norm_eps"]
    B, T = ids.shape
    e = lambda n: W["bert.embeddings." + n]
    x = e("word_embeddings.weight")[ids] + position_add(W, cfg, "bert.embeddings.position_embeddings.weight", T, d)
    x = x + e("token_type_embeddings.weight")[0]
    x = layer_norm(x, e("LayerNorm.weight"), e("LayerNorm.bias"), eps)
    probs = []
    for l in range(L):
        p = lambda n: W["bert.encoder.layer.%d.%s" % (l, n)]
        lin = lambda t, n: t @ p(n + ".weight").T + p(n + ".bias")
        q, k, v = (lin(x, "attention.self." + n).reshape(B, T, H, d // H).transpose(1, 2) for n in ("query", "key", "value"))
        s = q @ k.transpose(-1, -2) / math.sqrt(d // H)
        pr = torch.softmax(s, -1)
        probs.append(pr)
        o = (pr @ v).transpose(1, 2).reshape(B, T, d)
        x = layer_norm(lin(o, "attention.output.dense") + x, p("attention.output.LayerNorm.weight"),
                       p("attention.output.LayerNorm.bias"), eps)
        h = F.gelu(lin(x, "intermediate.dense"))
        x = layer_norm(lin(h, "output.dense") + x, p("output.LayerNorm.weight"), p("output.LayerNorm.bias"), eps)
    c = lambda n: W["cls.predictions." + n]
    h = F.gelu(x @ c("transform.dense.weight").T + c("transform.dense.bias"))
    h = layer_norm(h, c("transform.LayerNorm.weight"), c("transform.LayerNorm.bias"), eps)
    return h @ W["bert.embeddings.word_embeddings.weight"].T + c("bias"), probs


def check_bert(d, cfg, W, valid, n):
    T = cfg["max_position_embeddings"]
    seed = json.loads(cfg["attncoda_provenance"])["options"]["seed"]
    ids, tg = bert_windows(open(valid, "rb").read(), n, T, seed)
    with torch.no_grad():
        logits, probs = bert_forward(W, cfg, ids)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(), tg.reshape(-1), ignore_index=-100).item()
    print("val_loss\t-\t-\t%.6f" % loss)
    sel = (tg[:, 1:-1] >= 0).double().mean().item()
    print("selected_share\t-\t-\t%.6f" % sel)
    for l, p in enumerate(probs):
        for h in range(p.shape[1]):
            print("sink_mass\t%d\t%d\t%.6f" % (l, h, p[:, h, 1:, 0].double().mean().item()))


def write_ids(valid, n, T, path, bert=False):
    if bert:
        text = open(valid, "rb").read()
        rows = []
        for w in range(n):
            s = int(float(w) * float(len(text) - T) / float(n))
            rows.append([CLS] + list(text[s:s + T - 2]) + [SEP])
        ids = torch.tensor(rows)
    else:
        ids, _ = windows(open(valid, "rb").read(), n, T)
    with open(path, "w") as f:
        for row in ids.tolist():
            f.write(" ".join(map(str, row)) + "\n")


def read_stream(path):
    return [int(x) for x in open(path).read().split()]


def token_bytes(d):
    """Bytes per id from tokenizer.json's vocab: each symbol is one byte (GPT-2 bytes_to_unicode:
    printable Latin-1 as itself, the other 68 bytes in order from U+0100)."""
    keep = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    symbols = {chr(b) for b in keep} | {chr(0x100 + k) for k in range(256 - len(keep))}
    vocab = json.load(open(d + "/tokenizer.json", encoding="utf-8"))["model"]["vocab"]
    out = {}
    for tok, i in vocab.items():
        assert all(c in symbols for c in tok), tok
        out[i] = len(tok)
    return out


def check_stream(d, stream, n):
    check(d, None, n, read_stream(stream), token_bytes(d))


def check(d, valid, n, seq=None, nbytes=None):
    cfg = json.load(open(d + "/config.json"))
    W = read_safetensors(d + "/model.safetensors")
    if cfg["model_type"] == "bert":
        return check_bert(d, cfg, W, valid, n)
    T = cfg.get("n_positions") or cfg["max_position_embeddings"]
    ids, tg = windows(open(valid, "rb").read() if seq is None else seq, n, T)
    fwd = gpt2_forward if cfg["model_type"] == "gpt2" else llama_forward
    with torch.no_grad():
        logits, probs = fwd(W, cfg, ids)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(), tg.reshape(-1)).item()
    print("val_loss\t-\t-\t%.6f" % loss)
    if nbytes is not None:
        covered = sum(nbytes[t] for t in tg.reshape(-1).tolist())
        print("val_nats_per_byte\t-\t-\t%.6f" % (loss * tg.numel() / covered))
    # the same without each window's last position (what a tool scoring only ids[1:] sees)
    short = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).double(), tg[:, :-1].reshape(-1)).item()
    print("val_loss_tm1\t-\t-\t%.6f" % short)
    for l, p in enumerate(probs):
        for h in range(p.shape[1]):
            print("sink_mass\t%d\t%d\t%.6f" % (l, h, p[:, h, 1:, 0].double().mean().item()))


def attn(d, ids_path, h5):
    import h5py
    cfg = json.load(open(d + "/config.json"))
    W = read_safetensors(d + "/model.safetensors")
    ids = torch.tensor([[int(x) for x in l.split()] for l in open(ids_path) if l.strip() and not l.startswith("#")])
    fwd = {"gpt2": gpt2_forward, "llama": llama_forward, "bert": bert_forward}[cfg["model_type"]]
    with torch.no_grad():
        _, probs = fwd(W, cfg, ids)
    ref = torch.stack(probs, 1).double().numpy()                      # [S,L,H,T,T]
    got = np.exp(h5py.File(h5, "r")["attention"][...].astype(np.float64))
    assert got.shape == ref.shape, (got.shape, ref.shape)
    print("%.3e" % np.abs(got - ref).max())


def recipe(path):
    r = {}
    for line in open(path):
        line = line.split("#")[0].strip()
        if line:
            k, v = (s.strip() for s in line.split("=", 1))
            r[k] = v
    return r


def bench(conf, steps, threads, V=257):
    """V: the vocabulary bin/train ended with (a bpe_merges recipe learns it from the text)."""
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    r = recipe(conf)
    L, d, H, ff = int(r["layers"]), int(r["d_model"]), int(r["heads"]), int(r["d_ff"])
    KV, B, T = int(r.get("kv_heads", H)), int(r.get("batch", 16)), int(r.get("context", 128))
    hd = d // H
    g = lambda *s: torch.nn.Parameter(torch.randn(*s) * 0.02)
    if r["family"] == "gpt2":
        W = {"wte.weight": g(V, d), "wpe.weight": g(T, d), "ln_f.weight": torch.nn.Parameter(torch.ones(d)),
             "ln_f.bias": torch.nn.Parameter(torch.zeros(d))}
        for l in range(L):
            for n, s in [("ln_1.weight", (d,)), ("ln_2.weight", (d,))]:
                W["h.%d.%s" % (l, n)] = torch.nn.Parameter(torch.ones(*s))
            for n, s in [("ln_1.bias", (d,)), ("ln_2.bias", (d,)), ("attn.c_attn.bias", (3 * d,)),
                         ("attn.c_proj.bias", (d,)), ("mlp.c_fc.bias", (ff,)), ("mlp.c_proj.bias", (d,))]:
                W["h.%d.%s" % (l, n)] = torch.nn.Parameter(torch.zeros(*s))
            for n, s in [("attn.c_attn.weight", (d, 3 * d)), ("attn.c_proj.weight", (d, d)),
                         ("mlp.c_fc.weight", (d, ff)), ("mlp.c_proj.weight", (ff, d))]:
                W["h.%d.%s" % (l, n)] = g(*s)
        cfg = {"model_type": "gpt2", "n_embd": d, "n_head": H, "n_layer": L, "layer_norm_epsilon": 1e-5}
        fwd = gpt2_forward
    else:
        W = {"model.embed_tokens.weight": g(V, d), "model.norm.weight": torch.nn.Parameter(torch.ones(d)),
             "lm_head.weight": g(V, d)}
        for l in range(L):
            pre = "model.layers.%d." % l
            W[pre + "input_layernorm.weight"] = torch.nn.Parameter(torch.ones(d))
            W[pre + "post_attention_layernorm.weight"] = torch.nn.Parameter(torch.ones(d))
            for n, s in [("self_attn.q_proj.weight", (H * hd, d)), ("self_attn.k_proj.weight", (KV * hd, d)),
                         ("self_attn.v_proj.weight", (KV * hd, d)), ("self_attn.o_proj.weight", (d, H * hd)),
                         ("mlp.gate_proj.weight", (ff, d)), ("mlp.up_proj.weight", (ff, d)),
                         ("mlp.down_proj.weight", (d, ff))]:
                W[pre + n] = g(*s)
        cfg = {"model_type": "llama", "num_attention_heads": H, "num_key_value_heads": KV, "num_hidden_layers": L, "rms_norm_eps": 1e-5,
               "hidden_size": d, "rope_theta": 10000.0}
        fwd = llama_forward
    opt = torch.optim.AdamW(W.values(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    ids = torch.randint(0, V, (B, T))
    tg = torch.randint(0, V, (B, T))
    for i in range(steps + 2):
        if i == 2:
            t0 = time.time()   # two warm-up steps
        logits, _ = fwd(W, cfg, ids)
        loss = F.cross_entropy(logits.reshape(-1, V), tg.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(W.values(), 1.0)
        opt.step()
    dt = time.time() - t0
    print("%.0f" % (steps * B * T / dt))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) in (6, 7) and sys.argv[1] == "ids":
        write_ids(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6:] == ["bert"])
    elif len(sys.argv) == 5 and sys.argv[1] == "check-stream":
        check_stream(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) == 6 and sys.argv[1] == "ids-stream":
        ids, _ = windows(read_stream(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        with open(sys.argv[5], "w") as f:
            f.writelines(" ".join(map(str, row)) + "\n" for row in ids.tolist())
    elif len(sys.argv) == 5 and sys.argv[1] == "attn":
        attn(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) in (5, 6) and sys.argv[1] == "bench":
        bench(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), *map(int, sys.argv[5:]))
    else:
        sys.exit(__doc__)

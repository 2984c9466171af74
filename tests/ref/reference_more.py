#!/usr/bin/python3
"""Independent PyTorch forward passes of the newer families, written from
shared/spec/hf-checkpoints-more.md and the transformers modeling files it cites (PhiForCausalLM,
MistralForCausalLM, GemmaForCausalLM, Gemma2ForCausalLM, Qwen3ForCausalLM, OPTForCausalLM,
RobertaModel), in float32 with eager attention. Each config default is the config class's own.
The masks are built the way HF builds them (additive finfo.min, sliding window as
tril(diagonal=-W) masked), not from extract's rule.

  reference_more.py MODEL_DIR IDS --attn ATT.h5 [--logits LOGITS.h5] --tag NAME
      attention probabilities within 1e-5 absolute, logits within 1e-4 relative; one TAP line each
"""
import argparse
import math
import sys

import numpy as np
import torch

from reference_forward import load, read_ids

F = torch.nn.functional
NEG = torch.finfo(torch.float32).min


def rms(x, w, eps, gemma=False):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y * (1.0 + w) if gemma else w * y


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


ACT = {"gelu": F.gelu, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "silu": F.silu, "relu": F.relu}


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope(x, theta, rd):
    """x [n, T, hd]: rotate the first rd dims half-split, positions 0..T-1, float32 angles."""
    T = x.shape[1]
    inv = 1.0 / (theta ** (torch.arange(0, rd, 2, dtype=torch.int64).float() / rd))
    fr = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
    emb = torch.cat((fr, fr), dim=-1)
    r, rest = x[..., :rd], x[..., rd:]
    return torch.cat((r * emb.cos() + rotate_half(r) * emb.sin(), rest), dim=-1)


def causal(T, window=None):
    m = torch.triu(torch.full((T, T), NEG), diagonal=1)
    if window:   # Gemma2 4.42+: keys at or before i - W masked (i - W < j <= i visible)
        far = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-window)
        m = torch.where(far, NEG, m)
    return m


def attn(q, k, v, mask, scale, cap=None):
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if cap:
        s = torch.tanh(s / cap) * cap
    p = torch.softmax(s + mask, dim=-1)
    return torch.matmul(p, v).transpose(0, 1).reshape(q.shape[1], -1), p


def heads(x, n, hd):
    return x.view(x.shape[0], n, hd).transpose(0, 1)


def fwd_phi(c, w, ids):
    d, nh, L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
    nkv, hd = c.get("num_key_value_heads") or nh, d // nh
    eps, T = c.get("layer_norm_eps", 1e-5), len(ids)
    rd = int(hd * c.get("partial_rotary_factor", 0.5))
    x, atts = w["model.embed_tokens.weight"][ids], []
    for l in range(L):
        p = f"model.layers.{l}."
        h = F.layer_norm(x, (d,), w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"], eps)
        q = F.linear(h, w[p + "self_attn.q_proj.weight"], w[p + "self_attn.q_proj.bias"]).view(T, nh, hd)
        k = F.linear(h, w[p + "self_attn.k_proj.weight"], w[p + "self_attn.k_proj.bias"]).view(T, nkv, hd)
        v = F.linear(h, w[p + "self_attn.v_proj.weight"], w[p + "self_attn.v_proj.bias"]).view(T, nkv, hd)
        if c.get("qk_layernorm"):
            q = F.layer_norm(q, (hd,), w[p + "self_attn.q_layernorm.weight"], w[p + "self_attn.q_layernorm.bias"], eps)
            k = F.layer_norm(k, (hd,), w[p + "self_attn.k_layernorm.weight"], w[p + "self_attn.k_layernorm.bias"], eps)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        th = c.get("rope_theta", 10000.0)
        q, k = rope(q, th, rd), rope(k, th, rd)
        k, v = k.repeat_interleave(nh // nkv, 0), v.repeat_interleave(nh // nkv, 0)
        ctx, pr = attn(q, k, v, causal(T), hd ** -0.5)
        atts.append(pr)
        a = F.linear(ctx, w[p + "self_attn.dense.weight"], w[p + "self_attn.dense.bias"])
        m = F.linear(ACT[c.get("hidden_act", "gelu_new")](F.linear(h, w[p + "mlp.fc1.weight"], w[p + "mlp.fc1.bias"])),
                     w[p + "mlp.fc2.weight"], w[p + "mlp.fc2.bias"])
        x = x + a + m
    x = F.layer_norm(x, (d,), w["model.final_layernorm.weight"], w["model.final_layernorm.bias"], eps)
    head = w["model.embed_tokens.weight"] if c.get("tie_word_embeddings", False) else w["lm_head.weight"]
    return atts, F.linear(x, head, w["lm_head.bias"])


def fwd_gated(c, w, ids):
    """Mistral, Gemma, Gemma2, Qwen3."""
    mt = c["model_type"]
    gem, g2 = mt.startswith("gemma"), mt == "gemma2"
    d, nh, L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
    nkv = c.get("num_key_value_heads") or (16 if mt == "gemma" else 4 if g2 else nh if mt == "qwen3" else 8)
    hd = c.get("head_dim") or (256 if gem else 128 if mt == "qwen3" else d // nh)
    eps, T = c.get("rms_norm_eps", 1e-6), len(ids)
    theta = c.get("rope_theta", 10000.0)
    scale = c.get("query_pre_attn_scalar", 256) ** -0.5 if g2 else hd ** -0.5
    cap = c.get("attn_logit_softcapping", 50.0) if g2 else None
    act = ACT[c.get("hidden_activation") or "gelu_pytorch_tanh"] if gem else ACT[c.get("hidden_act", "silu")]
    # which layers slide
    win = [None] * L
    if mt == "mistral":
        W = c.get("sliding_window", 4096)
        win = [W] * L
    elif g2:
        W = c.get("sliding_window", 4096)
        win = [W if not (l % 2) else None for l in range(L)]
    elif mt == "qwen3" and c.get("use_sliding_window", False):
        W = c.get("sliding_window", 4096)
        win = [W if l >= c.get("max_window_layers", 28) else None for l in range(L)]
    if c.get("layer_types"):
        win = [W if t == "sliding_attention" else None for t in c["layer_types"]]
    norm = (lambda x, wt: rms(x, wt, eps, gemma=True)) if gem else (lambda x, wt: rms(x, wt, eps))
    E = w["model.embed_tokens.weight"]
    x = E[ids]
    if gem:
        x = x * torch.tensor(d ** 0.5, dtype=torch.float32)
    atts = []
    for l in range(L):
        p = f"model.layers.{l}."
        h = norm(x, w[p + "input_layernorm.weight"])
        q = F.linear(h, w[p + "self_attn.q_proj.weight"], w.get(p + "self_attn.q_proj.bias"))
        k = F.linear(h, w[p + "self_attn.k_proj.weight"], w.get(p + "self_attn.k_proj.bias"))
        v = F.linear(h, w[p + "self_attn.v_proj.weight"], w.get(p + "self_attn.v_proj.bias"))
        q, k, v = q.view(T, nh, hd), k.view(T, nkv, hd), v.view(T, nkv, hd)
        if mt == "qwen3":
            q, k = rms(q, w[p + "self_attn.q_norm.weight"], eps), rms(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        q, k = rope(q, theta, hd), rope(k, theta, hd)
        k, v = k.repeat_interleave(nh // nkv, 0), v.repeat_interleave(nh // nkv, 0)
        ctx, pr = attn(q, k, v, causal(T, win[l]), scale, cap)
        atts.append(pr)
        o = F.linear(ctx, w[p + "self_attn.o_proj.weight"], w.get(p + "self_attn.o_proj.bias"))
        if g2:
            x = x + norm(o, w[p + "post_attention_layernorm.weight"])
            m = norm(x, w[p + "pre_feedforward_layernorm.weight"])
        else:
            x = x + o
            m = norm(x, w[p + "post_attention_layernorm.weight"])
        f = F.linear(act(F.linear(m, w[p + "mlp.gate_proj.weight"])) * F.linear(m, w[p + "mlp.up_proj.weight"]),
                     w[p + "mlp.down_proj.weight"])
        x = x + (norm(f, w[p + "post_feedforward_layernorm.weight"]) if g2 else f)
    x = norm(x, w["model.norm.weight"])
    tied = c.get("tie_word_embeddings", gem)
    logits = F.linear(x, E if tied else w["lm_head.weight"])
    fcap = c.get("final_logit_softcapping", 30.0) if g2 else None
    if fcap:
        logits = torch.tanh(logits / fcap) * fcap
    return atts, logits


def fwd_opt(c, w, ids):
    d, nh, L = c.get("hidden_size", 768), c.get("num_attention_heads", 12), c.get("num_hidden_layers", 12)
    hd, T = d // nh, len(ids)
    pre = c.get("do_layer_norm_before", True)
    act = ACT[c.get("activation_function", "relu")]
    p = "model.decoder."
    ln = lambda x, n: F.layer_norm(x, (d,), w[n + ".weight"], w[n + ".bias"], 1e-5)
    x = w[p + "embed_tokens.weight"][ids]
    if p + "project_in.weight" in w:
        x = F.linear(x, w[p + "project_in.weight"])
    mask = torch.ones(T, dtype=torch.long)
    pos = torch.cumsum(mask, 0) * mask - 1
    x = x + w[p + "embed_positions.weight"][pos + 2]
    atts = []
    for l in range(L):
        q_ = f"{p}layers.{l}."
        r = x
        h = ln(x, q_ + "self_attn_layer_norm") if pre else x
        lin = lambda n, t: F.linear(t, w[q_ + f"self_attn.{n}.weight"], w[q_ + f"self_attn.{n}.bias"])
        q = heads(lin("q_proj", h) * hd ** -0.5, nh, hd)
        k, v = heads(lin("k_proj", h), nh, hd), heads(lin("v_proj", h), nh, hd)
        ctx, pr = attn(q, k, v, causal(T), 1.0)
        atts.append(pr)
        x = r + lin("out_proj", ctx)
        if not pre:
            x = ln(x, q_ + "self_attn_layer_norm")
        r = x
        h = ln(x, q_ + "final_layer_norm") if pre else x
        x = r + F.linear(act(F.linear(h, w[q_ + "fc1.weight"], w[q_ + "fc1.bias"])), w[q_ + "fc2.weight"],
                         w[q_ + "fc2.bias"])
        if not pre:
            x = ln(x, q_ + "final_layer_norm")
    if pre and not c.get("_remove_final_layer_norm", False):
        x = ln(x, p + "final_layer_norm")
    if p + "project_out.weight" in w:
        x = F.linear(x, w[p + "project_out.weight"])
    return atts, F.linear(x, w[p + "embed_tokens.weight"])


def fwd_roberta(c, w, ids, valid):
    d, nh, L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
    hd, pad, eps, T = d // nh, c.get("pad_token_id", 1), c.get("layer_norm_eps", 1e-12), len(ids)
    p = "roberta."
    m = ids.ne(pad).int()   # create_position_ids_from_input_ids
    pos = (torch.cumsum(m, 0).type_as(m) * m).long() + pad
    e = w[p + "embeddings.word_embeddings.weight"][ids] + w[p + "embeddings.token_type_embeddings.weight"][0]
    e = e + w[p + "embeddings.position_embeddings.weight"][pos]
    x = F.layer_norm(e, (d,), w[p + "embeddings.LayerNorm.weight"], w[p + "embeddings.LayerNorm.bias"], eps)
    mask = torch.where(torch.tensor(valid, dtype=torch.bool), 0.0, NEG)[None, :]
    atts = []
    for l in range(L):
        h = f"{p}encoder.layer.{l}."
        lin = lambda n, t: F.linear(t, w[h + n + ".weight"], w[h + n + ".bias"])
        q, k, v = (heads(lin(f"attention.self.{n}", x), nh, hd) for n in ("query", "key", "value"))
        ctx, pr = attn(q, k, v, mask, hd ** -0.5)
        atts.append(pr)
        x = F.layer_norm(lin("attention.output.dense", ctx) + x, (d,), w[h + "attention.output.LayerNorm.weight"],
                         w[h + "attention.output.LayerNorm.bias"], eps)
        f = lin("output.dense", ACT[c.get("hidden_act", "gelu")](lin("intermediate.dense", x)))
        x = F.layer_norm(f + x, (d,), w[h + "output.LayerNorm.weight"], w[h + "output.LayerNorm.bias"], eps)
    return atts, None


def forward(c, w, ids, valid):
    ids = torch.tensor(ids, dtype=torch.long)
    with torch.no_grad():
        mt = c["model_type"]
        if mt == "phi":
            return fwd_phi(c, w, ids)
        if mt == "opt":
            return fwd_opt(c, w, ids)
        if mt in ("roberta", "xlm-roberta"):
            return fwd_roberta(c, w, ids, valid)
        return fwd_gated(c, w, ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("ids")
    ap.add_argument("--attn", required=True)
    ap.add_argument("--logits")
    ap.add_argument("--tag", default="reference")
    a = ap.parse_args()
    import h5py
    cfg, w = load(a.model)
    pad = cfg.get("pad_token_id")
    seqs, valid = read_ids(a.ids, 1 if pad is None else pad)
    f = h5py.File(a.attn, "r")
    lg = h5py.File(a.logits, "r")["logits"] if a.logits else None
    worst_p, worst_l, ok_tokens = 0.0, 0.0, True
    for s, ids in enumerate(seqs):
        ok_tokens &= bool(np.array_equal(f["tokens"][s], ids))
        atts, logits = forward(cfg, w, ids, valid[s])
        mine = np.exp(f["attention"][s].astype(np.float64))
        ref = np.stack([p.numpy() for p in atts])
        worst_p = max(worst_p, float(np.abs(mine - ref).max()))
        if lg is not None:
            r = logits.numpy()
            worst_l = max(worst_l, float(np.abs(lg[s] - r).max() / np.abs(r).max()))
    print(("ok" if ok_tokens else "not ok") + f" - {a.tag}: token ids stored")
    print(("ok" if worst_p <= 1e-5 else "not ok") + f" - {a.tag}: attention within 1e-5 (max {worst_p:.2e})")
    if lg is not None:
        print(("ok" if worst_l <= 1e-4 else "not ok") + f" - {a.tag}: logits within 1e-4 relative (max {worst_l:.2e})")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Tiny random checkpoints of the newer families (shared/spec/hf-checkpoints-more.md §3–§9), with
the exact Hugging Face tensor names: phi, mistral, gemma, gemma2, qwen3, opt, roberta, xlm-roberta.
The config is built first (a tiny one, or a released config.json shrunk to a few layers and a
small width with every other key kept), then the tensors follow from the config alone.

usage: make_tiny_more.py FAMILY OUTDIR [--from-config FILE] [--dtype F32|F16|BF16] [--shards N]
           [--tied|--untied] [--window W|--window-null] [--softcap A,F]
           [--post-ln] [--proj E] [--qk-norm] [--bias] [--gqa] [--layer-types] [--seed N] [--vocab N]
"""
import argparse
import json
import os

import numpy as np

from make_tiny import Gen, encode, write_safetensors

FAMILIES = ["phi", "mistral", "gemma", "gemma2", "qwen3", "opt", "roberta", "xlm-roberta"]


def base_config(fam, a):
    """A tiny config; keys left out on purpose exercise the class defaults."""
    d, L, nh, V, ff = 64, 2, 4, 101, 96
    nkv = 2 if a.gqa else nh
    c = {"model_type": fam, "vocab_size": V, "hidden_size": d, "num_hidden_layers": L,
         "num_attention_heads": nh, "torch_dtype": "float32"}
    if fam == "phi":   # partial_rotary_factor absent: the class default 0.5
        c.update(intermediate_size=ff, num_key_value_heads=nkv, hidden_act="gelu_new", layer_norm_eps=1e-5,
                 max_position_embeddings=128, rope_theta=10000.0, qk_layernorm=bool(a.qk_norm),
                 tie_word_embeddings=bool(a.tied))
    elif fam == "mistral":
        c.update(intermediate_size=ff, num_key_value_heads=nkv, hidden_act="silu", rms_norm_eps=1e-5,
                 max_position_embeddings=256, rope_theta=10000.0, tie_word_embeddings=bool(a.tied))
    elif fam in ("gemma", "gemma2"):   # gemma: head_dim absent means 256, not D/H
        c.update(intermediate_size=ff, num_key_value_heads=nkv, rms_norm_eps=1e-6, max_position_embeddings=256,
                 rope_theta=10000.0, attention_bias=bool(a.bias), pad_token_id=0, eos_token_id=1, bos_token_id=2)
        if fam == "gemma":
            c["hidden_act"] = "gelu"   # what gemma-2b says; the activation used is gelu_pytorch_tanh
        else:
            c.update(head_dim=32, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24)
            if a.softcap:
                c["attn_logit_softcapping"], c["final_logit_softcapping"] = a.softcap
    elif fam == "qwen3":
        c.update(intermediate_size=ff, num_key_value_heads=nkv, head_dim=24, hidden_act="silu", rms_norm_eps=1e-6,
                 max_position_embeddings=256, rope_theta=1000000.0, attention_bias=bool(a.bias),
                 tie_word_embeddings=bool(a.tied), use_sliding_window=a.window is not None, max_window_layers=1)
    elif fam == "opt":
        c.update(ffn_dim=ff, max_position_embeddings=64, do_layer_norm_before=not a.post_ln,
                 word_embed_proj_dim=a.proj or d, activation_function="relu", pad_token_id=1, bos_token_id=2,
                 eos_token_id=2, enable_bias=True)
    else:   # roberta, xlm-roberta: 64 positions after the padding_idx + 1 unused rows
        c.update(intermediate_size=ff, hidden_act="gelu", max_position_embeddings=66, type_vocab_size=1,
                 layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                 position_embedding_type="absolute")
    if a.window is not None:
        c["sliding_window"] = a.window
    if a.window_null:
        c["sliding_window"] = None
    if a.layer_types:
        c["layer_types"] = ["full_attention", "sliding_attention"] * (L // 2)
    return c


def shrink(c):
    """A released config at test size: 2 layers, width 64, 4 heads (GQA kept as GQA, MQA as MQA),
    an explicit head_dim ≠ D/H kept unequal, vocabulary 101; every other key as released."""
    c = dict(c)
    nh, nkv = c.get("num_attention_heads", 12), c.get("num_key_value_heads")
    c.update(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, vocab_size=101)
    if nkv is not None:
        c["num_key_value_heads"] = 4 if nkv == nh else 1 if nkv == 1 else 2
    if "intermediate_size" in c:
        c["intermediate_size"] = 96
    if "ffn_dim" in c:
        c["ffn_dim"] = 96
    if c.get("head_dim") is not None:
        c["head_dim"] = 32
    if c.get("word_embed_proj_dim") not in (None, c.get("hidden_size")):
        c["word_embed_proj_dim"] = 32
    elif "word_embed_proj_dim" in c:
        c["word_embed_proj_dim"] = 64
    if "max_window_layers" in c:
        c["max_window_layers"] = min(c["max_window_layers"], 1)
    return c


def tensors(g, c, untied):
    fam = c["model_type"]
    d, L, nh, V = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["vocab_size"]
    nkv = c.get("num_key_value_heads") or nh
    if fam in ("gemma", "gemma2"):
        hd = c.get("head_dim") or 256
    elif fam == "qwen3":
        hd = c.get("head_dim") or 128
    else:
        hd = c.get("head_dim") or d // nh
    qd, kd = nh * hd, nkv * hd
    s = 2 / np.sqrt(d)
    if fam == "phi":
        ff, p = c["intermediate_size"], "model."
        g.w(p + "embed_tokens.weight", V, d)
        g.w(p + "final_layernorm.weight", d, scale=0.1, base=1.0)
        g.w(p + "final_layernorm.bias", d, scale=0.1)
        if not c.get("tie_word_embeddings", False):
            g.w("lm_head.weight", V, d, scale=0.2)
        g.w("lm_head.bias", V, scale=0.2)
        for l in range(L):
            h = f"{p}layers.{l}."
            g.w(h + "input_layernorm.weight", d, scale=0.1, base=1.0)
            g.w(h + "input_layernorm.bias", d, scale=0.1)
            for n, o in (("q_proj", qd), ("k_proj", kd), ("v_proj", kd)):
                g.w(h + f"self_attn.{n}.weight", o, d, scale=s)
                g.w(h + f"self_attn.{n}.bias", o, scale=0.2)
            g.w(h + "self_attn.dense.weight", d, qd, scale=1 / np.sqrt(qd))
            g.w(h + "self_attn.dense.bias", d, scale=0.1)
            if c.get("qk_layernorm"):
                for n in ("q_layernorm", "k_layernorm"):
                    g.w(h + f"self_attn.{n}.weight", hd, scale=0.2, base=1.0)
                    g.w(h + f"self_attn.{n}.bias", hd, scale=0.2)
            g.w(h + "mlp.fc1.weight", ff, d, scale=1 / np.sqrt(d))
            g.w(h + "mlp.fc1.bias", ff, scale=0.1)
            g.w(h + "mlp.fc2.weight", d, ff, scale=1 / np.sqrt(ff))
            g.w(h + "mlp.fc2.bias", d, scale=0.1)
    elif fam in ("mistral", "gemma", "gemma2", "qwen3"):
        ff, p = c["intermediate_size"], "model."
        gem = fam.startswith("gemma")
        nb, nbase = (0.0, 0.3) if gem else (1.0, 0.1)   # Gemma stores the offset from 1
        g.w(p + "embed_tokens.weight", V, d, scale=0.3 / np.sqrt(d) if gem else 0.3)
        g.w(p + "norm.weight", d, scale=nbase, base=nb)
        if not c.get("tie_word_embeddings", gem):
            g.w("lm_head.weight", V, d, scale=0.2)
        bias = fam != "mistral" and c.get("attention_bias", False)
        for l in range(L):
            h = f"{p}layers.{l}."
            norms = ["input_layernorm", "post_attention_layernorm"]
            if fam == "gemma2":
                norms += ["pre_feedforward_layernorm", "post_feedforward_layernorm"]
            for n in norms:
                g.w(h + n + ".weight", d, scale=nbase, base=nb)
            g.w(h + "self_attn.q_proj.weight", qd, d, scale=s)
            g.w(h + "self_attn.k_proj.weight", kd, d, scale=s)
            g.w(h + "self_attn.v_proj.weight", kd, d, scale=1 / np.sqrt(d))
            g.w(h + "self_attn.o_proj.weight", d, qd, scale=1 / np.sqrt(qd))
            if bias:
                g.w(h + "self_attn.q_proj.bias", qd, scale=0.2)
                g.w(h + "self_attn.k_proj.bias", kd, scale=0.2)
                g.w(h + "self_attn.v_proj.bias", kd, scale=0.2)
                g.w(h + "self_attn.o_proj.bias", d, scale=0.2)
            if fam == "qwen3":
                g.w(h + "self_attn.q_norm.weight", hd, scale=0.3, base=1.0)
                g.w(h + "self_attn.k_norm.weight", hd, scale=0.3, base=1.0)
            g.w(h + "mlp.gate_proj.weight", ff, d, scale=1 / np.sqrt(d))
            g.w(h + "mlp.up_proj.weight", ff, d, scale=1 / np.sqrt(d))
            g.w(h + "mlp.down_proj.weight", d, ff, scale=1 / np.sqrt(ff))
    elif fam == "opt":
        ff, P, p = c["ffn_dim"], c["max_position_embeddings"], "model.decoder."
        e = c.get("word_embed_proj_dim") or d
        g.w(p + "embed_tokens.weight", V, e)
        g.w(p + "embed_positions.weight", P + 2, d, scale=0.1)
        if e != d:
            g.w(p + "project_in.weight", d, e, scale=1 / np.sqrt(e))
            g.w(p + "project_out.weight", e, d, scale=1 / np.sqrt(d))
        if c.get("do_layer_norm_before", True) and not c.get("_remove_final_layer_norm", False):
            g.w(p + "final_layer_norm.weight", d, scale=0.1, base=1.0)
            g.w(p + "final_layer_norm.bias", d, scale=0.1)
        for l in range(L):
            h = f"{p}layers.{l}."
            for n in ("q_proj", "k_proj", "v_proj"):
                g.w(h + f"self_attn.{n}.weight", d, d, scale=s)
                g.w(h + f"self_attn.{n}.bias", d, scale=0.2)
            g.w(h + "self_attn.out_proj.weight", d, d, scale=1 / np.sqrt(d))
            g.w(h + "self_attn.out_proj.bias", d, scale=0.1)
            for n in ("self_attn_layer_norm", "final_layer_norm"):
                g.w(h + n + ".weight", d, scale=0.1, base=1.0)
                g.w(h + n + ".bias", d, scale=0.1)
            g.w(h + "fc1.weight", ff, d, scale=1 / np.sqrt(d))
            g.w(h + "fc1.bias", ff, scale=0.1)
            g.w(h + "fc2.weight", d, ff, scale=1 / np.sqrt(ff))
            g.w(h + "fc2.bias", d, scale=0.1)
        if untied:   # released OPT files may still carry the tied copy; the loader ignores it
            g.w("lm_head.weight", V, e)
    else:
        ff, P, p = c["intermediate_size"], c["max_position_embeddings"], "roberta."
        g.w(p + "embeddings.word_embeddings.weight", V, d)
        g.w(p + "embeddings.position_embeddings.weight", P, d, scale=0.3)
        g.w(p + "embeddings.token_type_embeddings.weight", c.get("type_vocab_size", 2), d, scale=0.1)
        g.w(p + "embeddings.LayerNorm.weight", d, scale=0.1, base=1.0)
        g.w(p + "embeddings.LayerNorm.bias", d, scale=0.1)
        g.buf(p + "embeddings.position_ids", np.arange(P, dtype=np.int64)[None, :], "I64")
        for l in range(L):
            h = f"{p}encoder.layer.{l}."
            for n in ("query", "key", "value"):
                g.w(h + f"attention.self.{n}.weight", d, d, scale=s)
                g.w(h + f"attention.self.{n}.bias", d, scale=0.1)
            g.w(h + "attention.output.dense.weight", d, d, scale=1 / np.sqrt(d))
            g.w(h + "attention.output.dense.bias", d, scale=0.1)
            g.w(h + "attention.output.LayerNorm.weight", d, scale=0.1, base=1.0)
            g.w(h + "attention.output.LayerNorm.bias", d, scale=0.1)
            g.w(h + "intermediate.dense.weight", ff, d, scale=1 / np.sqrt(d))
            g.w(h + "intermediate.dense.bias", ff, scale=0.1)
            g.w(h + "output.dense.weight", d, ff, scale=1 / np.sqrt(ff))
            g.w(h + "output.dense.bias", d, scale=0.1)
            g.w(h + "output.LayerNorm.weight", d, scale=0.1, base=1.0)
            g.w(h + "output.LayerNorm.bias", d, scale=0.1)
        g.w("lm_head.dense.weight", d, d)
        g.w("lm_head.dense.bias", d)
        g.w("lm_head.layer_norm.weight", d)
        g.w("lm_head.layer_norm.bias", d)
        g.w("lm_head.bias", V)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("family", choices=FAMILIES)
    ap.add_argument("outdir")
    ap.add_argument("--from-config", help="a released config.json, shrunk (see shrink)")
    ap.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--tied", action="store_true")
    ap.add_argument("--untied", action="store_true", help="OPT: write a (tied) lm_head.weight anyway")
    ap.add_argument("--window", type=int)
    ap.add_argument("--window-null", action="store_true", help="sliding_window: null")
    ap.add_argument("--softcap", type=lambda s: [float(x) for x in s.split(",")], help="ATTN,FINAL")
    ap.add_argument("--post-ln", action="store_true", help="OPT do_layer_norm_before false")
    ap.add_argument("--proj", type=int, default=0, help="OPT word_embed_proj_dim")
    ap.add_argument("--qk-norm", action="store_true", help="Phi qk_layernorm")
    ap.add_argument("--bias", action="store_true", help="attention_bias")
    ap.add_argument("--gqa", action="store_true")
    ap.add_argument("--layer-types", action="store_true", help="explicit layer_types, odd layers sliding")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--vocab", type=int, default=0, help="vocabulary size (to match a real tokenizer)")
    ap.add_argument("--no-head", action="store_true",
                    help="encoders: leave out the masked-LM head tensors (a bare encoder; same other weights)")
    a = ap.parse_args()
    if a.from_config:
        cfg = shrink(json.load(open(a.from_config)))
        if cfg["model_type"] != a.family:
            raise SystemExit(f"{a.from_config}: model_type {cfg['model_type']}, not {a.family}")
    else:
        cfg = base_config(a.family, a)
    if a.vocab:
        cfg["vocab_size"] = a.vocab
    g = Gen(a.seed, a.dtype)
    tensors(g, cfg, a.untied)
    if a.no_head:
        g.t = [t for t in g.t if not t[0].startswith(("cls.", "lm_head."))]
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    if a.shards <= 1:
        write_safetensors(os.path.join(a.outdir, "model.safetensors"), g.t)
        return
    names, wm, K = sorted(t[0] for t in g.t), {}, a.shards
    for k in range(K):
        fn = f"model-{k + 1:05d}-of-{K:05d}.safetensors"
        part = [t for t in g.t if names.index(t[0]) % K == k]
        write_safetensors(os.path.join(a.outdir, fn), part)
        wm.update({t[0]: fn for t in part})
    total = sum(len(encode(t[1], t[2])) for t in g.t)
    with open(os.path.join(a.outdir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2)


if __name__ == "__main__":
    main()

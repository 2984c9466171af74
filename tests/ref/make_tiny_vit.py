#!/usr/bin/python3
"""Tiny random ViT checkpoints (shared/spec/hf-checkpoints-more.md §2) with the exact Hugging Face
tensor names: ViTForImageClassification (prefix vit., classifier) or a bare ViTModel (no prefix,
pooler, no classifier). The config is built first; the tensors follow from it alone.

usage: make_tiny_vit.py OUTDIR [--dtype F32|F16|BF16] [--image N] [--patch N] [--hidden N]
           [--layers N] [--heads N] [--ffn N] [--classes N] [--no-qkv-bias] [--bare] [--pair]
           [--preprocessor JSON|none] [--seed N] [--size tiny|vit-base]
"""
import argparse
import json
import os

from make_tiny import Gen, write_safetensors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    ap.add_argument("--size", default="tiny", choices=["tiny", "vit-base"])
    ap.add_argument("--image", type=int)
    ap.add_argument("--patch", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--ffn", type=int)
    ap.add_argument("--classes", type=int, default=7)
    ap.add_argument("--no-qkv-bias", action="store_true")
    ap.add_argument("--bare", action="store_true", help="ViTModel: no prefix, a pooler, no classifier")
    ap.add_argument("--pair", action="store_true", help="image_size and patch_size as [n, n] pairs")
    ap.add_argument("--preprocessor", help="preprocessor_config.json contents (JSON text)")
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()
    base = dict(image=224, patch=16, hidden=768, layers=12, heads=12, ffn=3072) if a.size == "vit-base" else \
        dict(image=32, patch=8, hidden=48, layers=2, heads=4, ffn=80)
    for k in base:
        if getattr(a, k) is not None:
            base[k] = getattr(a, k)
    S, P, d, L, ff = base["image"], base["patch"], base["hidden"], base["layers"], base["ffn"]
    n_pos = 1 + (S // P) ** 2
    cfg = {"model_type": "vit", "architectures": ["ViTModel" if a.bare else "ViTForImageClassification"],
           "hidden_size": d, "num_hidden_layers": L, "num_attention_heads": base["heads"],
           "intermediate_size": ff, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
           "image_size": [S, S] if a.pair else S, "patch_size": [P, P] if a.pair else P, "num_channels": 3,
           "qkv_bias": not a.no_qkv_bias, "encoder_stride": P, "hidden_dropout_prob": 0.0,
           "attention_probs_dropout_prob": 0.0, "initializer_range": 0.02, "torch_dtype": "float32"}
    if not a.bare:   # labels with a tab and a space, which the predictions TSV must keep readable
        cfg["id2label"] = {str(i): f"class {i}" + ("\tx" if i == 1 else "") for i in range(a.classes)}
        cfg["label2id"] = {v: int(k) for k, v in cfg["id2label"].items()}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    # the hub's legacy feature-extractor form (§10.1), unless told otherwise; "none" = no file
    pre = a.preprocessor or json.dumps({"do_normalize": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
                                        "image_std": [0.5, 0.5, 0.5], "resample": 2, "size": S})
    if pre != "none":
        with open(os.path.join(a.out, "preprocessor_config.json"), "w") as f:
            f.write(pre)
    g = Gen(a.seed, a.dtype)
    p = "" if a.bare else "vit."
    big = a.size == "vit-base"
    sc = 0.02 if big else 0.3
    g.w(p + "embeddings.cls_token", 1, 1, d, scale=sc)
    g.w(p + "embeddings.position_embeddings", 1, n_pos, d, scale=sc)
    g.w(p + "embeddings.patch_embeddings.projection.weight", d, 3, P, P, scale=0.02 if big else 0.1)
    g.w(p + "embeddings.patch_embeddings.projection.bias", d, scale=sc)
    for l in range(L):
        q = f"{p}encoder.layer.{l}."
        g.w(q + "layernorm_before.weight", d, scale=0.1, base=1.0)
        g.w(q + "layernorm_before.bias", d, scale=0.1)
        for n in ("query", "key", "value"):
            g.w(q + f"attention.attention.{n}.weight", d, d, scale=0.02 if big else 0.3)
            if not a.no_qkv_bias:
                g.w(q + f"attention.attention.{n}.bias", d, scale=0.1)
        g.w(q + "attention.output.dense.weight", d, d, scale=0.02 if big else 0.2)
        g.w(q + "attention.output.dense.bias", d, scale=0.1)
        g.w(q + "layernorm_after.weight", d, scale=0.1, base=1.0)
        g.w(q + "layernorm_after.bias", d, scale=0.1)
        g.w(q + "intermediate.dense.weight", ff, d, scale=0.02 if big else 0.2)
        g.w(q + "intermediate.dense.bias", ff, scale=0.1)
        g.w(q + "output.dense.weight", d, ff, scale=0.02 if big else 0.2)
        g.w(q + "output.dense.bias", d, scale=0.1)
    g.w(p + "layernorm.weight", d, scale=0.1, base=1.0)
    g.w(p + "layernorm.bias", d, scale=0.1)
    if a.bare:
        g.w("pooler.dense.weight", d, d)
        g.w("pooler.dense.bias", d)
    else:
        g.w("classifier.weight", a.classes, d, scale=0.02 if big else 0.3)
        g.w("classifier.bias", a.classes, scale=0.1)
    write_safetensors(os.path.join(a.out, "model.safetensors"), g.t)


if __name__ == "__main__":
    main()

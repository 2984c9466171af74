#!/usr/bin/python3
"""Independent references for extract's ViT path, written from shared/spec/hf-checkpoints-more.md
§2 and §10 and the transformers sources it cites (modeling_vit.py, image_processing_vit.py,
image_transforms.py): Pillow for decoding, convert("RGB") and the bilinear resize, numpy for
ViTImageProcessor's rescale and normalise, and a float32 PyTorch forward pass of
ViTForImageClassification with eager attention (the patch embedding as torch's conv2d).

  reference_vit.py pixels MODEL_DIR LIST --pixels PX.h5 --tag NAME
      extract's pixel_values vs Pillow + numpy: largest |diff| <= 0.02, mean |diff| <= 0.002
  reference_vit.py forward MODEL_DIR LIST --attn ATT.h5 [--logits LOGITS.h5] [--mask FILE] --tag NAME
      attention probabilities within 1e-5 absolute, logits within 1e-4 relative
  reference_vit.py bench MODEL_DIR LIST [--threads N] [--batch B]
      images/s of the same steps in eager PyTorch (tests/bench/vit.sh)
LIST holds one image path per line, relative to the list's folder (extract --images LIST).
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
from PIL import Image, ImageOps

from reference_forward import load

F = torch.nn.functional


def image_paths(listfile):
    base = os.path.dirname(listfile)
    out = []
    for line in open(listfile):
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line if line.startswith("/") else os.path.join(base, line))
    return out


def processor(model_dir, image_size):
    """ViTImageProcessor's settings: the class defaults updated by preprocessor_config.json."""
    p = {"do_resize": True, "size": image_size, "resample": 2, "do_rescale": True, "rescale_factor": 1 / 255,
         "do_normalize": True, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}
    f = os.path.join(model_dir, "preprocessor_config.json")
    if os.path.exists(f):
        p.update(json.load(open(f)))
    size = p["size"]
    p["hw"] = (size, size) if isinstance(size, int) else (size["height"], size["width"])
    return p


def pixel_values(path, p):
    """load_image (EXIF orientation, convert("RGB")), PIL resize, float64 rescale → float32,
    float32 normalise, channels first."""
    im = ImageOps.exif_transpose(Image.open(path))
    im = im.convert("RGB")
    h, w = p["hw"]
    if p["do_resize"] and im.size != (w, h):
        im = im.resize((w, h), resample=p["resample"])
    x = np.asarray(im)
    if p["do_rescale"]:
        x = (x.astype(np.float64) * p["rescale_factor"]).astype(np.float32)
    x = x.astype(np.float32)
    if p["do_normalize"]:
        mean = np.array(p["image_mean"], dtype=np.float32)
        std = np.array(p["image_std"], dtype=np.float32)
        x = (x - mean) / std
    return x.transpose(2, 0, 1)


def side(v):
    return v[0] if isinstance(v, list) else v


def read_mask(path, L, H):
    """extract --mask lines 'layer head' → HF's head_mask [L, H] (0 = pruned)."""
    m = torch.ones(L, H)
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            l, h = map(int, line.split())
            m[l, h] = 0.0
    return m


def forward(cfg, w, px, head_mask=None):
    """One image: attentions [L, H, T, T] and logits [classes] (None without a classifier)."""
    atts, logits = forward_batch(cfg, w, torch.from_numpy(px)[None], head_mask)
    return atts[:, 0], None if logits is None else logits[0]


def forward_batch(cfg, w, x, head_mask=None):
    """ViTForImageClassification.forward(pixel_values [B, 3, H, W], head_mask) in float32, eager
    attention; head_mask multiplies the attention probabilities (modeling_vit.py), the
    returned attentions [L, B, H, T, T] are those before the mask."""
    pre = "vit." if "vit.embeddings.cls_token" in w else ""
    d = cfg.get("hidden_size", 768)
    nh = cfg.get("num_attention_heads", 12)
    hd = d // nh
    eps = cfg.get("layer_norm_eps", 1e-12)
    P = side(cfg.get("patch_size", 16))
    B = x.shape[0]
    e = F.conv2d(x, w[pre + "embeddings.patch_embeddings.projection.weight"],
                 w[pre + "embeddings.patch_embeddings.projection.bias"], stride=P)
    e = e.flatten(2).transpose(1, 2)
    h = torch.cat([w[pre + "embeddings.cls_token"].expand(B, -1, -1), e], dim=1)
    h = h + w[pre + "embeddings.position_embeddings"]
    T = h.shape[1]
    atts = []
    for l in range(cfg.get("num_hidden_layers", 12)):
        q = f"{pre}encoder.layer.{l}."

        def lin(name, t):
            return F.linear(t, w[q + name + ".weight"], w.get(q + name + ".bias"))

        a = F.layer_norm(h, (d,), w[q + "layernorm_before.weight"], w[q + "layernorm_before.bias"], eps)
        heads = [lin(f"attention.attention.{n}", a).view(B, T, nh, hd).transpose(1, 2) for n in ("query", "key", "value")]
        scores = torch.matmul(heads[0], heads[1].transpose(-1, -2)) / math.sqrt(hd)
        probs = torch.softmax(scores, dim=-1)
        atts.append(probs)
        if head_mask is not None:
            probs = probs * head_mask[l].view(1, nh, 1, 1)
        ctx = torch.matmul(probs, heads[2]).transpose(1, 2).reshape(B, T, d)
        h = lin("attention.output.dense", ctx) + h
        m = F.layer_norm(h, (d,), w[q + "layernorm_after.weight"], w[q + "layernorm_after.bias"], eps)
        h = lin("output.dense", F.gelu(lin("intermediate.dense", m))) + h
    h = F.layer_norm(h, (d,), w[pre + "layernorm.weight"], w[pre + "layernorm.bias"], eps)
    logits = F.linear(h[:, 0], w["classifier.weight"], w["classifier.bias"]) if "classifier.weight" in w else None
    return torch.stack(atts), logits


def bench(cfg, w, p, paths, a):
    """images/s of decode + preprocess (Pillow, numpy) + eager forward returning every attention
    map, a.batch images per call, per wall and per CPU second (no file written)."""
    import time
    if a.threads:
        torch.set_num_threads(a.threads)
    with torch.no_grad():
        forward_batch(cfg, w, torch.from_numpy(pixel_values(paths[0], p))[None])   # warm-up
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, len(paths), a.batch):
            x = torch.from_numpy(np.stack([pixel_values(q, p) for q in paths[i:i + a.batch]]))
            forward_batch(cfg, w, x)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"pytorch\t{len(paths) / wall:.3f}\t{len(paths) / cpu:.3f}")
    return 0


def tap(good, msg):
    print(("ok" if good else "not ok") + " - " + msg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["pixels", "forward", "bench"])
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("model")
    ap.add_argument("list")
    ap.add_argument("--pixels")
    ap.add_argument("--attn")
    ap.add_argument("--logits")
    ap.add_argument("--mask")
    ap.add_argument("--tag", default="reference")
    a = ap.parse_args()
    import h5py
    cfg = json.load(open(os.path.join(a.model, "config.json")))
    p = processor(a.model, side(cfg.get("image_size", 224)))
    paths = image_paths(a.list)
    if a.mode == "pixels":
        mine = h5py.File(a.pixels, "r")["pixel_values"]
        if mine.shape[0] != len(paths):
            return tap(False, f"{a.tag}: {mine.shape[0]} images in the file, {len(paths)} listed")
        worst, total, n, worst_name = 0.0, 0.0, 0, ""
        for i, path in enumerate(paths):
            diff = np.abs(mine[i].reshape(3, *p["hw"]).astype(np.float64) - pixel_values(path, p))
            if diff.max() > worst:
                worst, worst_name = float(diff.max()), os.path.basename(path)
            total += float(diff.sum())
            n += diff.size
        mean = total / n
        tap(worst <= 0.02 and mean <= 0.002,
            f"{a.tag}: pixel_values of {len(paths)} images vs Pillow: max |diff| {worst:.3g} ({worst_name or '-'}), "
            f"mean {mean:.3g}")
        return 0
    _, w = load(a.model)
    if a.mode == "bench":
        return bench(cfg, w, p, paths, a)
    f = h5py.File(a.attn, "r")
    lg = h5py.File(a.logits, "r")["logits"] if a.logits else None
    worst_p, worst_l = 0.0, 0.0
    hm = read_mask(a.mask, cfg.get("num_hidden_layers", 12), cfg.get("num_attention_heads", 12)) if a.mask else None
    with torch.no_grad():
        for i, path in enumerate(paths):
            atts, logits = forward(cfg, w, pixel_values(path, p), hm)
            got = np.exp(f["attention"][i].astype(np.float64))
            worst_p = max(worst_p, float(np.abs(got - atts.numpy()).max()))
            if lg is not None:
                r = logits.numpy()
                worst_l = max(worst_l, float(np.abs(lg[i][0] - r).max() / np.abs(r).max()))
    tap(worst_p <= 1e-5, f"{a.tag}: attention of {len(paths)} images within 1e-5 (max {worst_p:.2e})")
    if lg is not None:
        tap(worst_l <= 1e-4, f"{a.tag}: logits within 1e-4 relative (max {worst_l:.2e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

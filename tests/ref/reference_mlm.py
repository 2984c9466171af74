#!/usr/bin/python3
"""Independent masked-LM reference for extract's encoder perplexity (docs/EXTRACT.md, "Masked-LM
perplexity"). Written from shared/spec/hf-checkpoints.md §7 (BertForMaskedLM) and
hf-checkpoints-more.md §7 (RobertaForMaskedLM), in float64 torch from the stored safetensors
(own reader: the safetensors package is not installed).

  reference_mlm.py MODEL_DIR INPUT NLL.tsv [--mask FILE] [--ppl VALUE] [--rate P]

INPUT is an --ids file (lines padded with pad_token_id, pads masked as keys) or an attention file
written by extract (its 'tokens' and 'valid'). The positions masked are read from extract's --nll
rows; this script checks that they are valid, non-special, at least one per sequence, and that
the row's token is the input's; then it replaces them by the mask token (tokenizer.json
added_tokens "[MASK]"/"<mask>", else config.json attncoda_mask_token_id), runs the encoder and
the MLM head itself, and compares every NLL (1e-4 absolute) and the perplexity (the file's
'# perplexity' line and --ppl, 1e-5 relative). --mask prunes heads: their per-head attention
output is zeroed before the output projection. --rate P also checks that the share of masked
candidates is within 5 standard deviations of P. One TAP line per check; the largest deviations
on stdout as '# ' lines.
"""
import argparse
import json
import math
import os
import struct

import numpy as np
import torch

DT = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I64": np.int64, "BOOL": np.bool_}


def read_st(path, out):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    for name, v in hdr.items():
        if name == "__metadata__":
            continue
        b, e = v["data_offsets"]
        a = np.frombuffer(raw[8 + n + b:8 + n + e], dtype=DT[v["dtype"]])
        if v["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        if v["dtype"] in ("F32", "F16", "BF16"):
            out[name] = torch.from_numpy(a.astype(np.float64)).reshape(v["shape"])


def load(d):
    w = {}
    idx = os.path.join(d, "model.safetensors.index.json")
    files = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) else ["model.safetensors"]
    for f in files:
        read_st(os.path.join(d, f), w)
    return json.load(open(os.path.join(d, "config.json"))), w


def ln(w, base, x, eps):
    g = w.get(base + ".weight", w.get(base + ".gamma"))
    b = w.get(base + ".bias", w.get(base + ".beta"))
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * g + b


def gelu_erf(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


ACT = {"gelu": gelu_erf, "relu": torch.relu, "silu": lambda x: x * torch.sigmoid(x),
       "gelu_new": lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))}


def mlm_logits(cfg, w, ids, valid, keep):
    """BertForMaskedLM / RobertaForMaskedLM on one sequence: logits [T, V]."""
    rob = cfg["model_type"] in ("roberta", "xlm-roberta")
    p = "roberta." if rob else "bert."
    if p + "embeddings.word_embeddings.weight" not in w:
        p = ""
    T, d, nh = len(ids), cfg["hidden_size"], cfg["num_attention_heads"]
    hd, eps = d // nh, cfg.get("layer_norm_eps", 1e-12)
    ids_t = torch.tensor(ids)
    if rob:   # create_position_ids_from_input_ids
        pad = cfg.get("pad_token_id", 1)
        m = (ids_t != pad).long()
        pos = torch.cumsum(m, 0) * m + pad
    else:
        pos = torch.arange(T)
    x = w[p + "embeddings.word_embeddings.weight"][ids_t] + w[p + "embeddings.position_embeddings.weight"][pos]
    x = x + w[p + "embeddings.token_type_embeddings.weight"][0]
    x = ln(w, p + "embeddings.LayerNorm", x, eps)
    add = torch.tensor([0.0 if v else -1e30 for v in valid], dtype=torch.float64)
    for l in range(cfg["num_hidden_layers"]):
        h = f"{p}encoder.layer.{l}."

        def lin(name, a):
            return a @ w[h + name + ".weight"].T + w[h + name + ".bias"]
        q, k, v = (lin("attention.self." + n, x).reshape(T, nh, hd).permute(1, 0, 2) for n in ("query", "key", "value"))
        s = q @ k.transpose(1, 2) / math.sqrt(hd) + add
        ctx = torch.softmax(s, -1) @ v                       # [nh, T, hd]
        if keep is not None:
            ctx = ctx * torch.tensor(keep[l], dtype=torch.float64)[:, None, None]
        ctx = ctx.permute(1, 0, 2).reshape(T, d)
        x = ln(w, h + "attention.output.LayerNorm", lin("attention.output.dense", ctx) + x, eps)
        f = lin("output.dense", ACT[cfg.get("hidden_act", "gelu")](lin("intermediate.dense", x)))
        x = ln(w, h + "output.LayerNorm", f + x, eps)
    if rob:   # RobertaLMHead: erf GELU whatever hidden_act is
        t = gelu_erf(x @ w["lm_head.dense.weight"].T + w["lm_head.dense.bias"])
        t = ln(w, "lm_head.layer_norm", t, eps)
        dec = w.get("lm_head.decoder.weight", w[p + "embeddings.word_embeddings.weight"])
        return t @ dec.T + w.get("lm_head.bias", w.get("lm_head.decoder.bias"))
    t = x @ w["cls.predictions.transform.dense.weight"].T + w["cls.predictions.transform.dense.bias"]
    t = ln(w, "cls.predictions.transform.LayerNorm", ACT[cfg.get("hidden_act", "gelu")](t), eps)
    dec = w.get("cls.predictions.decoder.weight", w[p + "embeddings.word_embeddings.weight"])
    return t @ dec.T + w.get("cls.predictions.bias", w.get("cls.predictions.decoder.bias"))


def read_input(path, pad):
    if path.endswith(".h5"):
        import h5py
        f = h5py.File(path, "r")
        ids = f["tokens"][...].tolist()
        valid = f["valid"][...].tolist() if "valid" in f else [[1] * len(s) for s in ids]
        return ids, valid
    seqs = [[int(x) for x in ln.split()] for ln in open(path) if ln.strip() and not ln.lstrip().startswith("#")]
    T = max(len(s) for s in seqs)
    return [s + [pad] * (T - len(s)) for s in seqs], [[1] * len(s) + [0] * (T - len(s)) for s in seqs]


def special_ids(d, cfg):
    """Mask id and the ids never masked, from tokenizer.json and config.json."""
    names = {"[CLS]", "[SEP]", "[PAD]", "[MASK]", "<s>", "</s>", "<pad>", "<mask>"}
    found = {}
    tj = os.path.join(d, "tokenizer.json")
    if os.path.exists(tj):
        for t in json.load(open(tj)).get("added_tokens", []):
            if t["content"] in names:
                found[t["content"]] = t["id"]
    keys = ["pad_token_id", "attncoda_cls_token_id", "attncoda_sep_token_id", "attncoda_mask_token_id"]
    if cfg["model_type"] != "bert":
        keys += ["bos_token_id", "eos_token_id"]
    special = set(found.values()) | {cfg[k] for k in keys if k in cfg}
    if cfg["model_type"] == "bert" and "pad_token_id" not in cfg:
        special.add(0)
    mask = found.get("[MASK]", found.get("<mask>", cfg.get("attncoda_mask_token_id")))
    return mask, special


def read_nll(path):
    rows, ppl = [], None
    for line in open(path):
        if line.startswith("# perplexity\t"):
            ppl = float(line.split("\t")[1])
        if line.startswith("#") or line.startswith("seq\t"):
            continue
        s, t, tok, v = line.rstrip("\n").split("\t")
        rows.append((int(s), int(t), int(tok), float(v)))
    return rows, ppl


def read_keep(path, L, H):
    keep = [[1.0] * H for _ in range(L)]
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            l, h = map(int, line.split())
            keep[l][h] = 0.0
    return keep


def tap(ok, what):
    print(("ok" if ok else "not ok") + " - " + what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("nll")
    ap.add_argument("--mask")
    ap.add_argument("--ppl", type=float)
    ap.add_argument("--rate", type=float)
    ap.add_argument("--label", default="mlm")
    a = ap.parse_args()
    cfg, w = load(a.model)
    pad = cfg.get("pad_token_id", 1 if cfg["model_type"] != "bert" else 0)
    ids, valid = read_input(a.input, pad)
    mask_id, special = special_ids(a.model, cfg)
    rows, file_ppl = read_nll(a.nll)
    keep = read_keep(a.mask, cfg["num_hidden_layers"], cfg["num_attention_heads"]) if a.mask else None
    by_seq = {}
    for s, t, tok, v in rows:
        by_seq.setdefault(s, []).append((t, tok, v))
    ncand = sum(1 for s in range(len(ids)) for t in range(len(ids[s])) if valid[s][t] and ids[s][t] not in special)
    shape_ok = mask_id is not None and sorted(by_seq) == list(range(len(ids))) and all(
        0 <= t < len(ids[s]) and valid[s][t] and ids[s][t] not in special and tok == ids[s][t]
        for s, t, tok, _ in rows) and len(set((s, t) for s, t, _, _ in rows)) == len(rows)
    tap(shape_ok, f"{a.label}: {len(rows)} masked positions of {ncand} candidates, >= 1 in each of {len(ids)} "
                  "sequences, valid, non-special, tokens as input")
    if not shape_ok:
        return
    if a.rate:
        sd = math.sqrt(a.rate * (1 - a.rate) / ncand) if a.rate < 1 else 0
        share = len(rows) / ncand
        tap(abs(share - a.rate) <= 5 * sd + len(ids) / ncand, f"{a.label}: masked share {share:.4f} ~ rate {a.rate}")
    dmax, ref = 0.0, []
    with torch.no_grad():
        for s in sorted(by_seq):
            x = list(ids[s])
            for t, _, _ in by_seq[s]:
                x[t] = mask_id
            lp = torch.log_softmax(mlm_logits(cfg, w, x, valid[s], keep), -1)
            for t, tok, v in by_seq[s]:
                r = -lp[t, tok].item()
                ref.append(r)
                dmax = max(dmax, abs(r - v))
    ppl = math.exp(sum(ref) / len(ref))
    print(f"# {a.label}: max |nll - ref| {dmax:.3g}, perplexity {file_ppl} ref {ppl:.6f}")
    tap(dmax <= 1e-4, f"{a.label}: every masked-position NLL within 1e-4 of the reference (max {dmax:.2g})")
    rel = abs(file_ppl - ppl) / ppl
    tap(rel <= 1e-5, f"{a.label}: perplexity {file_ppl} within 1e-5 relative of the reference {ppl:.6f} ({rel:.2g})")
    if a.ppl is not None:
        rel = abs(a.ppl - ppl) / ppl
        tap(rel <= 1e-5, f"{a.label}: printed perplexity {a.ppl} within 1e-5 relative ({rel:.2g})")


if __name__ == "__main__":
    main()

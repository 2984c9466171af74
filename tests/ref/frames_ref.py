#!/usr/bin/env python3
"""Independent reference for `frames` (METHODS §7): everything is computed from the stored attention
values as METHODS §7 and docs/FORMAT.md define them, with NumPy, and compared with what frames wrote.

    frames_ref.py ATTN.h5 --heads H.tsv --layers L.tsv --label M.tsv [--h5 F.h5] [options]

Options mirror frames' (--min-query, --tau-r, ...; --llama2c-vocab TOK.bin gives the token texts for
the delimiter class and BOS/EOS as specials; --special LIST). Prints one line per compared quantity
("name max_abs_diff" or "name mismatches") and exits 1 when any number differs by more than --tol
(1e-9, relative above 1) or any label or count differs."""
import argparse
import math
import struct
import sys
import unicodedata

import h5py
import numpy as np

CLASSES = ["first", "last", "special", "delimiter", "content"]
LABELS = ["none", "centralized", "distributed", "bidirectional"]


def read_tsv(path):
    rows = [l.rstrip("\n").split("\t") for l in open(path, encoding="utf-8") if not l.startswith("#")]
    head = rows[0]
    return [dict(zip(head, r)) for r in rows[1:]]


def llama2c_vocab(path):
    """Token texts of a llama2.c tok*.bin: int32 max length, then (float score, int32 len, bytes)."""
    data = open(path, "rb").read()
    off, texts = 4, []
    while off < len(data):
        _, n = struct.unpack_from("<fi", data, off)
        off += 8
        piece = data[off:off + n]
        off += n
        s = piece.decode("utf-8", "replace")
        if len(s) == 6 and s.startswith("<0x") and s.endswith(">"):
            texts.append(bytes([int(s[3:5], 16)]))   # byte-fallback token
        elif s in ("<s>", "</s>", "<unk>"):
            texts.append(b"")                          # control tokens have no text
        else:
            texts.append(piece.replace("\u2581".encode(), b" "))
    return texts


def delimiter(b):
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return len(s) > 0 and all(unicodedata.category(c)[0] in "PZ" or c in "\t\n\x0b\x0c\r" for c in s)


def rows_prob(block, keys, logprob, delta):
    """Closed probabilities of one head's rows: P[q, k] for keys[q] (bool mask), 0 elsewhere."""
    T = block.shape[0]
    P = np.zeros((T, T))
    for q in range(T):
        m = keys[q]
        if not m.any():
            continue
        x = block[q, m].astype(np.float64)
        if logprob:
            p = np.exp(x - np.logaddexp.reduce(x))
        else:
            z = x <= 0
            p = np.where(z, delta, x * (1 - z.sum() * delta))
            p = p / p.sum()
        P[q, m] = p
    return P


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("attn")
    ap.add_argument("--heads"), ap.add_argument("--layers"), ap.add_argument("--label"), ap.add_argument("--h5")
    ap.add_argument("--keys")
    ap.add_argument("--min-query", type=int, default=4)
    ap.add_argument("--tau-r", type=float, default=0.3)
    ap.add_argument("--tau-z", type=float, default=3.0)
    ap.add_argument("--min-seq-share", type=float, default=0.5)
    ap.add_argument("--central-share", type=float, default=0.7)
    ap.add_argument("--central-neff", type=float, default=1.5)
    ap.add_argument("--bidir-share", type=float, default=0.25)
    ap.add_argument("--min-sink-heads", type=float, default=0.1)
    ap.add_argument("--model-layers-from", type=int, default=1)
    ap.add_argument("--zero-delta", type=float, default=1e-9)
    ap.add_argument("--special", default="")
    ap.add_argument("--llama2c-vocab")
    ap.add_argument("--paper-stats", action="store_true")
    ap.add_argument("--paper-tau", default="0.01,0.05,0.1,0.2")
    ap.add_argument("--tol", type=float, default=1e-9)
    ap.add_argument("--rows-of", help="keep only the queries this sampled file's query_pos lists")
    a = ap.parse_args()
    qsel = None
    if a.rows_of:
        with h5py.File(a.rows_of, "r") as g:
            qsel = [set(int(x) for x in row) for row in g["query_pos"][...]]

    f = h5py.File(a.attn, "r")
    S, L, H, T = (int(f.attrs[k]) for k in ("sequences", "layers", "heads", "tokens"))
    causal = int(f.attrs["causal"]) == 1
    logprob = f.attrs["values"] in ("logprob", b"logprob")
    tokens = f["tokens"][...] if "tokens" in f else np.zeros((S, T), np.int32)
    valid = f["valid"][...].astype(bool) if "valid" in f else np.ones((S, T), bool)
    layer_id = list(f["layer_index"][...]) if "layer_index" in f else list(range(L))
    special = {int(x) for x in a.special.split(",") if x}
    delim_ids = None
    if a.llama2c_vocab:
        texts = llama2c_vocab(a.llama2c_vocab)
        delim_ids = {i for i, b in enumerate(texts) if delimiter(b)}
        special |= {1, 2}     # llama2.c: BOS = 1, EOS = 2
    q0 = a.min_query
    taus = [float(x) for x in a.paper_tau.split(",")]

    rsum = np.zeros((L, H, T)); usum = np.zeros((L, H, T)); zsum = np.zeros((L, H, T)); cnt = np.zeros((L, H, T))
    seqref = np.zeros((L, H)); nref = np.zeros((L, H)); p1 = np.zeros((L, H)); neff = np.zeros((L, H))
    cmass = np.zeros((L, H, len(CLASSES)))
    abar = np.zeros((L, H, T, T))
    for s in range(S):
        v = valid[s]
        if causal:
            keys = np.tril(np.ones((T, T), bool))
        else:
            keys = np.tile(v, (T, 1)) & v[:, None]
        D = keys.sum(axis=1)
        last = max(k for k in range(T) if v[k])
        cls = []
        for k in range(T):
            t = int(tokens[s, k])
            if k == 0: cls.append(0)
            elif k == last: cls.append(1)
            elif t in special: cls.append(2)
            elif delim_ids is not None and t in delim_ids: cls.append(3)
            else: cls.append(4)
        for l in range(L):
            blk = f["attention"][s, l]
            for h in range(H):
                P = rows_prob(blk[h], keys, logprob, a.zero_delta)
                abar[l, h] += P
                r = np.full(T, np.nan); u = np.full(T, np.nan)
                for k in range(T):
                    if not v[k]:
                        continue
                    Q = [q for q in range(max(k, q0) if causal else q0, T) if v[q] and (qsel is None or q in qsel[s])]
                    if not Q:
                        continue
                    r[k] = np.mean([P[q, k] for q in Q])
                    u[k] = np.mean([1.0 / D[q] for q in Q])
                    rsum[l, h, k] += r[k]; usum[l, h, k] += u[k]; zsum[l, h, k] += r[k] / u[k]; cnt[l, h, k] += 1
                with np.errstate(invalid="ignore"):
                    ref = [k for k in range(T) if r[k] >= a.tau_r and r[k] / u[k] >= a.tau_z]
                nref[l, h] += len(ref)
                if ref:
                    rho = np.array([r[k] for k in ref]) / sum(r[k] for k in ref)
                    seqref[l, h] += 1
                    p1[l, h] += rho.max()
                    neff[l, h] += math.exp(-sum(x * math.log(x) for x in rho))
                    for k in ref:
                        cmass[l, h, cls[k]] += r[k]

    # head labels (§7.1)
    heads = {}
    for l in range(L):
        for h in range(H):
            tot = cmass[l, h].sum()
            share = cmass[l, h] / tot if tot > 0 else np.full(len(CLASSES), np.nan)
            if delim_ids is None:
                share[3] = np.nan
            ss = seqref[l, h] / S
            mp1 = p1[l, h] / seqref[l, h] if seqref[l, h] else np.nan
            mne = neff[l, h] / seqref[l, h] if seqref[l, h] else np.nan
            cs = cmass[l, h] / tot if tot > 0 else np.zeros(len(CLASSES))
            if ss < a.min_seq_share or tot <= 0: lab = "none"
            elif cs.max() >= a.central_share and mne <= a.central_neff: lab = "centralized"
            elif not causal and (cs >= a.bidir_share).sum() >= 2: lab = "bidirectional"
            else: lab = "distributed"
            heads[(l, h)] = dict(label=lab, seq_share=ss, n_ref=nref[l, h] / S, p1=mp1, n_eff=mne,
                                 share=share)

    bad = []

    def cmp_num(name, got, want):
        got, want = np.asarray(got, float), np.asarray(want, float)
        nan_mismatch = int((np.isnan(got) != np.isnan(want)).sum())
        m = ~np.isnan(want) & ~np.isnan(got)
        # relative above 1: the TSVs print 12 significant digits
        d = float(np.max(np.abs(got[m] - want[m]) / np.maximum(1, np.abs(want[m])))) if m.any() else 0.0
        print(f"{name}\t{d:.3g}\t{nan_mismatch}")
        if d > a.tol or nan_mismatch:
            bad.append(name)

    def cmp_exact(name, got, want):
        n = sum(1 for x, y in zip(got, want) if x != y) + abs(len(got) - len(want))
        print(f"{name}\t{n} mismatches")
        if n:
            bad.append(name)

    if a.heads:
        rows = read_tsv(a.heads)
        order = [(l, h) for l in range(L) for h in range(H)]
        cmp_exact("heads.label", [r["label"] for r in rows], [heads[k]["label"] for k in order])
        for q in ("seq_share", "n_ref", "p1", "n_eff"):
            cmp_num("heads." + q, [float(r[q]) for r in rows], [heads[k][q] for k in order])
        for c, name in enumerate(CLASSES):
            cmp_num("heads." + name, [float(r[name]) for r in rows], [heads[k]["share"][c] for k in order])
        if a.paper_stats:
            paper(a, rows, order, abar / S, valid, taus, cmp_num, cmp_exact)
    if a.layers:
        rows = read_tsv(a.layers)
        want_lab, want_cls = [], []
        for l in range(L):
            labs = [heads[(l, h)]["label"] for h in range(H)]
            want_lab.append([labs.count(x) / H for x in LABELS])
            sinkh = [heads[(l, h)] for h in range(H) if heads[(l, h)]["label"] != "none"]
            want_cls.append([np.mean([x["share"][c] for x in sinkh]) if sinkh else np.nan for c in range(len(CLASSES))])
        cmp_num("layers.labels", [[float(r[x]) for x in LABELS] for r in rows], want_lab)
        cmp_num("layers.classes", [[float(r[x]) for x in CLASSES] for r in rows], want_cls)
    if a.label:
        row = read_tsv(a.label)[0]
        frm = a.model_layers_from if a.model_layers_from <= max(layer_id) else 0
        labs = [heads[(l, h)]["label"] for l in range(L) for h in range(H) if layer_id[l] >= frm]
        sink = [x for x in labs if x != "none"]
        counts = sorted(((sink.count(x), -i, x) for i, x in enumerate(LABELS[1:]) if sink.count(x)), reverse=True)
        if not sink or len(sink) < a.min_sink_heads * len(labs):
            want = "none"
        else:
            want = counts[0][2]
        cmp_exact("label.label", [row["label"]], [want])
        cmp_exact("label.sink_heads", [int(row["sink_heads"])], [len(sink)])
        if want != "none":
            cmp_num("label.label_share", [float(row["label_share"])], [counts[0][0] / len(sink)])
            cmp_exact("label.runner_up", [row["runner_up"]], [counts[1][2] if len(counts) > 1 else "-"])
    if a.h5:
        g = h5py.File(a.h5, "r")
        with np.errstate(invalid="ignore", divide="ignore"):
            for name, x in (("r", rsum), ("u", usum), ("z", zsum)):
                cmp_num("h5." + name, g[name][...], np.where(cnt > 0, x / cnt, np.nan))
        cmp_exact("h5.label", [LABELS[i] for i in g["head/label"][...].ravel()],
                  [heads[(l, h)]["label"] for l in range(L) for h in range(H)])
    if a.keys:
        rows = read_tsv(a.keys)
        with np.errstate(invalid="ignore", divide="ignore"):
            rbar, zbar = np.where(cnt > 0, rsum / cnt, np.nan), np.where(cnt > 0, zsum / cnt, np.nan)
        with np.errstate(invalid="ignore"), __import__("warnings").catch_warnings():
            __import__("warnings").simplefilter("ignore")
            want_r, want_z = np.nanmean(rbar, axis=1), np.nanmean(zbar, axis=1)
        cmp_num("keys.r", [float(r["r"]) for r in rows], want_r.ravel())
        cmp_num("keys.z", [float(r["z"]) for r in rows], want_z.ravel())
    sys.exit(1 if bad else 0)


def paper(a, rows, order, abar, valid, taus, cmp_num, cmp_exact):
    """§7.3 on the head-averaged attention, straight from the definitions."""
    nodes = [k for k in range(valid.shape[1]) if valid[:, k].any()]
    n = len(nodes)
    got_ref, want_ref, got_pct, want_pct = [], [], [], []
    gd, wd, gc, wc, gs, ws, gf, wf = ([] for _ in range(8))
    for r, (l, h) in zip(rows, order):
        A = abar[l, h][np.ix_(nodes, nodes)]
        recv = A.sum(axis=0) / n
        above = [i for i in range(n) if recv[i] > 0.1]
        cap = max(1, math.floor(0.3 * n + 1e-9))
        ranked = sorted(range(n), key=lambda i: (-recv[i], i))
        pick = above if above else ranked[:max(1, math.ceil(0.1 * n - 1e-9))]
        if len(pick) > cap:
            pick = ranked[:cap]
        want_ref.append(",".join(str(nodes[i]) for i in sorted(pick)))
        got_ref.append(r["paper_ref_positions"])
        want_pct.append(int((recv >= np.percentile(recv, 90)).sum()))
        got_pct.append(int(r["paper_pct_sinks"]))
        for t in taus:
            adj = (A > t).astype(float)
            np.fill_diagonal(adj, 0)
            dens = adj.sum() / (n * (n - 1))
            gd.append(float(r[f"density_{t:g}"])); wd.append(dens)
            keep = 0.05 <= dens <= 0.95
            indeg = adj.sum(axis=0)
            x = np.sort(indeg)
            gini = (2 * np.sum(np.arange(1, n + 1) * x) / (n * x.sum()) - (n + 1) / n) if x.sum() > 0 else 0.0
            W = (adj + adj.T) / 2
            lap = np.diag(W.sum(axis=1)) - W
            gc.append(float(r[f"centralisation_{t:g}"])); wc.append(np.sum(indeg.max() - indeg) / (n - 1) ** 2 if keep else np.nan)
            gs.append(float(r[f"star_{t:g}"])); ws.append(0.3 * indeg.max() / (n - 1) + 0.7 * gini if keep else np.nan)
            gf.append(float(r[f"fiedler_{t:g}"])); wf.append(np.linalg.eigvalsh(lap)[1] if keep else np.nan)
    cmp_exact("paper.ref_positions", got_ref, want_ref)
    cmp_exact("paper.pct_sinks", got_pct, want_pct)
    cmp_num("paper.density", gd, wd)
    cmp_num("paper.centralisation", gc, wc)
    cmp_num("paper.star", gs, ws)
    cmp_num("paper.fiedler", gf, wf)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Attention files with planted reference frames, written with h5py from docs/FORMAT.md alone.

    frames_planted.py OUT.h5 KIND

KIND (each head's rows: the planted anchors visible to row q get their mass, the rest of the row is
uniform over the other keys):
  uniform        causal, every row uniform (chance level only: label none)
  central        causal, key 0 gets 0.6 (centralized)
  distributed    causal, keys 0, 8, 16 get 0.32 each (N_eff = 3: distributed)
  twoanchor      causal, keys 0 and 3 get 0.4 each (two classes, but causal: distributed)
  bidirectional  bidirectional, 2 padding keys; [CLS] (key 0) and [SEP] (last valid key) 0.4 each
  mixed          causal, layer 0 all central; layer 1 heads 0-2 distributed, head 3 central
  hand3          causal, S=1, L=1, H=3, T=6: uniform; key 0 gets 0.5; the diagonal gets 0.9
"""
import sys

import h5py
import numpy as np

CENTRAL, DISTRIB, TWO = {0: 0.6}, {0: 0.32, 8: 0.32, 16: 0.32}, {0: 0.4, 3: 0.4}


def row(T, keys, anchors):
    p = np.zeros(T)
    vis = {k: m for k, m in anchors.items() if keys[k]}
    others = [k for k in range(T) if keys[k] and k not in vis]
    for k, m in vis.items():
        p[k] = m
    if others:
        p[others] = (1 - sum(vis.values())) / len(others)
    else:
        p /= p.sum()
    return p


def main():
    out, kind = sys.argv[1], sys.argv[2]
    S, L, H, T, causal, pad = 4, 2, 4, 32, 1, 0
    plan = None
    if kind == "uniform": plan = lambda l, h: {}
    elif kind == "central": plan = lambda l, h: CENTRAL
    elif kind == "distributed": plan = lambda l, h: DISTRIB
    elif kind == "twoanchor": plan = lambda l, h: TWO
    elif kind == "mixed": plan = lambda l, h: CENTRAL if l == 0 or h == 3 else DISTRIB
    elif kind == "bidirectional":
        causal, pad, T = 0, 2, 12
        plan = lambda l, h: {0: 0.4, T - pad - 1: 0.4}
    elif kind == "hand3":
        S, L, H, T = 1, 1, 3, 6
        plan = None
    else:
        sys.exit(f"unknown kind {kind}")
    valid = np.ones((S, T), np.int32)
    if pad:
        valid[:, T - pad:] = 0
    A = np.full((S, L, H, T, T), -np.inf, np.float32)
    for s in range(S):
        for l in range(L):
            for h in range(H):
                for q in range(T):
                    if not valid[s, q]:
                        keys = np.zeros(T, bool)
                        keys[0] = True      # padding queries: any valid row, never read
                    elif causal:
                        keys = np.arange(T) <= q
                    else:
                        keys = valid[s].astype(bool)
                    if plan is not None:
                        anchors = plan(l, h)
                    else:
                        anchors = [{}, {0: 0.5}, {q: 0.9}][h]
                    p = row(T, keys, anchors)
                    A[s, l, h, q, keys] = np.log(p[keys])
    tokens = np.tile(np.arange(10, 10 + T, dtype=np.int32), (S, 1))
    if kind == "bidirectional":
        tokens[:, 0], tokens[:, T - pad - 1], tokens[:, T - pad:] = 101, 102, 0
    with h5py.File(out, "w") as f:
        for k, v in (("format_version", 1), ("sequences", S), ("layers", L), ("heads", H), ("tokens", T),
                     ("causal", causal), ("sink", 0), ("seed", -1)):
            f.attrs[k] = np.int64(v)
        for k, v in (("format", "attncoda-attention"), ("values", "logprob"), ("model", "planted-" + kind),
                     ("family", "synth"), ("text", "planted frames"),
                     ("provenance", '{"program":"frames_planted.py","inputs":[],"options":{}}')):
            f.attrs[k] = np.bytes_(v)
        f.create_dataset("attention", data=A, chunks=(1, 1, H, T, T))
        f.create_dataset("tokens", data=tokens)
        if pad:
            f.create_dataset("valid", data=valid)

if __name__ == "__main__":
    main()

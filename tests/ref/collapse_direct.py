#!/usr/bin/python3
"""Direct float64 computation of `collapse` (METHODS §5.5) from the stored attention values, for
checking bin/collapse on small files without any of the C code.
Usage: collapse_direct.py SPLIT.tsv SERIES.tsv [--min-query N] [--zero-delta X] [--rows-of SAMPLED.h5] CKPT.h5...
--rows-of: keep only the queries SAMPLED.h5's query_pos lists (full files restricted to sampled rows).
Rows are closed as docs/FORMAT.md defines (log rows minus their logsumexp, taken with math.fsum;
probability rows divided by their sum, then zeros replaced multiplicatively). Kept rows: the
query is valid, causal rows have t >= min-query, the sink is one of the row's keys, D >= 2.
Per row s = p_k, H = -sum p ln p, H_b(s), H(pi) on pi = p without k, closed; per checkpoint and
layer the means of H, H_b, (1-s)H(pi), s; the split runs from the checkpoint of highest mean H to
the last one, per row sink = dH_b + d(1-s)(H(pi)_0 + H(pi)_1)/2, content = (1 - (s_0+s_1)/2) dH(pi).
Prints "name max_relative_difference" (drops relative to max(|drop|, H_from)) for every number of SPLIT.tsv (collapse's stdout) and
SERIES.tsv (--series), then "rows" and the count of row-count mismatches."""
import math
import sys

import h5py
import numpy as np

from distance_direct import closed_log_row   # the one reference closure (FORMAT.md)


def row_terms(lg, k):
    """H, H_b, H(pi), s of one closed log row with the sink at position k."""
    p = np.exp(lg)
    s = float(p[k])
    c = math.fsum(np.delete(p, k))
    H = -math.fsum(p * lg)
    Hb = -s * math.log(s) - c * math.log(c) if 0 < s < 1 else 0.0
    lpi = np.delete(lg, k) - math.log(c)
    Hc = -math.fsum(np.exp(lpi) * lpi)
    return H, Hb, Hc, s


QSEL = None   # --rows-of: per sequence the set of kept queries


def checkpoint_rows(path, minq, delta):
    """{(s, l, h, t): (H, Hb, Hc, s)} over the kept rows of one file, and L."""
    with h5py.File(path, "r") as f:
        A = f["attention"][...]
        causal, k = int(f.attrs["causal"]), int(f.attrs["sink"])
        values = f.attrs["values"]
        logprob = (values.decode() if isinstance(values, bytes) else values) == "logprob"
        valid = f["valid"][...] if "valid" in f else np.ones((A.shape[0], A.shape[3]), int)
    S, L, H, T, _ = A.shape
    out = {}
    for s in range(S):
        for t in range(T):
            if QSEL is not None and t not in QSEL[s]:
                continue
            keys = list(range(t + 1)) if causal else [j for j in range(T) if valid[s, j]]
            if not valid[s, t] or (causal and t < minq) or k not in keys or len(keys) < 2:
                continue
            for l in range(L):
                for h in range(H):
                    out[(s, l, h, t)] = row_terms(closed_log_row(A[s, l, h, t, keys], logprob, delta), keys.index(k))
    return out, L


def rel(got, want, floor=0.0):
    """Relative difference; floor bounds the denominator from below for the drops, which are
    differences of entropies and may cancel to nearly 0 (their error scales with H, not with
    the difference)."""
    d = max(abs(want), floor)
    return abs(got - want) / d if d > 0 else abs(got)


def main():
    args = sys.argv[1:]
    minq, delta = 2, 1e-9
    if "--min-query" in args:
        i = args.index("--min-query"); minq = int(args[i + 1]); del args[i:i + 2]
    if "--zero-delta" in args:
        i = args.index("--zero-delta"); delta = float(args[i + 1]); del args[i:i + 2]
    if "--rows-of" in args:
        global QSEL
        i = args.index("--rows-of")
        with h5py.File(args[i + 1], "r") as g:
            QSEL = [set(int(x) for x in row) for row in g["query_pos"][...]]
        del args[i:i + 2]
    split_tsv, series_tsv, files = args[0], args[1], args[2:]
    ck = [checkpoint_rows(p, minq, delta) for p in files]
    L = ck[0][1]
    # series: per checkpoint, layer "all" then 0..L-1: rows H Hb content_term sink_mass
    want_series, meanH = [], []
    for rows, _ in ck:
        for layer in [None] + list(range(L)):
            sel = [v for key, v in rows.items() if layer is None or key[1] == layer]
            n = len(sel)
            want_series.append([n, math.fsum(v[0] for v in sel) / n, math.fsum(v[1] for v in sel) / n,
                                math.fsum((1 - v[3]) * v[2] for v in sel) / n, math.fsum(v[3] for v in sel) / n])
            if layer is None:
                meanH.append(want_series[-1][1])
    best = int(np.argmax(meanH))
    r0, r1 = ck[best][0], ck[-1][0]
    want_split = []
    for layer in [None] + list(range(L)):
        keys = [key for key in r0 if layer is None or key[1] == layer]
        n = len(keys)
        dH = sk = ct = h0 = h1 = 0.0
        terms = []
        for key in keys:
            (H0, Hb0, Hc0, s0), (H1, Hb1, Hc1, s1) = r0[key], r1[key]
            terms.append((H1 - H0, (Hb1 - Hb0) + ((1 - s1) - (1 - s0)) * 0.5 * (Hc0 + Hc1),
                          (1 - 0.5 * (s0 + s1)) * (Hc1 - Hc0), H0, H1))
        dH, sk, ct, h0, h1 = (math.fsum(t[i] for t in terms) for i in range(5))
        want_split.append([n, h0 / n, h1 / n, -dH / n, -sk / n, -ct / n])
    bad_rows = 0
    worst = {}

    def note(name, got, want, floor=0.0):
        worst[name] = max(worst.get(name, 0.0), rel(got, want, floor))

    got = [l.rstrip("\n").split("\t") for l in open(split_tsv) if not l.startswith("#")][1:]
    names = ["H_from", "H_to", "total_drop", "sink_drop", "content_drop"]
    for row, want in zip(got, want_split):
        bad_rows += int(float(row[3]) != want[0])
        for i, name in enumerate(names):
            note("split/" + name, float(row[4 + i]), want[1 + i], want[1] if i >= 2 else 0.0)
    bad_rows += len(got) != len(want_split)
    got = [l.rstrip("\n").split("\t") for l in open(series_tsv) if not l.startswith("#")][1:]
    names = ["H", "Hb", "content_term", "sink_mass"]
    for row, want in zip(got, want_series):
        bad_rows += int(float(row[2]) != want[0])
        for i, name in enumerate(names):
            note("series/" + name, float(row[3 + i]), want[1 + i])
    bad_rows += len(got) != len(want_series)
    for name, v in worst.items():
        print(name, v)
    print("rows", bad_rows)


main()

#!/usr/bin/python3
"""References for files of sampled query rows (extract --queries, docs/FORMAT.md "Sampled query
rows"): everything is taken from the file of every row, restricted here to the rows that the
sampled file's query_pos lists, so the reference shares nothing with the C code's row handling.

  sampled_rows.py rows FULL.h5 SAMPLED.h5
      the stored attention rows of SAMPLED equal FULL's rows at query_pos, bit for bit
  sampled_rows.py decompose FULL.dec.h5 SAMPLED.dec.h5 SAMPLED.h5 BYPOS.tsv [--min-query N]
      per-row datasets equal FULL's at query_pos bit for bit; head/* means and head/rows, and the
      --by-position table, recomputed from FULL's per-row values over the kept sampled rows
  sampled_rows.py clr FULL.clr.h5 SAMPLED.clr.h5
      clr, clr_content and sink_balance equal FULL's at query_pos bit for bit
  sampled_rows.py draws SAMPLED.h5 N SEED
      query_pos is the documented stratified draw (docs/EXTRACT.md): eligible positions (valid;
      t >= 2 when causal) in N strata, one uniform draw each from MT19937 (NumPy's legacy
      RandomState seeding is MT19937's init_genrand, as GSL's) with GSL's uniform_int rule
Prints one line per check ("name value") and exits 1 when any fails."""
import math
import sys

import h5py
import numpy as np

NAMES = ["sink_mass", "sink_balance", "content_dispersion", "entropy", "entropy_sink", "entropy_content",
         "entropy_content_weighted"]
bad = 0


def report(name, good, value=""):
    global bad
    print(name, "ok" if good else "FAIL", value)
    bad += not good


def same_bits(a, b):
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def restrict(x, qp, axis):
    """x[s, ..., qp[s], ...] along axis (the query axis) for every sequence s."""
    return np.stack([np.take(x[s], qp[s], axis=axis - 1) for s in range(x.shape[0])])


def rows(full, samp):
    with h5py.File(full, "r") as f, h5py.File(samp, "r") as g:
        qp = g["query_pos"][...]
        want = restrict(f["attention"][...], qp, 3)
        report("attention rows bit-identical", same_bits(want, g["attention"][...]), qp.shape)
        for k in ("tokens", "valid", "layer_index", "head_index"):
            if k in f or k in g:
                report(k + " equal", k in f and k in g and np.array_equal(f[k][...], g[k][...]))


def kept(causal, valid, t, minq):
    """METHODS §1 kept rows (sink 0, the default): valid query, t >= min-query, >= 3 parts."""
    if not valid[t]:
        return False
    if causal:
        return t >= minq and t + 1 >= 3
    return valid[0] and valid.sum() >= 3


def decompose(full, samp, samp_attn, bypos, minq):
    with h5py.File(full, "r") as f, h5py.File(samp, "r") as g, h5py.File(samp_attn, "r") as a:
        qp = a["query_pos"][...]
        report("query_pos carried", np.array_equal(g["query_pos"][...], qp))
        causal = int(a.attrs["causal"])
        S, L, H, T = (int(a.attrs[k]) for k in ("sequences", "layers", "heads", "tokens"))
        valid = a["valid"][...].astype(bool) if "valid" in a else np.ones((S, T), bool)
        for n in NAMES:
            x = restrict(f["row/" + n][...], qp, 3)
            report("row/" + n + " bit-identical", same_bits(x, g["row/" + n][...]))
        keep = np.array([[kept(causal, valid[s], int(t), minq) for t in qp[s]] for s in range(S)])
        n_rows = int(keep.sum())
        report("head/rows", np.all(g["head/rows"][...] == n_rows), n_rows)
        worst = 0.0
        for n in NAMES:
            x = restrict(f["row/" + n][...], qp, 3)            # [S, L, H, Q]
            want = np.array([[math.fsum(x[s, l, h, i] for s in range(S) for i in range(qp.shape[1]) if keep[s, i])
                              / n_rows for h in range(H)] for l in range(L)])
            got = g["head/" + n][...]
            worst = max(worst, float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-300))))
        report("head/* means over the kept sampled rows (1e-12 relative)", worst <= 1e-12, worst)
        # --by-position: bins [0,1), [2^(k-1), 2^k); per layer and all layers; mean over rows x heads
        lines = [l.rstrip("\n").split("\t") for l in open(bypos) if not l.startswith("#")]
        head, body = lines[0], lines[1:]
        cols = {"sink_mass": "sink_mass", "entropy": "entropy", "entropy_sink": "entropy_sink",
                "entropy_content": "entropy_content"}
        X = {c: restrict(f["row/" + c][...], qp, 3) for c in cols}
        want_rows = []
        for layer in list(range(L)) + ["all"]:
            ls = range(L) if layer == "all" else [layer]
            nbin = (T - 1).bit_length() + 1
            for b in range(nbin):
                lo, hi = (0, 1) if b == 0 else (1 << (b - 1), 1 << b)
                sel = [(s, i) for s in range(S) for i in range(qp.shape[1]) if keep[s, i] and lo <= qp[s, i] < hi]
                if not sel:
                    continue
                vals = [math.fsum(X[c][s, l, h, i] for (s, i) in sel for l in ls for h in range(H))
                        / (len(sel) * len(ls) * H) for c in cols]
                want_rows.append([str(layer), lo, hi, len(sel) * len(ls) * H] + vals)
        ok = len(body) == len(want_rows) and head[:4] == ["layer", "bin_lo", "bin_hi", "rows"]
        worst = 0.0
        for got, want in zip(body, want_rows):
            ok &= got[0] == want[0] and [int(v) for v in got[1:4]] == want[1:4]
            for gv, wv in zip(got[4:], want[4:]):
                worst = max(worst, abs(float(gv) - wv) / max(abs(wv), 1e-300))
        report("--by-position table (bins, rows; means within 1e-9 relative)", ok and worst <= 1e-9,
               "%d lines, %g" % (len(body), worst))


def clr(full, samp):
    with h5py.File(full, "r") as f, h5py.File(samp, "r") as g:
        qp = g["query_pos"][...]
        for n, axis in (("clr", 3), ("clr_content", 3), ("sink_balance", 3), ("attention", 3)):
            report(n + " bit-identical", same_bits(restrict(f[n][...], qp, axis), g[n][...]))


def gsl_uniform_int(bits, n):
    """gsl_rng_uniform_int for mt19937 (range 0 … 2^32−1): x / ⌊(2^32−1)/n⌋, redrawn while ≥ n."""
    scale = 0xFFFFFFFF // n
    while True:
        k = int(bits.random_raw()) // scale
        if k < n:
            return k


def draws(samp, n, seed):
    n, seed = int(n), int(seed)
    with h5py.File(samp, "r") as g:
        qp = g["query_pos"][...]
        S, T, causal = int(g.attrs["sequences"]), int(g.attrs["tokens"]), int(g.attrs["causal"])
        valid = g["valid"][...].astype(bool) if "valid" in g else np.ones((S, T), bool)
    want = []
    for s in range(S):
        e = [t for t in range(2 if causal else 0, T) if valid[s, t]]
        x = (seed * 2654435761 + s) % 2 ** 32
        bits = np.random.RandomState(x if x else 4357)._bit_generator
        E = len(e)
        want.append([e[i * E // n + gsl_uniform_int(bits, (i + 1) * E // n - i * E // n)] for i in range(n)])
    report("query_pos is the stratified draw", qp.shape == (S, n) and np.array_equal(qp, np.array(want)), qp.shape)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    minq = 2
    if "--min-query" in args:
        i = args.index("--min-query"); minq = int(args[i + 1]); del args[i:i + 2]
    if cmd == "rows":
        rows(*args)
    elif cmd == "decompose":
        decompose(*args, minq)
    elif cmd == "clr":
        clr(*args)
    elif cmd == "draws":
        draws(*args)
    else:
        sys.exit("unknown command " + cmd)
    sys.exit(1 if bad else 0)


main()

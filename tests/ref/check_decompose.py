#!/usr/bin/python3
"""Independent numpy check of `clr` and `decompose` outputs against the attention dataset.

Usage: check_decompose.py ATTN DEC [--clr CLR] [--sink K] [--min-query Q]
                          [--exclude-sink-query] [--zero-delta X] [--label NAME]
ATTN: an attention file (synth or clr output); DEC: decompose's output; CLR: clr's output.
Recomputes every row from METHODS §1–§2 and docs/FORMAT.md in float64 — gather the row's keys,
close the row in float64 (log rows: subtract the logsumexp; probability rows: divide by the sum,
then replace zeros multiplicatively with δ), then s, b, C⊥, H, H_b, H(π), (1−s)H(π) —
and the per-head means over the kept rows, and compares to |got − ref| ≤ 1e-9·|ref| + 1e-12 with
identical NaN patterns. Prints one TAP line per quantity."""
import argparse
import json
import math
import sys

import h5py
import numpy as np

REL, ABS = 1e-9, 1e-12
fails = 0


def tap(good, name, extra=""):
    global fails
    print(("ok - " if good else "not ok - ") + name + (f" ({extra})" if extra else ""))
    fails += not good


def compare(name, got, ref):
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        return tap(False, name, f"shape {got.shape} != {ref.shape}")
    nan_g, nan_r = np.isnan(got), np.isnan(ref)
    if not np.array_equal(nan_g, nan_r):
        idx = np.argwhere(nan_g != nan_r)[0]
        return tap(False, name, f"NaN pattern differs at {tuple(idx)}: got {got[tuple(idx)]}, "
                   f"want {ref[tuple(idx)]}")
    g, r = got[~nan_r], ref[~nan_r]
    err = np.abs(g - r)
    lim = REL * np.abs(r) + ABS
    bad = ~(err <= lim)
    if bad.any():
        i = np.argmax(bad)
        return tap(False, name, f"{bad.sum()} of {r.size} differ; e.g. got {g[i]!r} want {r[i]!r}")
    worst = float((err / lim).max()) if r.size else 0.0
    tap(True, name, f"{r.size} values, worst {worst:.2g} of tolerance")


def logsumexp(x):
    m = float(np.max(x))
    return m + math.log(math.fsum(np.exp(x - m)))


def gather(att, causal, valid_s, s_l_h, t, T, sink, logprob, delta):
    """The row's keys in order, as a closed float64 log row; the sink's position (−1: absent);
    the number of zero-replaced parts."""
    keys = [j for j in range(T) if (j <= t if causal else valid_s[j])]
    v = att[s_l_h + (t,)][keys].astype(np.float64)
    z = 0
    if logprob:
        v = v - logsumexp(v)
    else:
        # docs/FORMAT.md: close the stored row in double first, so δ is exact in the closed row
        v = v / math.fsum(v)
        zero = v <= 0
        z = int(zero.sum())
        v = np.log(np.where(zero, delta, v * (1 - z * delta)))
    return v, (keys.index(sink) if sink in keys else -1), z


def row_quantities(lg, k):
    """s, b, C⊥, H, H_b, H(π), (1−s)H(π) of one closed log row with sink at k (METHODS §2)."""
    D = lg.size
    lc = np.delete(lg, k)
    p = np.exp(lg)
    s = p[k]
    c = float(np.sum(np.exp(lc)))          # 1 − s without cancellation
    ln_c = math.log(c)
    b = math.sqrt((D - 1) / D) * (lg[k] - lc.mean())
    cperp = float(np.mean((lc - lc.mean()) ** 2))
    H = float(-np.sum(p * lg))
    Hb = -s * lg[k] - c * ln_c
    lpi = lc - ln_c
    Hc = float(-np.sum(np.exp(lpi) * lpi))
    return [s, b, cperp, H, Hb, Hc, c * Hc]


NAMES = ["sink_mass", "sink_balance", "content_dispersion", "entropy", "entropy_sink",
         "entropy_content", "entropy_content_weighted"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("attn")
    ap.add_argument("dec")
    ap.add_argument("--clr")
    ap.add_argument("--sink", type=int)
    ap.add_argument("--min-query", type=int, default=2)
    ap.add_argument("--exclude-sink-query", action="store_true")
    ap.add_argument("--zero-delta", type=float, default=1e-9)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    lab = (a.label + ": ") if a.label else ""

    fa = h5py.File(a.attn, "r")
    att = fa["attention"][...]
    S, L, H, T = (int(fa.attrs[k]) for k in ("sequences", "layers", "heads", "tokens"))
    causal = int(fa.attrs["causal"])
    logprob = fa.attrs["values"].decode() if isinstance(fa.attrs["values"], bytes) else fa.attrs["values"]
    logprob = logprob == "logprob"
    sink = a.sink if a.sink is not None else int(fa.attrs["sink"])
    valid = fa["valid"][...] if "valid" in fa else np.ones((S, T), dtype=np.uint8)

    rows = np.full((len(NAMES), S, L, H, T), np.nan)
    clr = np.full((S, L, H, T, T), np.nan)
    clrc = np.full((S, L, H, T, T), np.nan)
    bal = np.full((S, L, H, T), np.nan)
    hsum = np.zeros((len(NAMES), L, H))
    hrows = np.zeros((L, H), dtype=np.int64)
    zeros = 0
    for s in range(S):
        for l in range(L):
            for h in range(H):
                for t in range(T):
                    if not valid[s, t]:
                        continue
                    lg, k, z = gather(att, causal, valid[s], (s, l, h), t, T, sink, logprob,
                                      a.zero_delta)
                    zeros += z
                    keys = [j for j in range(T) if (j <= t if causal else valid[s, j])]
                    clr[s, l, h, t, keys] = lg - lg.mean()
                    if k < 0:
                        continue
                    if lg.size >= 2:
                        lc = np.delete(lg, k)
                        ck = [j for j in keys if j != sink]
                        clrc[s, l, h, t, ck] = lc - lc.mean()
                        bal[s, l, h, t] = math.sqrt((lg.size - 1) / lg.size) * (lg[k] - lc.mean())
                        q = row_quantities(lg, k)
                        rows[:, s, l, h, t] = q
                    kept = lg.size >= 3 and not (causal and t < a.min_query) \
                        and not (a.exclude_sink_query and t == sink)
                    if kept:
                        hsum[:, l, h] += q
                        hrows[l, h] += 1

    fd = h5py.File(a.dec, "r")
    for i, n in enumerate(NAMES):
        compare(f"{lab}row/{n} equals the numpy computation", fd["row/" + n][...], rows[i])
    with np.errstate(invalid="ignore"):
        head = hsum / np.where(hrows > 0, hrows, 0)
    for i, n in enumerate(NAMES):
        compare(f"{lab}head/{n} equals the mean over kept rows", fd["head/" + n][...], head[i])
    tap(np.array_equal(fd["head/rows"][...], hrows), f"{lab}head/rows counts the kept rows",
        f"got {fd['head/rows'][...].tolist()} want {hrows.tolist()}")
    # the entropy identity on the program's own numbers
    r = {n: fd["row/" + n][...] for n in NAMES}
    compare(f"{lab}row entropy = entropy_sink + entropy_content_weighted", r["entropy"],
            r["entropy_sink"] + r["entropy_content_weighted"])
    prov = json.loads(fd.attrs["provenance"])
    opts = prov.get("options", {})
    want = {"sink": sink, "min_query": a.min_query, "exclude_sink_query": int(a.exclude_sink_query),
            "zero_delta": a.zero_delta}
    tap(all(opts.get(k) == v for k, v in want.items()) and prov.get("program") == "decompose",
        f"{lab}provenance records program and options", f"options {opts}")
    if "zero_replaced" in fd.attrs:
        tap(int(fd.attrs["zero_replaced"]) == zeros, f"{lab}zero_replaced counts replaced parts",
            f"got {int(fd.attrs['zero_replaced'])} want {zeros}")

    if a.clr:
        fc = h5py.File(a.clr, "r")
        tap(np.array_equal(fc["attention"][...], att, equal_nan=True),
            f"{lab}clr copies the attention dataset bit for bit")
        compare(f"{lab}clr/clr equals the numpy clr", fc["clr"][...], clr)
        compare(f"{lab}clr/clr_content equals the numpy clr of the content", fc["clr_content"][...], clrc)
        compare(f"{lab}clr/sink_balance equals the numpy sink balance", fc["sink_balance"][...], bal)
    return 1 if fails else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:   # a crash must show as a failure, not as silence
        tap(False, "check_decompose.py " + " ".join(sys.argv[1:]), f"{type(e).__name__}: {e}")
        sys.exit(1)

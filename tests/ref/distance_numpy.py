#!/usr/bin/python3
"""Vectorised NumPy head distances (METHODS §3-§4): for each kept row (s, t) all head pairs at
once by broadcasting over an N×N×D block; the speed reference of tests/bench/distance.sh.
Usage: distance_numpy.py ATTN.h5 [--seqs A:B] [--compare DIST.h5]
Rows: the default kept rule (--min-query 2, sink query kept), closed from the stored float32
values as docs/FORMAT.md defines (zero replacement with δ = 1e-9 for probability input).
Prints "rows R seconds X rows_per_s Y cpu_seconds C rows_per_cpu_s Z"; with --compare also "name max|diff|" per matrix."""
import sys
import time
import h5py
import numpy as np

NAMES = ["cos_keep", "cos_drop", "js_keep", "js_drop", "euc_keep", "euc_drop",
         "aitchison", "content_full", "content_drop", "sink_balance"]


def xlogx(m):
    return np.where(m > 0, m * np.log(np.where(m > 0, m, 1.0)), 0.0)


def row_pairs(R, k):
    """R: N×D log rows (sink at column k). Returns the 10 N×N matrices."""
    N, D = R.shape
    c = np.ones(D, bool); c[k] = False
    P = np.exp(R)
    lse = np.log(np.exp(R[:, c]).sum(1))
    Lpi = R[:, c] - lse[:, None]
    PI = np.exp(Lpi)
    C = R - R.mean(1, keepdims=True)
    e = np.full(D, -1 / np.sqrt(D * (D - 1))); e[k] = np.sqrt((D - 1) / D)
    b = C @ e
    V = C - b[:, None] * e[None, :]
    W = Lpi - Lpi.mean(1, keepdims=True)

    def cos(X):
        n = np.linalg.norm(X, axis=1)
        return 1 - (X @ X.T) / np.outer(n, n)

    def euc(X):
        return np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(2))

    def js(X):
        h = -(xlogx(X)).sum(1)
        M = 0.5 * (X[:, None, :] + X[None, :, :])
        return np.maximum(0, (-(xlogx(M)).sum(2) - 0.5 * (h[:, None] + h[None, :])) / np.log(2))

    out = [cos(P), cos(PI), js(P), js(PI), euc(P), euc(PI), euc(C), euc(V), euc(W),
           np.abs(b[:, None] - b[None, :])]
    for o in out:
        np.fill_diagonal(o, 0)
    return out


def closed_log_rows(X, logprob, delta):
    """N×D stored values (float32) as closed float64 log rows (docs/FORMAT.md)."""
    X = X.astype(np.float64)
    if logprob:
        m = X.max(1, keepdims=True)
        return X - (m + np.log(np.exp(X - m).sum(1, keepdims=True)))
    P = X / X.sum(1, keepdims=True)
    z = (P <= 0).sum(1, keepdims=True)
    return np.log(np.where(P <= 0, delta, P * (1 - z * delta)))


def main():
    path = sys.argv[1]
    a_, b_ = 0, None
    if "--seqs" in sys.argv:
        a_, b_ = map(int, sys.argv[sys.argv.index("--seqs") + 1].split(":"))
    with h5py.File(path, "r") as f:
        causal, k = int(f.attrs["causal"]), int(f.attrs["sink"])
        values = f.attrs["values"]
        logprob = (values.decode() if isinstance(values, bytes) else values) == "logprob"
        ds = f["attention"]
        valid = f["valid"][...] if "valid" in f else np.ones((ds.shape[0], ds.shape[3]), int)
        S, L, H, T, _ = ds.shape
        b_ = S if b_ is None else b_
        N = L * H
        acc = np.zeros((10, N, N))
        rows = 0
        t0, c0 = time.perf_counter(), time.process_time()
        for s in range(a_, b_):
            A = ds[s].astype(np.float64).reshape(N, T, T)
            for t in range(2 if causal else 0, T):
                keys = np.arange(t + 1) if causal else np.nonzero(valid[s])[0]
                if not valid[s, t] or k not in keys or len(keys) < 3:
                    continue
                kk = int(np.nonzero(keys == k)[0][0])
                acc += np.array(row_pairs(closed_log_rows(A[:, t, keys], logprob, 1e-9), kk))
                rows += 1
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
    print(f"rows {rows} seconds {dt:.3f} rows_per_s {rows / dt:.2f} cpu_seconds {dc:.3f} rows_per_cpu_s {rows / dc:.2f}")
    if "--compare" in sys.argv:
        with h5py.File(sys.argv[sys.argv.index("--compare") + 1], "r") as g:
            for m, name in enumerate(NAMES):
                print(name, float(np.max(np.abs(g["sum/" + name][...] - acc[m]))))


main()

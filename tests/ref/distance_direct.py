#!/usr/bin/python3
"""Direct double-precision head distances (METHODS §3-§4), one row pair at a time, straight from
the definitions, for checking bin/distance on small files.
Usage: distance_direct.py ATTN.h5 DIST.h5 [--min-query N] [--exclude-sink-query]
Prints one line per dataset: name and max |difference| against DIST.h5."""
import sys
import h5py
import numpy as np

METRICS = ["cos_keep", "cos_drop", "js_keep", "js_drop", "euc_keep", "euc_drop",
           "aitchison", "content_full", "content_drop", "sink_balance"]


def clr(l):
    return l - l.mean()


def js_bits(p, q):
    m = (p + q) / 2
    def kl(a):
        nz = a > 0
        return np.sum(a[nz] * (np.log(a[nz]) - np.log(m[nz])))
    return (0.5 * kl(p) + 0.5 * kl(q)) / np.log(2)


def cosd(p, q):
    return 1 - p @ q / (np.linalg.norm(p) * np.linalg.norm(q))


def pair(lp, lq, k):
    """All metrics for two log rows (full D parts) with sink index k."""
    p, q = np.exp(lp), np.exp(lq)
    c = np.ones(len(lp), bool); c[k] = False
    pi, qi = p[c] / p[c].sum(), q[c] / q[c].sum()
    D = len(lp)
    # content distance by projection of the full clr onto the complement of the balance direction
    e = np.full(D, -1 / np.sqrt(D * (D - 1))); e[k] = np.sqrt((D - 1) / D)
    cp, cq = clr(lp), clr(lq)
    bp, bq = cp @ e, cq @ e
    vp, vq = cp - bp * e, cq - bq * e
    lpi, lqi = np.log(pi), np.log(qi)
    return [cosd(p, q), cosd(pi, qi), js_bits(p, q), js_bits(pi, qi),
            np.linalg.norm(p - q), np.linalg.norm(pi - qi), np.linalg.norm(cp - cq),
            np.linalg.norm(vp - vq), np.linalg.norm(clr(lpi) - clr(lqi)), abs(bp - bq)]


def main():
    attn, dist = sys.argv[1], sys.argv[2]
    minq = int(sys.argv[sys.argv.index("--min-query") + 1]) if "--min-query" in sys.argv else 2
    excl = "--exclude-sink-query" in sys.argv
    with h5py.File(attn, "r") as f:
        A = f["attention"][...].astype(np.float64)
        causal, k = int(f.attrs["causal"]), int(f.attrs["sink"])
        logprob = f.attrs["values"] in ("logprob", b"logprob")
        valid = f["valid"][...] if "valid" in f else np.ones(A.shape[0:1] + A.shape[3:4], int)
    S, L, H, T, _ = A.shape
    N = L * H
    acc = np.zeros((len(METRICS), N, N))
    sink = np.zeros(N)
    rows = 0
    for s in range(S):
        for t in range(T):
            keys = np.arange(t + 1) if causal else np.nonzero(valid[s])[0]
            if not valid[s, t] or (causal and t < minq) or (excl and t == k) or k not in keys or len(keys) < 3:
                continue
            R = A[s].reshape(N, T, T)[:, t, keys]
            if not logprob:
                R = np.log(R)
            kk = int(np.nonzero(keys == k)[0][0])
            rows += 1
            sink += np.exp(R[:, kk])
            for a in range(N):
                for b in range(a + 1, N):
                    v = pair(R[a], R[b], kk)
                    for m in range(len(METRICS)):
                        acc[m, a, b] += v[m]
                        acc[m, b, a] += v[m]
    with h5py.File(dist, "r") as f:
        agg = f.attrs["aggregate"]
        agg = agg.decode() if isinstance(agg, bytes) else agg
        for m, name in enumerate(METRICS):
            want = acc[m] if agg == "sum" else acc[m] / rows
            print(name, float(np.max(np.abs(f["distance/" + name][...] - want))))
        print("head_sink_mass", float(np.max(np.abs(f["head_sink_mass"][...] - sink / rows))))
        print("rows", abs(int(f["rows"][0]) - rows))


main()

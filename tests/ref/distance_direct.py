#!/usr/bin/python3
"""Direct double-precision head distances (METHODS §3-§4), one row pair at a time, straight from
the definitions, for checking bin/distance on small files.
Usage: distance_direct.py ATTN.h5 DIST.h5 [--min-query N] [--exclude-sink-query] [--zero-delta X]
                         [--rows-of SAMPLED.h5]
--rows-of: keep only the queries that SAMPLED.h5's query_pos lists (a file of every row, ATTN,
restricted to the rows of a sampled extraction: the reference of distance on SAMPLED).
Rows are built from the stored float32 values as docs/FORMAT.md defines them, without any of
the C code: log rows are closed in float64 (ℓ − logsumexp ℓ, the sum taken with math.fsum);
probability rows are closed (p / Σp), their zeros replaced multiplicatively (δ, the others
times 1 − zδ) and then logged.
Prints one line per dataset (distance/<metric>, sum/<metric>, and rms/<metric>, sum_sq/<metric>
when the file has them, head_sink_mass): name and the
largest relative difference |got − want| / |want| over its entries (absolute where want = 0),
then "rows" and the difference in the kept-row count."""
import math
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


def closed_log_row(v, logprob, delta):
    """One row's stored values (float32, the row's keys only) as a closed float64 log row."""
    v = v.astype(np.float64)
    if logprob:
        m = float(v.max())
        return v - (m + math.log(math.fsum(math.exp(x - m) for x in v)))
    p = v / math.fsum(v)
    z = int(np.sum(p <= 0))
    return np.log(np.where(p <= 0, delta, p * (1 - z * delta)))


def max_rel(got, want):
    err = np.abs(got - want)
    scale = np.where(want != 0, np.abs(want), 1.0)
    return float(np.max(err / scale))


def main():
    attn, dist = sys.argv[1], sys.argv[2]
    minq = int(sys.argv[sys.argv.index("--min-query") + 1]) if "--min-query" in sys.argv else 2
    excl = "--exclude-sink-query" in sys.argv
    delta = float(sys.argv[sys.argv.index("--zero-delta") + 1]) if "--zero-delta" in sys.argv else 1e-9
    qsel = None
    if "--rows-of" in sys.argv:
        with h5py.File(sys.argv[sys.argv.index("--rows-of") + 1], "r") as g:
            qsel = [set(int(x) for x in row) for row in g["query_pos"][...]]
    with h5py.File(attn, "r") as f:
        A = f["attention"][...]
        causal, k = int(f.attrs["causal"]), int(f.attrs["sink"])
        logprob = f.attrs["values"] in ("logprob", b"logprob")
        valid = f["valid"][...] if "valid" in f else np.ones(A.shape[0:1] + A.shape[3:4], int)
    S, L, H, T, _ = A.shape
    N = L * H
    acc = np.zeros((len(METRICS), N, N))
    acc2 = np.zeros((len(METRICS), N, N))    # sums of squared per-row distances (rms/, sum_sq/)
    sink = np.zeros(N)
    rows = 0
    for s in range(S):
        for t in range(T):
            if qsel is not None and t not in qsel[s]:
                continue
            keys = np.arange(t + 1) if causal else np.nonzero(valid[s])[0]
            if not valid[s, t] or (causal and t < minq) or (excl and t == k) or k not in keys or len(keys) < 3:
                continue
            R = np.array([closed_log_row(x, logprob, delta) for x in A[s].reshape(N, T, T)[:, t, keys]])
            kk = int(np.nonzero(keys == k)[0][0])
            rows += 1
            sink += np.exp(R[:, kk])
            for a in range(N):
                for b in range(a + 1, N):
                    v = pair(R[a], R[b], kk)
                    for m in range(len(METRICS)):
                        acc[m, a, b] += v[m]
                        acc[m, b, a] += v[m]
                        acc2[m, a, b] += v[m] * v[m]
                        acc2[m, b, a] += v[m] * v[m]
    with h5py.File(dist, "r") as f:
        agg = f.attrs["aggregate"]
        agg = agg.decode() if isinstance(agg, bytes) else agg
        for m, name in enumerate(METRICS):
            want = acc[m] if agg == "sum" else acc[m] / rows
            print("distance/" + name, max_rel(f["distance/" + name][...], want))
            print("sum/" + name, max_rel(f["sum/" + name][...], acc[m]))
            if "rms" in f:
                print("rms/" + name, max_rel(f["rms/" + name][...], np.sqrt(acc2[m] / rows)))
                print("sum_sq/" + name, max_rel(f["sum_sq/" + name][...], acc2[m]))
        print("head_sink_mass", max_rel(f["head_sink_mass"][...], sink / rows))
        print("rows", abs(int(f["rows"][0]) - rows))


if __name__ == "__main__":
    main()

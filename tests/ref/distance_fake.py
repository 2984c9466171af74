#!/usr/bin/python3
"""Hand-made inputs for tests/t-analysis*.sh, written with h5py independently of the C writers.
  distance_fake.py dist OUT L H MATRIX.txt [SINK,SINK,...]
      a distance file (docs/ANALYSIS.md) whose every distance/<metric> is the N×N matrix in
      MATRIX.txt (whitespace separated rows); head_sink_mass from the list (default 0).
  distance_fake.py bad VALID.h5 DIR
      bad copies of a valid distance file: not_hdf5 empty truncated missing_dataset wrong_shape nan
      (a distance matrix) nan_sink (head_sink_mass)
  distance_fake.py theorem1 OUT [sA sB S T seed]
      the Theorem-1 attention file: one layer, heads A, B, C; A and B share content pi, sink
      masses sA and sB; C has sink mass sA and pi reversed (causal, sink 0, log-probabilities).
  distance_fake.py retoken IN OUT
      copy of an attention file with one token id changed."""
import os
import shutil
import sys

import h5py
import numpy as np

METRICS = ["cos_keep", "cos_drop", "js_keep", "js_drop", "euc_keep", "euc_drop",
           "aitchison", "content_full", "content_drop", "sink_balance"]


def write_dist(out, L, H, M, sink):
    N = L * H
    with h5py.File(out, "w") as f:
        f.attrs["format"] = np.bytes_("attncoda-distance")
        f.attrs["format_version"] = np.int64(1)
        f.attrs["layers"] = np.int64(L)
        f.attrs["heads"] = np.int64(H)
        f.attrs["model"] = np.bytes_("fake")
        f.attrs["aggregate"] = np.bytes_("mean")
        f.attrs["provenance"] = np.bytes_('{"program":"distance_fake.py"}')
        for m in METRICS:
            f["distance/" + m] = M
            f["sum/" + m] = M
        f["rows"] = np.array([1], np.int32)
        f["head_sink_mass"] = np.asarray(sink, float)
        f["head_layer"] = np.repeat(np.arange(L), H).astype(np.int32)
        f["head_index"] = np.tile(np.arange(H), L).astype(np.int32)


def dist(args):
    out, L, H, mfile = args[0], int(args[1]), int(args[2]), args[3]
    M = np.loadtxt(mfile, ndmin=2)
    sink = [float(x) for x in args[4].split(",")] if len(args) > 4 else [0.0] * (L * H)
    write_dist(out, L, H, M, sink)


def bad(args):
    valid, d = args
    os.makedirs(d, exist_ok=True)
    p = lambda n: os.path.join(d, n + ".h5")
    with open(p("not_hdf5"), "w") as f:
        f.write("plain text, not HDF5\n" * 10)
    open(p("empty"), "wb").close()
    whole = open(valid, "rb").read()
    open(p("truncated"), "wb").write(whole[: len(whole) // 2])
    for name in ("missing_dataset", "wrong_shape", "nan", "nan_sink"):
        shutil.copy(valid, p(name))
    with h5py.File(p("missing_dataset"), "a") as f:
        del f["distance/js_keep"]
    with h5py.File(p("wrong_shape"), "a") as f:
        x = f["head_sink_mass"][...]
        del f["head_sink_mass"]
        f["head_sink_mass"] = np.concatenate([x, [0.5]])
    with h5py.File(p("nan"), "a") as f:
        for m in METRICS:
            x = f["distance/" + m][...]
            x[0, 1] = x[1, 0] = np.nan
            f["distance/" + m][...] = x
    with h5py.File(p("nan_sink"), "a") as f:
        x = f["head_sink_mass"][...]
        x[1] = np.nan
        f["head_sink_mass"][...] = x


def theorem1(args):
    sA = float(args[1]) if len(args) > 1 else 0.9
    sB = float(args[2]) if len(args) > 2 else 0.3
    S = int(args[3]) if len(args) > 3 else 4
    T = int(args[4]) if len(args) > 4 else 32
    rng = np.random.default_rng(int(args[5]) if len(args) > 5 else 1)
    A = np.full((S, 1, 3, T, T), -np.inf)
    for s in range(S):
        for t in range(T):
            n = t  # content parts of row t (keys 1..t)
            if n == 0:
                A[s, 0, :, t, 0] = 0.0
                continue
            pi = rng.dirichlet(np.ones(n))
            lpi = np.log(pi)
            for h, (sm, rev) in enumerate([(sA, False), (sB, False), (sA, True)]):
                A[s, 0, h, t, 0] = np.log(sm)
                A[s, 0, h, t, 1:t + 1] = np.log1p(-sm) + (lpi[::-1] if rev else lpi)
    with h5py.File(args[0], "w") as f:
        for k, v in {"format": np.bytes_("attncoda-attention"), "format_version": np.int64(1),
                     "model": np.bytes_("theorem1-h5py"), "family": np.bytes_("synth"),
                     "text": np.bytes_("tests/ref/distance_fake.py"), "causal": np.int64(1),
                     "sink": np.int64(0), "sequences": np.int64(S), "layers": np.int64(1),
                     "heads": np.int64(3), "tokens": np.int64(T), "values": np.bytes_("logprob"),
                     "seed": np.int64(1),
                     "provenance": np.bytes_('{"program":"distance_fake.py","inputs":[],"options":{}}')}.items():
            f.attrs[k] = v
        f.create_dataset("attention", data=A.astype(np.float32), chunks=(1, 1, 3, T, T))
        f.create_dataset("tokens", data=np.zeros((S, T), np.int32))


def retoken(args):
    shutil.copy(args[0], args[1])
    with h5py.File(args[1], "a") as f:
        if "tokens" in f:
            t = f["tokens"][...]
            t[0, 1] += 1
            f["tokens"][...] = t
        else:
            S, T = int(f.attrs["sequences"]), int(f.attrs["tokens"])
            t = np.zeros((S, T), np.int32)
            t[0, 1] = 1
            f["tokens"] = t


{"dist": dist, "bad": bad, "theorem1": theorem1, "retoken": retoken}[sys.argv[1]](sys.argv[2:])

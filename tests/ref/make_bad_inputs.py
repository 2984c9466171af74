#!/usr/bin/python3
"""Write a valid attention file (docs/FORMAT.md) and a set of bad ones derived from it.

Usage: make_bad_inputs.py DIR
Writes DIR/valid.h5 and DIR/valid_prob.h5 (controls every reader must accept) and one file per
defect: not_hdf5 empty truncated missing_attention wrong_rank wrong_shape nan inf negative_prob
bad_sum_prob bad_logsumexp missing_attr valid_not_01 causal_left_pad negative_head_index
layer_index_length huge_block no_data corrupt_chunk (each DIR/<name>.h5). Each bad file differs from a valid
one by exactly that defect, so a reader that rejects it rejects it for that reason.
The file list (one name a line, controls excluded) goes to DIR/bad.list.
The layout is written here from the format description, independently of the C writer.

Usage: make_bad_inputs.py --sampled DIR
Files of sampled query rows (docs/FORMAT.md "Sampled query rows"): DIR/sampled_valid.h5 (the
control: query_pos [S,3] and attention [S,L,H,3,T]) and one file per query_pos defect:
qpos_unordered qpos_outside qpos_rows_mismatch qpos_too_many qpos_rank (names in
DIR/sampled.list)."""
import os
import sys

import h5py
import numpy as np

S, L, H, T = 2, 1, 2, 6


def log_rows(rng):
    """Causal log-probability rows [S,L,H,T,T]: row t over keys 0..t, -inf above the diagonal."""
    z = rng.normal(0.0, 1.5, size=(S, L, H, T, T))
    z[..., 0] += 2.0                                   # a visible sink at key 0
    mask = np.tril(np.ones((T, T), dtype=bool))
    z = np.where(mask, z, -np.inf)
    m = z.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True))
    return (z - lse).astype(np.float32)


def write(path, att, values="logprob", drop_attr=None, attrs_override=None, attention=True, extra=None,
          sparse_shape=None, query_pos=None):
    """Write an attention file; drop_attr leaves out one root attribute; extra: more datasets
    {name: array}; sparse_shape: 'attention' declared with that shape and no chunk written;
    query_pos: the sampled rows' positions."""
    a = {
        "format": np.bytes_("attncoda-attention"), "format_version": np.int64(1),
        "model": np.bytes_("badinput-reference"), "family": np.bytes_("synth"),
        "text": np.bytes_("tests/ref/make_bad_inputs.py"), "causal": np.int64(1),
        "sink": np.int64(0), "sequences": np.int64(S), "layers": np.int64(L),
        "heads": np.int64(H), "tokens": np.int64(T), "values": np.bytes_(values),
        "seed": np.int64(7),
        "provenance": np.bytes_('{"program":"make_bad_inputs.py","inputs":[],"options":{}}'),
    }
    a.update(attrs_override or {})
    with h5py.File(path, "w") as f:
        for k, v in a.items():
            if k != drop_attr:
                f.attrs[k] = v
        if sparse_shape:
            f.create_dataset("attention", shape=sparse_shape, dtype=np.float32,
                             chunks=(1, 1, 1, 1, sparse_shape[-1]), compression="gzip")
        elif attention:
            chunks = (1,) * (att.ndim - 3) + att.shape[-3:] if att.ndim >= 3 else None
            f.create_dataset("attention", data=att, chunks=chunks, compression="gzip")
        f.create_dataset("tokens", data=np.arange(S * T, dtype=np.int32).reshape(S, T))
        for k, v in (extra or {}).items():
            f.create_dataset(k, data=v)
        if query_pos is not None:
            f.create_dataset("query_pos", data=np.asarray(query_pos, dtype=np.int32))


def sampled(d):
    """The control and one file per query_pos defect; rows are those of log_rows at the positions."""
    os.makedirs(d, exist_ok=True)
    lg = log_rows(np.random.default_rng(20261206))
    qp = np.array([[2, 4, 5], [3, 4, 5]])
    rows = np.stack([lg[s][:, :, qp[s], :] for s in range(S)])
    p = lambda name: os.path.join(d, name + ".h5")
    write(p("sampled_valid"), rows, query_pos=qp)
    bad = []

    def add(name):
        bad.append(name)
        return p(name)

    write(add("qpos_unordered"), rows, query_pos=[[2, 5, 4], [3, 4, 5]])
    write(add("qpos_outside"), rows, query_pos=[[2, 4, 5], [3, 4, T]])
    write(add("qpos_rows_mismatch"), rows, query_pos=[[2, 4], [3, 5]])
    many = np.stack([lg[s][:, :, [0, 1, 2, 3, 4, 5, 5], :] for s in range(S)])
    write(add("qpos_too_many"), many, query_pos=[list(range(T + 1))] * S)
    write(add("qpos_rank"), rows, query_pos=qp.reshape(-1))
    with open(os.path.join(d, "sampled.list"), "w") as f:
        f.write("\n".join(bad) + "\n")


def main():
    if sys.argv[1] == "--sampled":
        sampled(sys.argv[2])
        return
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(20261129)
    lg = log_rows(rng)
    pr = np.exp(lg.astype(np.float64)).astype(np.float32)   # exp(-inf) = 0 above the diagonal
    p = lambda name: os.path.join(d, name + ".h5")

    write(p("valid"), lg)
    write(p("valid_prob"), pr, values="prob")

    bad = []

    def add(name):
        bad.append(name)
        return p(name)

    with open(add("not_hdf5"), "w") as f:
        f.write("this is a text file, not HDF5\n" * 20)
    open(add("empty"), "wb").close()
    with open(p("valid"), "rb") as f:
        whole = f.read()
    with open(add("truncated"), "wb") as f:
        f.write(whole[: len(whole) // 2])
    write(add("missing_attention"), lg, attention=False)
    write(add("wrong_rank"), lg.reshape(S * L, H, T, T))
    write(add("wrong_shape"), lg, attrs_override={"heads": np.int64(H + 1)})
    x = lg.copy(); x[1, 0, 1, 4, 2] = np.nan                 # kept entry: key 2 ≤ query 4
    write(add("nan"), x)
    x = lg.copy(); x[0, 0, 0, 3, 1] = np.inf
    write(add("inf"), x)
    x = pr.copy(); x[1, 0, 0, 5, 3] = -0.05; x[1, 0, 0, 5, 0] += 0.05   # row still sums to 1
    write(add("negative_prob"), x, values="prob")
    x = pr.copy(); x[0, 0, 1, 4, :] *= np.float32(1.01)
    write(add("bad_sum_prob"), x, values="prob")
    x = lg.copy(); x[0, 0, 1, 5, :6] += np.float32(0.01)
    write(add("bad_logsumexp"), x)
    write(add("missing_attr"), lg, drop_attr="layers")
    ones = np.ones((S, T), dtype=np.int32)
    v = ones.copy(); v[1, 3] = 2
    write(add("valid_not_01"), lg, extra={"valid": v})
    v = ones.copy(); v[0, 0] = 0                              # padding before real tokens
    write(add("causal_left_pad"), lg, extra={"valid": v})
    write(add("negative_head_index"), lg, extra={"head_index": np.array([0, -3], dtype=np.int32)})
    write(add("layer_index_length"), lg, extra={"layer_index": np.array([0, 1], dtype=np.int32)})
    # H = T = 4096: one block would be 2^36 floats (256 GiB); a few kB on disk, no chunk written
    write(add("huge_block"), lg, sparse_shape=(S, L, 4096, 4096, 4096),
          attrs_override={"heads": np.int64(4096), "tokens": np.int64(4096)})
    write(add("no_data"), lg, sparse_shape=(S, L, H, T, T))    # every element the fill value
    # the deflate stream of block (1, 0) overwritten: decompose reads that block ahead on an
    # OpenMP thread, where HDF5's error printing used to be still on (a 19-line stack)
    write(p("corrupt_chunk"), lg)
    with h5py.File(p("corrupt_chunk"), "r") as f:
        info = f["attention"].id.get_chunk_info(1)
    with open(add("corrupt_chunk"), "r+b") as f:
        f.seek(info.byte_offset + 2)
        f.write(b"\xff" * (info.size - 4))

    with open(os.path.join(d, "bad.list"), "w") as f:
        f.write("\n".join(bad) + "\n")


if __name__ == "__main__":
    main()

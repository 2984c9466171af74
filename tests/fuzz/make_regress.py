#!/usr/bin/python3
"""The reproducers of issue 11 (and of anything make fuzz finds), replayed by tests/t-fuzz-regress.sh.

  make_regress.py files DIR SHARED   (re)writes the committed ones: tests/fuzz/regress/
  make_regress.py h5 VALID.h5 DIST.h5 DIR
                                     HDF5 ones, rewritten with h5py from files the test makes at run
                                     time: attributes of the wrong shape, class or size

Each file differs from a valid input by one defect; its name says which. config/*.json are the keys
a test merges into a tiny checkpoint's config.json (null removes a key)."""
import json
import os
import struct
import sys

import numpy as np


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def files(d, shared):
    # config.json values that must be refused, naming the key and the value
    cfg = {
        "vocab_2p32": {"vocab_size": 2**32 + 300},
        "layers_frac": {"n_layer": 1.5},
        "layers_true": {"n_layer": True},
        "eps_negative": {"layer_norm_epsilon": -1e-5},
        "heads_not_dividing": {"n_head": 5},
        "bert_pad_outside": {"pad_token_id": 1000},
    }
    for k, v in cfg.items():
        write(os.path.join(d, "config", k + ".json"), json.dumps(v))
    # text inputs: a NUL hides what follows it from a C-string parser
    write(os.path.join(d, "ids_nul.txt"), b"1 2 3 4\n5 6 7 8\x00 99999\n")
    write(os.path.join(d, "mask_nul.txt"), b"# mask\n0 1\x00\n99 99\n")
    write(os.path.join(d, "mask_empty.txt"), b"")
    recipe = open("configs/kjv-gpt2-s.conf", "rb").read()
    write(os.path.join(d, "recipe_nul.conf"), recipe + b"\x00\nlayers = 99999\nno_such_key = 1\n")
    # llama2.c tokenizer: too few pieces for the model, trailing bytes, a NaN score
    tok = open(os.path.join(shared, "data/models/stories260K/tok512.bin"), "rb").read()
    pos, starts = 4, []
    while pos < len(tok):
        starts.append(pos)
        n = struct.unpack_from("<i", tok, pos + 4)[0]
        pos += 8 + n
    write(os.path.join(d, "tok100.bin"), tok[:starts[100]])
    write(os.path.join(d, "tok_trailing.bin"), tok + b"\x01\x02")
    nan = bytearray(tok)
    nan[starts[7]:starts[7] + 4] = struct.pack("<f", float("nan"))
    write(os.path.join(d, "tok_nan_score.bin"), bytes(nan))
    # tokenizer.json with two tokens on one id
    t = json.load(open("tests/golden/tok/byte/tokenizer.json"))
    v = t["model"]["vocab"]
    v["zz-duplicate"] = next(iter(v.values()))
    write(os.path.join(d, "tokenizer_dup_id", "tokenizer.json"), json.dumps(t))
    # GGUF: tiny llama with a SentencePiece vocabulary; one defect each
    sys.path.insert(0, "tests/ref")
    import make_gguf as mg
    rng = np.random.default_rng(11)
    kvs, tensors, _ = mg.tiny("llama", rng)
    V = 48
    voc = [("tokenizer.ggml.model", mg.STR, "llama"),
           ("tokenizer.ggml.tokens", mg.ARR, (mg.STR, ["<unk>", "<s>", "</s>"] + ["t%d" % i for i in range(V - 3)]))]
    scores = [0.0] * V
    types = [2, 3, 3] + [1] * (V - 3)

    def gguf(name, kv):
        write(os.path.join(d, name + ".gguf"), mg.gguf_bytes(kv, tensors))
    sc = lambda s: ("tokenizer.ggml.scores", mg.ARR, (mg.F32, s))
    ty = lambda t: ("tokenizer.ggml.token_type", mg.ARR, (mg.I32, t))
    gguf("gguf_nan_score", kvs + voc + [sc(scores[:5] + [float("nan")] + scores[6:]), ty(types)])
    gguf("gguf_token_type_262", kvs + voc + [sc(scores), ty(types[:9] + [262] + types[10:])])
    gguf("gguf_block_count_f32", [(k, mg.F32, 1.75) if k == "llama.block_count" else (k, t, x) for k, t, x in kvs]
         + voc + [sc(scores), ty(types)])


def h5(valid, dist, d):
    import h5py
    import shutil
    os.makedirs(d, exist_ok=True)

    def variant(src, name, key, value):
        out = os.path.join(d, name + ".h5")
        shutil.copy(src, out)
        with h5py.File(out, "r+") as f:
            if key == "valid":
                S, T = f["attention"].shape[0], f["attention"].shape[3]
                f.create_dataset("valid", data=np.zeros((S, T), np.int32))
            else:
                del f.attrs[key]
                f.attrs[key] = value
    variant(valid, "attr_sequences_array", "sequences", np.arange(4096, dtype=np.int64))
    variant(valid, "attr_layers_pair", "layers", np.array([1, 2], dtype=np.int64))
    variant(valid, "attr_format_strings", "format", np.array([b"attncoda-attention"] * 64, dtype="S64"))
    variant(valid, "attr_layers_float", "layers", np.float64(1.0))
    variant(valid, "attr_values_int", "values", np.int64(3))
    variant(valid, "valid_all_zero", "valid", None)
    variant(dist, "dist_heads_array", "heads", np.array([2, 2, 2], dtype=np.int64))


if __name__ == "__main__":
    if sys.argv[1] == "files":
        files(sys.argv[2], sys.argv[3])
    else:
        h5(*sys.argv[2:5])

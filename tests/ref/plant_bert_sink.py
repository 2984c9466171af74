#!/usr/bin/python3
"""Plant a [CLS] + [SEP] sink in a tiny BERT checkpoint written by make_tiny.py (F32, one
model.safetensors): only [CLS] (101) and [SEP] (102) get hidden component 0 in their word
embedding; every layer's query is a constant (W_q = 0, b_q = c) and its key reads component 0, so
every query puts its attention on [CLS] and [SEP]; attention-output and feed-forward weights are
zeroed and LayerNorms set to identity scale, so every layer sees the same hidden states.

usage: plant_bert_sink.py MODEL_DIR
"""
import json
import struct
import sys

import numpy as np

CLS, SEP, A, SCORE = 101, 102, 8.0, 3.0


def main():
    path = sys.argv[1] + "/model.safetensors"
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    data = bytearray(raw[8 + n:])
    cfg = json.load(open(sys.argv[1] + "/config.json"))
    d, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    hd = d // nh

    def get(name):
        t = head[name]
        assert t["dtype"] == "F32", name
        a, b = t["data_offsets"]
        return np.frombuffer(bytes(data[a:b]), "<f4").reshape(t["shape"]).copy(), (a, b)

    def put(name, arr):
        a, b = head[name]["data_offsets"]
        data[a:b] = np.ascontiguousarray(arr, "<f4").tobytes()

    for name in head:
        if name == "__metadata__" or head[name]["dtype"] != "F32":
            continue
        arr, _ = get(name)
        if name.endswith("word_embeddings.weight"):
            arr[:, 0] = 0
            arr[CLS, :] = 0
            arr[SEP, :] = 0
            arr[CLS, 0] = arr[SEP, 0] = A
        elif name.endswith(("position_embeddings.weight", "token_type_embeddings.weight")):
            arr[:, 0] = 0
        elif "LayerNorm" in name:
            arr[...] = 1.0 if name.endswith(("weight", "gamma")) else 0.0
        elif name.endswith("attention.self.query.weight"):
            arr[...] = 0
        elif name.endswith("attention.self.query.bias"):
            arr[...] = 0
            arr[0::hd] = SCORE          # the first component of every head's query
        elif name.endswith("attention.self.key.weight"):
            arr[...] = 0
            arr[0::hd, 0] = SCORE       # the first component of every head's key reads component 0
        elif name.endswith("attention.self.key.bias"):
            arr[...] = 0
        elif ("attention.output.dense" in name or "intermediate.dense" in name
              or (".output.dense" in name and "attention" not in name)) and "encoder" in name:
            arr[...] = 0
        put(name, arr)
    open(path, "wb").write(raw[:8 + n] + bytes(data))


if __name__ == "__main__":
    main()

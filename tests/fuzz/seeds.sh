#!/bin/bash
# seeds.sh DIR: the seed corpus of every harness, DIR/<harness>/, from the repository's and
# ../shared/data's own small files (plus a few made here where none is kept as a file).
set -euo pipefail
out=$1 shared=${SHARED:-../shared}
d=$shared/data
mkdir -p "$out"/{fuzz_safetensors,fuzz_config,fuzz_gguf,fuzz_llama2c,fuzz_tokenizer,fuzz_recipe,fuzz_ids_mask,fuzz_attention,fuzz_image,fuzz_arrayin}
cp_if() { [ -f "$1" ] && cp "$1" "$2" || true; }
# images: the smallest carried PNG and JPEG, each after a size byte (fuzz_image.c)
for f in pipelines/data/images/horse.png pipelines/data/images/rocket.jpg; do
    { printf '\x10'; cat "$f"; } > "$out/fuzz_image/$(basename "$f")"
done

# safetensors: one F32, one BF16 + F16 file (header length, JSON header, data)
st() { local h=$1 n; n=${#h}; { printf "$(printf '\\x%02x' $((n & 255)) $((n >> 8 & 255)) 0 0 0 0 0 0)"; printf '%s' "$h"; head -c "$2" /dev/zero | tr '\0' '\077'; } > "$3"; }
st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}' 16 "$out/fuzz_safetensors/f32"
st '{"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[3],"data_offsets":[0,6]},"h":{"dtype":"F16","shape":[1],"data_offsets":[6,8]}}' 8 "$out/fuzz_safetensors/bf16-f16"
for f in "$d"/hf/*/config.json; do cp "$f" "$out/fuzz_config/$(basename "$(dirname "$f")").json"; done
cp_if "$d/models/stories260K/stories260K.gguf" "$out/fuzz_gguf/"
for f in "$d"/models/*/*.bin; do cp "$f" "$out/fuzz_llama2c/$(basename "$(dirname "$f")")-$(basename "$f")"; done
# tokenizer: first byte = family << 2 | kind (0 tokenizer.json, 1 vocab.txt, 2 tiktoken, 3 vocab.json NUL merges.txt)
tk() { { printf "$(printf '\\x%02x' "$1")"; cat "${@:3}"; } > "$out/fuzz_tokenizer/$2"; }
for f in tests/golden/tok/*/tokenizer.json; do n=$(basename "$(dirname "$f")"); tk 0 "$n-gpt2" "$f"; tk 4 "$n-neox" "$f"; done
head -400 "$d/hf/bert-base-uncased/vocab.txt" > "$out/vocab400.txt" && tk 17 bert-vocab "$out/vocab400.txt"
head -600 "$d/tokenizers/llama3/tokenizer.model" > "$out/tik600" && tk 10 llama3-tiktoken "$out/tik600"
${PYTHON:-/usr/bin/python3} - "$out" tests/golden/tok/byte/tokenizer.json <<'PY'
import json, sys
out, src = sys.argv[1:]
m = json.load(open(src))["model"]
merges = [" ".join(x) if isinstance(x, list) else x for x in m.get("merges", [])]
with open(out + "/fuzz_tokenizer/vocab-merges", "wb") as f:
    f.write(bytes([3]) + json.dumps(m["vocab"]).encode() + b"\0" + ("#version: 0.2\n" + "\n".join(merges) + "\n").encode())
PY
# SentencePiece: Mistral's tokenizer.model (protobuf), and small Unigram / SentencePiece-BPE
# tokenizer.json files (family byte 5 = spm) with a T5 subset written back as a protobuf too
tk 22 mistral-model pipelines/data/tokenizers/mistral/tokenizer.model
${PYTHON:-/usr/bin/python3} - "$out" pipelines/data/tokenizers/t5-small/tokenizer.json <<'PY'
import json, sys
out, src = sys.argv[1:]
t5 = json.load(open(src))
t5["model"]["vocab"] = t5["model"]["vocab"][:400]
t5["added_tokens"] = [a for a in t5["added_tokens"] if a["id"] < 400]
json.dump(t5, open(out + "/t5-400.json", "w"))
vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
vocab.update({"<0x%02X>" % b: 3 + b for b in range(256)})
for p in ["\u2581", "a", "b", "\u2581a", "ab", "\u2581ab"]:
    vocab[p] = len(vocab)
added = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
          "normalized": False, "special": True} for c, i in list(vocab.items())[:3]]
bpe = {"added_tokens": added,
       "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                      {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
       "pre_tokenizer": None,
       "decoder": {"type": "Sequence", "decoders": [{"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
       "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True,
                 "vocab": vocab, "merges": ["\u2581 a", "a b", "\u2581a b"]}}
with open(out + "/fuzz_tokenizer/spm-bpe-json", "wb") as f:
    f.write(bytes([20]) + json.dumps(bpe, ensure_ascii=False).encode())
# the same pieces as a small SentencePiece BPE tokenizer.model (protobuf), byte fallback on
import struct
sys.path.insert(0, "tests/ref")
from spm_ref import field
types = {0: 2, 1: 3, 2: 3}
body = b""
for p, i in vocab.items():
    kind = types.get(i, 6 if p.startswith("<0x") else 1)
    body += field(1, 2, field(1, 2, p.encode()) + field(2, 5, struct.pack("<f", -float(i))) + field(3, 0, kind))
body += field(2, 2, field(3, 0, 2) + field(35, 0, 1)) + field(3, 2, field(3, 0, 1))
with open(out + "/fuzz_tokenizer/spm-bpe-model", "wb") as f:
    f.write(bytes([22]) + body)
PY
tk 20 t5-unigram-json "$out/t5-400.json"
${PYTHON:-/usr/bin/python3} tests/ref/spm_ref.py tomodel "$out/t5-400.json" "$out/t5-400.model" && tk 22 t5-unigram-model "$out/t5-400.model"
# long Unigram pieces (issue 39: one 30 kB piece made every position try every prefix length):
# the T5 subset plus "▁a…a", "a…a" and "b…b" of 30 kB (tokenizer.json) and 4 kB (tokenizer.model,
# whose pieces are at most 4096 bytes)
${PYTHON:-/usr/bin/python3} - "$out" <<'PY'
import json, sys
out = sys.argv[1]
t5 = json.load(open(out + "/t5-400.json"))
base = t5["model"]["vocab"]
for name, n in (("long30k", 30000), ("long4k", 4000)):
    t5["model"]["vocab"] = base + [["\u2581" + "a" * n, -20.0], ["a" * n, -30.0], ["b" * n, -25.0]]
    json.dump(t5, open(out + "/" + name + ".json", "w"))
PY
tk 20 unigram-long-piece-json "$out/long30k.json"
${PYTHON:-/usr/bin/python3} tests/ref/spm_ref.py tomodel "$out/long4k.json" "$out/long4k.model" && tk 22 unigram-long-piece-model "$out/long4k.model"
rm -f "$out/vocab400.txt" "$out/tik600" "$out/t5-400.json" "$out/t5-400.model" "$out"/long30k.json "$out"/long4k.json "$out"/long4k.model
cp configs/*.conf "$out/fuzz_recipe/"
printf '\000# ids\n1 2 3 4\n5 6 7 8\n' > "$out/fuzz_ids_mask/ids-causal"
printf '\001 1 2 3\n4 5\n' > "$out/fuzz_ids_mask/ids-padded"
printf '\002# prune-rank mask\n0\t1\n3 3\n' > "$out/fuzz_ids_mask/mask"
# attention: all-zero bytes build a well-formed file; the others vary one attribute each
head -c 96 /dev/zero > "$out/fuzz_attention/valid"
for i in 1 2 3 4 5 6 7 8 9; do { head -c 8 /dev/zero; printf "$(printf '\\x%02x' "$i")"; head -c 60 /dev/zero; } > "$out/fuzz_attention/v$i"; done
# foreign arrays (import): the first byte picks FILE (0) or FILE:layer_0 (1) on the bytes that
# follow, or (2) a structure-aware HDF5 dataset /a (tests/fuzz/fuzz_arrayin.c). The files of
# tests/ref/make_bad_arrays.py: valid .npy/.npz, .npz members with header-length fields 0 and 1, a
# 2 GiB member claimed, fortran_order Maybe, torch.save files; and HDF5 recipes: chunked with no,
# some or all chunks written, never allocated, external (/dev/zero), LZF, a 2^40-row declaration
arr=$(mktemp -d)
${PYTHON:-/usr/bin/python3} tests/ref/make_bad_arrays.py "$arr"
for f in "$arr"/*; do
    case $f in *.h5) ;; *) { printf '\000'; cat "$f"; } > "$out/fuzz_arrayin/$(basename "$f")" ;; esac
done
{ printf '\001'; cat "$arr/good.npz"; } > "$out/fuzz_arrayin/good-member.npz"
{ printf '\000'; cat "$out/fuzz_safetensors/f32"; } > "$out/fuzz_arrayin/f32.safetensors"
rm -rf "$arr"
# HDF5 recipes (mode 2), in the order write_h5 reads its bytes: rank, dims, big-row flag (0: then
# log2 rows), layout (0 contiguous, 1 chunked, 2 compact, 3 external), fill, alloc time, [chunk
# dims, filter bits | external file], type (0 int32), how much is written (0 none, 1 rows, 2 all)
${PYTHON:-/usr/bin/python3} - "$out/fuzz_arrayin" <<'PY'
import sys
recipes = {
    "chunked-all": [0, 1, 3, 3, 1, 1, 192, 0, 0, 3, 3, 2, 1, 2, 0],
    "chunked-none": [0, 1, 3, 3, 1, 1, 192, 0, 0, 3, 3, 2, 1, 0],
    "chunked-some": [0, 3, 3, 3, 1, 1, 192, 0, 0, 3, 3, 0, 1, 1, 1, 0],
    "sparse-2p40": [0, 1, 3, 3, 0, 40, 1, 192, 1, 0, 3, 3, 0, 1, 0],
    "contig-late": [0, 1, 3, 3, 1, 0, 192, 1, 1, 0],
    "contig-all": [0, 1, 3, 3, 1, 0, 192, 0, 1, 2, 0],
    "compact-all": [0, 1, 3, 3, 1, 2, 192, 0, 1, 2, 0],
    "external-zero": [0, 1, 3, 3, 1, 3, 192, 0, 1, 1, 0],
    "external-short": [0, 1, 3, 3, 1, 3, 192, 0, 0, 1, 0],
    "lzf-gzip": [0, 1, 3, 3, 1, 1, 192, 0, 0, 3, 3, 10, 1, 2, 0],
}
for name, r in recipes.items():
    open(f"{sys.argv[1]}/h5-{name}", "wb").write(bytes([2] + r))
PY

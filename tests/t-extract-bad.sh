#!/bin/bash
# extract on bad checkpoints and inputs: each case is one clear stderr line, exit 1 (data) or
# 2 (usage), and no output file.
source tests/lib.sh
MK="$PYTHON tests/ref/make_tiny.py"
$MK gpt2 "$T/ok" || fail "generator"
echo "1 2 3 4 5 6" >"$T/ids.txt"
out="$T/out.h5"
X() { "$BIN/extract" "$@"; }

# copy of the good checkpoint with config.json edited by a Python expression on dict c
variant() {
    local name=$1 expr=$2
    mkdir -p "$T/$name" && cp "$T/ok/model.safetensors" "$T/$name/"
    $PYTHON -c "
import json, sys
c = json.load(open(sys.argv[1]))
$expr
json.dump(c, open(sys.argv[2], 'w'))" "$T/ok/config.json" "$T/$name/config.json"
}
# copy with the safetensors rewritten: tensors edited by a Python statement on list t of (name, arr, dtype)
retensor() {
    local name=$1 expr=$2
    mkdir -p "$T/$name" && cp "$T/ok/config.json" "$T/$name/"
    $PYTHON - "$T/ok/model.safetensors" "$T/$name/model.safetensors" <<EOF
import sys
sys.path.insert(0, "tests/ref")
sys.argv = sys.argv[:3]
from reference_forward import read_safetensors
from make_tiny import write_safetensors
w = {}
read_safetensors(sys.argv[1], w)
t = [(k, v.numpy(), "F32") for k, v in w.items()]
$expr
write_safetensors(sys.argv[2], t)
EOF
}

variant no_type "del c['model_type']"
expect_error "missing model_type lists the supported types" 1 \
    "no model_type \(supported: gpt2, gpt_neox, llama, qwen2, bert, phi, mistral, gemma, gemma2, qwen3, opt, roberta, xlm-roberta, vit\)" "$out" X --model "$T/no_type" --ids "$T/ids.txt" "$out"
variant t5 "c['model_type'] = 't5'"
expect_error "unknown model_type lists the supported types" 1 \
    "model_type 't5' is not supported \(supported: gpt2, gpt_neox, llama, qwen2, bert, phi, mistral, gemma, gemma2, qwen3, opt, roberta, xlm-roberta, vit\)" "$out" \
    X --model "$T/t5" --ids "$T/ids.txt" "$out"
variant bad_rope "c['model_type'] = 'llama'; c.update(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, rope_scaling={'rope_type': 'yarn', 'factor': 2})"
expect_error "unsupported rope type" 1 "rope type 'yarn' is not supported" "$out" \
    X --model "$T/bad_rope" --ids "$T/ids.txt" "$out"
retensor missing "t = [x for x in t if x[0] != 'h.1.mlp.c_fc.bias']"
expect_error "missing tensor named" 1 "missing tensor 'h.1.mlp.c_fc.bias'" "$out" \
    X --model "$T/missing" --ids "$T/ids.txt" "$out"
retensor shape "t = [(n, a[:, :-1] if n == 'h.0.attn.c_proj.weight' else a, d) for n, a, d in t]"
expect_error "wrong shape named with both shapes" 1 "'h.0.attn.c_proj.weight' has shape \[32,31\], expected \[32,32\]" \
    "$out" X --model "$T/shape" --ids "$T/ids.txt" "$out"
retensor dtype "t = [(n, a.astype('int64') if n == 'wte.weight' else a, 'I64' if n == 'wte.weight' else d) for n, a, d in t]"
expect_error "unsupported dtype" 1 "'wte.weight': unsupported dtype I64 \(need F32, F16 or BF16\)" "$out" \
    X --model "$T/dtype" --ids "$T/ids.txt" "$out"

mkdir -p "$T/trunc" "$T/huge" "$T/short" "$T/gap" "$T/empty"
cp "$T/ok/config.json" "$T/trunc/"; cp "$T/ok/config.json" "$T/huge/"; cp "$T/ok/config.json" "$T/short/"
cp "$T/ok/config.json" "$T/gap/"; cp "$T/ok/config.json" "$T/empty/"
head -c 200 "$T/ok/model.safetensors" >"$T/trunc/model.safetensors"
expect_error "truncated header" 1 "truncated: header length [0-9]+ but the file has 200 bytes" "$out" \
    X --model "$T/trunc" --ids "$T/ids.txt" "$out"
$PYTHON -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<Q', 10**9) + b'{}')" >"$T/huge/model.safetensors"
expect_error "oversized header" 1 "header length 1000000000 exceeds the limit" "$out" \
    X --model "$T/huge" --ids "$T/ids.txt" "$out"
printf 'abc' >"$T/short/model.safetensors"
expect_error "file shorter than 8 bytes" 1 "shorter than the 8-byte header length" "$out" \
    X --model "$T/short" --ids "$T/ids.txt" "$out"
size=$(stat -c %s "$T/ok/model.safetensors")
head -c $((size - 4)) "$T/ok/model.safetensors" >"$T/gap/model.safetensors"
expect_error "data buffer shorter than the offsets" 1 "data_offsets outside|tensors cover" "$out" \
    X --model "$T/gap" --ids "$T/ids.txt" "$out"
expect_error "no safetensors in the directory" 1 "no model.safetensors or model.safetensors.index.json" "$out" \
    X --model "$T/empty" --ids "$T/ids.txt" "$out"
mkdir -p "$T/shard" && cp "$T/ok/config.json" "$T/shard/"
printf '{"weight_map": {"wte.weight": "model-00001-of-00002.safetensors"}}' >"$T/shard/model.safetensors.index.json"
expect_error "missing shard file" 1 "model-00001-of-00002.safetensors: cannot open" "$out" \
    X --model "$T/shard" --ids "$T/ids.txt" "$out"

echo "1 2 3 101 5" >"$T/range.txt"
expect_error "token id out of range" 1 "range.txt: line 1: token id 101 out of range \[0, 101\)" "$out" \
    X --model "$T/ok" --ids "$T/range.txt" "$out"
echo "1 2 x 4" >"$T/nonint.txt"
expect_error "non-integer id" 1 "line 1: 'x 4' is not a token id" "$out" X --model "$T/ok" --ids "$T/nonint.txt" "$out"
printf '1 2 3 4\n1 2 3\n' >"$T/ragged.txt"
expect_error "ragged ids for a causal model" 1 "causal models need equal lengths" "$out" \
    X --model "$T/ok" --ids "$T/ragged.txt" "$out"
: >"$T/empty.txt"
cp "$EMBED/tokenizers/gpt2/"* "$T/ok/"
expect_error "empty text" 1 "empty.txt: empty text" "$out" X --model "$T/ok" --text "$T/empty.txt" "$out"
expect_error "no token ids" 1 "no token ids" "$out" X --model "$T/ok" --ids "$T/empty.txt" "$out"
seq 1 70 | tr '\n' ' ' >"$T/long.txt"
expect_error "more tokens than positions" 1 "70 tokens per sequence exceed the model's 64 positions" "$out" \
    X --model "$T/ok" --ids "$T/long.txt" "$out"
printf '0 1\n5 0\n' >"$T/badmask.txt"
expect_error "mask head out of range" 1 "badmask.txt: line 2: head 5 0 outside 2 layers x 4 heads" "$out" \
    X --model "$T/ok" --ids "$T/ids.txt" --mask "$T/badmask.txt" "$out"
expect_error "missing model directory" 1 "nowhere: no such file or directory" "$out" \
    X --model "$T/nowhere" --ids "$T/ids.txt" "$out"

expect_error "--layers outside the model" 2 "layers: '5' selects outside 0..1" "$out" \
    X --model "$T/ok" --ids "$T/ids.txt" --layers 5 "$out"
expect_error "both --text and --ids" 2 "exactly one of --text, --ids and --images" "$out" \
    X --model "$T/ok" --ids "$T/ids.txt" --text "$T/ids.txt" "$out"
expect_error "no OUTPUT" 2 "expected one OUTPUT" - X --model "$T/ok" --ids "$T/ids.txt"
$MK bert "$T/bert" --no-head
expect_error "--nll for bert" 2 "bert has no language-model head" "$out" \
    X --model "$T/bert" --ids "$T/ids.txt" --nll "$T/n.tsv" "$out"
check "--help documents memory use" sh -c "\"$BIN/extract\" --help | grep -q '^Memory:'"
check "--version" sh -c "\"$BIN/extract\" --version | grep -q '^extract (attncoda) '"

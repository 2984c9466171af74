#!/bin/bash
# GGUF files converted from tiny Hugging Face checkpoints the way llama.cpp's converter lays them
# out (GPT-2 Conv1D transposed and QKV fused; llama and Mistral q/k rows permuted to Meta's
# interleaved order; qwen2, qwen3, phi2, gemma, gemma2 kept half-split; gemma norms stored as
# 1 + w) give bit-identical attention and logits to the HF originals, and for the newer families
# also agree with the independent PyTorch reference (tests/ref/reference_more.py). Then bad input
# per architecture: a missing metadata key or tensor is named, exit 1, no output.
source tests/lib.sh
printf '1 5 9 13 2 40 33 7 8 1 3 4 5 6 7 8 20 21\n0 44 43 42 41 40 39 38 37 36 35 34 33 32 31 30 29 28\n' >"$T/ids"
MKG="$PYTHON tests/ref/make_gguf.py"
same() {  # same NAME: GGUF m.gguf = HF directory hf, attention and logits bit for bit
    "$BIN/extract" --model "$T/hf" --ids "$T/ids" --logits "$T/hl.h5" "$T/ha.h5" >/dev/null 2>"$T/err"
    "$BIN/extract" --model "$T/m.gguf" --ids "$T/ids" --logits "$T/gl.h5" "$T/ga.h5" >/dev/null 2>>"$T/err"
    check "$1: GGUF = Hugging Face checkpoint (attention and logits bit-identical)" "$PYTHON" -c "
import h5py, numpy as np, sys
eq = lambda a, b, k: np.array_equal(h5py.File(a, 'r')[k][:], h5py.File(b, 'r')[k][:])
sys.exit(0 if eq('$T/ha.h5', '$T/ga.h5', 'attention') and eq('$T/hl.h5', '$T/gl.h5', 'logits') else 1)"
}
while read -r name args; do
    rm -rf "$T/hf"
    "$PYTHON" tests/ref/make_tiny.py $args "$T/hf" >/dev/null
    $MKG from-hf "$T/hf" "$T/m.gguf"
    same "$name"
done <<'LIST'
gpt2-prefixed-tied gpt2 --prefix
gpt2-untied gpt2 --untied
llama-gqa-untied llama --gqa
llama-tied llama --tied
qwen2 qwen2
LIST

# The newer families (tests/ref/make_tiny_more.py). Gemma2's query scale is not in llama.cpp's
# metadata (it is 1/sqrt(head_dim) below 46 layers), so the tiny config's query_pre_attn_scalar
# is set to its head_dim first. The window 5 < T = 18 puts the sliding-window boundary inside.
qpas_head_dim() {
    "$PYTHON" -c "
import json, sys
c = json.load(open(sys.argv[1])); c['query_pre_attn_scalar'] = c['head_dim']
json.dump(c, open(sys.argv[1], 'w'))" "$T/hf/config.json"
}
while read -r name fam args; do
    rm -rf "$T/hf"
    "$PYTHON" tests/ref/make_tiny_more.py "$fam" "$T/hf" $args >/dev/null
    [ "$fam" = gemma2 ] && qpas_head_dim
    $MKG from-hf "$T/hf" "$T/m.gguf"
    same "$name"
    "$PYTHON" tests/ref/reference_more.py "$T/hf" "$T/ids" --attn "$T/ga.h5" --logits "$T/gl.h5" \
        --tag "$name GGUF vs PyTorch reference"
    cp "$T/m.gguf" "$T/$fam.gguf"
    rm -rf "$T/hf-$fam"; cp -r "$T/hf" "$T/hf-$fam"   # the last of each family, for bad input
done <<'LIST'
phi2-partial-rotary-untied phi
phi2-tied phi --tied
mistral-window5-gqa mistral --window 5 --gqa
mistral-window-null mistral --window-null
gemma-mqa gemma --gqa
gemma2-window5-softcap gemma2 --window 5 --softcap 20,15 --gqa
gemma2-default-caps-window gemma2
qwen3-gqa-untied qwen3 --gqa
qwen3-tied qwen3 --tied
LIST

# Phi-2 with the fused attn_qkv of older conversions (q, k, v rows stacked).
rm -rf "$T/hf"; cp -r "$T/hf-phi" "$T/hf"
$MKG from-hf "$T/hf" "$T/m.gguf" --fuse-qkv
same "phi2-fused-attn_qkv"

# The window and the query scale matter: a Mistral file without its window (what the converter
# writes) and a Gemma2 whose query_pre_attn_scalar is not its head_dim disagree with HF.
differs() {  # differs NAME
    "$BIN/extract" --model "$T/hf" --ids "$T/ids" "$T/ha.h5" >/dev/null 2>"$T/err"
    "$BIN/extract" --model "$T/m.gguf" --ids "$T/ids" "$T/ga.h5" >/dev/null 2>>"$T/err"
    check "$1" "$PYTHON" -c "
import h5py, numpy as np, sys
a, b = (np.exp(h5py.File(f, 'r')['attention'][:]) for f in ('$T/ha.h5', '$T/ga.h5'))
sys.exit(0 if np.abs(a - b).max() > 1e-3 else 1)"
}
rm -rf "$T/hf"
"$PYTHON" tests/ref/make_tiny_more.py mistral "$T/hf" --window 5 >/dev/null
$MKG from-hf "$T/hf" "$T/m.gguf" --drop llama.attention.sliding_window
differs "mistral: without llama.attention.sliding_window the window-5 model differs"
rm -rf "$T/hf"
"$PYTHON" tests/ref/make_tiny_more.py gemma2 "$T/hf" --window 5 >/dev/null
$MKG from-hf "$T/hf" "$T/m.gguf"
differs "gemma2: query_pre_attn_scalar 24 != head_dim 32 is not representable (llama.cpp rule)"

# Bad input per architecture: DROP is a required key or tensor; the error names it.
while read -r fam drop; do
    $MKG from-hf "$T/hf-$fam" "$T/bad.gguf" --drop "$drop"
    expect_error "GGUF $fam without $drop" 1 "bad.gguf: .*'$drop'" "$T/out.h5" \
        "$BIN/extract" --model "$T/bad.gguf" --ids "$T/ids" "$T/out.h5"
done <<'LIST'
phi phi2.rope.dimension_count
phi phi2.attention.layer_norm_epsilon
phi output.bias
phi blk.1.attn_norm.bias
phi blk.0.attn_v.bias
phi blk.1.ffn_up.bias
mistral llama.attention.head_count
mistral blk.1.attn_k.weight
gemma gemma.attention.layer_norm_rms_epsilon
gemma blk.0.ffn_gate.weight
gemma2 gemma2.embedding_length
gemma2 blk.1.post_attention_norm.weight
gemma2 blk.0.post_ffw_norm.weight
qwen3 qwen3.attention.layer_norm_rms_epsilon
qwen3 blk.0.attn_q_norm.weight
qwen3 blk.1.attn_k_norm.weight
LIST

#!/bin/bash
# GGUF files converted from tiny Hugging Face checkpoints the way llama.cpp's converter lays them
# out (GPT-2 Conv1D transposed and QKV fused; llama q/k rows permuted to Meta's interleaved order;
# qwen2 kept half-split with biases) give bit-identical attention and logits to the HF originals.
source tests/lib.sh
printf '1 5 9 13 2 40 33 7 8 1 3 4 5 6 7 8 20 21\n0 44 43 42 41 40 39 38 37 36 35 34 33 32 31 30 29 28\n' >"$T/ids"
while read -r name args; do
    rm -rf "$T/hf"
    "$PYTHON" tests/ref/make_tiny.py $args "$T/hf" >/dev/null
    "$PYTHON" tests/ref/make_gguf.py from-hf "$T/hf" "$T/m.gguf"
    "$BIN/extract" --model "$T/hf" --ids "$T/ids" --logits "$T/hl.h5" "$T/ha.h5" >/dev/null 2>"$T/err"
    "$BIN/extract" --model "$T/m.gguf" --ids "$T/ids" --logits "$T/gl.h5" "$T/ga.h5" >/dev/null 2>>"$T/err"
    check "$name: GGUF = Hugging Face checkpoint (attention and logits bit-identical)" "$PYTHON" -c "
import h5py, numpy as np, sys
eq = lambda a, b, k: np.array_equal(h5py.File(a, 'r')[k][:], h5py.File(b, 'r')[k][:])
sys.exit(0 if eq('$T/ha.h5', '$T/ga.h5', 'attention') and eq('$T/hl.h5', '$T/gl.h5', 'logits') else 1)"
done <<'LIST'
gpt2-prefixed-tied gpt2 --prefix
gpt2-untied gpt2 --untied
llama-gqa-untied llama --gqa
llama-tied llama --tied
qwen2 qwen2
LIST

#!/bin/bash
# GGUF models: stories260K.gguf reproduces the published greedy sample; tiny random llama (Meta
# interleaved q/k order, Q8_0/F16/BF16/F32 tensors) and qwen2 (biases, half-split order) GGUF files
# written by tests/ref/make_gguf.py agree with the PyTorch reference on the dequantised weights;
# damaged or unsupported files give one error line, exit 1 and no output.
source tests/lib.sh
S260=$EMBED/models/stories260K
REF=tests/ref/llama2c_reference.py

"$BIN/sample" --model "$S260/stories260K.gguf" -n 1 -T 258 --temperature 0 \
    --text-out "$T/s.txt" "$T/s.ids" 2>"$T/err"
check "stories260K .gguf greedy 257 steps = published sample" \
    cmp -s <(grep -v '^# ' "$T/s.txt") "$S260/greedy_t0_steps257.expected.txt"

printf '1 5 9 13 2 40 33 7 8 1 3 4 5 6 7 8 20 21 22 23 24 25 26 27 28 29 30 31 32\n' >"$T/ids"
printf '1 47 46 45 44 43 42 41 40 39 38 37 36 35 34 33 32 31 30 29 28 27 26 25 24 23 22 21 0\n' >>"$T/ids"
for arch in llama qwen2; do
    "$PYTHON" tests/ref/make_gguf.py $arch "$T/$arch.gguf" "$T/$arch.npz"
    "$BIN/extract" --model "$T/$arch.gguf" --ids "$T/ids" --logits "$T/l_$arch.h5" "$T/a_$arch.h5" \
        >/dev/null 2>"$T/err"
    check "tiny $arch GGUF (Q8_0/F16/BF16/F32) vs PyTorch reference" \
        "$PYTHON" $REF --npz "$T/$arch.npz" --ids "$T/ids" \
        --check-attn "$T/a_$arch.h5" --check-logits "$T/l_$arch.h5"
done
# The permutation matters: reading the llama file as half-split must disagree with the reference.
"$PYTHON" - "$T/llama.npz" "$T/swapped.npz" <<'PY'
import numpy as np, sys
z = dict(np.load(sys.argv[1])); z["cfg_rope"] = np.array("half"); np.savez(sys.argv[2], **z)
PY
check "tiny llama: half-split RoPE on Meta-order weights would disagree" \
    bash -c "! '$PYTHON' $REF --npz '$T/swapped.npz' --ids '$T/ids' --check-attn '$T/a_llama.h5' >/dev/null"

"$PYTHON" tests/ref/make_gguf.py bad "$T/bad" >/dev/null
bad() {  # bad CASE PATTERN
    expect_error "GGUF $1" 1 "$1.gguf: .*$2" "$T/out" "$BIN/sample" --model "$T/bad/$1.gguf" "$T/out"
}
bad bad_magic "not a GGUF file \(bad magic\)"
bad version1 "unsupported GGUF version 1"
bad version4 "unsupported GGUF version 4"
bad empty "truncated GGUF file"
bad truncated_header "truncated GGUF file"
bad truncated_metadata "exceeds what the file can hold|truncated"
bad truncated_data "beyond the end of the file"
bad huge_kv_count "metadata count 1152921504606846976 exceeds"
bad huge_tensor_count "tensor count 2305843009213693952 exceeds"
bad huge_array "array of 4611686018427387904 elements overflows"
bad huge_string "length 9223372036854775808 .*exceeds the file"
bad bad_value_type "unknown value type 99"
bad too_many_dims "5 dimensions"
bad unknown_tensor_type "unknown ggml type 99"
bad unsupported_q4_0 "type Q4_0, which is not supported"
bad unknown_arch "architecture 'mamba' is not supported \(llama, qwen2, gpt2"
bad missing_tensor "missing tensor 'blk.1.attn_v.weight'"
bad wrong_shape "attn_k.weight' has shape \[32, 15\], expected \[32, 16\]"
bad bad_alignment "alignment must be a positive power of two"
bad missing_key "llama.block_count"
bad offset_beyond_end "lies beyond the end of the file"
bad offset_misaligned "not a multiple of the alignment 32"
expect_error "GGUF error through extract" 1 "truncated_data.gguf: .*beyond the end" "$T/out.h5" \
    "$BIN/extract" --model "$T/bad/truncated_data.gguf" --ids "$T/ids" "$T/out.h5"
expect_error "GGUF tokenizer: damaged file" 1 "bad_magic.gguf: not a GGUF file" "$T/out" \
    "$BIN/tokenize" --tokenizer "$T/bad/bad_magic.gguf" -o "$T/out" "$T/ids"

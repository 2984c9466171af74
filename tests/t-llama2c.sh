#!/bin/bash
# llama2.c checkpoints (stories260K, aidreams260K): greedy samples reproduce the published run.c
# output, attention and logits agree with an independent PyTorch forward pass (interleaved RoPE
# on the original weights), the GGUF copy of stories260K gives identical attention, the
# SentencePiece encoder matches llama2.c's algorithm, damaged checkpoints fail cleanly.
# stories260K ships with the repository (pipelines/data); aidreams260K is optional (DATA_DIR): its
# tests are skipped by name when it is absent. Its expected greedy text is tests/golden/llama2c.
source tests/lib.sh
S260=$EMBED/models/stories260K; A260=$DATA_DIR/models/aidreams260K
A260_GREEDY=tests/golden/llama2c/aidreams260K-greedy_t0_steps100.txt
a260() { with_file "$A260/aidreams260K.bin" "$@"; }   # a260 TEST NAME ARGS...: needs aidreams260K
REF=tests/ref/llama2c_reference.py

# Greedy from BOS: run.c -n 257 prints 257 generated tokens = 258 ids with the BOS.
"$BIN/sample" --model "$S260/stories260K.bin" -n 1 -T 258 --temperature 0 \
    --text-out "$T/s.txt" "$T/s.ids" 2>"$T/err"
check "stories260K .bin greedy 257 steps = published sample" \
    cmp -s <(grep -v '^# ' "$T/s.txt") "$S260/greedy_t0_steps257.expected.txt"
[ -f "$A260/aidreams260K.bin" ] && "$BIN/sample" --model "$A260/aidreams260K.bin" -n 1 -T 101 --temperature 0 \
    --text-out "$T/a.txt" "$T/a.ids" 2>"$T/err"
a260 check "aidreams260K .bin greedy 100 steps = expected" \
    cmp -s <(grep -v '^# ' "$T/a.txt") "$A260_GREEDY"

# Reference forward on sampled sequences (T = 128 = aidreams' context).
"$BIN/sample" --model "$S260/stories260K.bin" -n 3 -T 128 --seed 7 "$T/ids" 2>"$T/err"
for fmt in bin gguf; do
    "$BIN/extract" --model "$S260/stories260K.$fmt" --ids "$T/ids" --logits "$T/l_$fmt.h5" \
        "$T/a_$fmt.h5" >/dev/null 2>"$T/err"
    check "stories260K .$fmt attention 1e-5 / logits 1e-4 vs PyTorch reference" \
        "$PYTHON" $REF --bin "$S260/stories260K.bin" --ids "$T/ids" \
        --check-attn "$T/a_$fmt.h5" --check-logits "$T/l_$fmt.h5"
done
check "stories260K .bin and .gguf: identical attention and logits" "$PYTHON" -c "
import h5py, numpy as np, sys
a, b = (h5py.File('$T/a_%s.h5' % f, 'r')['attention'][:] for f in ('bin', 'gguf'))
la, lb = (h5py.File('$T/l_%s.h5' % f, 'r')['logits'][:] for f in ('bin', 'gguf'))
sys.exit(0 if a.shape == b.shape and np.array_equal(a, b) and np.array_equal(la, lb) else 1)"
[ -f "$A260/aidreams260K.bin" ] && "$BIN/sample" --model "$A260/aidreams260K.bin" -n 2 -T 128 --seed 7 "$T/ida" 2>"$T/err" &&
"$BIN/extract" --model "$A260/aidreams260K.bin" --ids "$T/ida" --logits "$T/la.h5" "$T/aa.h5" \
    >/dev/null 2>"$T/err"
a260 check "aidreams260K attention 1e-5 / logits 1e-4 vs PyTorch reference" \
    "$PYTHON" $REF --bin "$A260/aidreams260K.bin" --ids "$T/ida" \
    --check-attn "$T/aa.h5" --check-logits "$T/la.h5"

# SentencePiece BPE: attncoda's heap-based encoder vs llama2.c's quadratic algorithm.
{ cat "$S260/greedy_t0_steps257.expected.txt" "$A260_GREEDY"
  printf 'Café, naïve façade — “quotes” and emoji 😀🎉 ünïcödé\n'
  printf '  leading spaces, tabs\there, trailing  \n'
  printf 'x\n\n日本語のテキスト\n' ; } > "$T/text"
for tk in "$S260/tok512.bin" "$A260/tok512.bin"; do
    name="encode = llama2.c encode() with $(basename "$(dirname "$tk")")/tok512.bin"
    if [ ! -f "$tk" ]; then skip "$name" "$tk"; continue; fi
    "$BIN/tokenize" --tokenizer "$tk" --no-header "$T/text" >"$T/got" 2>"$T/err"
    "$PYTHON" $REF --tok "$tk" --encode "$T/text" >"$T/want"
    check "$name" cmp -s "$T/got" "$T/want"
done
"$BIN/tokenize" --tokenizer "$S260/stories260K.gguf" --no-header "$T/text" >"$T/got_gguf" 2>"$T/err"
"$PYTHON" $REF --tok "$S260/tok512.bin" --encode "$T/text" >"$T/want_s"
check "GGUF vocabulary encodes exactly like tok512.bin (llama2.c algorithm)" \
    cmp -s "$T/got_gguf" "$T/want_s"

# Damaged llama2.c checkpoints: one error line, exit 1, no output.
head -c 20 "$S260/stories260K.bin" >"$T/short.bin"
head -c 100000 "$S260/stories260K.bin" >"$T/trunc.bin"
{ cat "$S260/stories260K.bin"; printf 'xx'; } >"$T/long.bin"
"$PYTHON" -c "
import struct; open('$T/v1.bin','wb').write(struct.pack('<Ii', 0x616b3432, 1) + bytes(300))
open('$T/neg.bin','wb').write(struct.pack('<7i', 64, 172, 5, -8, 4, 512, 512) + bytes(64))
open('$T/gqa.bin','wb').write(struct.pack('<7i', 64, 172, 5, 8, 3, 512, 512) + bytes(64))"
expect_error "llama2.c: file shorter than the header" 1 "short.bin: .*shorter" "$T/o" \
    "$BIN/sample" --model "$T/short.bin" "$T/o"
expect_error "llama2.c: truncated weights" 1 "trunc.bin: .*does not match its header" "$T/o" \
    "$BIN/sample" --model "$T/trunc.bin" "$T/o"
expect_error "llama2.c: trailing bytes" 1 "long.bin: .*does not match" "$T/o" \
    "$BIN/sample" --model "$T/long.bin" "$T/o"
expect_error "llama2.c: version-1 export named" 1 "v1.bin: .*version 1.*not supported" "$T/o" \
    "$BIN/sample" --model "$T/v1.bin" "$T/o"
expect_error "llama2.c: negative head count" 1 "neg.bin: .*n_heads = -8" "$T/o" \
    "$BIN/sample" --model "$T/neg.bin" "$T/o"
expect_error "llama2.c: heads not a multiple of KV heads" 1 "gqa.bin: .*inconsistent" "$T/o" \
    "$BIN/sample" --model "$T/gqa.bin" "$T/o"
printf 'junk' >"$T/tok.bin"
expect_error "llama2.c tokenizer: damaged file" 1 "tok.bin: not a llama2.c tokenizer" "$T/o" \
    "$BIN/tokenize" --tokenizer "$T/tok.bin" -o "$T/o" "$T/text"

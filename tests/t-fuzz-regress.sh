#!/bin/bash
# Every input that once crashed a reader or slipped through (issue 11, tests/fuzz/regress/, and the
# HDF5 ones tests/fuzz/make_regress.py rewrites with h5py) goes through the real programs: one
# stderr line naming the file and the bad key, attribute or value, exit 1, no output file.
source tests/lib.sh
R=tests/fuzz/regress
out="$T/out.h5"

# --- HDF5 attributes of the wrong shape, class or size, and an all-padding valid mask ---
"$PYTHON" tests/ref/make_bad_inputs.py "$T/bad" >/dev/null || fail "make_bad_inputs"
"$BIN/distance" "$T/bad/valid.h5" "$T/dist.h5" >/dev/null 2>&1 || fail "distance on the valid control"
"$PYTHON" tests/fuzz/make_regress.py h5 "$T/bad/valid.h5" "$T/dist.h5" "$T/h5" || fail "make_regress h5"
for prog in decompose clr distance; do
    expect_error "$prog: 'sequences' an int64[4096] array" 1 \
        "^$prog: $T/h5/attr_sequences_array.h5: attribute 'sequences' holds 4096 values" "$out" \
        "$BIN/$prog" "$T/h5/attr_sequences_array.h5" "$out"
    expect_error "$prog: 'layers' = [1, 2]" 1 "attr_layers_pair.h5: attribute 'layers' holds 2 values" "$out" \
        "$BIN/$prog" "$T/h5/attr_layers_pair.h5" "$out"
    expect_error "$prog: 'format' a 64-element string array" 1 \
        "attr_format_strings.h5: attribute 'format' holds 64 values" "$out" \
        "$BIN/$prog" "$T/h5/attr_format_strings.h5" "$out"
    expect_error "$prog: 'layers' a float" 1 "attr_layers_float.h5: attribute 'layers' is a float, expected an integer" \
        "$out" "$BIN/$prog" "$T/h5/attr_layers_float.h5" "$out"
    expect_error "$prog: 'values' an integer" 1 "attr_values_int.h5: attribute 'values' is an integer, expected a string" \
        "$out" "$BIN/$prog" "$T/h5/attr_values_int.h5" "$out"
    expect_error "$prog: 'valid' all zero" 1 "valid_all_zero.h5: dataset 'valid': sequence 0 has no valid token" \
        "$out" "$BIN/$prog" "$T/h5/valid_all_zero.h5" "$out"
done
expect_error "cluster: distance file whose 'heads' is an array" 1 \
    "^cluster: $T/h5/dist_heads_array.h5: attribute 'heads' holds 3 values" - "$BIN/cluster" "$T/h5/dist_heads_array.h5"

# --- config.json numbers: non-integers, booleans, out of range, negative epsilon, bad heads ---
"$PYTHON" tests/ref/make_tiny.py gpt2 "$T/gpt2" || fail "make_tiny gpt2"
"$PYTHON" tests/ref/make_tiny.py bert "$T/bert" || fail "make_tiny bert"
echo "1 2 3 4 5 6" >"$T/ids.txt"
cfg() {   # cfg CASE BASE: a copy of the tiny BASE checkpoint with regress/config/CASE.json merged in
    mkdir -p "$T/c/$1" && cp "$T/$2/model.safetensors" "$T/c/$1/"
    "$PYTHON" -c "
import json, sys
c = json.load(open(sys.argv[1]))
for k, v in json.load(open(sys.argv[2])).items():
    c.pop(k, None) if v is None else c.__setitem__(k, v)
json.dump(c, open(sys.argv[3], 'w'))" "$T/$2/config.json" "$R/config/$1.json" "$T/c/$1/config.json"
}
xcfg() {  # xcfg CASE BASE PATTERN
    cfg "$1" "$2"
    expect_error "config.json $1" 1 "^extract: $T/c/$1: config.json: $3" "$out" \
        "$BIN/extract" --model "$T/c/$1" --ids "$T/ids.txt" "$out"
}
xcfg vocab_2p32 gpt2 "'vocab_size': 4294967596 is out of range"
xcfg layers_frac gpt2 "'n_layer': 1.5 is not an integer"
xcfg layers_true gpt2 "'n_layer' is a boolean, expected a number"
xcfg eps_negative gpt2 "'layer_norm_epsilon' = -1e-05 must be in \(0, 1\)"
xcfg heads_not_dividing gpt2 "the hidden size 32 is not a multiple of the head count 5"
xcfg bert_pad_outside bert "'pad_token_id' = 1000 is outside the vocabulary \[0, 101\)"
# fuzz_config: head_dim 2^30 built a RoPE table of 2^29 correctly rounded powers (over 20 s, a 2 GB array)
"$PYTHON" tests/ref/make_tiny.py llama "$T/llama" || fail "make_tiny llama"
xcfg head_dim_2p30 llama "head_dim 1073741824 \(hidden size / heads, or 'head_dim'\) is above 16384"
mkdir -p "$T/cdir/config.json" && cp "$T/gpt2/model.safetensors" "$T/cdir/"
expect_error "config.json that is a directory" 1 "config.json: is a directory" "$out" \
    "$BIN/extract" --model "$T/cdir" --ids "$T/ids.txt" "$out"
# fuzz_config: a config.json that is JSON but not an object ([]) was reported and then loaded on
# (a NULL safetensors set: UBSan null member access, a crash in the real programs)
mkdir -p "$T/carr" && cp "$R/fuzz_config-array.json" "$T/carr/config.json" && cp "$T/gpt2/model.safetensors" "$T/carr/"
expect_error "config.json that is a JSON array" 1 "config.json: not a JSON object$" "$out" \
    "$BIN/extract" --model "$T/carr" --ids "$T/ids.txt" "$out"

# fuzz_safetensors: a header whose only key is __metadata__ (no tensor) offset the NULL tensor
# list (UBSan: applying zero offset to null pointer); it is refused for its uncovered data bytes
mkdir -p "$T/stmeta" && cp "$T/gpt2/config.json" "$T/stmeta/" &&
    cp "$R/fuzz_safetensors-metadata-only.safetensors" "$T/stmeta/model.safetensors"
expect_error "safetensors header with __metadata__ alone" 1 \
    "model.safetensors: data buffer has 8 bytes, tensors cover 0$" "$out" \
    "$BIN/extract" --model "$T/stmeta" --ids "$T/ids.txt" "$out"

# fuzz_image: a 1.3 kB PNG declaring a 1.46 GB iTXt chunk made libpng allocate the declared
# length (1.4 GB resident, 2.9 s); its allocations are now bounded by the file's size
"$PYTHON" tests/ref/make_tiny_vit.py "$T/vit" >/dev/null || fail "make_tiny_vit"
mkdir -p "$T/itxt" && cp "$R/fuzz_image-itxt-1.4GB.png" "$T/itxt/x.png"
expect_error "PNG with a 1.46 GB iTXt chunk declared" 1 "itxt/x.png: bad PNG: file is truncated$" "$out" \
    /usr/bin/time -f %M -o "$T/itxt.rss" "$BIN/extract" --model "$T/vit" --images "$T/itxt" "$out"
rss=$(tail -1 "$T/itxt.rss")
if [ "$rss" -lt 262144 ]; then ok "PNG with a 1.46 GB iTXt chunk: $rss kB resident"
else fail "PNG with a 1.46 GB iTXt chunk: $rss kB resident (want < 256 MB)"; fi

# --- GGUF: a float block count, a NaN token score, token type 262 ---
expect_error "GGUF block_count 1.75 (F32)" 1 "gguf_block_count_f32.gguf: metadata 'llama.block_count': 1.75 is not an integer" \
    "$out" "$BIN/extract" --model "$R/gguf_block_count_f32.gguf" --ids "$T/ids.txt" "$out"
echo "t1 t2" >"$T/text.txt"
expect_error "GGUF NaN token score" 1 "gguf_nan_score.gguf: tokenizer.ggml.scores\[5\] = nan is not a finite float" \
    "$T/ids.out" "$BIN/tokenize" --tokenizer "$R/gguf_nan_score.gguf" -o "$T/ids.out" "$T/text.txt"
expect_error "GGUF token type 262" 1 "gguf_token_type_262.gguf: tokenizer.ggml.token_type\[9\] = 262 is not a token type" \
    "$T/ids.out" "$BIN/tokenize" --tokenizer "$R/gguf_token_type_262.gguf" -o "$T/ids.out" "$T/text.txt"

# --- llama2.c tokenizers: too few pieces, trailing bytes, NaN score ---
S260=$EMBED/models/stories260K
mkdir -p "$T/l2c" && cp "$S260/stories260K.bin" "$T/l2c/"
expect_error "tok*.bin with 100 pieces for a 512-token model" 1 "tok100.bin: llama2.c tokenizer has 100 pieces, the model's vocabulary has 512" \
    "$out" "$BIN/extract" --model "$T/l2c/stories260K.bin" --tokenizer "$R/tok100.bin" --text "$T/text.txt" -S 1 -T 2 "$out"
for b in tok_trailing tok_nan_score; do
    expect_error "llama2.c tokenizer $b" 1 "$b.bin: not a llama2.c tokenizer file \(bad header, NaN score, or truncated" \
        "$T/ids.out" "$BIN/tokenize" --tokenizer "$R/$b.bin" -o "$T/ids.out" "$T/text.txt"
done

# --- tokenizer.json with two tokens on one id ---
expect_error "tokenizer.json with two tokens on one id" 1 "vocabulary entry 'zz-duplicate': id [0-9]+ is already taken" \
    "$T/ids.out" "$BIN/tokenize" --tokenizer "$R/tokenizer_dup_id/tokenizer.json" -o "$T/ids.out" "$T/text.txt"

# --- NUL bytes in --ids, --mask and recipes; an empty mask ---
expect_error "--ids with a NUL byte" 1 "ids_nul.txt: line 2: NUL byte" "$out" \
    "$BIN/extract" --model "$T/gpt2" --ids "$R/ids_nul.txt" "$out"
expect_error "--mask with a NUL byte" 1 "mask_nul.txt: line 2: NUL byte" "$out" \
    "$BIN/extract" --model "$T/gpt2" --ids "$T/ids.txt" --mask "$R/mask_nul.txt" "$out"
expect_error "empty --mask file" 1 "mask_empty.txt: empty mask file" "$out" \
    "$BIN/extract" --model "$T/gpt2" --ids "$T/ids.txt" --mask "$R/mask_empty.txt" "$out"
printf 'x%.0s' $(seq 300) >"$T/corpus.txt"
expect_error "recipe with a NUL byte" 1 "recipe_nul.conf: line [0-9]+: NUL byte" "$T/model" \
    "$BIN/train" --config "$R/recipe_nul.conf" --train "$T/corpus.txt" --valid "$T/corpus.txt" --out "$T/model"

# --- found by make fuzz (replayed through the programs; make sanitize sees any UB report) ---
# fuzz_llama2c: two empty pieces made the pair search memcpy into a NULL buffer (UBSan)
printf 'In the beginning\n' >"$T/story.txt"
check "tokenize: a llama2.c tokenizer with empty pieces encodes cleanly" \
    bash -c '"$1" --tokenizer "$2" -o "$3" "$4" 2>"$3.err" && [ -s "$3" ] && [ ! -s "$3.err" ]' _ \
    "$BIN/tokenize" "$R/fuzz_llama2c-empty-pieces.bin" "$T/ep.ids" "$T/story.txt"
# fuzz_tokenizer: a mutated Unigram tokenizer.json (precompiled charsmap, WhitespaceSplit +
# Metaspace) looped forever on the harness's text: a charsmap leaf pointing into the middle of a
# character gave a replacement that is not UTF-8, and the Metaspace split stepped back by
# utf8proc's error code. Such a leaf no longer matches, and every code-point loop steps forward.
mkdir -p "$T/ul"; cp "$R/fuzz_tokenizer-loop-unigram.json" "$T/ul/tokenizer.json"
printf 'In the beginning God created\n\t the heaven <|endoftext|> [CLS] <s> caf\xc3\xa9 \xe4\xb8\xad  x\xef\xac\x81 e\xcc\x81 \xe2\x96\x81\xe2\x96\x81 \xf0\x9f\x98\x8a' >"$T/ul/text.txt"
check "tokenize --whole: the Unigram tokenizer that looped encodes the fuzz text within 60 s" \
    bash -c 'timeout 60 "$1" --tokenizer "$2" --family spm --whole -o "$3" "$4" 2>"$3.err" && [ "$(grep -vc "^#" "$3")" -eq 1 ]' _ \
    "$BIN/tokenize" "$T/ul/tokenizer.json" "$T/ul/ids" "$T/ul/text.txt"

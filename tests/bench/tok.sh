#!/bin/bash
# tokenize's speed on the whole King James Bible (bible-kjv package, `bible gen1:1-rev22:21`,
# about 4.3 MB): load time (--info), then the whole text as one input (--whole) and line by line,
# for every tokenizer in pipelines/data/tokenizers and the optional Llama-3 one (DATA_DIR). Prints
# MB/s and tokens/s; asserts nothing.
set -u
BIN=${BIN:-bin}
TK=pipelines/data/tokenizers
L3=${DATA_DIR:-$HOME/.cache/attncoda/data}/tokenizers/llama3
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
if ! command -v bible >/dev/null || [ ! -d "$TK" ]; then echo "tok: SKIP (needs bible-kjv and $TK)"; exit 0; fi
bible gen1:1-rev22:21 >"$t/kjv.txt"
bytes=$(wc -c <"$t/kjv.txt")
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null || return 1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
printf 'tok: KJV %d bytes, %d lines\n' "$bytes" "$(wc -l <"$t/kjv.txt")"
for d in gpt2 pythia qwen2 llama3 bert-base-uncased; do
    tk=$TK/$d; [ $d = llama3 ] && tk=$L3
    [ $d = llama3 ] && { [ -f "$L3/tokenizer.model" ] || { echo "tok: llama3 SKIP (needs $L3/tokenizer.model)"; continue; }; }
    "$BIN/tokenize" --info -t "$tk" >/dev/null 2>&1 || { echo "tok: $d failed"; continue; }   # warm the page cache
    load=$(secs "$BIN/tokenize" --info -t "$tk")
    "$BIN/tokenize" --no-header -w -t "$tk" "$t/kjv.txt" >"$t/ids"
    n=$(wc -w <"$t/ids")
    whole=$(secs "$BIN/tokenize" --no-header -w -t "$tk" "$t/kjv.txt")
    lines=$(secs "$BIN/tokenize" --no-header -t "$tk" "$t/kjv.txt")
    printf 'tok: %-18s load %.2f s | whole %.2f s  %.1f MB/s  %.2g tokens/s (%d tokens) | by line %.2f s  %.1f MB/s\n' \
        "$d" "$load" "$whole" "$(echo "$bytes / ($whole - $load) / 1000000" | bc -l)" \
        "$(echo "$n / ($whole - $load)" | bc -l)" "$n" "$lines" "$(echo "$bytes / ($lines - $load) / 1000000" | bc -l)"
done

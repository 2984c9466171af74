#!/bin/bash
# sample: options, output format, determinism (seed, threads), independent streams per seed.
source tests/lib.sh
S260=$EMBED/models/stories260K
MB=$S260/stories260K.bin

"$BIN/sample" --help >"$T/help" 2>&1
check "--help documents usage and memory" grep -q "^Usage: sample .*--model" "$T/help"
check "--version" bash -c "'$BIN/sample' --version | grep -q '^sample (attncoda) '"
expect_error "missing --model is a usage error" 2 "sample: --model is required" - "$BIN/sample" "$T/o"
expect_error "missing output is a usage error" 2 "expected one OUTPUT" - "$BIN/sample" --model "$MB"
expect_error "steps beyond the context" 2 "steps 600 exceeds the model's context length 512" "$T/o" \
    "$BIN/sample" --model "$MB" -T 600 "$T/o"
expect_error "negative temperature" 2 "temperature" "$T/o" \
    "$BIN/sample" --model "$MB" --temperature -1 "$T/o"
expect_error "missing model file" 1 "nothere.bin" "$T/o" "$BIN/sample" --model "$T/nothere.bin" "$T/o"

"$BIN/sample" --model "$MB" -n 6 -T 40 --seed 3 --text-out "$T/a.txt" "$T/a" 2>/dev/null
check "ids file: provenance line then N lines of T ids, BOS first, ids in range" "$PYTHON" -c "
import json, sys
L = open('$T/a').read().split('\n')
p = json.loads(L[0][2:]); rows = [list(map(int, l.split())) for l in L[1:] if l]
ok = L[0].startswith('# ') and p['program'] == 'sample' and p['options']['seed'] == 3
ok &= p['inputs'][0]['sha256'] == 'b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696'
ok &= len(rows) == 6 and all(len(r) == 40 and r[0] == 1 for r in rows)
ok &= all(0 <= v < 512 for r in rows for v in r) and len(set(map(tuple, rows))) == 6
sys.exit(0 if ok else 1)"
check "text-out: one '# sequence i' block per sequence" \
    test "$(grep -c '^# sequence [0-9]' "$T/a.txt")" = 6
"$BIN/sample" --model "$MB" -n 6 -T 40 --seed 3 --threads 1 - >"$T/b" 2>/dev/null
check "same seed, 1 thread vs all, stdout: identical ids" cmp -s <(tail -n +2 "$T/a") <(tail -n +2 "$T/b")
"$BIN/sample" --model "$S260/stories260K.gguf" -n 6 -T 40 --seed 3 "$T/c" 2>/dev/null
check "same seed through the GGUF: identical ids" cmp -s <(tail -n +2 "$T/a") <(tail -n +2 "$T/c")
"$BIN/sample" --model "$MB" -n 6 -T 40 --seed 4 "$T/d" 2>/dev/null
check "another seed: no sequence in common (streams are not shifted copies)" "$PYTHON" -c "
import sys
a = set(open('$T/a').read().split('\n')[1:]) - {''}
d = set(open('$T/d').read().split('\n')[1:]) - {''}
sys.exit(0 if not (a & d) else 1)"
"$BIN/sample" --model "$MB" -n 2 -T 30 --temperature 0 "$T/g" 2>/dev/null
check "temperature 0: every sequence is the greedy one" \
    test "$(tail -n +2 "$T/g" | sort -u | wc -l)" = 1
"$BIN/sample" --model "$MB" -n 2 -T 30 --temperature 0.001 --seed 9 "$T/g2" 2>/dev/null
check "temperature 0.001 draws the greedy sequence" cmp -s <(tail -n +2 "$T/g") <(tail -n +2 "$T/g2")

#!/bin/bash
# Training speed: tokens/s of bin/train (updates only) beside a PyTorch 1.13 run of the same model
# and batch (tests/ref/train_torch.py bench: autograd + AdamW, same thread count). Prints figures,
# asserts nothing.
set -u
BIN=${BIN:-bin}; PYTHON=${PYTHON:-/usr/bin/python3}
STEPS=${TRAIN_BENCH_STEPS:-20}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
bible -f gen1:1-gen50:26 | sed 's/^[^ ]* //' >"$T/text.txt"
printf '%-14s %7s %14s %14s\n' model threads attncoda_tok/s torch_tok/s
for conf in configs/kjv-gpt2-s.conf configs/kjv-gpt2-m.conf configs/kjv-gpt2-l.conf configs/kjv-llama-m.conf; do
    for th in 1 2; do
        "$BIN/train" --config "$conf" --out "$T/out" --steps "$STEPS" --threads "$th" --no-checkpoints \
            --train "$T/text.txt" --valid "$T/text.txt" 2>"$T/err" >/dev/null
        ours=$(sed -n 's/.*in updates: \([0-9]*\) tokens\/s.*/\1/p' "$T/err")
        theirs=$("$PYTHON" tests/ref/train_torch.py bench "$conf" "$STEPS" "$th" 2>/dev/null)
        printf '%-14s %7s %14s %14s\n' "$(basename "$conf" .conf)" "$th" "${ours:-?}" "${theirs:-?}"
    done
done

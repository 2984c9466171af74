#!/bin/bash
# decompose's rate (attention entries per second) beside a bare read of the same dataset.
set -eu
BIN=${BIN:-bin}
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
"$BIN/synth" -S 16 -L 12 -H 12 -T 128 --seed 1 "$t/a.h5"
entries=$((16 * 12 * 12 * 128 * 129 / 2))
"$BIN/decompose" --read-only "$t/a.h5" - >/dev/null   # warm the page cache
read_s=$("$BIN/decompose" --read-only "$t/a.h5" - | cut -f2)
t0=$(date +%s.%N); "$BIN/decompose" "$t/a.h5" "$t/d.h5"; t1=$(date +%s.%N)
dec_s=$(echo "$t1 - $t0" | bc -l)
printf 'decompose: %d entries (S=16 L=12 H=12 T=128 causal)\n' "$entries"
printf 'decompose: bare read   %.3f s  %.3g entries/s\n' "$read_s" "$(echo "$entries / $read_s" | bc -l)"
printf 'decompose: decompose   %.3f s  %.3g entries/s  (%.2fx the bare read; target <= 2x)\n' \
    "$dec_s" "$(echo "$entries / $dec_s" | bc -l)" "$(echo "$dec_s / $read_s" | bc -l)"

#!/bin/bash
# extract's peak memory on a 1B-shaped random BF16 checkpoint (Llama-3.2-1B widths, 32000 vocab,
# untied head, 1.10e9 parameters, 2.2 GB; tests/bench/make_bf16_llama.py), one sequence of
# T = 64 tokens with --logits: peak RSS (getrusage ru_maxrss of the child) and bytes per
# parameter, against the rule extract --help states (at most 2.2 bytes per parameter plus the
# activations). Then the speed cost of keeping BF16 weights (widened per block in each GEMM)
# against float32 weights used in place, on the first two layers of the same shape.
# The checkpoints are kept in MEM_BENCH_DIR (default /tmp/attncoda-membench), never in the repo.
# Prints figures, asserts nothing.
set -u
BIN=${BIN:-bin}; PYTHON=${PYTHON:-/usr/bin/python3}
D=${MEM_BENCH_DIR:-/tmp/attncoda-membench}
mkdir -p "$D"
gen() {   # DIR ARGS: write once, remember the parameter count
    [ -s "$1/params" ] && return
    rm -rf "$1" && $PYTHON tests/bench/make_bf16_llama.py "$@" >"$1.params" && mv "$1.params" "$1/params"
}
gen "$D/llama1b-bf16" --layers 16 --dtype BF16
gen "$D/llama2l-bf16" --layers 2 --dtype BF16
gen "$D/llama2l-f32" --layers 2 --dtype F32
$PYTHON -c "
import random; r = random.Random(3)
print(' '.join(str(r.randrange(32000)) for _ in range(64)))" >"$D/ids.txt"

# run DIR: "peak_kB wall_s cpu_s" of one extract with attention and logits
run() {
    $PYTHON - "$BIN/extract" "$1" "$D" <<'PY'
import resource, subprocess, sys, time
x, m, d = sys.argv[1:]
t = time.time()
subprocess.run([x, "--model", m, "--ids", d + "/ids.txt", "--logits", d + "/lg.h5", d + "/a.h5"],
               check=True, stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_maxrss, round(time.time() - t, 3), round(r.ru_utime + r.ru_stime, 3))
PY
}
read -r kb wall cpu < <(run "$D/llama1b-bf16")
p=$(cat "$D/llama1b-bf16/params")
printf 'memory: 1B-shaped BF16 (%s parameters, T=64, --logits): peak RSS %.0f MB = %.2f bytes/parameter (rule: <= 2.2 + activations); %.2f s wall, %.2f s CPU\n' \
    "$p" "$(echo "$kb / 1024" | bc -l)" "$(echo "$kb * 1024 / $p" | bc -l)" "$wall" "$cpu"
run "$D/llama2l-bf16" >/dev/null; run "$D/llama2l-f32" >/dev/null   # warm the page cache
read -r kb2 wall2 cpu2 < <(run "$D/llama2l-bf16")
read -r kb4 wall4 cpu4 < <(run "$D/llama2l-f32")
printf 'memory: 2 layers of that shape: BF16 kept %.2f s CPU, %.0f MB; F32 in place %.2f s CPU, %.0f MB (BF16 costs %.2fx the CPU time)\n' \
    "$cpu2" "$(echo "$kb2 / 1024" | bc -l)" "$cpu4" "$(echo "$kb4 / 1024" | bc -l)" "$(echo "$cpu2 / $cpu4" | bc -l)"

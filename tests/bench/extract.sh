#!/bin/bash
# Speed of extract on a GPT-2-small-shaped checkpoint (124M parameters, random F32 weights,
# written by tests/ref/make_tiny.py --size gpt2-small), T = 128: tokens/s including writing the
# attention file (all 12 layers x 12 heads), beside an eager PyTorch forward that returns every
# attention map (tests/ref/reference_forward.py --bench, same threads, no LM head on either
# side), extract's GFLOP/s and the machine's single-precision GEMM rate (torch.mm 2048x2048,
# same threads). Rates are given per wall second and per CPU second (user+sys), the latter
# being the fairer comparison on a shared machine. Prints figures, asserts nothing.
# Environment: S (sequences, default 16), THREADS (default: all cores).
set -u
BIN=${BIN:-bin}; PYTHON=${PYTHON:-/usr/bin/python3}
source tests/bench/anchor.inc
S=${S:-16}; TT=128; THREADS=${THREADS:-$(nproc)}
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
$PYTHON tests/ref/make_tiny.py gpt2 "$D/gpt2s" --size gpt2-small
$PYTHON -c "
import random; r = random.Random(1)
for _ in range($S): print(' '.join(str(r.randrange(50257)) for _ in range($TT)))" >"$D/ids.txt"
head -1 "$D/ids.txt" >"$D/one.txt"

# time_extract IDS [OPTIONS]: "wall cpu" seconds of one run (the page cache is warm after the first)
time_extract() {
    local ids=$1; shift
    /usr/bin/time -f "%e %U %S" -o "$D/time" "$BIN/extract" --model "$D/gpt2s" --ids "$ids" \
        --threads "$THREADS" "$@" "$D/out.h5" >/dev/null
    awk '{print $1, $2 + $3}' "$D/time"
}
time_extract "$D/one.txt" >/dev/null
one=$(time_extract "$D/one.txt")      # load + sha256 + one sequence
all=$(time_extract "$D/ids.txt")
allnc=$(time_extract "$D/ids.txt" --deflate 0)
size=$(stat -c %s "$D/out.h5")
# the same forward passes writing one head of one layer: the cost of the model alone
one0=$(time_extract "$D/one.txt" --layers 0 --heads 0)
all0=$(time_extract "$D/ids.txt" --layers 0 --heads 0)
blas_ok=1; anchor_blas torch || blas_ok=0
pt=$(anchor "$THREADS" $PYTHON tests/ref/reference_forward.py "$D/gpt2s" --bench -S 4 -T $TT --threads "$THREADS" | cut -f2,3)
gemm=$(anchor "$THREADS" $PYTHON -c "
import torch, time
torch.set_num_threads($THREADS)
a = torch.randn(2048, 2048); b = torch.randn(2048, 2048); a @ b
t = time.perf_counter(); n = 10
for _ in range(n): a @ b
print('%.1f' % (n * 2 * 2048**3 / (time.perf_counter() - t) / 1e9))")
$PYTHON - "$S" "$TT" $one $all $pt "$gemm" "$THREADS" "$size" $one0 $all0 $allnc "$blas_ok" <<'PY'
import sys
S, T = int(sys.argv[1]), int(sys.argv[2])
w1, c1, wa, ca, ptw, ptc, gemm = map(float, sys.argv[3:10])
threads, size = sys.argv[10], int(sys.argv[11])
w10, c10, wa0, ca0, wanc, canc = map(float, sys.argv[12:18])
blas_ok = sys.argv[18] == "1"
ratio = lambda w, c: f"{w:.2f}\t{c:.2f}" if blas_ok else "refused\t\t(PyTorch on the reference BLAS)"
fw0, fc0 = (wa0 - w10) / (S - 1), (ca0 - c10) / (S - 1)
d, L, H, ff = 768, 12, 12, 3072
flop_seq = 2 * T * L * (4 * d * d + 2 * d * ff) + L * H * 4 * T * T * (d // H)
fw, fc = (wa - w1) / (S - 1), (ca - c1) / (S - 1)   # one extra sequence, incl. writing its blocks
print(f"# extract, GPT-2-small shape (124M, F32, random weights), T={T}, S={S}, threads={threads}")
print("# figure\twall\tcpu")
print(f"extract_tokens_per_s_total\t{S * T / wa:.1f}\t{S * T / ca:.1f}\t(incl. load, sha256, {size / 1e6:.0f} MB file)")
print(f"extract_tokens_per_s\t{T / fw:.1f}\t{T / fc:.1f}\t(per extra sequence, incl. writing its blocks)")
print(f"extract_tokens_per_s_model_only\t{T / fw0:.1f}\t{T / fc0:.1f}\t(--layers 0 --heads 0: forward, almost no file)")
print(f"pytorch_eager_tokens_per_s\t{ptw:.1f}\t{ptc:.1f}\t(attention maps returned, no file)")
print(f"ratio_extract_over_pytorch\t{ratio(T / fw / ptw, T / fc / ptc)}")
fwn, fcn = (wanc - w1) / (S - 1), (canc - c1) / (S - 1)
print(f"extract_tokens_per_s_deflate0\t{T / fwn:.1f}\t{T / fcn:.1f}\t(--deflate 0: uncompressed attention file)")
print(f"ratio_extract_deflate0_over_pytorch\t{ratio(T / fwn / ptw, T / fcn / ptc)}")
print(f"extract_gflops\t{flop_seq / fw / 1e9:.1f}\t{flop_seq / fc / 1e9:.1f}")
print(f"machine_sgemm_gflops\t{gemm:.1f}\t\t(torch.mm 2048x2048, wall)")
PY

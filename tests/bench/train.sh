#!/bin/bash
# Training speed: tokens/s of bin/train (updates only) beside a PyTorch run of the same model and
# batch (tests/ref/train_torch.py bench: autograd + AdamW, same thread count), the model GFLOP/s
# that rate means, and the machine's single-thread SGEMM rate (NumPy's OpenBLAS) as the anchor.
# Shapes: the pipeline's trained recipes (TRAIN_MODELS_full with family gpt2/llama, or
# TRAIN_BENCH_CONFS) and the sink study's BPE shape (tests/bench/train-bpe.conf: trial t32 of
# docs/TRAIN.md, 2,048 merges, context 512), each also at context 512 (batch 4, the same 2,048
# tokens per update). A BPE recipe learns its vocabulary from the bench text; PyTorch is given the
# vocabulary train ended with.
# Prints figures, asserts nothing.
set -u
BIN=${BIN:-bin}; PYTHON=${PYTHON:-/usr/bin/python3}
source tests/bench/anchor.inc
STEPS=${TRAIN_BENCH_STEPS:-20}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
bible -f gen1:1-gen50:26 | sed 's/^[^ ]* //' >"$T/text.txt"
pipeline_confs() {   # the full profile's trained models (pipelines/train.mk), causal ones only
    local m
    for m in $(sed -n 's/^TRAIN_MODELS_full *:= *//p' pipelines/train.mk); do
        grep -l -E '^family *= *(gpt2|llama)' "configs/$m.conf"
    done
}
confs=${TRAIN_BENCH_CONFS:-$(pipeline_confs) tests/bench/train-bpe.conf}
key() { sed -n "s/^$2[[:space:]]*=[[:space:]]*//p" "$1"; }
# Training FLOPs per token: 6 N (N = parameters of the matrices, the output layer included) plus
# 12 L T d for the attention scores and their use (Chowdhery et al. 2022, PaLM, appendix B).
flops_per_token() {   # CONF V
    local L d ff V=$2 Tc fam
    L=$(key "$1" layers) d=$(key "$1" d_model) ff=$(key "$1" d_ff) Tc=$(key "$1" context) fam=$(key "$1" family)
    awk -v L="$L" -v d="$d" -v ff="$ff" -v V="$V" -v T="$Tc" -v fam="$fam" 'BEGIN {
        per = 4 * d * d + (fam == "llama" ? 3 : 2) * d * ff
        printf "%.0f", 6 * (L * per + V * d) + 12 * L * T * d }'
}
blas_ok=1
anchor_blas torch || blas_ok=0
anchor_blas numpy || blas_ok=0
sgemm=$(anchor 1 "$PYTHON" -c '
import time, numpy as np
a = np.random.rand(1024, 1024).astype(np.float32); b = np.random.rand(1024, 1024).astype(np.float32)
a @ b; t = time.process_time(); n = 10
for _ in range(n): a @ b
print("%.1f" % (2 * 1024**3 * n / (time.process_time() - t) / 1e9))' 2>/dev/null)
echo "machine SGEMM (NumPy/OpenBLAS, 1 thread, 1024^3, CPU time): ${sgemm:-?} GFLOP/s"
printf '%-22s %7s %14s %14s %8s %9s\n' model threads attncoda_tok/s torch_tok/s ratio GFLOP/s
for conf in $confs; do
    name=$(basename "$conf" .conf)
    sed -e 's/^context[[:space:]]*=.*/context = 512/' -e 's/^batch[[:space:]]*=.*/batch = 4/' "$conf" >"$T/$name-T512.conf"
    variants=$conf
    cmp -s "$conf" "$T/$name-T512.conf" || variants="$conf $T/$name-T512.conf"
    for c in $variants; do
        label=$(basename "$c" .conf)
        for th in 1 2; do
            "$BIN/train" --config "$c" --out "$T/out" --steps "$STEPS" --threads "$th" --no-checkpoints \
                --train "$T/text.txt" --valid "$T/text.txt" 2>"$T/err" >/dev/null
            ours=$(sed -n 's/.*in updates: \([0-9]*\) tokens\/s.*/\1/p' "$T/err")
            V=$(sed -n 's/.*"vocab_size": *\([0-9]*\).*/\1/p' "$T/out/config.json" 2>/dev/null | head -1)
            fpt=$(flops_per_token "$c" "${V:-257}")
            theirs=$(anchor "$th" "$PYTHON" tests/ref/train_torch.py bench "$c" "$STEPS" "$th" "${V:-257}" 2>/dev/null)
            awk -v l="$label" -v th="$th" -v o="${ours:-0}" -v t="${theirs:-0}" -v f="$fpt" -v ok="$blas_ok" 'BEGIN {
                printf "%-22s %7s %14s %14s %8s %9.1f\n", l, th, o ? o : "?", t ? t : "?",
                       !ok ? "refused" : (o && t) ? sprintf("%.2f", o / t) : "?", o * f / 1e9 }'
        done
    done
done

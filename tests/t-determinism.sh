#!/bin/bash
# Determinism across machines (docs/TRAIN.md, Determinism): training and extraction give the same
# bytes whatever the CPU's instruction set, glibc's libm code path, OpenBLAS's kernel choice or
# the thread count. Other machines are emulated on this one:
#   ATTNCODA_GEMM=sse2        gemm's x86-64 baseline kernel instead of AVX2
#   GLIBC_TUNABLES=...-FMA... glibc's libm as on a CPU without FMA/AVX2 (its SSE2 code paths)
#   OPENBLAS_CORETYPE=...     OpenBLAS's kernels (which no program links any more: checked too)
source tests/lib.sh
NOFMA=glibc.cpu.hwcaps=-AVX2,-FMA,-AVX

check "no program links OpenBLAS" bash -c "! ldd $BIN/* | grep -q openblas"

# gemm: the baseline kernel equals the sequential definition too (the AVX2 one: test_gemm itself).
ATTNCODA_GEMM=sse2 "$BUILD/tests/test_gemm" | sed 's/^\(ok\|not ok\) - /\1 - ATTNCODA_GEMM=sse2: /'

# detmath: the same results on glibc's FMA and SSE2 paths, on every 211th float bit pattern
# (sine and cosine come from MPFR, correctly rounded, so they need no such check).
"$BUILD/tests/test_detmath" --hash 211 >"$T/h-native"
GLIBC_TUNABLES=$NOFMA "$BUILD/tests/test_detmath" --hash 211 >"$T/h-nofma"
check "detmath exp, log, erf, tanh: same bits with and without FMA (20.4M inputs each)" \
    cmp -s "$T/h-native" "$T/h-nofma"
at="4202422f c27c65d9"   # two of the inputs where glibc's expf paths differ (test_detmath.c)
"$BUILD/tests/test_detmath" --at $at >"$T/at-native"
GLIBC_TUNABLES=$NOFMA "$BUILD/tests/test_detmath" --at $at >"$T/at-nofma"
check "det_expf is the same at the inputs where glibc's expf paths differ" \
    cmp -s <(cut -d' ' -f1,4 "$T/at-native") <(cut -d' ' -f1,4 "$T/at-nofma")
if [ -n "${GLIBC_TUNABLES:-}" ]; then
    ok "the emulation is real # SKIP GLIBC_TUNABLES is already set for the whole run"
elif grep -qw fma /proc/cpuinfo; then
    check "the emulation is real: glibc's own expf differs there between the two paths" \
        bash -c "! cmp -s <(cut -d' ' -f3 '$T/at-native') <(cut -d' ' -f3 '$T/at-nofma')"
else
    ok "the emulation is real # SKIP this CPU has no FMA, so both runs take the SSE2 path"
fi

# Training on the pipeline's corpus as four machines: the first 40 updates of the GPT-2 recipe of
# the quick profile (checkpoints 0, 16, 32, 40) and the first 20 of the Llama recipe (RoPE, SwiGLU,
# grouped KV); every kernel and libm path runs in each update, so more updates would only cost
# time.
bible -f gen1:1-phm1:25 | sed 's/^[^ ]* //' >"$T/train.txt"
bible -f heb1:1-rev22:21 | sed 's/^[^ ]* //' >"$T/valid.txt"
train() {   # train NAME THREADS VAR=VALUE...
    local out=$1 threads=$2; shift 2
    env "$@" "$BIN/train" --config "configs/$model.conf" --profile quick $steps --train "$T/train.txt" \
        --valid "$T/valid.txt" --threads "$threads" --out "$T/$model-$out" 2>/dev/null
}
for model in kjv-gpt2-s kjv-llama-m; do
    steps="--steps 40"; [ $model = kjv-llama-m ] && steps="--steps 20"
    train a 1 OPENBLAS_CORETYPE=Haswell
    train b 2 OPENBLAS_CORETYPE=Sandybridge ATTNCODA_GEMM=sse2
    train c 1 OPENBLAS_CORETYPE=Zen GLIBC_TUNABLES=$NOFMA
    train d 2 OPENBLAS_CORETYPE=SkylakeX GLIBC_TUNABLES=$NOFMA ATTNCODA_GEMM=sse2
    for v in b c d; do
        check "$model: machine $v gives byte-identical checkpoints and logs" \
            bash -c "diff -r '$T/$model-a' '$T/$model-$v' >/dev/null"
    done
done

# Extraction of the trained Llama model (RoPE, SwiGLU) on the validation text, two machines.
m="$T/kjv-llama-m-a"
"$BIN/extract" --model "$m" --text "$T/valid.txt" -S 4 -T 128 --threads 1 "$T/x-a.h5" 2>/dev/null
GLIBC_TUNABLES=$NOFMA ATTNCODA_GEMM=sse2 "$BIN/extract" --model "$m" --text "$T/valid.txt" -S 4 -T 128 \
    --threads 2 "$T/x-d.h5" 2>/dev/null
check "extract: the same attention file bytes without AVX2/FMA and with 2 threads" cmp -s "$T/x-a.h5" "$T/x-d.h5"

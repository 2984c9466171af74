#!/bin/bash
# GEMM speed: single-thread GFLOP/s of src/lib/core/gemm.c (both kernels) on the training and ViT-B/16
# shapes, in process CPU time (tests/bench/gemm_bench.c). Prints figures, asserts nothing.
# GEMM_SRC=path/to/other/gemm.c measures another version of the file against the same bench.
set -u
BUILD=${BUILD:-build}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cc -std=c11 -D_GNU_SOURCE -O2 -ffp-contract=off -Isrc/lib -Isrc -o "$T/gemm_bench" tests/bench/gemm_bench.c \
    "${GEMM_SRC:-src/lib/core/gemm.c}" "$BUILD/libattncoda.a" -ljansson -lnettle -lm || exit 0
"$T/gemm_bench" "${GEMM_BENCH_REPEATS:-3}" ${GEMM_BENCH_SHAPE:+"$GEMM_BENCH_SHAPE"}
ATTNCODA_GEMM=sse2 "$T/gemm_bench" "${GEMM_BENCH_REPEATS:-3}" ${GEMM_BENCH_SHAPE:+"$GEMM_BENCH_SHAPE"}

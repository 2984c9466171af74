#!/bin/bash
# collapse.sh BIN MODEL_DIR WORK_DIR OUT SERIES INPUT_ARGS...
# Attention of every checkpoint (MODEL_DIR/checkpoints/step-NNNNNN) on the same windows, then the
# sink/content split of the entropy change between them.
set -euo pipefail
bin=$1 model=$2 work=$3 out=$4 series=$5; shift 5
files=() steps=()
for ck in "$model"/checkpoints/step-*; do
    step=$((10#${ck##*step-}))
    pipelines/checkpoint-attn.sh "$bin" "$ck" "$work/step-$step.h5" "$@"
    files+=("$work/step-$step.h5"); steps+=("$step")
done
[ ${#files[@]} -ge 2 ] || { echo "collapse.sh: $model: fewer than 2 checkpoints" >&2; exit 1; }
"$bin/collapse" --series "$series" --steps "$(IFS=,; echo "${steps[*]}")" "${files[@]}" > "$out.tmp$$"
mv "$out.tmp$$" "$out"

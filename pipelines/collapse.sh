#!/bin/bash
# collapse.sh BIN MODEL_DIR WORK_DIR OUT SERIES INPUT_ARGS...
# Attention of every checkpoint (MODEL_DIR/checkpoints/step-NNNNNN) on the same windows, then the
# sink/content split of the entropy change between them.
# With RUN_JOB set (make SCHED=slurm, pipelines/sched.mk) the checkpoints are extracted as jobs of
# their own (JOB_NAME-STEP), all at once; the first failure cancels the others.
set -euo pipefail
bin=$1 model=$2 work=$3 out=$4 series=$5; shift 5
files=() steps=() pids=()
[ -n "${RUN_JOB:-}" ] && read -ra job <<<"$RUN_JOB" && trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait; exit 143' TERM INT HUP
for ck in "$model"/checkpoints/step-*; do
    step=$((10#${ck##*step-}))
    h5=$work/step-$step.h5
    # a job only for a file checkpoint-attn.sh would extract again
    if [ -n "${RUN_JOB:-}" ] && ! { [ "$h5" -nt "$ck/model.safetensors" ] && [ "$h5" -nt "$bin/extract" ]; }; then
        "${job[@]}" --name "$JOB_NAME-$step" --out "$work/step-$step.h5" -- \
            pipelines/checkpoint-attn.sh "$bin" "$ck" "$work/step-$step.h5" "$@" &
        pids+=($!)
    elif [ -z "${RUN_JOB:-}" ]; then
        pipelines/checkpoint-attn.sh "$bin" "$ck" "$work/step-$step.h5" "$@"
    fi
    files+=("$work/step-$step.h5"); steps+=("$step")
done
for ((n = ${#pids[@]}; n > 0; n--)); do
    wait -n || { rc=$?; kill -TERM "${pids[@]}" 2>/dev/null; wait; exit $rc; }
done
[ ${#files[@]} -ge 2 ] || { echo "collapse.sh: $model: fewer than 2 checkpoints" >&2; exit 1; }
"$bin/collapse" --series "$series" --steps "$(IFS=,; echo "${steps[*]}")" "${files[@]}" > "$out.tmp$$"
mv "$out.tmp$$" "$out"

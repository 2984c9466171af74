#!/bin/bash
# perplexity.sh MODEL_ID EXTRACT MODEL_PATH MASK_DIR OUT INPUT_ARGS...
# The pruning table: the score of the unpruned model and of every pruning mask in MASK_DIR
# (mask files METRIC-PCT.txt, random orders randomSEED-PCT.txt), as the TSV that `regime` reads:
#   model  metric  sparsity  SCORE     (metric "none" at sparsity 0 is the baseline;
#   "random" is the mean over the random seeds, which are listed too)
# SCORE is picked by the model's kind (extract --info): held-out perplexity for language models;
# for image classifiers (vit) top1_agreement, the share of images whose top-1 class under the
# mask equals the unpruned model's (METHODS §5.4), so the baseline row is 1.
# MODEL_ID is the model identity that `extract` records, so that `regime` can match the rows.
# With RUN_JOB set (make SCHED=slurm, pipelines/sched.mk) every extract run is a job of its own
# (named JOB_NAME-none, JOB_NAME-MASK), all submitted at once; the table is the same.
set -euo pipefail
model=$1 extract=$2 path=$3 masks=$4 out=$5; shift 5
tmp=$out.tmp$$
trap 'rm -rf "$tmp" "$tmp.rows" "$tmp.rand" "$tmp.base" "$tmp.pred" "$tmp.d"' EXIT
kind=$("$extract" --model "$path" --info | sed -n 's/^model_type\t//p')
mask_files=("$masks"/*.txt)
# The runs as jobs: KEY none (no mask) and each mask's name; their stdout (perplexity) or
# predictions stay in $tmp.d for ppl and top1 to read. The first failure cancels the others.
run_jobs() {
    local job pids=() key m rc=0 n
    read -ra job <<<"$RUN_JOB"
    mkdir -p "$tmp.d"
    trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait; exit 143' TERM INT HUP
    for m in none "${mask_files[@]}"; do
        key=$(basename "$m" .txt)
        local margs=()
        [ "$m" = none ] || margs=(--mask "$m")
        if [ "$kind" = vit ]; then
            "${job[@]}" --name "$JOB_NAME-$key" -- "$extract" --model "$path" "$@" "${margs[@]}" --no-attention \
                --predictions "$tmp.d/$key.pred" >/dev/null &
        else
            "${job[@]}" --name "$JOB_NAME-$key" -- "$extract" --model "$path" "$@" "${margs[@]}" --no-attention \
                >"$tmp.d/$key.out" &
        fi
        pids+=($!)
    done
    for ((n = ${#pids[@]}; n > 0; n--)); do
        wait -n || { rc=$?; break; }
    done
    if [ $rc -ne 0 ]; then
        kill -TERM "${pids[@]}" 2>/dev/null
        wait
        exit $rc
    fi
    trap - TERM INT HUP
}
[ -n "${RUN_JOB:-}" ] && run_jobs "$@"
# The KEY of a run's arguments: none, or the name of its --mask file (the last two arguments).
run_key() {
    local a=("$@") n=$#
    if [ $n -ge 2 ] && [ "${a[n - 2]}" = --mask ]; then basename "${a[n - 1]}" .txt; else echo none; fi
}
# one score, or stop the whole table: an empty cell would poison the random mean
ppl() {
    local v
    if [ -n "${RUN_JOB:-}" ]; then
        v=$(sed -n 's/^perplexity\t//p' "$tmp.d/$(run_key "$@").out")
    else
        v=$("$extract" --model "$path" "$@" --no-attention | sed -n 's/^perplexity\t//p')
    fi
    [ -n "$v" ] || { echo "perplexity.sh: $path: extract gave no perplexity for: $*" >&2; exit 1; }
    echo "$v"
}
# top-1 class per image, in image order
top1() {
    local pred=$tmp.pred
    if [ -n "${RUN_JOB:-}" ]; then
        pred=$tmp.d/$(run_key "$@").pred
    else
        "$extract" --model "$path" "$@" --no-attention --predictions "$tmp.pred"
    fi
    awk -F'\t' '!/^#/ && $2 == 1 { print $3 }' "$pred"
}
agreement() {
    local v
    v=$(top1 "$@" | paste - "$tmp.base" | awk -F'\t' '{ n++; same += $1 == $2 } END { if (n) printf "%.6g", same / n }')
    [ -n "$v" ] || { echo "perplexity.sh: $path: extract gave no predictions for: $*" >&2; exit 1; }
    echo "$v"
}
if [ "$kind" = vit ]; then
    score_name=top1_agreement
    top1 "$@" > "$tmp.base"
    [ -s "$tmp.base" ] || { echo "perplexity.sh: $path: extract gave no predictions for: $*" >&2; exit 1; }
    score() { agreement "$@"; }
else
    score_name=perplexity
    score() { ppl "$@"; }
fi
row() { printf '%s\t%s\t%s\t%s\n' "$model" "$1" "$2" "$3"; }
{
    printf 'model\tmetric\tsparsity\t%s\n' "$score_name"
    if [ "$kind" = vit ]; then row none 0 1; else v=$(score "$@"); row none 0 "$v"; fi
    for m in "${mask_files[@]}"; do
        base=$(basename "$m" .txt) metric=${base%-*} pct=${base##*-}
        v=$(score "$@" --mask "$m")
        row "$metric" "$(awk -v p="$pct" 'BEGIN { printf "%g", p / 100 }')" "$v"
    done
} > "$tmp.rows"
awk -F'\t' -v OFS='\t' -v model="$model" 'NR > 1 && $2 ~ /^random[0-9]+$/ { s[$3] += $4; n[$3]++ }
    END { for (k in s) print model, "random", k, sprintf("%.6g", s[k] / n[k]) }' "$tmp.rows" \
    | sort -k3,3 > "$tmp.rand"
cat "$tmp.rows" "$tmp.rand" > "$tmp"
mv "$tmp" "$out"

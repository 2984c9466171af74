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
set -euo pipefail
model=$1 extract=$2 path=$3 masks=$4 out=$5; shift 5
tmp=$out.tmp$$
trap 'rm -f "$tmp" "$tmp.rows" "$tmp.rand" "$tmp.base" "$tmp.pred"' EXIT
kind=$("$extract" --model "$path" --info | sed -n 's/^model_type\t//p')
# one score, or stop the whole table: an empty cell would poison the random mean
ppl() {
    local v
    v=$("$extract" --model "$path" "$@" --no-attention | sed -n 's/^perplexity\t//p')
    [ -n "$v" ] || { echo "perplexity.sh: $path: extract gave no perplexity for: $*" >&2; exit 1; }
    echo "$v"
}
# top-1 class per image, in image order
top1() {
    "$extract" --model "$path" "$@" --no-attention --predictions "$tmp.pred"
    awk -F'\t' '!/^#/ && $2 == 1 { print $3 }' "$tmp.pred"
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
    for m in "$masks"/*.txt; do
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

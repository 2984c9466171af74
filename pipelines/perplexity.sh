#!/bin/bash
# perplexity.sh MODEL_ID EXTRACT MODEL_PATH MASK_DIR OUT INPUT_ARGS...
# Held-out perplexity of the unpruned model and of every pruning mask in MASK_DIR
# (mask files METRIC-PCT.txt, random orders randomSEED-PCT.txt), as the TSV that `regime` reads:
#   model  metric  sparsity  perplexity     (metric "none" at sparsity 0 is the baseline;
#   "random" is the mean over the random seeds, which are listed too)
# MODEL_ID is the model identity that `extract` records, so that `regime` can match the rows.
set -euo pipefail
model=$1 extract=$2 path=$3 masks=$4 out=$5; shift 5
tmp=$out.tmp$$
trap 'rm -f "$tmp" "$tmp.rows" "$tmp.rand"' EXIT
# one perplexity, or stop the whole table: an empty cell would poison the random mean
ppl() {
    local v
    v=$("$extract" --model "$path" "$@" --no-attention | sed -n 's/^perplexity\t//p')
    [ -n "$v" ] || { echo "perplexity.sh: $path: extract gave no perplexity for: $*" >&2; exit 1; }
    echo "$v"
}
row() { printf '%s\t%s\t%s\t%s\n' "$model" "$1" "$2" "$3"; }
{
    printf 'model\tmetric\tsparsity\tperplexity\n'
    v=$(ppl "$@"); row none 0 "$v"
    for m in "$masks"/*.txt; do
        base=$(basename "$m" .txt) metric=${base%-*} pct=${base##*-}
        v=$(ppl "$@" --mask "$m")
        row "$metric" "$(awk -v p="$pct" 'BEGIN { printf "%g", p / 100 }')" "$v"
    done
} > "$tmp.rows"
awk -F'\t' -v OFS='\t' -v model="$model" 'NR > 1 && $2 ~ /^random[0-9]+$/ { s[$3] += $4; n[$3]++ }
    END { for (k in s) print model, "random", k, sprintf("%.6g", s[k] / n[k]) }' "$tmp.rows" \
    | sort -k3,3 > "$tmp.rand"
cat "$tmp.rows" "$tmp.rand" > "$tmp"
mv "$tmp" "$out"

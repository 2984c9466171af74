#!/bin/bash
# perplexity.sh MODEL_ID EXTRACT MODEL_PATH MASK_DIR OUT INPUT_ARGS...
# Held-out perplexity of the unpruned model and of every pruning mask in MASK_DIR
# (mask files METRIC-PCT.txt, random orders randomSEED-PCT.txt), as the TSV that `regime` reads:
#   model  metric  sparsity  perplexity     (metric "none" at sparsity 0 is the baseline)
set -euo pipefail
model=$1 extract=$2 path=$3 masks=$4 out=$5; shift 5
ppl() { "$extract" --model "$path" "$@" --no-attention | sed -n 's/^perplexity\t//p'; }
tmp=$out.tmp$$
trap 'rm -f "$tmp" "$tmp.rows" "$tmp.rand"' EXIT
{
    printf 'model\tmetric\tsparsity\tperplexity\n'
    printf '%s\tnone\t0\t%s\n' "$model" "$(ppl "$@")"
    for m in "$masks"/*.txt; do
        base=$(basename "$m" .txt) metric=${base%-*} pct=${base##*-}
        printf '%s\t%s\t%s\t%s\n' "$model" "$metric" "$(awk -v p="$pct" 'BEGIN { printf "%g", p / 100 }')" "$(ppl "$@" --mask "$m")"
    done
} > "$tmp.rows"
# the random baseline is the mean over its seeds (METHODS §5.4)
awk -F'\t' -v OFS='\t' 'NR > 1 && $2 ~ /^random[0-9]+$/ { s[$3] += $4; n[$3]++ }
    END { for (k in s) print "'"$model"'", "random", k, sprintf("%.6g", s[k] / n[k]) }' "$tmp.rows" \
    | sort -k3,3 > "$tmp.rand"
cat "$tmp.rows" "$tmp.rand" > "$tmp"
rm -f "$tmp.rows" "$tmp.rand"
mv "$tmp" "$out"

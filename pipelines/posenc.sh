#!/bin/bash
# posenc.sh BIN OUT MODEL_DIR LABEL EMERGENCE [MODEL_DIR LABEL EMERGENCE ...]
# The matched position-encoding set side by side (METHODS §7.4, docs/FRAMES.md): one row per model,
#   pos               the position encoding, as `extract --info` reads it from the model directory
#   model             the model's name (its directory)
#   label, label_share, runner_up, sink_head_share, from_layer
#                     the model label of `frames` (LABEL, frames-label-NAME.tsv): the sink-head
#                     share is that of the layers >= from_layer
#   emergence_step, emergence_label, final_label
#                     the emergence of the label over training (EMERGENCE, frames-emergence-NAME.tsv)
#   val_loss          the final validation loss in nats/byte of MODEL_DIR/report.tsv (its
#                     val_nats_per_byte row where it has one: a BPE model's val_loss is per token)
# Rows keep the order of the arguments. Written through a temporary name, with a JSON provenance.
set -euo pipefail
die() { echo "posenc.sh: $*" >&2; exit "${2:-1}"; }
[ $# -ge 5 ] && [ $((($# - 2) % 3)) -eq 0 ] || { echo "posenc.sh: usage: BIN OUT (MODEL_DIR LABEL EMERGENCE)..." >&2; exit 2; }
bin=$1 out=$2; shift 2
json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
# cells FILE COLUMN...: the named cells of the one data row of a table ('#' lines, a header, one
# row), tab-separated; a one-line error when a column is missing or there is not exactly one row
cells() {
    local f=$1; shift
    awk -F'\t' -v f="$f" -v want="$*" '
        /^#/ { next }
        !h { h = 1; nw = split(want, w, " "); for (i = 1; i <= NF; i++) at[$i] = i
             for (k = 1; k <= nw; k++) if (!(w[k] in at)) { printf "posenc.sh: %s: no column %s\n", f, w[k] > "/dev/stderr"; bad = 1; exit 1 }
             next }
        { n++; line = ""; for (k = 1; k <= nw; k++) line = line (k > 1 ? "\t" : "") $(at[w[k]]) }
        END { if (bad) exit 1
              if (n != 1) { printf "posenc.sh: %s: expected one row, found %d\n", f, n > "/dev/stderr"; exit 1 }
              print line }' "$f"
}
tmp=$out.tmp$$
trap 'rm -f "$tmp"' EXIT
inputs="" rows=""
while [ $# -gt 0 ]; do
    model=$1 label=$2 emerge=$3; shift 3
    name=$(basename "$model")
    for f in "$model/report.tsv" "$label" "$emerge"; do [ -f "$f" ] || die "$f: not found"; done
    pos=$("$bin/extract" --model "$model" --info | awk -F'\t' '$1 == "position_encoding" { print $2 }')
    [ -n "$pos" ] || die "$model: extract --info gave no position_encoding"
    lc=$(cells "$label" label label_share runner_up sink_head_share from_layer) || exit 1
    ec=$(cells "$emerge" emergence_step label final_label) || exit 1
    # per byte: a BPE model's val_loss is per token, and its report adds val_nats_per_byte
    vl=$(awk -F'\t' '$1 == "val_loss" { v = $4; n++ } $1 == "val_nats_per_byte" { b = $4; nb++ }
                     END { if (nb == 1) print b; else if (n == 1 && nb == 0) print v }' "$model/report.tsv")
    [ -n "$vl" ] || die "$model/report.tsv: no single val_loss (or val_nats_per_byte) row"
    rows+="$pos	$name	$lc	$ec	$vl"$'\n'
    for f in "$model/config.json" "$model/report.tsv" "$label" "$emerge"; do
        [ -f "$f" ] || continue
        inputs+="${inputs:+,}{\"name\":$(json_str "$f"),\"sha256\":\"$(sha256sum "$f" | cut -d' ' -f1)\"}"
    done
done
{
    echo "# provenance: {\"program\":\"posenc.sh\",\"inputs\":[$inputs],\"options\":{}}"
    echo "# position encodings side by side (METHODS §7.4): one recipe, differing only in pos"
    printf 'pos\tmodel\tlabel\tlabel_share\trunner_up\tsink_head_share\tfrom_layer\temergence_step\temergence_label\tfinal_label\tval_loss\n'
    printf '%s' "$rows"
} >"$tmp"
mv "$tmp" "$out"

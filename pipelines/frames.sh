#!/bin/bash
# frames.sh BIN MODEL_DIR WORK_DIR SERIES EMERGENCE PLOT -- FRAMES_OPTS... -- INPUT_ARGS...
# Reference frames over training (METHODS §7.4): the attention of every checkpoint
# (MODEL_DIR/checkpoints/step-NNNNNN) on the same windows (WORK_DIR/step-N.h5, shared with
# collapse.sh), `frames` on each (its tokenizer: the checkpoint's tokenizer.json), then
#   SERIES     per checkpoint: the model label, runner-up and the shares of the heads (layers the
#              model label uses) holding each label
#   EMERGENCE  one row: the first checkpoint from which the model label is the same sink label
#              (not none) for three consecutive checkpoints, or nan when there is none
#   PLOT       per checkpoint and head: step, checkpoint number, slot, layer, head, label and its code (0 none,
#              1 centralized, 2 distributed, 3 bidirectional) for pipelines/paper/frames.gp
set -euo pipefail
bin=$1 model=$2 work=$3 series=$4 emerge=$5 plot=$6; shift 6
[ "${1:-}" = -- ] || { echo "frames.sh: expected -- FRAMES_OPTS -- INPUT_ARGS" >&2; exit 2; }
shift
fopts=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do fopts+=("$1"); shift; done
[ "${1:-}" = -- ] || { echo "frames.sh: expected -- before INPUT_ARGS" >&2; exit 2; }
shift
name=$(basename "$model")
mkdir -p "$work/frames"
steps=()
for ck in "$model"/checkpoints/step-*; do
    step=$((10#${ck##*step-}))
    pipelines/checkpoint-attn.sh "$bin" "$ck" "$work/step-$step.h5" "$@"
    tokarg=()
    [ -f "$ck/tokenizer.json" ] && tokarg=(--tokenizer "$ck/tokenizer.json")
    "$bin/frames" "${tokarg[@]}" "${fopts[@]}" --label "$work/frames/step-$step.label.tsv" \
        --heads "$work/frames/step-$step.heads.tsv" "$work/step-$step.h5" >/dev/null
    steps+=("$step")
done
[ ${#steps[@]} -ge 3 ] || { echo "frames.sh: $model: fewer than 3 checkpoints" >&2; exit 1; }

tmp_s=$series.tmp$$ tmp_e=$emerge.tmp$$ tmp_p=$plot.tmp$$
trap 'rm -f "$tmp_s" "$tmp_e" "$tmp_p"' EXIT
opts="${fopts[*]:-}"
# provenance: this script, the per-checkpoint frames tables (each with frames' own provenance) and
# their checksums, the frames options and the input windows
json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
inputs=""
for step in "${steps[@]}"; do
    f=$work/frames/step-$step.label.tsv
    inputs+="${inputs:+,}{\"name\":$(json_str "$f"),\"sha256\":\"$(sha256sum "$f" | cut -d' ' -f1)\"}"
done
prov="{\"program\":\"frames.sh\",\"inputs\":[$inputs],\"options\":{\"frames\":$(json_str "$opts"),\"windows\":$(json_str "$*")}}"
{
    echo "# provenance: $prov"
    echo "# frames over training of $name: frames ${opts:-(defaults)}; checkpoints ${steps[*]}"
    printf 'model\tstep\tlabel\tlabel_share\trunner_up\trunner_share\tsink_heads\theads\tcentralized\tdistributed\tbidirectional\n'
    for step in "${steps[@]}"; do
        d=$work/frames/step-$step
        # the label row, then the head labels of the layers it was taken from
        awk -F'\t' -v name="$name" -v step="$step" '
            FNR == 1 { file++ }
            /^#/ { next }
            file == 1 && !seen { seen = 1; next }
            file == 1 { lab = $2; ls = $3; ru = $4; rs = $5; sh = $6; nh = $7; from = $9 }
            file == 2 && !seen2 { seen2 = 1; next }
            file == 2 && $1 >= from { n[$3]++ }
            END { printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.6g\t%.6g\t%.6g\n", name, step, lab, ls, ru, rs, sh, nh,
                         n["centralized"] / nh, n["distributed"] / nh, n["bidirectional"] / nh }' \
            "$d.label.tsv" "$d.heads.tsv"
    done
} >"$tmp_s"
awk -F'\t' -v name="$name" -v prov="$prov" '
    /^#/ { next }
    !header { header = 1; next }
    { st[n] = $2; lb[n] = $3; n++ }
    END {
        e = "nan"; el = "-"
        for (i = 0; i + 2 < n; i++)
            if (lb[i] != "none" && lb[i] == lb[i + 1] && lb[i] == lb[i + 2]) { e = st[i]; el = lb[i]; break }
        print "# provenance: " prov
        print "# emergence step (METHODS §7.4): first checkpoint of three in a row with the same sink label"
        printf "model\temergence_step\tlabel\tcheckpoints\tfinal_label\n"
        printf "%s\t%s\t%s\t%d\t%s\n", name, e, el, n, lb[n - 1]
    }' "$tmp_s" >"$tmp_e"
{
    printf 'step\tcheckpoint\tslot\tlayer\thead\tlabel\tcode\n'
    i=0
    for step in "${steps[@]}"; do
        awk -F'\t' -v step="$step" -v ck=$((i++)) '
            /^#/ { next }
            !header { header = 1; next }
            { c = $3 == "centralized" ? 1 : $3 == "distributed" ? 2 : $3 == "bidirectional" ? 3 : 0
              printf "%s\t%d\t%d\t%s\t%s\t%s\t%d\n", step, ck, n++, $1, $2, $3, c }' "$work/frames/step-$step.heads.tsv"
    done
} >"$tmp_p"
mv "$tmp_s" "$series"
mv "$tmp_e" "$emerge"
mv "$tmp_p" "$plot"

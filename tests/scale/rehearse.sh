#!/bin/bash
# make rehearse: the per-model chain of `make all` (pipelines/models.mk, analysis.mk) on
# random-weight checkpoints at the exact shapes of the paper's models (tests/scale/make_real_shape.py:
# real config.json, released dtype, planted sinks), measured stage by stage with /usr/bin/time -v:
# CPU seconds (user + system), wall seconds and peak RSS. Feeds docs/SCALE.md.
#
# Settings are make all's (PROFILE=full: T=128 tokens, 64 sequences, sparsities 0.1,0.2,0.3, four
# metrics + five random orders = 27 masks), reduced only here, and every reduced figure is scaled
# back linearly (column `scale`):
#   - REHEARSE_S sequences (default 4 = one --batch, so peak RSS is the full run's) instead of 64,
#     for extract, decompose, distance and each perplexity run;
#   - the perplexity stage runs the unpruned model and REHEARSE_MASKS masks (default 2: the first
#     metric mask and the first random one) and is scaled to 1 + 27 runs;
#   - the image model (vit) reads all of IMAGES_DIR, as make all does: no sequence scaling.
# The stages: extract, frames (pipelines/frames.mk), decompose, distance, reversal, cluster,
# prune-rank, perplexity (pipelines/perplexity.sh's runs). REHEARSE_ONLY_ATTN=1: extract and frames
# only (what the rest of the chain does not need).
# Everything runs with one thread (--threads 1, OMP_NUM_THREADS=1), so CPU seconds are the work,
# and under nice. Llama-3.1-8B (MODELS=llama-3.1-8b) is built with its exact width and 1 and then 2
# of its 32 layers: the difference is the per-layer cost, extrapolated to 32 layers.
#   MODELS="gpt2 pythia-70m" tests/scale/rehearse.sh      (default: the ten paper models)
# Output: REHEARSE_DIR/rehearse.tsv (one row per stage) and a summary on stdout. Checkpoints are
# deleted after each model unless REHEARSE_KEEP=1.
set -euo pipefail
BIN=${BIN:-bin}; PYTHON=${PYTHON:-/usr/bin/python3}
D=${REHEARSE_DIR:-/tmp/attncoda-rehearse}
S=${REHEARSE_S:-4}; NMASK=${REHEARSE_MASKS:-2}
FULL_S=64 T=128 FULL_MASKS=27
IMAGES_DIR=${IMAGES_DIR:-pipelines/data/images}
MODELS=${MODELS:-gpt2 pythia-70m pythia-160m bert-base-uncased vit-base-patch16-224 pythia-410m qwen2.5-0.5b pythia-1b llama-3.2-1b pythia-1.4b}
export OMP_NUM_THREADS=1
mkdir -p "$D"
TEXT=$D/kjv-valid.txt
if [ ! -s "$TEXT" ]; then   # the validation books, as pipelines/corpus.mk makes them
    if [ -s results/corpus/kjv-valid.txt ]; then cp results/corpus/kjv-valid.txt "$TEXT"
    else bible -f heb1:1-rev22:21 | sed 's/^[^ ]* //' >"$TEXT.tmp" && mv "$TEXT.tmp" "$TEXT"; fi
fi
OUT=$D/rehearse.tsv
[ -s "$OUT" ] || printf 'model\tlayers\tstage\tcpu_s\twall_s\tpeak_rss_kB\tscale\tparams\tfile_bytes\tdtype\n' >"$OUT"

# measure MODEL LAYERS STAGE SCALE CMD...: one row of the table (the command's stdout is kept in $D/stdout)
measure() {
    local m=$1 l=$2 st=$3 sc=$4; shift 4
    nice -n 10 /usr/bin/time -v -o "$D/time.txt" "$@" >"$D/stdout"
    awk -F': ' -v m="$m" -v l="$l" -v st="$st" -v sc="$sc" -v info="$INFO" '
        /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { r = $2 }
        /Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
        END { printf "%s\t%s\t%s\t%.2f\t%.2f\t%d\t%s\t%s\n", m, l, st, u + s, w, r, sc, info }' "$D/time.txt" >>"$OUT"
    tail -1 "$OUT" >&2
}

chain() {   # MODEL LAYERS
    local m=$1 l=$2 dir=$D/$1-L$2 in_attn in_ppl scale pscale
    rm -rf "$dir"
    read -r params bytes full kept dtype < <(nice -n 10 $PYTHON tests/scale/make_real_shape.py "$m" "$dir" --layers "$l")
    INFO="$params	$bytes	$dtype"
    l=$kept
    if [ "$m" = vit-base-patch16-224 ]; then
        in_attn=(--images "$IMAGES_DIR"); in_ppl=("${in_attn[@]}"); scale=1
    else
        in_attn=(--text "$TEXT" -S "$S" -T $T --seed 1); in_ppl=(--text "$TEXT" -S "$S" -T $T --seed 2)
        scale=$(awk -v a=$FULL_S -v b="$S" 'BEGIN { print a / b }')
    fi
    measure "$m" "$l" extract "$scale" "$BIN/extract" --threads 1 --model "$dir" "${in_attn[@]}" "$dir/attn.h5"
    # frames reads the model's tokenizer, which an image model has none of (run without it)
    local tok=(--tokenizer "$dir"); [ "$m" = vit-base-patch16-224 ] && tok=()
    measure "$m" "$l" frames "$scale" "$BIN/frames" "${tok[@]}" --heads "$dir/fh.tsv" --layers "$dir/fl.tsv" \
        --label "$dir/flabel.tsv" --keys "$dir/fkeys.tsv" "$dir/attn.h5"
    [ "${REHEARSE_ONLY_ATTN:-0}" = 1 ] && { [ "${REHEARSE_KEEP:-0}" = 1 ] || rm -rf "$dir"; return; }
    measure "$m" "$l" decompose "$scale" "$BIN/decompose" --tsv "$dir/sinks.tsv" "$dir/attn.h5" "$dir/decomp.h5"
    measure "$m" "$l" distance "$scale" "$BIN/distance" "$dir/attn.h5" "$dir/dist.h5"
    measure "$m" "$l" reversal 1 "$BIN/reversal" --seed 1 "$dir/dist.h5"
    measure "$m" "$l" cluster 1 "$BIN/cluster" --heads-tsv "$dir/heads.tsv" "$dir/dist.h5"
    mkdir -p "$dir/masks"
    measure "$m" "$l" prune-rank 1 "$BIN/prune-rank" --sparsity 0.1,0.2,0.3 --masks-dir "$dir/masks" "$dir/dist.h5"
    # perplexity.sh's runs: the unpruned model, then one per mask; vit scores top-1 predictions
    local extra=() masks=() k=0
    [ "$m" = vit-base-patch16-224 ] && extra=(--predictions "$dir/pred.tsv")
    masks=("$(ls "$dir"/masks/*.txt | grep -v /random | head -1)" "$(ls "$dir"/masks/random*.txt | head -1)")
    pscale=$(awk -v a="$scale" -v n=$((FULL_MASKS + 1)) -v k=$((NMASK + 1)) 'BEGIN { print a * n / k }')
    measure "$m" "$l" perplexity-base "$pscale" "$BIN/extract" --threads 1 --model "$dir" "${in_ppl[@]}" --no-attention "${extra[@]}"
    for mk in "${masks[@]}"; do
        [ $k -lt "$NMASK" ] || break; k=$((k + 1))
        measure "$m" "$l" perplexity-mask "$pscale" "$BIN/extract" --threads 1 --model "$dir" "${in_ppl[@]}" --no-attention --mask "$mk" "${extra[@]}"
    done
    [ "${REHEARSE_KEEP:-0}" = 1 ] || rm -rf "$dir"
}

for m in $MODELS; do
    if [ "$m" = llama-3.1-8b ]; then chain "$m" 1; chain "$m" 2; else chain "$m" 0; fi
done
echo "rehearse: rows in $OUT (docs/SCALE.md turns them into CPU-hours: tests/scale/scale_table.py)" >&2

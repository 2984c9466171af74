#!/bin/bash
# pipelines/check-tables.sh on a made-up combined table (one row per model): check and freeze keep
# exactly the rows of the models a bare clone has (BARE_ROWS), however the optional models' rows
# name their store. Tables made with DATA_DIR and frozen without it once froze an optional row.
source tests/lib.sh
C=pipelines/check-tables.sh
store=$T/store
mkdir -p "$T/r"
{
    printf '# provenance: {"inputs":[{"name":"%s/models/opt/opt.bin"}]}\n' "$store"
    printf 'model\tvalue\n'
    printf 'results/quick/models/kjv-a\t0.5\n'
    printf 'pipelines/data/models/emb/emb.bin\t0.25\n'
    printf '%s/models/opt/opt.bin\t0.125\n' "$store"
    printf 'elsewhere/opt2.bin\t0.0625\n'
} >"$T/r/regime.tsv"
printf 'results/quick/models/kjv-a\t0.5\npipelines/data/models/emb/emb.bin\t0.25\n' >"$T/bare-rows"
env_for() { echo "DATA_DIR=$1 HF_MODELS_DIR= COMBINED=regime.tsv BARE_ROWS='results/quick/models/ pipelines/data/'"; }
# rows NAME FILE: the data rows of FILE must be the bare clone's two rows, in order
rows() {
    if grep -v '^#' "$2" | tail -n +2 | cmp -s - "$T/bare-rows"; then ok "$1"
    else fail "$1: $(grep -v '^#' "$2" | tr '\t\n' ' |')"; fi
}
for dd in "" "$store"; do
    label=${dd:+with DATA_DIR}; label=${label:-without DATA_DIR}
    rm -rf "$T/exp"
    check "freeze $label exits 0" bash -c "$(env_for "$dd") $C freeze '$T/exp' - '$T/r/regime.tsv'"
    rows "freeze $label keeps only the bare clone's rows" "$T/exp/regime.tsv"
    check "check $label exits 0" bash -c "$(env_for "$dd") $C check '$T/exp' '$T/out' '$T/r/regime.tsv' >/dev/null"
    rows "check $label compares only the bare clone's rows" "$T/out/results/regime.tsv"
done
check "freeze with DATA_DIR names the store DATA_DIR/ in the provenance comment" \
    grep -q '"DATA_DIR/models/opt/opt.bin"' "$T/exp/regime.tsv"
expect_error "freeze with an empty BARE_ROWS refuses (it would keep no row)" 2 \
    "check-tables.sh: BARE_ROWS is empty" "$T/none/regime.tsv" \
    env COMBINED=regime.tsv BARE_ROWS= $C freeze "$T/none" - "$T/r/regime.tsv"

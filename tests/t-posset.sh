#!/bin/bash
# The matched position-encoding set (METHODS §7.4; configs/kjv-pos-*.conf, pipelines/posenc.mk,
# pipelines/posenc.sh, docs/FRAMES.md): the six recipes differ only in pos, they stay out of the
# other analyses, `extract --info` names every encoding, and the side-by-side table made by the
# make rules from two of the recipes trained for 20 updates has the right rows and values.
source tests/lib.sh
KINDS="learned sinusoidal rope rope-ntk alibi none"

# ---------- the recipes ----------
# shared KEY = VALUE lines of a recipe: comments, name, pos and rope_ntk_factor left out
shared() { grep -v '^[[:space:]]*#' "$1" | grep -v '^[[:space:]]*$' | grep -Ev '^(name|pos|rope_ntk_factor)[[:space:]]*=' | sort; }
recipes_match() {
    local p ref=$T/shared-learned
    shared configs/kjv-pos-learned.conf >"$ref"
    for p in $KINDS; do
        [ -f configs/kjv-pos-$p.conf ] || { echo "# configs/kjv-pos-$p.conf missing"; return 1; }
        shared configs/kjv-pos-$p.conf | cmp -s - "$ref" || { echo "# kjv-pos-$p differs in a shared key"; return 1; }
    done
}
check "the six kjv-pos recipes differ only in name, pos and rope_ntk_factor" recipes_match
key() { sed -n "s/^$2[[:space:]]*=[[:space:]]*//p" "configs/kjv-pos-$1.conf"; }
own_keys() {
    local p
    for p in $KINDS; do
        [ "$(key $p name)" = "kjv-pos-$p" ] && [ "$(key $p pos)" = "$p" ] || { echo "# kjv-pos-$p: name or pos"; return 1; }
        if [ $p = rope-ntk ]; then [ -n "$(key $p rope_ntk_factor)" ] || return 1
        else [ -z "$(key $p rope_ntk_factor)" ] || return 1; fi
        [ -z "$(key $p role)" ] || { echo "# kjv-pos-$p has a role (it would join the regime split)"; return 1; }
    done
}
check "each recipe names itself kjv-pos-POS, sets pos = POS, only rope-ntk a factor, none a role" own_keys

# the make variables: the set is POS_MODELS and no part of MODELS (every other analysis, the regime split)
mkvars() {
    make -s --no-print-directory PROFILE=quick BIN="$BIN" BUILD="$BUILD" \
        --eval 'print-%: ; @echo "$*=$($*)"' print-POS_MODELS print-MODELS print-TRAINED print-HELDOUT_MODELS \
        print-TABLES 2>/dev/null
}
mkvars >"$T/vars.txt"
check "POS_MODELS is the six recipes" grep -qx "POS_MODELS=kjv-pos-learned kjv-pos-sinusoidal kjv-pos-rope kjv-pos-rope-ntk kjv-pos-alibi kjv-pos-none" "$T/vars.txt"
check "no kjv-pos model in MODELS, TRAINED or HELDOUT_MODELS" bash -c "! grep -E '^(MODELS|TRAINED|HELDOUT_MODELS)=.*kjv-pos' '$T/vars.txt'"
check "TABLES holds frames-pos.tsv and no per-model table of the set" bash -c "
    t=\$(grep '^TABLES=' '$T/vars.txt'); [[ \$t == *results/quick/tables/frames-pos.tsv* ]] && [[ \$t != *-kjv-pos-* ]]"

# ---------- extract --info names the position encoding ----------
bible -f gen1:1-gen20:18 | sed 's/^[^ ]* //' >"$T/train.txt"
bible -f exo1:1-exo6:30 | sed 's/^[^ ]* //' >"$T/valid.txt"
info_pos() { "$BIN/extract" --model "$1" --info | awk -F'\t' '$1 == "position_encoding" { print $2 }'; }
for body in gpt2 llama; do
    for p in $KINDS; do
        d=$T/tiny-$body-$p
        { printf '%s\n' "family = $body" "layers = 1" "d_model = 16" "heads = 2" "d_ff = 32" "context = 16" \
              "eval_windows = 2" "pos = $p"; [ $p = rope-ntk ] && echo "rope_ntk_factor = 4"; } >"$d.conf"
        "$BIN/train" --config "$d.conf" --train "$T/train.txt" --valid "$T/valid.txt" --out "$d" --steps 1 \
            --no-checkpoints --threads 1 >/dev/null 2>&1
        got=$(info_pos "$d" 2>&1)
        check "extract --info: $body trained with pos = $p says position_encoding $p (got '$got')" test "$got" = "$p"
    done
done
check "extract --info: stories260K (llama2.c) says position_encoding rope" \
    test "$(info_pos "$EMBED/models/stories260K/stories260K.bin")" = rope
check "extract --info: stories260K (GGUF) says position_encoding rope" \
    test "$(info_pos "$EMBED/models/stories260K/stories260K.gguf")" = rope
HF=$DATA_DIR/hf
for dp in gpt2:learned bert-base-uncased:learned opt-125m:learned Llama-3.1-8B:rope Qwen2.5-0.5B:rope \
          pythia-410m-deduped:rope phi-2:rope Mistral-7B-v0.1:rope Qwen3-0.6B:rope; do
    d=${dp%%:*} p=${dp#*:}
    with_file "$HF/$d/config.json" check "extract --info: released $d config says position_encoding $p" \
        test "$(info_pos "$HF/$d" 2>/dev/null)" = "$p"
done

# ---------- the side-by-side table through the make rules ----------
# two recipes of the set, 20 updates (checkpoints 0, 16, 20), on the windows of a small text
R2=$T/r
SET="kjv-pos-rope kjv-pos-rope-ntk"
mkdir -p "$R2/models"
for m in $SET; do
    "$BIN/train" --config configs/$m.conf --train "$T/train.txt" --valid "$T/valid.txt" --out "$R2/models/$m" \
        --steps 20 --threads 1 >/dev/null 2>"$T/train-$m.err" && touch "$R2/models/$m/.done" ||
        echo "# train $m: $(tail -c 300 "$T/train-$m.err")"
done
if make -s --no-print-directory R="$R2" PROFILE=quick BIN="$BIN" BUILD="$BUILD" MODELS= POS_MODELS="$SET" \
    KJV_TRAIN="$T/train.txt" KJV_VALID="$T/valid.txt" NSEQ=3 TOKENS=64 \
    "$R2/tables/frames-pos.tsv" "$R2/paper/tables/frames-pos.md" "$R2/paper/tables/frames-pos.tex" \
    "$R2/paper/figures/frames-kjv-pos-rope.png" >"$T/mk.log" 2>&1; then
    ok "posenc.mk: two recipes of the set labelled, their checkpoints labelled, the table made"
else fail "posenc.mk: make failed: $(tail -c 400 "$T/mk.log")"; fi
P=$R2/tables/frames-pos.tsv
rows() { grep -v '^#' "$P" | awk -F'\t' 'NR > 1'; }
check "frames-pos.tsv: header, then one row per model with pos from extract --info (rope, rope-ntk)" bash -c "
    [ \"\$(grep -v '^#' '$P' | head -1)\" = \"\$(printf 'pos\tmodel\tlabel\tlabel_share\trunner_up\tsink_head_share\tfrom_layer\temergence_step\temergence_label\tfinal_label\tval_loss')\" ] &&
    [ \"\$(grep -v '^#' '$P' | awk -F'\t' 'NR > 1 { printf \"%s:%s \", \$1, \$2 }')\" = 'rope:kjv-pos-rope rope-ntk:kjv-pos-rope-ntk ' ]"
# each row against its sources: frames run here on the attention file, the emergence table, report.tsv
row_ok() {
    local m=$1 r lab sh fl es vl
    r=$(rows | awk -F'\t' -v m="$m" '$2 == m')
    [ -n "$r" ] || return 1
    lab=$("$BIN/frames" --tokenizer "$R2/models/$m" --label "$T/lab-$m.tsv" "$R2/attn/$m.h5" | cut -f2)
    sh=$(grep -v '^#' "$T/lab-$m.tsv" | awk -F'\t' 'NR == 2 { print $8 }')
    es=$(grep -v '^#' "$R2/tables/frames-emergence-$m.tsv" | awk -F'\t' 'NR == 2 { print $2 }')
    fl=$(grep -v '^#' "$R2/tables/frames-train-$m.tsv" | awk -F'\t' 'END { print $3 }')
    # nats/byte: the recipe is BPE, whose val_loss is per token
    vl=$(awk -F'\t' '$1 == "val_nats_per_byte" { print $4 }' "$R2/models/$m/report.tsv")
    echo "# $m: label $lab, sink-head share $sh, emergence $es, last checkpoint's label $fl, val loss $vl"
    [ "$(cut -f3 <<<"$r")" = "$lab" ] && [ "$(cut -f6 <<<"$r")" = "$sh" ] && [ "$(cut -f8 <<<"$r")" = "$es" ] &&
        [ "$(cut -f10 <<<"$r")" = "$fl" ] && [ "$(cut -f11 <<<"$r")" = "$vl" ] &&
        awk -v s="$sh" -v v="$vl" 'BEGIN { exit !(s >= 0 && s <= 1 && v > 0 && v < 6) }' &&
        case $lab in none|centralized|distributed|bidirectional) ;; *) false ;; esac &&
        case $es in nan|0|16|20) ;; *) false ;; esac
}
for m in $SET; do
    check "frames-pos.tsv: $m's label and sink-head share are frames' own, emergence and val loss those of its tables" row_ok "$m"
done
check "frames-pos.tsv: each model's checkpoints 0 16 20 were labelled" bash -c "
    for m in $SET; do [ \"\$(grep -v '^#' '$R2/tables/frames-train-'\$m.tsv | awk -F'\t' 'NR > 1 { printf \"%s \", \$2 }')\" = '0 16 20 ' ] || exit 1; done"
check "frames-pos.tsv: JSON provenance with the config, report, label and emergence table of each model" "$PYTHON" -c "
import json, sys
p = json.loads(open('$P').readline().split('# provenance: ', 1)[1])
names = [i['name'] for i in p['inputs']]
sys.exit(not (p['program'] == 'posenc.sh' and len(names) == 8 and all(len(i['sha256']) == 64 for i in p['inputs'])
              and names[1].endswith('kjv-pos-rope/report.tsv')))"
check "the paper's table has both rows and the caption" bash -c "
    grep -q 'Matched position-encoding set' '$R2/paper/tables/frames-pos.md' &&
    [ \$(grep -c '| kjv-pos-rope' '$R2/paper/tables/frames-pos.md') -eq 2 ] && head -c 8 '$R2/paper/figures/frames-kjv-pos-rope.png' | grep -q PNG"
make -s --no-print-directory R="$R2" PROFILE=quick BIN="$BIN" BUILD="$BUILD" MODELS= POS_MODELS="$SET" \
    KJV_TRAIN="$T/train.txt" KJV_VALID="$T/valid.txt" NSEQ=3 TOKENS=64 "$R2/paper/data/frames-pos.tsv" >/dev/null 2>&1
"$PYTHON" pipelines/paper/paper.py results "$T/RESULTS.md" "$R2/paper" >/dev/null 2>&1
lr=$(rows | awk -F'\t' '$1 == "rope" { print $3 }') ln=$(rows | awk -F'\t' '$1 == "rope-ntk" { print $3 }')
check "RESULTS.md: the matched-set part puts the seed's prediction beside the labels ($lr, $ln)" bash -c "
    grep -q '^### Position encoding as the only difference' '$T/RESULTS.md' &&
    grep -q 'standard RoPE gives centralized frames, NTK-aware RoPE distributed ones. \*\*Here:\*\* RoPE kjv-pos-rope ($lr' '$T/RESULTS.md' &&
    grep -q 'NTK-aware RoPE kjv-pos-rope-ntk ($ln' '$T/RESULTS.md'"
# the verdict sentence for every combination of the two labels, on hand-made tables
verdict() {
    mkdir -p "$T/v/data"
    printf '# provenance: {}\npos\tmodel\tlabel\trunner_up\tsink_head_share\temergence_step\tval_loss\nrope\ta\t%s\t-\t0.5\t16\t2\nrope-ntk\tb\t%s\t-\t0.5\tnan\t2\n' \
        "$1" "$2" >"$T/v/data/frames-pos.tsv"
    "$PYTHON" pipelines/paper/paper.py results "$T/v/R.md" "$T/v" >/dev/null 2>&1 && grep -q "$3" "$T/v/R.md"
}
check "RESULTS.md: both none → the prediction is not tested" verdict none none "Neither has a sink frame by the §7 rule"
check "RESULTS.md: the same sink label → the difference is not seen" verdict centralized centralized "Both get the same label (centralized)"
check "RESULTS.md: centralized and distributed → both as predicted" verdict centralized distributed "RoPE is centralized as predicted; NTK-aware RoPE is distributed as predicted"
check "RESULTS.md: distributed and centralized → neither as predicted" verdict distributed centralized "RoPE is distributed, not centralized as predicted; NTK-aware RoPE is centralized, not distributed"

# ---------- bad input to posenc.sh ----------
m=$R2/models/kjv-pos-rope L=$R2/tables/frames-label-kjv-pos-rope.tsv E=$R2/tables/frames-emergence-kjv-pos-rope.tsv
expect_error "posenc.sh: arguments not in threes → exit 2" 2 "^posenc.sh: usage" "$T/bad1.tsv" \
    pipelines/posenc.sh "$BIN" "$T/bad1.tsv" "$m" "$L"
expect_error "posenc.sh: a missing label table is named" 1 "^posenc.sh: $T/none.tsv: not found$" "$T/bad2.tsv" \
    pipelines/posenc.sh "$BIN" "$T/bad2.tsv" "$m" "$T/none.tsv" "$E"
{ cat "$L"; grep -v '^#' "$L" | tail -1; } >"$T/two.tsv"
expect_error "posenc.sh: a label table with two rows" 1 "^posenc.sh: $T/two.tsv: expected one row, found 2$" "$T/bad3.tsv" \
    pipelines/posenc.sh "$BIN" "$T/bad3.tsv" "$m" "$T/two.tsv" "$E"
sed 's/\temergence_step\t/\tstep\t/' "$E" >"$T/col.tsv"
expect_error "posenc.sh: a table without a column names it" 1 "^posenc.sh: $T/col.tsv: no column emergence_step$" "$T/bad4.tsv" \
    pipelines/posenc.sh "$BIN" "$T/bad4.tsv" "$m" "$L" "$T/col.tsv"

#!/bin/bash
# Sampled query rows (extract --queries / --query-list; docs/EXTRACT.md, docs/FORMAT.md "Sampled
# query rows"): the kept rows are bit-identical to the same rows of a full extraction at T = 512;
# the positions are the documented stratified draw; every filter's statistics over a sampled file
# equal those computed from the full file restricted to the same rows (tests/ref/sampled_rows.py,
# distance_direct.py, collapse_direct.py and frames_ref.py with --rows-of); bad input.
source tests/lib.sh
REF=tests/ref
SR="$PYTHON $REF/sampled_rows.py"
M=$EMBED/models/stories260K
# sr_ok NAME ARGS...: every check of sampled_rows.py ARGS passes
sr_ok() {
    local n=$1; shift
    if $SR "$@" >"$T/sr.txt" 2>&1; then ok "$n"
    else fail "$n: $(grep -v ' ok' "$T/sr.txt" | tr '\n' ' ' | head -c 400)"; fi
}
same_data() {  # NAME A B DATASET...: h5diff finds the datasets equal
    local n=$1 a=$2 b=$3 d; shift 3
    for d in "$@"; do h5diff -q "$a" "$b" "$d" "$d" >/dev/null 2>&1 || { fail "$n ($d differs)"; return; }; done
    ok "$n"
}

# ---------- extraction: stories260K at T = 512 ----------
"$BIN/sample" --model "$M/stories260K.bin" -n 2 -T 512 --seed 4 "$T/in.ids" >/dev/null
"$BIN/extract" --model "$M/stories260K.bin" --ids "$T/in.ids" "$T/full.h5"
"$BIN/extract" --model "$M/stories260K.bin" --ids "$T/in.ids" --queries 24 --query-seed 5 "$T/s.h5"
sr_ok "extract --queries 24 (T = 512): every stored row is bit-identical to the full file's row" rows "$T/full.h5" "$T/s.h5"
sr_ok "extract --queries: query_pos is the documented stratified mt19937 draw" draws "$T/s.h5" 24 5
"$BIN/extract" --model "$M/stories260K.bin" --ids "$T/in.ids" --queries 24 --query-seed 5 --batch 1 --threads 1 "$T/s1.h5"
same_data "extract --queries: --batch 1 --threads 1 gives the same rows and positions" "$T/s.h5" "$T/s1.h5" /attention /query_pos
"$BIN/extract" --model "$M/stories260K.bin" --ids "$T/in.ids" --queries 24 --query-seed 5 --layers 1,3 --heads 2-5 "$T/sl.h5"
"$PYTHON" -c "
import h5py, numpy as np, sys
f, g = h5py.File('$T/s.h5', 'r'), h5py.File('$T/sl.h5', 'r')
sys.exit(0 if g['attention'][...].tobytes() == f['attention'][:, [1, 3]][:, :, 2:6].tobytes()
         and np.array_equal(f['query_pos'][...], g['query_pos'][...]) else 1)"
check "extract --queries with --layers/--heads: the selected blocks of the same rows" test $? = 0
printf '# positions\n500 3 17\n\n64  # a comment\n' >"$T/q.list"
"$BIN/extract" --model "$M/stories260K.bin" --ids "$T/in.ids" --query-list "$T/q.list" "$T/ql.h5"
"$PYTHON" -c "
import h5py, sys
sys.exit(0 if h5py.File('$T/ql.h5', 'r')['query_pos'][...].tolist() == [[3, 17, 64, 500]] * 2 else 1)"
check "extract --query-list: the listed positions, sorted, in every sequence" test $? = 0
sr_ok "extract --query-list: rows bit-identical to the full file's" rows "$T/full.h5" "$T/ql.h5"
check "extract --queries: the provenance records queries and query_seed" bash -c \
    "h5dump -a provenance '$T/s.h5' | grep -q '\"queries\":24' && h5dump -a provenance '$T/s.h5' | grep -q '\"query_seed\":5'"
check "extract without --queries: no query_pos and no query options in the provenance" bash -c \
    "! h5dump -n '$T/full.h5' | grep -q query_pos && ! h5dump -a provenance '$T/full.h5' | grep -q query"

# tiny Hugging Face models: sliding window + GQA (mistral), soft-cap (gemma2), bidirectional with padding (bert)
"$PYTHON" $REF/make_tiny_more.py mistral "$T/mis" --window 16 >/dev/null
"$PYTHON" -c "
import random; random.seed(3)
print('\n'.join(' '.join(str(random.randrange(1, 100)) for _ in range(200)) for _ in range(2)))" >"$T/m.ids"
"$BIN/extract" --model "$T/mis" --ids "$T/m.ids" "$T/mis.full.h5" 2>/dev/null
"$BIN/extract" --model "$T/mis" --ids "$T/m.ids" --queries 30 --query-seed 2 "$T/mis.s.h5" 2>/dev/null
sr_ok "extract --queries: mistral (sliding window 16, GQA, T = 200): rows bit-identical" rows "$T/mis.full.h5" "$T/mis.s.h5"
"$PYTHON" $REF/make_tiny_more.py gemma2 "$T/g2" --softcap 50,30 >/dev/null
"$BIN/extract" --model "$T/g2" --ids "$T/m.ids" "$T/g2.full.h5" 2>/dev/null
"$BIN/extract" --model "$T/g2" --ids "$T/m.ids" --queries 30 "$T/g2.s.h5" 2>/dev/null
sr_ok "extract --queries: gemma2 (attention soft-cap): rows bit-identical" rows "$T/g2.full.h5" "$T/g2.s.h5"
"$PYTHON" $REF/make_tiny.py bert "$T/bert" >/dev/null
printf '2 5 9 11 14 20 30 31 40 41 42 43 50 51 52 53 3\n2 7 8 9 10 3\n2 30 31 32 33 34 35 36 37 38 3\n' >"$T/b.ids"
"$BIN/extract" --model "$T/bert" --ids "$T/b.ids" "$T/bert.full.h5" 2>/dev/null
"$BIN/extract" --model "$T/bert" --ids "$T/b.ids" --queries 5 --query-seed 9 "$T/bert.s.h5" 2>/dev/null
sr_ok "extract --queries: bert with padding (bidirectional): rows bit-identical" rows "$T/bert.full.h5" "$T/bert.s.h5"
sr_ok "extract --queries: bert: positions drawn among each sequence's valid tokens" draws "$T/bert.s.h5" 5 9
"$PYTHON" -c "
import json; p = '$T/bert/config.json'; c = json.load(open(p)); c['attncoda_mask_token_id'] = 4; json.dump(c, open(p, 'w'))"
"$BIN/extract" --model "$T/bert" --ids "$T/b.ids" --nll "$T/bf.nll" "$T/bert.f2.h5" >/dev/null 2>&1
"$BIN/extract" --model "$T/bert" --ids "$T/b.ids" --queries 4 --nll "$T/bs.nll" "$T/bert.s2.h5" >/dev/null 2>&1
check "extract --queries --nll (encoder, masked-LM pass): the same NLL table as without --queries" \
    cmp -s <(grep -v '^#' "$T/bf.nll") <(grep -v '^#' "$T/bs.nll")
sr_ok "extract --queries --nll (encoder): rows bit-identical" rows "$T/bert.f2.h5" "$T/bert.s2.h5"

# ---------- filters: statistics over the sampled rows equal the full file's restricted ----------
"$BIN/decompose" "$T/full.h5" "$T/full.dec.h5"
"$BIN/decompose" "$T/s.h5" "$T/s.dec.h5" --by-position "$T/s.pos.tsv"
sr_ok "decompose: per-row values, head means and --by-position equal the full file's over the sampled rows" \
    decompose "$T/full.dec.h5" "$T/s.dec.h5" "$T/s.h5" "$T/s.pos.tsv"
"$BIN/decompose" "$T/bert.full.h5" "$T/bert.full.dec.h5"
"$BIN/decompose" "$T/bert.s.h5" "$T/bert.s.dec.h5" --by-position "$T/bert.pos.tsv"
sr_ok "decompose: the same on bert with padding" \
    decompose "$T/bert.full.dec.h5" "$T/bert.s.dec.h5" "$T/bert.s.h5" "$T/bert.pos.tsv"
"$BIN/clr" "$T/full.h5" "$T/full.clr.h5"
"$BIN/clr" "$T/s.h5" "$T/s.clr.h5"
sr_ok "clr: a sampled file stays one; clr, clr_content, sink_balance equal the full file's rows" clr "$T/full.clr.h5" "$T/s.clr.h5"
"$BIN/decompose" "$T/s.clr.h5" "$T/s.clr.dec.h5"
same_data "clr's sampled output is an attention file decompose reads (same per-row values)" "$T/s.dec.h5" "$T/s.clr.dec.h5" \
    /row/entropy /query_pos
"$BIN/distance" "$T/s.h5" "$T/s.d.h5" >/dev/null
"$PYTHON" $REF/distance_direct.py "$T/full.h5" "$T/s.d.h5" --rows-of "$T/s.h5" >"$T/direct.txt" 2>&1
if awk '$1=="rows" { if ($2 != 0) bad=1; next } { if (!($2 <= 1e-12)) bad=1 } END { exit bad }' "$T/direct.txt" \
    && [ "$(grep -c '^distance/' "$T/direct.txt")" -eq 10 ] && [ "$(grep -c '^rms/' "$T/direct.txt")" -eq 10 ]; then
    ok "distance: every matrix equals the direct computation over the full file's sampled rows (1e-12)"
else fail "distance over sampled rows: $(tr '\n' ' ' <"$T/direct.txt" | head -c 500)"; fi
check "reversal, cluster and prune-rank read the distance file of sampled rows" bash -c "
    '$BIN/reversal' '$T/s.d.h5' | grep -vc '^#' | grep -qv '^0$' &&
    '$BIN/cluster' '$T/s.d.h5' >/dev/null && mkdir -p '$T/masks' && '$BIN/prune-rank' --masks-dir '$T/masks' '$T/s.d.h5' >/dev/null"

# frames and collapse at T = 96 (their references loop in Python)
"$BIN/sample" --model "$M/stories260K.bin" -n 3 -T 96 --seed 2 "$T/f.ids" >/dev/null
printf '0 1\n2 3\n' >"$T/prune.txt"
for v in a b; do
    mask=(); [ $v = b ] && mask=(--mask "$T/prune.txt")
    "$BIN/extract" --model "$M/stories260K.bin" --ids "$T/f.ids" "${mask[@]}" "$T/f$v.full.h5"
    "$BIN/extract" --model "$M/stories260K.bin" --ids "$T/f.ids" "${mask[@]}" --queries 16 --query-seed 8 "$T/f$v.s.h5"
done
"$BIN/extract" --model "$M/stories260K.bin" --ids "$T/f.ids" --no-attention --nll "$T/fa.nll" >/dev/null
"$BIN/extract" --model "$M/stories260K.bin" --ids "$T/f.ids" --queries 16 --nll "$T/fs.nll" "$T/fs.h5" >/dev/null
check "extract --queries --nll (causal): the same NLL table as the full pass" \
    cmp -s <(grep -v '^#' "$T/fa.nll") <(grep -v '^#' "$T/fs.nll")
"$BIN/extract" --model "$M/stories260K.bin" --ids "$T/f.ids" --queries 94 "$T/all94.h5" >/dev/null
"$PYTHON" -c "
import h5py, sys
sys.exit(0 if h5py.File('$T/all94.h5', 'r')['query_pos'][...].tolist() == [list(range(2, 96))] * 3 else 1)"
check "extract --queries E (every eligible position, T = 96): positions 2..95 in every sequence" test $? = 0
sr_ok "extract --queries E: rows bit-identical" rows "$T/fa.full.h5" "$T/all94.h5"
o=$T/fr
if "$BIN/frames" --tokenizer "$M/tok512.bin" --heads "$o.h.tsv" --layers "$o.l.tsv" --label "$o.m.tsv" --keys "$o.k.tsv" \
    "$T/fa.s.h5" "$o.h5" >/dev/null 2>"$T/fr.err" &&
    "$PYTHON" $REF/frames_ref.py "$T/fa.full.h5" --rows-of "$T/fa.s.h5" --llama2c-vocab "$M/tok512.bin" --heads "$o.h.tsv" \
        --layers "$o.l.tsv" --label "$o.m.tsv" --keys "$o.k.tsv" --h5 "$o.h5" >"$T/fref.txt" 2>&1; then
    ok "frames: every output over a sampled file equals the reference over the full file's sampled rows"
else fail "frames over sampled rows: $(cat "$T/fr.err") $(grep -v '	0	0$\|	0 mismatches$' "$T/fref.txt" | tr '\n' ' ' | head -c 400)"; fi
"$BIN/collapse" --series "$T/series.tsv" "$T/fa.s.h5" "$T/fb.s.h5" >"$T/col.tsv"
"$PYTHON" $REF/collapse_direct.py "$T/col.tsv" "$T/series.tsv" --rows-of "$T/fa.s.h5" "$T/fa.full.h5" "$T/fb.full.h5" >"$T/cdirect.txt" 2>&1
if awk '$1=="rows" { if ($2 != 0) bad=1; next } { lim = ($1 ~ /^split/) ? 1e-12 : 1e-9; if (!($2 <= lim)) bad=1; n++ }
        END { exit bad || n != 9 }' "$T/cdirect.txt"; then
    ok "collapse: split and series over sampled rows equal the direct computation over the full files' rows"
else fail "collapse over sampled rows: $(tr '\n' ' ' <"$T/cdirect.txt" | head -c 400)"; fi

# import: the sampled rows as a [S,L,H,Q,T] array with --query-pos round-trip bit for bit
"$PYTHON" -c "
import h5py, numpy as np
g = h5py.File('$T/s.h5', 'r')
np.save('$T/rows.npy', g['attention'][...])
np.savetxt('$T/qpos.txt', g['query_pos'][...], fmt='%d')
np.savetxt('$T/tok.txt', g['tokens'][...], fmt='%d')"
"$BIN/import" --log --causal --query-pos "$T/qpos.txt" --tokens "$T/tok.txt" "$T/rows.npy" "$T/imp.h5"
same_data "import --query-pos: extract's sampled rows round-trip bit for bit (attention, query_pos)" "$T/s.h5" "$T/imp.h5" \
    /attention /query_pos /tokens

# ---------- bad input ----------
"$PYTHON" $REF/make_bad_inputs.py --sampled "$T/bad"
for p in clr decompose distance frames; do
    check "$p: reads the sampled control file" bash -c "'$BIN/$p' '$T/bad/sampled_valid.h5' '$T/out.h5' >/dev/null"
    rm -f "$T/out.h5"
    for b in $(cat "$T/bad/sampled.list"); do
        expect_error "$p: $b → exit 1, one line" 1 "^$p: $T/bad/$b.h5: .*(query_pos|attention)" "$T/out.h5" \
            "$BIN/$p" "$T/bad/$b.h5" "$T/out.h5"
    done
done
expect_error "frames --paper-stats refuses sampled rows (needs every row)" 1 "^frames: .*s.h5: --paper-stats needs every query row" - \
    "$BIN/frames" --paper-stats "$T/fa.s.h5"
"$BIN/extract" --model "$M/stories260K.bin" --ids "$T/f.ids" --queries 16 --query-seed 9 "$T/fc.s.h5"
expect_error "collapse: checkpoints with other query rows → exit 1" 1 "^collapse: .*fc.s.h5: stored query rows \(query_pos\) differ" - \
    "$BIN/collapse" "$T/fa.s.h5" "$T/fc.s.h5"
expect_error "collapse: a sampled and a full checkpoint → exit 1" 1 "query_pos" - "$BIN/collapse" "$T/fa.s.h5" "$T/fa.full.h5"
E=("$BIN/extract" --model "$M/stories260K.bin" --ids "$T/f.ids")
expect_error "extract --queries more than the eligible positions → exit 2" 2 "^extract: --queries 95: sequence 1 has only 94 eligible" "$T/x.h5" \
    "${E[@]}" --queries 95 "$T/x.h5"
expect_error "extract --queries 0 → exit 2" 2 "queries" "$T/x.h5" "${E[@]}" --queries 0 "$T/x.h5"
expect_error "extract --queries with --query-list → exit 2" 2 "not both" "$T/x.h5" "${E[@]}" --queries 3 --query-list "$T/q.list" "$T/x.h5"
expect_error "extract --query-seed without --queries → exit 2" 2 "needs --queries" "$T/x.h5" "${E[@]}" --query-seed 3 "$T/x.h5"
expect_error "extract --queries with --no-attention → exit 2" 2 "no-attention" - "${E[@]}" --queries 3 --no-attention
printf '5 7 5\n' >"$T/dup.list"; printf '5 96\n' >"$T/out.list"; printf '5 x\n' >"$T/word.list"; : >"$T/empty.list"
expect_error "extract --query-list: a position twice → exit 1" 1 "dup.list: line 1: query position 5 given twice" "$T/x.h5" \
    "${E[@]}" --query-list "$T/dup.list" "$T/x.h5"
expect_error "extract --query-list: a position outside [0, T) → exit 1" 1 "out.list: line 1: query position 96 outside \[0, 96\)" "$T/x.h5" \
    "${E[@]}" --query-list "$T/out.list" "$T/x.h5"
expect_error "extract --query-list: not a number → exit 1" 1 "word.list: line 1: 'x.*' is not a query position" "$T/x.h5" \
    "${E[@]}" --query-list "$T/word.list" "$T/x.h5"
expect_error "extract --query-list: no positions → exit 1" 1 "empty.list: no query positions" "$T/x.h5" \
    "${E[@]}" --query-list "$T/empty.list" "$T/x.h5"
awk 'NR == 1 { t = $1; $1 = $2; $2 = t } { print }' "$T/qpos.txt" >"$T/bq.txt"
expect_error "import --query-pos: positions not increasing → exit 1" 1 "bq.txt: line 1: query positions not strictly increasing" "$T/x.h5" \
    "$BIN/import" --log --query-pos "$T/bq.txt" "$T/rows.npy" "$T/x.h5"

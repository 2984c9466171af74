#!/bin/bash
# frames (METHODS §7, docs/FRAMES.md): every output against an independent NumPy reference
# (tests/ref/frames_ref.py) on synth files and stories260K, planted frames whose labels are known,
# a hand-worked 3-head example, the over-training script on a tiny trained model, and bad input.
source tests/lib.sh
source tests/badinput.sh
REF=tests/ref

# ref_ok NAME ATTN [frames and reference options]: frames' four outputs equal the reference
ref_ok() {
    local n=$1 a=$2; shift 2
    local o=$T/ref-out
    rm -f "$o".*
    if ! "$BIN/frames" "$@" --heads "$o.h.tsv" --layers "$o.l.tsv" --label "$o.m.tsv" --keys "$o.k.tsv" "$a" "$o.h5" >/dev/null 2>"$T/ref.err"; then
        fail "$n: frames failed: $(head -c 300 "$T/ref.err")"; return
    fi
    local refargs=()
    for x in "$@"; do [ "$x" = "--tokenizer" ] && x=--llama2c-vocab; refargs+=("$x"); done
    if "$PYTHON" $REF/frames_ref.py "$a" "${refargs[@]}" --heads "$o.h.tsv" --layers "$o.l.tsv" \
        --label "$o.m.tsv" --keys "$o.k.tsv" --h5 "$o.h5" >"$T/ref.txt" 2>&1 && [ "$(wc -l <"$T/ref.txt")" -ge 20 ]; then ok "$n"
    else fail "$n: $(grep -v '	0	0$\|	0 mismatches$' "$T/ref.txt" | tr '\n' ' ' | head -c 400)"; fi
}

# ---------- against the reference ----------
"$BIN/synth" -S 3 -L 2 -H 4 -T 14 --seed 2 "$T/c.h5"
ref_ok "frames: causal synth file, every output and --paper-stats equal the NumPy reference (1e-9)" "$T/c.h5" --paper-stats
"$BIN/synth" -S 3 -L 2 -H 3 -T 12 --bidirectional --pad 3 --seed 4 "$T/b.h5"
ref_ok "frames: bidirectional with padding equals the reference" "$T/b.h5" --paper-stats
"$BIN/synth" -S 2 -L 1 -H 3 -T 10 --prob --alpha 0.1 --sink-mass 0.9,0.5,0.99 --seed 3 "$T/p.h5"
ref_ok "frames: probability input, one layer, equals the reference" "$T/p.h5" --paper-stats
"$BIN/synth" -S 4 -L 3 -H 4 -T 20 --sink-mass 0.05,0.35,0.6,0.9 --seed 6 "$T/o.h5"
ref_ok "frames: other thresholds (--min-query 2 --tau-r 0.2 --tau-z 2 --special 13,17) equal the reference" \
    "$T/o.h5" --min-query 2 --tau-r 0.2 --tau-z 2 --special 13,17 --min-seq-share 0.4 --central-share 0.6 \
    --central-neff 1.2 --model-layers-from 2

# ---------- planted frames: the labels are known ----------
plant() { "$PYTHON" $REF/frames_planted.py "$T/$1.h5" "$1"; }
labels() { grep -v '^#' "$1" | awk -F'\t' 'NR > 1 { print $3 }' | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }'; }
for k in uniform central distributed twoanchor bidirectional mixed hand3; do plant $k; done
for kw in uniform:none central:centralized distributed:distributed twoanchor:distributed bidirectional:bidirectional; do
    k=${kw%%:*} w=${kw#*:}
    "$BIN/frames" --heads "$T/$k.h.tsv" "$T/$k.h5" >"$T/$k.line"
    check "frames: planted $k → every head and the model are $w" \
        test "$(labels "$T/$k.h.tsv")/$(cut -f2 "$T/$k.line")" = "$w:8 /$w"
    ref_ok "frames: planted $k equals the reference" "$T/$k.h5"
done
"$BIN/frames" --label "$T/mixed.m.tsv" --layers "$T/mixed.l.tsv" "$T/mixed.h5"
check "frames: mixed → model distributed (3/4 of layer 1), runner-up centralized; layer 0 not counted" \
    test "$(grep -v '^#' "$T/mixed.m.tsv" | awk -F'\t' 'NR == 2 { print $2, $3, $4, $5, $6, $7 }')" = "distributed 0.75 centralized 0.25 4 4"
check "frames: mixed per-layer shares (layer 0 all centralized; layer 1 0.25 / 0.75)" \
    test "$(grep -v '^#' "$T/mixed.l.tsv" | awk -F'\t' 'NR > 1 { printf "%s %s %s;", $1, $4, $5 }')" = "0 1 0;1 0.25 0.75;"
# uniform causal attention with every query (--min-query 0, T = 32): key 0 receives the mean of
# 1/(q+1), H_T/T = 0.127; at T = 6 that is 0.408 >= tau_r, yet z = 1: no reference point
"$PYTHON" -c "
import numpy as np, h5py, sys
f = h5py.File('$T/u6.h5', 'w')
T = 6; A = np.full((2, 2, 2, T, T), -np.inf, np.float32)
for q in range(T): A[..., q, :q + 1] = np.log(1.0 / (q + 1))
for k, v in (('format_version', 1), ('sequences', 2), ('layers', 2), ('heads', 2), ('tokens', T), ('causal', 1), ('sink', 0), ('seed', -1)):
    f.attrs[k] = np.int64(v)
for k, v in (('format', 'attncoda-attention'), ('values', 'logprob'), ('model', 'uniform6'), ('family', 'synth'), ('text', 'u'), ('provenance', '{}')):
    f.attrs[k] = np.bytes_(v)
f['attention'] = A; f['tokens'] = np.zeros((2, T), np.int32)"
"$BIN/frames" --min-query 0 --heads "$T/u6.h.tsv" "$T/u6.h5" "$T/u6.o.h5" >"$T/u6.line"
check "frames: uniform causal rows, --min-query 0, T=6: r(0) = H_6/6 >= tau_r but z = 1 → none" "$PYTHON" -c "
import h5py, numpy as np, sys
f = h5py.File('$T/u6.o.h5', 'r'); r = f['r'][...]; z = f['z'][...]
H6 = sum(1.0 / i for i in range(1, 7))
sys.exit(0 if np.allclose(r[..., 0], H6 / 6, atol=1e-7, rtol=0) and H6 / 6 >= 0.3 and np.allclose(z, 1, atol=1e-6, rtol=0)
         and (f['head/label'][...] == 0).all() else 1)"
check "frames: ... and the model label is none" test "$(cut -f2 "$T/u6.line")" = none

# hand-worked r, u, z (T = 6, q0 = 4, so Q(k) = {4, 5} for k <= 4 and {5} for k = 5):
#   head 0 uniform: r(0) = u(0) = (1/5 + 1/6)/2 = 11/60, z = 1
#   head 1 key 0 gets 0.5: r(0) = 1/2, z(0) = 30/11 < 3 (no reference point); r(3) = (1/8 + 1/10)/2
#   head 2 diagonal 0.9: r(5) = 0.9, u(5) = 1/6, z(5) = 5.4 (reference point, class last);
#          r(4) = (0.9 + 0.1/5)/2 = 0.46, z(4) = 0.46·60/11 < 3
# probabilities are stored as float32 logs, so r and z are compared to 1e-7; u is exact
"$BIN/frames" --heads "$T/hand3.h.tsv" "$T/hand3.h5" "$T/hand3.o.h5" >/dev/null
check "frames: hand-worked r, u, z on the 3-head example" "$PYTHON" -c "
import h5py, numpy as np, sys
f = h5py.File('$T/hand3.o.h5', 'r'); r, u, z = (f[k][0] for k in 'ruz')
c = lambda x, y, tol: abs(x - y) <= tol
ok = all([c(u[0, 0], 11 / 60, 1e-15), c(u[2, 5], 1 / 6, 1e-15), c(r[0, 0], 11 / 60, 1e-7), c(z[0, 0], 1, 1e-7),
          c(r[1, 0], 0.5, 1e-7), c(z[1, 0], 30 / 11, 1e-6), c(r[1, 3], (1 / 8 + 1 / 10) / 2, 1e-7),
          c(r[2, 5], 0.9, 1e-7), c(z[2, 5], 5.4, 1e-6), c(r[2, 4], 0.46, 1e-7), c(z[2, 4], 0.46 * 60 / 11, 1e-6)])
sys.exit(0 if ok else 1)"
check "frames: hand-worked labels none, none, centralized (on class last)" \
    test "$(grep -v '^#' "$T/hand3.h.tsv" | awk -F'\t' 'NR > 1 { printf "%s/%s/%s ", $3, $5, $9 }')" = "none/0/nan none/0/nan centralized/1/1 "

# ---------- outputs: provenance, determinism, stdout ----------
"$BIN/frames" --heads "$T/d1.tsv" -o "$T/d1.h5" "$T/c.h5" >/dev/null
"$BIN/frames" --threads 1 --heads "$T/d2.tsv" -o "$T/d2.h5" "$T/c.h5" >/dev/null
check "frames: identical bytes with 1 thread and all threads" cmp -s "$T/d1.h5" "$T/d2.h5"
check "frames: identical per-head TSV with 1 thread and all threads" cmp -s "$T/d1.tsv" "$T/d2.tsv"
check "frames: provenance records input checksum, every threshold and the upstream file" "$PYTHON" -c "
import h5py, json, sys, hashlib
p = json.loads(h5py.File('$T/d1.h5', 'r').attrs['provenance']); o = p['options']
sha = hashlib.sha256(open('$T/c.h5', 'rb').read()).hexdigest()
want = dict(min_query=4, tau_r=0.3, tau_z=3.0, min_seq_share=0.5, central_share=0.7, central_neff=1.5, bidir_share=0.25,
            min_sink_heads=0.1, model_layers_from=1, zero_delta=1e-9)
sys.exit(0 if p['program'] == 'frames' and p['inputs'][0]['sha256'] == sha and all(o[k] == v for k, v in want.items())
         and p['upstream'][0]['program'] == 'synth' else 1)"
check "frames: the TSV's first line is the same provenance" bash -c "head -1 '$T/d1.tsv' | grep -q '^# provenance: {\"inputs\"'"
"$BIN/frames" --heads - "$T/c.h5" >"$T/stdout.tsv"
check "frames: --heads - writes the table to stdout (no label line then)" cmp -s "$T/stdout.tsv" "$T/d1.tsv"
check "frames: reads stdin" bash -c "cat '$T/c.h5' | '$BIN/frames' - | cut -f2 | grep -qx centralized"

# ---------- stories260K (a real model; tokens from its own tokenizer) ----------
M=$EMBED/models/stories260K
if [ -x "$BIN/extract" ] && [ -f "$M/stories260K.bin" ] \
    && "$BIN/sample" --model "$M/stories260K.bin" -n 3 -T 48 --seed 1 "$T/st.ids" >/dev/null 2>&1 \
    && "$BIN/extract" --model "$M/stories260K.bin" --ids "$T/st.ids" "$T/st.h5" >/dev/null 2>&1; then
    ref_ok "frames: stories260K with --tokenizer tok512.bin (delimiter class, BOS/EOS specials) equals the reference" \
        "$T/st.h5" --tokenizer "$M/tok512.bin" --paper-stats
    "$BIN/frames" --tokenizer "$M/tok512.bin" --heads "$T/st.h.tsv" "$T/st.h5" >"$T/st.line"
    check "frames: stories260K has a model label and delimiter anchors are found" bash -c "
        cut -f2 '$T/st.line' | grep -qE '^(none|centralized|distributed|bidirectional)$' &&
        grep -v '^#' '$T/st.h.tsv' | awk -F'\t' 'NR > 1 && \$11 > 0 { n++ } END { exit !(n > 0) }'"
    "$BIN/frames" --heads "$T/st0.h.tsv" "$T/st.h5" >/dev/null
    check "frames: without a tokenizer the delimiter share is nan" bash -c \
        "grep -v '^#' '$T/st0.h.tsv' | awk -F'\t' 'NR > 1 && \$11 != \"nan\" { b = 1 } END { exit b }'"
    "$PYTHON" -c "
import struct; open('$T/tiny-tok.bin', 'wb').write(struct.pack('<i', 8) + b''.join(struct.pack('<fi', 0.0, 1) + bytes([65 + i]) for i in range(4)))"
    expect_error "frames: a tokenizer too small for the file's ids → exit 1" 1 "token id .* outside the tokenizer" "$T/none.h5" \
        "$BIN/frames" --tokenizer "$T/tiny-tok.bin" "$T/st.h5" "$T/none.h5"
else
    ok "frames: stories260K # SKIP model or bin/extract not available"
fi

# ---------- a BERT-shaped random checkpoint with a planted [CLS] + [SEP] sink ----------
TOKB=$EMBED/tokenizers/bert-base-uncased
if [ -x "$BIN/extract" ] && [ -d "$TOKB" ]; then
    "$PYTHON" $REF/make_tiny.py bert "$T/bert" --vocab 30522 && cp "$TOKB"/* "$T/bert/" \
        && "$PYTHON" $REF/plant_bert_sink.py "$T/bert"
    head -c 3000 "$EMBED/models/stories260K/greedy_t0_steps257.expected.txt" >"$T/btext.txt"
    "$BIN/extract" --model "$T/bert" --text "$T/btext.txt" -S 4 -T 24 "$T/bert.h5" >/dev/null 2>&1
    "$BIN/frames" --tokenizer "$T/bert" --heads "$T/bert.h.tsv" "$T/bert.h5" >"$T/bert.line"
    check "frames: planted [CLS]+[SEP] sink in a BERT checkpoint → every head and the model bidirectional" \
        test "$(labels "$T/bert.h.tsv")/$(cut -f2 "$T/bert.line")" = "bidirectional:8 /bidirectional"
    check "frames: ... the two anchors are classes first and last, about half each" bash -c \
        "grep -v '^#' '$T/bert.h.tsv' | awk -F'\t' 'NR > 1 && !(\$8 > 0.45 && \$9 > 0.45 && \$7 > 1.9) { b = 1 } END { exit b }'"
    ref_ok "frames: the BERT file equals the reference (specials 101, 102, 0 given by id)" "$T/bert.h5" --special 101,102,0 --paper-stats
else
    ok "frames: planted BERT sink # SKIP bin/extract or the bert-base-uncased tokenizer missing"
fi

# ---------- bad input ----------
make_bad_inputs "$T/bad" && bad_inputs_for frames "$BIN/frames"
expect_error "frames: unknown option → exit 2" 2 "^frames: " - "$BIN/frames" --no-such "$T/c.h5"
expect_error "frames: no input → exit 2" 2 "^frames: " - "$BIN/frames"
expect_error "frames: --tau-r above 1 → exit 2 naming the option" 2 "tau-r" - "$BIN/frames" --tau-r 1.5 "$T/c.h5"
expect_error "frames: --min-query not below T → exit 2" 2 "min-query" "$T/mq.h5" "$BIN/frames" --min-query 14 "$T/c.h5" "$T/mq.h5"
expect_error "frames: --special with a bad id → exit 2" 2 "special" - "$BIN/frames" --special 3,x "$T/c.h5"
expect_error "frames: --paper-density LO > HI → exit 2" 2 "paper-density" - "$BIN/frames" --paper-density 0.9,0.1 "$T/c.h5"
expect_error "frames: two stdout outputs → exit 2" 2 "stdout" - "$BIN/frames" --heads - --layers - "$T/c.h5"
expect_error "frames: missing tokenizer → exit 1 naming it" 1 "^frames: $T/no-tok.bin: " "$T/tk.h5" \
    "$BIN/frames" --tokenizer "$T/no-tok.bin" "$T/c.h5" "$T/tk.h5"
cp "$T/c.h5" "$T/neg.h5"
"$PYTHON" -c "
import h5py; f = h5py.File('$T/neg.h5', 'a'); t = f['tokens'][...]; t[1, 3] = -5; f['tokens'][...] = t"
expect_error "frames: a negative token id → exit 1 naming the position" 1 "token id -5 at \(sequence 1, position 3\)" "$T/neg.o.h5" \
    "$BIN/frames" "$T/neg.h5" "$T/neg.o.h5"


# ---------- over training (pipelines/frames.sh, pipelines/frames.mk) ----------
# emergence rule on a planted series: attention files already in the work folder are used as they
# are (as collapse.sh leaves them), so the labels per checkpoint are known
mkdir -p "$T/ser/model/checkpoints" "$T/ser/work"
i=0
for k in uniform central distributed distributed twoanchor central; do
    step=$((i * 16)); i=$((i + 1))
    mkdir -p "$T/ser/model/checkpoints/step-$(printf %06d $step)"
    cp "$T/$k.h5" "$T/ser/work/step-$step.h5"
done
pipelines/frames.sh "$BIN" "$T/ser/model" "$T/ser/work" "$T/ser/s.tsv" "$T/ser/e.tsv" "$T/ser/p.tsv" -- -- --unused
check "frames.sh: labels per checkpoint none, centralized, distributed x3, centralized" \
    test "$(grep -v '^#' "$T/ser/s.tsv" | awk -F'\t' 'NR > 1 { printf "%s:%s ", $2, $3 }')" = \
    "0:none 16:centralized 32:distributed 48:distributed 64:distributed 80:centralized "
check "frames.sh: emergence step 32 (first of three distributed in a row), final label centralized" \
    test "$(grep -v '^#' "$T/ser/e.tsv" | awk -F'\t' 'NR == 2 { print $2, $3, $4, $5 }')" = "32 distributed 6 centralized"
check "frames.sh: plot table has one row per checkpoint and head with the label code" \
    test "$(awk -F'\t' 'NR > 1 { n++; if ($6 == "distributed" && $7 != 2) b = 1 } END { print n, b + 0 }' "$T/ser/p.tsv")" = "48 0"
check "frames.sh: both tables start with a JSON provenance naming the 6 checkpoint tables" "$PYTHON" -c "
import json, sys
for f in ('$T/ser/s.tsv', '$T/ser/e.tsv'):
    p = json.loads(open(f).readline().split('# provenance: ', 1)[1])
    if p['program'] != 'frames.sh' or len(p['inputs']) != 6 or len(p['inputs'][0]['sha256']) != 64: sys.exit(1)"
check "frames.sh: the share columns are the head labels of layers >= 1" \
    test "$(grep -v '^#' "$T/ser/s.tsv" | awk -F'\t' 'NR == 3 { print $9, $10 }')" = "1 0"

# the make rules on a model trained here for 40 updates (checkpoints 0, 16, 32, 40)
if [ -x "$BIN/train" ] && [ -x "$BIN/extract" ] && [ -x "$BIN/collapse" ] && command -v gnuplot >/dev/null; then
    head -c 3000 "$EMBED/models/stories260K/greedy_t0_steps257.expected.txt" >"$T/tx.txt"
    printf '%s\n' "family = gpt2" "layers = 2" "d_model = 16" "heads = 2" "d_ff = 32" "context = 16" \
        "lr = 1e-2" "warmup = 5" "weight_decay = 0.1" "batch = 4" "steps_quick = 40" "steps_full = 40" \
        "seed = 1" >"$T/tiny.conf"
    mkdir -p "$T/r/models"
    "$BIN/train" --config "$T/tiny.conf" --train "$T/tx.txt" --valid "$T/tx.txt" --out "$T/r/models/tiny" \
        --threads 1 >/dev/null 2>&1 && touch "$T/r/models/tiny/.done"
    if make -s R="$T/r" PROFILE=quick BIN="$BIN" BUILD="$BUILD" MODELS=tiny TRAINED=tiny KJV_VALID="$T/tx.txt" \
        tiny_KIND=trained tiny_PATH="$T/r/models/tiny" tiny_DEP="$T/r/models/tiny/.done" NSEQ=2 TOKENS=16 \
        "$T/r/tables/frames-emergence-tiny.tsv" "$T/r/paper/figures/frames-tiny.png" \
        "$T/r/paper/figures/frames-keys-tiny.png" "$T/r/paper/tables/frames.md" \
        "$T/r/paper/tables/frames-emergence.md" >"$T/mk.log" 2>&1; then
        ok "frames.mk: a trained model's checkpoints are labelled and plotted"
    else fail "frames.mk: make failed: $(tail -c 300 "$T/mk.log")"; fi
    check "frames.mk: one row per checkpoint (0 16 32 40), the same labels as frames on each file" bash -c "
        [ \"\$(grep -v '^#' '$T/r/tables/frames-train-tiny.tsv' | awk -F'\t' 'NR > 1 { printf \"%s \", \$2 }')\" = '0 16 32 40 ' ] &&
        for s in 0 16 32 40; do
            a=\$('$BIN/frames' --tokenizer '$T/r/models/tiny/tokenizer.json' '$T/r/collapse/tiny/step-'\$s.h5 | cut -f2)
            b=\$(awk -F'\t' -v s=\$s '\$2 == s { print \$3 }' '$T/r/tables/frames-train-tiny.tsv')
            [ \"\$a\" = \"\$b\" ] || exit 1
        done"
    check "frames.mk: the figures are PNGs" bash -c "head -c 8 '$T/r/paper/figures/frames-tiny.png' | grep -q PNG &&
        head -c 8 '$T/r/paper/figures/frames-keys-tiny.png' | grep -q PNG"
    check "frames.mk: the paper's frames tables name the model" bash -c "grep -q '| tiny | - |' '$T/r/paper/tables/frames.md' &&
        grep -q '| tiny | ' '$T/r/paper/tables/frames-emergence.md'"
else
    ok "frames.mk: over training # SKIP bin/train, bin/extract, bin/collapse or gnuplot missing"
fi

# ---------- the paper's frames section (pipelines/paper/paper.py) ----------
mkdir -p "$T/pp/data"
"$BIN/frames" --label "$T/frames-label-kjv-llama-m.tsv" "$T/central.h5" >/dev/null
"$BIN/frames" --label "$T/frames-label-kjv-gpt2-s.tsv" "$T/distributed.h5" >/dev/null
"$PYTHON" pipelines/paper/paper.py frames "$T/pp/data/frames.tsv" "$T/frames-label-kjv-llama-m.tsv" "$T/frames-label-kjv-gpt2-s.tsv"
check "paper.py frames: one row per model with its position encoding from configs/" \
    test "$(grep -v '^#' "$T/pp/data/frames.tsv" | awk -F'\t' 'NR > 1 { printf "%s/%s/%s ", $1, $2, $3 }')" = \
    "kjv-llama-m/rope/centralized kjv-gpt2-s/learned/distributed "
"$PYTHON" pipelines/paper/paper.py results "$T/pp/RESULTS.md" "$T/pp"
check "paper.py results: the frames section sets the seed's RoPE claim beside the labels" \
    grep -q '1 of 1 RoPE models are centralized (kjv-llama-m)' "$T/pp/RESULTS.md"

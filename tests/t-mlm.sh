#!/bin/bash
# Masked-LM perplexity of the encoders (docs/EXTRACT.md, "Masked-LM perplexity"): extract's
# per-position NLL and perplexity against an independent float64 PyTorch BertForMaskedLM /
# RobertaForMaskedLM (tests/ref/reference_mlm.py: reads the masked positions from --nll, masks
# them itself, runs encoder + MLM head from the stored safetensors): NLL within 1e-4 absolute,
# perplexity within 1e-5 relative. On tiny random checkpoints (tests/ref/make_tiny.py bert: padded
# lines, F16, LayerNorm gamma/beta, a stored untied decoder; make_tiny_more.py roberta with a pad
# inside a line) and on configs/kjv-bert-m.conf trained 30 steps by bin/train (--ids and --text).
# Then: pruning masks, unchanged attention, determinism across runs, threads and batch sizes, the
# rate and seed, pipelines/perplexity.sh on the trained model, causal provenance unchanged, and
# bad input.
source tests/lib.sh
MK="$PYTHON tests/ref/make_tiny.py"
MKM="$PYTHON tests/ref/make_tiny_more.py"
REF="$PYTHON tests/ref/reference_mlm.py"
X() { "$BIN/extract" "$@"; }
Xq() { "$BIN/extract" "$@" >/dev/null; }   # perplexity on stdout not needed

# set_cfg DIR PYTHON-STATEMENTS: edit DIR/config.json (c is the dict)
set_cfg() {
    $PYTHON -c "
import json, sys
p = sys.argv[1] + '/config.json'; c = json.load(open(p))
$2
json.dump(c, open(p, 'w'), indent=2)" "$1"
}
# tiny bert specials: [CLS] 2, [SEP] 3, [MASK] 4 (config keys as bin/train writes), pad 0
SPECIALS="c.update(attncoda_cls_token_id=2, attncoda_sep_token_id=3, attncoda_mask_token_id=4)"
$PYTHON -c "
import random; r = random.Random(11)
for n in (30, 12, 25, 40, 7): print(' '.join(['2'] + [str(r.randrange(5, 101)) for _ in range(n)] + ['3']))" >"$T/ids.txt"
printf '5 6 7 8 9 1 11 12 13 14\n11 12 13 15 16\n14 15 16 17 18 19 20\n' >"$T/rob_ids.txt"

# mlm NAME MODEL IDS [extract options]: extract --nll, then the reference on the same positions
mlm() {
    local name=$1 model=$2 ids=$3; shift 3
    local p
    if ! X --model "$model" --ids "$ids" --no-attention --nll "$T/$name.tsv" "$@" 2>"$T/err" ||
        ! p=$(X --model "$model" --ids "$ids" --no-attention "$@" | sed -n 's/^perplexity\t//p'); then
        fail "$name: extract failed: $(head -c 300 "$T/err")"; return
    fi
    local mask=(); [ "${1:-}" = --mask ] && mask=(--mask "$2")
    $REF "$model" "$ids" "$T/$name.tsv" --ppl "$p" --label "$name" "${mask[@]}"
}

$MK bert "$T/bert" && set_cfg "$T/bert" "$SPECIALS"
$MK bert "$T/bert-f16-gamma" --dtype F16 --gamma --seed 2 && set_cfg "$T/bert-f16-gamma" "$SPECIALS"
$MK bert "$T/bert-decoder" --decoder --seed 3 && set_cfg "$T/bert-decoder" "$SPECIALS"
$MKM roberta "$T/roberta" && set_cfg "$T/roberta" "c['attncoda_mask_token_id'] = 4"
mlm bert-padded "$T/bert" "$T/ids.txt"
mlm bert-f16-gamma "$T/bert-f16-gamma" "$T/ids.txt" --mlm-rate 0.3
mlm bert-untied-decoder "$T/bert-decoder" "$T/ids.txt" --mlm-seed 5
mlm roberta-pad-inside "$T/roberta" "$T/rob_ids.txt" --mlm-rate 0.5

# pruning: the same positions, another perplexity, the reference with those heads zeroed
printf '# two heads\n0 1\n1 3\n' >"$T/mask.txt"
mlm bert-pruned "$T/bert" "$T/ids.txt" --mask "$T/mask.txt"
check "pruning keeps the masked positions" cmp <(grep -v '^#' "$T/bert-padded.tsv" | cut -f1-3) \
    <(grep -v '^#' "$T/bert-pruned.tsv" | cut -f1-3)
p0=$(sed -n 's/^# perplexity\t//p' "$T/bert-padded.tsv"); p1=$(sed -n 's/^# perplexity\t//p' "$T/bert-pruned.tsv")
check "pruning two heads changes the perplexity ($p0 -> $p1)" test "$p0" != "$p1"

# the rate: 1 masks every candidate (positions 1..n of each line); another seed, other positions
Xq --model "$T/bert" --ids "$T/ids.txt" --no-attention --nll "$T/all.tsv" --mlm-rate 1
check "--mlm-rate 1 masks every non-special position (114)" \
    test "$(sed -n 's/^# tokens\t//p' "$T/all.tsv")" = 114
Xq --model "$T/bert" --ids "$T/ids.txt" --no-attention --nll "$T/seed2.tsv" --mlm-seed 2
check "--mlm-seed 2 masks other positions" bash -c '! cmp -s <(grep -v "^#" "$1" | cut -f1-2) <(grep -v "^#" "$2" | cut -f1-2)' \
    _ "$T/bert-padded.tsv" "$T/seed2.tsv"
Xq --model "$T/bert" --ids "$T/ids.txt" --no-attention --nll "$T/tiny-rate.tsv" --mlm-rate 0.001
check "at least one masked position per sequence (rate 0.001: 5 rows for 5 sequences)" \
    test "$(grep -vc '^#\|^seq' "$T/tiny-rate.tsv")" = 5

# determinism: reruns, threads and batch sizes give the same bytes
Xq --model "$T/bert" --ids "$T/ids.txt" --no-attention --nll "$T/t1.tsv" --threads 1 --batch 1
Xq --model "$T/bert" --ids "$T/ids.txt" --no-attention --nll "$T/t2.tsv" --threads 2 --batch 3
cp "$T/t2.tsv" "$T/t2-first.tsv"
Xq --model "$T/bert" --ids "$T/ids.txt" --no-attention --nll "$T/t2.tsv" --threads 2 --batch 3
check "two runs give identical bytes" cmp "$T/t2.tsv" "$T/t2-first.tsv"
check "--threads 1 --batch 1 and --threads 2 --batch 3 give identical rows" \
    cmp <(grep -v '^# {' "$T/t1.tsv") <(grep -v '^# {' "$T/t2.tsv")

# the attention file stays that of the unmasked input; the provenance records the MLM options
Xq --model "$T/bert" --ids "$T/ids.txt" "$T/att.h5"
Xq --model "$T/bert" --ids "$T/ids.txt" --nll "$T/with.tsv" "$T/att-nll.h5"
$PYTHON - "$T" <<'EOF'
import sys, h5py, numpy as np, json
T = sys.argv[1]
a, b = h5py.File(T + "/att.h5", "r"), h5py.File(T + "/att-nll.h5", "r")
same = all(np.array_equal(a[n][...], b[n][...]) for n in ("attention", "tokens", "valid"))
print(("ok" if same else "not ok") + " - attention written with --nll is bit-identical to that of the unmasked input")
pv = json.loads(b.attrs["provenance"])["options"]
ok = pv.get("mlm_rate") == 0.15 and pv.get("mlm_seed") == 1
print(("ok" if ok else "not ok") + " - encoder provenance records mlm_rate 0.15 and mlm_seed 1")
EOF
cmp -s <(grep -v '^#' "$T/with.tsv") <(grep -v '^#' "$T/bert-padded.tsv") &&
    ok "--nll beside an attention file gives the same rows as with --no-attention" ||
    fail "--nll beside an attention file gives the same rows as with --no-attention"

# causal models: no MLM keys in the provenance (their outputs keep their bytes)
$MK gpt2 "$T/gpt2"
printf '5 6 7 8 9 10\n11 12 13 14 15 16\n' >"$T/eq_ids.txt"
Xq --model "$T/gpt2" --ids "$T/eq_ids.txt" --no-attention --nll "$T/gpt2.tsv"
check "causal provenance has no mlm keys" bash -c 'grep -q "^# {" "$1" && ! grep -q mlm_ "$1"' _ "$T/gpt2.tsv"

# configs/kjv-bert-m.conf trained 30 steps on Genesis, scored on Exodus
if command -v bible >/dev/null; then
    bible -f gen1:1-gen50:26 | sed 's/^[^ ]* //' >"$T/train.txt"
    bible -f exo1:1-exo4:31 | sed 's/^[^ ]* //' >"$T/valid.txt"
    if "$BIN/train" --config configs/kjv-bert-m.conf --steps 30 --out "$T/kjv" --train "$T/train.txt" \
        --valid "$T/valid.txt" 2>"$T/err" >/dev/null; then
        $PYTHON - "$T/valid.txt" >"$T/kjv_ids.txt" <<'EOF'
import sys
t = open(sys.argv[1], "rb").read()
off = 0
for n in (40, 126, 70, 20, 100, 5, 126, 90):   # [CLS] bytes [SEP], padded to the longest
    print(" ".join(["257"] + [str(b) for b in t[off:off + n]] + ["258"]))
    off += n + 7
EOF
        mlm kjv-bert-m-ids "$T/kjv" "$T/kjv_ids.txt"
        printf '0 0\n1 2\n2 1\n3 3\n' >"$T/kmask.txt"
        mlm kjv-bert-m-pruned "$T/kjv" "$T/kjv_ids.txt" --mask "$T/kmask.txt"
        Xq --model "$T/kjv" --text "$T/valid.txt" -S 6 -T 96 --nll "$T/kjv-text.tsv" "$T/kjv-text.h5"
        $REF "$T/kjv" "$T/kjv-text.h5" "$T/kjv-text.tsv" --rate 0.15 --label "kjv-bert-m --text windows"
        # pipelines/perplexity.sh unchanged: baseline plus two masks
        mkdir -p "$T/masks" && cp "$T/kmask.txt" "$T/masks/js_keep-10.txt" && printf '0 1\n' >"$T/masks/random1-10.txt"
        if bash pipelines/perplexity.sh kjv-bert-m "$BIN/extract" "$T/kjv" "$T/masks" "$T/ppl.tsv" \
            --text "$T/valid.txt" -S 8 -T 128 --sequential 2>"$T/err"; then
            sed 's/^/# /' "$T/ppl.tsv"
            check "perplexity.sh on kjv-bert-m: baseline, 2 masks and the random mean, all numbers" awk -F'\t' \
                'NR > 1 { n++; if ($4 !~ /^[0-9.]+$/) bad = 1 } END { exit !(n == 4 && !bad) }' "$T/ppl.tsv"
        else
            fail "perplexity.sh on kjv-bert-m: $(head -c 300 "$T/err")"
        fi
    else
        fail "train kjv-bert-m 30 steps: $(tail -c 300 "$T/err")"
    fi
else
    skip "kjv-bert-m trained 30 steps" "bible (bible-kjv)"
fi

# bad input: one line, the exit status, no output file
out=$T/bad.tsv
expect_error "--mlm-rate 0" 2 "mlm-rate: '0' is not a number in \(0, 1\]" "$out" \
    X --model "$T/bert" --ids "$T/ids.txt" --no-attention --nll "$out" --mlm-rate 0
expect_error "--mlm-rate 1.5" 2 "mlm-rate: '1.5' is not a number in \(0, 1\]" "$out" \
    X --model "$T/bert" --ids "$T/ids.txt" --no-attention --nll "$out" --mlm-rate 1.5
expect_error "--mlm-rate abc" 2 "mlm-rate: 'abc' is not a number in \(0, 1\]" "$out" \
    X --model "$T/bert" --ids "$T/ids.txt" --no-attention --nll "$out" --mlm-rate abc
expect_error "--mlm-rate nan" 2 "mlm-rate: 'nan' is not a number in \(0, 1\]" "$out" \
    X --model "$T/bert" --ids "$T/ids.txt" --no-attention --nll "$out" --mlm-rate nan
expect_error "--mlm-seed -1" 2 "mlm-seed" "$out" \
    X --model "$T/bert" --ids "$T/ids.txt" --no-attention --nll "$out" --mlm-seed -1
$MK bert "$T/bert-nomask"
expect_error "no mask token anywhere" 1 "no mask token: no \[MASK\] or <mask>" "$out" \
    X --model "$T/bert-nomask" --ids "$T/ids.txt" --no-attention --nll "$out"
$MK bert "$T/bert-badmask" && set_cfg "$T/bert-badmask" "c['attncoda_mask_token_id'] = 101"
expect_error "attncoda_mask_token_id outside the vocabulary" 1 "'attncoda_mask_token_id' = 101 is outside the vocabulary" \
    "$out" X --model "$T/bert-badmask" --ids "$T/ids.txt" --no-attention --nll "$out"
printf '2 5 6 3\n2 3 0 0\n' >"$T/nocand.txt"
expect_error "a sequence of special tokens only" 1 "nocand.txt: sequence 2 has no position to mask" "$out" \
    X --model "$T/bert" --ids "$T/nocand.txt" --no-attention --nll "$out"
expect_error "--mlm-rate with a causal model" 2 "mlm-rate and --mlm-seed are for encoders" "$out" \
    X --model "$T/gpt2" --ids "$T/eq_ids.txt" --no-attention --nll "$out" --mlm-rate 0.2
expect_error "--mlm-seed with --images" 2 "not with --images" "$out" \
    X --model "$T/bert" --images "$T" --mlm-seed 3 "$out"
$MK bert "$T/bert-bare" --no-head
expect_error "a bare encoder still refuses --no-attention" 2 "bert has no language-model head" - \
    X --model "$T/bert-bare" --ids "$T/ids.txt" --no-attention

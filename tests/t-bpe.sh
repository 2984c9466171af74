#!/bin/bash
# train with bpe_merges (a byte-level BPE vocabulary learned on the training text): the learned
# merges against an independent Python learner (tests/ref/bpe_ref.py), the written tokenizer.json
# against HF tokenizers (npm, tests/ref/tok_ref.js) on the KJV validation text, a 16-update run
# per causal family checked against the PyTorch reference (tests/ref/train_torch.py) and loaded
# back by bin/extract, recipe errors, and bit-identical reruns.
source tests/lib.sh
TRAIN="$BIN/train"
# the pipeline's corpus (pipelines/corpus.mk): training Genesis..Philemon, validation Hebrews..Revelation
bible -f gen1:1-phm1:25 | sed 's/^[^ ]* //' >"$T/train.txt"
bible -f heb1:1-rev22:21 | sed 's/^[^ ]* //' >"$T/valid.txt"
head -c 200000 "$T/train.txt" >"$T/k200.txt"
cat >"$T/g.conf" <<'CONF'
kind = trained
family = gpt2
layers = 2
d_model = 32
heads = 2
d_ff = 64
context = 64
lr = 1e-2
warmup = 5
batch = 8
steps_quick = 16
eval_windows = 16
seed = 3
bpe_merges = 256
CONF
sed -e 's/gpt2/llama/' -e 's/heads = 2/heads = 4\nkv_heads = 2/' "$T/g.conf" >"$T/l.conf"
run() { "$TRAIN" --valid "$T/valid.txt" --threads 1 "$@" 2>"$T/stderr"; }

# ---- the learner against the reference learner
# a small text with ties, runs of one letter (overlapping pairs), contractions, digits, odd
# whitespace and multi-byte letters; 1000 merges is more than it has, so it stops when no pair
# occurs twice
cat >"$T/small.txt" <<'TXT'
aaaa aaa aa a abab abab ba ba baba the then there they them thee thee the
It's they'll we've I'm you'd 'tis don't   spaced	tabs   and  lines
12 123 1234 12345 2024-12-01 3.14 x2 x2 ++ ++ -- ...
café cafés naïve naïve Ελλάδα Ελλάδα 日本語 日本語 aaaaaaa bbbbbbb
  trailing   
TXT
learned() {   # TEXT N CONF OUT: train --steps 0 on TEXT with bpe_merges = N; prints train's merges
    sed "s/^bpe_merges = .*/bpe_merges = $2/; s/^context = .*/context = 8/" "$T/g.conf" >"$3"
    "$TRAIN" --config "$3" --out "$4" --train "$1" --valid "$T/valid.txt" --steps 0 --no-checkpoints --threads 1 \
        2>"$T/stderr" || { echo "# train: $(cat "$T/stderr")" >&2; return 1; }
    "$PYTHON" tests/ref/bpe_ref.py json "$4/tokenizer.json"
}
learned "$T/small.txt" 1000 "$T/s.conf" "$T/small" >"$T/small.c" || fail "train on the small text"
"$PYTHON" tests/ref/bpe_ref.py learn "$T/small.txt" 1000 >"$T/small.py"
n=$(wc -l <"$T/small.py")
check "small text: the learner stops where no pair occurs twice ($n < 1000 merges)" test "$n" -gt 20 -a "$n" -lt 1000
check "small text: the same $n merges and ids as the reference learner" cmp -s "$T/small.c" "$T/small.py"
t0=$(date +%s.%N)
learned "$T/k200.txt" 300 "$T/k.conf" "$T/k200" >"$T/k200.c" || fail "train on 200 KB of KJV"
"$PYTHON" tests/ref/bpe_ref.py learn "$T/k200.txt" 300 >"$T/k200.py"
check "first 200 KB of the KJV, N = 300: the same 300 merges and ids as the reference learner" \
    bash -c "[ \$(wc -l <'$T/k200.c') -eq 300 ] && cmp -s '$T/k200.c' '$T/k200.py'"
check "provenance records bpe_merges and bpe_merges_learned; vocab_size = 257 + 300" bash -c "
    head -1 '$T/k200/report.tsv' | grep -q '\"bpe_merges\":300,\"bpe_merges_learned\":300' &&
    grep -q '\"vocab_size\": 557,' '$T/k200/config.json'"
# the whole training text (3.98 MB), N = 4096: "a few seconds" at most
s0=$(date +%s.%N)
sed 's/^bpe_merges = .*/bpe_merges = 4096/' "$T/k.conf" >"$T/big.conf"
"$TRAIN" --config "$T/big.conf" --out "$T/big" --train "$T/train.txt" --valid "$T/valid.txt" --steps 0 \
    --no-checkpoints --threads 1 2>"$T/big.err"
s1=$(date +%s.%N)
echo "# $(grep -h 'merges learned\|tokens (' "$T/big.err" | sed 's/^train: big: //' | tr '\n' ';')"
check "full KJV training text, N = 4096: learned, encoded and saved in under 10 s" \
    awk -v a="$s0" -v b="$s1" 'BEGIN{exit !(b - a < 10)}'
check "full KJV, N = 4096: all 4096 merges learned" grep -q '4096 BPE merges learned (of 4096)' "$T/big.err"

# ---- the written tokenizer.json against HF tokenizers
live=0
if command -v node >/dev/null; then
    [ -d tests/ref/node_modules/tokenizers ] ||
        (cd tests/ref && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1) || true
    [ -d tests/ref/node_modules/tokenizers ] && live=1
fi
hf_ids() {   # DIR TEXT OUT [--whole]
    node tests/ref/tok_ref.js hf "$1/tokenizer.json" ${4:-} "$2" >"$3"
}
if [ $live = 1 ]; then
    for d in big k200; do
        hf_ids "$T/$d" "$T/valid.txt" "$T/$d.hf" --whole
        "$BIN/tokenize" --no-header --whole -t "$T/$d" "$T/valid.txt" >"$T/$d.our"
        check "$d tokenizer: the whole KJV validation text, $(wc -w <"$T/$d.hf") ids equal HF tokenizers' (npm)" \
            cmp -s "$T/$d.our" "$T/$d.hf"
        hf_ids "$T/$d" "$T/small.txt" "$T/$d.shf"
        "$BIN/tokenize" --no-header -t "$T/$d" "$T/small.txt" >"$T/$d.sour"
        check "$d tokenizer: the small text line by line, ids equal HF tokenizers'" cmp -s "$T/$d.sour" "$T/$d.shf"
    done
else
    skip "learned tokenizers against HF tokenizers" "node with tests/ref/node_modules/tokenizers"
fi

# ---- training with bpe_merges = 256: both causal families
# The validation ids the references use: HF tokenizers' where node is there, else bin/tokenize's
# (then compared with HF above only when live).
stream() {   # DIR OUT
    if [ $live = 1 ]; then hf_ids "$1" "$T/valid.txt" "$2" --whole
    else "$BIN/tokenize" --no-header --whole -t "$1" "$T/valid.txt" >"$2"; fi
}
agree() {   # DIR: report.tsv against the torch forward on the reference token stream, |d| <= 2e-5
    "$PYTHON" tests/ref/train_torch.py check-stream "$1" "$1.ids" 16 >"$1.ref" || return 1
    grep -E '^(val_loss|val_nats_per_byte|sink_mass)\s' "$1/report.tsv" |
        paste - <(grep -E '^(val_loss|val_nats_per_byte|sink_mass)\s' "$1.ref") |
        awk -F'\t' '$1!=$5||$2!=$6||$3!=$7{bad=1} {d=$4-$8; if(d<0)d=-d; if(d>m)m=d} END{exit bad || m > 2e-5 || NR < 6}'
}
via_extract() {   # DIR: extract's attention on the reference windows = the torch reference (1e-5)
    "$PYTHON" tests/ref/train_torch.py ids-stream "$1.ids" 16 64 "$1.win" &&
    "$BIN/extract" --model "$1" --ids "$1.win" "$1.h5" >/dev/null 2>"$T/ext.err" || { echo "# extract: $(cat "$T/ext.err")"; return 1; }
    local diff; diff=$("$PYTHON" tests/ref/train_torch.py attn "$1" "$1.win" "$1.h5") || return 1
    echo "# $(basename "$1"): max |attention - torch reference| = $diff"
    awk -v x="$diff" 'BEGIN{exit !(x < 1e-5)}'
}
text_ids() {   # DIR: extract --text tokenises like the reference and prepends BOS (256)
    "$BIN/extract" --model "$1" --text "$T/valid.txt" --sequential -S 4 -T 64 --no-attention --nll "$1.nll" \
        >/dev/null 2>"$T/ext.err" || { echo "# extract: $(cat "$T/ext.err")"; return 1; }
    "$PYTHON" - "$1.nll" "$1.ids" <<'PY'
import sys
rows = [l.split("\t") for l in open(sys.argv[1]) if not l.startswith("#")][1:]
got = [int(r[2]) for r in rows]
want = [int(x) for x in open(sys.argv[2]).read().split()][:4 * 63]
assert got == want, (got[:10], want[:10])
PY
}
for fam in g l; do
    name=$([ $fam = g ] && echo gpt2 || echo llama)
    d=$T/bpe-$name
    run --config "$T/$fam.conf" --out "$d" --train "$T/train.txt" || fail "$name run failed: $(cat "$T/stderr")"
    stream "$d" "$d.ids"
    v0=$(awk -F'\t' '$1=="0"{print $5}' "$d/train-log.tsv")
    v1=$(awk -F'\t' '$1=="val_loss"{print $4}' "$d/report.tsv")
    check "$name: initial validation loss is ln 513 = 6.24 nats/token ($v0)" awk -v v="$v0" 'BEGIN{exit !(v > 6.15 && v < 6.35)}'
    check "$name: validation loss falls in 16 updates ($v0 -> $v1 nats/token)" awk -v a="$v0" -v b="$v1" 'BEGIN{exit !(b < a - 0.5)}'
    check "$name: config.json vocab_size 513, and every checkpoint carries the same tokenizer.json" bash -c "
        grep -q '\"vocab_size\": 513,' '$d/config.json' &&
        for c in '$d'/checkpoints/*/; do cmp -s \$c/tokenizer.json '$d/tokenizer.json' || exit 1; done &&
        [ \$(ls '$d/checkpoints' | wc -l) -eq 2 ]"
    check "$name: report: nats per token and per byte, bytes per token, merges learned" bash -c "
        awk -F'\t' '\$1==\"val_loss\"{l=\$4} \$1==\"val_nats_per_byte\"{b=\$4} \$1==\"val_bytes_per_token\"{r=\$4}
            \$1==\"val_bits_per_byte\"{x=\$4} \$1==\"bpe_merges_learned\"{m=\$4}
            END{exit !(r > 2 && r < 4 && (l / r - b)^2 < 1e-10 && (b / log(2) - x)^2 < 1e-10 && m == 256)}' '$d/report.tsv' &&
        grep -q 'nats/token, .* nats/byte' '$T/stderr'"
    check "$name: torch forward on HF tokenizers' ids agrees with train's report (loss per token and per byte, sink mass)" agree "$d"
    check "$name: bin/extract --ids loads the model, attention = torch reference (1e-5)" via_extract "$d"
    check "$name: bin/extract --text: the learned tokenizer's ids after BOS 256" text_ids "$d"
    check "$name: extract --info and tokenize --info: vocabulary 513, BOS 256" bash -c "
        '$BIN/extract' --model '$d' --info | grep -q '^vocab	513\$' &&
        '$BIN/extract' --model '$d' --info | grep -q '^bos_id	256\$' &&
        '$BIN/tokenize' --info -t '$d' | grep -q '^vocab	513\$' && '$BIN/tokenize' --info -t '$d' | grep -q '^bos	256\$'"
done

# ---- reruns are bit-identical (every file of the output directory)
run --config "$T/g.conf" --out "$T/bpe-gpt2-again" --train "$T/train.txt" || fail "rerun failed"
check "two runs give byte-identical output directories" diff -r "$T/bpe-gpt2" "$T/bpe-gpt2-again"
"$TRAIN" --config "$T/g.conf" --out "$T/bpe-gpt2-j2" --train "$T/train.txt" --valid "$T/valid.txt" --threads 2 2>/dev/null ||
    fail "run with 2 threads failed"
check "a run on 2 threads gives the same bytes" diff -r "$T/bpe-gpt2" "$T/bpe-gpt2-j2"

# ---- synthetic trigger -> copy windows on the token stream (triggers: byte tokens 0x80..)
{ cat "$T/g.conf"; printf 'synthetic_share = 0.5\nsynthetic_task = recall\n'; } >"$T/gs.conf"
run --config "$T/gs.conf" --out "$T/bpe-syn" --train "$T/train.txt" --no-checkpoints || fail "BPE synthetic run: $(cat "$T/stderr")"
run --config "$T/gs.conf" --out "$T/bpe-syn2" --train "$T/train.txt" --no-checkpoints || fail "BPE synthetic rerun"
nsyn=$(awk -F'\t' '$1=="synthetic_windows"{print $4}' "$T/bpe-syn/report.tsv")
check "BPE + synthetic_share 0.5: synthetic_windows near half of 128 ($nsyn)" awk -v n="$nsyn" 'BEGIN{exit !(n >= 40 && n <= 88)}'
check "BPE + synthetic: the same learned vocabulary as without" cmp -s "$T/bpe-syn/tokenizer.json" "$T/bpe-gpt2/tokenizer.json"
check "BPE + synthetic: provenance records bpe_merges and synthetic_share" bash -c "
    head -1 '$T/bpe-syn/report.tsv' | grep -q '\"synthetic_share\":0.5' && head -1 '$T/bpe-syn/report.tsv' | grep -q '\"bpe_merges\":256'"
check "BPE + synthetic: the model differs from the run without" bash -c "! cmp -s '$T/bpe-syn/model.safetensors' '$T/bpe-gpt2/model.safetensors'"
check "BPE + synthetic: rerun bit-identical" diff -r "$T/bpe-syn" "$T/bpe-syn2"
check "a byte-level recipe (bpe_merges = 0) records no bpe key" bash -c "
    sed 's/^bpe_merges = .*/bpe_merges = 0/' '$T/g.conf' >'$T/b0.conf' &&
    '$TRAIN' --config '$T/b0.conf' --out '$T/b0' --train '$T/k200.txt' --valid '$T/valid.txt' --steps 0 --no-checkpoints 2>/dev/null &&
    ! grep -q bpe '$T/b0/report.tsv' '$T/b0/config.json' && grep -q '\"vocab_size\": 257,' '$T/b0/config.json' &&
    grep -q '\"use_regex\": false' '$T/b0/tokenizer.json' && grep -q '\"merges\": \[\]' '$T/b0/tokenizer.json'"

# ---- bad input: one line, exit 1, no output directory
badrecipe() {   # NAME LINE PATTERN
    { grep -v '^bpe_merges' "$T/g.conf"; printf '%s\n' "$2"; } >"$T/bad.conf"
    expect_error "$1" 1 "$3" "$T/bad-out" "$TRAIN" --config "$T/bad.conf" --out "$T/bad-out" --train "$T/k200.txt" --valid "$T/valid.txt"
}
badrecipe "bpe_merges = -1" "bpe_merges = -1" "^train: $T/bad.conf: line 14: bpe_merges = -1: want a number in \[0, 32000\]$"
badrecipe "bpe_merges = 40000" "bpe_merges = 40000" "^train: $T/bad.conf: line 14: bpe_merges = 40000: want a number in \[0, 32000\]$"
badrecipe "bpe_merges = 1.5" "bpe_merges = 1.5" "^train: $T/bad.conf: line 14: bpe_merges = 1.5: want an integer$"
printf 'À la carte\n' >"$T/trig.txt"; cat "$T/k200.txt" >>"$T/trig.txt"   # À = C3 80: byte token 0x80, trigger 0
{ cat "$T/g.conf"; printf 'synthetic_share = 0.1\n'; } >"$T/bad.conf"
expect_error "BPE synthetic windows on a text whose tokens include a trigger id" 1 \
    "^train: $T/trig.txt: token [0-9]+ is id 128, a synthetic trigger \(byte tokens 0x80-0x83 are the triggers\)$" "$T/bad-out" \
    "$TRAIN" --config "$T/bad.conf" --out "$T/bad-out" --train "$T/trig.txt" --valid "$T/valid.txt"
{ grep -v '^bpe_merges' "$T/g.conf"; printf 'synthetic_share = 0.1\n'; } >"$T/bad.conf"
expect_error "byte synthetic windows on a text with a trigger byte" 1 \
    "^train: $T/trig.txt: byte 1 is 0x80, a synthetic trigger \(bytes 0x80-0x83 are the triggers\)$" "$T/bad-out" \
    "$TRAIN" --config "$T/bad.conf" --out "$T/bad-out" --train "$T/trig.txt" --valid "$T/valid.txt"
{ sed -e 's/gpt2/bert/' "$T/g.conf"; } >"$T/bad.conf"
expect_error "bpe_merges with family = bert" 1 "^train: $T/bad.conf: bpe_merges is for the causal families, not bert$" "$T/bad-out" \
    "$TRAIN" --config "$T/bad.conf" --out "$T/bad-out" --train "$T/k200.txt" --valid "$T/valid.txt"
{ cat "$T/k200.txt"; printf 'bad \xff\xfe byte\n'; } >"$T/notutf8.txt"
expect_error "training text that is not UTF-8" 1 "^train: $T/notutf8.txt: bpe_merges needs UTF-8 text" "$T/bad-out" \
    "$TRAIN" --config "$T/g.conf" --out "$T/bad-out" --train "$T/notutf8.txt" --valid "$T/valid.txt"
{ head -c 5000 "$T/k200.txt"; printf 'typed <|bos|> in the text\n'; } >"$T/bostext.txt"
expect_error "training text with the BOS string <|bos|> in it" 1 "^train: $T/bostext.txt: the text contains <\|bos\|>" "$T/bad-out" \
    "$TRAIN" --config "$T/g.conf" --out "$T/bad-out" --train "$T/bostext.txt" --valid "$T/valid.txt"
head -c 120 "$T/valid.txt" >"$T/shortvalid.txt"
expect_error "validation text with fewer tokens than the context" 1 "^train: $T/shortvalid.txt: text has [0-9]+ tokens; need at least context \+ 1 = 65$" \
    "$T/bad-out" "$TRAIN" --config "$T/g.conf" --out "$T/bad-out" --train "$T/k200.txt" --valid "$T/shortvalid.txt"
true

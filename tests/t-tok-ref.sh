# Token ids from bin/tokenize against independent reference implementations, line by line, on
# three texts in tests/golden/tok: kjv200.txt (the first 200 lines of `bible gen1:1-gen10:32`,
# bible-kjv package), multi.txt (many scripts, NFC/NFD, emoji, odd whitespace, controls, special
# tokens typed in the text, long words) and fuzz.txt (1000 lines of seeded random code points).
# References (tests/ref/tok_ref.js): HF tokenizers (npm "tokenizers", the compiled Rust library)
# for GPT-2, Pythia, Qwen2, BERT and attncoda's byte tokenizer; tiktoken (npm, WASM) for
# Llama-3. Node modules are installed into tests/ref/node_modules with `npm ci` from the
# committed lock file when absent. Without node or the registry, our ids are checked against
# the SHA-256 of the reference output recorded in tests/golden/tok/ref.sha256 instead. The Llama-3
# tokenizer is optional (DATA_DIR/tokenizers/llama3): absent, its cases are skipped by name.
#   bash tests/t-tok-ref.sh --update   rewrites ref.sha256 from the live references
source tests/lib.sh
TK=$EMBED/tokenizers
L3=$DATA_DIR/tokenizers/llama3
G=tests/golden/tok
SUMS=$G/ref.sha256
if [ ! -x "$BIN/tokenize" ]; then ok "reference tests # SKIP $BIN/tokenize not built"; exit 0; fi
if [ ! -d "$TK" ]; then fail "reference tests: $TK (part of the repository) is missing"; exit 1; fi
TEXTS="kjv200 multi fuzz"
# name  reference-kind  reference-tokenizer  our-tokenizer
CASES="gpt2 hf $TK/gpt2/tokenizer.json $TK/gpt2
gpt2 hf $TK/gpt2/tokenizer.json $TK/gpt2/vocab.json
pythia hf $TK/pythia/20B_tokenizer.json $TK/pythia
qwen2 qwen2 $TK/qwen2 $TK/qwen2
llama3 llama3 $L3/tokenizer.model $L3
bert hf $TK/bert-base-uncased/tokenizer.json $TK/bert-base-uncased
bert hf $TK/bert-base-uncased/tokenizer.json $TK/bert-base-uncased/vocab.txt
byte hf $G/byte/tokenizer.json $G/byte"

live=0
if command -v node >/dev/null; then
    if [ ! -d tests/ref/node_modules/tokenizers ] || [ ! -d tests/ref/node_modules/tiktoken ]; then
        (cd tests/ref && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1) || true
    fi
    [ -d tests/ref/node_modules/tokenizers ] && [ -d tests/ref/node_modules/tiktoken ] && live=1
fi
[ "${1:-}" = --update ] && [ $live = 0 ] && { echo "# --update needs node and the npm packages" >&2; exit 1; }
[ "${1:-}" = --update ] && [ ! -f "$L3/tokenizer.model" ] && { echo "# --update needs $L3/tokenizer.model (DATA_DIR)" >&2; exit 1; }
echo "# reference ids: $([ $live = 1 ] && echo "live from npm tokenizers/tiktoken" || echo "recorded checksums ($SUMS)")"

inputs=(); for x in $TEXTS; do inputs+=("$G/$x.txt"); done
declare -A done_ref
[ "${1:-}" = --update ] && : >"$SUMS.new"
while read -r name kind reftk ourtk; do
    if [ ! -e "$reftk" ]; then
        for x in $TEXTS; do skip "$name.$x via $(basename "$ourtk")" "$reftk"; done; continue
    fi
    mkdir -p "$T/ref/$name" "$T/our"
    if [ $live = 1 ] && [ -z "${done_ref[$name]:-}" ]; then
        node tests/ref/tok_ref.js "$kind" "$reftk" --out "$T/ref/$name" "${inputs[@]}" ||
            fail "$name: reference implementation failed"
        done_ref[$name]=1
        for x in $TEXTS; do
            sum=$(sha256sum <"$T/ref/$name/$x.ids" | cut -c1-64)
            if [ "${1:-}" = --update ]; then echo "$sum  $name.$x" >>"$SUMS.new"
            elif grep -q "^$sum  $name.$x\$" "$SUMS"; then ok "$name.$x: live reference equals the recorded checksum"
            else fail "$name.$x: live reference differs from $SUMS (reference changed?)"; fi
        done
    fi
    compare_ids "$name" "$ourtk" "$live"
done <<<"$CASES"
# add_special_tokens (tokenize --special) against HF tokenizers' encode(text, null,
# {addSpecialTokens: true}) on the tokenizer.json files, kjv200 and multi (an empty line is the
# specials alone): the post_processor's BERT [CLS] … [SEP], RoBERTa <s> … </s>, T5 … </s>,
# Llama-2 <s> … (optional: DATA_DIR), ByteLevel's nothing for GPT-2, Pythia and phi-2.
L2=$DATA_DIR/tokenizers/llama2
[ -e "$L2/tokenizer.json" ] || [ ! -e "$DATA_DIR/hf/Llama-2-7b-hf/tokenizer.json" ] || L2=$DATA_DIR/hf/Llama-2-7b-hf
SPECIAL_CASES="bert $TK/bert-base-uncased/tokenizer.json
roberta $TK/roberta-base/tokenizer.json
t5-small $TK/t5-small/tokenizer.json
flan-t5 $TK/flan-t5-large/tokenizer.json
gpt2 $TK/gpt2/tokenizer.json
pythia $TK/pythia/20B_tokenizer.json
phi-2 $TK/phi-2/tokenizer.json
llama2 $L2/tokenizer.json"
while read -r name reftk; do
    for x in kjv200 multi; do
        label="$name-special.$x: tokenize --special"
        if [ ! -e "$reftk" ]; then skip "$label" "$reftk"; continue; fi
        mkdir -p "$T/sp/$name"
        "$BIN/tokenize" --no-header --special -t "$reftk" "$G/$x.txt" >"$T/sp/$name/$x.our" || { fail "$label: failed"; continue; }
        if [ $live = 1 ]; then
            node tests/ref/tok_ref.js hf "$reftk" --special "$G/$x.txt" >"$T/sp/$name/$x.ref" || fail "$label: reference failed"
            sum=$(sha256sum <"$T/sp/$name/$x.ref" | cut -c1-64)
            if [ "${1:-}" = --update ]; then echo "$sum  $name-special.$x" >>"$SUMS.new"; continue; fi
            check "$label: live reference equals the recorded checksum" grep -q "^$sum  $name-special.$x\$" "$SUMS"
            check "$label: $(wc -w <"$T/sp/$name/$x.our") ids equal HF tokenizers with addSpecialTokens" \
                cmp -s "$T/sp/$name/$x.our" "$T/sp/$name/$x.ref"
        else
            sum=$(sha256sum <"$T/sp/$name/$x.our" | cut -c1-64)
            check "$label: ids match the recorded reference checksum" grep -q "^$sum  $name-special.$x\$" "$SUMS"
        fi
    done
done <<<"$SPECIAL_CASES"
[ "${1:-}" = --update ] && mv "$SUMS.new" "$SUMS" && echo "# wrote $SUMS"

# Llama-3 as a HF tokenizer.json (built from the tiktoken ranks like transformers' converter):
# the tokenizer.json path (Split + ByteLevel, pair-form merges, ignore_merges) gives the same
# ids as the tiktoken path, and, with node, as HF tokenizers on that file.
if [ "${1:-}" != --update ] && [ ! -f "$L3/tokenizer.model" ]; then
    for x in $TEXTS; do skip "llama3.$x: tokenizer.json ids equal tiktoken-file ids" "$L3/tokenizer.model"; done
elif [ "${1:-}" != --update ] && mkdir -p "$T/l3" && "$PYTHON" tests/ref/llama3_hf_json.py "$L3/tokenizer.model" "$T/l3/tokenizer.json"; then
    [ $live = 1 ] && { mkdir -p "$T/l3ref"; node tests/ref/tok_ref.js hf "$T/l3/tokenizer.json" --out "$T/l3ref" "${inputs[@]}" ||
        fail "llama3 tokenizer.json: HF tokenizers failed"; }
    for x in $TEXTS; do
        "$BIN/tokenize" --no-header -t "$T/l3" "$G/$x.txt" >"$T/l3/$x.json.ids"
        "$BIN/tokenize" --no-header -t "$L3" "$G/$x.txt" >"$T/l3/$x.tik.ids"
        check "llama3.$x: tokenizer.json ids equal tiktoken-file ids" cmp -s "$T/l3/$x.json.ids" "$T/l3/$x.tik.ids"
        [ $live = 1 ] && check "llama3.$x: tokenizer.json ids equal HF tokenizers on the same file" \
            cmp -s "$T/l3/$x.json.ids" "$T/l3ref/$x.ids"
    done
fi
true

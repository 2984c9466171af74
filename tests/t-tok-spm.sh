# SentencePiece-style BPE (tokenizer.json and tokenizer.model), Unigram (T5) and the GPT-2-style
# BPE variants of phi-2, OPT and RoBERTa: token ids from bin/tokenize against independent
# references, line by line, on the three texts of tests/t-tok-ref.sh (tests/golden/tok: kjv200,
# multi, fuzz). References:
#   hf         HF tokenizers (npm "tokenizers") on the tokenizer.json;
#   bytelevel  HF tokenizers on the tokenizer.json transformers' converter makes of a
#              vocab.json + merges.txt directory (tests/ref/tok_ref.js);
#   spm        Google's SentencePiece library (Debian python3-sentencepiece) on the
#              tokenizer.model (tests/ref/spm_ref.py): <s>, </s>, <unk> typed in the text are
#              text there, as attncoda reads a tokenizer.model; a tokenizer.json's added tokens
#              are matched in the text first, as HF tokenizers does (docs/TOKENIZERS.md).
# Some tokenizers are made here: six tokenizer.json spellings of Mistral's model (Llama-2's
# legacy normaliser; Metaspace with prepend_scheme "first"; Gemma's, without the dummy prefix;
# Metaspace "always" with split; no byte fallback, so unknown characters become fused <unk>; the
# pieces and scores as a Unigram model with byte fallback), written by spm_ref.py from the
# model's pieces and scores, for HF tokenizers to run; Flan-T5's
# Unigram tokenizer.json written back as a tokenizer.model (protobuf) for our reader, checked
# against HF tokenizers on the tokenizer.json; an OPT directory (RoBERTa's vocabulary, which is
# OPT's, with OPT's special tokens: </s> is its BOS). Without node or python3-sentencepiece the
# ids are compared with the reference checksums in tests/golden/tok/spm.sha256. The Llama-2 files
# (Llama 2 licence) are optional, DATA_DIR/tokenizers/llama2: absent, their cases are skipped.
#   bash tests/t-tok-spm.sh --update   rewrites spm.sha256 from the live references
source tests/lib.sh
TK=$EMBED/tokenizers
L2=$DATA_DIR/tokenizers/llama2
# a data folder laid out as ../shared/data keeps the same two files in its Hugging Face folder
[ -e "$L2/tokenizer.json" ] || [ ! -e "$DATA_DIR/hf/Llama-2-7b-hf/tokenizer.json" ] || L2=$DATA_DIR/hf/Llama-2-7b-hf
G=tests/golden/tok
SUMS=$G/spm.sha256
if [ ! -x "$BIN/tokenize" ]; then ok "SentencePiece tests # SKIP $BIN/tokenize not built"; exit 0; fi
TEXTS="kjv200 multi fuzz"
inputs=(); for x in $TEXTS; do inputs+=("$G/$x.txt"); done
upd=0; [ "${1:-}" = --update ] && upd=1

node_ok=0
if command -v node >/dev/null; then
    [ -d tests/ref/node_modules/tokenizers ] ||
        (cd tests/ref && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1) || true
    [ -d tests/ref/node_modules/tokenizers ] && node_ok=1
fi
spm_ok=0; "$PYTHON" -c 'import sentencepiece' 2>/dev/null && spm_ok=1
[ $upd = 1 ] && { [ $node_ok = 1 ] && [ $spm_ok = 1 ] && [ -f "$L2/tokenizer.model" ] ||
    { echo "# --update needs node + npm tokenizers, python3-sentencepiece and $L2" >&2; exit 1; }; }
echo "# references: HF tokenizers $([ $node_ok = 1 ] && echo live || echo "from $SUMS"), SentencePiece $([ $spm_ok = 1 ] && echo live || echo "from $SUMS")"

# --- tokenizers made here
mkdir -p "$T/t5m" "$T/opt"
"$PYTHON" tests/ref/spm_ref.py tomodel "$TK/flan-t5-large/tokenizer.json" "$T/t5m/tokenizer.model" ||
    fail "spm_ref.py tomodel failed"
cp "$TK/roberta-base/vocab.json" "$TK/roberta-base/merges.txt" "$T/opt/"
echo '{"model_type": "opt"}' >"$T/opt/config.json"
echo '{"bos_token": "</s>", "eos_token": "</s>", "unk_token": "</s>", "pad_token": "<pad>"}' >"$T/opt/tokenizer_config.json"
for st in llama first gemma split nofallback unigram; do
    mkdir -p "$T/mj-$st"
    [ $spm_ok = 1 ] && "$PYTHON" tests/ref/spm_ref.py tojson "$TK/mistral/tokenizer.model" "$T/mj-$st/tokenizer.json" $st
done

# name  reference-kind  reference-tokenizer  our-tokenizer
CASES="mistral spm $TK/mistral/tokenizer.model $TK/mistral/tokenizer.model
mistral-json-llama hf $T/mj-llama/tokenizer.json $T/mj-llama
mistral-json-first hf $T/mj-first/tokenizer.json $T/mj-first/tokenizer.json
mistral-json-gemma hf $T/mj-gemma/tokenizer.json $T/mj-gemma
mistral-json-split hf $T/mj-split/tokenizer.json $T/mj-split
mistral-json-nofallback hf $T/mj-nofallback/tokenizer.json $T/mj-nofallback
mistral-json-unigram hf $T/mj-unigram/tokenizer.json $T/mj-unigram
t5-small hf $TK/t5-small/tokenizer.json $TK/t5-small
flan-t5 hf $TK/flan-t5-large/tokenizer.json $TK/flan-t5-large
flan-t5 hf $TK/flan-t5-large/tokenizer.json $T/t5m/tokenizer.model
phi-2 hf $TK/phi-2/tokenizer.json $TK/phi-2
roberta hf $TK/roberta-base/tokenizer.json $TK/roberta-base
opt bytelevel $T/opt $T/opt
llama2 hf $L2/tokenizer.json $L2/tokenizer.json
llama2-spm spm $L2/tokenizer.model $L2/tokenizer.model"

declare -A done_ref
[ $upd = 1 ] && : >"$SUMS.new"
while read -r name kind reftk ourtk; do
    live=$node_ok; [ $kind = spm ] && live=$spm_ok
    if [ ! -e "$reftk" ]; then
        why=$reftk; [[ $name = mistral-json-* ]] && why="python3-sentencepiece (to write $reftk)"
        for x in $TEXTS; do skip "$name.$x via $(basename "$ourtk")" "$why"; done; continue
    fi
    mkdir -p "$T/ref/$name" "$T/our"
    if [ $live = 1 ] && [ -z "${done_ref[$name]:-}" ]; then
        if [ $kind = spm ]; then "$PYTHON" tests/ref/spm_ref.py ids "$reftk" --out "$T/ref/$name" "${inputs[@]}"
        else node tests/ref/tok_ref.js "$kind" "$reftk" --out "$T/ref/$name" "${inputs[@]}"; fi ||
            fail "$name: reference implementation failed"
        done_ref[$name]=1
        for x in $TEXTS; do
            sum=$(sha256sum <"$T/ref/$name/$x.ids" | cut -c1-64)
            if [ $upd = 1 ]; then echo "$sum  $name.$x" >>"$SUMS.new"
            elif grep -q "^$sum  $name.$x\$" "$SUMS"; then ok "$name.$x: live reference equals the recorded checksum"
            else fail "$name.$x: live reference differs from $SUMS (reference changed?)"; fi
        done
    fi
    compare_ids "$name" "$ourtk" "$live"
done <<<"$CASES"
if [ $upd = 1 ]; then mv "$SUMS.new" "$SUMS"; echo "# wrote $SUMS"; exit 0; fi

# --- check values, special ids, decoding
ids() { printf '%s' "${!#}" | "$BIN/tokenize" --no-header -w -t "$1" "${@:2:$#-2}" -; }
vec() { local n=$1 want=$2 got; shift 2; got=$(ids "$@"); if [ "$got" = "$want" ]; then ok "$n"; else fail "$n: got '$got', want '$want'"; fi; }
vec "mistral 'Hello world' = 22557 1526" "22557 1526" $TK/mistral/tokenizer.model "Hello world"
vec "mistral newline is byte piece <0x0A> = 13" "264 13 28726" $TK/mistral/tokenizer.model $'a\nb'
vec "mistral --bos prepends <s> = 1" "1 22557 1526" $TK/mistral/tokenizer.model -b "Hello world"
vec "t5 'Hello world' = 8774 296" "8774 296" $TK/t5-small "Hello world"
vec "t5 </s> typed in the text is id 1" "8774 1" $TK/t5-small "Hello</s>"
# literal special-token text (issue 43): a tokenizer.model follows SentencePiece, where <s>, </s>
# and <unk> typed in the text are text; a tokenizer.json follows HF tokenizers, whose added tokens
# are matched first (ids from python3-sentencepiece and npm tokenizers on these lines)
vec "mistral tokenizer.model: '<s>Hello</s>' typed in the text is text, as SentencePiece encodes it" \
    "523 28713 28767 16230 700 28713 28767" $TK/mistral/tokenizer.model "<s>Hello</s>"
vec "mistral tokenizer.model: '<unk>' typed in the text is text" "264 523 2060 28767 287" \
    $TK/mistral/tokenizer.model "a <unk> b"
if [ -f "$T/mj-llama/tokenizer.json" ]; then
    vec "mistral tokenizer.json: '<s>Hello</s>' typed in the text is <s> Hello </s>, as HF tokenizers" \
        "1 22557 2" "$T/mj-llama" "<s>Hello</s>"
    vec "mistral tokenizer.json: '<unk>' typed in the text is <unk> (0)" "264 28705 0 28705 287" "$T/mj-llama" "a <unk> b"
else
    skip "mistral tokenizer.json: typed <s>, </s>, <unk> are the added tokens" "python3-sentencepiece"
fi
vec "t5 tokenizer.model (from Flan-T5's tokenizer.json): '</s>' typed in the text is text" \
    "8774 2 87 7 3155" "$T/t5m/tokenizer.model" "Hello</s>"
if [ -f "$L2/tokenizer.model" ] && [ -f "$L2/tokenizer.json" ]; then
    for x in $TEXTS; do
        "$BIN/tokenize" --no-header -t "$L2/tokenizer.model" "$G/$x.txt" >"$T/l2m.$x"
        "$BIN/tokenize" --no-header -t "$L2/tokenizer.json" "$G/$x.txt" >"$T/l2j.$x"
    done
    check "llama2: tokenizer.model and tokenizer.json ids equal on kjv200 and fuzz, on multi all but the line with typed specials" \
        bash -c 'cmp -s "$1/l2m.kjv200" "$1/l2j.kjv200" && cmp -s "$1/l2m.fuzz" "$1/l2j.fuzz" &&
                 [ "$(diff "$1/l2m.multi" "$1/l2j.multi" | grep -c "^[0-9]")" = 1 ] &&
                 diff "$1/l2m.multi" "$1/l2j.multi" | head -1 | grep -qx "17c17"' _ "$T"
else
    skip "llama2: tokenizer.model and tokenizer.json agree but on typed specials" "$L2/tokenizer.model"
fi
info() { "$BIN/tokenize" --info --no-header -t "$1" "${@:2}" | tr '\n\t' ' =' ; }
# the special ids from the files when no config.json says the family (issue 43): RoBERTa's
# post_processor names <s> (0) and </s> (2); its vocab.json alone, the fairseq <s> and </s>
mkdir -p "$T/rob-json" "$T/rob-vocab"
cp "$TK/roberta-base/tokenizer.json" "$T/rob-json/"
cp "$TK/roberta-base/vocab.json" "$TK/roberta-base/merges.txt" "$T/rob-vocab/"
check "roberta tokenizer.json: bos 0 eos 2 cls 0 sep 2 from the RobertaProcessing post_processor" \
    grep -q "bos=0 eos=2 cls=0 sep=2" <(info "$T/rob-json")
check "roberta tokenizer.json with --family roberta: the same" grep -q "bos=0 eos=2 cls=0 sep=2" <(info "$T/rob-json" -f roberta)
check "roberta vocab.json + merges.txt: bos <s> = 0, eos </s> = 2" grep -q "bos=0 eos=2" <(info "$T/rob-vocab")
vec "roberta --bos: <s> ... </s> (0 ... 2), as extract with the model's config.json" "0 31414 232 2" "$T/rob-json" -b "Hello world"
# --special: add_special_tokens=True (references for the tokenizer.json files in t-tok-ref.sh)
vec "roberta --special: <s> Hello world </s>" "0 31414 232 2" "$T/rob-json" --special "Hello world"
vec "bert vocab.txt --special: [CLS] ... [SEP] (BertTokenizer)" "101 7592 2088 102" $TK/bert-base-uncased/vocab.txt --special "Hello world"
vec "gpt2 vocab.json --special: nothing (GPT-2's rule)" "15496 995" $TK/gpt2/vocab.json --special "Hello world"
vec "mistral tokenizer.model --special: <s> first (Llama's converter)" "1 22557 1526" $TK/mistral/tokenizer.model --special "Hello world"
vec "t5 tokenizer.model --special: no BOS, so </s> last (T5's converter)" "8774 296 1" "$T/t5m/tokenizer.model" --special "Hello world"
vec "opt vocab.json --special without add_bos_token: nothing" "31414 232" "$T/opt" --special "Hello world"
mkdir -p "$T/opt-add" && cp "$T/opt/"* "$T/opt-add/"
echo '{"bos_token": "</s>", "eos_token": "</s>", "add_bos_token": true}' >"$T/opt-add/tokenizer_config.json"
vec "opt vocab.json --special with add_bos_token true: </s> first (OPT's GPT2Tokenizer)" "2 31414 232" "$T/opt-add" --special "Hello world"
expect_error "--bos with --special: usage error" 2 "exclude each other" - "$BIN/tokenize" -t "$T/rob-json" --bos --special "$G/kjv200.txt"
tokerr() { expect_error "$1" 1 "$2" "$T/o.ids" "$BIN/tokenize" -t "$3" -o "$T/o.ids" "$G/kjv200.txt"; }
pp() {   # pp NAME 'post_processor JSON': RoBERTa's tokenizer.json with that post_processor
    mkdir -p "$T/pp-$1"
    "$PYTHON" -c "
import json, sys
j = json.load(open(sys.argv[1]))
j['post_processor'] = json.loads(sys.argv[2])
json.dump(j, open(sys.argv[3], 'w'))" "$TK/roberta-base/tokenizer.json" "$2" "$T/pp-$1/tokenizer.json"
}
pp seq '{"type": "Sequence", "processors": [{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}, {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}], "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}, "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}]}'
vec "post_processor Sequence(ByteLevel, TemplateProcessing <s> \$A </s> </s>)" "0 31414 232 2 2" "$T/pp-seq" --special "Hello world"
if [ $node_ok = 1 ]; then
    check "post_processor Sequence(...): equal to HF tokenizers with addSpecialTokens" bash -c '
        printf "Hello world\n" >"$2/hw.txt"
        [ "$(node tests/ref/tok_ref.js hf "$2/pp-seq/tokenizer.json" --special "$2/hw.txt")" = "0 31414 232 2 2" ]' _ "$BIN" "$T"
else
    skip "post_processor Sequence(...): equal to HF tokenizers" "node and npm tokenizers"
fi
pp unsup '{"type": "SomeFutureProcessing"}'
vec "an unknown post_processor type: the tokenizer still loads" "31414 232" "$T/pp-unsup" "Hello world"
expect_error "--special with an unknown post_processor type: named, exit 1" 1 \
    ": --special: post_processor 'SomeFutureProcessing' is not supported" "$T/o.ids" \
    "$BIN/tokenize" -t "$T/pp-unsup" --special -o "$T/o.ids" "$G/kjv200.txt"
pp cls '{"type": "RobertaProcessing", "cls": ["<s>", 60000], "sep": ["</s>", 2]}'
tokerr "post_processor RobertaProcessing: cls id outside the vocabulary" \
    "post_processor RobertaProcessing: 'cls' is not a \[token, id\] pair with an id of the vocabulary \(0..50264\)" "$T/pp-cls"
pp noa '{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}}}'
tokerr "post_processor TemplateProcessing without \$A" "'single' must hold the sequence \\\$A once" "$T/pp-noa"
pp noids '{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<x>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {}}'
tokerr "post_processor TemplateProcessing: a special token without ids" "single\[0\] is neither \\\$A nor a special token" "$T/pp-noids"
pp notype '{"cls": ["<s>", 0]}'
tokerr "post_processor without a type" "post_processor without a type" "$T/pp-notype"
check "mistral specials: bos 1 eos 2 from the trainer spec" grep -q "bos=1 eos=2" <(info $TK/mistral/tokenizer.model)
check "t5 specials: eos 1 pad 0, no bos" grep -q "bos=-1 eos=1 .*pad=0" <(info $TK/t5-small)
check "opt specials: </s> (2) is bos and eos" grep -q "bos=2 eos=2" <(info "$T/opt")
for f in mistral gemma gemma2 xlm-roberta t5 spm; do
    vec "family name '$f' is accepted" "22557 1526" $TK/mistral/tokenizer.model -f $f "Hello world"
done

# --- extract --text picks these tokenizers from a model directory by its model_type (tiny random
# checkpoints of the real vocabulary size, tests/ref/make_tiny_more.py): Mistral and Gemma with a
# SentencePiece tokenizer.model get BOS first; XLM-R with a Unigram tokenizer.json (T5's, as a
# stand-in: no XLM-R tokenizer file is carried) <s> … </s>, taken from the tokenizer where it has
# them (T5's </s> = 1) and else from config.json (bos_token_id 0); phi <|endoftext|> first, OPT
# its </s> (2), RoBERTa <s> … </s> (0, 2), all from the files the repository carries
echo "In the beginning God created the heaven and the earth." >"$T/verse.txt"
for spec in mistral:$TK/mistral/tokenizer.model:32000:1:- gemma:$TK/mistral/tokenizer.model:32000:1:- \
            xlm-roberta:$TK/t5-small/tokenizer.json:32100:0:1 phi:$TK/phi-2/tokenizer.json:51200:50256:- \
            opt:$T/opt:50272:2:- roberta:$TK/roberta-base:50265:0:2; do
    IFS=: read -r fam tkf V lead trail <<<"$spec"
    if ! "$PYTHON" tests/ref/make_tiny_more.py "$fam" "$T/x-$fam" --vocab "$V" >/dev/null 2>&1; then
        fail "extract --text $fam: make_tiny_more.py failed"; continue
    fi
    if [ -d "$tkf" ]; then find "$tkf" -maxdepth 1 -type f ! -name config.json -exec cp {} "$T/x-$fam/" \;
    else cp "$tkf" "$T/x-$fam/"; fi
    "$BIN/tokenize" -t "$tkf" --no-header "$T/verse.txt" >"$T/x-$fam.ids"
    if ! "$BIN/extract" --model "$T/x-$fam" --text "$T/verse.txt" -S 1 -T 8 --sequential "$T/x-$fam.h5" 2>"$T/x-$fam.err"; then
        fail "extract --text $fam: $(head -c 300 "$T/x-$fam.err")"; continue
    fi
    last=""; [ "$trail" != - ] && last=", $trail last"
    check "extract --text $fam ($(basename "$tkf")): $lead first$last, the tokenizer's ids between" "$PYTHON" -c "
import h5py, sys
t = h5py.File(sys.argv[1], 'r')['tokens'][0].tolist()
ids = [int(x) for x in open(sys.argv[2]).read().split()]
lead, trail = int(sys.argv[3]), sys.argv[4]
body = t[1:-1] if trail != '-' else t[1:]
assert t[0] == lead and body == ids[:len(body)] and len(body) > 4, (t, ids)
assert trail == '-' or t[-1] == int(trail), t" "$T/x-$fam.h5" "$T/x-$fam.ids" "$lead" "$trail"
done

# --- bad input: one line, exit 1, no output (tokerr: above)
head -c 1000 $TK/mistral/tokenizer.model >"$T/trunc.model"
tokerr "truncated tokenizer.model" "trunc.model: .*(runs past the end|truncated)" "$T/trunc.model"
printf '\x0a\x05\x0a\x01a\x10\x05' >"$T/score.model"
tokerr "tokenizer.model: piece score with the wrong wire type" "score \(field 2\) has wire type 0, expected 5" "$T/score.model"
printf '\x0a\x03\x0a\x01a\x10\x01' >"$T/trainer.model"
tokerr "tokenizer.model: trainer_spec with the wrong wire type" "trainer_spec \(field 2\) has wire type 0, expected 2" "$T/trainer.model"
printf '\x0a\x03\x0a\x01a\x12\x04\xc0\x02\xbf\x01' >"$T/unk.model"
tokerr "tokenizer.model: unk_id out of range" "unk_id = 191 is not a piece id \(0..0\)" "$T/unk.model"
printf '\x0a\x03\x0a\x01a\x12\x05\x18\x03\xc0\x02\x00' >"$T/word.model"
tokerr "tokenizer.model: model_type WORD refused" "model_type 3 is not supported" "$T/word.model"
printf '\x0a\x03\x0a\x01a\x0a\x05\x0a\x01b\x18\x09' >"$T/type.model"
tokerr "tokenizer.model: piece type out of range" "piece 1: type 9 is not 1..6" "$T/type.model"
printf '\x0a\x04\x0a\x02\xff\xfe' >"$T/utf8.model"
tokerr "tokenizer.model: piece not UTF-8" "piece 0: .*not UTF-8" "$T/utf8.model"
printf '\x0a\x03\x0a\x01a\x1f' >"$T/group.model"
tokerr "tokenizer.model: unsupported wire type" "unsupported wire type" "$T/group.model"
uni() { mkdir -p "$T/u$1"; printf '%s' "$2" >"$T/u$1/tokenizer.json"; tokerr "$3" "$4" "$T/u$1"; }
uni 1 '{"model": {"type": "Unigram", "unk_id": 0, "vocab": [["a", -1.0], ["b"]]}}' \
    "Unigram: a vocab entry that is not a pair" "model.vocab\[1\] is not a \[non-empty piece, finite score\] pair"
uni 2 '{"model": {"type": "Unigram", "unk_id": 5, "vocab": [["a", -1.0]]}}' \
    "Unigram: unk_id out of range" "model.unk_id is not an id of the vocabulary \(0..0\)"
uni 3 '{"model": {"type": "Unigram", "unk_id": 0, "vocab": [["a", -1.0]]' \
    "Unigram: truncated JSON" "tokenizer.json: line 1: "
uni 4 '{"normalizer": {"type": "Precompiled", "precompiled_charsmap": "AAAAAA=="}, "model": {"type": "Unigram", "unk_id": 0, "vocab": [["a", -1.0]]}}' \
    "Unigram: charsmap with an empty trie" "precompiled_charsmap: trie size 0"
uni 5 '{"normalizer": {"type": "Precompiled", "precompiled_charsmap": "%%%"}, "model": {"type": "Unigram", "unk_id": 0, "vocab": [["a", -1.0]]}}' \
    "Unigram: charsmap not base64" "precompiled_charsmap is not base64"
uni 6 '{"pre_tokenizer": {"type": "Metaspace", "replacement": "_", "prepend_scheme": "sometimes"}, "model": {"type": "Unigram", "unk_id": 0, "vocab": [["a", -1.0]]}}' \
    "Metaspace: unknown prepend_scheme" "prepend_scheme must be always, first or never"
uni 7 '{"pre_tokenizer": {"type": "BertPreTokenizer"}, "model": {"type": "Unigram", "unk_id": 0, "vocab": [["a", -1.0]]}}' \
    "Unigram: unsupported pre-tokenizer named" "pre_tokenizer 'BertPreTokenizer' is not supported"
uni 8 '{"model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "vocab": {"a": 0, "b": 1}, "merges": []}}' \
    "SentencePiece BPE: unk_token not in the vocabulary" "unk_token '<unk>' is not in the vocabulary"
uni 9 '{"normalizer": {"type": "Replace", "pattern": {"String": ""}, "content": "x"}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}' \
    "normalizer Replace with an empty pattern" "Replace: needs a non-empty pattern"
uni 10 '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a c"]}}' \
    "SentencePiece BPE: merge of a symbol not in the vocabulary" "merges\[0\]: symbol 'c' is not in the vocabulary"
uni 12 '{"model": {"type": "Unigram", "vocab": []}}' \
    "Unigram: empty vocabulary" "model.vocab is not an array of 1 to 2\^24"
uni 11 '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 99999999}, "merges": []}}' \
    "SentencePiece BPE: id out of range" "id is not an integer in \[0, 2\^26\)"
true

# Tokenizer tests through bin/tokenize: the published check values and test vectors of
# hf-checkpoints.md §11.1 (GPT-2, Pythia, Qwen2.5, Llama-3, BERT), the 14-line transformers
# integration string for four families, attncoda's byte tokenizer (tests/golden/tok/byte*),
# the program's own behaviour (lines, --whole, --bos, provenance, -o), and bad inputs: each one
# a single-line error with the documented exit status and no output file. The Llama-3 tokenizer is
# optional (DATA_DIR): its tests are skipped, each by name, when it is absent.
# Reference ids from independent implementations on longer texts: tests/t-tok-ref.sh.
source tests/lib.sh
TK=$EMBED/tokenizers
L3=$DATA_DIR/tokenizers/llama3
l3() { with_file "$L3/tokenizer.model" "$@"; }   # l3 TEST NAME ARGS...: needs the Llama-3 file
G=tests/golden/tok
if [ ! -x "$BIN/tokenize" ]; then ok "tokenizer tests # SKIP $BIN/tokenize not built"; exit 0; fi
if [ ! -d "$TK" ]; then fail "tokenizer tests: $TK (part of the repository) is missing"; exit 1; fi

# ids TOKENIZER [OPTS...] TEXT: ids of TEXT encoded as a whole
ids() {
    local tk=$1; shift
    local text=${!#}
    printf '%s' "$text" | "$BIN/tokenize" --no-header -w -t "$tk" "${@:1:$#-1}" -
}
# vec NAME EXPECTED TOKENIZER [OPTS...] TEXT
vec() {
    local n=$1 want=$2; shift 2
    local got; got=$(ids "$@")
    if [ "$got" = "$want" ]; then ok "$n"; else fail "$n: got '$got', want '$want'"; fi
}

# --- check values (data README) and §11.1 vectors
vec "gpt2 Hello=15496" 15496 $TK/gpt2 "Hello"
vec "gpt2 ' world'=995" 995 $TK/gpt2 " world"
vec "gpt2 <|endoftext|>=50256" 50256 $TK/gpt2 "<|endoftext|>"
vec "gpt2 Hello world" "15496 995" $TK/gpt2 "Hello world"
vec "gpt2 Hello World" "15496 2159" $TK/gpt2 "Hello World"
vec "gpt2 Hello, my dog is cute" "15496 11 616 3290 318 13779" $TK/gpt2 "Hello, my dog is cute"
vec "gpt2 The dog" "464 3290" $TK/gpt2 "The dog"
vec "gpt2 Hello world! (vocab.json+merges.txt)" "15496 995 0" $TK/gpt2/vocab.json "Hello world!"
vec "gpt2 --bos prepends 50256" "50256 15496 995 0" $TK/gpt2 --bos "Hello world!"
vec "pythia Hello=12092" 12092 $TK/pythia "Hello"
vec "pythia ' world'=1533" 1533 $TK/pythia " world"
vec "pythia Hello world" "12092 1533" $TK/pythia "Hello world"
vec "pythia Hello 世界" "12092 209 42848 45261" $TK/pythia "Hello 世界"
vec "pythia <|im_start|>system" "29 93 303 64 5478 49651 10394 187 34 12939 875" $TK/pythia \
    $'<|im_start|>system\nA chat between'
vec "pythia Multi/line/text" "22495 187 1282 186 1156" $TK/pythia $'Multi\nline\ttext'
vec "pythia added whitespace run Hi␣␣Hello" "12764 50276 12092" $TK/pythia "Hi  Hello"
vec "pythia --bos prepends 0" "0 12092" $TK/pythia --bos "Hello"
vec "qwen2 Hello=9707" 9707 $TK/qwen2 "Hello"
vec "qwen2 ' world'=1879" 1879 $TK/qwen2 " world"
vec "qwen2 Hello, world! 123 (single digits)" "9707 11 1879 0 220 16 17 18" $TK/qwen2 "Hello, world! 123"
vec "qwen2 What is the capital of France?" "3838 374 279 6722 315 9625 30" $TK/qwen2 \
    "What is the capital of France?"
vec "qwen2 The capital of France is" "785 6722 315 9625 374" $TK/qwen2 "The capital of France is"
vec "qwen2 <|endoftext|>=151643" 151643 $TK/qwen2 "<|endoftext|>"
l3 vec "llama3 Hello=9906" 9906 $L3 "Hello"
l3 vec "llama3 ' world'=1917" 1917 $L3 " world"
l3 vec "llama3 --bos Hello world" "128000 9906 1917" $L3 --bos "Hello world"
l3 vec "llama3 --bos Hello world!" "128000 9906 1917 0" $L3 --bos "Hello world!"
l3 vec "llama3 --bos Hello world, I am a" "128000 9906 1917 11 358 1097 264" $L3 --bos \
    "Hello world, I am a"
l3 vec "llama3 '  spaces  '" "220 12908 256" $L3 "  spaces  "
l3 vec "llama3 specials typed in text" "128000 128009 128255" $L3 \
    "<|begin_of_text|><|eot_id|><|reserved_special_token_250|>"
l3 vec "llama3 digits in groups of 3" "4513 10961 22" $L3 "1234567"
vec "bert hello=7592" 7592 $TK/bert-base-uncased "hello"
vec "bert [CLS] [SEP]" "101 102" $TK/bert-base-uncased "[CLS] [SEP]"
vec "bert hello, my dog is cute" "101 7592 1010 2026 3899 2003 10140 102" $TK/bert-base-uncased \
    --bos "hello, my dog is cute"
vec "bert [MASK] sentence" "101 1996 3007 1997 2605 2003 103 1012 102" $TK/bert-base-uncased \
    --bos "the capital of france is [MASK]."
vec "bert Test sentence with [MASK]." "101 3231 6251 2007 103 1012 102" $TK/bert-base-uncased \
    --bos "Test sentence with [MASK]."
vec "bert UNwanted,running (vocab.txt)" "101 18162 1010 2770 102" $TK/bert-base-uncased/vocab.txt \
    --bos $'UNwant\u00e9d,running'
vec "bert word over 100 chars is [UNK]" "100" $TK/bert-base-uncased "$(printf 'a%.0s' {1..101})"

# --- the transformers integration string (14 lines, no trailing newline)
for p in gpt2:gpt2 gpt2/vocab.json:gpt2 pythia:pythia pythia/20B_tokenizer.json:pythia qwen2:qwen2 \
         bert-base-uncased:bert bert-base-uncased/vocab.txt:bert; do
    d=${p%%:*}; f=${p#*:}
    got=$("$BIN/tokenize" --no-header -w -t "$TK/$d" $G/integration.txt)
    if [ "$got" = "$(cat $G/integration.$f.ids)" ]; then ok "integration string: $d"
    else fail "integration string: $d: got '$got'"; fi
done

# --- attncoda's byte tokenizer (as the training step writes it), HF-loadable and minimal shapes
for d in byte byte-min; do
    vec "$d: id = byte value" "72 195 169 10" $G/$d $'H\u00e9\n'
    vec "$d: <|bos|> typed in text is 256" "256 97" $G/$d "<|bos|>a"
    vec "$d: --bos prepends 256" "256 97 32 98" $G/$d --bos "a b"
    check "$d: --info vocab 257, bos 256" bash -c \
        '[ "$("$1/tokenize" --info -t "$2" | tr "\t\n" "= ")" = "vocab=257 bos=256 eos=-1 cls=-1 sep=-1 pad=-1 " ]' \
        _ "$BIN" $G/$d
done
check "byte: every line of kjv200 is its bytes" bash -c \
    '"$1/tokenize" --no-header -t "$2/byte" "$2/kjv200.txt" >"$3/b.ids" &&
     "$4" -c "import sys
a=open(sys.argv[1],\"rb\").read().split(b\"\\n\")[:-1]
b=[[int(x) for x in l.split()] for l in open(sys.argv[2])]
sys.exit(0 if [list(l) for l in a]==b else 1)" "$2/kjv200.txt" "$3/b.ids"' _ "$BIN" $G "$T" "$PYTHON"

# --- family detection and --info
check "--info: gpt_neox vocab 50277, bos=eos=0" bash -c \
    '[ "$("$1/tokenize" --info -t "$2/pythia" | head -3 | tr "\t\n" "= ")" = "vocab=50277 bos=0 eos=0 " ]' _ "$BIN" $TK
l3 check "--info: llama3 vocab 128256, bos 128000, eos 128001" bash -c \
    '[ "$("$1/tokenize" --info -t "$2" | head -3 | tr "\t\n" "= ")" = "vocab=128256 bos=128000 eos=128001 " ]' _ "$BIN" "$L3"
check "--info: qwen2 has no BOS, eos 151643" bash -c \
    '[ "$("$1/tokenize" --info -t "$2/qwen2" | head -3 | tr "\t\n" "= ")" = "vocab=151646 bos=-1 eos=151643 " ]' _ "$BIN" $TK
check "--info: bert cls 101 sep 102 pad 0" bash -c \
    '[ "$("$1/tokenize" --info -t "$2/bert-base-uncased" | tail -3 | tr "\t\n" "= ")" = "cls=101 sep=102 pad=0 " ]' _ "$BIN" $TK
vec "--family qwen2 on GPT-2 files switches the regex (single digits)" "16 17 18" $TK/gpt2/vocab.json --family qwen2 "123"
vec "config.json model_type picks the family" "16 17 18" "$(mkdir -p $T/cfg && cp $TK/gpt2/vocab.json $TK/gpt2/merges.txt $T/cfg/ &&
    echo '{"model_type":"qwen2"}' >$T/cfg/config.json && echo $T/cfg)" "123"

# --- program behaviour
printf 'Hello world\n\nThe dog\n' >"$T/in.txt"
check "lines: one output line per input line, empty stays empty" bash -c \
    '[ "$("$1/tokenize" --no-header -t "$2/gpt2" "$3/in.txt")" = "$(printf "15496 995\n\n464 3290")" ]' _ "$BIN" $TK "$T"
check "--whole encodes the newlines" bash -c \
    '[ "$("$1/tokenize" --no-header -w -t "$2/gpt2" "$3/in.txt")" = "15496 995 198 198 464 3290 198" ]' _ "$BIN" $TK "$T"
check "provenance header: program, tokenizer input sha256, options" bash -c \
    '"$1/tokenize" -t "$2/gpt2" "$3/in.txt" | head -1 | sed "s/^# //" | "$4" -c "import sys, json
p = json.load(sys.stdin)
ok = p[\"program\"] == \"tokenize\" and p[\"options\"][\"tokenizer\"].endswith(\"gpt2\") and len(p[\"inputs\"]) == 4 \
     and all(len(i[\"sha256\"]) == 64 for i in p[\"inputs\"])
sys.exit(0 if ok else 1)"' _ "$BIN" $TK "$T" "$PYTHON"
check "-o writes the file; same output as stdout; deterministic" bash -c \
    '"$1/tokenize" -t "$2" -o "$3/a.ids" "$3/in.txt" && "$1/tokenize" -t "$2" "$3/in.txt" >"$3/b.ids" &&
     cmp -s "$3/a.ids" "$3/b.ids"' _ "$BIN" "$TK/gpt2" "$T"
check "--help documents memory and exits 0" bash -c '"$1/tokenize" --help | grep -q Memory' _ "$BIN"
check "--version" bash -c '"$1/tokenize" --version | grep -q "^tokenize (attncoda)"' _ "$BIN"

# --- bad inputs: one stderr line, exit status, no output file
expect_error "missing tokenizer path" 1 "tokenize: .*nope.*no such file" "$T/o1" \
    "$BIN/tokenize" -t "$T/nope" -o "$T/o1" "$T/in.txt"
mkdir -p "$T/empty"
expect_error "directory without tokenizer files" 1 "tokenize: .*empty: no tokenizer.json" "$T/o2" \
    "$BIN/tokenize" -t "$T/empty" -o "$T/o2" "$T/in.txt"
head -c 5000 $TK/gpt2/tokenizer.json >"$T/trunc.json"
expect_error "malformed (truncated) tokenizer.json" 1 "tokenize: .*trunc.json: line [0-9]+" "$T/o3" \
    "$BIN/tokenize" -t "$T/trunc.json" -o "$T/o3" "$T/in.txt"
mkdir -p "$T/badm" && cp $TK/gpt2/vocab.json "$T/badm/" && { head -3 $TK/gpt2/merges.txt; echo "Ġ zzqqx"; } >"$T/badm/merges.txt"
expect_error "merges.txt entry with an unknown symbol" 1 "tokenize: .*merges.txt: merges.txt line 4: symbol 'zzqqx' is not in the vocabulary" "$T/o4" \
    "$BIN/tokenize" -t "$T/badm" -o "$T/o4" "$T/in.txt"
{ head -3 $TK/gpt2/merges.txt; echo "Ġ t h"; } >"$T/badm/merges.txt"
expect_error "merges.txt line with three symbols" 1 "merges.txt line 4: expected two symbols" "$T/o5" \
    "$BIN/tokenize" -t "$T/badm" -o "$T/o5" "$T/in.txt"
"$PYTHON" -c "import json,sys
d=json.load(open(sys.argv[1])); d['model']['merges'][7]='Ġ qqzzq'; json.dump(d,open(sys.argv[2],'w'))" \
    $TK/gpt2/tokenizer.json "$T/badmerge.json"
expect_error "tokenizer.json merge with an unknown symbol" 1 "badmerge.json: merges\[7\]: symbol 'qqzzq' is not in the vocabulary" "$T/o6" \
    "$BIN/tokenize" -t "$T/badmerge.json" -o "$T/o6" "$T/in.txt"
printf 'Hello\nab\xff\xfecd\n' >"$T/bad8.txt"
expect_error "invalid UTF-8 in the text (line and byte named)" 1 "tokenize: .*bad8.txt: line 2: invalid UTF-8 at byte 3" "$T/o7" \
    "$BIN/tokenize" -t $TK/gpt2 -o "$T/o7" "$T/bad8.txt"
expect_error "invalid UTF-8 with --whole (offset named)" 1 "bad8.txt: invalid UTF-8 at byte offset 8" "$T/o8" \
    "$BIN/tokenize" -w -t $TK/bert-base-uncased -o "$T/o8" "$T/bad8.txt"
printf 'SGVsbG8= 0\nnot base64!! x\n' >"$T/bad.model"
expect_error "malformed tiktoken line" 1 "bad.model: line 2: expected 'base64-token rank'" "$T/o9" \
    "$BIN/tokenize" -t "$T/bad.model" -o "$T/o9" "$T/in.txt"
printf 'a\nb\n' >"$T/vocab.txt"
expect_error "vocab.txt without [UNK]" 1 "vocab.txt: unknown-token '\[UNK\]' is not in the vocabulary" "$T/o10" \
    "$BIN/tokenize" -t "$T/vocab.txt" -o "$T/o10" "$T/in.txt"
echo '{"model":{"type":"WordLevel","vocab":{}}}' >"$T/uni.json"
expect_error "unsupported model type" 1 "uni.json: unsupported model type 'WordLevel'" "$T/o11" \
    "$BIN/tokenize" -t "$T/uni.json" -o "$T/o11" "$T/in.txt"
expect_error "--bos where there is no BOS (Qwen2)" 1 "qwen2: this tokenizer has no BOS" "$T/o12" \
    "$BIN/tokenize" --bos -t $TK/qwen2 -o "$T/o12" "$T/in.txt"
expect_error "unknown --family" 2 "tokenize: --family: unknown tokenizer family 'gpt5'" "$T/o13" \
    "$BIN/tokenize" --family gpt5 -t $TK/gpt2 -o "$T/o13" "$T/in.txt"
expect_error "--tokenizer missing" 2 "tokenize: --tokenizer PATH is required" "$T/o14" \
    "$BIN/tokenize" -o "$T/o14" "$T/in.txt"
expect_error "missing text file" 1 "tokenize: .*nofile.txt: cannot open" "$T/o15" \
    "$BIN/tokenize" -t $TK/gpt2 -o "$T/o15" "$T/nofile.txt"

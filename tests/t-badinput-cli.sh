#!/bin/bash
# Bad usage and unsafe outputs at every program's edges (issues 39 and 43): option errors in one
# style that names the option; an output that is an input (same device and inode: same name, hard
# link, symlink, stdin) refused with exit 2 before anything is written; no temporary copy of stdin
# left behind; a write error on stdout names stdout; '# provenance: {json}' lines; progress bars
# with a unit and --progress/--no-progress; help texts. Signals: tests/t-signals.sh.
source tests/lib.sh
PROGS="clr cluster collapse decompose distance extract frames import prune-rank regime reversal
sample synth tabulate theory tokenize train"
M=$EMBED/models/stories260K/stories260K.bin
GPT2=$EMBED/tokenizers/gpt2/tokenizer.json
sub() { [ "$1" = theory ] && echo band; }   # theory's options follow a subcommand

# ---- option errors: one style, from cli_bad_option ----
for p in $PROGS; do
    expect_error "$p: unknown option named, nearest long option suggested" 2 \
        "^$p: unknown option '--versoin' \(did you mean '--version'\?\)$" - "$BIN/$p" $(sub $p) --versoin
    expect_error "$p: unknown option far from every option: see --help" 2 \
        "^$p: unknown option '--zzzzzzzzzz' \(see --help\)$" - "$BIN/$p" $(sub $p) --zzzzzzzzzz
    expect_error "$p: --help=x: the option takes no value" 2 \
        "^$p: option '--help' takes no value$" - "$BIN/$p" $(sub $p) --help=x
done
# a missing value names the option (the long option as written, or the short one)
missing_value() {   # PROG OPTION [ARGS...]: OPTION last on the line, without its value
    local p=$1 opt=$2; shift 2
    expect_error "$p: '$opt' without its value is named" 2 "^$p: option '$opt' needs a value$" - \
        "$BIN/$p" $(sub $p) "$@" "$opt"
}
missing_value clr --sink
missing_value cluster --k-sweep
missing_value cluster -k
missing_value collapse --steps
missing_value decompose --min-query
missing_value distance --seqs
missing_value extract --seed
missing_value extract -T
missing_value frames -o
missing_value import --model-name
missing_value prune-rank --masks-dir
missing_value regime --dev
missing_value reversal --triples
missing_value sample --temperature
missing_value synth -S
missing_value tabulate --digits
missing_value theory --steps
missing_value tokenize -t
missing_value train --steps
expect_error "decompose: --min-qeury suggests --min-query" 2 \
    "^decompose: unknown option '--min-qeury' \(did you mean '--min-query'\?\)$" - "$BIN/decompose" --min-qeury 3 a b
expect_error "extract: an ambiguous prefix lists the options it could be" 2 \
    "^extract: option '--mlm' is ambiguous \(--mlm-rate, --mlm-seed\)$" - "$BIN/extract" --mlm 3
expect_error "synth: an unknown short option" 2 "^synth: unknown option '-Q' \(see --help\)$" - "$BIN/synth" -Q x
expect_error "train: a bad --steps value prints '--steps', not '----steps'" 2 "^train: --steps: 'x' is not" - \
    "$BIN/train" --steps x
# positional arguments: "expected WHAT (see --help)" or "unexpected argument 'X' (expected WHAT; see --help)"
for p in cluster prune-rank reversal; do
    expect_error "$p: no distance file" 2 "^$p: expected one distance file \(see --help\)$" - "$BIN/$p"
    expect_error "$p: two distance files" 2 "^$p: unexpected argument 'b' \(expected one distance file; see --help\)$" - \
        "$BIN/$p" a b
done
for p in clr decompose distance; do
    expect_error "$p: one argument" 2 "^$p: expected INPUT and OUTPUT \(see --help\)$" - "$BIN/$p" a
done
expect_error "collapse: one checkpoint" 2 "^collapse: expected at least two checkpoint files \(see --help\)$" - "$BIN/collapse" a

# ---- an output that is an input is refused: exit 2, naming both, input untouched ----
"$BIN/synth" -S 2 -L 1 -H 3 -T 8 --seed 1 "$T/a.h5" || fail "synth"
"$BIN/distance" "$T/a.h5" "$T/d.h5" || fail "distance"
printf 'Once upon a time there was a little girl. She liked to play in the park with her dog.\n' >"$T/story.txt"
"$PYTHON" -c "
import numpy as np, sys
a = np.tril(np.random.default_rng(1).random((2, 3, 5, 5))) + np.eye(5)
np.save(sys.argv[1], (a / a.sum(-1, keepdims=True)).astype(np.float32))" "$T/a.npy" || fail "numpy"
# same_file NAME VICTIM CMD...: CMD (whose output is VICTIM, or a link to it) exits 2 with one line
# "output '...' is the input '...'", VICTIM keeps its bytes, and no temporary file is left beside it
same_file() {
    local n=$1 v=$2; shift 2
    cp "$v" "$T/victim.orig"
    rm -rf "$T/sf" && mkdir "$T/sf"
    (cd "$T/sf" && "$@") >"$T/.out" 2>"$T/.err"; local rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$T/.err")" -eq 1 ] && grep -qE "is the input '.+' \(the same file\)" "$T/.err" &&
       cmp -s "$v" "$T/victim.orig" && [ -z "$(ls "$T/sf")" ] && [ -z "$(ls "$(dirname "$v")" | grep '\.tmp[0-9]')" ]; then
        ok "$n"
    else
        fail "$n (status $rc; stderr: $(head -c 300 "$T/.err"); same bytes: $(cmp -s "$v" "$T/victim.orig" && echo yes || echo no))"
    fi
}
B=$(cd "$BIN" && pwd); W=$(pwd)
cp "$T/a.npy" "$T/x.npy"
same_file "import x x" "$T/x.npy" "$B/import" "$T/x.npy" "$T/x.npy"
for p in clr decompose distance; do
    cp "$T/a.h5" "$T/x.h5"
    same_file "$p x x" "$T/x.h5" "$B/$p" "$T/x.h5" "$T/x.h5"
done
cp "$T/a.h5" "$T/x.h5"
same_file "frames -o x x" "$T/x.h5" "$B/frames" -o "$T/x.h5" "$T/x.h5"
same_file "decompose --tsv x (a second output)" "$T/x.h5" "$B/decompose" "$T/x.h5" out.h5 --tsv "$T/x.h5"
ln -s "$T/x.h5" "$T/sym.h5"; ln "$T/x.h5" "$T/hard.h5"
same_file "clr: output a symlink to the input" "$T/x.h5" "$B/clr" "$T/x.h5" "$T/sym.h5"
same_file "clr: output a hard link of the input" "$T/x.h5" "$B/clr" "$T/x.h5" "$T/hard.h5"
same_file "clr: input on stdin, output the same file" "$T/x.h5" bash -c '"$1" - "$2" <"$2"' _ "$B/clr" "$T/x.h5"
cp "$T/d.h5" "$T/dx.h5"
same_file "cluster -o x x (nothing on stdout either)" "$T/dx.h5" "$B/cluster" -o "$T/dx.h5" "$T/dx.h5"
check "cluster -o x x: the table did not go to stdout" test ! -s "$T/.out"
same_file "cluster --heads-tsv x x" "$T/dx.h5" "$B/cluster" --heads-tsv "$T/dx.h5" "$T/dx.h5"
same_file "reversal -o x x" "$T/dx.h5" "$B/reversal" -o "$T/dx.h5" "$T/dx.h5"
mkdir -p "$T/masks" && cp "$T/d.h5" "$T/masks/js_keep-20.txt"
same_file "prune-rank --masks-dir: a mask file to write is the input" "$T/masks/js_keep-20.txt" \
    "$B/prune-rank" --masks-dir "$T/masks" "$T/masks/js_keep-20.txt"
check "prune-rank --masks-dir: no other mask written before the refusal" test "$(ls "$T/masks")" = js_keep-20.txt
same_file "distance --tsv x (the input)" "$T/x.h5" "$B/distance" "$T/x.h5" out.h5 --tsv "$T/x.h5"
cp "$T/story.txt" "$T/s.txt"
same_file "tokenize -o x x" "$T/s.txt" "$B/tokenize" -t "$W/$GPT2" -o "$T/s.txt" "$T/s.txt"
cp "$GPT2" "$T/tok.json"   # a copy: a program that fails this test must not clobber the repository's file
same_file "tokenize -o TOKENIZER" "$T/tok.json" "$B/tokenize" -t "$T/tok.json" -o "$T/tok.json" "$T/s.txt"
if [ -f "$M" ]; then
    same_file "extract --text x x" "$T/s.txt" "$B/extract" --model "$W/$M" --text "$T/s.txt" -S 1 -T 8 "$T/s.txt"
    same_file "extract --nll x (the text)" "$T/s.txt" "$B/extract" --model "$W/$M" --text "$T/s.txt" -S 1 -T 8 \
        --nll "$T/s.txt" out.h5
    cp "$W/$M" "$T/m.bin"
    same_file "extract: OUTPUT is the model" "$T/m.bin" "$B/extract" --model "$T/m.bin" --tokenizer \
        "$W/$EMBED/models/stories260K/tok512.bin" --text "$T/s.txt" -S 1 -T 8 "$T/m.bin"
else
    skip "extract --text x x" "$M"
fi
cp "$T/story.txt" "$T/s.txt"
expect_error "tokenize TEXT >> TEXT: stdout appending to the input is refused" 2 \
    "^tokenize: stdout is the input '.*s\.txt' \(the same file\)" - bash -c '"$1" -t "$2" "$3" >>"$3"' _ "$BIN/tokenize" "$GPT2" "$T/s.txt"
check "tokenize TEXT >> TEXT: the text is unchanged" cmp "$T/story.txt" "$T/s.txt"
# an output path that is a FIFO or device is refused: committing by rename would replace it by a
# regular file (as root, /dev/null itself)
mkfifo "$T/fifo"
for p in clr decompose; do
    expect_error "$p: OUTPUT a FIFO is refused, not replaced" 2 "^$p: output '.*fifo' is a device or pipe" - "$BIN/$p" "$T/a.h5" "$T/fifo"
    check "$p: the FIFO is still a FIFO" test -p "$T/fifo"
done
expect_error "theory -o FIFO is refused" 2 "^theory: output '.*fifo' is a device or pipe" - "$BIN/theory" band --steps 3 -o "$T/fifo"
expect_error "clr: OUTPUT a directory is refused" 2 "^clr: output '.*' is a directory" - "$BIN/clr" "$T/a.h5" "$T/masks"
check "an output that is not an input is still written (clr a b)" "$BIN/clr" "$T/a.h5" "$T/b.h5"

# ---- leftovers: a rejected stdin leaves no copy in TMPDIR; stdout images neither ----
mkdir -p "$T/tmp"
head -c 100000 /dev/urandom >"$T/junk.bin"
printf 'NUMPYjunk' | cat - "$T/junk.bin" >"$T/junk2.bin"
"$PYTHON" -c "import struct, sys; open(sys.argv[1], 'wb').write(struct.pack('<Q', 20) + b'{\"a\": 1}' + b' ' * 11 + b'x' * 4096)" \
    "$T/st.bin"
for f in junk.bin junk2.bin st.bin; do
    expect_error "import - OUT: rejected stdin ($f) → exit 1" 1 "^import: \(stdin\): " "$T/o.h5" \
        env TMPDIR="$T/tmp" "$BIN/import" - "$T/o.h5" <"$T/$f"
    check "import - OUT: rejected stdin ($f) leaves nothing in TMPDIR" test -z "$(ls -A "$T/tmp")"
done
"$PYTHON" tests/ref/make_bad_inputs.py "$T/bad" >/dev/null 2>&1 || fail "make_bad_inputs.py"
expect_error "decompose: bad input, output to stdout → exit 1" 1 "^decompose: " - \
    env TMPDIR="$T/tmp" "$BIN/decompose" "$T/bad/nan.h5" -
check "decompose: no stdout image left in TMPDIR" test -z "$(ls -A "$T/tmp")"

# ---- names with ':' are not cut; stdout errors name stdout ----
cp "$T/st.bin" "$T/s:t.safetensors"
expect_error "import: a file name with ':' is named whole, the reason follows" 1 \
    "^import: $T/s:t.safetensors: header is not a JSON object" "$T/o.h5" "$BIN/import" "$T/s:t.safetensors" "$T/o.h5"
expect_error "synth - >/dev/full names stdout and the write error" 1 "^synth: \(stdout\): write error: No space left" - \
    bash -c '"$1" -S 2 -L 1 -H 2 -T 8 - >/dev/full' _ "$BIN/synth"
expect_error "theory band >/dev/full: a TSV table to a full stdout is an error" 1 \
    "^theory: \(stdout\): write error" - bash -c '"$1" band --steps 3 >/dev/full' _ "$BIN/theory"

# ---- provenance lines: one style ----
"$BIN/decompose" "$T/a.h5" "$T/dec.h5" --tsv "$T/dec.tsv"
"$BIN/theory" band --steps 3 -o "$T/band.tsv"
"$BIN/distance" "$T/a.h5" "$T/d2.h5" --tsv "$T/dist.tsv"
"$BIN/frames" "$T/a.h5" --heads "$T/fr.tsv" >/dev/null
for f in dec band dist fr; do
    check "$f.tsv: first line '# provenance: {json}'" "$PYTHON" -c "
import json, sys
l = open(sys.argv[1]).readline()
sys.exit(not (l.startswith('# provenance: {') and json.loads(l[len('# provenance: '):])['program']))" "$T/$f.tsv"
done
check "decompose --tsv: '# model: NAME' line" grep -q '^# model: synth$' "$T/dec.tsv"

# ---- progress: a unit, and --progress / --no-progress ----
"$BIN/theory" band --steps 3 --progress -o "$T/b.tsv" 2>"$T/prog.err"
check "theory --progress: a bar on a non-terminal stderr, rate in steps/s" grep -q 'steps/s ETA' "$T/prog.err"
"$BIN/synth" -S 2 -L 1 -H 2 -T 8 --progress "$T/p.h5" 2>"$T/prog.err"
check "synth --progress: rate in blocks/s" grep -q 'blocks/s ETA' "$T/prog.err"
"$BIN/decompose" --progress --no-progress "$T/a.h5" "$T/p2.h5" 2>"$T/prog.err"
check "decompose --progress --no-progress: the last one wins, nothing on stderr" test ! -s "$T/prog.err"
for p in clr collapse decompose distance extract frames import sample synth theory train; do
    check "$p --help offers --progress and --no-progress" bash -c '"$1" --help | grep -q -- "--progress.*--no-progress"' _ "$BIN/$p"
done

# ---- help texts ----
check "extract --help: every option on its own line" bash -c '! "$1" --help | grep -q "(1) .*--logits"' _ "$BIN/extract"
for p in $PROGS; do
    check "$p --help: no OpenBLAS (none is linked)" bash -c '! "$1" $2 --help | grep -qi openblas' _ "$BIN/$p" "$(sub $p)"
done

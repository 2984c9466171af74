# Shared helpers for tests/t-*.sh: TAP output and a scratch directory removed on exit.
set -u
BIN=${BIN:-bin}; BUILD=${BUILD:-build}; PYTHON=${PYTHON:-/usr/bin/python3}
# Data: EMBED is the copy the repository carries (pipelines/data); DATA_DIR the optional files
# (Llama-3 tokenizer, aidreams260K), same layout, default where `make fetch` puts them.
EMBED=pipelines/data
DATA_DIR=${DATA_DIR:-$HOME/.cache/attncoda/data}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
ok()   { echo "ok - $*"; }
fail() { echo "not ok - $*"; }
# skip NAME FILE: a test that needs an optional file that is absent (counted as skipped by tests/run)
skip() { echo "ok - $1 # SKIP needs $2"; }
# with_file FILE TEST NAME ARGS...: run TEST NAME ARGS... (check, expect_error, ...) when FILE
# exists, else report NAME as skipped
with_file() { local f=$1; shift; if [ -e "$f" ]; then "$@"; else skip "$2" "$f"; fi; }
# check NAME CMD...: pass when CMD exits 0
check() { local n=$1; shift; if "$@"; then ok "$n"; else fail "$n"; fi; }
# expect_error NAME STATUS PATTERN OUTFILE CMD...: CMD must exit STATUS, print one stderr line
# matching PATTERN, and leave OUTFILE absent (no partial output)
expect_error() {
    local n=$1 st=$2 pat=$3 out=$4; shift 4
    "$@" >"$T/.out" 2>"$T/.err"; local rc=$?
    local lines; lines=$(wc -l <"$T/.err")
    if [ "$rc" -eq "$st" ] && [ "$lines" -eq 1 ] && grep -qE "$pat" "$T/.err" && { [ "$out" = - ] || [ ! -e "$out" ]; }; then
        ok "$n"
    else
        fail "$n (status $rc, want $st; stderr: $(head -c 300 "$T/.err"))"
    fi
}
# compare_ids NAME TOKENIZER LIVE: tokenize every $TEXTS file of $G with TOKENIZER and compare
# with the live reference ids in $T/ref/NAME (LIVE = 1) or with the checksums recorded in $SUMS
compare_ids() {
    local name=$1 ourtk=$2 live=$3 x label sum
    mkdir -p "$T/our"
    for x in $TEXTS; do
        label="$name.$x via $(basename "$ourtk")"
        if ! "$BIN/tokenize" --no-header -t "$ourtk" "$G/$x.txt" >"$T/our/$x.ids"; then
            fail "$label: tokenize failed"; continue
        fi
        if [ $live = 1 ]; then
            if cmp -s "$T/our/$x.ids" "$T/ref/$name/$x.ids"; then
                ok "$label: $(wc -w <"$T/our/$x.ids") ids equal the reference"
            else
                fail "$label: first differing line $(cmp "$T/our/$x.ids" "$T/ref/$name/$x.ids" | sed 's/.*line //')"
            fi
        else
            sum=$(sha256sum <"$T/our/$x.ids" | cut -c1-64)
            if grep -q "^$sum  $name.$x\$" "$SUMS"; then ok "$label: ids match the recorded reference checksum"
            else fail "$label: ids differ from the recorded reference checksum"; fi
        fi
    done
}

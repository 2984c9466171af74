# Shared helpers for tests/t-*.sh: TAP output and a scratch directory removed on exit.
set -u
BIN=${BIN:-bin}; BUILD=${BUILD:-build}; PYTHON=${PYTHON:-/usr/bin/python3}
SHARED=${SHARED:-../shared}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
ok()   { echo "ok - $*"; }
fail() { echo "not ok - $*"; }
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

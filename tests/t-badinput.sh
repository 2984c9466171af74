# Bad input and bad usage of the foundation programs (clr, decompose): every defect of
# tests/badinput.sh is exit 1 with one stderr line naming the file (or "(stdin)"), and no output;
# usage errors are exit 2 with one line.
source tests/lib.sh
source tests/badinput.sh
make_bad_inputs "$T/bad" || exit 0

have() { if [ -x "$BIN/$1" ]; then return 0; fi; ok "$1 # SKIP $BIN/$1 not built"; return 1; }

for prog in clr decompose; do
    have "$prog" || continue
    bad_inputs_for "$prog" "$BIN/$prog"

    # the same files through a pipe: the error names (stdin)
    for b in $BAD_INPUTS; do
        out="$T/stdin-$prog-$b.out"
        expect_error "$prog: $b from a pipe → exit 1, one line naming (stdin), no output" 1 \
            "^$prog: \(stdin\): " "$out" \
            bash -c 'cat "$1" | "$2" - "$3"' _ "$T/bad/$b.h5" "$BIN/$prog" "$out"
        check_reason "$prog: $b from a pipe" "$b"
    done

    # usage errors: exit 2, one line, no output
    out="$T/usage-$prog.out"
    expect_error "$prog: unknown option → exit 2" 2 "^$prog: " "$out" \
        "$BIN/$prog" --no-such-option "$T/bad/valid.h5" "$out"
    expect_error "$prog: missing output argument → exit 2" 2 "^$prog: " "$out" \
        "$BIN/$prog" "$T/bad/valid.h5"
    expect_error "$prog: no arguments → exit 2" 2 "^$prog: " "$out" "$BIN/$prog"
    expect_error "$prog: too many arguments → exit 2" 2 "^$prog: " "$out" \
        "$BIN/$prog" "$T/bad/valid.h5" "$out" "$out.extra"
    expect_error "$prog: option missing its value → exit 2" 2 "^$prog: " "$out" \
        "$BIN/$prog" "$T/bad/valid.h5" "$out" --sink
    expect_error "$prog: non-numeric --sink → exit 2" 2 "^$prog: " "$out" \
        "$BIN/$prog" --sink abc "$T/bad/valid.h5" "$out"
    expect_error "$prog: missing input file → exit 1 naming it" 1 "^$prog: $T/bad/nope\.h5: " "$out" \
        "$BIN/$prog" "$T/bad/nope.h5" "$out"
done

# the probability control must be accepted too (its defects are negative_prob and bad_sum_prob)
if have decompose; then
    check "decompose: accepts the probability control file" \
        "$BIN/decompose" "$T/bad/valid_prob.h5" "$T/vp.h5"
fi

# Golden tests of synth | clr | decompose: pipes and files give the same numbers, the numbers
# equal an independent numpy computation from the attention dataset (tests/ref/check_decompose.py,
# 1e-9), the per-head TSV equals tests/golden/decompose-heads.tsv (provenance comment lines
# ignored), and outputs are byte-identical for the same seed and differ for another seed.
source tests/lib.sh
for p in synth clr decompose; do
    if [ ! -x "$BIN/$p" ]; then ok "golden tests # SKIP $BIN/$p not built"; exit 0; fi
done
CHECK=("$PYTHON" tests/ref/check_decompose.py)
GOLD=tests/golden/decompose-heads.tsv
SYN=(-S 2 -L 1 -H 2 -T 8)

# pipeline through pipes; every stage must succeed
pipeline() {   # SEED OUT TSV
    "$BIN/synth" "${SYN[@]}" --seed "$1" - | "$BIN/clr" - - | "$BIN/decompose" - "$2" --tsv "$3"
    local st=("${PIPESTATUS[@]}")
    [ "${st[*]}" = "0 0 0" ] || { echo "# pipeline statuses: ${st[*]}" >&2; return 1; }
}
check "synth | clr | decompose through pipes succeeds" pipeline 3 "$T/out.h5" "$T/heads.tsv"

# the same through files
check "synth, clr, decompose through files succeed" bash -c \
    '"$1/synth" "${@:3}" --seed 3 "$2/s.h5" && "$1/clr" "$2/s.h5" "$2/c.h5" &&
     "$1/decompose" "$2/c.h5" "$2/out-files.h5" --tsv "$2/heads-files.tsv"' _ "$BIN" "$T" "${SYN[@]}"

# pipes and files: same datasets (provenance names differ: "(stdin)" vs paths)
same_datasets() {
    "$PYTHON" - "$1" "$2" <<'EOF'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
na, nb = [], []
a.visititems(lambda n, o: na.append(n) if isinstance(o, h5py.Dataset) else None)
b.visititems(lambda n, o: nb.append(n) if isinstance(o, h5py.Dataset) else None)
ok = sorted(na) == sorted(nb) and all(np.array_equal(a[n][...], b[n][...], equal_nan=True) for n in na)
sys.exit(0 if ok and na else 1)
EOF
}
check "pipes and files give identical datasets" same_datasets "$T/out.h5" "$T/out-files.h5"
check "pipes and files give the same per-head TSV" \
    cmp <(grep -v '^#' "$T/heads.tsv") <(grep -v '^#' "$T/heads-files.tsv")

# the numbers against numpy (from the attention dataset clr copied; clr's own datasets too)
"${CHECK[@]}" "$T/c.h5" "$T/out.h5" --clr "$T/c.h5" --label "seed 3"

# the golden per-head table
if cmp -s <(grep -v '^#' "$T/heads.tsv") <(grep -v '^#' "$GOLD"); then
    ok "per-head TSV equals $GOLD"
else
    fail "per-head TSV differs from $GOLD: $(diff <(grep -v '^#' "$GOLD") <(grep -v '^#' "$T/heads.tsv") | head -5 | tr '\n' ' ')"
fi
check "TSV records the provenance and the model" \
    grep -q '^# provenance: {.*"program":"decompose"' "$T/heads.tsv"

# determinism: same seed → byte-identical files; another seed → different ones. The pause makes
# any wall-clock time stored in a file (e.g. HDF5 object-header timestamps) show as a difference.
sleep 1.1
check "same seed: whole pipeline output (h5 and TSV) byte-identical" \
    bash -c 'pipeline() { "$1/synth" "${@:4}" --seed 3 - | "$1/clr" - - | "$1/decompose" - "$2" --tsv "$3"; }
             pipeline "$0" "$1/again.h5" "$1/again.tsv" "${@:2}" && cmp "$1/out.h5" "$1/again.h5" &&
             cmp "$1/heads.tsv" "$1/again.tsv"' "$BIN" "$T" "${SYN[@]}"
# (clr and decompose record their input's name, so they rerun on the same input file)
check "same seed: synth file byte-identical" bash -c \
    '"$0/synth" "${@:2}" --seed 3 "$1/s2.h5" && cmp "$1/s.h5" "$1/s2.h5"' "$BIN" "$T" "${SYN[@]}"
check "same input: clr file byte-identical" bash -c \
    '"$0/clr" "$1/s.h5" "$1/c2.h5" && cmp "$1/c.h5" "$1/c2.h5"' "$BIN" "$T"
check "same input: decompose file byte-identical" bash -c \
    '"$0/decompose" "$1/c.h5" "$1/out-files2.h5" && cmp "$1/out-files.h5" "$1/out-files2.h5"' "$BIN" "$T"
check "synth to stdout equals synth to a file" bash -c \
    '"$0/synth" "${@:2}" --seed 3 - > "$1/s-stdout.h5" && cmp "$1/s.h5" "$1/s-stdout.h5"' "$BIN" "$T" "${SYN[@]}"
pipeline 4 "$T/out4.h5" "$T/heads4.tsv"
check "another seed: different decompose output" bash -c '! cmp -s "$0" "$1"' "$T/out.h5" "$T/out4.h5"
check "another seed: different per-head numbers" bash -c \
    '! cmp -s <(grep -v "^#" "$0") <(grep -v "^#" "$1")' "$T/heads.tsv" "$T/heads4.tsv"

# options and other inputs, each against numpy (check_decompose.py prints its own TAP lines)
if check "decompose and clr with --sink 2 --min-query 3 --exclude-sink-query" bash -c \
    '"$0/decompose" --sink 2 --min-query 3 --exclude-sink-query "$1/s.h5" "$1/o-sink2.h5" &&
     "$0/clr" --sink 2 "$1/s.h5" "$1/c-sink2.h5"' "$BIN" "$T"; then
    "${CHECK[@]}" "$T/s.h5" "$T/o-sink2.h5" --clr "$T/c-sink2.h5" --sink 2 --min-query 3 \
        --exclude-sink-query --label "sink 2, min-query 3, exclude-sink-query"
fi
if check "decompose of probability input (zeros), delta 1e-9 and 1e-6" bash -c \
    '"$0/synth" -S 2 -L 2 -H 3 -T 9 --seed 5 --prob --alpha 0.05 "$1/p.h5" &&
     "$0/decompose" "$1/p.h5" "$1/o-prob.h5" &&
     "$0/decompose" --zero-delta 1e-6 "$1/p.h5" "$1/o-prob6.h5"' "$BIN" "$T"; then
    "${CHECK[@]}" "$T/p.h5" "$T/o-prob.h5" --label "probability input"
    "${CHECK[@]}" "$T/p.h5" "$T/o-prob6.h5" --zero-delta 1e-6 --label "zero-delta 1e-6"
    check "probability input: zeros were present and replaced" "$PYTHON" -c \
        'import h5py,sys; sys.exit(0 if h5py.File(sys.argv[1],"r").attrs["zero_replaced"] > 0 else 1)' \
        "$T/o-prob.h5"
fi
if check "clr and decompose of a bidirectional file with padding" bash -c \
    '"$0/synth" -S 3 -L 1 -H 2 -T 7 --seed 6 --bidirectional --pad 2 "$1/b.h5" &&
     "$0/clr" "$1/b.h5" "$1/bc.h5" &&
     "$0/decompose" --exclude-sink-query "$1/bc.h5" "$1/o-bidir.h5"' "$BIN" "$T"; then
    "${CHECK[@]}" "$T/bc.h5" "$T/o-bidir.h5" --clr "$T/bc.h5" --exclude-sink-query \
        --label "bidirectional with padding"
fi
true

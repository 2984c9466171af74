#!/bin/bash
# import: inputs whose headers, sizes or storage lie (issue 39) and the guidance a user gets
# (issue 43 item 6). Every size a file declares is checked against what the file holds before
# anything is allocated: .npz members against the archive and deflate's ratio, HDF5 datasets
# against the chunks and bytes actually stored. Bad input is one line naming the file, exit 1,
# no output; the files come from tests/ref/make_bad_arrays.py (a few kB each).
source tests/lib.sh
B=$T/b
"$PYTHON" tests/ref/make_bad_arrays.py "$B" || { fail "make_bad_arrays.py"; exit 1; }
IMP=$BIN/import; O=$T/out.h5
# A virtual-memory cap makes an allocation sized by a lie fail loudly ("out of memory", no file
# named). Sanitizer builds reserve terabytes of shadow memory and cannot run under one.
LIM=
if bash -c 'ulimit -v 1000000; "$1" --version; exit $?' _ "$IMP" >/dev/null 2>&1; then LIM="ulimit -v 1000000;"; fi
# bad NAME PATTERN ARGS...: import ARGS... $O under the cap and a 20 s timeout → exit 1, one line
bad() {
    local n=$1 pat=$2; shift 2
    expect_error "$n" 1 "$pat" "$O" bash -c "$LIM"' exec timeout 20 "$@"' _ "$IMP" "$@" "$O"
}

# ---- 39.1: .npy header-length field 0 or 1 inside an .npz (ASan: heap overflow before) ----
for f in npz_hl0 npz_hl1 npz_v2_hl0; do
    bad "npz member with header length ${f##*hl} ($f)" "^import: $B/$f.npz: array 'layer_0': .npy header lacks descr" "$B/$f.npz"
done
check "control: a valid .npz member is read" "$IMP" "$B/good.npz" "$T/good.h5"

# ---- 39.2 / 39.3: declared sizes against what the file holds, before allocating ----
bad "npz: zip directory claims 2 GiB from 79 deflated bytes" \
    "npz_2gib_deflate.npz: array 'a': the zip directory claims 2147483776 uncompressed bytes from 79 deflated ones, more than deflate's 1032x" \
    "$B/npz_2gib_deflate.npz"
bad "npz: stored member claiming 2 GiB in a 300-byte archive" "npz_2gib_stored.npz: not a readable .npz" "$B/npz_2gib_stored.npz"
bad "npz: bzip2 member (not numpy's)" "npz_bzip2.npz: array 'layer_0': zip compression method 12 is not stored or deflate" "$B/npz_bzip2.npz"
bad "HDF5: 236 GB chunked dataset with no chunk written (hung before)" \
    "h5_sparse.h5: array '/a': 0 of 14400000 chunks are stored, the rest is fill value never written \\(235929600000 bytes declared, 0 stored\\)" \
    "$B/h5_sparse.h5:/a"
bad "HDF5: 1 of 4 chunks written" "h5_partial.h5: array '/a': 1 of 4 chunks are stored" "$B/h5_partial.h5:/a"
bad "HDF5: a 1 MiB gzip chunk stored in 10 bytes" \
    "h5_bomb.h5: array '/a': 1048576 bytes declared from 10 stored, more than its filters can expand \\(1032x\\)" "$B/h5_bomb.h5:/a"
bad "HDF5: contiguous storage never allocated" "h5_unalloc.h5: array '/a': 0 of the 256 bytes declared are stored" "$B/h5_unalloc.h5:/a"
bad "HDF5: 1 GiB external storage in /dev/zero" "h5_external.h5: array '/a': its data are outside the file \\(external storage\\)" "$B/h5_external.h5:/a"
check "control: a gzip-chunked HDF5 dataset is read" "$IMP" "$B/h5_good.h5:/a" "$T/h5good.h5"

# ---- 39.4: files no reader would accept; fortran_order other than True/False ----
bad "npz: fortran_order: Maybe" "npz_maybe.npz: array 'layer_0': fortran_order is 'Maybe', not True or False" "$B/npz_maybe.npz"
printf '1 1 1 1\n' >"$T/v1.txt"; printf '0 0 0 0\n' >"$T/v0.txt"
bad "--valid: a sequence with no valid token" "^import: $T/v0.txt: sequence 0 has no valid token \\(all 4 values are 0\\)$" \
    --valid "$T/v0.txt" "$B/good.npz"
check "control: --valid with a valid token" "$IMP" --valid "$T/v1.txt" "$B/good.npz" "$T/v1.h5"

# ---- 39.7: the documented stdin form -:/PATH; an unavailable filter named ----
check "stdin: -:/a (no --) reads the dataset" bash -c '"$1" -:/a "$2" <"$3" 2>/dev/null && [ -s "$2" ]' _ \
    "$IMP" "$T/stdin.h5" "$B/h5_good.h5"
check "stdin: -:/a equals FILE:/a" $PYTHON -c "
import h5py, numpy as np, sys
assert np.array_equal(h5py.File(sys.argv[1], 'r')['attention'][:], h5py.File(sys.argv[2], 'r')['attention'][:])" \
    "$T/stdin.h5" "$T/h5good.h5"
check "stdin: --text -:x keeps its value" bash -c '"$1" --text -:x -:/a - <"$2" 2>/dev/null >"$3" &&
    "$4" -c "import h5py, sys; assert h5py.File(sys.argv[1], \"r\").attrs[\"text\"] == \"-:x\"" "$3"' _ \
    "$IMP" "$B/h5_good.h5" "$T/text.h5" "$PYTHON"
bad "HDF5: LZF-compressed dataset" "h5_lzf.h5: array '/a': unsupported filter lzf \\(HDF5 filter id 32000\\)" "$B/h5_lzf.h5:/a"

# ---- 43.6: guidance ----
bad "torch.save zip (.pt)" "torch_zip.pt: a PyTorch torch.save file \\(pickle\\), not arrays; save attention with numpy.save" "$B/torch_zip.pt"
check "control: safetensors whose header length (640) begins 80 02, as a pickle does" "$IMP" "$B/st640.safetensors" "$T/st640.h5"
bad "torch.save legacy pickle (.pt)" "torch_legacy.pt: a PyTorch torch.save file \\(pickle\\)" "$B/torch_legacy.pt"
bad "log-probabilities without --log (-Inf)" "array 'logp': -Inf at key 1 in row \\(sequence 0, layer 0, head 0, query 0\\); log-probabilities\\? use --log$" "$B/logp.npy"
bad "log-probabilities without --log (no -Inf)" "array 'logp_bidir': negative probability -1.60944 at key 0 .*; log-probabilities\\? use --log$" "$B/logp_bidir.npy"
bad "raw scores: a softmax is missing" "array 'scores': negative probability -0.869712 at key 3 .*; raw scores\\? apply a softmax first$" "$B/scores.npy"
check "--log reads the log-probabilities" "$IMP" --log "$B/logp.npy" "$T/logp.h5"

# the layout read is one line on stderr, stdout stays the output; --layout picks the rank-4 reading
"$IMP" "$B/lhtt.npy" - 2>"$T/lay.err" >"$T/lhtt.h5"
check "layout: one stderr line for the rank-4 default" grep -qx \
    'import: \[L,H,T,T\] read as 1 sequence × 2 layers × 3 heads, T = 4 (--layout SHTT: \[S,H,T,T\])' "$T/lay.err"
"$IMP" --layout SHTT "$B/lhtt.npy" "$T/shtt.h5" 2>"$T/lay2.err"
check "layout: --layout SHTT line" grep -qx 'import: per-layer \[S,H,T,T\] read as 2 sequences × 1 layer × 3 heads, T = 4' "$T/lay2.err"
check "layout: LHTT and SHTT files hold the same blocks, shaped [1,2,..] and [2,1,..]" $PYTHON -c "
import h5py, numpy as np, sys
a, b = (h5py.File(f, 'r') for f in sys.argv[1:])
x, y = a['attention'][:], b['attention'][:]
assert x.shape == (1, 2, 3, 4, 4) and y.shape == (2, 1, 3, 4, 4) and np.array_equal(x[0], y[:, 0])
assert (a.attrs['sequences'], a.attrs['layers'], b.attrs['sequences'], b.attrs['layers']) == (1, 2, 2, 1)" "$T/lhtt.h5" "$T/shtt.h5"
check "layout: --per-layer is --layout SHTT" bash -c '"$1" --per-layer "$2" "$3" 2>/dev/null && cmp -s "$3" "$4"' _ \
    "$IMP" "$B/lhtt.npy" "$T/pl.h5" "$T/shtt.h5"
bad "layout: --layout SLHTT on a rank-4 array" "lhtt.npy: array 'lhtt': shape \\[2,3,4,4\\] does not fit: --layout SLHTT needs rank 5" --layout SLHTT "$B/lhtt.npy"
expect_error "layout: unknown --layout" 2 "^import: --layout 'LHT': expected SLHTT, LHTT, SHTT or HTT$" "$O" "$IMP" --layout LHT "$B/lhtt.npy" "$O"
expect_error "layout: --per-layer with --layout LHTT" 2 "^import: --layout LHTT conflicts with the layout given before \\(SHTT\\)$" "$O" \
    "$IMP" --per-layer --layout LHTT "$B/lhtt.npy" "$O"
expect_error "layout: --layout LHTT with two arrays" 2 "^import: --layout LHTT reads one array; 2 were given$" "$O" \
    "$IMP" --layout LHTT "$B/lhtt.npy" "$B/lhtt.npy" "$O"
"$IMP" --layout HTT "$B/good.npz" "$B/good.npz" "$T/htt.h5" 2>"$T/lay3.err"
check "layout: --layout HTT on a list of two [H,T,T] arrays" grep -qx 'import: per-layer \[H,T,T\] read as 1 sequence × 2 layers × 2 heads, T = 4' "$T/lay3.err"
bad "layout: --layout SHTT on [H,T,T] arrays" "good.npz: array 'layer_0': shape \\[2,4,4\\] does not fit: --layout SHTT needs rank 4" --layout SHTT "$B/good.npz" "$B/good.npz"

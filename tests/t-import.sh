#!/bin/bash
# import: attention maps saved by other tools (tests/ref/hf_attentions.py makes them the way
# Hugging Face output_attentions=True + numpy/safetensors/h5py would) become standard attention
# files whose log-probabilities equal ln C(p) of the source to float32 precision, for every
# layout and dtype; a tiny model's PyTorch attention imported and run through decompose,
# distance and reversal equals extract on the same checkpoint; every bad input is one line,
# exit 1 and no output.
source tests/lib.sh
REF="$PYTHON tests/ref/hf_attentions.py"
R=$T/r
$REF random "$R" || { fail "hf_attentions.py random"; exit 1; }

# Every layout and dtype: stored logp = ln C(p) with zero replacement, zero count recorded.
while IFS=$'\t' read -r name spec; do
    v=()
    case $name in bidir_seq0) ;; bidir*) v=(--valid "$R/valid.txt") ;; esac
    inputs=()
    for x in $spec; do inputs+=("$R/$x"); done
    if "$BIN/import" "${v[@]}" "${inputs[@]}" "$T/$name.h5" 2>"$T/err"; then
        $REF check "$T/$name.h5" "$R/$name.ref.npy" --tag "$name"
    else
        fail "$name: import failed: $(head -c 300 "$T/err")"
    fi
done <"$R/variants.tsv"

# The choice of causal/bidirectional: inferred from the upper triangle and recorded.
"$BIN/import" --causal "$R/causal_f32.npy" "$T/given.h5"
$PYTHON - "$T" <<'EOF'
import sys, json, h5py
T = sys.argv[1]
def info(n):
    f = h5py.File(f"{T}/{n}.h5", "r")
    return int(f.attrs["causal"]), int(f.attrs["causal_inferred"]), json.loads(f.attrs["provenance"])["options"]["causal_from"]
ok = info("causal_f32") == (1, 1, "inferred from the upper triangle")
ok &= info("bidir_f32") == (0, 1, "inferred from the upper triangle") and info("given") == (1, 0, "--causal")
f = h5py.File(f"{T}/bidir_f32.h5", "r")
ok &= f["valid"][2].tolist() == [1] * 4 + [0] * 5 and f.attrs["values"] in ("logprob", b"logprob")
print(("ok" if ok else "not ok") + " - causal inferred from the upper triangle (or given) and recorded; valid stored")
EOF

# --log input (zeros are -inf), stdin, --tokens and byte-identical reruns.
$PYTHON -c "
import numpy as np, sys
p = np.load(sys.argv[1])
with np.errstate(divide='ignore'):
    np.save(sys.argv[2], np.log(p))" "$R/causal_f32.npy" "$T/logp.npy"
"$BIN/import" --log "$T/logp.npy" "$T/log.h5" && $REF check "$T/log.h5" "$T/logp.npy" --log --tag "--log input"
"$BIN/import" --zero-delta 1e-6 "$R/causal_f32.npy" "$T/d6.h5" &&
    $REF check "$T/d6.h5" "$R/causal_f32.ref.npy" --delta 1e-6 --tag "--zero-delta 1e-6"
printf '1 2 3 4 5 6 7 8 9\n9 8 7 6 5 4 3 2 1\n0 0 0 0 0 0 0 0 0\n' >"$T/tok.txt"
"$BIN/import" --tokens "$T/tok.txt" --model-name my/model "$R/causal_f32.npy" "$T/a1.h5"
"$BIN/import" --tokens "$T/tok.txt" --model-name my/model "$R/causal_f32.npy" "$T/a2.h5"
check "same inputs and options give a byte-identical file" cmp -s "$T/a1.h5" "$T/a2.h5"
"$BIN/import" - "$T/stdin.h5" <"$R/causal_layers.npz"
"$BIN/import" -:/attn - <"$R/causal.h5" >"$T/stdout.h5"
$PYTHON - "$T" <<'EOF'
import sys, h5py, numpy as np
T = sys.argv[1]
a = h5py.File(f"{T}/a1.h5", "r")
ok = a["tokens"][1].tolist() == list(range(9, 0, -1)) and a.attrs["model"] in ("my/model", b"my/model")
ref = a["attention"][:]
ok &= all(np.array_equal(h5py.File(f"{T}/{n}.h5", "r")["attention"][:], ref) for n in ("stdin", "stdout"))
print(("ok" if ok else "not ok") + " - --tokens and --model-name stored; stdin (.npz, HDF5 -:/attn) and stdout")
EOF

# Worked example (docs/IMPORT.md): a tiny random GPT-2, its attention by PyTorch as
# output_attentions gives it, imported from .npy and safetensors, through decompose, distance
# and reversal, equals extract on the same checkpoint.
$PYTHON tests/ref/make_tiny.py gpt2 "$T/ck"
$PYTHON -c "
import random; r = random.Random(7)
for _ in range(3): print(' '.join(str(r.randrange(101)) for _ in range(40)))" >"$T/ids.txt"
"$BIN/extract" --model "$T/ck" --ids "$T/ids.txt" "$T/ext.h5"
$REF model "$T/ck" "$T/ids.txt" "$T/m"
"$BIN/import" --tokens "$T/ids.txt" "$T/m/attn.npy" - | "$BIN/decompose" - "$T/npy.dec.h5"
"$BIN/import" --tokens "$T/ids.txt" "$T/m/attn.safetensors" "$T/st.h5"
"$BIN/import" --tokens "$T/ids.txt" "$T/m/attn.npz" "$T/npz.h5"
"$BIN/import" --tokens "$T/ids.txt" "$T/m/attn.h5:/attentions" "$T/h5.h5"
check "model: .npz (per layer) and HDF5 imports equal the safetensors one" $PYTHON -c "
import h5py, numpy as np, sys
a = [h5py.File(f, 'r')['attention'][:] for f in sys.argv[1:]]
assert np.array_equal(a[0], a[1]) and np.array_equal(a[0], a[2])" "$T/st.h5" "$T/npz.h5" "$T/h5.h5"
for x in ext st; do
    "$BIN/decompose" "$T/$x.h5" "$T/$x.dec.h5"
    "$BIN/distance" "$T/$x.h5" - >"$T/$x.dist.h5" 2>/dev/null
    "$BIN/reversal" "$T/$x.dist.h5" | grep -v '^#' >"$T/$x.rev.tsv"
done
$PYTHON - "$T" <<'EOF'
import sys, h5py, numpy as np
T = sys.argv[1]
e, s = h5py.File(f"{T}/ext.h5", "r"), h5py.File(f"{T}/st.h5", "r")
a, b = e["attention"][:].astype(float), s["attention"][:].astype(float)
ok = np.array_equal(np.isfinite(a), np.isfinite(b)) and np.array_equal(e["tokens"][:], s["tokens"][:])
dp = float(np.abs(np.exp(a) - np.exp(b)).max())
print(("ok" if ok and dp <= 1e-5 else "not ok") + f" - model: imported probabilities equal extract's within 1e-5 (max {dp:.1e})")
worst = 0.0
for name in ("npy", "st"):
    d1, d2 = h5py.File(f"{T}/ext.dec.h5", "r"), h5py.File(f"{T}/{name}.dec.h5", "r")
    for k in d1["head"]:
        x, y = d1["head"][k][:].astype(float), d2["head"][k][:].astype(float)
        worst = max(worst, float(np.abs(x - y).max() / max(np.abs(x).max(), 1e-300)))
print(("ok" if worst <= 1e-6 else "not ok") + f" - model: decompose per-head values equal extract's to float32 precision (max rel {worst:.1e})")
d1, d2 = h5py.File(f"{T}/ext.dist.h5", "r"), h5py.File(f"{T}/st.dist.h5", "r")
worst = max(float(np.abs(d1["distance"][k][:] - d2["distance"][k][:]).max() / np.abs(d1["distance"][k][:]).max())
            for k in d1["distance"])
print(("ok" if worst <= 1e-6 else "not ok") + f" - model: every distance matrix equals extract's to float32 precision (max rel {worst:.1e})")
EOF
check "model: reversal table identical to extract's" cmp -s "$T/ext.rev.tsv" "$T/st.rev.tsv"

# ---- bad input: one line naming file, array and the first bad (s,l,h,t); exit 1; no output ----
B=$T/bad; mkdir -p "$B"
$PYTHON - "$R" "$B" <<'EOF'
import sys, struct, numpy as np, h5py
R, B = sys.argv[1:]
p = np.load(f"{R}/causal_f32.npy")          # [3,2,4,9,9] causal
q = np.load(f"{R}/bidir_f32.npy")
def bad(name, fn, src=p):
    a = src.copy(); fn(a); np.save(f"{B}/{name}.npy", a)
bad("nan", lambda a: a.__setitem__((1, 0, 2, 5, 3), np.nan))
bad("inf", lambda a: a.__setitem__((2, 1, 0, 4, 1), np.inf))
bad("neg", lambda a: a.__setitem__((0, 1, 3, 6, 2), -0.01))
bad("sum", lambda a: a.__setitem__((1, 1, 1, 7, 0), a[1, 1, 1, 7, 0] + 2e-3))
bad("above", lambda a: a.__setitem__((0, 0, 1, 3, 8), 1e-3))
np.save(f"{B}/notsquare.npy", np.ones((3, 2, 4, 9, 8), np.float32) / 8)
np.save(f"{B}/rank2.npy", np.ones((9, 9), np.float32) / 9)
np.save(f"{B}/empty.npy", np.ones((0, 2, 4, 9, 9), np.float32))
np.save(f"{B}/int.npy", np.ones((2, 4, 9, 9), np.int32))
np.save(f"{B}/layer0.npy", p[:, 0]); np.save(f"{B}/layer1short.npy", p[:2, 1])
# float16: a row 5e-3 off 1 passes its 1e-2 tolerance; 2e-2 off does not
h = p.astype(np.float16); h[0, 0, 0, 8, 0] += np.float16(5e-3); np.save(f"{B}/f16ok.npy", h)
h[0, 0, 0, 8, 0] += np.float16(2e-2); np.save(f"{B}/f16bad.npy", h)
# the first bad row in (s,l,h,t) order is reported, whatever the file order (layer 0 first here)
a = p.copy(); a[2, 0, 0, 4, 0] = -1; a[1, 1, 3, 2, 0] = np.nan
np.savez(f"{B}/first.npz", layer_0=a[:, 0], layer_1=a[:, 1])
np.save(f"{B}/logpos.npy", np.where(p > 0, np.log(np.maximum(p, 1e-30)), -np.inf) + 0.01)
np.save(f"{B}/logshift.npy", np.where(p > 0, np.log(np.maximum(p, 1e-30)), -np.inf) - 0.02)
raw = open(f"{R}/causal_f32.npy", "rb").read()
open(f"{B}/trunc.npy", "wb").write(raw[:len(raw) // 2])
z = open(f"{R}/causal_layers.npz", "rb").read()
open(f"{B}/trunc.npz", "wb").write(z[:len(z) // 2])
s = open(f"{R}/causal_f32.safetensors", "rb").read()
open(f"{B}/trunc.safetensors", "wb").write(s[:len(s) - 100])
open(f"{B}/junk.bin", "wb").write(b"this is not an array file at all")
with h5py.File(f"{B}/int.h5", "w") as f:
    f["a"] = np.ones((2, 4, 9, 9), np.int32)
open(f"{B}/left_valid.txt", "w").write("1 1 1 1 1 1 1 1 1\n0 0 1 1 1 1 1 1 1\n1 1 1 1 1 1 1 1 1\n")
open(f"{B}/valid2.txt", "w").write("1 1 1 1 1 1 1 1 1\n1 1 1 1 1 1 1 1 2\n1 1 1 1 1 1 1 1 1\n")
open(f"{B}/tok_short.txt", "w").write("1 2 3 4 5 6 7 8 9\n1 2 3 4 5 6 7 8\n1 2 3 4 5 6 7 8 9\n")
open(f"{B}/tok_lines.txt", "w").write("1 2 3 4 5 6 7 8 9\n")
EOF
IMP=$BIN/import; O=$B/out.h5
at() { echo "in row \\(sequence $1, layer $2, head $3, query $4\\)"; }
expect_error "NaN" 1 "^import: $B/nan.npy: array 'nan': NaN at key 3 $(at 1 0 2 5)$" "$O" "$IMP" "$B/nan.npy" "$O"
expect_error "Inf" 1 "array 'inf': Inf at key 1 $(at 2 1 0 4)" "$O" "$IMP" "$B/inf.npy" "$O"
expect_error "negative probability" 1 "array 'neg': negative probability -0.01 at key 2 $(at 0 1 3 6)" "$O" "$IMP" "$B/neg.npy" "$O"
expect_error "row not summing to 1 within 1e-3 (float32)" 1 "row sums to 1.002, not 1 within 0.001 $(at 1 1 1 7)" "$O" "$IMP" "$B/sum.npy" "$O"
expect_error "--causal with mass above the diagonal" 1 "array 'above': mass above the diagonal of a causal file \\(key 8\\) $(at 0 0 1 3)" "$O" "$IMP" --causal "$B/above.npy" "$O"
expect_error "--causal on a bidirectional file" 1 "bidir_f32.npy: array 'bidir_f32': mass above the diagonal" "$O" "$IMP" --causal "$R/bidir_f32.npy" "$O"
check "float16 input: a row 5e-3 off 1 passes (tolerance 1e-2)" "$IMP" "$B/f16ok.npy" "$B/f16ok.h5"
expect_error "float16 input: a row 2e-2 off 1 fails" 1 "not 1 within 0.01 $(at 0 0 0 8)" "$O" "$IMP" "$B/f16bad.npy" "$O"
expect_error "first bad row in (s,l,h,t) order across per-layer arrays" 1 "first.npz: array 'layer_1': NaN at key 0 $(at 1 1 3 2)" "$O" "$IMP" "$B/first.npz" "$O"
expect_error "--log: log-probability above 0" 1 "array 'logpos': log-probability 0.01 above 0 at key 0 $(at 0 0 0 0)" "$O" "$IMP" --log "$B/logpos.npy" "$O"
expect_error "--log: a row whose logsumexp is not 0" 1 "array 'logshift': logsumexp of the row is -0.02, not 0 within 0.001 $(at 0 0 0 0)" "$O" "$IMP" --log "$B/logshift.npy" "$O"
expect_error "--log on probabilities" 1 "array 'causal_f32': log-probability 1 above 0 at key 0 $(at 0 0 0 0)" "$O" "$IMP" --log "$R/causal_f32.npy" "$O"
expect_error "shape: last two dimensions differ" 1 "array 'notsquare': shape \\[3,2,4,9,8\\] does not fit: the last two dimensions" "$O" "$IMP" "$B/notsquare.npy" "$O"
expect_error "shape: rank 2" 1 "array 'rank2': shape \\[9,9\\] does not fit" "$O" "$IMP" "$B/rank2.npy" "$O"
expect_error "shape: empty dimension" 1 "array 'empty': shape \\[0,2,4,9,9\\] does not fit: sequences = 0" "$O" "$IMP" "$B/empty.npy" "$O"
expect_error "shape: per-layer arrays disagree" 1 "layer1short.npy: array 'layer1short': shape \\[2,4,9,9\\] does not fit: layer 1 differs from layer 0" "$O" "$IMP" "$B/layer0.npy" "$B/layer1short.npy" "$O"
expect_error "dtype: int32 .npy" 1 "array 'int': dtype '<i4' is not float16, float32 or float64" "$O" "$IMP" "$B/int.npy" "$O"
expect_error "dtype: int32 HDF5 dataset" 1 "int.h5: array '/a': not a float16, bfloat16, float32 or float64 dataset" "$O" "$IMP" "$B/int.h5:/a" "$O"
expect_error "truncated .npy" 1 "trunc.npy: array 'trunc': truncated" "$O" "$IMP" "$B/trunc.npy" "$O"
expect_error "truncated .npz" 1 "trunc.npz: not a readable .npz \\(zip\\) archive" "$O" "$IMP" "$B/trunc.npz" "$O"
expect_error "truncated safetensors" 1 "trunc.safetensors: .*truncated" "$O" "$IMP" "$B/trunc.safetensors" "$O"
expect_error "not an array file" 1 "junk.bin: not a .npy, .npz, safetensors or HDF5 file" "$O" "$IMP" "$B/junk.bin" "$O"
expect_error "missing .npz member" 1 "causal_layers.npz: no array 'layer_9' in the archive" "$O" "$IMP" "$R/causal_layers.npz:layer_9" "$O"
expect_error "missing HDF5 dataset" 1 "causal.h5: no dataset '/nope'" "$O" "$IMP" "$R/causal.h5:/nope" "$O"
expect_error "HDF5 input without a dataset path" 1 "causal.h5: an HDF5 input names its dataset" "$O" "$IMP" "$R/causal.h5" "$O"
expect_error "missing input file" 1 "nothere.npy: cannot open" "$O" "$IMP" "$B/nothere.npy" "$O"
expect_error "--tokens: a line too short" 1 "tok_short.txt: line 2: 8 values, expected T = 9" "$O" "$IMP" --tokens "$B/tok_short.txt" "$R/causal_f32.npy" "$O"
expect_error "--tokens: too few lines" 1 "tok_lines.txt: 1 lines, expected one per sequence \\(S = 3\\)" "$O" "$IMP" --tokens "$B/tok_lines.txt" "$R/causal_f32.npy" "$O"
expect_error "--valid: a value other than 0/1" 1 "valid2.txt: line 2: value 2 is outside \\[0, 1\\]" "$O" "$IMP" --valid "$B/valid2.txt" "$R/bidir_f32.npy" "$O"
expect_error "--valid: left padding in a causal file" 1 "left_valid.txt: sequence 1: a real token at 2 follows padding" "$O" "$IMP" --valid "$B/left_valid.txt" "$R/causal_f32.npy" "$O"
expect_error "bidirectional rows with mass on padding keys" 1 "array 'bidir_f32': row sums to 0.92.*, not 1 within 0.001 $(at 1 0 0 2)" "$O" "$IMP" --valid "$B/left_valid.txt" --bidirectional "$R/bidir_f32.npy" "$O"
expect_error "usage: --causal with --bidirectional" 2 "exclude each other" "$O" "$IMP" --causal --bidirectional "$R/causal_f32.npy" "$O"
expect_error "usage: --sink not below T" 2 "import: .-sink 9 is not below T = 9" "$O" "$IMP" --sink 9 "$R/causal_f32.npy" "$O"
expect_error "usage: no output" 2 "expected INPUT... and OUTPUT" - "$IMP" "$R/causal_f32.npy"
expect_error "usage: bad --zero-delta" 2 "import: .-zero-delta: '0.5' is not a number" "$O" "$IMP" --zero-delta 0.5 "$R/causal_f32.npy" "$O"

#!/bin/bash
# extract --images on tiny random ViT checkpoints (tests/ref/make_tiny_vit.py, exact HF tensor
# names) against an independent PyTorch + Pillow reference (tests/ref/reference_vit.py):
# attention within 1e-5 absolute, logits within 1e-4 relative, pixel_values of every image in the
# shared images folder and of every colour layout (tests/ref/make_images.py) within 0.02 (max)
# and 0.002 (mean) of Pillow's. Then predictions, masks, batch invariance and bad input.
source tests/lib.sh
MK="$PYTHON tests/ref/make_tiny_vit.py"
REF="$PYTHON tests/ref/reference_vit.py"
SHARED=../shared/data/images
BIN_ABS=$(cd "$BIN" && pwd)
cp -r pipelines/data/images "$T/images"   # the carried set; the list files go beside a copy
IMAGES=$T/images
$PYTHON tests/ref/make_images.py "$IMAGES/chelsea.png" "$T/good" "$T/bad" || fail "make_images.py"
# LIST DIR: the folder's images in extract's order (byte order of names), as a list file
list() { (cd "$1" && LC_ALL=C ls | grep -iE '\.(png|jpe?g)$') >"$1/list.txt"; }
list "$IMAGES"; list "$T/good"

# compare NAME IMAGE_LIST [make_tiny_vit options]: attention, logits and predictions vs reference
compare() {
    local name=$1 imgs=$2; shift 2
    $MK "$T/$name" "$@" || { fail "$name: generator"; return; }
    if "$BIN/extract" --model "$T/$name" --images "$imgs" --logits "$T/$name.lg.h5" "$T/$name.h5" 2>"$T/err"; then
        $REF forward "$T/$name" "$imgs" --attn "$T/$name.h5" --logits "$T/$name.lg.h5" --tag "$name"
    else
        fail "$name: extract failed: $(head -c 300 "$T/err")"
    fi
}
compare vit-f32 "$IMAGES/list.txt"
compare vit-f16-no-qkv-bias "$T/good/list.txt" --dtype F16 --no-qkv-bias
compare vit-bf16-pair-sizes "$IMAGES/list.txt" --dtype BF16 --pair --classes 3
compare vit-remainder-pixels "$T/good/list.txt" --image 36 --patch 8
compare vit-defaults-224 "$IMAGES/list.txt" --image 224 --patch 32 --hidden 32 --layers 1 --preprocessor none

# the folder itself gives the same attention as its list (same order)
"$BIN/extract" --model "$T/vit-f32" --images "$IMAGES" --batch 3 "$T/dir.h5" 2>/dev/null
check "vit: a folder = its sorted list, --batch 3 = --batch 4 (bit-identical attention)" \
    h5diff -q "$T/dir.h5" "$T/vit-f32.h5" /attention
check "vit: one thread = all threads (bit-identical attention)" \
    bash -c "'$BIN/extract' --model '$T/vit-f32' --images '$IMAGES' --threads 1 '$T/t1.h5' && h5diff -q '$T/t1.h5' '$T/vit-f32.h5' /attention"
$PYTHON - "$T/dir.h5" "$IMAGES" <<'PY' && ok "vit: attention file: T = 1 + (32/8)^2 = 17, bidirectional, sink 0, image names + sha256" || fail "vit: attention file metadata"
import hashlib, os, sys, h5py
f = h5py.File(sys.argv[1], "r"); a = f.attrs
names = sorted(n for n in os.listdir(sys.argv[2]) if n.lower().endswith((".png", ".jpg", ".jpeg")))
rows = [l.split("\t") for l in a["images"].strip().split("\n")]
assert int(a["tokens"]) == 17 and int(a["causal"]) == 0 and int(a["sink"]) == 0 and int(a["sequences"]) == len(names)
assert f["attention"].shape[1:] == (2, 4, 17, 17)
for (path, sha), n in zip(rows, names):
    assert os.path.basename(path) == n and sha == hashlib.sha256(open(path, "rb").read()).hexdigest(), (path, n)
PY

# preprocessing: every shared image and every colour layout, at 224 (defaults) and 32 (file)
for src in "$SHARED" "$T/good"; do
    [ -d "$src" ] || { skip "vit: pixel_values of $src" "$src"; continue; }
    cp -r "$src" "$T/set" && set=$T/set && list "$set"
    for m in vit-defaults-224 vit-f32; do
        "$BIN/extract" --model "$T/$m" --images "$set/list.txt" --no-attention --pixels "$T/px.h5" 2>"$T/err" \
            || fail "vit: --pixels failed: $(head -c 300 "$T/err")"
        $REF pixels "$T/$m" "$set/list.txt" --pixels "$T/px.h5" --tag "$m $(basename "$src")"
        rm -f "$T/px.h5"
    done
    rm -rf "$T/set"
done

# predictions: top-5 of softmax(logits), labels from id2label (tab made a space)
"$BIN/extract" --model "$T/vit-f32" --images "$IMAGES/list.txt" --no-attention --predictions "$T/pred.tsv" \
    --logits "$T/pl.h5"
$PYTHON - "$T/pred.tsv" "$T/pl.h5" "$IMAGES/list.txt" <<'PY' && ok "vit: --predictions = top-5 of softmax(logits) with id2label" || fail "vit: --predictions"
import sys, h5py, numpy as np
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if not l.startswith("#")]
assert rows[0] == ["image", "rank", "class", "label", "probability"]
lg = h5py.File(sys.argv[2], "r")["logits"][:, 0].astype(np.float64)
names = [l.strip() for l in open(sys.argv[3])]
assert len(rows) == 1 + 5 * len(names)
for i, z in enumerate(lg):
    p = np.exp(z - z.max()); p /= p.sum()
    top = np.argsort(-p, kind="stable")[:5]
    for r, c in enumerate(top):
        row = rows[1 + 5 * i + r]
        assert row[0].endswith(names[i]) and int(row[1]) == r + 1 and int(row[2]) == c, row
        assert row[3] == ("class 1 x" if c == 1 else f"class {c}") and abs(float(row[4]) - p[c]) < 1e-6, row
PY

(cd "$IMAGES" && sed 's|^|./|' list.txt) | (cd "$IMAGES" && "$BIN_ABS/extract" --model "$T/vit-f32" --images - \
    --no-attention --predictions "$T/pred-stdin.tsv")
check "vit: --images - reads the list from stdin (same predictions)" \
    cmp <(grep -v '^#' "$T/pred.tsv" | sed 's|.*/||') <(grep -v '^#' "$T/pred-stdin.tsv" | sed 's|.*/||')

# --mask: pruned heads' outputs zeroed (HF head_mask), checked against the reference
printf '# prune\n0 1\n1 0\n1 3\n' >"$T/mask.txt"
"$BIN/extract" --model "$T/vit-f32" --images "$IMAGES/list.txt" --mask "$T/mask.txt" --logits "$T/ml.h5" "$T/m.h5"
$REF forward "$T/vit-f32" "$IMAGES/list.txt" --attn "$T/m.h5" --logits "$T/ml.h5" --mask "$T/mask.txt" --tag "vit --mask"

# ViTModel (no classifier): attention only
$MK "$T/bare" --bare
"$BIN/extract" --model "$T/bare" --images "$IMAGES/list.txt" "$T/bare.h5" 2>"$T/err" \
    && $REF forward "$T/bare" "$IMAGES/list.txt" --attn "$T/bare.h5" --tag "vit-bare ViTModel" \
    || fail "vit-bare: $(head -c 300 "$T/err")"
expect_error "vit-bare: --predictions refused (no classifier)" 2 'no classifier' "$T/x.tsv" \
    "$BIN/extract" --model "$T/bare" --images "$IMAGES" --no-attention --predictions "$T/x.tsv"

# bad input: one line naming the file, exit 1, no output (alone, in a list, in a folder)
for f in truncated.png truncated.jpg empty.png zero-width.png text.png image.tiff image.webp webp-named.png; do
    expect_error "vit bad input: $f" 1 "$T/bad/$f: " "$T/o.h5" "$BIN/extract" --model "$T/vit-f32" --images "$T/bad/$f" "$T/o.h5"
done
mkdir -p "$T/mixed"; cp "$IMAGES/horse.png" "$T/bad/truncated.png" "$T/mixed/"
expect_error "vit bad input: truncated PNG inside a folder, after a good one" 1 "$T/mixed/truncated.png: .*truncated" \
    "$T/o.h5" "$BIN/extract" --model "$T/vit-f32" --images "$T/mixed" --batch 1 "$T/o.h5"
cp "$T/bad/image.tiff" "$T/mixed/"
expect_error "vit bad input: a TIFF in a folder" 1 "$T/mixed/image.tiff: TIFF" "$T/o.h5" \
    "$BIN/extract" --model "$T/vit-f32" --images "$T/mixed" "$T/o.h5"
expect_error "vit bad input: folder with no images" 1 "$T/bad/nothing: no PNG or JPEG" "$T/o.h5" \
    "$BIN/extract" --model "$T/vit-f32" --images "$T/bad/nothing" "$T/o.h5"
printf 'horse.png\nmissing.png\n' >"$T/mixed/l.txt"
expect_error "vit bad input: list naming a missing file" 1 "missing.png" "$T/o.h5" \
    "$BIN/extract" --model "$T/vit-f32" --images "$T/mixed/l.txt" "$T/o.h5"
expect_error "vit bad input: --predictions not written either" 1 "truncated" "$T/p.tsv" \
    "$BIN/extract" --model "$T/vit-f32" --images "$T/bad/truncated.jpg" --no-attention --predictions "$T/p.tsv"
$MK "$T/bicubic" --preprocessor '{"size": 32, "resample": 3}'
expect_error "vit bad input: preprocessor_config.json resample 3" 1 "preprocessor_config.json: 'resample'" "$T/o.h5" \
    "$BIN/extract" --model "$T/bicubic" --images "$IMAGES" "$T/o.h5"
$MK "$T/size64" --preprocessor '{"size": {"height": 64, "width": 64}}'
expect_error "vit bad input: processor size != image_size" 1 "resized to 64x64, but the model takes 32x32" "$T/o.h5" \
    "$BIN/extract" --model "$T/size64" --images "$IMAGES" "$T/o.h5"
$MK "$T/badpos" && $PYTHON - "$T/badpos/config.json" <<'PY'
import json, sys; c = json.load(open(sys.argv[1])); c["image_size"] = 40; json.dump(c, open(sys.argv[1], "w"))
PY
expect_error "vit bad input: position table of the wrong size" 1 "position_embeddings' has shape \[1,17,48\], expected \[1,26,48\]" \
    "$T/o.h5" "$BIN/extract" --model "$T/badpos" --images "$IMAGES" "$T/o.h5"
expect_error "vit usage: --text with a vit model" 2 "vit image model" "$T/o.h5" \
    "$BIN/extract" --model "$T/vit-f32" --text tests/run "$T/o.h5"
expect_error "vit usage: --images with a language model" 2 "needs a vit model" "$T/o.h5" \
    "$BIN/extract" --model "$EMBED/models/stories260K/stories260K.bin" --images "$IMAGES" "$T/o.h5"
expect_error "vit usage: --nll with --images" 2 "not with --images" "$T/o.h5" \
    "$BIN/extract" --model "$T/vit-f32" --images "$IMAGES" --nll "$T/n.tsv" "$T/o.h5"

# the pipeline: configs/vit-base-patch16-224.conf on a random-weight checkpoint in HF_MODELS_DIR,
# attention → decomposition → distances → pruning orders → top-1 agreement table, through make
V=vit-base-patch16-224
unset MAKEFLAGS MFLAGS MAKELEVEL
check "pipeline: $V skipped with one line when absent" \
    bash -c "make -s PROFILE=quick HF_MODELS_DIR='$T/none' models-status 2>&1 | grep -c '^skip $V: ' | grep -qx 1"
$MK "$T/hf/$V"
if make -s PROFILE=quick HF_MODELS_DIR="$T/hf" R="$T/r" BIN="$BIN" BUILD="$BUILD" \
        "$T/r/tables/prune-$V.tsv" "$T/r/tables/sinks-$V.tsv" "$T/r/tables/cluster-$V.tsv" >"$T/mk.log" 2>&1; then
    ok "pipeline: make builds the $V tables from IMAGES_DIR (default pipelines/data/images)"
else
    fail "pipeline: make $V tables: $(grep -m3 -E 'rror|\*\*\*' "$T/mk.log" | tr '\n' ' ')"
fi
m=$(ls "$T/r/prune/$V/masks/" 2>/dev/null | grep -m1 '^js_keep-')
"$BIN/extract" --model "$T/hf/$V" --images pipelines/data/images --no-attention --predictions "$T/p0.tsv"
"$BIN/extract" --model "$T/hf/$V" --images pipelines/data/images --no-attention --predictions "$T/p1.tsv" \
    --mask "$T/r/prune/$V/masks/$m"
$PYTHON - "$T/r/tables/prune-$V.tsv" "$T/p0.tsv" "$T/p1.tsv" "${m%.txt}" <<'PY' && ok "pipeline: $V pruning table = top-1 agreement (baseline 1, $m recomputed)" || fail "pipeline: $V pruning table"
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
assert rows[0] == ["model", "metric", "sparsity", "top1_agreement"], rows[0]
assert rows[1][1:] == ["none", "0", "1"] and all(0 <= float(r[3]) <= 1 for r in rows[1:])
top = lambda f: [l.split("\t")[2] for l in open(f) if not l.startswith("#") and l.split("\t")[1] == "1"]
a, b = top(sys.argv[2]), top(sys.argv[3])
want = sum(x == y for x, y in zip(a, b)) / len(a)
metric, pct = sys.argv[4].rsplit("-", 1)
got = [float(r[3]) for r in rows[1:] if r[1] == metric and abs(float(r[2]) - int(pct) / 100) < 1e-9]
assert len(got) == 1 and abs(got[0] - want) < 1e-6, (got, want)
PY

#!/bin/bash
# Speed of extract --images on a ViT-B/16-shaped checkpoint (86M parameters, random F32 weights,
# tests/ref/make_tiny_vit.py --size vit-base, ViTImageProcessor defaults: 224x224, T = 197):
# images/s including decoding, preprocessing and writing the attention file (12 layers x 12
# heads), beside eager PyTorch doing the same steps with Pillow and numpy and returning every
# attention map (tests/ref/reference_vit.py bench, same threads, same batch, no file). Rates per
# wall second and per CPU second (user+sys; the fairer figure on a shared machine). Prints
# figures, asserts nothing. Environment: N (images, default 8, from pipelines/data/images),
# THREADS (default: all cores), BATCH (default 4).
set -u
BIN=${BIN:-bin}; PYTHON=${PYTHON:-/usr/bin/python3}
source tests/bench/anchor.inc
N=${N:-8}; THREADS=${THREADS:-$(nproc)}; BATCH=${BATCH:-4}
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
$PYTHON tests/ref/make_tiny_vit.py "$D/vitb" --size vit-base --classes 1000 --preprocessor none
imgs=$(cd pipelines/data/images && LC_ALL=C ls | head -n "$N")
for f in $imgs; do echo "$PWD/pipelines/data/images/$f"; done >"$D/list.txt"
head -1 "$D/list.txt" >"$D/one.txt"
N=$(wc -l <"$D/list.txt")

# time_extract LIST [OPTIONS]: "wall cpu" seconds of one run (the page cache is warm after the first)
time_extract() {
    local list=$1; shift
    /usr/bin/time -f "%e %U %S" -o "$D/time" "$BIN/extract" --model "$D/vitb" --images "$list" \
        --threads "$THREADS" --batch "$BATCH" "$@" "$D/out.h5" >/dev/null
    awk '{print $1, $2 + $3}' "$D/time"
}
time_extract "$D/one.txt" >/dev/null
one=$(time_extract "$D/one.txt")      # load + sha256 + one image
all=$(time_extract "$D/list.txt")
size=$(stat -c %s "$D/out.h5")
all0=$(time_extract "$D/list.txt" --deflate 0)
blas_ok=1; anchor_blas torch || blas_ok=0
pt=$(anchor "$THREADS" $PYTHON tests/ref/reference_vit.py bench "$D/vitb" "$D/list.txt" --threads "$THREADS" --batch "$BATCH" | cut -f2,3)
$PYTHON - "$N" $one $all $all0 $pt "$THREADS" "$size" "$BATCH" "$blas_ok" <<'PY'
import sys
n = int(sys.argv[1])
w1, c1, wa, ca, wa0, ca0, ptw, ptc = map(float, sys.argv[2:10])
threads, size, batch = sys.argv[10], int(sys.argv[11]), sys.argv[12]
fw, fc = (wa - w1) / (n - 1), (ca - c1) / (n - 1)   # one extra image, decode to written blocks
fw0, fc0 = (wa0 - w1) / (n - 1), (ca0 - c1) / (n - 1)
print(f"# extract --images, ViT-B/16 shape (86M, F32, random weights), 224x224, T=197, N={n}, "
      f"threads={threads}, batch={batch}")
print("# figure\twall\tcpu")
print(f"extract_images_per_s_total\t{n / wa:.3f}\t{n / ca:.3f}\t(incl. load, sha256, {size / 1e6:.0f} MB file)")
print(f"extract_images_per_s\t{1 / fw:.3f}\t{1 / fc:.3f}\t(per extra image: decode, preprocess, forward, write, deflate 1)")
print(f"extract_images_per_s_deflate0\t{1 / fw0:.3f}\t{1 / fc0:.3f}\t(the same, --deflate 0)")
print(f"pytorch_eager_images_per_s\t{ptw:.3f}\t{ptc:.3f}\t(Pillow + numpy + eager forward, attention maps returned, no file)")
print(f"ratio_extract_over_pytorch\t{(1 / fw) / ptw:.2f}\t{(1 / fc) / ptc:.2f}" if sys.argv[13] == "1"
      else "ratio_extract_over_pytorch\trefused\t\t(PyTorch on the reference BLAS)")
PY

#!/bin/bash
# Speed of bin/distance (rows/s, 1 and 2 OpenMP threads) beside the vectorised NumPy reference
# (tests/ref/distance_numpy.py) on a synthetic file: 144 heads (L=12, H=12), S=32, T=128.
# NumPy runs single-threaded (OpenBLAS too) on the first 2 sequences only (its rate is per row,
# so it compares directly).
# Wall-clock rates depend on other load on the machine; rates per CPU-second (user time) are
# printed too, and are the fairer 1-thread comparison on a shared machine.
set -u
BIN=${BIN:-bin}; PYTHON=${PYTHON:-/usr/bin/python3}
source tests/bench/anchor.inc
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$BIN/synth" -S 32 -L 12 -H 12 -T 128 --seed 7 "$T/a.h5" || exit 1
rows=$((32 * 126))
declare -A wall cpu
for th in 1 2; do
    OMP_NUM_THREADS=$th /usr/bin/time -f '%e %U' -o "$T/time$th" "$BIN/distance" "$T/a.h5" "$T/d$th.h5" >/dev/null || exit 1
    read -r e u <"$T/time$th"
    wall[$th]=$(echo "$rows / $e" | bc -l); cpu[$th]=$(echo "$rows / $u" | bc -l)
    printf 'distance: %d thread(s): %d rows in %.2f s wall = %.1f rows/s (%.1f rows per CPU-second)\n' \
        "$th" "$rows" "$e" "${wall[$th]}" "${cpu[$th]}"
done
h5diff "$T/d1.h5" "$T/d2.h5" >/dev/null && echo "distance: 1- and 2-thread files identical" \
    || echo "distance: WARNING 1- and 2-thread files differ"
blas_ok=1; anchor_blas numpy || blas_ok=0
read -r np npc < <(anchor 1 "$PYTHON" tests/ref/distance_numpy.py "$T/a.h5" --seqs 0:2 | awk '{print $6, $10}')
printf 'numpy reference: %.2f rows/s wall, %.2f rows per CPU-second\n' "$np" "$npc"
[ "$blas_ok" = 1 ] && printf 'speed-up over numpy (wall): %.1fx with 1 thread, %.1fx with 2 threads; per CPU-second: %.1fx\n' \
    "$(echo "${wall[1]} / $np" | bc -l)" "$(echo "${wall[2]} / $np" | bc -l)" "$(echo "${cpu[1]} / $npc" | bc -l)" ||
    echo "speed-up over numpy: refused (NumPy on the reference BLAS)"
printf 'OpenMP scaling, 2 threads over 1 (wall): %.2fx\n' "$(echo "${wall[2]} / ${wall[1]}" | bc -l)"

# theory: the Theorem-1 sweep, band collapse and identity table (METHODS §5.2, §2–§3) at small
# sizes: the claims the tables exist to show, determinism, and usage errors.
source tests/lib.sh
if [ ! -x "$BIN/theory" ]; then ok "theory # SKIP $BIN/theory not built"; exit 0; fi

# col FILE NAME: the column number of NAME in the header (line 2) of a theory table
col() { awk -F'\t' -v n="$2" 'NR == 2 { for (i = 1; i <= NF; i++) if ($i == n) print i }' "$1"; }

# ---- theorem1 ----
"$BIN/theory" theorem1 --grid 7 --draws 60 >"$T/t1.tsv"
"$BIN/theory" theorem1 --grid 7 --draws 60 --summary >"$T/t1s.tsv"
check "theorem1: provenance line first, then the header, then 49 grid rows" \
    awk -F'\t' 'NR == 1 && !/^# provenance: \{"inputs"/ { exit 1 } NR == 2 && $1 != "s_A" { exit 1 }
                END { exit NR != 51 }' "$T/t1.tsv"
c=$(col "$T/t1.tsv" rev_content)
check "theorem1: d_A_perp full vs drop reverses on no grid point" \
    awk -F'\t' -v c="$c" 'NR > 2 && $c != 0 { exit 1 }' "$T/t1.tsv"
c=$(col "$T/t1.tsv" rev_cosine)
check "theorem1: no cosine reversal where s_A = s_B (A and B are the same row)" \
    awk -F'\t' -v c="$c" 'NR > 2 && $1 == $2 && $c != 0 { exit 1 }' "$T/t1.tsv"
check "theorem1: cosine reverses on most draws at s_A = 0.95, s_B = 0.05" \
    awk -F'\t' -v c="$c" 'NR > 2 && $1 == 0.95 && $2 == 0.05 { f = $c } END { exit !(f > 0.5) }' "$T/t1.tsv"
for m in cosine js euclidean aitchison; do
    check "theorem1 --summary: $m has a non-empty reversal region" \
        awk -F'\t' -v m="$m" '$1 == m { f = $3; mx = $5 } END { exit !(f > 0 && f < 1 && mx > 0) }' "$T/t1s.tsv"
done
check "theorem1 --summary: content (d_A_perp) region share, mean and max are 0" \
    awk -F'\t' '$1 == "content" { n++; if ($3 != 0 || $4 != 0 || $5 != 0) exit 1 } END { exit n != 1 }' "$T/t1s.tsv"
check "theorem1 --summary: 49 grid points, no ties" \
    awk -F'\t' 'NR > 2 && ($2 != 49 || $6 != 0) { exit 1 } END { exit NR != 7 }' "$T/t1s.tsv"
# the summary is the grid table aggregated: mean of rev_cosine over the grid
check "theorem1 --summary: cosine mean equals the mean of the grid table's column" \
    awk -F'\t' -v c="$c" 'FNR == NR { if (FNR > 2) { s += $c; n++ } next }
        $1 == "cosine" { d = $4 - s / n; exit !(d < 1e-8 && d > -1e-8) }' "$T/t1.tsv" "$T/t1s.tsv"

# ---- band ----
"$BIN/theory" band --pairs 60 >"$T/band.tsv"
check "band: 100 values of s from 1e-12 to 0.99" \
    awk -F'\t' 'NR == 3 && $1 != 1e-12 { exit 1 } END { exit !(NR == 102 && $1 == 0.99) }' "$T/band.tsv"
check "band: the bound holds (bound_holds = 1, min cosine similarity >= bound) for s >= 0.8" \
    awk -F'\t' 'NR > 2 && $1 >= 0.8 { n++; if ($NF != 1 || $3 < $2 - 1e-12) exit 1 } END { exit n < 15 }' "$T/band.tsv"
check "band: bound at s = 0.99 is 0.9801/0.9802" \
    awk -F'\t' '$1 == 0.99 { d = $2 - 0.9801 / 0.9802; exit !(d < 1e-9 && d > -1e-9) }' "$T/band.tsv"
c=$(col "$T/band.tsv" max_cos_keep)
check "band: cosine-distance range shrinks (max at s = 0.99 < max at s = 0.5 / 100)" \
    awk -F'\t' -v c="$c" '$1 == 0.5 { h = $c } $1 == 0.99 { e = $c } END { exit !(h > 0 && e < h / 100) }' "$T/band.tsv"
lo=$(col "$T/band.tsv" min_content); hi=$(col "$T/band.tsv" max_content)
check "band: the d_A_perp range does not change with s (same content pairs at every s)" \
    awk -F'\t' -v a="$lo" -v b="$hi" 'NR == 3 { x = $a; y = $b } NR > 3 && ($a != x || $b != y) { exit 1 }
        END { exit !(x > 0) }' "$T/band.tsv"

# ---- identities ----
"$BIN/theory" identities --rows 3000 >"$T/id.tsv"
check "identities: ten identities, each checked on 3000 pairs (6000 rows)" \
    awk -F'\t' 'NR > 2 { n++; if ($2 != 3000 && $2 != 6000) exit 1 } END { exit n != 10 }' "$T/id.tsv"
while IFS=$'\t' read -r name rows err pass; do
    check "identities: $name holds (max rel err $err <= 1e-9)" test "$pass" = 1
done < <(tail -n +3 "$T/id.tsv")

# ---- determinism, --output ----
"$BIN/theory" theorem1 --grid 7 --draws 60 >"$T/t1b.tsv"
check "theorem1: same seed, identical output" cmp -s "$T/t1.tsv" "$T/t1b.tsv"
"$BIN/theory" theorem1 --grid 7 --draws 60 --seed 2 >"$T/t1c.tsv"
check "theorem1: another seed, another output" bash -c '! cmp -s "$1" "$2"' _ "$T/t1.tsv" "$T/t1c.tsv"
"$BIN/theory" band --pairs 60 --output "$T/band2.tsv"
check "band: --output writes what stdout gets" cmp -s "$T/band.tsv" "$T/band2.tsv"
OMP_NUM_THREADS=1 "$BIN/theory" identities --rows 3000 >"$T/id1.tsv"
check "identities: same output with 1 thread as with all" cmp -s "$T/id.tsv" "$T/id1.tsv"

# ---- usage errors: exit 2, one stderr line, no output ----
out="$T/never.tsv"
expect_error "no subcommand → exit 2" 2 '^theory: ' "$out" "$BIN/theory"
expect_error "unknown subcommand → exit 2" 2 "^theory: unknown subcommand" "$out" "$BIN/theory" nope
expect_error "unknown option → exit 2" 2 '^theory: ' "$out" "$BIN/theory" band --bogus -o "$out"
expect_error "option without its value → exit 2" 2 '^theory: .*--grid' "$out" "$BIN/theory" theorem1 -o "$out" --grid
expect_error "option of another subcommand → exit 2" 2 '^theory: --grid does not apply' "$out" \
    "$BIN/theory" band --grid 5 -o "$out"
expect_error "--grid 1 → exit 2" 2 '^theory: --grid' "$out" "$BIN/theory" theorem1 --grid 1 -o "$out"
expect_error "--D 2 → exit 2" 2 '^theory: --D' "$out" "$BIN/theory" band --D 2 -o "$out"
expect_error "--rows abc → exit 2" 2 '^theory: --rows' "$out" "$BIN/theory" identities --rows abc -o "$out"
expect_error "stray argument → exit 2" 2 '^theory: ' "$out" "$BIN/theory" identities extra -o "$out"
check "--help and --version exit 0" bash -c '"$1" --help | grep -q "^Usage: theory" && "$1" band --version | grep -q attncoda' _ "$BIN/theory"

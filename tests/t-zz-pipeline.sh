#!/bin/bash
# The quick profile end to end: `make all` regenerates every table from the corpus, `make check`
# finds them equal to expected/quick within configs/tolerances.tsv, and a second `make` has
# nothing to do. Runs last (the suite's longest test); SKIP_PIPELINE=1 skips it (make unit).
source tests/lib.sh
if [ -n "${SKIP_PIPELINE:-}" ]; then echo "# quick-profile pipeline skipped (SKIP_PIPELINE)"; exit 0; fi
unset MAKEFLAGS MFLAGS MAKELEVEL
log=${PIPELINE_LOG:-$T/pipeline.log}
start=$(date +%s)
if make -j2 PROFILE=quick all >"$log" 2>&1; then
    ok "make all PROFILE=quick ($(( $(date +%s) - start )) s)"
else
    fail "make all PROFILE=quick: $(grep -m3 -E 'Error|error|\*\*\*' "$log" | tr '\n' ' ')"
    tail -20 "$log" | sed 's/^/# /'
fi
if make PROFILE=quick check >"$T/check.log" 2>&1; then
    ok "make check PROFILE=quick: $(tail -1 "$T/check.log")"
else
    fail "make check PROFILE=quick"
    grep -v '^make' "$T/check.log" | head -30 | sed 's/^/# /'
fi
check "second make all PROFILE=quick has nothing to do" make -q PROFILE=quick tables
# make check writes the tables as frozen: the optional store's location appears nowhere in them,
# not even in the provenance comments (the frozen tables must not depend on where DATA_DIR is)
dd=$(cd "$DATA_DIR" 2>/dev/null && pwd || true)
if ls results/quick/tables/*aidreams260K* >/dev/null 2>&1; then
    if grep -rlF -e "\"$DATA_DIR/" ${dd:+-e "\"$dd/"} results/quick/check/results >"$T/leaks" 2>/dev/null; then
        fail "normalised tables still name DATA_DIR's location: $(head -3 "$T/leaks" | tr '\n' ' ')"
    else
        ok "normalised tables name DATA_DIR/..., not $DATA_DIR, in values and provenance"
    fi
else
    skip "normalised tables name DATA_DIR/... in provenance" "$DATA_DIR/models/aidreams260K"
fi
# make freeze never runs the pipeline: with the tables missing it refuses and writes nothing; with
# them current it writes exactly what make check compared
make --no-print-directory -s PROFILE=quick R="$T/no-results" EXPECTED="$T/exp-none" freeze >/dev/null 2>"$T/freeze.err"
rc=$?
if [ $rc -ne 0 ] && grep -q "^freeze: $T/no-results/tables is missing tables or older than its inputs" "$T/freeze.err" &&
   [ ! -e "$T/exp-none" ] && [ ! -e "$T/no-results" ]; then
    ok "make freeze refuses missing tables, writes nothing and runs nothing"
else
    fail "make freeze with no tables: status $rc, $(head -c 300 "$T/freeze.err")"
fi
if make -s PROFILE=quick EXPECTED="$T/exp" freeze >"$T/freeze.log" 2>&1 &&
   diff -r "$T/exp" results/quick/check/results >"$T/freeze.diff"; then
    ok "make freeze on current tables writes the tables make check compared ($(ls "$T/exp" | wc -l) files)"
else
    fail "make freeze on current tables: $(head -c 300 "$T/freeze.log") $(head -5 "$T/freeze.diff" 2>/dev/null)"
fi

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

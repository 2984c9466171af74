#!/bin/bash
# check-tables.sh check|freeze EXPECTED_DIR OUT_DIR TABLE...   (called by `make check` / `make freeze`)
# Environment: DATA_DIR, HF_MODELS_DIR (the optional stores), SKIPPED_OPTIONAL (optional models that
# are absent), PER_MODEL (kinds of per-model table, KIND-MODEL.tsv), COMBINED (tables with one row
# per model, regime*.tsv), BARE_ROWS (the path prefixes of the models a bare clone has: the trained
# models' directory and pipelines/data/).
# Tables are compared and frozen with the optional stores' locations written as their variable
# (DATA_DIR/models/…, HF_MODELS_DIR/…), so a table does not depend on where a user keeps them.
# Combined tables keep only the rows of the models a bare clone has (trained and embedded): rows of
# optional models would make the frozen table depend on what is present. The rows kept are named by
# what a bare clone has (BARE_ROWS), not by what it lacks, because tables made with DATA_DIR and
# frozen without it name the optional models by a path that no variable of this run matches.
#   check:  OUT_DIR/expected = EXPECTED_DIR without the tables of absent optional models;
#           OUT_DIR/results  = TABLE... so written; bin/tabulate --check then compares the two, and a
#           table that should exist but is missing is a failure.
#   freeze: EXPECTED_DIR = TABLE... so written; the frozen tables of absent optional models are kept.
set -euo pipefail
mode=$1 edir=$2 out=$3; shift 3
if [ -n "${COMBINED:-}" ] && [ -z "${BARE_ROWS:-}" ]; then
    echo "check-tables.sh: BARE_ROWS is empty: no row of the combined tables could be kept" >&2; exit 2
fi
is_absent_optional() {   # is_absent_optional BASENAME: a per-model table of an absent optional model
    local m k
    for m in ${SKIPPED_OPTIONAL:-}; do for k in ${PER_MODEL:-}; do [ "$1" = "$k-$m.tsv" ] && return 0; done; done
    return 1
}
is_combined() { local c; for c in ${COMBINED:-}; do [ "$1" = "$c" ] && return 0; done; return 1; }
# normalize IN OUT: store locations as variables; in a combined table, only the bare clone's rows
normalize() {
    local combined=0
    is_combined "$(basename "$1")" && combined=1
    awk -F'\t' -v OFS='\t' -v d="${DATA_DIR%/}/" -v h="${HF_MODELS_DIR%/}/" -v combined=$combined \
        -v bare="${BARE_ROWS:-}" '
        function rel(x) {
            if (index(x, "pipelines/data/") == 1) return x
            if (length(d) > 1 && index(x, d) == 1) return "DATA_DIR/" substr(x, length(d) + 1)
            if (length(h) > 1 && index(x, h) == 1) return "HF_MODELS_DIR/" substr(x, length(h) + 1)
            return x
        }
        # every quoted path in a comment (the provenance JSON) too, so a frozen table does not
        # carry the freezing machine'"'"'s store locations
        function relq(s, pre, name,   out, k) {
            out = ""
            if (length(pre) < 2) return s
            while ((k = index(s, "\"" pre)) > 0) {
                out = out substr(s, 1, k) name; s = substr(s, k + 1 + length(pre))
            }
            return out s
        }
        # a row of a model the bare clone has: its first field starts with a BARE_ROWS prefix
        function is_bare(x,   i) {
            for (i = 1; i <= nbare; i++) if (index(x, bare_prefix[i]) == 1) return 1
            return 0
        }
        BEGIN { nbare = split(bare, bare_prefix, " ") }
        /^#/ { print relq(relq($0, d, "DATA_DIR/"), h, "HF_MODELS_DIR/"); next }
        { for (i = 1; i <= NF; i++) $i = rel($i) }
        combined && header++ && !is_bare($1) { next }
        { print }' "$1" >"$2.tmp$$"
    mv "$2.tmp$$" "$2"
}
case $mode in
check)
    rm -rf "$out"; mkdir -p "$out/expected" "$out/results"
    left=()
    for f in "$edir"/*.tsv; do
        [ -e "$f" ] || continue
        b=$(basename "$f")
        if is_absent_optional "$b"; then left+=("$b"); else cp "$f" "$out/expected/"; fi
    done
    for t in "$@"; do
        b=$(basename "$t")
        [ -f "$t" ] && normalize "$t" "$out/results/$b"
        [ -f "$edir/$b" ] || echo "check: $b: not frozen in $edir, not compared"
    done
    [ ${#left[@]} -eq 0 ] || echo "check: left out (optional models absent): ${left[*]}"
    ;;
freeze)
    mkdir -p "$edir"
    for f in "$edir"/*.tsv; do
        [ -e "$f" ] || continue
        is_absent_optional "$(basename "$f")" || rm -f "$f"
    done
    for t in "$@"; do normalize "$t" "$edir/$(basename "$t")"; done
    ;;
*) echo "check-tables.sh: unknown mode '$mode' (check or freeze)" >&2; exit 2 ;;
esac

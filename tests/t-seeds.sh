#!/bin/bash
# Seeds of the sink recipes (issue 44; docs/TRAIN.md, "Seeds and the depths recipe"): every sink
# recipe has configs for seeds 1, 2 and 3, and each seed file is its recipe's file with only name
# and seed changed; the declared depths recipe (kjv-gpt2-bpe-c) is sink model A's recipe with only
# name and synthetic_task changed (and no synthetic_rules, which only mixed reads), and stays out
# of the pipeline's models until its declared criteria say otherwise.
source tests/lib.sh
# KEY = VALUE lines of a recipe, comments and the given keys left out
keys() { local f=$1; shift; grep -v '^[[:space:]]*#' "$f" | grep -v '^[[:space:]]*$' | grep -Ev "^($(IFS='|'; echo "$*"))[[:space:]]*=" | sort; }
key() { sed -n "s/^$2[[:space:]]*=[[:space:]]*//p" "configs/$1.conf"; }
seeds_ok() {   # seeds_ok RECIPE: RECIPE (seed 1), RECIPE-s2, RECIPE-s3
    local r=$1 s
    [ "$(key "$r" seed)" = 1 ] || { echo "# $r: seed is not 1"; return 1; }
    for s in 2 3; do
        [ -f "configs/$r-s$s.conf" ] || { echo "# configs/$r-s$s.conf missing"; return 1; }
        [ "$(key "$r-s$s" name)" = "$r-s$s" ] && [ "$(key "$r-s$s" seed)" = "$s" ] || { echo "# $r-s$s: name or seed"; return 1; }
        diff <(keys "configs/$r.conf" name seed) <(keys "configs/$r-s$s.conf" name seed) >/dev/null ||
            { echo "# $r-s$s differs from $r in a key other than name and seed"; return 1; }
    done
}
for r in kjv-gpt2-bpe-a kjv-gpt2-bpe-b kjv-gpt2-bpe-c; do
    check "$r: seeds 1, 2 and 3, each seed file differing only in name and seed" seeds_ok "$r"
done
check "kjv-gpt2-bpe-c is sink model A's recipe with synthetic_task = depths (no rules key)" bash -c "
    diff <(grep -Ev '^(#|name|role|synthetic_task|synthetic_rules)' configs/kjv-gpt2-bpe-a.conf | grep -v '^\$' | sort) \
         <(grep -Ev '^(#|name|role|synthetic_task|synthetic_rules)' configs/kjv-gpt2-bpe-c.conf | grep -v '^\$' | sort) >/dev/null &&
    [ \"\$(sed -n 's/^synthetic_task *= *//p' configs/kjv-gpt2-bpe-c.conf)\" = depths ] &&
    ! grep -q '^synthetic_rules' configs/kjv-gpt2-bpe-c.conf"
check "the declared recipe cites Guo et al. 2024 and states its criteria" bash -c \
    "grep -q '2410.13835' configs/kjv-gpt2-bpe-c.conf && grep -q 'Criteria, fixed now' configs/kjv-gpt2-bpe-c.conf"
not_in_pipeline() {
    local m
    for m in $(sed -n 's/^TRAIN_MODELS_\(full\|quick\) *:= *//p' pipelines/train.mk); do
        case $m in *-s[0-9] | kjv-gpt2-bpe-c) echo "# $m is a pipeline model"; return 1 ;; esac
    done
}
check "no seed file and not the declared recipe among the pipeline's trained models" not_in_pipeline
# every seed config parses as a training recipe (train reads it and stops at the missing corpus)
for f in configs/kjv-gpt2-bpe-*-s[0-9].conf configs/kjv-gpt2-bpe-c.conf; do
    "$BIN/train" --config "$f" --out "$T/x" --train "$T/none.txt" 2>"$T/err" >/dev/null
    check "$(basename "$f"): parsed, then the missing training text is the error" grep -q "none.txt" "$T/err"
done

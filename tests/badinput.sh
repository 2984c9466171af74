# Bad-input helpers for shell tests (source after tests/lib.sh).
#   make_bad_inputs DIR        writes DIR/<name>.h5 for every defect in $BAD_INPUTS, plus the
#                              controls DIR/valid.h5 (log) and DIR/valid_prob.h5 (prob)
#   bad_inputs_for NAME CMD... runs `CMD... DIR/<bad>.h5 OUT` for every bad file and asserts exit
#                              status 1, exactly one stderr line "prog: <path>: ..." naming the
#                              file, no OUT, and no other file (temporary) left in OUT's folder;
#                              first checks that CMD accepts the valid control (else the bad-input
#                              verdicts would mean nothing)
# The files are written by tests/ref/make_bad_inputs.py (h5py + numpy) from the format of
# docs/FORMAT.md, independently of the C writer.
BAD_INPUTS="not_hdf5 empty truncated missing_attention wrong_rank wrong_shape nan inf
negative_prob bad_sum_prob bad_logsumexp missing_attr valid_not_01 causal_left_pad negative_head_index
layer_index_length huge_block no_data corrupt_chunk"
BAD_DIR=
# what each defect's message must mention (case-insensitive ERE): the file was rejected for the
# planted reason, not an incidental one
bad_reason() {
    case $1 in
        not_hdf5) echo 'hdf5' ;; empty) echo 'empty' ;; truncated) echo 'truncat|corrupt' ;;
        missing_attention) echo 'attention' ;; wrong_rank) echo 'rank' ;;
        wrong_shape) echo 'shape|disagree' ;; nan) echo 'nan' ;; inf) echo 'inf' ;;
        negative_prob) echo 'negative' ;; bad_sum_prob) echo 'sum' ;;
        bad_logsumexp) echo 'logsumexp|close|sum' ;; missing_attr) echo 'layers' ;;
        valid_not_01) echo "'valid'.*want 0 or 1" ;; causal_left_pad) echo "'valid'.*padding" ;;
        negative_head_index) echo "'head_index'.*non-negative" ;;
        layer_index_length) echo "'layer_index'.*dimension 0 is 2, expected 1" ;;
        huge_block) echo 'H\*Q\*T.*GiB' ;; no_data) echo "'attention' holds no data" ;;
        corrupt_chunk) echo 'truncated or corrupt' ;;
    esac
}
# check_reason NAME DEFECT: the last expect_error's stderr names the defect
check_reason() {
    if grep -qiE "$(bad_reason "$2")" "$T/.err"; then ok "$1: message names the defect"
    else fail "$1: message does not name the defect /$(bad_reason "$2")/: $(head -c 200 "$T/.err")"; fi
}

make_bad_inputs() {
    BAD_DIR=$1
    "$PYTHON" tests/ref/make_bad_inputs.py "$BAD_DIR" || { fail "make_bad_inputs $BAD_DIR"; return 1; }
}

# regex-escape a path for grep -E
_bad_re() { printf '%s' "$1" | sed 's/[][\.*^$(){}?+|/]/\\&/g'; }

bad_inputs_for() {
    local name=$1; shift
    local prog; prog=$(basename "$1")
    local ctl="$BAD_DIR/valid.h5" od="$T/bad-out-$name"
    rm -rf "$od"; mkdir -p "$od"
    if "$@" "$ctl" "$od/valid.out" >"$T/.out" 2>"$T/.err" && [ -s "$od/valid.out" ]; then
        ok "$name: accepts the valid control file"
    else
        fail "$name: rejects the valid control file ($(head -c 300 "$T/.err"))"
    fi
    rm -f "$od/valid.out"
    local b f out
    for b in $BAD_INPUTS; do
        f="$BAD_DIR/$b.h5"; out="$od/$b.out"
        expect_error "$name: $b → exit 1, one line naming the file, no output" 1 \
            "^$prog: $(_bad_re "$f"): " "$out" "$@" "$f" "$out"
        check_reason "$name: $b" "$b"
        if [ -z "$(ls -A "$od")" ]; then ok "$name: $b leaves no temporary file"
        else fail "$name: $b leaves $(ls -A "$od" | tr '\n' ' ')"; rm -f "$od"/* "$od"/.[!.]*; fi
    done
}

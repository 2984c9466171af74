#!/bin/bash
# SIGTERM midway through a real extract (stories260K, pipelines/data) and SIGINT midway through
# clr: the program dies of the signal (status 128 + signal) and leaves nothing behind: no OUTPUT,
# no OUTPUT.tmpPID beside it, nothing in TMPDIR (issue 39: one such leftover reached 200 MB).
source tests/lib.sh
M=$EMBED/models/stories260K/stories260K.bin

# interrupted NAME SIGNAL STATUS DIR CMD...: starts CMD (its outputs in DIR, which holds nothing
# else), waits until its temporary output exists (OUT.tmpPID in DIR, or a stdout image in
# TMPDIR), sends SIGNAL, and checks the status and that
# DIR and TMPDIR are empty afterwards
interrupted() {
    local n=$1 sig=$2 want=$3 dir=$4 i seen=0; shift 4
    rm -rf "$dir" "$T/tmp" && mkdir -p "$dir" "$T/tmp"
    # a script's background job starts with SIGINT ignored, and a run under nohup with SIGHUP
    # ignored (inherited by every child); env restores the defaults, as an interactive shell has them
    TMPDIR="$T/tmp" env --default-signal=INT,TERM,HUP "$@" >/dev/null 2>"$T/sig.err" &
    local pid=$!
    for ((i = 0; i < 600; i++)); do
        if [ -n "$(ls -A "$dir" "$T/tmp" | grep -E '\.tmp[0-9]|^attncoda-')" ]; then seen=1; break; fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    # midway: the temporary output exists, so the program is writing it; signalled at once, since a
    # small input may be finished within a fraction of a second
    kill -"$sig" "$pid" 2>/dev/null
    { wait "$pid"; } 2>/dev/null; local rc=$?
    if [ $seen = 0 ]; then
        fail "$n: no temporary output appeared (status $rc; $(head -c 200 "$T/sig.err"))"
    elif [ $rc -ne "$want" ]; then
        fail "$n: status $rc, want $want (the program finished before the signal?)"
    elif [ -n "$(ls -A "$dir")$(ls -A "$T/tmp")" ]; then
        fail "$n: left $(ls -A "$dir" "$T/tmp" | tr '\n' ' ')"
    else
        ok "$n: status $rc, nothing left behind"
    fi
}

if [ -f "$M" ]; then
    for i in $(seq 400); do echo "Once upon a time there was a little girl named Lily. She liked to play outside."; done >"$T/story.txt"
    interrupted "extract: SIGTERM midway" TERM 143 "$T/x" \
        "$BIN/extract" --model "$M" --text "$T/story.txt" -S 64 -T 256 --threads 1 --nll "$T/x/nll.tsv" "$T/x/attn.h5"
    interrupted "extract to stdout: SIGTERM midway (the stdout image in TMPDIR)" TERM 143 "$T/x" \
        bash -c 'exec "$1" --model "$2" --text "$3" -S 64 -T 256 --threads 1 --nll "$4/nll.tsv" - >/dev/null' \
        _ "$BIN/extract" "$M" "$T/story.txt" "$T/x"
else
    skip "extract: SIGTERM midway" "$M"
fi
"$BIN/synth" -S 32 -L 2 -H 8 -T 128 --seed 1 "$T/big.h5" || fail "synth"
interrupted "clr: SIGINT midway" INT 130 "$T/c" "$BIN/clr" "$T/big.h5" "$T/c/clr.h5"
interrupted "decompose: SIGHUP midway, stdin to a file" HUP 129 "$T/c" \
    bash -c 'exec "$1" --threads 1 - "$2" <"$3"' _ "$BIN/decompose" "$T/c/dec.h5" "$T/big.h5"

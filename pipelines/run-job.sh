#!/bin/bash
# run-job.sh: one heavy recipe as a Slurm job (docs/CLUSTER.md). The Makefile puts it in front of
# a heavy command when SCHED=slurm; without SCHED nothing calls it and recipes run as they are.
#
#   run-job.sh --name NAME [sizing] [--out FILE]... -- COMMAND ARGS...
#
# Inside an allocation (SLURM_JOB_ID set: salloc, or make itself in an sbatch job) the command
# is a job step, `srun`; elsewhere (a login node) a job of its own, `sbatch --wait`. Either way it
# runs in this directory (a shared filesystem), its stdout and stderr come back here, and this
# script exits with its status. When the job fails, is cancelled, preempted or runs out of time,
# the last line says so with the job id, the job's state and the program's one-line error:
#   run-job.sh: NAME: Slurm job 1234 FAILED (exit 1): extract: in.ids: line 3: ...
# Interrupting this script (make stopped by Ctrl-C or scancel) cancels the job. Every --out FILE
# is an output of the command: the temporary files the programs write before renaming
# (FILE.tmpPID) are removed when the command dies by a signal, so no partial file is left.
#
# Sizing (each request can be given directly: --cpus N, --mem MB, --time MINUTES):
#   --model PATH --work SxT   a model run over S windows of T tokens (extract, perplexity): memory
#                             from the weight files' bytes (x1.1 for Hugging Face safetensors,
#                             whose F16/BF16 matrices stay mapped and are widened 64 rows at a
#                             time; x1 for llama2.c; x8 for GGUF, converted to float32) plus
#                             the attention and logits buffers of a batch of 4; time from
#                             2 x parameters x tokens at 5 GFLOP/s per core (parameters taken as
#                             bytes / 2), at least 10 minutes
#   --recipe CONF --profile P a training recipe (configs/NAME.conf): one thread per model
#                             (train --threads), 2 GB; time from 6 x parameters x tokens of
#                             training at 3 GFLOP/s per CPU, plus 10 minutes
#   otherwise                 1 CPU, 4096 MB, 120 minutes (decompose, distance, frames: streaming
#                             passes over the attention file; make gives them JOB_CPUS CPUs)
# Overrides from the environment (make passes its command-line variables):
#   SLURM_PARTITION, SLURM_ACCOUNT  -p / -A of every job
#   SLURM_TIME                      the time limit of every job (Slurm's forms: MINUTES, H:MM:SS, D-H)
#   SLURM_FLAGS                     more sbatch/srun options, word-split (e.g. --qos=long)
#   SLURM_LOGS                      where job logs and ids go (make: results/PROFILE/slurm;
#                                   alone: results/slurm); the job's stdout/stderr files
#                                   NAME.JOBID.{out,err} are removed once they have been
#                                   copied back, and kept when the job failed
set -uo pipefail
me=run-job.sh
die() { echo "$me: $*" >&2; exit 2; }

# ---- inside the job: record the id, run the command, clean temporary outputs on a signal ----
if [ "${1:-}" = --inside ]; then
    idfile=$2; shift 2
    outs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do outs+=("$1"); shift; done
    shift
    printf '%s\n' "${SLURM_JOB_ID:-?}${SLURM_STEP_ID:+.$SLURM_STEP_ID}" >"$idfile"
    clean() { local o; for o in "${outs[@]}"; do rm -f -- "$o".tmp[0-9]*; done; }
    "$@" &
    child=$!
    trap 'kill -TERM $child 2>/dev/null; wait $child; clean; exit 143' TERM INT HUP
    wait $child
    rc=$?
    [ $rc -gt 128 ] && clean
    exit $rc
fi

name="" cpus="" mem="" time="" model="" work="" recipe="" profile="" outs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    [ $# -ge 2 ] || die "option $1 needs a value"
    case $1 in
    --name) name=$2 ;;
    --cpus) cpus=$2 ;;
    --mem) mem=$2 ;;
    --time) time=$2 ;;
    --model) model=$2 ;;
    --work) work=$2 ;;
    --recipe) recipe=$2 ;;
    --profile) profile=$2 ;;
    --out) outs+=("$2") ;;
    *) die "unknown option $1" ;;
    esac
    shift 2
done
[ "${1:-}" = -- ] && [ $# -ge 2 ] || die "usage: $me --name NAME [sizing] [--out FILE]... -- COMMAND ARGS..."
shift
[ -n "$name" ] || die "--name is required"
for v in "$cpus" "$mem" "$time"; do
    [ -z "$v" ] || [[ $v =~ ^[1-9][0-9]*$ ]] || die "--cpus, --mem and --time take positive integers, not '$v'"
done

# ---- sizing ----
# bytes of a model's weights: the file, or the weight files at the top of its directory
weight_bytes() {
    if [ -d "$1" ]; then
        find "$1" -maxdepth 1 -type f \( -name '*.safetensors' -o -name '*.bin' -o -name '*.gguf' \) -printf '%s\n' |
            awk '{ s += $1 } END { printf "%d\n", s }'
    else
        stat -L -c %s "$1" 2>/dev/null || echo 0
    fi
}
info() { awk -F'\t' -v k="$2" '$1 == k { print $2 }' <<<"$1"; }
size_model() {
    local bytes factor=1 inf="" L=0 H=0 V=0 D=0 S T
    bytes=$(weight_bytes "$model")
    case $model in *.gguf) factor=8 ;; *.bin) factor=1 ;; *) factor=1.1 ;; esac
    # extract --info reads only config.json from a directory; a .gguf would be loaded whole
    case $model in *.gguf) ;; *) inf=$(bin/extract --model "$model" --info 2>/dev/null) ;; esac
    [ -n "$inf" ] && L=$(info "$inf" layers) H=$(info "$inf" heads) V=$(info "$inf" vocab) D=$(info "$inf" hidden)
    [[ $work =~ ^([0-9]+)x([0-9]+)$ ]] || die "--work takes SxT, not '$work'"
    S=${BASH_REMATCH[1]} T=${BASH_REMATCH[2]}
    : "${cpus:=$(awk -v b="$bytes" 'BEGIN { print b < 1e8 ? 1 : b < 4e9 ? 4 : 8 }')}"
    : "${mem:=$(awk -v b="$bytes" -v f=$factor -v L="$L" -v H="$H" -v V="$V" -v D="$D" -v T="$T" -v c="$cpus" 'BEGIN {
        act = 4 * (4 * L * H * T * T + 4 * T * V + 4 * T * 8 * D) + 8 * T * T * c
        printf "%d\n", (b * f + act) / 1048576 + 512 + (L ? 0 : 2048) }')}"
    : "${time:=$(awk -v b="$bytes" -v S="$S" -v T="$T" -v c="$cpus" 'BEGIN {
        m = 2 * (b / 2) * S * T / (5e9 * c * 60); m = int(m) + 5; print m < 10 ? 10 : m }')}"
}
conf() { sed -n "s/^$1[[:space:]]*=[[:space:]]*//p" "$recipe" | head -1; }
size_train() {
    [ -f "$recipe" ] || die "$recipe: no such recipe"
    local L D ctx batch steps merges
    L=$(conf layers) D=$(conf d_model) ctx=$(conf context) batch=$(conf batch) steps=$(conf "steps_$profile")
    merges=$(conf bpe_merges)
    : "${cpus:=1}" "${mem:=2048}"
    # 3e9 parameter-FLOP/s per CPU: a quarter of what kjv-gpt2-bpe-a measured (3,200 CPU s)
    : "${time:=$(awk -v L="${L:-4}" -v D="${D:-128}" -v c="${ctx:-512}" -v b="${batch:-16}" -v s="${steps:-10000}" \
        -v V=$((256 + ${merges:-0})) -v n="$cpus" 'BEGIN {
        p = 12 * L * D * D + V * D; m = 6 * p * b * c * s / (3e9 * n * 60); print int(m) + 10 }')}"
}
if [ -n "$model" ]; then size_model
elif [ -n "$recipe" ]; then size_train
fi
: "${cpus:=1}" "${mem:=4096}" "${time:=120}"
[ -n "${SLURM_TIME:-}" ] && time=$SLURM_TIME

logs=${SLURM_LOGS:-results/slurm}
mkdir -p "$logs" || die "$logs: cannot create the log folder"
base=$logs/$name
req=(--job-name="$name" --cpus-per-task="$cpus" --mem="$mem" --time="$time")
[ -n "${SLURM_PARTITION:-}" ] && req+=(--partition="$SLURM_PARTITION")
[ -n "${SLURM_ACCOUNT:-}" ] && req+=(--account="$SLURM_ACCOUNT")
# shellcheck disable=SC2206  # word-split on purpose: extra options
[ -n "${SLURM_FLAGS:-}" ] && req+=($SLURM_FLAGS)
# srun reads these too; the requests above already carry them
unset SLURM_PARTITION SLURM_ACCOUNT
export OMP_NUM_THREADS=$cpus   # the programs use every core they see unless told
inside=("$(pwd)/pipelines/run-job.sh" --inside "$base.id" "${outs[@]}" -- "$@")

# The job's state and reason as slurmctld still remembers them (MinJobAge).
job_state() {
    scontrol show job "$1" -o 2>/dev/null | tr ' ' '\n' | awk -F= '
        $1 == "JobState" { s = $2 } $1 == "Reason" { r = $2 }
        END { if (s == "") s = "ENDED"; printf "%s%s", s, (r != "" && r != "None" ? " (" r ")" : "") }'
}
# The program's one-line error: the last stderr line that is not Slurm's own.
last_error() {
    local l
    l=$(grep -v -E '^(slurmstepd|srun)(-[^ :]*)?: ' "$1" 2>/dev/null | tail -1)
    [ -n "$l" ] || l=$(tail -1 "$1" 2>/dev/null)
    printf '%s' "${l:-no error message}"
}
report() {   # report ID STATE RC ERRFILE
    echo "$me: $name: Slurm job $1 $2 (exit $3): $(last_error "$4")" >&2
}

rm -f "$base.id"
if [ -n "${SLURM_JOB_ID:-}" ]; then
    # a step of the allocation: only the requested CPUs (--exact), so that steps run side by side
    err=$base.$$.err
    srun --ntasks=1 --nodes=1 --exact --kill-on-bad-exit=1 "${req[@]}" "${inside[@]}" 2> >(tee "$err" >&2) &
    pid=$!
    trap 'kill -TERM $pid 2>/dev/null; wait $pid; exit 143' TERM INT HUP
    wait $pid
    rc=$?
    wait   # the tee
    step=$(cat "$base.id" 2>/dev/null || echo "$SLURM_JOB_ID")
    rm -f "$base.id"
    if [ $rc -ne 0 ]; then
        # a step has no state of its own in scontrol; its status says what happened
        state=FAILED
        [ $rc -gt 128 ] && state="KILLED by signal $((rc - 128))"
        report "$step" "step $state" $rc "$err"
    else rm -f "$err"; fi
    exit $rc
fi

command -v sbatch >/dev/null || die "SCHED=slurm: sbatch not found (run on a login node of the cluster, or leave SCHED empty)"
wrap=$(printf '%q ' exec "${inside[@]}")
sub=$base.$$.sub
sbatch --wait --parsable --output="$base.%j.out" --error="$base.%j.err" "${req[@]}" --wrap "$wrap" >"$sub" 2>"$sub.err" &
pid=$!
cancel() {
    local id
    id=$(cut -d';' -f1 "$sub" 2>/dev/null)
    [ -n "$id" ] && scancel "$id" 2>/dev/null
    kill -TERM $pid 2>/dev/null
    wait $pid
    rm -f "$sub" "$sub.err"
    exit 143
}
trap cancel TERM INT HUP
wait $pid
rc=$?
id=$(cut -d';' -f1 "$sub")
if [ -z "$id" ]; then
    echo "$me: $name: sbatch refused the job: $(tail -1 "$sub.err")" >&2
    rm -f "$sub" "$sub.err"
    exit 1
fi
rm -f "$sub" "$sub.err" "$base.id"
cat "$base.$id.out" 2>/dev/null
cat "$base.$id.err" >&2 2>/dev/null
if [ $rc -ne 0 ]; then
    report "$id" "$(job_state "$id")" $rc "$base.$id.err"
    exit $rc
fi
rm -f "$base.$id.out" "$base.$id.err"
exit 0

#!/bin/bash
# make SCHED=slurm on a private single-node Slurm cluster (docs/CLUSTER.md): Debian 12's munged,
# slurmctld and slurmd started here with their state, spool, logs and SLURM_CONF in the test's
# temporary folder, on free ports, and stopped by pid at the end. On it, stories260K's chain
# (sample, extract in 4 shards + merge, decompose, distance, reversal, cluster, prune orders, one
# perplexity job per mask, frames; 8 windows of 64 tokens, sparsity 0.3) runs as jobs:
#   - from a "login node" (sbatch --wait): at least 3 jobs run side by side; one extract shard is
#     cancelled while it runs, make stops naming the job, nothing partial is left, and the rerun
#     redoes that shard only; every table and the attention file equal the local run's bytes
#   - inside an allocation (srun): the whole run (make in a batch job) is cancelled while a
#     perplexity job runs, leaving no partial file; `salloc make` then finishes the table
#   - a failing job stops with the program's one-line error and the job id (sbatch and srun)
# The node declares 8 CPUs whatever the machine has (SlurmdParameters=config_overrides), so that
# jobs of one CPU run side by side on two cores.
source tests/lib.sh
for c in munged slurmctld slurmd sbatch srun salloc scancel squeue scontrol setpriv; do
    command -v "$c" >/dev/null || { skip "private Slurm cluster" "$c (Debian packages slurmctld, slurmd, slurm-client, munge)"; exit 0; }
done
if [ "$(id -u)" != 0 ] || ! id munge >/dev/null 2>&1 || [ ! -r /etc/munge/munge.key ]; then
    skip "private Slurm cluster" "root and the munge package's key (/etc/munge/munge.key)"; exit 0
fi
unset MAKEFLAGS MFLAGS MAKELEVEL SLURM_JOB_ID SLURM_PARTITION SLURM_ACCOUNT SLURM_TIME SLURM_FLAGS
export SLURM_LOGS=$T/logs

# bad requests: one line, exit 2, nothing submitted
J=pipelines/run-job.sh
expect_error "run-job.sh: unknown option" 2 "^run-job.sh: unknown option --bogus$" - $J --name x --bogus 1 -- true
expect_error "run-job.sh: --cpus not a positive integer" 2 "take positive integers, not '0'" - $J --name x --cpus 0 -- true
expect_error "run-job.sh: --work not SxT" 2 "work takes SxT, not '64'" - $J --name x --model "$EMBED/models/stories260K/stories260K.bin" --work 64 -- true
expect_error "run-job.sh: no --name" 2 "name is required" - $J --cpus 1 -- true
expect_error "run-job.sh: no command" 2 "usage: run-job.sh --name NAME" - $J --name x
expect_error "make SCHED=pbs" 2 "SCHED=pbs: the scheduler is slurm" - make -n -s SCHED=pbs tables
expect_error "make EXTRACT_SHARDS=0" 2 "EXTRACT_SHARDS and DIST_SHARDS take a positive integer" - make -n -s EXTRACT_SHARDS=0 tables
chmod 711 "$T"   # munged, as the munge user, reaches its socket below
C=$T/cluster
mkdir -p "$C/state" "$C/spool" "$C/munge"
chown munge:munge "$C/munge"; chmod 711 "$C/munge"
pids=()
stop_cluster() {
    # jobs first (their slurmstepd outlive slurmd), then the daemons this test started
    if [ -n "${SLURM_CONF:-}" ] && [ -n "${ctld:-}" ]; then
        scancel --partition=test 2>/dev/null
        for _ in $(seq 50); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
    fi
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap stop_cluster EXIT
free_port() { $PYTHON -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# munged: a private socket, as the munge user, with the package's key
setpriv --reuid=munge --regid=munge --init-groups munged -F --socket="$C/munge/sock" \
    --pid-file="$C/munge/pid" --log-file="$C/munge/log" --seed-file="$C/munge/seed" >"$C/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$C/munge/sock" ] && break; sleep 0.1; done
host=$(hostname -s)
node=$(slurmd -C | head -1)
mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
p_ctld=$(free_port) p_d=$(free_port)
export SLURM_CONF=$C/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=attncoda-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$p_ctld
SlurmdPort=$p_d
AuthType=auth/munge
AuthInfo=socket=$C/munge/sock
SlurmUser=root
StateSaveLocation=$C/state
SlurmdSpoolDir=$C/spool
SlurmctldPidFile=$C/slurmctld.pid
SlurmdPidFile=$C/slurmd.pid
SlurmctldLogFile=$C/slurmctld.log
SlurmdLogFile=$C/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 Boards=1 SocketsPerBoard=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=$((mem > 2048 ? mem - 1024 : mem))
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i >"$C/slurmctld.out" 2>&1 &
pids+=($!); ctld=$!
slurmd -D -N "$host" >"$C/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do sinfo -h -o %T 2>/dev/null | grep -q '^idle' && break; sleep 0.2; done
if sinfo -h -o %T 2>/dev/null | grep -q '^idle' && [ "$(srun -n1 echo up 2>&1)" = up ]; then
    ok "private cluster up: munged, slurmctld (port $p_ctld), slurmd (port $p_d), srun runs"
else
    fail "private cluster did not come up: $(tail -3 "$C/slurmctld.out" "$C/slurmd.out" "$C/munged.out" | tr '\n' ' ')"
    exit 1
fi

# The programs through a shim: it logs every extract run's start and end (to measure how many
# ran at once) and, when $T/slow names a pattern of its arguments, that run writes the
# temporary file extract would be writing and waits to be cancelled (SLOW: a string such as
# " --seqs 2:4 " that the arguments contain).
mkdir -p "$T/bin"
for p in "$BIN"/*; do ln -s "$(cd "$(dirname "$p")" && pwd)/$(basename "$p")" "$T/bin/"; done
real=$(readlink "$T/bin/extract")
rm "$T/bin/extract"
cat >"$T/bin/extract" <<EOF
#!/bin/bash
echo "start \$(date +%s.%N) \$*" >>"$T/events"
if [ -s "$T/slow" ] && [[ " \$* " == *"\$(cat "$T/slow")"* ]]; then
    out=\${*: -1}
    [[ \$out == *.h5 ]] && printf 'partial' >"\$out.tmp\$\$"
    touch "$T/slow-started"
    sleep 300
fi
"$real" "\$@"
rc=\$?
echo "end \$(date +%s.%N)" >>"$T/events"
exit \$rc
EOF
chmod +x "$T/bin/extract"
# peak number of extract runs at once, from the shim's log
peak() { grep -v -e '--info' "$T/events" | sort -k2,2n | awk '$1 == "start" { n++; if (n > m) m = n } $1 == "end" { n-- } END { print m + 0 }'; }

R=$T/r
V=(PROFILE=quick NSEQ=8 TOKENS=64 SPARSITY=0.3 "R=$R" "BIN=$T/bin" "BUILD=$BUILD")
GOALS=(stories260K-analysis "$R/tables/frames-label-stories260K.tsv")
S=(SCHED=slurm EXTRACT_SHARDS=4 "SLURM_LOGS=$T/logs")

# the local run: the reference bytes
t0=$(date +%s)
if make -s "${V[@]}" "${GOALS[@]}" >"$T/local.log" 2>&1; then
    ok "local chain of stories260K ($(ls "$R/tables" | wc -l) tables, $(( $(date +%s) - t0 )) s)"
else
    fail "local chain: $(grep -m3 -iE 'error|\*\*\*' "$T/local.log" | tr '\n' ' ')"; exit 1
fi
mv "$R" "$T/local"

# from the login node, with one shard cancelled while it runs
rm -f "$T/events"
echo ' --seqs 2:4 ' >"$T/slow"
t0=$(date +%s)
make -s -j16 "${V[@]}" "${S[@]}" "${GOALS[@]}" >"$T/slurm1.log" 2>&1 &
mk=$!
for _ in $(seq 300); do [ -e "$T/slow-started" ] && break; sleep 0.2; done
id=$(squeue -h -n extract-stories260K-2-4 -o %i | head -1)
running=$(squeue -h -t RUNNING -o %i | wc -l)
scancel "$id" 2>/dev/null
wait $mk
rc=$?
rm -f "$T/slow" "$T/slow-started"
msg=$(grep -m1 "run-job.sh: extract-stories260K-2-4: Slurm job $id CANCELLED" "$T/slurm1.log")
if [ -n "$id" ] && [ $rc -ne 0 ] && [ -n "$msg" ]; then
    ok "a cancelled job (extract shard 2:4, job $id, $running jobs running) stops make: $msg"
else
    fail "cancelled job $id: make status $rc; $(grep -m2 -E 'run-job|\*\*\*' "$T/slurm1.log" | tr '\n' ' ')"
fi
left=$(find "$R" -name '*.tmp*' -o -name '2-4.h5' -o -name 'stories260K.h5' -path '*/attn/*' | head -3)
check "no partial file after the cancel (no temporary, no shard 2:4, no attention file)${left:+: $left}" test -z "$left"
# jobs of the first run that Slurm had queued may still start after make stopped: let them finish
for _ in $(seq 1500); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
check "the first run's queued jobs have finished before the rerun" test -z "$(squeue -h 2>/dev/null)"
# the rerun's runs are the lines after this one (start and end lines both count: counting only the
# starts once put some of the first run's late starts among the rerun's, as load reordered them)
before=$(wc -l <"$T/events")
# what the rerun must redo: the shards that are not there (the cancelled one, and any that make had
# not started when it stopped on the failure, which depends on the machine's load)
missing=""
for r in 0-2 2-4 4-6 6-8; do [ -e "$R/attn/stories260K.part/$r.h5" ] || missing="$missing--seqs ${r/-/:} "; done
make -s -j16 "${V[@]}" "${S[@]}" "${GOALS[@]}" >"$T/slurm2.log" 2>&1
rc=$?
redone=$(tail -n +$((before + 1)) "$T/events" | grep '^start' | grep -o -- '--seqs [0-9:]*' | tr '\n' ' ')
if [ $rc -eq 0 ]; then
    ok "the rerun finishes ($(( $(date +%s) - t0 )) s for both runs; $(grep -c '^start' "$T/events") extract runs)"
else
    fail "the rerun: status $rc: $(grep -m3 -E 'run-job|\*\*\*' "$T/slurm2.log" | tr '\n' ' ')"
fi
redone_sorted=$(echo "$redone" | grep -o -- '--seqs [0-9:]*' | sort | tr '\n' ' ')
extra=""
for r in $(echo "$redone_sorted" | grep -o '[0-9]*:[0-9]*'); do [[ "$missing" == *"--seqs $r "* ]] || extra="$extra$r "; done
check "the rerun redid only the missing shards, the cancelled one among them (missing: $missing; redone: ${redone:-none}${extra:+; redone though present: $extra})" \
    bash -c "[[ '$missing' == *'--seqs 2:4 '* ]] && [ '$redone_sorted' = '$missing' ]"
check "then make has nothing to do (the merged shards are gone, not missing)" make -q "${V[@]}" "${S[@]}" "${GOALS[@]}"
n=$(peak)
check "at least 3 jobs ran side by side (peak $n extract runs at once)" test "$n" -ge 3
diff -r "$T/local/tables" "$R/tables" >"$T/tables.diff" 2>&1
check "every table equals the local run's, byte for byte ($(ls "$R/tables" | wc -l) tables)" test ! -s "$T/tables.diff"
check "the merged attention file equals the local run's, byte for byte" cmp "$T/local/attn/stories260K.h5" "$R/attn/stories260K.h5"
check "the prune orders and masks equal the local run's" diff -r "$T/local/prune" "$R/prune"

# inside an allocation: make itself is a batch job and every heavy command an srun step; the whole
# run is cancelled while a perplexity job (the js_keep mask) runs
table=$R/tables/prune-stories260K.tsv
rm -f "$table"
echo 'js_keep-30.txt --no-attention' >"$T/slow"
job=$(sbatch --parsable -n 8 -o "$T/whole.log" --wrap "make -s -j16 ${V[*]} ${S[*]} $table")
for _ in $(seq 300); do [ -e "$T/slow-started" ] && break; sleep 0.2; done
# the batch step (make) and at least the slow perplexity step; how many other steps run beside
# them depends on the machine's load (CI saw 2 in all)
steps=$(squeue -h -s -j "$job" -o %i | wc -l)
scancel "$job"
for _ in $(seq 150); do [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break; sleep 0.2; done
rm -f "$T/slow" "$T/slow-started"
left=$(find "$R" -name '*.tmp*' | head -3)
if [ -n "$job" ] && [ "$steps" -ge 2 ] && [ ! -e "$table" ] && [ -z "$left" ] && [ -z "$(squeue -h -j "$job" 2>/dev/null)" ]; then
    ok "scancel of the whole run (job $job, $steps steps running) leaves no partial file"
else
    fail "scancel of the whole run (job '$job', $steps steps): table $( [ -e "$table" ] && echo present || echo absent), left: $left"
fi

# a failing job stops make with the program's one-line error and the job (step) id
printf '# a head the model lacks\n99 99\n' >"$R/prune/stories260K/masks/zz_bad-30.txt"
salloc -Q -n 8 make -s -j16 "${V[@]}" "${S[@]}" "$table" >"$T/bad.log" 2>&1
rc=$?
msg=$(grep -m1 -E "^run-job.sh: ppl-stories260K-zz_bad-30: Slurm job [0-9]+\.[0-9]+ step FAILED \(exit 1\): extract: .*zz_bad-30.txt: line 2: head 99 99 outside" "$T/bad.log")
if [ $rc -ne 0 ] && [ -n "$msg" ] && [ ! -e "$table" ]; then ok "a failing step stops make: $msg"
else fail "failing step: make status $rc; $(grep -m2 -E 'run-job|extract:' "$T/bad.log" | tr '\n' ' ')"; fi
rm "$R/prune/stories260K/masks/zz_bad-30.txt"
expect_error "a failing sbatch job: one line with the job id and the program's error" 1 \
    "^run-job.sh: bad: Slurm job [0-9]+ FAILED.*\(exit 1\): extract: $T/none.ids: cannot open" "$T/none.h5" \
    bash -c "pipelines/run-job.sh --name bad -- $BIN/extract --model $EMBED/models/stories260K/stories260K.bin --ids $T/none.ids $T/none.h5 2>&1 >/dev/null | grep run-job.sh >&2; exit \${PIPESTATUS[0]}"

# recovery inside an allocation: the table equals the local run's
salloc -Q -n 8 make -s -j16 "${V[@]}" "${S[@]}" "$table" >"$T/salloc.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && cmp -s "$T/local/tables/prune-stories260K.tsv" "$table"; then
    ok "salloc make finishes the table (one srun step per mask), equal to the local run's bytes"
else
    fail "salloc make: status $rc; $(grep -m2 -E 'run-job|\*\*\*' "$T/salloc.log" | tr '\n' ' ')"
fi

# the scripts that start a job per mask or per checkpoint give the tables of their serial runs:
# perplexity.sh on an image model (top-1 agreement, predictions files per job) and collapse.sh
# on three checkpoints of a tiny GPT-2
$PYTHON tests/ref/make_tiny_vit.py "$T/vit" >/dev/null || fail "make_tiny_vit"
mkdir -p "$T/vmasks"
printf '0 0\n' >"$T/vmasks/js_keep-25.txt"; printf '0 1\n1 0\n' >"$T/vmasks/random1-50.txt"
ppl_table() { pipelines/perplexity.sh vit "$T/bin/extract" "$T/vit" "$T/vmasks" "$T/vit.tsv" --images "$EMBED/images"; }
ppl_table && mv "$T/vit.tsv" "$T/vit-local.tsv"
RUN_JOB=pipelines/run-job.sh JOB_NAME=ppl-vit ppl_table
check "perplexity.sh with a job per mask: the image model's agreement table equals the serial run's" \
    cmp "$T/vit-local.tsv" "$T/vit.tsv"
for s in 1 2 3; do $PYTHON tests/ref/make_tiny.py gpt2 "$T/ck/checkpoints/step-00000$s" --seed $s || fail "make_tiny"; done
printf '1 2 3 4 5 6 7 8\n9 10 11 12 13 14 15 16\n' >"$T/ck.ids"
collapse() { pipelines/collapse.sh "$T/bin" "$T/ck" "$T/ckwork" "$T/collapse.tsv" "$T/series.tsv" --ids "$T/ck.ids"; }
mkdir -p "$T/ckwork"
collapse && mv "$T/collapse.tsv" "$T/collapse-local.tsv" && mv "$T/series.tsv" "$T/series-local.tsv" && rm -r "$T/ckwork"
mkdir -p "$T/ckwork"
rm -f "$T/events"
RUN_JOB=pipelines/run-job.sh JOB_NAME=collapse-tiny collapse
check "collapse.sh with a job per checkpoint ($(grep -c '^start' "$T/events") extract jobs): tables equal the serial run's" \
    sh -c "cmp '$T/collapse-local.tsv' '$T/collapse.tsv' && cmp '$T/series-local.tsv' '$T/series.tsv'"

# distance in shards (DIST_SHARDS): contiguous shards merge into the bytes of one run
rm "$R/dist/stories260K.h5"
make -s -j16 "${V[@]}" "${S[@]}" DIST_SHARDS=2 "$R/tables/reversal-stories260K.tsv" >"$T/dist.log" 2>&1
if cmp -s "$T/local/tables/reversal-stories260K.tsv" "$R/tables/reversal-stories260K.tsv" &&
   h5dump -a sequence_range "$R/dist/stories260K.h5" | grep -q '"0:8"'; then
    ok "distance in 2 shards joined by distance --merge: the reversal table is byte-identical to the local run's"
else
    fail "DIST_SHARDS=2: $(grep -m2 -E 'run-job|\*\*\*' "$T/dist.log" | tr '\n' ' ')"
fi

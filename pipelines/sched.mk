# Heavy recipes as cluster jobs (docs/CLUSTER.md). Make stays the orchestrator: with SCHED=slurm
# each heavy command (training, extract, every perplexity run under a mask, decompose, distance,
# frames, the checkpoints of collapse) is prefixed by pipelines/run-job.sh, which runs it as a Slurm job
# step (`srun`, inside an allocation) or job (`sbatch --wait`, from a login node) and exits with
# its status; light recipes (tables, figures) run where make runs. Without SCHED the prefixes are
# empty and every recipe is the same command as before.
#   SCHED            empty (run here) or slurm
#   EXTRACT_SHARDS   K > 1: each attention file as K jobs over ranges of windows (extract --seqs),
#                    joined by extract --merge into the bytes of one run
#   DIST_SHARDS      K > 1: each distance file as K jobs (distance --seqs) joined by distance
#                    --merge into the bytes of one run
#   JOB_CPUS         CPUs of a decompose, distance or frames job (4)
#   SLURM_PARTITION, SLURM_ACCOUNT, SLURM_TIME, SLURM_FLAGS, SLURM_LOGS: run-job.sh's overrides
SCHED          ?=
EXTRACT_SHARDS ?= 1
DIST_SHARDS    ?= 1
ifneq ($(filter-out slurm,$(SCHED)),)
$(error SCHED=$(SCHED): the scheduler is slurm (or leave SCHED empty to run here))
endif
ifneq ($(shell expr '$(EXTRACT_SHARDS)' : '[1-9][0-9]*$$' \& '$(DIST_SHARDS)' : '[1-9][0-9]*$$' >/dev/null && echo ok),ok)
$(error EXTRACT_SHARDS and DIST_SHARDS take a positive integer)
endif
ifneq ($(SCHED),)
SLURM_LOGS ?= $(R)/slurm
export SLURM_LOGS
endif
JOB_CPUS ?= 4

# $(call job,NAME,SIZING): the prefix of a heavy recipe line; empty without SCHED.
job = $(if $(SCHED),pipelines/run-job.sh --name $(1) $(2) --)
# $(call job_env,NAME,SIZING): the same for the scripts that start jobs themselves (one per mask,
# one per checkpoint): RUN_JOB is the prefix without its name, JOB_NAME the stem of the names.
job_env = $(if $(SCHED),RUN_JOB='pipelines/run-job.sh $(2)' JOB_NAME='$(1)')
# Sizing of a model run: the model and the tokens it processes.
model_work = --model $(1) --work $(2)x$(TOKENS)

# $(call seq_ranges,S,K): K contiguous ranges A-B of 0..S-1, as even as integers allow.
seq_ranges = $(shell awk -v s=$(1) -v k=$(2) 'BEGIN { for (i = 0; i < k; i++) { a = int(i * s / k); b = int((i + 1) * s / k); if (b > a) printf "%d-%d ", a, b } }')

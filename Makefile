# attncoda: the table of contents of the reproduction.
#   make all      build, train, extract, analyse, regenerate paper/ (PROFILE=full|quick)
#   make test     unit, golden and bad-input tests, then the quick profile against expected/
#   make check    compare results/$(PROFILE) against expected/$(PROFILE)
#   make fetch    download the optional inputs (DATA_DIR, HF_MODELS_DIR; pipelines/fetch.tsv)
#   make bench    speed and memory figures (printed, never asserted)
#   make rehearse the paper's models at real shapes, random weights: costs for docs/SCALE.md
#   make sanitize the test suite under ASan+UBSan (float-cast-overflow included), bad-input
#                 scripts too; make sanitize-badinput: those alone
#   make fuzz     the libFuzzer harnesses of tests/fuzz, FUZZ_SECONDS each (docs/FUZZING.md)
.DELETE_ON_ERROR:
.SUFFIXES:
SHELL := /bin/bash
# Every core unless -j is given (make -j1 for one job); with SCHED=slurm 32 jobs queued or running
# at once (docs/CLUSTER.md). Results do not depend on the job count:
# every rule is deterministic and training runs one thread per model (pipelines/train.mk).
# Goals given together keep their order: `make all check` checks after all, `make clean all` cleans
# first (serially).
ifeq ($(MAKELEVEL),0)
ifeq ($(filter -j% --jobs%,$(MAKEFLAGS)),)
ifeq ($(filter clean distclean,$(MAKECMDGOALS)),)
MAKEFLAGS += -j$(if $(SCHED),32,$(shell nproc 2>/dev/null || echo 1))
endif
endif
endif

PROFILE  ?= full
R        ?= results/$(PROFILE)
EXPECTED ?= expected/$(PROFILE)
BUILD    ?= build
BIN      ?= bin
CC       ?= cc
# -fvect-cost-model=cheap lets GCC vectorise element-wise loops that need a scalar remainder
# (softmax normalisation, the attention backward, AdamW): 22 % off a training update at the sink
# models' shape, and the same bits, since each element's operations are unchanged (reductions
# are never vectorised without -fassociative-math, which stays off).
OPT      ?= -O2 -g -fvect-cost-model=cheap
SANFLAGS ?=
CFLAGS   ?= $(OPT)
PYTHON   ?= /usr/bin/python3
PKGS     := hdf5 gsl jansson libpcre2-8 nettle libutf8proc libzip
# Debian packages: what `make all` needs, and what only the tests and benchmarks need.
RUN_PKGS  := configs/debian-packages-run.txt
TEST_PKGS := configs/debian-packages-test.txt
DEPS_OK      := $(BUILD)/.deps-ok
TEST_DEPS_OK := $(BUILD)/.test-deps-ok
FUZZ_PKGS    := configs/debian-packages-fuzz.txt

ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -ffp-contract=off -fopenmp -Isrc/lib -Isrc \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(CFLAGS) $(SANFLAGS)
LDLIBS     = $(shell pkg-config --libs-only-L hdf5 2>/dev/null) -lhdf5_hl -lhdf5 -lgsl -lgslcblas \
             -ljansson -lpcre2-8 -lnettle -lutf8proc -lzip -lmpfr -lpng -ljpeg -lm
LDFLAGS   ?=

LIB_SRC  := $(wildcard src/lib/*/*.c) src/cli/cli.c
LIB_OBJ  := $(patsubst src/%.c,$(BUILD)/%.o,$(LIB_SRC))
LIB_A    := $(BUILD)/libattncoda.a
PROG_SRC := $(wildcard src/*.c)
PROGS    := $(patsubst src/%.c,$(BIN)/%,$(PROG_SRC))
UNIT_SRC := $(wildcard tests/unit/*.c)
UNITS    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
# Object files are kept: deleting them as intermediates would make the next make relink every
# program and so redo every result that depends on one.
.SECONDARY: $(patsubst src/%.c,$(BUILD)/prog/%.o,$(PROG_SRC)) $(patsubst %,%.o,$(UNITS))

.PHONY: build deps test-deps test unit sanitize sanitize-badinput fuzz fuzz-build bench clean distclean all check fetch rehearse
build: $(PROGS) $(UNITS)

deps: $(DEPS_OK)
$(DEPS_OK): $(RUN_PKGS) pipelines/install-deps.sh
	@mkdir -p $(@D)
	@sh pipelines/install-deps.sh $(RUN_PKGS)
	@touch $@
test-deps: $(TEST_DEPS_OK)
$(TEST_DEPS_OK): $(TEST_PKGS) pipelines/install-deps.sh | $(DEPS_OK)
	@mkdir -p $(@D)
	@sh pipelines/install-deps.sh $(TEST_PKGS)
	@touch $@

$(BUILD)/lib/%.o: src/lib/%.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/cli/%.o: src/cli/%.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(LIB_A): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/prog/%.o: src/%.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BIN)/%: $(BUILD)/prog/%.o $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%.o: tests/unit/%.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIB_A)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Unit, golden and bad-input tests: every tests/unit/*.c binary and tests/t-*.sh script, TAP output;
# the last script runs the quick profile's `make all` + `make check`. Tests that need an absent
# optional file (DATA_DIR) are skipped by name. Last line: N passed, N failed, N skipped.
test: build $(TEST_DEPS_OK)
	@BIN=$(BIN) BUILD=$(BUILD) PYTHON=$(PYTHON) DATA_DIR='$(DATA_DIR)' tests/run

# The same without the pipeline run (for sanitizer builds). TESTS='WORD...' runs only the tests
# whose name contains one of the words (tests/run WORD...).
TESTS ?=
unit: build $(TEST_DEPS_OK)
	@SKIP_PIPELINE=1 BIN=$(BIN) BUILD=$(BUILD) PYTHON=$(PYTHON) DATA_DIR='$(DATA_DIR)' tests/run $(TESTS)

# Every unit-test binary and every shell test, the bad-input scripts included, against programs
# built with ASan + UBSan ($(BIN) = build/san/bin): a reader that mishandles a bad file fails there
# even when the normal build prints the right line. make sanitize-badinput: the bad-input,
# fuzz-regression and signal scripts alone.
BADINPUT_TESTS := badinput extract-bad import-bad fuzz-regress signals
sanitize:
	$(MAKE) BUILD=build/san BIN=build/san/bin OPT='-O1 -g -fno-omit-frame-pointer' \
	    SANFLAGS='-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow' unit
sanitize-badinput:
	$(MAKE) sanitize TESTS='$(BADINPUT_TESTS)'

# Fuzzing (docs/FUZZING.md): one clang libFuzzer harness per reader (tests/fuzz/fuzz_*.c), linked
# against the library built with clang under ASan, UBSan and float-cast-overflow. Each runs
# FUZZ_SECONDS from the seeds (tests/fuzz/seeds.sh) plus its own growing corpus; any crash,
# sanitizer report or leak fails, leaving the input in build/fuzz/artifacts. Not part of make test.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 10
FUZZ_BUILD   := build/fuzz
FUZZ_SAN     := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZERS      := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/bin/%,$(FUZZ_SRC))
# FUZZ_ONLY="fuzz_gguf fuzz_config" runs only those harnesses (to share a long run across cores).
FUZZ_BAD     := $(filter-out $(notdir $(FUZZERS)),$(FUZZ_ONLY))
ifneq ($(FUZZ_BAD),)
$(error FUZZ_ONLY: no harness named $(FUZZ_BAD); the harnesses are $(notdir $(FUZZERS)))
endif
FUZZ_RUN     := $(if $(FUZZ_ONLY),$(addprefix $(FUZZ_BUILD)/bin/,$(FUZZ_ONLY)),$(FUZZERS))
# Every reader returns its errors (issue 42), so every harness is leak-checked: a rejected input
# must leave nothing allocated. A harness named here would run without leak detection.
FUZZ_NOLEAK  :=
# Each input is written to a file (the readers take paths): on a disk, writeback throttling let a
# harness use about half a core; tmpfs keeps it on the CPU.
FUZZ_TMPDIR  ?= $(if $(wildcard /dev/shm/.),/dev/shm,/tmp)

$(FUZZ_BUILD)/.fuzz-deps-ok: $(FUZZ_PKGS) pipelines/install-deps.sh | $(DEPS_OK)
	@mkdir -p $(@D)
	@sh pipelines/install-deps.sh $(FUZZ_PKGS)
	@touch $@

ifneq ($(BUILD),$(FUZZ_BUILD))
$(FUZZ_BUILD)/libattncoda.a: FORCE | $(FUZZ_BUILD)/.fuzz-deps-ok
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) OPT='-O1 -g -fno-omit-frame-pointer' \
	    SANFLAGS='-fsanitize=fuzzer-no-link $(FUZZ_SAN) -Wno-pass-failed' $@
endif
FORCE:
.PHONY: FORCE

$(FUZZ_BUILD)/bin/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(FUZZ_BUILD)/libattncoda.a
	@mkdir -p $(@D)
	$(FUZZ_CC) $(filter-out $(CFLAGS) $(SANFLAGS),$(ALL_CFLAGS)) -O1 -g -fsanitize=fuzzer $(FUZZ_SAN) \
	    -o $@ $< $(FUZZ_BUILD)/libattncoda.a $(LDLIBS)

fuzz-build: $(FUZZERS)

fuzz: $(FUZZ_RUN)
	@set -o pipefail; mkdir -p $(FUZZ_BUILD)/artifacts $(FUZZ_BUILD)/logs; fail=0; \
	seeds=$$(mktemp -d $(FUZZ_BUILD)/seeds.XXXXXX); trap 'rm -rf "$$seeds"' EXIT; \
	bash tests/fuzz/seeds.sh $$seeds || exit 1; \
	for f in $(FUZZ_RUN); do n=$$(basename $$f); leak=1; \
	    case " $(FUZZ_NOLEAK) " in *" $$n "*) leak=0;; esac; \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$n; \
	    if { TIMEFORMAT='%U %S'; time TMPDIR=$(FUZZ_TMPDIR) ASAN_OPTIONS=detect_leaks=$$leak $$f -max_total_time=$(FUZZ_SECONDS) -timeout=20 \
	        -rss_limit_mb=4096 -close_fd_mask=3 -detect_leaks=$$leak -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$n- $(FUZZ_BUILD)/corpus/$$n $$seeds/$$n \
	        > $(FUZZ_BUILD)/logs/$$n.log 2>&1; } 2> $(FUZZ_BUILD)/logs/$$n.cpu; then r=ok; \
	    else r=FAILED; fail=1; fi; \
	    printf '%-16s %-6s %10s runs in %4s s (%s CPU s), corpus %s\n' $$n $$r \
	        "$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_BUILD)/logs/$$n.log | tail -1)" \
	        "$$(sed -n 's/^stat::.*total_time.*: *//p; s/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' $(FUZZ_BUILD)/logs/$$n.log | tail -1)" \
	        "$$(awk '{ printf "%.0f", $$1 + $$2 }' $(FUZZ_BUILD)/logs/$$n.cpu)" "$$(ls $(FUZZ_BUILD)/corpus/$$n | wc -l)"; \
	    [ $$r = ok ] || grep -E 'ERROR|runtime error|SUMMARY' $(FUZZ_BUILD)/logs/$$n.log | head -5; \
	done; exit $$fail

clean:
	rm -rf $(BUILD) $(BIN)/* results

-include $(wildcard $(BUILD)/lib/*/*.d $(BUILD)/cli/*.d $(BUILD)/prog/*.d $(BUILD)/tests/*.d)
include pipelines/sched.mk pipelines/corpus.mk pipelines/train.mk pipelines/models.mk pipelines/analysis.mk \
        pipelines/collapse.mk pipelines/theory.mk pipelines/regime.mk pipelines/paper.mk

# The reproduction: every table of results/$(PROFILE)/tables, then the paper's figures and text.
TABLES := $(THEORY_TABLES) $(ANALYSIS_TABLES) $(COLLAPSE_TABLES) $(REGIME_TABLES)
include pipelines/frames.mk pipelines/posenc.mk pipelines/position.mk
all: build models-status $(TABLES) paper
tables: $(TABLES)
.PHONY: tables

# Compare the fresh tables with the frozen ones (tolerances: configs/tolerances.tsv). expected/
# holds every table a bare clone makes, plus the per-model tables of the optional models, which
# are compared only when those models are present; any other frozen table that is missing from the
# results is a failure. Tables with a row per model (regime*.tsv) are frozen and compared on the
# bare clone's models (pipelines/check-tables.sh).
CHECK_ENV = DATA_DIR='$(DATA_DIR)' HF_MODELS_DIR='$(HF_MODELS_DIR)' \
            SKIPPED_OPTIONAL='$(filter $(OPTIONAL_MODELS),$(SKIPPED))' \
            PER_MODEL='sinks reversal cluster prune collapse train frames-heads frames-layers frames-label frames-train frames-emergence bypos' COMBINED='regime.tsv regime-dispersion.tsv' \
            BARE_ROWS='$(TRAINED_DIR)/ pipelines/data/'
check: $(BIN)/tabulate $(if $(filter all tables,$(MAKECMDGOALS)),| $(filter all tables,$(MAKECMDGOALS)))
	@$(CHECK_ENV) pipelines/check-tables.sh check $(EXPECTED) $(R)/check $(TABLES)
	$(BIN)/tabulate --check $(R)/check/expected $(R)/check/results --tolerances configs/tolerances.tsv

# Freeze the current tables as the expected numbers (commit them with the reason for the change).
# The frozen tables of optional models that are absent now are kept. Freezing never runs the
# pipeline: tables that are missing or older than their inputs are refused, so that a source edit
# cannot silently start hours of training (run `make all` first).
freeze:
	@$(MAKE) --no-print-directory -q tables 2>/dev/null || { echo "freeze: $(R)/tables is missing tables or older than its inputs; run 'make all PROFILE=$(PROFILE)' first" >&2; exit 1; }
	$(CHECK_ENV) pipelines/check-tables.sh freeze $(EXPECTED) - $(TABLES)
.PHONY: freeze

# The exhaustive form of tests/t-determinism.sh's libm check: detmath's glibc-based functions at all 2^32
# float inputs, on glibc's FMA path and on its SSE2 path (about 4 minutes).
check-libm: $(BUILD)/tests/test_detmath
	@$(BUILD)/tests/test_detmath --hash 1 >$(BUILD)/libm-native.txt
	@GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA,-AVX $(BUILD)/tests/test_detmath --hash 1 >$(BUILD)/libm-nofma.txt
	@if cmp -s $(BUILD)/libm-native.txt $(BUILD)/libm-nofma.txt; then \
	    echo "check-libm: exp, log, erf, tanh identical on both code paths for all 2^32 floats"; \
	else echo "check-libm: the two code paths differ:"; diff $(BUILD)/libm-native.txt $(BUILD)/libm-nofma.txt; exit 1; fi
.PHONY: check-libm

# Download every optional input from its public source at a fixed revision, checked (SHA-256,
# git blob SHA-1, or the hub's declared value, locked). MODELS=... on the command line: only those
# models' folders (the reference-frame paper's models too, where pipelines/fetch.tsv pins them).
fetch_folder = $(if $(call conf,$(1),path),$(if $(filter data,$(call conf,$(1),store)),models/)$(call conf,$(1),path),$(error make fetch: MODELS: no configs/$(1).conf))
fetch:
	@pipelines/fetch.sh pipelines/fetch.tsv '$(DATA_DIR)' '$(HF_MODELS_DIR)'$(if $(filter command line,$(origin MODELS)), $(foreach m,$(MODELS),$(call fetch_folder,$(m))))

# The paper's models at their real shapes, random weights: the per-model chain measured stage by
# stage (CPU, wall, peak RSS), the figures of docs/SCALE.md; MODELS=... selects, REHEARSE_DIR
# holds the checkpoints (default /tmp/attncoda-rehearse). Long: about 30 CPU-minutes.
rehearse: build $(TEST_DEPS_OK)
	@BIN=$(BIN) PYTHON=$(PYTHON) IMAGES_DIR='$(IMAGES_DIR)' $(if $(filter command line,$(origin MODELS)),MODELS='$(MODELS)') tests/scale/rehearse.sh

# Speed figures: every tests/bench/*.sh prints its own; nothing is asserted.
bench: build $(TEST_DEPS_OK)
	@for b in tests/bench/*.sh; do [ -f "$$b" ] && BIN=$(BIN) BUILD=$(BUILD) PYTHON=$(PYTHON) DATA_DIR='$(DATA_DIR)' bash "$$b"; done; true

# attncoda: the table of contents of the reproduction.
#   make all      build, train, extract, analyse, regenerate paper/ (PROFILE=full|quick)
#   make test     unit, golden and bad-input tests, then the quick profile against expected/
#   make check    compare results/$(PROFILE) against expected/$(PROFILE)
#   make bench    speed figures (printed, never asserted)
#   make sanitize the test suite under ASan+UBSan
.DELETE_ON_ERROR:
.SUFFIXES:
SHELL := /bin/bash

PROFILE  ?= full
R        ?= results/$(PROFILE)
BUILD    ?= build
BIN      ?= bin
CC       ?= cc
OPT      ?= -O2 -g
SANFLAGS ?=
CFLAGS   ?= $(OPT)
PYTHON   ?= /usr/bin/python3
PKGS     := hdf5 gsl jansson libpcre2-8 nettle libutf8proc libzip
DEPS_OK  := $(BUILD)/.deps-ok

ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fopenmp -Isrc/lib \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(CFLAGS) $(SANFLAGS)
LDLIBS     = $(shell pkg-config --libs-only-L hdf5 2>/dev/null) -lhdf5_hl -lhdf5 -lgsl -lopenblas \
             -ljansson -lpcre2-8 -lnettle -lutf8proc -lzip -lm
LDFLAGS   ?=

LIB_SRC  := $(wildcard src/lib/*.c)
LIB_OBJ  := $(patsubst src/lib/%.c,$(BUILD)/lib/%.o,$(LIB_SRC))
LIB_A    := $(BUILD)/libattncoda.a
PROG_SRC := $(wildcard src/*.c)
PROGS    := $(patsubst src/%.c,$(BIN)/%,$(PROG_SRC))
UNIT_SRC := $(wildcard tests/unit/*.c)
UNITS    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
# Object files are kept: deleting them as intermediates would make the next make relink every
# program and so redo every result that depends on one.
.SECONDARY: $(patsubst src/%.c,$(BUILD)/prog/%.o,$(PROG_SRC)) $(patsubst %,%.o,$(UNITS))

.PHONY: build deps test unit sanitize bench clean distclean all check
build: $(PROGS) $(UNITS)

deps: $(DEPS_OK)
$(DEPS_OK): configs/debian-packages.txt pipelines/install-deps.sh
	@mkdir -p $(@D)
	@sh pipelines/install-deps.sh configs/debian-packages.txt
	@touch $@

$(BUILD)/lib/%.o: src/lib/%.c | $(DEPS_OK)
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
# the last script runs the quick profile's `make all` + `make check`. Last line: N passed, N failed.
test: build
	@BIN=$(BIN) BUILD=$(BUILD) PYTHON=$(PYTHON) tests/run

# The same without the pipeline run (for sanitizer builds).
unit: build
	@SKIP_PIPELINE=1 BIN=$(BIN) BUILD=$(BUILD) PYTHON=$(PYTHON) tests/run

sanitize:
	$(MAKE) BUILD=build/san BIN=build/san/bin OPT='-O1 -g -fno-omit-frame-pointer' \
	    SANFLAGS='-fsanitize=address,undefined -fno-sanitize-recover=undefined' unit

clean:
	rm -rf $(BUILD) $(BIN)/* results

-include $(wildcard $(BUILD)/lib/*.d $(BUILD)/prog/*.d $(BUILD)/tests/*.d)
include pipelines/corpus.mk pipelines/train.mk pipelines/models.mk pipelines/analysis.mk \
        pipelines/collapse.mk pipelines/theory.mk pipelines/regime.mk pipelines/paper.mk

# The reproduction: every table of results/$(PROFILE)/tables, then the paper's figures and text.
TABLES := $(THEORY_TABLES) $(ANALYSIS_TABLES) $(COLLAPSE_TABLES) $(REGIME_TABLES)
all: build models-status $(TABLES) paper
tables: $(TABLES)
.PHONY: tables

# Compare the fresh tables with the frozen ones (tolerances: configs/tolerances.tsv).
check: $(BIN)/tabulate
	$(BIN)/tabulate --check expected/$(PROFILE) $(R)/tables --tolerances configs/tolerances.tsv

# Freeze the current tables as the expected numbers (commit them with the reason for the change).
freeze: $(TABLES)
	@mkdir -p expected/$(PROFILE)
	rm -f expected/$(PROFILE)/*.tsv
	cp $(TABLES) expected/$(PROFILE)/
.PHONY: freeze

# Speed figures: every tests/bench/*.sh prints its own; nothing is asserted.
bench: build
	@for b in tests/bench/*.sh; do [ -f "$$b" ] && BIN=$(BIN) BUILD=$(BUILD) PYTHON=$(PYTHON) bash "$$b"; done; true

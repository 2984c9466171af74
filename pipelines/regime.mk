# Regime map and frozen predictor (METHODS §5.6). The development set is the trained GPT-2-style
# ladder; everything else is held out. Thresholds are fitted once on the development models by
# `make regime-fit` into configs/regime-PROFILE.conf (committed); `make all` only reads them.
REGIME_CONF    := configs/regime-$(PROFILE).conf
DEV_MODELS     := $(foreach m,$(TRAINED),$(if $(filter gpt2,$(call conf,$(m),family)),$(m)))
HELDOUT_MODELS := $(filter-out $(DEV_MODELS),$(MODELS))
comma := ,
empty :=
space := $(empty) $(empty)
joined = $(subst $(space),$(comma),$(strip $(1)))
PRUNE_TABLES := $(foreach m,$(PPL_MODELS),$(R)/tables/prune-$(m).tsv)

$(R)/tables/regime-dispersion.tsv: $(foreach m,$(MODELS),$(R)/dist/$(m).h5) $(BIN)/regime
	@mkdir -p $(@D)
	$(BIN)/regime $(foreach m,$(MODELS),$(R)/dist/$(m).h5) > $@

$(R)/tables/regime.tsv: $(REGIME_CONF) $(PRUNE_TABLES) $(foreach m,$(MODELS),$(R)/dist/$(m).h5) $(BIN)/regime
	@mkdir -p $(@D)
	$(BIN)/regime --thresholds $(REGIME_CONF) --pruning $(call joined,$(PRUNE_TABLES)) \
	    $(foreach m,$(MODELS),$(R)/dist/$(m).h5) > $@

$(REGIME_CONF):
	@echo "regime: $@ is missing; fit it once on the development models with 'make regime-fit PROFILE=$(PROFILE)' and commit it" >&2
	@exit 1

# Deliberately not a prerequisite of anything: the thresholds are frozen before they are tested.
regime-fit: $(foreach m,$(DEV_MODELS),$(R)/dist/$(m).h5 $(R)/tables/prune-$(m).tsv) $(BIN)/regime
	$(BIN)/regime --fit --dev $(call joined,$(foreach m,$(DEV_MODELS),$(R)/dist/$(m).h5)) \
	    --pruning $(call joined,$(foreach m,$(DEV_MODELS),$(R)/tables/prune-$(m).tsv)) -o $(REGIME_CONF)
.PHONY: regime-fit

REGIME_TABLES := $(R)/tables/regime-dispersion.tsv $(R)/tables/regime.tsv

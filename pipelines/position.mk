# Sink by position (issue 45; docs/FORMAT.md, `decompose --by-position`): per language model, sink
# mass, H, H_b(s) and H(π) in log-spaced query-position bins, from sampled query rows at the
# model's long context. Included after TABLES is set (it adds to it).
#   context: the model's `long_context` (configs/NAME.conf), else its training `context`
#            (the models trained here); models with neither are left out
#   inputs:  text models: LONG_S windows of the KJV validation books of that many tokens (seed 3);
#            sample models: LONG_S sequences sampled from the model (seed 3)
#   rows:    extract --queries LONG_Q --query-seed 1 (stratified; docs/EXTRACT.md), every layer
#   → tables/bypos-NAME.tsv and figures/bypos-NAME.png (pipelines/paper/bypos.gp)
LONG_S_full  := 16
LONG_S_quick := 4
LONG_S       := $(LONG_S_$(PROFILE))
LONG_Q       := 64
long_context = $(or $(call conf,$(1),long_context),$(call conf,$(1),context))
BYPOS_MODELS := $(foreach m,$(filter-out $(IMAGE_MODELS),$(MODELS)),$(if $(call long_context,$(m)),$(m)))

define BYPOS_template
$(1)_LONG_T := $$(call long_context,$(1))
ifeq ($$(call conf,$(1),input),sample)
$(R)/inputs/$(1)-long.ids: $$($(1)_DEP) $(BIN)/sample
	@mkdir -p $$(@D)
	$(BIN)/sample --model $$($(1)_PATH) -n $(LONG_S) --steps $$($(1)_LONG_T) --seed 3 --temperature 1.0 $$@
$(1)_IN_LONG  := --ids $(R)/inputs/$(1)-long.ids
$(1)_DEP_LONG := $(R)/inputs/$(1)-long.ids
else
$(1)_IN_LONG  := --text $(KJV_VALID) -S $(LONG_S) -T $$($(1)_LONG_T) --seed 3
$(1)_DEP_LONG := $(KJV_VALID)
endif

$(R)/attn-long/$(1).h5: $$($(1)_DEP) $$($(1)_DEP_LONG) $(BIN)/extract
	@mkdir -p $$(@D)
	$(BIN)/extract --model $$($(1)_PATH) $$($(1)_IN_LONG) --queries $(LONG_Q) --query-seed 1 $$@

$(R)/tables/bypos-$(1).tsv: $(R)/attn-long/$(1).h5 $(BIN)/decompose
	@mkdir -p $(R)/tables $(R)/decomp-long
	$(BIN)/decompose --by-position $$@ $$< $(R)/decomp-long/$(1).h5

$(PD)/figures/bypos-$(1).png: $(R)/tables/bypos-$(1).tsv pipelines/paper/bypos.gp pipelines/paper/common.gp
	$$(call paper_plot,in='$$<'; name='$(1) (T = $$($(1)_LONG_T))',pipelines/paper/bypos.gp)
endef
$(foreach m,$(BYPOS_MODELS),$(eval $(call BYPOS_template,$(m))))

BYPOS_TABLES  := $(foreach m,$(BYPOS_MODELS),$(R)/tables/bypos-$(m).tsv)
BYPOS_FIGURES := $(foreach m,$(BYPOS_MODELS),$(PD)/figures/bypos-$(m).png)
TABLES += $(BYPOS_TABLES)
$(PD)/RESULTS.md: $(BYPOS_FIGURES)

.PHONY: bypos
bypos: $(BYPOS_TABLES) $(BYPOS_FIGURES)
all: $(BYPOS_FIGURES)

# Entropy collapse over training (METHODS §5.5): every checkpoint of each trained model is run on
# the same token windows, and `collapse` splits the entropy change into sink and content parts.
define COLLAPSE_template
$(R)/tables/collapse-$(1).tsv $(R)/plots/collapse-$(1).tsv &: $(R)/models/$(1)/.done $(KJV_VALID) $(BIN)/extract $(BIN)/collapse
	@mkdir -p $(R)/tables $(R)/plots $(R)/collapse/$(1)
	$$(call job_env,collapse-$(1),$$(call model_work,$(R)/models/$(1),$(NSEQ))) pipelines/collapse.sh $(BIN) $(R)/models/$(1) $(R)/collapse/$(1) $(R)/tables/collapse-$(1).tsv $(R)/plots/collapse-$(1).tsv \
	    --text $(KJV_VALID) -S $(NSEQ) -T $(TOKENS) --seed 1

$(R)/tables/train-$(1).tsv: $(R)/models/$(1)/.done
	@mkdir -p $$(@D)
	cp $(R)/models/$(1)/report.tsv $$@
endef
TRAINED := $(foreach m,$(MODELS),$(if $(filter trained,$(call conf,$(m),kind)),$(m)))
$(foreach m,$(TRAINED),$(eval $(call COLLAPSE_template,$(m))))
COLLAPSE_TABLES := $(foreach m,$(TRAINED),$(R)/tables/collapse-$(m).tsv $(R)/tables/train-$(m).tsv)

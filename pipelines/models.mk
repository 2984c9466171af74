# Models and their inputs. Every model has configs/NAME.conf (key = value lines):
#   kind  = trained | llama2c | gguf | hf      input = text | sample
#   path  = file or directory under MODELS_DIR (not for trained models)
#   role  = dev | heldout                      (regime predictor split, METHODS §5.6)
# Trained models come from pipelines/train.mk (results/PROFILE/models/NAME); the others are read
# from MODELS_DIR, and a missing one is skipped with one line.
MODELS_DIR ?= $(if $(wildcard models/*),models,../shared/data/models)
R          ?= results/$(PROFILE)
TOKENS     := 128
NSEQ_full  := 64
NSEQ_quick := 16
NSEQ       := $(NSEQ_$(PROFILE))
PRETRAINED := stories260K aidreams260K
PAPER_MODELS := gpt2 pythia-70m pythia-160m pythia-410m pythia-1b pythia-1.4b qwen2.5-0.5b \
                llama-3.2-1b bert-base-uncased

conf = $(strip $(shell sed -n 's/^$(2)[[:space:]]*=[[:space:]]*//p' configs/$(1).conf 2>/dev/null))

model_present = $(if $(filter trained,$(call conf,$(1),kind)),yes,$(if $(wildcard $(MODELS_DIR)/$(call conf,$(1),path)),yes))
ALL_CANDIDATES := $(TRAIN_MODELS_$(PROFILE)) $(PRETRAINED) $(PAPER_MODELS)
MODELS  := $(foreach m,$(ALL_CANDIDATES),$(if $(call model_present,$(m)),$(m)))
SKIPPED := $(filter-out $(MODELS),$(ALL_CANDIDATES))

.PHONY: models-status
models-status:
	@$(foreach m,$(MODELS),echo "model $(m): $(call conf,$(m),kind), role $(call conf,$(m),role)";)
	@$(foreach m,$(SKIPPED),echo "skip $(m): $(MODELS_DIR)/$(call conf,$(m),path) not found (set MODELS_DIR to a folder holding it)";)

# MODEL_template NAME: where the model lives, and the token windows it is analysed on.
#   text models: windows of the KJV validation books (seed 1 for attention, seed 2 for perplexity)
#   sample models: sequences sampled from the model from BOS (seed 1, and seed 2 for perplexity)
define MODEL_template
$(1)_KIND := $$(call conf,$(1),kind)
$(1)_PATH := $$(if $$(filter trained,$$($(1)_KIND)),$(R)/models/$(1),$(MODELS_DIR)/$$(call conf,$(1),path))
$(1)_DEP  := $$(if $$(filter trained,$$($(1)_KIND)),$(R)/models/$(1)/.done,$$($(1)_PATH))
ifeq ($$(call conf,$(1),input),sample)
$(1)_IN_ATTN := --ids $(R)/inputs/$(1)-seed1.ids
$(1)_IN_PPL  := --ids $(R)/inputs/$(1)-seed2.ids
$(1)_IN_DEP  := $(R)/inputs/$(1)-seed1.ids $(R)/inputs/$(1)-seed2.ids
else
$(1)_IN_ATTN := --text $(KJV_VALID) -S $(NSEQ) -T $(TOKENS) --seed 1
$(1)_IN_PPL  := --text $(KJV_VALID) -S $(NSEQ) -T $(TOKENS) --seed 2
$(1)_IN_DEP  := $(KJV_VALID)
endif

$(R)/inputs/$(1)-seed%.ids: $$($(1)_DEP) $(BIN)/sample
	@mkdir -p $$(@D)
	$(BIN)/sample --model $$($(1)_PATH) -n $(NSEQ) --steps $(TOKENS) --seed $$* --temperature 1.0 $$@

$(R)/attn/$(1).h5: $$($(1)_DEP) $$($(1)_IN_DEP) $(BIN)/extract
	@mkdir -p $$(@D)
	$(BIN)/extract --model $$($(1)_PATH) $$($(1)_IN_ATTN) $$@
endef
$(foreach m,$(MODELS),$(eval $(call MODEL_template,$(m))))

# Models and their inputs. Every model has configs/NAME.conf (key = value lines):
#   kind  = trained | llama2c | gguf | hf      input = text | sample | images
#   store = embedded | data | hf               path  = file or directory under that store
#   role  = dev | heldout                      (regime predictor split, METHODS §5.6)
# Trained models come from pipelines/train.mk (results/PROFILE/models/NAME). The others are read
# from their store, one documented place each, so that pointing at one never hides another:
#   embedded  pipelines/data/models   carried by the repository (stories260K; pipelines/data/README.md)
#   data      $(DATA_DIR)/models      optional data (aidreams260K), laid out as pipelines/data
#   hf        $(HF_MODELS_DIR)        the paper's Hugging Face checkpoints, one folder per model
# `make fetch` downloads the optional files (pipelines/fetch.tsv). A missing optional model is
# skipped with one line; its tables are then left out of `make check`.
EMBED_DIR     := pipelines/data
DATA_DIR      ?= $(HOME)/.cache/attncoda/data
HF_MODELS_DIR ?= $(HOME)/.cache/attncoda/hf
override DATA_DIR      := $(patsubst %/,%,$(DATA_DIR))
override HF_MODELS_DIR := $(patsubst %/,%,$(HF_MODELS_DIR))
ifdef MODELS_DIR
$(error MODELS_DIR was split in two: HF_MODELS_DIR for the Hugging Face checkpoints, DATA_DIR for the optional data (see README.md))
endif
R          ?= results/$(PROFILE)
TOKENS     := 128
NSEQ_full  := 64
NSEQ_quick := 16
NSEQ       := $(NSEQ_$(PROFILE))
PRETRAINED := stories260K aidreams260K
PAPER_MODELS := gpt2 pythia-70m pythia-160m pythia-410m pythia-1b pythia-1.4b qwen2.5-0.5b \
                llama-3.2-1b bert-base-uncased vit-base-patch16-224
# The reference-frame paper's models (Ruscio et al. 2025, METHODS §7) beyond those above.
FRAMES_PAPER_MODELS := phi-2 mistral-7b-v0.1 gemma-7b xlm-roberta-large llama-3.1-8b qwen2.5-7b
# Images of the image models (input = images): the carried CC0 / public-domain set by default.
IMAGES_DIR ?= $(EMBED_DIR)/images
override IMAGES_DIR := $(patsubst %/,%,$(IMAGES_DIR))

conf = $(strip $(shell sed -n 's/^$(2)[[:space:]]*=[[:space:]]*//p' configs/$(1).conf 2>/dev/null))

store_dir_embedded := $(EMBED_DIR)/models
store_dir_data     := $(DATA_DIR)/models
store_dir_hf       := $(HF_MODELS_DIR)
store_var_data     := DATA_DIR
store_var_hf       := HF_MODELS_DIR
model_file    = $(store_dir_$(call conf,$(1),store))/$(call conf,$(1),path)
model_present = $(if $(filter trained,$(call conf,$(1),kind)),yes,$(if $(wildcard $(call model_file,$(1))),yes))
ALL_CANDIDATES := $(TRAIN_MODELS_$(PROFILE)) $(PRETRAINED) $(PAPER_MODELS) $(FRAMES_PAPER_MODELS)
MODELS  := $(foreach m,$(ALL_CANDIDATES),$(if $(call model_present,$(m)),$(m)))
SKIPPED := $(filter-out $(MODELS),$(ALL_CANDIDATES))
# Image classifiers are scored by top-1 agreement, not perplexity: the perplexity-based tables
# (regime, the paper's pruning figures) take only the other models.
IMAGE_MODELS := $(foreach m,$(MODELS),$(if $(filter images,$(call conf,$(m),input)),$(m)))
PPL_MODELS   := $(filter-out $(IMAGE_MODELS),$(MODELS))
# `make fetch` knows a model when pipelines/fetch.tsv lists files under its path.
FETCH_DESTS := $(shell grep -v '^\#' pipelines/fetch.tsv 2>/dev/null | cut -f2)
fetchable    = $(filter $(if $(filter data,$(call conf,$(1),store)),models/)$(call conf,$(1),path)%,$(FETCH_DESTS))
# Optional models: those read from DATA_DIR or HF_MODELS_DIR.
OPTIONAL_MODELS := $(foreach m,$(ALL_CANDIDATES),$(if $(filter data hf,$(call conf,$(m),store)),$(m)))

.PHONY: models-status
models-status:
	@$(foreach m,$(MODELS),echo "model $(m): $(call conf,$(m),kind), role $(call conf,$(m),role)";)
	@$(foreach m,$(filter $(OPTIONAL_MODELS),$(SKIPPED)),echo "skip $(m): $(call model_file,$(m)) not found (optional: set $(store_var_$(call conf,$(m),store))$(if $(call fetchable,$(m)),$(comma) or run make fetch,; docs/PIPELINE.md says how to get it))";)
	@$(foreach m,$(filter-out $(OPTIONAL_MODELS),$(SKIPPED)),echo "missing $(m): $(call model_file,$(m)) should be part of the repository" >&2;)

# MODEL_template NAME: where the model lives, and the token windows it is analysed on.
#   text models: windows of the KJV validation books (seed 1 for attention, seed 2 for perplexity)
#   sample models: sequences sampled from the model from BOS (seed 1, and seed 2 for perplexity)
#   image models: every image of IMAGES_DIR, for the attention and for the top-1 agreement
define MODEL_template
$(1)_KIND := $$(call conf,$(1),kind)
$(1)_PATH := $$(if $$(filter trained,$$($(1)_KIND)),$(R)/models/$(1),$$(call model_file,$(1)))
$(1)_DEP  := $$(if $$(filter trained,$$($(1)_KIND)),$(R)/models/$(1)/.done,$$($(1)_PATH))
ifeq ($$(call conf,$(1),input),images)
$(1)_IN_ATTN := --images $(IMAGES_DIR)
$(1)_IN_PPL  := --images $(IMAGES_DIR)
$(1)_IN_DEP  := $$(wildcard $(IMAGES_DIR)/*)
else ifeq ($$(call conf,$(1),input),sample)
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

# EXTRACT_SHARDS > 1 (pipelines/sched.mk): ranges of windows as jobs of their own, then the merge
# into the file one run writes; image models stay one run (extract --seqs takes no --images).
$(1)_SHARDS := $$(if $$(filter-out 1,$(EXTRACT_SHARDS)),$$(if $$(filter images,$$(call conf,$(1),input)),,$$(call seq_ranges,$(NSEQ),$(EXTRACT_SHARDS))))
ifeq ($$($(1)_SHARDS),)
$(R)/attn/$(1).h5: $$($(1)_DEP) $$($(1)_IN_DEP) $(BIN)/extract
	@mkdir -p $$(@D)
	$$(call job,extract-$(1),$$(call model_work,$$($(1)_PATH),$(NSEQ)) --out $$@) $(BIN)/extract --model $$($(1)_PATH) $$($(1)_IN_ATTN) $$@
else
$(1)_SHARD_FILES := $$(foreach r,$$($(1)_SHARDS),$(R)/attn/$(1).part/$$(r).h5)
.SECONDARY: $$($(1)_SHARD_FILES)
$(R)/attn/$(1).h5: $$($(1)_SHARD_FILES) $(BIN)/extract
	$(BIN)/extract --merge $$@ $$($(1)_SHARD_FILES)
	rm -rf $(R)/attn/$(1).part
$(R)/attn/$(1).part/%.h5: $$($(1)_DEP) $$($(1)_IN_DEP) $(BIN)/extract
	@mkdir -p $$(@D)
	$$(call job,extract-$(1)-$$*,$$(call model_work,$$($(1)_PATH),$(NSEQ)) --out $$@) $(BIN)/extract --model $$($(1)_PATH) $$($(1)_IN_ATTN) --seqs $$(subst -,:,$$*) $$@
endif
endef
$(foreach m,$(MODELS),$(eval $(call MODEL_template,$(m))))

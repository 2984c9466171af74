# Per-model analysis (METHODS §2–§5.4): sink/content profile, head distances, reversal rates,
# clustering, pruning orders and the perplexity each pruning order gives.
# Frozen tables go to $(R)/tables/ (compared with expected/$(PROFILE)/ by `make check`).
SPARSITY := 0.1,0.2,0.3

define ANALYSIS_template
$(R)/decomp/$(1).h5 $(R)/tables/sinks-$(1).tsv &: $(R)/attn/$(1).h5 $(BIN)/decompose
	@mkdir -p $(R)/decomp $(R)/tables
	$$(call job,decompose-$(1),--cpus $(JOB_CPUS) --out $(R)/tables/sinks-$(1).tsv --out $(R)/decomp/$(1).h5) $(BIN)/decompose --tsv $(R)/tables/sinks-$(1).tsv $$< $(R)/decomp/$(1).h5

# DIST_SHARDS > 1 (pipelines/sched.mk): ranges of windows as jobs, joined by distance --merge
$(1)_DSHARDS := $$(if $$(filter-out 1,$(DIST_SHARDS)),$$(if $$(filter images,$$(call conf,$(1),input)),,$$(call seq_ranges,$(NSEQ),$(DIST_SHARDS))))
ifeq ($$($(1)_DSHARDS),)
$(R)/dist/$(1).h5: $(R)/attn/$(1).h5 $(BIN)/distance
	@mkdir -p $$(@D)
	$$(call job,distance-$(1),--cpus $(JOB_CPUS) --out $$@) $(BIN)/distance $$< $$@
else
$(1)_DSHARD_FILES := $$(foreach r,$$($(1)_DSHARDS),$(R)/dist/$(1).part/$$(r).h5)
.SECONDARY: $$($(1)_DSHARD_FILES)
$(R)/dist/$(1).h5: $$($(1)_DSHARD_FILES) $(BIN)/distance
	$(BIN)/distance --merge $$@ $$($(1)_DSHARD_FILES)
	rm -rf $(R)/dist/$(1).part
$(R)/dist/$(1).part/%.h5: $(R)/attn/$(1).h5 $(BIN)/distance
	@mkdir -p $$(@D)
	$$(call job,distance-$(1)-$$*,--cpus $(JOB_CPUS) --out $$@) $(BIN)/distance --seqs $$(subst -,:,$$*) $$< $$@ >/dev/null
endif

$(R)/tables/reversal-$(1).tsv: $(R)/dist/$(1).h5 $(BIN)/reversal
	@mkdir -p $$(@D)
	$(BIN)/reversal --seed 1 $$< > $$@

$(R)/tables/cluster-$(1).tsv $(R)/plots/heads-$(1).tsv &: $(R)/dist/$(1).h5 $(BIN)/cluster
	@mkdir -p $(R)/tables $(R)/plots
	$(BIN)/cluster --heads-tsv $(R)/plots/heads-$(1).tsv $$< > $(R)/tables/cluster-$(1).tsv

# Greedy pruning orders and their masks, then the held-out perplexity of every mask.
$(R)/prune/$(1)/order.tsv: $(R)/dist/$(1).h5 $(BIN)/prune-rank
	@mkdir -p $(R)/prune/$(1)/masks
	$(BIN)/prune-rank --sparsity $(SPARSITY) --masks-dir $(R)/prune/$(1)/masks $$< > $$@

$(R)/tables/prune-$(1).tsv: $(R)/prune/$(1)/order.tsv $$($(1)_IN_DEP) $$($(1)_DEP) $(BIN)/extract
	@mkdir -p $(R)/tables
	$$(call job_env,ppl-$(1),$$(call model_work,$$($(1)_PATH),$(NSEQ))) pipelines/perplexity.sh $$($(1)_PATH) $(BIN)/extract $$($(1)_PATH) $(R)/prune/$(1)/masks $$@ $$($(1)_IN_PPL)

$(1)-analysis: $(R)/tables/sinks-$(1).tsv $(R)/tables/reversal-$(1).tsv \
               $(R)/tables/cluster-$(1).tsv $(R)/tables/prune-$(1).tsv
.PHONY: $(1)-analysis
endef
$(foreach m,$(MODELS),$(eval $(call ANALYSIS_template,$(m))))

ANALYSIS_TABLES := $(foreach m,$(MODELS),$(R)/tables/sinks-$(m).tsv $(R)/tables/reversal-$(m).tsv \
                     $(R)/tables/cluster-$(m).tsv $(R)/tables/prune-$(m).tsv)

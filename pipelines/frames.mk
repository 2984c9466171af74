# Reference frames (METHODS §7, docs/FRAMES.md). Included after TABLES is set (it adds to it).
#   every model: `frames` on its attention file (the windows of models.mk) with the model's own
#     tokenizer → tables/frames-{heads,layers,label}-NAME.tsv
#   every trained model (§7.4): every checkpoint on the same windows (the files collapse.sh
#     extracts) → tables/frames-train-NAME.tsv (label per checkpoint), tables/frames-emergence-NAME.tsv
#     (emergence step) and the figure of each head's label over training, figures/frames-NAME.png
#   the paper: figures/frames-keys-NAME.png (layer × key map of r and z), data/frames.tsv,
#     data/frames-emergence.tsv and their tables; RESULTS.md's frames section (paper.py)
# FRAMES_OPTS: extra frames options (thresholds), the same for every model and checkpoint.
FRAMES_OPTS ?=
# the tokenizer frames reads: the HF directory, the GGUF file, or the tok*.bin beside a llama2.c .bin
frames_tok = $(strip $(if $(filter trained hf,$($(1)_KIND)),$($(1)_PATH),$(if $(filter gguf,$($(1)_KIND)),$($(1)_PATH),$(firstword $(wildcard $(dir $($(1)_PATH))tok*.bin)))))

define FRAMES_MODEL_template
$(R)/tables/frames-heads-$(1).tsv $(R)/tables/frames-layers-$(1).tsv $(R)/tables/frames-label-$(1).tsv \
        $(R)/plots/frames-keys-$(1).tsv &: $(R)/attn/$(1).h5 $(BIN)/frames
	@mkdir -p $(R)/tables $(R)/plots
	$$(call job,frames-$(1),--cpus $(JOB_CPUS) $$(foreach f,heads layers label,--out $(R)/tables/frames-$$(f)-$(1).tsv) --out $(R)/plots/frames-keys-$(1).tsv) $(BIN)/frames $(FRAMES_OPTS) $$(if $$(call frames_tok,$(1)),--tokenizer $$(call frames_tok,$(1))) \
	    --heads $(R)/tables/frames-heads-$(1).tsv --layers $(R)/tables/frames-layers-$(1).tsv \
	    --label $(R)/tables/frames-label-$(1).tsv --keys $(R)/plots/frames-keys-$(1).tsv $(R)/attn/$(1).h5

$(PD)/figures/frames-keys-$(1).png: $(R)/plots/frames-keys-$(1).tsv pipelines/paper/frames-keys.gp pipelines/paper/common.gp
	$$(call paper_plot,in='$$<'; name='$(1)',pipelines/paper/frames-keys.gp)
endef

define FRAMES_TRAIN_template
$(R)/tables/frames-train-$(1).tsv $(R)/tables/frames-emergence-$(1).tsv $(R)/plots/frames-$(1).tsv &: \
        $(R)/tables/collapse-$(1).tsv $(R)/models/$(1)/.done $(KJV_VALID) $(BIN)/extract $(BIN)/frames pipelines/frames.sh
	@mkdir -p $(R)/tables $(R)/plots $(R)/collapse/$(1)
	$$(call job,frames-train-$(1),--cpus 1 --out $(R)/tables/frames-train-$(1).tsv --out $(R)/tables/frames-emergence-$(1).tsv --out $(R)/plots/frames-$(1).tsv) pipelines/frames.sh $(BIN) $(R)/models/$(1) $(R)/collapse/$(1) $(R)/tables/frames-train-$(1).tsv \
	    $(R)/tables/frames-emergence-$(1).tsv $(R)/plots/frames-$(1).tsv -- $(FRAMES_OPTS) -- \
	    --text $(KJV_VALID) -S $(NSEQ) -T $(TOKENS) --seed 1

$(PD)/figures/frames-$(1).png: $(R)/plots/frames-$(1).tsv pipelines/paper/frames.gp pipelines/paper/common.gp
	$$(call paper_plot,in='$$<'; name='$(1)',pipelines/paper/frames.gp)
endef
$(foreach m,$(MODELS),$(eval $(call FRAMES_MODEL_template,$(m))))
$(foreach m,$(TRAINED),$(eval $(call FRAMES_TRAIN_template,$(m))))

FRAMES_TABLES  := $(foreach m,$(MODELS),$(R)/tables/frames-heads-$(m).tsv $(R)/tables/frames-layers-$(m).tsv \
                                        $(R)/tables/frames-label-$(m).tsv) \
                  $(foreach m,$(TRAINED),$(R)/tables/frames-train-$(m).tsv $(R)/tables/frames-emergence-$(m).tsv)
FRAMES_FIGURES := $(foreach m,$(TRAINED),$(PD)/figures/frames-$(m).png) \
                  $(foreach m,$(MODELS),$(PD)/figures/frames-keys-$(m).png)
TABLES += $(FRAMES_TABLES)

# The paper's frames section (pipelines/paper/paper.py sec_frames): one row per model, one per
# trained model's emergence step; paper.mk's pattern rules make their Markdown and LaTeX.
PAPER_CAPTION_frames           := Reference-frame label per model (METHODS §7.2): label, runner-up, sink heads of layers ≥ 1
PAPER_CAPTION_frames-emergence := Emergence step of the reference-frame label over training (METHODS §7.4)
ifneq ($(strip $(MODELS)),)
$(PD)/data/frames.tsv: $(foreach m,$(MODELS),$(R)/tables/frames-label-$(m).tsv) $(PAPER_PY)
	$(PAPER_RUN) frames $@ $(filter %.tsv,$^)
FRAMES_PAPER := $(PD)/tables/frames.md $(PD)/tables/frames.tex
endif
ifneq ($(strip $(TRAINED)),)
$(PD)/data/frames-emergence.tsv: $(foreach m,$(TRAINED),$(R)/tables/frames-emergence-$(m).tsv) $(PAPER_PY)
	$(PAPER_RUN) frames-emergence $@ $(filter %.tsv,$^)
FRAMES_PAPER += $(PD)/tables/frames-emergence.md $(PD)/tables/frames-emergence.tex
endif
$(PD)/RESULTS.md: $(FRAMES_FIGURES) $(FRAMES_PAPER)

.PHONY: frames
frames: $(FRAMES_TABLES) $(FRAMES_FIGURES) $(FRAMES_PAPER)
all: $(FRAMES_FIGURES)

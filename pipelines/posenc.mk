# The matched position-encoding set (METHODS §7.4, issue 14 item 3; docs/FRAMES.md "Position
# encodings side by side"). Included after frames.mk (it adds to TABLES).
#   six models, configs/kjv-pos-POS.conf: one recipe that differs only in `pos`, trained for the
#     profile by train.mk's pattern rule. They are not TRAIN_MODELS: the other analyses and the
#     regime split never see them.
#   each: the attention file on the windows of the other text models (models.mk MODEL_template),
#     `frames` on it (frames.mk FRAMES_MODEL_template → tables/frames-{heads,layers,label}-NAME.tsv),
#     every checkpoint extracted once by collapse.sh (collapse.mk COLLAPSE_template) and labelled
#     by frames.sh (FRAMES_TRAIN_template → frames-train-NAME.tsv, frames-emergence-NAME.tsv and
#     the figure of each head's label over training)
#   tables/frames-pos.tsv: one row per position encoding (pipelines/posenc.sh), frozen by
#     `make freeze` like every table of TABLES
#   the paper: data/frames-pos.tsv, its tables, and RESULTS.md's matched-set part of the frames
#     section (paper.py sec_frames_pos)
# `make frames-pos` makes all of it.
POS_KINDS  := learned sinusoidal rope rope-ntk alibi none
POS_MODELS := $(foreach p,$(POS_KINDS),kjv-pos-$(p))

$(foreach m,$(POS_MODELS),$(eval $(call MODEL_template,$(m))))
$(foreach m,$(POS_MODELS),$(eval $(call COLLAPSE_template,$(m))))
$(foreach m,$(POS_MODELS),$(eval $(call FRAMES_MODEL_template,$(m))))
$(foreach m,$(POS_MODELS),$(eval $(call FRAMES_TRAIN_template,$(m))))

POS_TABLE := $(R)/tables/frames-pos.tsv
$(POS_TABLE): $(foreach m,$(POS_MODELS),$(R)/models/$(m)/.done $(R)/tables/frames-label-$(m).tsv \
                                        $(R)/tables/frames-emergence-$(m).tsv) pipelines/posenc.sh $(BIN)/extract
	@mkdir -p $(@D)
	pipelines/posenc.sh $(BIN) $@ $(foreach m,$(POS_MODELS),$(R)/models/$(m) \
	    $(R)/tables/frames-label-$(m).tsv $(R)/tables/frames-emergence-$(m).tsv)
TABLES += $(POS_TABLE)

PAPER_CAPTION_frames-pos := Matched position-encoding set (METHODS §7.4): one recipe, differing only in pos; model label, runner-up, sink heads of layers ≥ 1, emergence step, validation loss (nats/byte)
$(PD)/data/frames-pos.tsv: $(POS_TABLE) $(PAPER_PY)
	$(PAPER_RUN) frames-pos $@ $<
POS_PAPER   := $(PD)/tables/frames-pos.md $(PD)/tables/frames-pos.tex
POS_FIGURES := $(foreach m,$(POS_MODELS),$(PD)/figures/frames-$(m).png)
$(PD)/RESULTS.md: $(POS_PAPER) $(POS_FIGURES)

.PHONY: frames-pos
frames-pos: $(POS_TABLE) $(POS_PAPER) $(POS_FIGURES)
all: $(POS_FIGURES)

# Generated paper (docs/PAPER.md): derived tables (TSV → Markdown and LaTeX through `tabulate`),
# gnuplot figures and RESULTS.md, all from the tables in $(R)/tables and $(R)/plots.
#   PAPER_DIR = paper (PROFILE=full) or $(R)/paper (quick):
#     data/*.tsv     derived tables (pipelines/paper/paper.py), the figures' and tables' input
#     tables/*.md    Markdown, tables/*.tex LaTeX tabular environments
#     figures/*.png  gnuplot (pipelines/paper/*.gp, pngcairo)
#     RESULTS.md     every experiment: table, figures, this run's numbers beside the paper's
# The file also runs on its own over ready tables (tests/t-paper.sh):
#   make -f pipelines/paper.mk paper R=DIR PAPER_DIR=OUT MODELS='a b' TRAINED='a' BIN=bin
# Optional inputs: the regime table (regime.tsv when $(REGIME_CONF) exists, else the dispersion
# table; PAPER_REGIME_IN= for none); a trained model's collapse/train tables exist only for
# $(TRAINED). A missing section is stated in RESULTS.md, not an error.
.DELETE_ON_ERROR:
PYTHON      ?= /usr/bin/python3
BIN         ?= bin
PROFILE     ?= full
R           ?= results/$(PROFILE)
REGIME_CONF ?= configs/regime-$(PROFILE).conf
GNUPLOT     ?= gnuplot
PAPER_DIR   ?= $(if $(filter full,$(PROFILE)),paper,$(R)/paper)
# the models with a perplexity pruning table (models.mk leaves out the image classifiers)
PPL_MODELS  ?= $(MODELS)

PD          := $(PAPER_DIR)
PAPER_PY    := pipelines/paper/paper.py
PAPER_RUN   := $(PYTHON) $(PAPER_PY)
PAPER_TAB   := $(R)/tables
PAPER_PLOT  := $(R)/plots
PAPER_REGIME_IN ?= $(if $(MODELS),$(if $(wildcard $(REGIME_CONF)),$(PAPER_TAB)/regime.tsv,$(PAPER_TAB)/regime-dispersion.tsv))
PAPER_TAU   := $(if $(and $(filter %/regime.tsv,$(PAPER_REGIME_IN)),$(wildcard $(REGIME_CONF))),$(REGIME_CONF))

# Derived tables combining one input table per model: NAME KIND MODELS
define PAPER_COMBINED
$(PD)/data/$(1).tsv: $(foreach m,$(3),$(PAPER_TAB)/$(2)-$(m).tsv) $(PAPER_PY)
	$(PAPER_RUN) $(1) $$@ $$(filter %.tsv,$$^)
PAPER_DATA += $(PD)/data/$(1).tsv
endef
PAPER_DATA :=
$(if $(MODELS),$(foreach t,reversal:reversal sinks:sinks ari:cluster,\
    $(eval $(call PAPER_COMBINED,$(word 1,$(subst :, ,$(t))),$(word 2,$(subst :, ,$(t))),$(MODELS)))))
$(if $(PPL_MODELS),$(eval $(call PAPER_COMBINED,prune,prune,$(PPL_MODELS))))
$(if $(TRAINED),$(foreach t,collapse train,$(eval $(call PAPER_COMBINED,$(t),$(t),$(TRAINED)))))

# Synthetic tables: one input each.
$(PD)/data/theorem1.tsv $(PD)/data/band.tsv $(PD)/data/identities.tsv: $(PD)/data/%.tsv: \
        $(PAPER_TAB)/%.tsv $(PAPER_PY)
	$(PAPER_RUN) $* $@ $<
PAPER_DATA += $(PD)/data/theorem1.tsv $(PD)/data/band.tsv $(PD)/data/identities.tsv

ifneq ($(strip $(PAPER_REGIME_IN)),)
$(PD)/data/regime.tsv: $(PAPER_REGIME_IN) $(PAPER_TAU) $(PAPER_PY)
	$(PAPER_RUN) regime $@ $(PAPER_REGIME_IN) $(PAPER_TAU) --dev '$(DEV_MODELS)'
PAPER_DATA += $(PD)/data/regime.tsv
endif

# Figure inputs reshaped per model (pruning: rows sparsity, columns order; collapse: layer 'all').
$(PD)/data/prune-%.tsv: $(PAPER_TAB)/prune-%.tsv $(PAPER_PY)
	$(PAPER_RUN) prune-plot $@ $<
$(PD)/data/collapse-%.tsv: $(PAPER_PLOT)/collapse-%.tsv $(PAPER_PY)
	$(PAPER_RUN) collapse-plot $@ $<

PAPER_PLOTDATA := $(foreach m,$(PPL_MODELS),$(PD)/data/prune-$(m).tsv) \
                  $(foreach m,$(TRAINED),$(PD)/data/collapse-$(m).tsv)
ifneq ($(strip $(PAPER_PLOTDATA)),)
.SECONDARY: $(PAPER_PLOTDATA)
endif

# Markdown and LaTeX, through `tabulate`.
PAPER_CAPTION_reversal   := Flip rate (%) of the closer-head verdict, keep vs drop sink, per metric and model
PAPER_CAPTION_theorem1   := Theorem 1: share of the (s_A, s_B) grid with reversals, mean and max reversal fraction
PAPER_CAPTION_band       := Band collapse: ranges over random pairs at shared sink mass s
PAPER_CAPTION_identities := Identity checks on random extreme rows (max relative error)
PAPER_CAPTION_sinks      := Sink profile: head mean sink mass per model
PAPER_CAPTION_ari        := Adjusted Rand Index between clusterings under different conventions
PAPER_CAPTION_prune      := Held-out perplexity after pruning by each order, per sparsity
PAPER_CAPTION_collapse   := Entropy drop from the highest-entropy checkpoint to the last, split into sink and content
PAPER_CAPTION_train      := Trained models: losses (nats/byte) and per-head sink mass
PAPER_CAPTION_regime     := Regime map: sink dispersion, predictor verdict, observed pruning safety, outcome, whether the thresholds were fitted on the model
$(PD)/tables/%.md: $(PD)/data/%.tsv $(BIN)/tabulate
	@mkdir -p $(@D)
	$(BIN)/tabulate --md --digits 4 --caption '$(PAPER_CAPTION_$*)' $< > $@.tmp && mv $@.tmp $@
$(PD)/tables/%.tex: $(PD)/data/%.tsv $(BIN)/tabulate
	@mkdir -p $(@D)
	$(BIN)/tabulate --latex --digits 4 --caption '$(PAPER_CAPTION_$*)' $< > $@.tmp && mv $@.tmp $@
PAPER_TABLES := $(foreach d,$(PAPER_DATA),$(patsubst $(PD)/data/%.tsv,$(PD)/tables/%.md,$(d)) \
                  $(patsubst $(PD)/data/%.tsv,$(PD)/tables/%.tex,$(d)))

# Figures: gnuplot -e 'in=...; out=...' SCRIPT, written through a temporary name.
paper_plot = mkdir -p $(@D) && $(GNUPLOT) -e "$(1); out='$@.tmp'" $(2) && mv $@.tmp $@
$(PD)/figures/reversal.png: $(PD)/data/reversal.tsv pipelines/paper/reversal.gp pipelines/paper/common.gp
	$(call paper_plot,in='$<',pipelines/paper/reversal.gp)
$(PD)/figures/band.png: $(PAPER_TAB)/band.tsv pipelines/paper/band.gp pipelines/paper/common.gp
	$(call paper_plot,in='$<',pipelines/paper/band.gp)
$(PD)/figures/mds-%.png: $(PAPER_PLOT)/heads-%.tsv pipelines/paper/mds.gp pipelines/paper/common.gp
	$(call paper_plot,in='$<'; name='$*',pipelines/paper/mds.gp)
$(PD)/figures/prune-%.png: $(PD)/data/prune-%.tsv pipelines/paper/prune.gp pipelines/paper/common.gp
	$(call paper_plot,in='$<'; name='$*',pipelines/paper/prune.gp)
$(PD)/figures/collapse-%.png: $(PD)/data/collapse-%.tsv pipelines/paper/collapse.gp pipelines/paper/common.gp
	$(call paper_plot,in='$<'; name='$*',pipelines/paper/collapse.gp)
$(PD)/figures/regime.png: $(PD)/data/regime.tsv $(PAPER_TAU) pipelines/paper/regime.gp pipelines/paper/common.gp
	$(call paper_plot,in='$<'; conf='$(PAPER_TAU)',pipelines/paper/regime.gp)

PAPER_FIGURES := $(PD)/figures/band.png \
    $(if $(MODELS),$(PD)/figures/reversal.png $(foreach m,$(MODELS),$(PD)/figures/mds-$(m).png \
                                                                 $(if $(filter $(m),$(PPL_MODELS)),$(PD)/figures/prune-$(m).png))) \
    $(foreach m,$(TRAINED),$(PD)/figures/collapse-$(m).png) \
    $(if $(filter %/regime.tsv,$(PAPER_DATA)),$(PD)/figures/regime.png)

$(PD)/RESULTS.md: $(PAPER_DATA) $(PAPER_TABLES) $(PAPER_FIGURES) $(PAPER_PY) $(PAPER_TAU)
	$(PAPER_RUN) results $@ $(PD) --profile $(PROFILE) --skipped '$(SKIPPED)' --regime-conf '$(PAPER_TAU)'

.PHONY: paper
paper: $(PD)/RESULTS.md

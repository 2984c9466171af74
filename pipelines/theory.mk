# Synthetic, exact experiments (METHODS §5.2) and the identity checks on random rows.
THEORY_ROWS_full  := 100000
THEORY_ROWS_quick := 20000

$(R)/tables/theorem1.tsv: $(BIN)/theory
	@mkdir -p $(@D)
	$(BIN)/theory theorem1 --summary --seed 1 > $@

$(R)/plots/theorem1-grid.tsv: $(BIN)/theory
	@mkdir -p $(@D)
	$(BIN)/theory theorem1 --seed 1 > $@

$(R)/tables/band.tsv: $(BIN)/theory
	@mkdir -p $(@D)
	$(BIN)/theory band --seed 1 > $@

$(R)/tables/identities.tsv: $(BIN)/theory
	@mkdir -p $(@D)
	$(BIN)/theory identities --rows $(THEORY_ROWS_$(PROFILE)) --seed 1 > $@

THEORY_TABLES := $(R)/tables/theorem1.tsv $(R)/tables/band.tsv $(R)/tables/identities.tsv

# Corpus: the King James Bible (Debian package bible-kjv) as plain prose, one verse per line,
# verse references removed (`bible -f` prints "Ge1:1 text" one verse a line; the first word goes).
# Split by book: Genesis..Philemon for training (29,964 verses, 3.98 MB), Hebrews..Revelation
# (the last nine books: 1,138 verses, 153 kB) for validation.
CORPUS_DIR   := results/corpus
KJV_TRAIN    := $(CORPUS_DIR)/kjv-train.txt
KJV_VALID    := $(CORPUS_DIR)/kjv-valid.txt
KJV_TRAIN_REFS := gen1:1-phm1:25
KJV_VALID_REFS := heb1:1-rev22:21

.PHONY: corpus
corpus: $(KJV_TRAIN) $(KJV_VALID)

$(KJV_TRAIN): REFS := $(KJV_TRAIN_REFS)
$(KJV_VALID): REFS := $(KJV_VALID_REFS)
$(KJV_TRAIN) $(KJV_VALID): pipelines/corpus.mk | $(DEPS_OK)
	@mkdir -p $(@D)
	set -o pipefail; bible -f $(REFS) | sed 's/^[^ ]* //' > $@.tmp
	@test -s $@.tmp || { echo "corpus: $@: bible printed nothing (is bible-kjv installed?)" >&2; rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@

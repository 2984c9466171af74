# Training: small models on the King James Bible (pipelines/corpus.mk), one Hugging Face
# directory per model: $(R)/models/<name>/ (R = results/$(PROFILE)) holds the final model (config.json,
# model.safetensors, tokenizer.json), checkpoints/step-NNNNNN/, train-log.tsv and report.tsv;
# .done is written last, so downstream rules depend on it.
#
# One OpenMP thread per model by default: results are then bit-identical on any machine for the
# same binary, and `make -j2 models` keeps both cores busy with two models at a time. Models depend
# on their recipe, the corpus and the training sources (not on unrelated library modules); the
# program itself is an order-only prerequisite.
PROFILE ?= quick
# kjv-gpt2-bpe-{a,b} are the sink models (docs/TRAIN.md "The sink models"): BPE at context 512
# without position encoding, with synthetic windows, 10,000 updates (~3,200 CPU s for the 4-layer A,
# ~2,450 for the 3-layer B) in the full profile. The quick profile keeps one of them on 1,500
# updates (~510 CPU s), so that `make test` stays short.
TRAIN_MODELS_full  := kjv-gpt2-s kjv-gpt2-m kjv-gpt2-l kjv-gpt2-bpe-a kjv-gpt2-bpe-b kjv-llama-m kjv-bert-m
TRAIN_MODELS_quick := kjv-gpt2-s kjv-gpt2-m kjv-gpt2-l kjv-gpt2-bpe-a kjv-llama-m kjv-bert-m
TRAIN_THREADS ?= 1
TRAINED_DIR    := $(R)/models
TRAIN_SRC     := src/train.c $(wildcard src/lib/train/*.c src/lib/train/*.h) src/lib/io/stwrite.c src/lib/io/stwrite.h
TRAIN_DONE    := $(foreach m,$(TRAIN_MODELS_$(PROFILE)),$(TRAINED_DIR)/$(m)/.done)

.PHONY: models
models: $(TRAIN_DONE)

$(TRAINED_DIR)/%/.done: configs/%.conf $(KJV_TRAIN) $(KJV_VALID) $(TRAIN_SRC) | $(BIN)/train
	rm -rf $(@D)
	$(call job,train-$*,--recipe $< --profile $(PROFILE) --cpus $(TRAIN_THREADS)) $(BIN)/train --config $< --profile $(PROFILE) --threads $(TRAIN_THREADS) \
	    --train $(KJV_TRAIN) --valid $(KJV_VALID) --out $(@D)
	touch $@

/* tok: text → token ids for every supported tokenizer behind one interface. Implementations:
 * byte-level BPE (tokenizer.json, or vocab.json + merges.txt; GPT-2, GPT-NeoX/Pythia, Qwen2,
 * Llama-3 tiktoken .model, and attncoda's own byte tokenizer), WordPiece (BERT), SentencePiece
 * BPE (GGUF vocabularies, llama2.c tok*.bin). */
#ifndef ATTNCODA_TOK_H
#define ATTNCODA_TOK_H
#include <stddef.h>
#include <stdint.h>

typedef struct tok tok;
/* Load from a path: a model directory (tokenizer.json, or vocab.json+merges.txt, or vocab.txt,
 * or a tiktoken tokenizer.model), a tokenizer.json file, or a llama2.c tok*.bin.
 * family (gpt2, gpt_neox, llama, qwen2, bert, ...) selects pre-tokenizer and specials when the
 * files leave them open; may be NULL. Returns NULL and fills err on failure. */
tok *tok_load(const char *path, const char *family, char *err, size_t errlen);
/* The same from the text of a tokenizer.json held in memory (name: for messages; no
 * tokenizer_config.json is consulted). */
tok *tok_load_json_text(const char *json, size_t len, const char *name, char *err, size_t errlen);
/* Encode UTF-8 text without special tokens. Returns count; *ids is malloc'd. */
int tok_encode(const tok *t, const char *text, size_t len, int32_t **ids);
/* Decode one id to its bytes (for sampling output); returns length written (≤ cap). */
int tok_decode_piece(const tok *t, int32_t prev, int32_t id, char *buf, int cap);
int tok_vocab_size(const tok *t);
/* 0 when the tokenizer loaded from path fits a model of model_vocab tokens, else -1 and a reason.
 * A llama2.c tok*.bin holds exactly one piece per model token (run.c reads vocab_size of them),
 * so a shorter or longer one belongs to another model. */
int tok_check_model_vocab(const tok *t, const char *path, int model_vocab, char *why, size_t whylen);
int tok_bos(const tok *t);    /* -1 when none */
int tok_eos(const tok *t);
int tok_cls(const tok *t);    /* BERT [CLS] / [SEP] / [PAD]; -1 elsewhere */
int tok_sep(const tok *t);
int tok_pad(const tok *t);
int tok_id(const tok *t, const char *token);  /* id of an exact token string, -1 if none */
/* What Hugging Face's add_special_tokens=True puts around one sequence: *npre ids before it and
 * *npost after (the arrays belong to t). A tokenizer.json says it in its post_processor
 * (TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel, Sequence of them; null or
 * absent: nothing); other files follow their format's converter: vocab.txt [CLS] ... [SEP],
 * vocab.json + merges.txt nothing, a SentencePiece or tiktoken tokenizer.model, GGUF or llama2.c
 * file BOS first (or, without a BOS, EOS last), tokenizer_config.json's add_bos_token /
 * add_eos_token deciding where present. Returns 0, or -1 with why filled when the post_processor
 * is of a kind attncoda does not apply. */
int tok_special_wrap(const tok *t, const int32_t **pre, int *npre, const int32_t **post, int *npost, char *why,
                     size_t whylen);
void tok_free(tok *t);

/* GPT-2's pre-tokenizer (HF ByteLevel with use_regex = true: the regex and matching that
 * tok_encode applies to such a tokenizer.json): calls word() on each pre-token of the text, in
 * order. Returns 0; -1 (and calls nothing) when the text is not valid UTF-8; -2 with err filled
 * when GPT-2's regex does not compile (an internal error: a PCRE2 without Unicode support). */
int tok_gpt2_pretokenize(const char *text, size_t len, void (*word)(const char *w, size_t n, void *ctx), void *ctx,
                         char *err, size_t errlen);

/* SentencePiece-style BPE loaders (tok_spm.c); tok_load dispatches to them for *.bin / *.gguf. */
tok *tok_load_llama2c(const char *path, char *err, size_t errlen);
tok *tok_load_gguf(const char *path, char *err, size_t errlen);

#endif

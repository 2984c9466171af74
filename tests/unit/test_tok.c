/* Unit tests of the tok.h API on the real tokenizer files: ids, tok_id spellings, specials,
 * decode round trips (the bytes of every piece concatenate back to the text), invalid UTF-8,
 * load errors, concurrent encoding (per-call state only), and dispatch of *.bin / *.gguf to the
 * SentencePiece loaders. Run from the repository root: reads the tokenizers the repository carries
 * (pipelines/data) and, when present, the optional Llama-3 one under $DATA_DIR (else skipped). */
#include "cli/cli.h"
#include "tok/tok.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TK "pipelines/data/tokenizers/"
static int failures;
#define CHECK(name, cond) do { if (cond) printf("ok - %s\n", name); else { printf("not ok - %s\n", name); failures++; } } while (0)

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = xmalloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    b[*len] = 0;
    fclose(f);
    return b;
}

static int fopen_ok(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static int ids_equal(const int32_t *a, int n, const int32_t *b, int m) {
    return n == m && memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

/* Decoding every id and concatenating the pieces gives back the text exactly. */
static int round_trip(const tok *t, const char *text, size_t len) {
    int32_t *ids;
    int n = tok_encode(t, text, len, &ids);
    if (n < 0) return 0;
    char *out = xmalloc(len * 2 + 64), piece[512];
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        int k = tok_decode_piece(t, i ? ids[i - 1] : -1, ids[i], piece, (int)sizeof piece);
        if (o + (size_t)k > len * 2 + 64) break;
        memcpy(out + o, piece, (size_t)k);
        o += (size_t)k;
    }
    int same = o == len && memcmp(out, text, len) == 0;
    free(out);
    free(ids);
    return same;
}

static void test_gpt2(void) {
    char err[512] = "";
    tok *t = tok_load(TK "gpt2", NULL, err, sizeof err);
    CHECK("gpt2 loads from its directory", t != NULL);
    if (!t) { printf("# %s\n", err); return; }
    int32_t *ids, want[] = {15496, 995};
    int n = tok_encode(t, "Hello world", 11, &ids);
    CHECK("gpt2 Hello world = 15496 995", ids_equal(ids, n, want, 2));
    free(ids);
    CHECK("gpt2 vocab 50257, bos = eos = 50256", tok_vocab_size(t) == 50257 && tok_bos(t) == 50256 && tok_eos(t) == 50256);
    CHECK("gpt2 tok_id mapped 'Ġworld' and raw ' world' = 995", tok_id(t, "\xc4\xa0world") == 995 && tok_id(t, " world") == 995);
    CHECK("gpt2 tok_id <|endoftext|> = 50256, unknown = -1", tok_id(t, "<|endoftext|>") == 50256 && tok_id(t, "no such token here") == -1);
    CHECK("gpt2 cls/sep/pad are -1", tok_cls(t) == -1 && tok_sep(t) == -1 && tok_pad(t) == -1);
    n = tok_encode(t, "", 0, &ids);
    CHECK("empty text gives 0 ids", n == 0 && ids != NULL);
    free(ids);
    n = tok_encode(t, "ok\xc3(", 4, &ids);
    CHECK("invalid UTF-8 gives -1 and no ids", n == -1 && ids == NULL);
    n = tok_encode(t, "a\0b", 3, &ids);
    CHECK("NUL bytes are text (byte 0 = id 188)", n == 3 && ids[1] == 188);
    free(ids);
    size_t len;
    char *kjv = slurp("tests/golden/tok/kjv200.txt", &len), *multi = slurp("tests/golden/tok/multi.txt", &len);
    CHECK("gpt2 decode round trip of kjv200 and multi", kjv && multi && round_trip(t, kjv, strlen(kjv)) && round_trip(t, multi, strlen(multi)));

    /* per-call state only: 4 threads encoding the same text agree with one another */
    int32_t *ref;
    int nref = tok_encode(t, kjv, strlen(kjv), &ref), agree = 1;
    #pragma omp parallel for num_threads(4) reduction(&& : agree)
    for (int k = 0; k < 8; k++) {
        int32_t *mine;
        int m = tok_encode(t, kjv, strlen(kjv), &mine);
        agree = agree && ids_equal(mine, m, ref, nref);
        free(mine);
    }
    CHECK("concurrent tok_encode calls agree", agree && nref > 2000);
    free(ref);
    free(kjv);
    free(multi);
    tok_free(t);
}

static void test_round_trips(void) {
    const char *data_dir = getenv("DATA_DIR");
    char llama3[600];
    snprintf(llama3, sizeof llama3, "%s/tokenizers/llama3", data_dir && *data_dir ? data_dir : "data-dir-unset");
    const char *const dirs[] = {TK "pythia", TK "qwen2", llama3, "tests/golden/tok/byte"};
    size_t len;
    char *kjv = slurp("tests/golden/tok/kjv200.txt", &len), *multi = slurp("tests/golden/tok/multi.txt", &len);
    for (int i = 0; i < 4; i++) {
        char err[512] = "", name[800], model[700];
        snprintf(model, sizeof model, "%s/tokenizer.model", dirs[i]);
        if (dirs[i] == llama3 && !fopen_ok(model)) { /* optional file (DATA_DIR): skipped, named */
            printf("ok - decode round trip of kjv200 (%s) # SKIP needs %s\n", dirs[i], model);
            printf("ok - decode round trip of multi.txt (%s) # SKIP needs %s\n", dirs[i], model);
            continue;
        }
        tok *t = tok_load(dirs[i], NULL, err, sizeof err);
        snprintf(name, sizeof name, "decode round trip of kjv200 (%s)", dirs[i]);
        CHECK(name, t && round_trip(t, kjv, strlen(kjv)));
        /* NFC families change multi.txt's decomposed accents, so only the others round-trip it */
        if (t && (i >= 2)) {
            snprintf(name, sizeof name, "decode round trip of multi.txt (%s)", dirs[i]);
            CHECK(name, round_trip(t, multi, strlen(multi)));
        }
        tok_free(t);
    }
    free(kjv);
    free(multi);
}

static void test_bert(void) {
    char err[512] = "";
    tok *t = tok_load(TK "bert-base-uncased", NULL, err, sizeof err);
    CHECK("bert loads", t != NULL);
    if (!t) return;
    CHECK("bert cls 101 sep 102 pad 0, no bos", tok_cls(t) == 101 && tok_sep(t) == 102 && tok_pad(t) == 0 && tok_bos(t) == -1);
    int32_t *ids;
    int n = tok_encode(t, "running", 7, &ids);
    char piece[64];
    int k = n == 1 ? tok_decode_piece(t, -1, tok_id(t, "##ing"), piece, (int)sizeof piece) : 0;
    CHECK("bert decode_piece drops the ## prefix", k == 3 && memcmp(piece, "ing", 3) == 0);
    free(ids);
    tok_free(t);
}
/* SentencePiece pieces decode after BOS: the dummy prefix goes, "▁" is a space, <0xNN> a byte. */
static int spm_round_trip(const tok *t, const char *text, size_t len) {
    int32_t *ids;
    int n = tok_encode(t, text, len, &ids);
    if (n < 0) return 0;
    char *out = xmalloc(len * 2 + 64), piece[512];
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        int k = tok_decode_piece(t, i ? ids[i - 1] : tok_bos(t), ids[i], piece, (int)sizeof piece);
        if (o + (size_t)k > len * 2 + 64) break;
        memcpy(out + o, piece, (size_t)k);
        o += (size_t)k;
    }
    int same = o == len && memcmp(out, text, len) == 0;
    free(out);
    free(ids);
    return same;
}

static void test_spm(void) {
    char err[512] = "", piece[64];
    tok *t = tok_load(TK "mistral/tokenizer.model", NULL, err, sizeof err);
    CHECK("mistral tokenizer.model loads", t != NULL);
    if (!t) { printf("# %s\n", err); return; }
    size_t len;
    char *kjv = slurp("tests/golden/tok/kjv200.txt", &len);
    CHECK("mistral decode round trip of kjv200 (after BOS)", kjv && spm_round_trip(t, kjv, strlen(kjv)));
    CHECK("mistral vocab 32000, bos 1, eos 2, <unk> 0", tok_vocab_size(t) == 32000 && tok_bos(t) == 1 &&
          tok_eos(t) == 2 && tok_id(t, "<unk>") == 0);
    int k = tok_decode_piece(t, -1, tok_id(t, "\xe2\x96\x81world"), piece, (int)sizeof piece);
    CHECK("mistral '▁world' decoded alone is ' world'", k == 6 && !memcmp(piece, " world", 6));
    k = tok_decode_piece(t, 1, tok_id(t, "\xe2\x96\x81world"), piece, (int)sizeof piece);
    CHECK("mistral '▁world' right after BOS is 'world'", k == 5 && !memcmp(piece, "world", 5));
    k = tok_decode_piece(t, -1, tok_id(t, "<0x0A>"), piece, (int)sizeof piece);
    CHECK("mistral <0x0A> decodes to a newline byte", k == 1 && piece[0] == '\n');
    tok_free(t);
    t = tok_load(TK "t5-small", NULL, err, sizeof err);
    CHECK("t5-small tokenizer.json (Unigram) loads", t != NULL);
    if (t) {
        int32_t *ids;
        int n = tok_encode(t, "Hello world", 11, &ids);
        char out[64];
        size_t o = 0;
        for (int i = 0; i < n; i++) o += (size_t)tok_decode_piece(t, i ? ids[i - 1] : -1, ids[i], out + o, 32);
        CHECK("t5 decode of 'Hello world' is ' Hello world'", o == 12 && !memcmp(out, " Hello world", 12));
        free(ids);
        tok_free(t);
    }
    free(kjv);
}

static void test_errors(void) {
    char err[512] = "";
    tok *t = tok_load("/nonexistent/tokdir", NULL, err, sizeof err);
    CHECK("missing path: NULL and the path in err", !t && strstr(err, "/nonexistent/tokdir"));
    err[0] = 0;
    t = tok_load(TK "gpt2", "klingon", err, sizeof err);
    CHECK("unknown family: NULL and a message", !t && strstr(err, "klingon"));
    /* *.bin and *.gguf go to the SentencePiece loaders (tok_spm.c) */
    err[0] = 0;
    t = tok_load("pipelines/data/models/stories260K/tok512.bin", NULL, err, sizeof err);
    CHECK("tok512.bin dispatches to the llama2c loader", (t && tok_vocab_size(t) == 512) || (!t && err[0]));
    tok_free(t);
}

/* A Unigram tokenizer.json of 4 pieces (a b c d, ids 0-3) with the given post_processor. */
static tok *with_post(const char *pp, char *err, size_t errlen) {
    char js[2048];
    snprintf(js, sizeof js,
             "{\"added_tokens\": [], \"post_processor\": %s, \"model\": {\"type\": \"Unigram\", \"unk_id\": 0, "
             "\"vocab\": [[\"a\", 0], [\"b\", -1], [\"c\", -1], [\"d\", -1]]}}", pp);
    return tok_load_json_text(js, strlen(js), "pp.json", err, errlen);
}

static int wrap_is(const tok *t, const int32_t *want_pre, int npre, const int32_t *want_post, int npost) {
    const int32_t *pre, *post;
    int a, b;
    char why[256];
    if (tok_special_wrap(t, &pre, &a, &post, &b, why, sizeof why)) return 0;
    return a == npre && b == npost && (!a || ids_equal(pre, a, want_pre, npre)) && (!b || ids_equal(post, b, want_post, npost));
}

/* post_processor: what add_special_tokens adds and the roles it names; malformed ones refused. */
static void test_post_processor(void) {
    char err[512];
    tok *t = with_post("{\"type\": \"RobertaProcessing\", \"cls\": [\"a\", 0], \"sep\": [\"c\", 2]}", err, sizeof err);
    CHECK("RobertaProcessing: a ... c, bos = cls = 0, eos = sep = 2",
          t && wrap_is(t, (int32_t[]){0}, 1, (int32_t[]){2}, 1) && tok_bos(t) == 0 && tok_cls(t) == 0 &&
              tok_eos(t) == 2 && tok_sep(t) == 2);
    tok_free(t);
    t = with_post("{\"type\": \"BertProcessing\", \"cls\": [\"b\", 1], \"sep\": [\"d\", 3]}", err, sizeof err);
    CHECK("BertProcessing: cls 1, sep 3, no bos", t && wrap_is(t, (int32_t[]){1}, 1, (int32_t[]){3}, 1) &&
                                                      tok_cls(t) == 1 && tok_sep(t) == 3 && tok_bos(t) == -1);
    tok_free(t);
    t = with_post("{\"type\": \"Sequence\", \"processors\": [{\"type\": \"ByteLevel\"}, {\"type\": "
                  "\"TemplateProcessing\", \"single\": [{\"Sequence\": {\"id\": \"A\"}}, {\"SpecialToken\": {\"id\": "
                  "\"x\"}}], \"special_tokens\": {\"x\": {\"ids\": [3, 2]}}}, {\"type\": \"TemplateProcessing\", "
                  "\"single\": [{\"SpecialToken\": {\"id\": \"y\"}}, {\"Sequence\": {\"id\": \"A\"}}], "
                  "\"special_tokens\": {\"y\": {\"ids\": [1]}}}]}", err, sizeof err);
    CHECK("Sequence: each processor wraps the previous (y A x = 1 ... 3 2), bos from the one-sided template",
          t && wrap_is(t, (int32_t[]){1}, 1, (int32_t[]){3, 2}, 2) && tok_bos(t) == 1);
    tok_free(t);
    t = with_post("null", err, sizeof err);
    CHECK("post_processor null: nothing added", t && wrap_is(t, NULL, 0, NULL, 0));
    tok_free(t);
    t = with_post("{\"type\": \"NewProcessing\"}", err, sizeof err);
    const int32_t *pre, *post;
    int a, b;
    char why[256] = "";
    CHECK("an unknown post_processor type loads, tok_special_wrap names it",
          t && tok_special_wrap(t, &pre, &a, &post, &b, why, sizeof why) == -1 && strstr(why, "'NewProcessing'"));
    tok_free(t);
    static const char *const bad[][2] = {
        {"{\"type\": \"RobertaProcessing\", \"cls\": [\"a\", 4], \"sep\": [\"c\", 2]}", "'cls' is not a [token, id] pair"},
        {"{\"type\": \"BertProcessing\", \"cls\": [\"a\", 0], \"sep\": \"c\"}", "'sep' is not a [token, id] pair"},
        {"{\"type\": \"TemplateProcessing\", \"single\": [{\"Sequence\": {\"id\": \"A\"}}, {\"Sequence\": {\"id\": \"A\"}}]}",
         "must hold the sequence $A once"},
        {"{\"type\": \"TemplateProcessing\", \"single\": [{\"Sequence\": {\"id\": \"B\"}}]}", "must hold the sequence $A once"},
        {"{\"type\": \"TemplateProcessing\", \"single\": [{\"Sequence\": {\"id\": \"A\"}}, {\"SpecialToken\": {\"id\": "
         "\"x\"}}], \"special_tokens\": {\"x\": {\"ids\": [-1]}}}", "ids[0] is not an id of the vocabulary (0..3)"},
        {"{\"type\": \"Sequence\", \"processors\": 5}", "'processors' is not a list"},
        {"[1]", "post_processor without a type"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        t = with_post(bad[i][0], err, sizeof err);
        char name[160];
        snprintf(name, sizeof name, "bad post_processor %zu refused: %s", i, bad[i][1]);
        CHECK(name, !t && strstr(err, "pp.json: post_processor") && strstr(err, bad[i][1]));
        tok_free(t);
    }
}

int main(void) {
    test_gpt2();
    test_round_trips();
    test_bert();
    test_spm();
    test_errors();
    test_post_processor();
    return failures ? 1 : 0;
}

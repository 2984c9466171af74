/* tok: the public interface of tok.h. Loading dispatch (which file, which format, which
 * tokenizer; the family and its special ids from the files beside it; what add_special_tokens
 * puts around a sequence) and the generic tok_* wrappers over a tokenizer's ops. The tokenizers
 * (tok_bpe.c, tok_wordpiece.c, tok_unigram.c, tok_spm*.c) sit below this file and never call it. */
#include "tok.h"
#include "tok_impl.h"
#include "core/util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------- families and specials */

/* Canonical family name for the spellings users and config.json use; NULL if unknown. */
static const char *family_canon(const char *f) {
    static const char *alias[][2] = {
        {"gpt2", "gpt2"}, {"gpt_neox", "gpt_neox"}, {"gpt-neox", "gpt_neox"}, {"neox", "gpt_neox"},
        {"pythia", "gpt_neox"}, {"llama", "llama"}, {"llama3", "llama"}, {"llama-3", "llama"},
        {"qwen2", "qwen2"}, {"qwen", "qwen2"}, {"qwen2.5", "qwen2"}, {"qwen2_5", "qwen2"},
        {"bert", "bert"}, {"byte", "byte"}, {"attncoda", "byte"},
        /* the newer model families whose tokenizers are one of the above kinds */
        {"phi", "gpt2"}, {"opt", "gpt2"}, {"roberta", "gpt2"}, {"qwen3", "qwen2"},
        /* SentencePiece vocabularies (BPE or Unigram): the files describe themselves */
        {"spm", "spm"}, {"sentencepiece", "spm"}, {"llama2", "spm"}, {"mistral", "spm"},
        {"gemma", "spm"}, {"gemma2", "spm"}, {"xlm-roberta", "spm"}, {"xlm_roberta", "spm"},
        {"t5", "spm"}};
    if (!f) return NULL;
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcasecmp(f, alias[i][0])) return alias[i][1];
    return NULL;
}

static char *sibling(const char *file, const char *name) {
    const char *slash = strrchr(file, '/');
    size_t d = slash ? (size_t)(slash - file + 1) : 0;
    char *p = xmalloc(d + strlen(name) + 1);
    memcpy(p, file, d);
    strcpy(p + d, name);
    return p;
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Family from the config.json next to a tokenizer file (NULL if none). */
static const char *tok_family_from_dir(const char *file_path) {
    char *cfg = sibling(file_path, "config.json");
    const char *fam = NULL;
    if (file_exists(cfg)) {
        json_t *j = json_load_file(cfg, 0, NULL);
        if (j) fam = family_canon(json_string_value(json_object_get(j, "model_type")));
        json_decref(j);
    }
    free(cfg);
    return fam;
}

/* tokenizer_config.json's bos_token / eos_token: a string, an {"content": …} object, or null. */
static int config_token(const tok *t, json_t *cfg, const char *key, int dflt) {
    json_t *v = json_object_get(cfg, key);
    if (!v) return dflt;
    if (json_is_null(v)) return -1;
    if (json_is_object(v)) v = json_object_get(v, "content");
    const char *s = json_string_value(v);
    return s ? t->ops->id_of(t, s) : dflt;
}


/* tokenizer_config.json's add_bos_token / add_eos_token: -1 when absent. */
typedef struct { int add_bos, add_eos; } config_adds;

static int config_flag(json_t *cfg, const char *key) {
    json_t *v = json_object_get(cfg, key);
    return json_is_boolean(v) ? json_is_true(v) : -1;
}

/* The files may say better: special_tokens_map.json, then tokenizer_config.json (which wins, as in
 * transformers) beside the tokenizer override bos/eos. */
static void specials_from_config(tok *t, const char *file_path, config_adds *adds) {
    static const char *const names[] = {"special_tokens_map.json", "tokenizer_config.json"};
    adds->add_bos = adds->add_eos = -1;
    for (int i = 0; i < 2; i++) {
        char *p = sibling(file_path, names[i]);
        json_t *j = file_exists(p) ? json_load_file(p, 0, NULL) : NULL;
        if (json_is_object(j)) {
            t->bos = config_token(t, j, "bos_token", t->bos);
            t->eos = config_token(t, j, "eos_token", t->eos);
            if (i == 1) adds->add_bos = config_flag(j, "add_bos_token"), adds->add_eos = config_flag(j, "add_eos_token");
        }
        json_decref(j);
        free(p);
    }
}

/* ---------------------------------------------------------------- post-processor */

/* The ids of one processor (own) wrap what the processors before it made (HF's Sequence applies
 * them in order): pre = own.pre + pre, post = post + own.post. */
static void wrap_around(tok_ivec *pre, tok_ivec *post, const tok_ivec *opre, const tok_ivec *opost) {
    tok_ivec np = {0};
    for (size_t i = 0; i < opre->n; i++) tok_ivec_push(&np, opre->v[i]);
    for (size_t i = 0; i < pre->n; i++) tok_ivec_push(&np, pre->v[i]);
    free(pre->v);
    *pre = np;
    for (size_t i = 0; i < opost->n; i++) tok_ivec_push(post, opost->v[i]);
}

static int id_in_vocab(const tok *t, json_t *v) {
    return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < t->vocab;
}

/* RobertaProcessing / BertProcessing: "cls" and "sep" are [token, id]. */
static int pair_id(const tok *t, json_t *pp, const char *type, const char *key, char *err, size_t errlen) {
    json_t *p = json_object_get(pp, key);
    if (!json_is_array(p) || json_array_size(p) != 2 || !json_is_string(json_array_get(p, 0)) ||
        !id_in_vocab(t, json_array_get(p, 1))) {
        tok_fail(err, errlen, "post_processor %s: '%s' is not a [token, id] pair with an id of the vocabulary (0..%d)",
                 type, key, t->vocab - 1);
        return -1;
    }
    return (int)json_integer_value(json_array_get(p, 1));
}

/* TemplateProcessing's "single": special tokens (their ids from "special_tokens") around $A. */
static int template_parse(const tok *t, json_t *pp, tok_ivec *pre, tok_ivec *post, char *err, size_t errlen) {
    json_t *single = json_object_get(pp, "single"), *st = json_object_get(pp, "special_tokens"), *item;
    size_t i;
    int seen = 0;
    if (!json_is_array(single)) { tok_fail(err, errlen, "post_processor TemplateProcessing: 'single' is not a list"); return -1; }
    json_array_foreach(single, i, item) {
        json_t *seq = json_object_get(item, "Sequence"), *sp = json_object_get(item, "SpecialToken");
        if (json_is_object(seq) && !sp) {
            const char *which = json_string_value(json_object_get(seq, "id"));
            if (!which || strcmp(which, "A") || seen++) break;
            continue;
        }
        const char *name = json_string_value(json_object_get(sp, "id"));
        json_t *ids = json_object_get(json_object_get(st, name ? name : ""), "ids"), *x;
        size_t k;
        if (!name || !json_is_array(ids) || json_array_size(ids) == 0) {
            tok_fail(err, errlen, "post_processor TemplateProcessing: single[%zu] is neither $A nor a special token "
                     "with ids in 'special_tokens'", i);
            return -1;
        }
        json_array_foreach(ids, k, x) {
            if (!id_in_vocab(t, x)) {
                tok_fail(err, errlen, "post_processor TemplateProcessing: special token '%s': ids[%zu] is not an id "
                         "of the vocabulary (0..%d)", name, k, t->vocab - 1);
                return -1;
            }
            tok_ivec_push(seen ? post : pre, (int32_t)json_integer_value(x));
        }
    }
    if (seen != 1 || i != json_array_size(single)) {
        tok_fail(err, errlen, "post_processor TemplateProcessing: 'single' must hold the sequence $A once");
        return -1;
    }
    return 0;
}

/* One post_processor (depth: Sequence nesting). 0: applied to pre/post and to the roles
 * (bos/eos/cls/sep) it names; 1: a type attncoda does not apply (named in t); -1: malformed. */
static int post_parse(tok *t, json_t *pp, tok_ivec *pre, tok_ivec *post, int depth, char *err, size_t errlen) {
    if (!pp || json_is_null(pp)) return 0;
    const char *type = json_string_value(json_object_get(pp, "type"));
    if (!type) { tok_fail(err, errlen, "post_processor without a type"); return -1; }
    if (!strcmp(type, "ByteLevel")) return 0;   /* offsets only */
    if (!strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(pp, "processors"), *x;
        size_t i;
        if (!json_is_array(arr) || depth > 8) { tok_fail(err, errlen, "post_processor Sequence: 'processors' is not a list"); return -1; }
        json_array_foreach(arr, i, x) {
            int rc = post_parse(t, x, pre, post, depth + 1, err, errlen);
            if (rc) return rc;
        }
        return 0;
    }
    tok_ivec opre = {0}, opost = {0};
    int rc = 0;
    if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) {
        int cls = pair_id(t, pp, type, "cls", err, errlen), sep = cls < 0 ? -1 : pair_id(t, pp, type, "sep", err, errlen);
        if (cls < 0 || sep < 0) return -1;
        tok_ivec_push(&opre, cls);
        tok_ivec_push(&opost, sep);
        t->cls = cls, t->sep = sep;
        if (type[0] == 'R') t->bos = cls, t->eos = sep;    /* RobertaTokenizer: bos <s> = cls, eos </s> = sep */
    } else if (!strcmp(type, "TemplateProcessing")) {
        rc = template_parse(t, pp, &opre, &opost, err, errlen);
        /* the roles the template shows: BOS first (Llama), EOS last (T5), CLS ... SEP (BERT) */
        if (rc == 0 && opre.n == 1 && opost.n == 0) t->bos = opre.v[0];
        if (rc == 0 && opre.n == 0 && opost.n == 1) t->eos = opost.v[0];
        if (rc == 0 && opre.n == 1 && opost.n == 1) t->cls = opre.v[0], t->sep = opost.v[0];
    } else {
        snprintf(t->wrap_unsupported, sizeof t->wrap_unsupported, "%s", type);
        return 1;
    }
    if (rc == 0) wrap_around(pre, post, &opre, &opost);
    free(opre.v);
    free(opost.v);
    return rc;
}

/* A tokenizer.json's post_processor: what add_special_tokens adds, and the special roles it
 * shows, which override the family's guesses (RoBERTa's <s> and </s>, not <|endoftext|>). */
static int post_from_json(tok *t, json_t *root, char *err, size_t errlen) {
    tok_ivec pre = {0}, post = {0};
    int rc = post_parse(t, json_object_get(root, "post_processor"), &pre, &post, 0, err, errlen);
    if (rc < 0) {
        free(pre.v);
        free(post.v);
        return -1;
    }
    t->wrap_state = rc == 1 ? -1 : 1;
    t->wrap_pre = pre.v, t->wrap_npre = (int)pre.n;
    t->wrap_post = post.v, t->wrap_npost = (int)post.n;
    return 0;
}

/* The other files: their format's converter (tok_special_wrap in tok.h). plain_bpe: a
 * vocab.json + merges.txt pair, whose GPT-2 rule adds nothing. */
static void wrap_default(tok *t, int plain_bpe, const config_adds *adds) {
    if (t->wrap_state) return;
    t->wrap_state = 1;
    int bos = 0, eos = 0;
    if (t->cls >= 0 && t->sep >= 0 && adds->add_bos < 0 && adds->add_eos < 0) {
        bos = eos = 1;
    } else if (!plain_bpe) {
        bos = t->bos >= 0;
        eos = !bos && t->eos >= 0;
    }
    if (adds->add_bos >= 0) bos = adds->add_bos;
    if (adds->add_eos >= 0) eos = adds->add_eos;
    int first = t->cls >= 0 && t->sep >= 0 && adds->add_bos < 0 ? t->cls : t->bos;
    int last = t->cls >= 0 && t->sep >= 0 && adds->add_eos < 0 ? t->sep : t->eos;
    if (bos && first >= 0) {
        t->wrap_pre = xmalloc(sizeof(int32_t));
        t->wrap_pre[t->wrap_npre++] = first;
    }
    if (eos && last >= 0) {
        t->wrap_post = xmalloc(sizeof(int32_t));
        t->wrap_post[t->wrap_npost++] = last;
    }
}

/* ---------------------------------------------------------------- loading */

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static tok *tokenizer_from_root(json_t *root, const char *path, const char *family, char *err, size_t errlen) {
    tok *t = NULL;
    if (!json_is_object(root)) {
        tok_fail(err, errlen, "%s: not a tokenizer.json object", path);
    } else {
        json_t *m = json_object_get(root, "model");
        const char *type = json_string_value(json_object_get(m, "type"));
        if (!json_is_object(m)) tok_fail(err, errlen, "%s: no \"model\" object", path);
        else if (type ? !strcmp(type, "BPE") : json_object_get(m, "merges") != NULL)
            t = tok_bpe_from_json(root, path, family, err, errlen);
        else if (type ? !strcmp(type, "WordPiece") : json_object_get(m, "max_input_chars_per_word") != NULL)
            t = tok_wp_from_json(root, path, err, errlen);
        else if (type ? !strcmp(type, "Unigram") : json_object_get(m, "unk_id") != NULL)
            t = tok_unigram_from_json(root, path, err, errlen);
        else
            tok_fail(err, errlen, "%s: unsupported model type '%s'", path, type ? type : "(none)");
    }
    if (t && post_from_json(t, root, err, errlen)) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", err);
        tok_fail(err, errlen, "%s: %s", path, msg);
        tok_free(t);
        t = NULL;
    }
    json_decref(root);
    return t;
}

static tok *load_tokenizer_json(const char *path, const char *family, char *err, size_t errlen) {
    json_t *root = tok_json_load(path, err, errlen);
    return root ? tokenizer_from_root(root, path, family, err, errlen) : NULL;
}

tok *tok_load_json_text(const char *json, size_t len, const char *name, char *err, size_t errlen) {
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_DECODE_ANY, &je);
    if (!root) return tok_fail(err, errlen, "%s: line %d: %s", name, je.line, je.text);
    return tokenizer_from_root(root, name, NULL, err, errlen);
}

/* First regular file in dir whose name ends with suffix (sorted by name, deterministic). */
static char *find_in_dir(const char *dir, const char *suffix) {
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    char *found = NULL;
    for (int i = 0; i < n; i++) {
        if (!found && ends_with(names[i]->d_name, suffix)) {
            char *p = xmalloc(strlen(dir) + strlen(names[i]->d_name) + 2);
            sprintf(p, "%s/%s", dir, names[i]->d_name);
            if (file_exists(p)) found = p; else free(p);
        }
        free(names[i]);
    }
    if (n >= 0) free(names);
    return found;
}

static char *join(const char *dir, const char *name) {
    char *p = xmalloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

/* A directory: tokenizer.json (or *tokenizer.json), vocab.json + merges.txt, vocab.txt,
 * tokenizer.model (tiktoken) in that order. Returns the file to load (malloc'd) or NULL. */
static char *pick_in_dir(const char *dir) {
    static const char *const order[] = {"tokenizer.json", "vocab.json", "vocab.txt", "tokenizer.model"};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        char *p = join(dir, order[i]);
        if (file_exists(p)) {
            if (strcmp(order[i], "vocab.json")) return p;
            char *m = join(dir, "merges.txt");
            int ok = file_exists(m);
            free(m);
            if (ok) return p;
        }
        free(p);
        if (i == 0) {
            char *q = find_in_dir(dir, "tokenizer.json");
            if (q) return q;
        }
    }
    return NULL;
}

static int first_byte(const char *path) {
    FILE *f = fopen(path, "rb");
    int c = f ? getc(f) : EOF;
    if (f) fclose(f);
    return c;
}

static tok *load_file(const char *path, const char *family, char *err, size_t errlen) {
    const char *b = base_name(path);
    if (ends_with(b, ".gguf")) return tok_load_gguf(path, err, errlen);
    if (ends_with(b, ".bin")) return tok_load_llama2c(path, err, errlen);
    if (!strcmp(b, "vocab.json") || !strcmp(b, "merges.txt")) {
        char *v = sibling(path, "vocab.json"), *m = sibling(path, "merges.txt");
        tok *t = NULL;
        if (!file_exists(v) || !file_exists(m))
            tok_fail(err, errlen, "%s: byte-level BPE needs both vocab.json and merges.txt",
                     file_exists(v) ? m : v);
        else
            t = tok_bpe_from_files(v, m, family, err, errlen);
        free(v);
        free(m);
        return t;
    }
    if (ends_with(b, ".txt")) return tok_wp_from_vocab_txt(path, -1, err, errlen);
    if (ends_with(b, ".model") && first_byte(path) == 0x0A)   /* protobuf tag of field 1: SentencePiece */
        return tok_load_spm_model(path, err, errlen);
    if (ends_with(b, ".model") || ends_with(b, ".tiktoken"))
        return tok_bpe_from_tiktoken(path, family, err, errlen);
    return load_tokenizer_json(path, family, err, errlen);
}

static tok *load_path(const char *path, const char *family, char *err, size_t errlen);

tok *tok_load(const char *path, const char *family, char *err, size_t errlen) {
    tok *t = load_path(path, family, err, errlen);
    static const config_adds none = {-1, -1};
    if (t) wrap_default(t, 0, &none);   /* GGUF and llama2.c files: BOS first */
    return t;
}

static tok *load_path(const char *path, const char *family, char *err, size_t errlen) {
    struct stat st;
    /* SentencePiece files carry everything themselves; the family (e.g. a GGUF architecture
     * name) is not ours to check there */
    if (ends_with(path, ".gguf")) return tok_load_gguf(path, err, errlen);
    if (ends_with(path, ".bin")) return tok_load_llama2c(path, err, errlen);
    if (family && !family_canon(family))
        return tok_fail(err, errlen, "unknown tokenizer family '%s' (gpt2, gpt_neox, llama, qwen2, bert, byte, spm)",
                        family);
    if (stat(path, &st) != 0) return tok_fail(err, errlen, "%s: no such file or directory", path);
    char *file = NULL;
    if (S_ISDIR(st.st_mode)) {
        file = pick_in_dir(path);
        if (!file)
            return tok_fail(err, errlen, "%s: no tokenizer.json, vocab.json+merges.txt, vocab.txt "
                            "or tokenizer.model in this directory", path);
    } else {
        file = xstrdup(path);
    }
    const char *fam = family_canon(family);
    if (!fam) fam = tok_family_from_dir(file);
    tok *t = load_file(file, fam, err, errlen);
    config_adds adds = {-1, -1};
    if (t && t->ops && t->ops->encode == tok_common_encode) specials_from_config(t, file, &adds);
    const char *b = base_name(file);
    if (t) wrap_default(t, !strcmp(b, "vocab.json") || !strcmp(b, "merges.txt"), &adds);
    free(file);
    return t;
}

/* ---------------------------------------------------------------- wrappers */

int tok_encode(const tok *t, const char *text, size_t len, int32_t **ids) {
    return t->ops->encode(t, text, len, ids);
}
int tok_decode_piece(const tok *t, int32_t prev, int32_t id, char *buf, int cap) {
    return t->ops->decode_piece(t, prev, id, buf, cap);
}
int tok_vocab_size(const tok *t) { return t->vocab; }

int tok_check_model_vocab(const tok *t, const char *path, int model_vocab, char *why, size_t whylen) {
    if (!ends_with(path, ".bin") || t->vocab == model_vocab) return 0;
    snprintf(why, whylen, "%s: llama2.c tokenizer has %d pieces, the model's vocabulary has %d", path, t->vocab,
             model_vocab);
    return -1;
}
int tok_bos(const tok *t) { return t->bos; }
int tok_eos(const tok *t) { return t->eos; }
int tok_cls(const tok *t) { return t->cls; }
int tok_sep(const tok *t) { return t->sep; }
int tok_pad(const tok *t) { return t->pad; }
int tok_id(const tok *t, const char *token) { return t->ops->id_of(t, token); }

int tok_special_wrap(const tok *t, const int32_t **pre, int *npre, const int32_t **post, int *npost, char *why,
                     size_t whylen) {
    *pre = t->wrap_pre, *npre = t->wrap_npre;
    *post = t->wrap_post, *npost = t->wrap_npost;
    if (t->wrap_state >= 0) return 0;
    snprintf(why, whylen, "post_processor '%s' is not supported (TemplateProcessing, RobertaProcessing, "
             "BertProcessing, ByteLevel, Sequence)", t->wrap_unsupported);
    return -1;
}

void tok_free(tok *t) {
    if (!t) return;
    free(t->wrap_pre);
    free(t->wrap_post);
    t->ops->free(t);
}

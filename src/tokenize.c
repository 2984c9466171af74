/* tokenize: UTF-8 text → token ids with any tokenizer attncoda reads (src/lib/tok/tok.h), one output
 * line per input line (or one for the whole input), so ids can be checked against reference
 * implementations and fed to `extract --ids`. */
#include "cli/cli.h"
#include "tok/tok.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <utf8proc.h>

static void usage(void) {
    printf("Usage: %s --tokenizer PATH [options] [FILE|-]\n"
           "Encode UTF-8 text (FILE, or stdin) to token ids: one output line per input line, the\n"
           "ids separated by single spaces (an empty input line gives an empty output line; the\n"
           "newline that ends a line is not encoded). The first output line is '# ' and the\n"
           "provenance JSON (program, version, inputs with sha256, options).\n\n"
           "  -t, --tokenizer PATH  a model directory (tokenizer.json, else vocab.json+merges.txt,\n"
           "                        else vocab.txt, else a tokenizer.model: SentencePiece or\n"
           "                        tiktoken), or one of those files, or a GGUF / llama2.c\n"
           "                        tok*.bin (required). tokenizer.json: byte-level or\n"
           "                        SentencePiece-style BPE, WordPiece, Unigram\n"
           "  -f, --family F        gpt2 | gpt_neox | llama | qwen2 | bert | byte | spm, or a\n"
           "                        config.json model_type (mistral, gemma, phi, opt, ...):\n"
           "                        selects the pre-tokenizer and special tokens where the\n"
           "                        files leave them open (default: config.json beside the\n"
           "                        files, else detected)\n"
           "  -b, --bos             add the start token: BOS (GPT-2/NeoX <|endoftext|>, Llama-3\n"
           "                        <|begin_of_text|>, attncoda byte <|bos|>); BERT and RoBERTa:\n"
           "                        CLS ... SEP ([CLS] ... [SEP], <s> ... </s>). The ids come from\n"
           "                        tokenizer_config.json or special_tokens_map.json, else from\n"
           "                        tokenizer.json's post_processor, else from the family\n"
           "      --special         add what Hugging Face's add_special_tokens=True adds: a\n"
           "                        tokenizer.json's post_processor (BERT [CLS] ... [SEP], RoBERTa\n"
           "                        <s> ... </s>, T5 ... </s>, Llama <s> ..., GPT-2 nothing);\n"
           "                        vocab.txt [CLS] ... [SEP]; vocab.json+merges.txt nothing; a\n"
           "                        tokenizer.model, GGUF or llama2.c file BOS first (no BOS: EOS\n"
           "                        last); add_bos_token/add_eos_token of tokenizer_config.json\n"
           "                        decide where present. Excludes --bos\n"
           "  -w, --whole           encode the whole input as one text, newlines included\n"
           "  -o, --output FILE     write here instead of stdout (appears only when complete)\n"
           "      --no-header       omit the provenance line\n"
           "      --info            print the vocabulary size and special ids, encode nothing\n"
           "  -h, --help, -V, --version\n\n"
           "Special-token strings in the text: a tokenizer.json's added tokens (<|endoftext|>,\n"
           "[MASK], <s>, ...) become their ids, as in Hugging Face tokenizers; a SentencePiece\n"
           "tokenizer.model follows SentencePiece, where only user-defined pieces do: <s>, </s>\n"
           "and <unk> typed in the text are encoded as text (docs/TOKENIZERS.md).\n"
           "Invalid UTF-8 input is an error (exit 1) naming the line and byte offset.\n"
           "Memory: the tokenizer tables (about 30 MB for GPT-2, NeoX or BERT, 45 MB for Llama-3,\n"
           "70 MB for Qwen2, 10-20 MB for SentencePiece and Unigram vocabularies of 32k pieces),\n"
           "the whole input, and about 12 bytes per output token.\n",
           cli_prog());
}

typedef struct {
    const char *tokenizer, *family, *in, *out;
    int bos, special, whole, header, info;
} tk_opts;

static void parse_args(int argc, char **argv, tk_opts *o) {
    static const struct option lo[] = {
        {"tokenizer", 1, 0, 't'}, {"family", 1, 0, 'f'}, {"bos", 0, 0, 'b'}, {"whole", 0, 0, 'w'},
        {"output", 1, 0, 'o'}, {"no-header", 0, 0, 'H'}, {"info", 0, 0, 'I'}, {"special", 0, 0, 'S'},
        {"help", 0, 0, 'h'}, {"version", 0, 0, 'V'}, {0, 0, 0, 0}};
    *o = (tk_opts){.in = "-", .out = "-", .header = 1};
    int c;
    while ((c = getopt_long(argc, argv, "t:f:bwo:hV", lo, NULL)) != -1) {
        switch (c) {
        case 't': o->tokenizer = optarg; break;
        case 'f': o->family = optarg; break;
        case 'b': o->bos = 1; break;
        case 'S': o->special = 1; break;
        case 'w': o->whole = 1; break;
        case 'o': o->out = optarg; break;
        case 'H': o->header = 0; break;
        case 'I': o->info = 1; break;
        case 'h': usage(); exit(0);
        case 'V': cli_print_version(); exit(0);
        default: cli_bad_option(argv, lo, "t:f:bwo:hV");
        }
    }
    if (!o->tokenizer) die_usage("--tokenizer PATH is required (see --help)");
    if (o->bos && o->special) die_usage("--bos and --special exclude each other (see --help)");
    if (optind < argc) o->in = argv[optind++];
    cli_operands(argc, argv, 0, 0, "at most one input FILE");
}

/* Provenance inputs: the tokenizer file, or the tokenizer files present in its directory. */
static void prov_tokenizer(prov *p, const char *path) {
    static const char *const names[] = {"tokenizer.json", "vocab.json", "merges.txt", "vocab.txt",
                                        "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json",
                                        "config.json"};
    struct stat st;
    char hex[65];
    if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
        if (cli_sha256_file(path, hex) == 0) prov_input(p, path, hex);
        return;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(path) + strlen(names[i]) + 2;
        char *f = xmalloc(n);
        snprintf(f, n, "%s/%s", path, names[i]);
        if (cli_sha256_file(f, hex) == 0) prov_input(p, f, hex);
        free(f);
    }
}

/* Offset of the first invalid UTF-8 byte (tok_encode only says "invalid"). */
static size_t bad_utf8(const char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        utf8proc_int32_t c;
        utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(len - i), &c);
        if (n <= 0) break;
        i += (size_t)n;
    }
    return i;
}

/* Appends " id" (no space before the first); by hand, since printf per id was a quarter of the
 * run time on large inputs. */
static void put_id(strbuf *b, int32_t id, int *first) {
    if (b->len + 16 > b->cap) {
        b->cap = b->cap * 2 + 4096;
        b->s = xrealloc(b->s, b->cap);
    }
    char tmp[12];
    int n = 0;
    uint32_t v = id < 0 ? (uint32_t)(-(int64_t)id) : (uint32_t)id;
    do tmp[n++] = (char)('0' + v % 10); while (v /= 10);
    if (!*first) b->s[b->len++] = ' ';
    if (id < 0) b->s[b->len++] = '-';
    while (n) b->s[b->len++] = tmp[--n];
    b->s[b->len] = 0;
    *first = 0;
}

static void encode_line(const tok *t, const tk_opts *o, const char *s, size_t len, long lineno,
                        strbuf *out) {
    int32_t *ids;
    int n = tok_encode(t, s, len, &ids);
    if (n < 0) {
        size_t i = bad_utf8(s, len);
        if (o->whole) die_data(o->in, "invalid UTF-8 at byte offset %zu", i);
        die_data(o->in, "line %ld: invalid UTF-8 at byte %zu of the line", lineno, i + 1);
    }
    int first = 1, npre = 0, npost = 0;
    const int32_t *pre = NULL, *post = NULL;
    char why[256];
    if (o->special) tok_special_wrap(t, &pre, &npre, &post, &npost, why, sizeof why);   /* checked in main */
    for (int i = 0; i < npre; i++) put_id(out, pre[i], &first);
    if (o->bos) put_id(out, tok_cls(t) >= 0 ? tok_cls(t) : tok_bos(t), &first);
    for (int i = 0; i < n; i++) put_id(out, ids[i], &first);
    if (o->bos && tok_cls(t) >= 0 && tok_sep(t) >= 0) put_id(out, tok_sep(t), &first);
    for (int i = 0; i < npost; i++) put_id(out, post[i], &first);
    sb_printf(out, "\n");
    free(ids);
}

static void print_info(const tok *t, strbuf *out) {
    sb_printf(out, "vocab\t%d\nbos\t%d\neos\t%d\ncls\t%d\nsep\t%d\npad\t%d\n", tok_vocab_size(t), tok_bos(t),
              tok_eos(t), tok_cls(t), tok_sep(t), tok_pad(t));
}

int main(int argc, char **argv) {
    cli_init(argv[0]);
    tk_opts o;
    parse_args(argc, argv, &o);
    cli_out_plan(o.out);
    char err[1024] = "";
    tok *t = tok_load(o.tokenizer, o.family, err, sizeof err);
    if (!t) {
        if (o.family && strstr(err, "unknown tokenizer family")) die_usage("--family: %s", err);
        die_data(NULL, "%s", err);
    }
    if (o.bos && tok_cls(t) < 0 && tok_bos(t) < 0)
        die_data(o.tokenizer, "this tokenizer has no BOS token (--bos)");
    const int32_t *pre, *post;
    int npre, npost;
    char why[256];
    if (o.special && tok_special_wrap(t, &pre, &npre, &post, &npost, why, sizeof why))
        die_data(o.tokenizer, "--special: %s", why);
    strbuf out = {0};
    if (o.info) {
        print_info(t, &out);
    } else {
        size_t len;
        unsigned char *text = cli_slurp(o.in, &len);
        if (o.header) {
            prov *p = prov_new();
            prov_tokenizer(p, o.tokenizer);
            prov_input_buf(p, o.in, text, len);
            prov_opt_str(p, "tokenizer", o.tokenizer);
            prov_opt_str(p, "family", o.family ? o.family : "");
            prov_opt_int(p, "bos", o.bos);
            prov_opt_int(p, "special", o.special);
            prov_opt_int(p, "whole", o.whole);
            char *js = prov_json(p);
            sb_printf(&out, "# %s\n", js);
            free(js);
            prov_free(p);
        }
        if (o.whole) {
            encode_line(t, &o, (const char *)text, len, 1, &out);
        } else {
            size_t pos = 0;
            long lineno = 0;
            while (pos < len) {
                const char *nl = memchr(text + pos, '\n', len - pos);
                size_t end = nl ? (size_t)(nl - (const char *)text) : len;
                encode_line(t, &o, (const char *)text + pos, end - pos, ++lineno, &out);
                pos = end + 1;
            }
        }
        free(text);
    }
    cli_write_bytes(o.out, out.s ? out.s : "", out.len);
    sb_free(&out);
    tok_free(t);
    return 0;
}

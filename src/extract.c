/* extract: run a transformer over token windows and write every attention row as
 * log-probabilities (the attention file), optionally the per-token negative log-likelihood and
 * perplexity, optionally with heads pruned. One sequence at a time, so memory does not grow
 * with the number of sequences. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <gsl/gsl_rng.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <utf8proc.h>

#include "attn/attnio.h"
#include "cli/cli.h"
#include "io/h5io.h"
#include "io/image.h"
#include "model/inputs.h"
#include "model/mlm.h"
#include "model/model.h"
#include "model/model_load.h"
#include "model/posenc.h"
#include "model/queries.h"
#include "tok/tok.h"

static void usage(void) {
    printf(
        "Usage: %s --model PATH (--text FILE | --ids FILE) [options] OUTPUT|-\n"
        "       %s --model PATH (--text FILE | --ids FILE) --no-attention [--nll FILE]\n"
        "       %s --model VIT_DIR --images DIR|LIST [--predictions FILE] [options] OUTPUT|-\n"
        "       %s --model PATH --info\n"
        "       %s --merge OUTPUT|- SHARD.h5...\n"
        "Run a model over S windows of T tokens and write its attention rows as natural-log\n"
        "probabilities (score - logsumexp(scores)) for every layer and head: the attention file.\n\n"
        "Model and inputs:\n"
        "      --model PATH      Hugging Face directory (config.json + model.safetensors or\n"
        "                        model.safetensors.index.json; gpt2, gpt_neox, llama, qwen2, bert,\n"
        "                        phi, mistral, gemma, gemma2, qwen3, opt, roberta, xlm-roberta),\n"
        "                        a *.gguf file, or a llama2.c *.bin checkpoint\n"
        "      --tokenizer PATH  tokenizer (default: the model directory; the .gguf itself; the\n"
        "                        tok*.bin beside a llama2.c .bin)\n"
        "      --text FILE       UTF-8 text ('-' = stdin), tokenised whole, then cut into windows;\n"
        "                        special-token text in it (<s>, [MASK], ...) as tokenize reads\n"
        "                        it: a tokenizer.json's added tokens become their ids, a\n"
        "                        SentencePiece tokenizer.model encodes them as text\n"
        "      --ids FILE        token ids, one sequence per line (whitespace separated, used as\n"
        "                        given: no BOS added); T = longest line, S = number of lines;\n"
        "                        BERT pads shorter lines with [PAD] (masked keys), causal models\n"
        "                        need equal lengths. Blank lines and '#' lines are skipped\n"
        "  -S, --sequences N     windows taken from --text (64)\n"
        "  -T, --tokens N        tokens per window, specials included (128)\n"
        "      --seed N          seed of the random window offsets (1)\n"
        "      --sequential      consecutive windows from the start instead of random offsets\n"
        "      --no-bos          do not prepend BOS (gpt2, gpt_neox, phi: <|endoftext|>; llama,\n"
        "                        mistral, gemma, gemma2: its BOS; opt: </s>; qwen2, qwen3 never\n"
        "                        get one; bert is always [CLS] ... [SEP], roberta <s> ... </s>)\n"
        "      --images DIR|LIST images for a vit model (ViTForImageClassification / ViTModel):\n"
        "                        a folder (its *.png, *.jpg, *.jpeg by name) or a list file (one\n"
        "                        path per line, relative to the list's folder; '-' = stdin).\n"
        "                        Decoded with libpng/libjpeg-turbo, converted as PIL's\n"
        "                        convert(\"RGB\") after the EXIF orientation, then the model's\n"
        "                        preprocessor_config.json (ViTImageProcessor defaults when\n"
        "                        absent). One sequence per image, T = 1 + (image/patch)^2, CLS = 0\n"
        "      --predictions FILE TSV of each image's top-5 classes (id2label) and probabilities:\n"
        "                        '# ' provenance, header image rank class label probability\n"
        "      --pixels FILE     HDF5 dataset 'pixel_values' float32 [S,3,H*W], the preprocessed\n"
        "                        model input of each image (validation)\n"
        "Outputs:\n"
        "      --layers LIST     layers to write, e.g. 0,2,5-7 (all); recorded as 'layer_index'\n"
        "      --heads LIST      heads to write (all); recorded as 'head_index'\n"
        "      --sink K          sink key index stored in the file (0)\n"
        "      --nll FILE        TSV of per-token negative log-likelihood: '# ' provenance, then\n"
        "                        '# perplexity', '# tokens' lines, header seq pos token nll;\n"
        "                        causal models: position t predicts token t+1; encoders with a\n"
        "                        masked-LM head (bert, roberta): the masked positions (below)\n"
        "      --mlm-rate P      encoders: share of the non-special positions of each sequence\n"
        "                        replaced by the mask token for the masked-LM perplexity, in\n"
        "                        (0, 1]; at least one per sequence (0.15)\n"
        "      --mlm-seed N      encoders: seed of the masked positions; sequence s draws from\n"
        "                        mt19937 seeded (N*2654435761 + s) mod 2^32, so the positions do not\n"
        "                        depend on --batch, --threads or --mask (1)\n"
        "      --logits FILE     HDF5 dataset 'logits' float32 [S,T,vocab] (validation; large);\n"
        "                        encoders: of the masked input; vit: [S,1,classes], the\n"
        "                        classifier on the CLS row\n"
        "      --mask FILE       heads to prune, one 'layer head' per line (0-based; '#' comments):\n"
        "                        their outputs are zeroed before the output projection\n"
        "      --no-attention    write no attention file (OUTPUT not needed); prints perplexity\n"
        "      --info            print the parsed configuration as key<TAB>value lines and exit\n"
        "                        (a Hugging Face directory needs only its config.json)\n"
        "      --threads N       OpenMP threads (all cores); the results do not depend on it\n"
        "      --batch N         sequences per forward pass (4): larger GEMMs, same results\n"
        "      --seqs A:B        write only windows A..B-1 of the S (a shard, with the attention\n"
        "                        of those windows exactly as the whole run gives them); the\n"
        "                        shards of one run join with --merge; with --queries each window\n"
        "                        keeps the rows the whole run draws for it. Not with --nll,\n"
        "                        --logits, --no-attention or --images\n"
        "      --merge           join shards made by --seqs with the same inputs and options into\n"
        "                        OUTPUT: byte-identical to the attention file of one run over all\n"
        "                        S windows (its provenance is that run's; docs/CLUSTER.md)\n"
        "      --deflate N       compression level of the attention file, 0 (none) to 9 (1);\n"
        "                        0 writes about twice the bytes in about 40%% less time\n"
        "      --progress        progress bar on stderr; --no-progress: none (default: when\n"
        "                        stderr is a terminal)\n"
        "      --queries N       keep N query rows per sequence (each with all its keys), one\n"
        "                        drawn per stratum of the eligible positions (valid; t >= 2 when\n"
        "                        causal); recorded as 'query_pos' [S,N] (docs/EXTRACT.md)\n"
        "      --query-seed N    seed of --queries; sequence s draws from mt19937 seeded\n"
        "                        (N*2654435761 + s) mod 2^32 (1)\n"
        "      --query-list FILE keep these query positions (whitespace separated, '#' comments)\n"
        "                        in every sequence instead\n"
        "  -h, --help, -V, --version\n\n"
        "When perplexity is computed (--nll, --logits, --no-attention) and stdout carries no file,\n"
        "'perplexity<TAB>value' is printed on stdout. For an encoder it is the masked-LM perplexity:\n"
        "exp(mean NLL of the original tokens at the masked positions), one forward pass per sequence\n"
        "with those positions replaced by [MASK]/<mask>; the attention file stays that of the\n"
        "unmasked input (docs/EXTRACT.md).\n\n"
        "Memory: at most 2.2 bytes per parameter for F16/BF16 Hugging Face files (their weight\n"
        "matrices and token embedding stay memory-mapped in the stored precision and are widened\n"
        "64 rows at a time inside each product; norms, biases and position tables are widened at\n"
        "load); 4 bytes per parameter for F32 files (memory-mapped), GGUF files (converted to\n"
        "float32), GPT-2's Conv1D and NeoX's fused QKV weights (converted copies). Plus the token\n"
        "ids of the text, 256*max(hidden, ffn)*threads bytes of widening buffers, and batch x\n"
        "(4*L*H*T*T bytes of attention, 4*T*vocab bytes of logits with --nll/--logits/\n"
        "--no-attention, 4*T*(6*hidden + 2*ffn) bytes of activations) + 8*T*T*threads bytes;\n"
        "independent of S. With --queries/--query-list the attention term is 4*H*Q*T bytes (one\n"
        "layer's kept rows) and the scores 8*128*T*threads bytes: nothing grows with T*T.\n",
        cli_prog(), cli_prog(), cli_prog(), cli_prog(), cli_prog());
}

typedef struct {
    const char *model, *tokenizer, *text, *ids, *layers, *heads, *nll, *logits, *mask, *out, *images, *predictions, *pixels;
    const char *seqs;          /* --seqs A:B as given (recorded in a shard's provenance) */
    char **shards;             /* --merge: the shard files */
    int S, T, sink, sequential, no_bos, no_attention, threads, batch, deflate, info, mlm_given;
    int seq_a, seq_b, merge, nshards;
    long long seed, mlm_seed;
    int queries, query_seed_given;   /* --queries N (0: every row) */
    long long query_seed;
    const char *query_list;
    double mlm_rate;
} opts;

enum { O_MODEL = 256, O_TOK, O_TEXT, O_IDS, O_SEED, O_SEQ, O_NOBOS, O_LAYERS, O_HEADS, O_SINK, O_NLL,
       O_LOGITS, O_MASK, O_NOATT, O_THREADS, O_BATCH, O_DEFLATE, O_INFO, O_IMAGES, O_PRED, O_PIXELS,
       O_MLM_RATE, O_MLM_SEED, O_SEQS, O_MERGE, O_QUERIES, O_QSEED, O_QLIST };

/* --mlm-rate: a share in (0, 1] (0 would mask nothing; cli_parse_double takes closed ranges). */
static double parse_rate(const char *s) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0 && v <= 1)) die_usage("--mlm-rate: '%s' is not a number in (0, 1]", s);
    return v;
}

/* --seqs A:B: windows A..B-1 (checked against S once the input is read). */
static void parse_seqs(const char *s, opts *o) {
    const char *colon = strchr(s, ':');
    if (!colon || colon == s || !colon[1]) die_usage("--seqs: '%s' is not A:B", s);
    char *a = xstrdup(s);
    a[colon - s] = 0;
    o->seq_a = (int)cli_parse_long("seqs", a, 0, (1 << 24) - 1);
    free(a);
    o->seq_b = (int)cli_parse_long("seqs", colon + 1, 1, 1 << 24);
    if (o->seq_b <= o->seq_a) die_usage("--seqs: empty range '%s'", s);
    o->seqs = s;
}

/* --merge OUTPUT SHARD...: nothing else (the shards carry the whole run's options). */
static void check_merge_args(int argc, char **argv, opts *o) {
    if (o->model || o->tokenizer || o->text || o->ids || o->images || o->seqs || o->nll || o->logits || o->mask ||
        o->layers || o->heads || o->no_attention || o->info || o->predictions || o->pixels)
        die_usage("--merge takes only OUTPUT and the shard files (the shards carry the run's options)");
    cli_operands(argc, argv, 2, -1, "OUTPUT and at least one shard after --merge");
    o->out = argv[optind];
    o->shards = argv + optind + 1;
    o->nshards = argc - optind - 1;
}

/* --queries / --query-seed / --query-list: sampled rows need an attention file of text or ids. */
static void check_query_options(const opts *o) {
    if (o->queries && o->query_list) die_usage("give --queries or --query-list, not both");
    if (o->query_seed_given && !o->queries) die_usage("--query-seed needs --queries");
    if (!o->queries && !o->query_list) return;
    if (o->images) die_usage("--queries and --query-list are for text and ids, not with --images");
    if (o->no_attention) die_usage("--queries and --query-list choose attention rows: not with --no-attention");
    if (o->info) die_usage("--info takes only --model");
}

static void parse_args(int argc, char **argv, opts *o) {
    static const struct option lo[] = {
        {"model", 1, 0, O_MODEL}, {"tokenizer", 1, 0, O_TOK}, {"text", 1, 0, O_TEXT}, {"ids", 1, 0, O_IDS},
        {"sequences", 1, 0, 'S'}, {"tokens", 1, 0, 'T'}, {"seed", 1, 0, O_SEED}, {"sequential", 0, 0, O_SEQ},
        {"no-bos", 0, 0, O_NOBOS}, {"layers", 1, 0, O_LAYERS}, {"heads", 1, 0, O_HEADS}, {"sink", 1, 0, O_SINK},
        {"nll", 1, 0, O_NLL}, {"logits", 1, 0, O_LOGITS}, {"mask", 1, 0, O_MASK},
        {"no-attention", 0, 0, O_NOATT}, {"threads", 1, 0, O_THREADS}, {"batch", 1, 0, O_BATCH}, {"deflate", 1, 0, O_DEFLATE}, {"info", 0, 0, O_INFO},
        {"mlm-rate", 1, 0, O_MLM_RATE}, {"mlm-seed", 1, 0, O_MLM_SEED}, {"images", 1, 0, O_IMAGES}, {"predictions", 1, 0, O_PRED}, {"pixels", 1, 0, O_PIXELS},
        {"seqs", 1, 0, O_SEQS}, {"merge", 0, 0, O_MERGE},
        {"queries", 1, 0, O_QUERIES}, {"query-seed", 1, 0, O_QSEED}, {"query-list", 1, 0, O_QLIST}, {"help", 0, 0, 'h'},
        {"version", 0, 0, 'V'}, CLI_PROGRESS_OPTIONS, {0, 0, 0, 0}};
    *o = (opts){.S = 64, .T = 128, .seed = 1, .batch = 4, .deflate = 1, .mlm_rate = 0.15, .mlm_seed = 1, .query_seed = 1};
    int c;
    while ((c = getopt_long(argc, argv, "S:T:hV", lo, NULL)) != -1) {
        switch (c) {
        case O_MODEL: o->model = optarg; break;
        case O_TOK: o->tokenizer = optarg; break;
        case O_TEXT: o->text = optarg; break;
        case O_IDS: o->ids = optarg; break;
        case 'S': o->S = (int)cli_parse_long("sequences", optarg, 1, 1 << 24); break;
        case 'T': o->T = (int)cli_parse_long("tokens", optarg, 2, 1 << 16); break;
        case O_SEED: o->seed = cli_parse_long("seed", optarg, 0, (1L << 62)); break;
        case O_SEQ: o->sequential = 1; break;
        case O_NOBOS: o->no_bos = 1; break;
        case O_LAYERS: o->layers = optarg; break;
        case O_HEADS: o->heads = optarg; break;
        case O_SINK: o->sink = (int)cli_parse_long("sink", optarg, 0, 1 << 16); break;
        case O_NLL: o->nll = optarg; break;
        case O_LOGITS: o->logits = optarg; break;
        case O_MASK: o->mask = optarg; break;
        case O_NOATT: o->no_attention = 1; break;
        case O_THREADS: o->threads = (int)cli_parse_long("threads", optarg, 1, 1024); break;
        case O_BATCH: o->batch = (int)cli_parse_long("batch", optarg, 1, 1024); break;
        case O_DEFLATE: o->deflate = (int)cli_parse_long("deflate", optarg, 0, 9); break;
        case O_INFO: o->info = 1; break;
        case O_IMAGES: o->images = optarg; break;
        case O_PRED: o->predictions = optarg; break;
        case O_PIXELS: o->pixels = optarg; break;
        case O_MLM_RATE: o->mlm_rate = parse_rate(optarg), o->mlm_given = 1; break;
        case O_SEQS: parse_seqs(optarg, o); break;
        case O_MERGE: o->merge = 1; break;
        case O_MLM_SEED:
            o->mlm_seed = cli_parse_long("mlm-seed", optarg, 0, (1L << 62));
            o->mlm_given = 1;
            break;
        case CLI_OPT_PROGRESS: case CLI_OPT_NO_PROGRESS: cli_progress_option(c); break;
        case O_QUERIES: o->queries = (int)cli_parse_long("queries", optarg, 1, 1 << 16); break;
        case O_QSEED: o->query_seed = cli_parse_long("query-seed", optarg, 0, (1L << 62)), o->query_seed_given = 1; break;
        case O_QLIST: o->query_list = optarg; break;
        case 'h': usage(); exit(0);
        case 'V': cli_print_version(); exit(0);
        default: cli_bad_option(argv, lo, "S:T:hV");
        }
    }
    if (o->merge) {
        check_merge_args(argc, argv, o);
        return;
    }
    if (!o->model) die_usage("--model is required (see --help)");
    check_query_options(o);
    if (o->info) {
        if (o->text || o->ids || o->images || optind < argc) die_usage("--info takes only --model");
        return;
    }
    if (!!o->text + !!o->ids + !!o->images != 1) die_usage("give exactly one of --text, --ids and --images (see --help)");
    if (o->images && o->nll) die_usage("--nll is for language models, not with --images");
    if (o->images && o->mlm_given) die_usage("--mlm-rate and --mlm-seed are for text encoders, not with --images");
    if (!o->images && (o->predictions || o->pixels)) die_usage("--predictions and --pixels need --images");
    if (o->images && o->no_attention && !o->predictions && !o->logits && !o->pixels)
        die_usage("--images with --no-attention needs --predictions, --logits or --pixels");
    if (o->seqs && (o->images || o->nll || o->logits || o->no_attention))
        die_usage("--seqs splits the attention file only: not with --nll, --logits, --no-attention or --images");
    if (o->no_attention) {
        cli_operands(argc, argv, 0, 0, "no OUTPUT with --no-attention");
    } else {
        cli_operands(argc, argv, 1, 1, "one OUTPUT");
        o->out = argv[optind];
    }
}

/* ---- inputs ------------------------------------------------------------------------------ */

typedef seq_batch batch;   /* model/inputs.h */

/* "0,2,5-7" → flags[0..n); dies on anything outside [0, n). */
static int parse_list(const char *opt, const char *s, int n, int *idx) {
    char err[1024];
    int k = inputs_parse_list(opt, s, n, idx, err, sizeof err);
    if (k < 0) die_usage("%s", err);
    return k;
}

static void check_ids(const char *file, const int32_t *ids, size_t n, int vocab) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab)
            die_data(file, "token id %d out of range [0, %d)", ids[i], vocab);
}

/* --ids: one sequence per line; BERT pads to the longest line, causal models need equal lines. */
static void read_ids(const opts *o, const model *m, batch *b) {
    char err[1024];
    if (inputs_read_ids(o->ids, m->cfg.vocab, m->cfg.pad_id, m->cfg.causal, b, err, sizeof err))
        die_data(o->ids, "%s", err);
}

/* The tokenizer path: explicit, else the model directory / .gguf / tok*.bin beside a .bin. */
static char *tokenizer_path(const opts *o) {
    if (o->tokenizer) return xstrdup(o->tokenizer);
    struct stat sb;
    size_t n = strlen(o->model);
    if ((stat(o->model, &sb) == 0 && S_ISDIR(sb.st_mode)) || (n >= 5 && !strcmp(o->model + n - 5, ".gguf")))
        return xstrdup(o->model);
    char *copy = xstrdup(o->model), *dir = dirname(copy), *found = NULL;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (!strncmp(e->d_name, "tok", 3) && l > 4 && !strcmp(e->d_name + l - 4, ".bin") &&
            (!found || strcmp(e->d_name, strrchr(found, '/') + 1) < 0)) {
            free(found);
            found = xmalloc(strlen(dir) + l + 2);
            sprintf(found, "%s/%s", dir, e->d_name);
        }
    }
    if (d) closedir(d);
    if (!found) die_data(o->model, "no tok*.bin beside this llama2.c checkpoint; give --tokenizer");
    free(copy);
    return found;
}

/* Special tokens around each window (§ BOS policy): [lead] text... [trail]. */
static void specials(const opts *o, const model *m, const tok *tk, int *lead, int *trail) {
    const model_config *c = &m->cfg;
    *lead = *trail = -1;
    if (c->family == FAM_BERT) {
        *lead = tok_cls(tk) >= 0 ? tok_cls(tk) : tok_id(tk, "[CLS]");
        *trail = tok_sep(tk) >= 0 ? tok_sep(tk) : tok_id(tk, "[SEP]");
        if (*lead < 0 || *trail < 0) die_data(o->model, "tokenizer has no [CLS]/[SEP]");
        return;
    }
    if (c->family == FAM_ROBERTA) {
        *lead = tok_id(tk, "<s>") >= 0 ? tok_id(tk, "<s>") : c->bos_id;
        *trail = tok_id(tk, "</s>") >= 0 ? tok_id(tk, "</s>") : c->eos_id;
        if (*lead < 0 || *trail < 0) die_data(o->model, "tokenizer has no <s>/</s>");
        return;
    }
    if (o->no_bos || c->family == FAM_QWEN2 || c->family == FAM_QWEN3) return;
    if (c->family == FAM_OPT)   /* OPT's tokenizer prepends </s> (bos_token_id 2) */
        *lead = c->bos_id;
    else if (c->family == FAM_LLAMA || c->family == FAM_MISTRAL || c->family == FAM_GEMMA || c->family == FAM_GEMMA2)
        *lead = tok_bos(tk) >= 0 ? tok_bos(tk) : c->bos_id;
    else
        *lead = tok_id(tk, "<|endoftext|>") >= 0 ? tok_id(tk, "<|endoftext|>") : c->bos_id;
    if (*lead < 0) die_data(o->model, "no BOS token known; use --no-bos");
}

/* Offset of the first byte that is not part of valid UTF-8 (len when all is). */
static size_t bad_utf8_at(const unsigned char *s, size_t len) {
    size_t i = 0;
    for (utf8proc_int32_t c; i < len;) {
        utf8proc_ssize_t n = utf8proc_iterate(s + i, (utf8proc_ssize_t)(len - i), &c);
        if (n <= 0) break;
        i += (size_t)n;
    }
    return i;
}

/* --text: tokenise the whole text, then S windows at seeded random offsets or consecutively. */
static void read_text(const opts *o, const model *m, const char *tokpath, batch *b) {
    size_t len;
    static unsigned char *text;   /* static: reachable on error exits */
    static int32_t *ids;
    text = cli_slurp(o->text, &len);
    cli_sha256_hex(text, len, b->sha);
    if (!len) die_data(o->text, "empty text");
    char err[1024];
    static tok *tk;               /* static too: the refusals below exit with it loaded */
    tk = tok_load(tokpath, m->cfg.model_type, err, sizeof err);
    if (!tk || tok_check_model_vocab(tk, tokpath, m->cfg.vocab, err, sizeof err)) die_data(NULL, "%s", err);
    int n = tok_encode(tk, (const char *)text, len, &ids);
    if (n >= 0) free(text), text = NULL;
    if (n < 0) die_data(o->text, "invalid UTF-8 at byte offset %zu (every tokenizer refuses it)", bad_utf8_at(text, len));
    if (n == 0) die_data(o->text, "empty text (no tokens)");
    int lead, trail;
    specials(o, m, tk, &lead, &trail);
    tok_free(tk);
    check_ids(o->text, ids, (size_t)n, m->cfg.vocab);
    int need = o->T - (lead >= 0) - (trail >= 0);
    if (need < 1) die_usage("--tokens %d leaves no room for text", o->T);
    if (n < need) die_data(o->text, "%d tokens, fewer than one window of %d", n, need);
    if (o->sequential && (long long)o->S * need > n)
        die_data(o->text, "%d tokens, fewer than %d sequential windows of %d", n, o->S, need);
    b->S = o->S, b->T = o->T;
    b->ids = xmalloc(sizeof *b->ids * (size_t)b->S * b->T);
    b->valid = xmalloc((size_t)b->S * b->T);
    memset(b->valid, 1, (size_t)b->S * b->T);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, (unsigned long)o->seed);
    for (int s = 0; s < b->S; s++) {
        long off = o->sequential ? (long)s * need : (long)gsl_rng_uniform_int(r, (unsigned long)(n - need + 1));
        int32_t *w = b->ids + (size_t)s * b->T, t = 0;
        if (lead >= 0) w[t++] = lead;
        memcpy(w + t, ids + off, sizeof *ids * (size_t)need);
        if (trail >= 0) w[t + need] = trail;
    }
    gsl_rng_free(r);
    free(ids);
    ids = NULL;
}

/* --mask: "layer head" per line → head_keep (1 = kept). */
static uint8_t *read_mask(const char *path, const model_config *c) {
    char err[1024];
    uint8_t *keep = inputs_read_mask(path, c->n_layer, c->n_head, err, sizeof err);
    if (!keep) die_data(path, "%s", err);
    return keep;
}

/* ---- provenance -------------------------------------------------------------------------- */

static void prov_file(prov *p, const char *path) {
    char hex[65];
    if (cli_is_stdio(path)) return;
    if (cli_sha256_file(path, hex) != 0) die_data(path, "cannot read");
    prov_input(p, path, hex);
}

/* Tokenizer files actually present at the tokenizer path. */
static void prov_tokenizer(prov *p, const char *tokpath) {
    struct stat sb;
    if (stat(tokpath, &sb) != 0) return;
    if (!S_ISDIR(sb.st_mode)) {
        prov_file(p, tokpath);
        return;
    }
    static const char *names[] = {"tokenizer.json", "vocab.json", "merges.txt", "vocab.txt", "tokenizer.model",
                                  "tokenizer_config.json", "special_tokens_map.json"};
    char f[4096];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(f, sizeof f, "%s/%s", tokpath, names[i]);
        if (stat(f, &sb) == 0) prov_file(p, f);
    }
}

/* The options text and image runs share (the provenance keys are sorted when written). */
static void prov_shared_options(prov *p, const opts *o, const model *m) {
    prov_opt_str(p, "layers", o->layers ? o->layers : "all");
    prov_opt_str(p, "heads", o->heads ? o->heads : "all");
    prov_opt_int(p, "sink", o->sink);
    prov_opt_str(p, "logits", o->logits ? o->logits : "");
    prov_opt_str(p, "mask", o->mask ? o->mask : "");
    prov_opt_int(p, "no_attention", o->no_attention);
    prov_opt_int(p, "batch", o->batch);
    prov_opt_int(p, "deflate", o->deflate);
    prov_opt_str(p, "family", m->cfg.model_type);
}

/* seqs: the --seqs range of a shard, NULL for the provenance of the whole run. */
static char *make_prov(const opts *o, const model *m, const char *tokpath, const batch *b, const char *seqs) {
    prov *p = prov_new();
    if (m->n_files && m->files_sha256)
        for (int i = 0; i < m->n_files; i++) prov_input(p, m->files[i], m->files_sha256[i]);
    else if (m->sha256[0])
        prov_input(p, o->model, m->sha256);
    else
        prov_file(p, o->model);
    if (tokpath) prov_tokenizer(p, tokpath);
    prov_input(p, cli_display_name(o->text ? o->text : o->ids), b->sha);
    if (b->upstream) prov_upstream(p, b->upstream);
    if (o->mask) prov_file(p, o->mask);
    prov_opt_str(p, "model", o->model);
    prov_opt_str(p, "tokenizer", tokpath ? tokpath : "");
    prov_opt_str(p, "text", o->text ? o->text : "");
    prov_opt_str(p, "ids", o->ids ? o->ids : "");
    prov_opt_int(p, "sequences", b->S);   /* as used: --ids sets both from the file */
    prov_opt_int(p, "tokens", b->T);
    prov_opt_int(p, "seed", o->seed);
    prov_opt_int(p, "sequential", o->sequential);
    prov_opt_int(p, "no_bos", o->no_bos);
    prov_opt_str(p, "nll", o->nll ? o->nll : "");
    if (seqs) prov_opt_str(p, "seqs", seqs);
    if (!m->cfg.causal) {   /* causal models' outputs keep their bytes */
        prov_opt_dbl(p, "mlm_rate", o->mlm_rate);
        prov_opt_int(p, "mlm_seed", o->mlm_seed);
    }
    if (o->queries) {   /* only when given: files of every row keep their bytes */
        prov_opt_int(p, "queries", o->queries);
        prov_opt_int(p, "query_seed", o->query_seed);
    }
    if (o->query_list) {
        prov_file(p, o->query_list);
        prov_opt_str(p, "query_list", o->query_list);
    }
    prov_shared_options(p, o, m);
    char *js = prov_json(p);
    prov_free(p);
    return js;
}

/* ---- outputs ----------------------------------------------------------------------------- */

typedef struct {
    h5io_id f, dset;
    const char *path;
} logits_out;

static void logits_open(logits_out *lo, const char *path, const char *name, int S, int T, int V, const char *provjs) {
    char err[2048];
    lo->path = path;
    lo->f = h5io_create(path, err, sizeof err);
    if (lo->f < 0) cli_check((int)lo->f, err);
    h5io_attr_str(lo->f, "/", "provenance", provjs);
    h5io_size dims[3] = {(h5io_size)S, (h5io_size)T, (h5io_size)V};
    lo->dset = h5io_dataset_f32(lo->f, name, 3, dims);
    if (lo->dset < 0) die_data(path, "cannot create dataset '%s'", name);
}

static void logits_write(logits_out *lo, int s, int T, int V, const float *x) {
    h5io_size start[3] = {(h5io_size)s, 0, 0}, count[3] = {1, (h5io_size)T, (h5io_size)V};
    if (h5io_write_slab_f32(lo->dset, 3, start, count, x) < 0) die_data(lo->path, "cannot write sequence %d", s);
}

/* −log softmax(z)[id] over V logits, in double. */
static double token_nll(const float *z, int V, int id) {
    double mx = -INFINITY, acc = 0;
    for (int j = 0; j < V; j++) mx = z[j] > mx ? z[j] : mx;
    for (int j = 0; j < V; j++) acc += exp(z[j] - mx);
    return mx + log(acc) - z[id];
}

/* NLL of every predicted token of one sequence (both positions valid), appended to rows. */
static void nll_seq(const batch *b, int s, int V, const float *logits, strbuf *rows, double *sum, long long *n) {
    const int32_t *ids = b->ids + (size_t)s * b->T;
    const uint8_t *v = b->valid + (size_t)s * b->T;
    for (int t = 0; t + 1 < b->T; t++) {
        if (!v[t] || !v[t + 1]) continue;
        double nll = token_nll(logits + (size_t)t * V, V, ids[t + 1]);
        *sum += nll;
        (*n)++;
        if (rows) sb_printf(rows, "%d\t%d\t%d\t%.6f\n", s, t + 1, ids[t + 1], nll);
    }
}

/* Masked-LM NLL: at each chosen position, the NLL of the original token under the logits of the
 * masked input. */
static void nll_masked(const batch *b, int s, int V, const float *logits, const uint8_t *chosen, strbuf *rows,
                       double *sum, long long *n) {
    const int32_t *ids = b->ids + (size_t)s * b->T;
    for (int t = 0; t < b->T; t++) {
        if (!chosen[t]) continue;
        double nll = token_nll(logits + (size_t)t * V, V, ids[t]);
        *sum += nll;
        (*n)++;
        if (rows) sb_printf(rows, "%d\t%d\t%d\t%.6f\n", s, t, ids[t], nll);
    }
}

static void write_nll(const char *path, const char *provjs, double ppl, long long n, const strbuf *rows) {
    strbuf out = {0};
    sb_printf(&out, "# %s\n# perplexity\t%.6f\n# tokens\t%lld\nseq\tpos\ttoken\tnll\n", provjs, ppl, n);
    if (rows->len) sb_printf(&out, "%s", rows->s);
    cli_write_bytes(path, out.s, out.len);
    sb_free(&out);
}

/* Selected heads of selected layers, one [H'][T][T] block per layer, from the full tensor. */
static void write_blocks(attn_writer *w, int s, const float *all, const model_config *c, int T, const int *li,
                         int nl, const int *hi, int nh, float *block) {
    size_t tt = (size_t)T * T;
    for (int a = 0; a < nl; a++) {
        const float *layer = all + (size_t)li[a] * c->n_head * tt;
        if (nh == c->n_head) {
            attn_write_block(w, s, a, layer);
            continue;
        }
        for (int h = 0; h < nh; h++) memcpy(block + h * tt, layer + (size_t)hi[h] * tt, sizeof(float) * tt);
        attn_write_block(w, s, a, block);
    }
}

static void write_index(attn_writer *w, const char *name, const int *idx, int n, int total) {
    if (n == total) return;
    h5io_size d = (h5io_size)n;
    h5io_write_i32(attn_writer_file(w), name, 1, &d, idx);
}

/* Everything one run holds; static in main so error exits leave it reachable (LeakSanitizer). */
typedef struct {
    opts o;
    model *m;
    batch b;
    char *tokpath, *provjs;
    char *whole_provjs;          /* --seqs: the provenance of the run over all S windows */
    int whole_S;
    int *li, *hi, nl, nh;        /* selected layers and heads */
    uint8_t *keep;               /* --mask */
    attn_writer *w;
    logits_out lo, px;           /* --logits; --pixels (images) */
    float *att, *block, *logits;
    uint8_t *chosen;             /* encoders' masked-LM perplexity: [S][T] masked positions */
    int32_t *qpos;               /* --queries/--query-list: [S][Q] kept query positions, else NULL */
    int Q;
    int32_t *masked;             /* one batch of ids with those positions replaced */
    int mask_id;
    strbuf rows;
    double nll_sum;
    long long nll_n;
} run;

/* Model, inputs, selections, mask and provenance. */
/* --layers, --heads (all when absent) and --mask, the same for text and image runs. */
static void select_layers_heads(run *r, const opts *o, const model_config *c) {
    r->li = xmalloc(sizeof(int) * c->n_layer);
    r->hi = xmalloc(sizeof(int) * c->n_head);
    r->nl = o->layers ? parse_list("layers", o->layers, c->n_layer, r->li) : c->n_layer;
    r->nh = o->heads ? parse_list("heads", o->heads, c->n_head, r->hi) : c->n_head;
    for (int i = 0; !o->layers && i < r->nl; i++) r->li[i] = i;
    for (int i = 0; !o->heads && i < r->nh; i++) r->hi[i] = i;
    r->keep = o->mask ? read_mask(o->mask, c) : NULL;
}

/* The tokenizer of a masked-LM run: the one --text used, else (--ids) the one beside the model if
 * it loads; NULL when there is none, and then only config.json names the special ids. */
static tok *encoder_tokenizer(run *r) {
    const opts *o = &r->o;
    char err[1024];
    if (!r->tokpath) {
        struct stat sb;
        if (!o->tokenizer && (stat(o->model, &sb) != 0 || !S_ISDIR(sb.st_mode))) return NULL;
        r->tokpath = tokenizer_path(o);   /* recorded in the provenance: it names the mask token */
        tok *tk = tok_load(r->tokpath, r->m->cfg.model_type, err, sizeof err);
        if (!tk && o->tokenizer) die_data(NULL, "%s", err);
        if (!tk) {
            free(r->tokpath);
            r->tokpath = NULL;
        }
        return tk;
    }
    tok *tk = tok_load(r->tokpath, r->m->cfg.model_type, err, sizeof err);
    if (!tk) die_data(NULL, "%s", err);
    return tk;
}

/* The mask token and the special ids never masked: [CLS] [SEP] [PAD] [MASK], <s> </s> <pad>
 * <mask>, from the tokenizer and config.json; then the masked positions of every sequence, all
 * chosen before any output exists (a sequence with nothing to mask is an input error). */
static void choose_masked(run *r) {
    const opts *o = &r->o;
    const model_config *c = &r->m->cfg;
    tok *tk = encoder_tokenizer(r);
    static const char *const names[] = {"[CLS]", "[SEP]", "[PAD]", "[MASK]", "<s>", "</s>", "<pad>", "<mask>"};
    int special[32], ns = 0;
    int cfg_ids[] = {c->cls_id, c->sep_id, c->pad_id, c->bos_id, c->eos_id, c->mask_id};
    for (size_t i = 0; i < sizeof cfg_ids / sizeof cfg_ids[0]; i++) special[ns++] = cfg_ids[i];
    r->mask_id = -1;
    if (tk) {
        int tok_ids[] = {tok_cls(tk), tok_sep(tk), tok_pad(tk), tok_bos(tk), tok_eos(tk)};
        for (size_t i = 0; i < sizeof tok_ids / sizeof tok_ids[0]; i++) special[ns++] = tok_ids[i];
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) special[ns++] = tok_id(tk, names[i]);
        r->mask_id = tok_id(tk, "[MASK]") >= 0 ? tok_id(tk, "[MASK]") : tok_id(tk, "<mask>");
        tok_free(tk);
    }
    if (r->mask_id < 0) r->mask_id = c->mask_id;
    if (r->mask_id < 0)
        die_data(o->model, "no mask token: no [MASK] or <mask> in a tokenizer and no attncoda_mask_token_id in "
                           "config.json (needed for the masked-LM perplexity)");
    if (r->mask_id >= c->vocab)
        die_data(r->tokpath, "mask token id %d is outside the model's vocabulary of %d", r->mask_id, c->vocab);
    const batch *b = &r->b;
    r->chosen = xmalloc((size_t)b->S * b->T);
    for (int s = 0; s < b->S; s++) {
        size_t at = (size_t)s * b->T;
        if (!mlm_choose(b->ids + at, b->valid + at, b->T, special, ns, o->mlm_rate, o->mlm_seed, s, r->chosen + at))
            die_data(o->text ? o->text : o->ids, "sequence %d has no position to mask (only special tokens)", s + 1);
    }
}

/* --seqs: keep windows A..B-1 of the whole batch. The whole run's provenance is kept for the
 * merge; the shard's own records the range. Padding (the 'valid' dataset) and the sampled query
 * rows (drawn with each window's number in the whole run) are decided by the whole batch, so that
 * every shard and the merged file agree with one run. */
static void keep_shard(run *r) {
    const opts *o = &r->o;
    batch *b = &r->b;
    if (o->seq_b > b->S)
        die_usage("--seqs %d:%d: the input gives %d sequences", o->seq_a, o->seq_b, b->S);
    r->whole_provjs = r->provjs;
    r->provjs = make_prov(o, r->m, r->tokpath, b, o->seqs);
    r->whole_S = b->S;
    size_t T = (size_t)b->T, n = (size_t)(o->seq_b - o->seq_a) * T;
    memmove(b->ids, b->ids + (size_t)o->seq_a * T, n * sizeof *b->ids);
    memmove(b->valid, b->valid + (size_t)o->seq_a * T, n);
    if (r->qpos)
        memmove(r->qpos, r->qpos + (size_t)o->seq_a * r->Q, sizeof *r->qpos * (size_t)(o->seq_b - o->seq_a) * r->Q);
    b->S = o->seq_b - o->seq_a;
}

/* --query-list: positions in [0, T), whitespace separated, '#' to the end of a line comments;
 * any order, each once; the same positions for every sequence. */
static int32_t *read_query_list(const char *path, int T, int *Q) {
    char err[1024];
    int32_t *pos = inputs_read_query_list(path, T, Q, err, sizeof err);
    if (!pos) die_data(path, "%s", err);
    return pos;
}

/* The kept query rows of every sequence, chosen before any output exists. */
static void choose_queries(run *r) {
    const opts *o = &r->o;
    const batch *b = &r->b;
    int causal = r->m->cfg.causal;
    if (o->query_list) {
        int32_t *one = read_query_list(o->query_list, b->T, &r->Q);
        r->qpos = xmalloc(sizeof *r->qpos * (size_t)b->S * r->Q);
        for (int s = 0; s < b->S; s++) memcpy(r->qpos + (size_t)s * r->Q, one, sizeof *one * (size_t)r->Q);
        free(one);
        return;
    }
    r->Q = o->queries;
    r->qpos = xmalloc(sizeof *r->qpos * (size_t)b->S * r->Q);
    for (int s = 0; s < b->S; s++) {
        size_t at = (size_t)s * b->T;
        int E = queries_stratified(b->valid + at, b->T, causal, r->Q, o->query_seed, s, r->qpos + (size_t)s * r->Q);
        if (E < 0)
            die_usage("--queries %d: sequence %d has only %d eligible query positions (valid%s)", r->Q, s + 1, -E,
                      causal ? ", t >= 2" : "");
    }
}

static void setup(run *r) {
    const opts *o = &r->o;
    char err[2048];
    model_set_threads(o->threads);
    r->m = model_load(o->model, err, sizeof err);
    if (!r->m) die_data(NULL, "%s", err);
    const model_config *c = &r->m->cfg;
    if (c->family == FAM_VIT) die_usage("%s is a vit image model: give --images, not --text or --ids", o->model);
    if (c->causal && o->mlm_given)
        die_usage("--mlm-rate and --mlm-seed are for encoders (masked-LM perplexity); %s is causal", o->model);
    if ((o->nll || o->logits || o->no_attention) && !r->m->w.lm_head)
        die_usage("%s: %s has no language-model head (no --nll, --logits or --no-attention)", o->model,
                  c->model_type);
    r->tokpath = o->text ? tokenizer_path(o) : NULL;
    if (o->ids)
        read_ids(o, r->m, &r->b);
    else
        read_text(o, r->m, r->tokpath, &r->b);
    if (r->b.T > c->max_pos)
        die_data(o->model, "%d tokens per sequence exceed the model's %d positions", r->b.T, c->max_pos);
    if (o->sink >= r->b.T) die_usage("--sink %d is not below T = %d", o->sink, r->b.T);
    if (!c->causal && (o->nll || o->logits || o->no_attention)) choose_masked(r);
    select_layers_heads(r, o, c);
    if (o->queries || o->query_list) choose_queries(r);
    r->provjs = make_prov(o, r->m, r->tokpath, &r->b, NULL);
    if (o->seqs) keep_shard(r);
}

/* What --merge needs beyond an attention file: the range, the whole run's S and provenance. */
static void write_shard_attrs(run *r) {
    h5io_id f = attn_writer_file(r->w);
    h5io_attr_str(f, "/", "shard_sequences", r->o.seqs);
    h5io_attr_int(f, "/", "shard_of", r->whole_S);
    h5io_attr_str(f, "/", "whole_provenance", r->whole_provjs);
}

/* The attention file (tokens, validity, selected indices) and the logits file, plus buffers
 * for one batch. */
static void open_outputs(run *r, int B) {
    char err[2048];
    const opts *o = &r->o;
    const model_config *c = &r->m->cfg;
    const batch *b = &r->b;
    size_t tt = (size_t)b->T * b->T;
    if (!o->no_attention) {
        attn_meta meta = {.S = b->S, .L = r->nl, .H = r->nh, .T = b->T, .causal = c->causal, .sink = o->sink,
                          .logprob = 1, .seed = o->ids ? -1 : o->seed};
        snprintf(meta.model, sizeof meta.model, "%s", o->model);
        snprintf(meta.family, sizeof meta.family, "%s", c->model_type);
        snprintf(meta.text, sizeof meta.text, "%s", o->text ? o->text : o->ids);
        attn_set_deflate(o->deflate);
        meta.Q = r->Q;
        cli_check(attn_create_rows(&r->w, o->out, &meta, r->provjs, r->qpos, err, sizeof err), err);
        if (o->seqs) write_shard_attrs(r);
        attn_write_tokens(r->w, b->ids);
        if (b->padded || !c->causal) attn_write_valid(r->w, b->valid);
        write_index(r->w, "layer_index", r->li, r->nl, c->n_layer);
        write_index(r->w, "head_index", r->hi, r->nh, c->n_head);
        if (r->qpos) {   /* one layer's kept rows at a time, inside the forward pass */
            if (r->nh != c->n_head) r->block = xmalloc(sizeof(float) * (size_t)r->Q * b->T * r->nh);
        } else {
            r->att = xmalloc(sizeof(float) * tt * c->n_layer * c->n_head * B);
            if (r->nh != c->n_head) r->block = xmalloc(sizeof(float) * tt * r->nh);
        }
    }
    if (o->logits) logits_open(&r->lo, o->logits, "logits", b->S, b->T, c->vocab, r->provjs);
    if (o->nll || o->logits || o->no_attention) r->logits = xmalloc(sizeof(float) * b->T * (size_t)c->vocab * B);
    if (r->chosen) r->masked = xmalloc(sizeof(int32_t) * b->T * (size_t)B);
}

/* Where the forward pass hands each layer's kept rows (sampled queries). */
typedef struct {
    run *r;
    int s0, nb;
} rows_sink;

/* One layer's rows [nb][n_head][Q][T]: the selected heads, written as block (s, position of l in
 * --layers) of each sequence; layers not selected are dropped. */
static void rows_layer_done(void *ctx, int l, const float *rows) {
    const rows_sink *k = ctx;
    run *r = k->r;
    const model_config *c = &r->m->cfg;
    size_t qt = (size_t)r->Q * r->b.T, per = qt * c->n_head;
    for (int a = 0; a < r->nl; a++) {
        if (r->li[a] != l) continue;
        for (int i = 0; i < k->nb; i++) {
            const float *layer = rows + per * i;
            if (r->nh != c->n_head) {
                for (int h = 0; h < r->nh; h++) memcpy(r->block + h * qt, layer + (size_t)r->hi[h] * qt, sizeof(float) * qt);
                layer = r->block;
            }
            attn_write_block(r->w, k->s0 + i, a, layer);
        }
    }
}

/* The attention pass of a batch: every row into r->att, or (sampled queries) the kept rows
 * straight into the file, layer by layer. */
static int forward_attention(run *r, int s0, int nb, const int32_t *ids, float *logits) {
    const batch *b = &r->b;
    size_t at = (size_t)s0 * b->T;
    if (!r->qpos) return model_forward_batch(r->m, ids, b->valid + at, nb, b->T, r->keep, r->att, logits);
    rows_sink k = {r, s0, nb};
    model_query_rows qr = {r->Q, r->qpos + (size_t)s0 * r->Q, rows_layer_done, &k};
    return model_forward_rows(r->m, ids, b->valid + at, nb, b->T, r->keep, &qr, logits);
}

/* The encoder's two passes over a batch: the unmasked input for the attention file (when one is
 * written), then the masked input for the logits. */
static int forward_masked(run *r, int s0, int nb) {
    const batch *b = &r->b;
    size_t at = (size_t)s0 * b->T, n = (size_t)nb * b->T;
    if (r->w) {
        int rc = forward_attention(r, s0, nb, b->ids + at, NULL);
        if (rc) return rc;
    }
    for (size_t i = 0; i < n; i++) r->masked[i] = r->chosen[at + i] ? r->mask_id : b->ids[at + i];
    return model_forward_batch(r->m, r->masked, b->valid + at, nb, b->T, r->keep, NULL, r->logits);
}

/* Forward passes of B sequences at a time; each batch is written before the next. */
static void run_batches(run *r, int B) {
    const model_config *c = &r->m->cfg;
    const batch *b = &r->b;
    size_t per_seq = (size_t)b->T * b->T * c->n_layer * c->n_head, vT = (size_t)b->T * c->vocab;
    progress pg;
    progress_begin(&pg, "extract", "seq", b->S);
    for (int s0 = 0; s0 < b->S; s0 += B) {
        int nb = b->S - s0 < B ? b->S - s0 : B;
        size_t at = (size_t)s0 * b->T;
        int rc = r->chosen ? forward_masked(r, s0, nb)
                           : r->w ? forward_attention(r, s0, nb, b->ids + at, r->logits)
                           : model_forward_batch(r->m, b->ids + at, b->valid + at, nb, b->T, r->keep, r->att, r->logits);
        if (rc) die_data(r->o.model, "forward pass failed on sequences %d-%d (code %d)", s0, s0 + nb - 1, rc);
        for (int k = 0; k < nb; k++) {
            if (r->w && !r->qpos) write_blocks(r->w, s0 + k, r->att + per_seq * k, c, b->T, r->li, r->nl, r->hi, r->nh, r->block);
            if (!r->logits) continue;
            strbuf *rows = r->o.nll ? &r->rows : NULL;
            if (r->chosen)
                nll_masked(b, s0 + k, c->vocab, r->logits + vT * k, r->chosen + (size_t)(s0 + k) * b->T, rows,
                           &r->nll_sum, &r->nll_n);
            else
                nll_seq(b, s0 + k, c->vocab, r->logits + vT * k, rows, &r->nll_sum, &r->nll_n);
            if (r->o.logits) logits_write(&r->lo, s0 + k, b->T, c->vocab, r->logits + vT * k);
        }
        progress_update(&pg, s0 + nb);
    }
    progress_end(&pg);
}

/* Commit the outputs; perplexity on stdout unless stdout already carries a file. */
static void finish(run *r) {
    char err[2048];
    const opts *o = &r->o;
    double ppl = r->nll_n ? exp(r->nll_sum / r->nll_n) : NAN;
    if (o->nll) write_nll(o->nll, r->provjs, ppl, r->nll_n, &r->rows);
    if (o->logits) {
        h5io_close_dataset(r->lo.dset);
        cli_check(h5io_finish(r->lo.f, o->logits, err, sizeof err), err);
    }
    if (r->w) {
        h5io_label_attention(attn_writer_file(r->w));
        cli_check(attn_finish(r->w, err, sizeof err), err);
    }
    int stdout_busy = (r->w && cli_is_stdio(o->out)) || (o->nll && cli_is_stdio(o->nll)) ||
                      (o->logits && cli_is_stdio(o->logits));
    if (r->logits && !stdout_busy) printf("perplexity\t%.6f\n", ppl);
}

static void run_free(run *r) {
    void *p[] = {r->att, r->block, r->logits, r->chosen, r->masked, r->keep, r->li, r->hi, r->provjs, r->tokpath, r->b.ids, r->b.valid,
                 r->b.upstream, r->whole_provjs, r->qpos};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
    sb_free(&r->rows);
    model_free(r->m);
}

/* ---- images (ViT) ------------------------------------------------------------------------ */

/* The images of one run: paths as listed, their SHA-256 (recorded before any is decoded, so the
 * provenance is complete when the file is created), the class labels and the preprocessing. */
typedef struct {
    char **paths;
    char (*sha)[65];
    int n;
    char **labels;        /* id2label, classes entries (HF's LABEL_i when absent) */
    image_prep prep;
    char prep_path[4096];
} image_run;

/* id2label of config.json: keys "0" … "classes−1", each once; tabs and newlines become spaces. */
static char **read_labels(const char *dir, int classes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_error_t je;
    json_t *cfg = json_load_file(path, 0, &je), *map = json_object_get(cfg, "id2label");
    char **labels = xcalloc((size_t)classes, sizeof *labels);
    const char *key;
    json_t *v;
    json_object_foreach(map, key, v) {
        char *end;
        errno = 0;
        long id = strtol(key, &end, 10);
        if (*end || end == key || errno || id < 0 || id >= classes || labels[id] || !json_is_string(v))
            die_data(path, "id2label: key '%.40s' is not a distinct class number in [0, %d) with a string label",
                     key, classes);
        labels[id] = xstrdup(json_string_value(v));
        for (char *q = labels[id]; *q; q++)
            if (*q == '\t' || *q == '\n' || *q == '\r') *q = ' ';
    }
    json_decref(cfg);
    for (int i = 0; i < classes; i++)
        if (!labels[i]) {
            labels[i] = xmalloc(32);
            snprintf(labels[i], 32, "LABEL_%d", i);
        }
    return labels;
}

static char *make_image_prov(const opts *o, const model *m, const image_run *ir) {
    prov *p = prov_new();
    for (int i = 0; i < m->n_files; i++) prov_input(p, m->files[i], m->files_sha256[i]);
    if (ir->prep.from_file) prov_input(p, ir->prep_path, ir->prep.sha256);
    for (int i = 0; i < ir->n; i++) prov_input(p, ir->paths[i], ir->sha[i]);
    if (o->mask) prov_file(p, o->mask);
    prov_opt_str(p, "model", o->model);
    prov_opt_str(p, "images", o->images);
    prov_opt_int(p, "sequences", ir->n);
    prov_opt_int(p, "tokens", m->cfg.max_pos);
    prov_opt_str(p, "predictions", o->predictions ? o->predictions : "");
    prov_opt_str(p, "pixels", o->pixels ? o->pixels : "");
    prov_shared_options(p, o, m);
    prov_opt_int(p, "image_size", m->cfg.image_size);
    prov_opt_int(p, "patch_size", m->cfg.patch_size);
    char *js = prov_json(p);
    prov_free(p);
    return js;
}

/* Model, image list with checksums, preprocessing, selections, mask and provenance. */
static void image_setup(run *r, image_run *ir) {
    const opts *o = &r->o;
    char err[2048];
    model_set_threads(o->threads);
    r->m = model_load(o->model, err, sizeof err);
    if (!r->m) die_data(NULL, "%s", err);
    const model_config *c = &r->m->cfg;
    if (c->family != FAM_VIT) die_usage("--images needs a vit model; %s is %s", o->model, c->model_type);
    if ((o->predictions || o->logits) && !r->m->w.lm_head)
        die_usage("%s has no classifier (a ViTModel): no --predictions or --logits", o->model);
    if (o->sink >= c->max_pos) die_usage("--sink %d is not below T = %d", o->sink, c->max_pos);
    if (image_prep_load(r->m->source, c->image_size, &ir->prep, ir->prep_path, sizeof ir->prep_path, err, sizeof err))
        die_data(NULL, "%s", err);
    if (image_list(o->images, &ir->paths, &ir->n, err, sizeof err)) die_data(NULL, "%s", err);
    ir->sha = xmalloc(sizeof *ir->sha * (size_t)ir->n);
    for (int i = 0; i < ir->n; i++)
        if (cli_sha256_file(ir->paths[i], ir->sha[i])) die_data(ir->paths[i], "cannot read");
    ir->labels = r->m->w.lm_head ? read_labels(r->m->source, c->vocab) : NULL;
    select_layers_heads(r, o, c);
    r->provjs = make_image_prov(o, r->m, ir);
}

/* The attention file (no token ids: image names and checksums in the 'images' attribute as
 * name<TAB>sha256 lines), the logits file and the buffers of one batch. */
static void image_outputs(run *r, const image_run *ir, int B) {
    char err[2048];
    const opts *o = &r->o;
    const model_config *c = &r->m->cfg;
    int T = c->max_pos;
    if (!o->no_attention) {
        attn_meta meta = {.S = ir->n, .L = r->nl, .H = r->nh, .T = T, .causal = 0, .sink = o->sink, .logprob = 1,
                          .seed = -1};
        snprintf(meta.model, sizeof meta.model, "%s", o->model);
        snprintf(meta.family, sizeof meta.family, "%s", c->model_type);
        snprintf(meta.text, sizeof meta.text, "%s", o->images);
        attn_set_deflate(o->deflate);
        cli_check(attn_create(&r->w, o->out, &meta, r->provjs, err, sizeof err), err);
        strbuf names = {0};
        for (int i = 0; i < ir->n; i++) sb_printf(&names, "%s\t%s\n", ir->paths[i], ir->sha[i]);
        h5io_attr_str(attn_writer_file(r->w), "/", "images", names.s);
        sb_free(&names);
        write_index(r->w, "layer_index", r->li, r->nl, c->n_layer);
        write_index(r->w, "head_index", r->hi, r->nh, c->n_head);
        r->att = xmalloc(sizeof(float) * (size_t)T * T * c->n_layer * c->n_head * B);
        if (r->nh != c->n_head) r->block = xmalloc(sizeof(float) * (size_t)T * T * r->nh);
    }
    if (o->logits) logits_open(&r->lo, o->logits, "logits", ir->n, 1, c->vocab, r->provjs);
    if (o->pixels)
        logits_open(&r->px, o->pixels, "pixel_values", ir->n, 3, ir->prep.height * ir->prep.width, r->provjs);
    if (o->logits || o->predictions) r->logits = xmalloc(sizeof(float) * (size_t)c->vocab * B);
}

/* Decode and preprocess image i into px ([3][H][W]); the bytes must be those checksummed. */
static void load_pixels(const image_run *ir, int i, float *px, uint8_t *tmp) {
    size_t len;
    static unsigned char *buf;   /* static: reachable on error exits */
    buf = cli_slurp(ir->paths[i], &len);
    char sha[65], err[1024];
    cli_sha256_hex(buf, len, sha);
    if (strcmp(sha, ir->sha[i])) die_data(ir->paths[i], "changed while extract was running");
    image_rgb im;
    if (image_decode(ir->paths[i], buf, len, &im, err, sizeof err)) die_data(NULL, "%s", err);
    free(buf);
    buf = NULL;
    if (image_pixels(&ir->prep, &im, px, tmp))
        die_data(ir->paths[i], "%dx%d image, the model takes %dx%d and do_resize is false", im.w, im.h,
                 ir->prep.width, ir->prep.height);
    image_free(&im);
}

/* Top-5 classes of one image by softmax probability (ties: lower class first). */
static void predictions_rows(strbuf *rows, const image_run *ir, int i, const float *z, int V) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < V; j++) mx = z[j] > mx ? z[j] : mx;
    for (int j = 0; j < V; j++) sum += exp((double)z[j] - mx);
    int top[5], k = V < 5 ? V : 5;
    for (int a = 0; a < k; a++) {
        int best = -1;
        for (int j = 0; j < V; j++) {
            int used = 0;
            for (int b = 0; b < a; b++) used |= top[b] == j;
            if (!used && (best < 0 || z[j] > z[best])) best = j;
        }
        top[a] = best;
        sb_printf(rows, "%s\t%d\t%d\t%s\t%.6f\n", ir->paths[i], a + 1, best, ir->labels[best],
                  exp((double)z[best] - mx) / sum);
    }
}

/* B images at a time: decoded, preprocessed, run and written before the next batch is read. */
static void image_batches(run *r, const image_run *ir, int B) {
    const model_config *c = &r->m->cfg;
    int T = c->max_pos, H = ir->prep.height, W = ir->prep.width;
    size_t per_img = (size_t)3 * H * W, per_seq = (size_t)T * T * c->n_layer * c->n_head;
    static float *px;
    static uint8_t *tmp;
    px = xmalloc(sizeof(float) * per_img * B);
    tmp = xmalloc(per_img);
    progress pg;
    progress_begin(&pg, "extract", "images", ir->n);
    for (int s0 = 0; s0 < ir->n; s0 += B) {
        int nb = ir->n - s0 < B ? ir->n - s0 : B;
        for (int k = 0; k < nb; k++) load_pixels(ir, s0 + k, px + per_img * k, tmp);
        if (model_forward_images(r->m, px, nb, r->keep, r->att, r->logits))
            die_data(r->o.model, "forward pass failed on images %d-%d", s0, s0 + nb - 1);
        for (int k = 0; k < nb; k++) {
            if (r->w) write_blocks(r->w, s0 + k, r->att + per_seq * k, c, T, r->li, r->nl, r->hi, r->nh, r->block);
            if (r->o.logits) logits_write(&r->lo, s0 + k, 1, c->vocab, r->logits + (size_t)c->vocab * k);
            if (r->o.pixels) logits_write(&r->px, s0 + k, 3, H * W, px + per_img * k);
            if (r->o.predictions) predictions_rows(&r->rows, ir, s0 + k, r->logits + (size_t)c->vocab * k, c->vocab);
        }
        progress_update(&pg, s0 + nb);
    }
    progress_end(&pg);
    free(px);
    free(tmp);
    px = NULL, tmp = NULL;
}

static void run_images(run *r) {
    char err[2048];
    static image_run ir;
    const opts *o = &r->o;
    image_setup(r, &ir);
    int B = o->batch < ir.n ? o->batch : ir.n;
    image_outputs(r, &ir, B);
    image_batches(r, &ir, B);
    if (o->predictions) {
        strbuf out = {0};
        sb_printf(&out, "# %s\nimage\trank\tclass\tlabel\tprobability\n%s", r->provjs, r->rows.len ? r->rows.s : "");
        cli_write_bytes(o->predictions, out.s, out.len);
        sb_free(&out);
    }
    if (o->logits) {
        h5io_close_dataset(r->lo.dset);
        cli_check(h5io_finish(r->lo.f, o->logits, err, sizeof err), err);
    }
    if (o->pixels) {
        h5io_close_dataset(r->px.dset);
        cli_check(h5io_finish(r->px.f, o->pixels, err, sizeof err), err);
    }
    if (r->w) {
        h5io_label_attention(attn_writer_file(r->w));
        cli_check(attn_finish(r->w, err, sizeof err), err);
    }
    image_list_free(ir.paths, ir.n);
    for (int i = 0; ir.labels && i < r->m->cfg.vocab; i++) free(ir.labels[i]);
    free(ir.labels);
    free(ir.sha);
    run_free(r);
}

/* The position encoding as a recipe's `pos` spells it: a model trained here says so in its
 * config.json; every other model has its family's own, read from what the loader set up. */
static const char *position_encoding(const model_config *c) {
    if (c->trained_pos > 0 && c->trained_pos <= POS_COUNT) return posenc_name(c->trained_pos - 1);
    if (c->alibi_slopes) return "alibi";
    if (c->rotary_dim > 0) return "rope";
    if (c->learned_pos || c->family == FAM_VIT) return "learned";   /* ViT: a table in its patch embedding */
    return "none";
}

/* --info: the configuration the forward pass will use, one key<TAB>value per line. */
static void print_info(const char *path) {
    struct stat sb;
    char err[2048];
    model *m = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) ? model_load_hf_config(path, err, sizeof err)
                                                           : model_load(path, err, sizeof err);
    if (!m) die_data(NULL, "%s", err);
    const model_config *c = &m->cfg;
    static const char *const norms[] = {"layernorm", "rmsnorm", "rmsnorm(1+w)"};
    static const char *const acts[] = {"gelu", "gelu_tanh", "silu", "relu", "quick_gelu"};
    static const char *const blocks[] = {"pre_ln", "parallel", "parallel_one_norm", "sandwich", "post_ln"};
    printf("model_type\t%s\nblock\t%s\nlayers\t%d\nhidden\t%d\nheads\t%d\nkv_heads\t%d\nhead_dim\t%d\n",
           c->model_type, blocks[c->block], c->n_layer, c->d_model, c->n_head, c->n_kv_head, c->head_dim);
    printf("ffn\t%d\ngated_mlp\t%d\nactivation\t%s\nvocab\t%d\nmax_positions\t%d\nnorm\t%s\nnorm_eps\t%g\n",
           c->d_ff, c->gated_mlp, acts[c->act], c->vocab, c->max_pos, norms[c->norm], c->norm_eps);
    printf("causal\t%d\nrotary_dim\t%d\nrope_theta\t%g\nlearned_positions\t%d\nposition_offset\t%d\n", c->causal,
           c->rotary_dim, c->rope_theta, c->learned_pos, c->pos_offset);
    printf("position_encoding\t%s\n", position_encoding(c));
    printf("embed_dim\t%d\nembed_scale\t%.9g\nattn_scale\t%.9g\nattn_softcap\t%g\nfinal_softcap\t%g\nqk_norm\t%d\n",
           c->d_embed > 0 ? c->d_embed : c->d_model, c->emb_scale > 0 ? c->emb_scale : 1.0,
           c->attn_scale > 0 ? c->attn_scale : 1.0 / sqrt((double)c->head_dim), c->attn_softcap, c->final_softcap,
           c->qk_norm);
    printf("tied_head\t%d\nbos_id\t%d\neos_id\t%d\npad_id\t%d\nsliding_window", c->tied_head, c->bos_id, c->eos_id,
           c->pad_id);
    for (int l = 0; l < c->n_layer; l++) printf("%c%d", l ? ',' : '\t', m->w.layers ? m->w.layers[l].window : 0);
    printf("\n");
    if (c->family == FAM_VIT)
        printf("image_size\t%d\npatch_size\t%d\nchannels\t%d\nclasses\t%d\n", c->image_size, c->patch_size,
               c->n_channels, c->vocab);
    model_free(m);
}

/* ---- --merge: shards of --seqs into the file of one run ---------------------------------- */

typedef struct {
    attn_reader *r;
    const char *path;
    int a, b, whole_S, deflate;
    char *whole_prov;
    int *layer_index, *head_index;   /* NULL when the file has none (all layers / heads) */
    h5io_size n_layer_index, n_head_index;
} shard;

/* Deflate level of the shard's attention dataset (0 when uncompressed), as --deflate set it. */
static int shard_deflate(const shard *sh) {
    int level = h5io_deflate_level(attn_reader_file(sh->r), "attention");
    if (level < 0) die_data(sh->path, "cannot read the compression of dataset 'attention'");
    return level;
}

/* layer_index / head_index: as many entries as the file has layers / heads (want), each an
 * index that fits the model's (at most 2^16). */
static int *shard_index(const shard *sh, const char *name, int want, h5io_size *n) {
    h5io_id f = attn_reader_file(sh->r);
    if (!h5io_exists(f, name)) return NULL;
    h5io_size w[1] = {(h5io_size)want};
    char err[2048];
    int *v = h5io_read_i32(f, sh->path, name, 1, w, n, err, sizeof err);
    if (!v) die_data(NULL, "%s", err);
    for (h5io_size i = 0; i < *n; i++)
        if (v[i] < 0 || v[i] >= 1 << 16) {
            int bad = v[i];
            free(v);
            die_data(sh->path, "dataset '%s': index %d is out of range", name, bad);
        }
    return v;
}

/* One shard: an attention file written by --seqs, its range checked against what it holds. */
static void shard_open(shard *sh, const char *path) {
    char err[2048];
    sh->path = path;
    sh->r = attn_open(path, err, sizeof err);
    if (!sh->r) die_data(NULL, "%s", err);
    h5io_id f = attn_reader_file(sh->r);
    const attn_meta *m = attn_meta_get(sh->r);
    char *range = h5io_get_attr_str(f, "/", "shard_sequences", err, sizeof err);
    if (!range && err[0]) die_data(NULL, "%s", err);
    long long whole;
    sh->whole_prov = h5io_get_attr_str(f, "/", "whole_provenance", err, sizeof err);
    if (!sh->whole_prov && err[0]) die_data(NULL, "%s", err);
    int got = range && sh->whole_prov ? h5io_get_attr_int(f, "/", "shard_of", &whole, err, sizeof err) : 1;
    if (got < 0) die_data(NULL, "%s", err);
    if (got > 0) {
        free(range);
        die_data(path, "not a shard of extract --seqs (no 'shard_sequences', 'shard_of' or 'whole_provenance' attribute)");
    }
    int used = 0;
    if (sscanf(range, "%d:%d%n", &sh->a, &sh->b, &used) != 2 || range[used] || whole < 1 || whole > 1 << 24 ||
        sh->a < 0 || sh->b <= sh->a || sh->b > whole || sh->b - sh->a != m->S) {
        free(range);
        die_data(path, "attribute 'shard_sequences' is not a range A:B of the %d sequences the file holds within "
                       "'shard_of' = %lld", m->S, whole);
    }
    free(range);
    sh->whole_S = (int)whole;
    sh->deflate = shard_deflate(sh);
    /* the selected layers and heads index the model's, which the file does not give; they must
     * only be the same in every shard */
    sh->layer_index = shard_index(sh, "layer_index", m->L, &sh->n_layer_index);
    sh->head_index = shard_index(sh, "head_index", m->H, &sh->n_head_index);
}

static int same_index(const int *x, h5io_size nx, const int *y, h5io_size ny) {
    return (!x && !y) || (x && y && nx == ny && !memcmp(x, y, nx * sizeof *x));
}

/* Every shard is of the same run: the whole provenance, shape, metadata and selections agree. */
static void shard_check_same(const shard *sh, const shard *first) {
    const attn_meta *m = attn_meta_get(sh->r), *m0 = attn_meta_get(first->r);
    if (strcmp(sh->whole_prov, first->whole_prov))
        die_data(sh->path, "a shard of another run than %s (inputs or options differ)", first->path);
    if (sh->whole_S != first->whole_S || m->L != m0->L || m->H != m0->H || m->T != m0->T ||
        m->causal != m0->causal || m->sink != m0->sink || m->logprob != m0->logprob || m->seed != m0->seed ||
        m->Q != m0->Q || attn_is_sampled(sh->r) != attn_is_sampled(first->r) ||
        strcmp(m->model, m0->model) || strcmp(m->family, m0->family) || strcmp(m->text, m0->text) ||
        attn_has_valid(sh->r) != attn_has_valid(first->r) || sh->deflate != first->deflate ||
        !same_index(sh->layer_index, sh->n_layer_index, first->layer_index, first->n_layer_index) ||
        !same_index(sh->head_index, sh->n_head_index, first->head_index, first->n_head_index))
        die_data(sh->path, "its shape, metadata or compression differ from %s's", first->path);
}

static int cmp_shard(const void *x, const void *y) {
    const shard *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* Sorted by range, the shards cover 0..S-1 exactly once. */
static void shard_check_cover(const shard *sh, int n) {
    int S = sh[0].whole_S;
    for (int i = 0; i < n; i++) {
        int want = i ? sh[i - 1].b : 0;
        if (sh[i].a < want)
            die_data(sh[i].path, "sequences %d:%d overlap %s's %d:%d", sh[i].a, sh[i].b, sh[i - 1].path, sh[i - 1].a,
                     sh[i - 1].b);
        if (sh[i].a > want) die_data(sh[i].path, "sequences %d:%d are in no shard of the %d", want, sh[i].a, S);
    }
    if (sh[n - 1].b != S) die_data(sh[n - 1].path, "sequences %d:%d are in no shard of the %d", sh[n - 1].b, S, S);
}

/* The query positions of every window in order (sampled shards), NULL for files of every row. */
static int32_t *merge_query_pos(const shard *sh, int n, const attn_meta *meta) {
    if (!attn_is_sampled(sh[0].r)) return NULL;
    size_t Q = (size_t)meta->Q;
    int32_t *pos = xmalloc(sizeof *pos * (size_t)meta->S * Q);
    for (int i = 0; i < n; i++)
        for (int s = sh[i].a; s < sh[i].b; s++) memcpy(pos + s * Q, attn_query_pos(sh[i].r, s - sh[i].a), sizeof *pos * Q);
    return pos;
}

/* Block (s, l) of the whole run, read from the shard that holds window s. */
static void merge_block(attn_writer *w, const shard *sh, int s, int l, float *block) {
    char err[2048];
    if (attn_read_block(sh->r, s - sh->a, l, block, err, sizeof err)) die_data(NULL, "%s", err);
    attn_write_block(w, s, l, block);
}

/* --batch of the whole run, from its provenance: a sampled run writes its blocks batch by batch. */
static int whole_run_batch(const shard *sh) {
    json_t *js = json_loads(sh->whole_prov, 0, NULL);
    json_t *b = json_object_get(json_object_get(js, "options"), "batch");
    json_int_t batch = json_is_integer(b) ? json_integer_value(b) : 0;
    json_decref(js);
    if (batch < 1 || batch > 1024)
        die_data(sh->path, "attribute 'whole_provenance' gives no options.batch in 1..1024 (needed to merge sampled rows)");
    return (int)batch;
}

/* The block order of one sampled run (run_batches, rows_layer_done): batch by batch, the model's
 * layers in ascending order (each written at its position in --layers), every window of the batch
 * for each; the chunks of the file are then allocated in the same order, so the bytes agree. */
static void merge_blocks_sampled(attn_writer *w, const shard *sh, int n, const attn_meta *meta, float *block) {
    int B = whole_run_batch(&sh[0]);
    if (B > meta->S) B = meta->S;
    int *order = xmalloc(sizeof *order * (size_t)meta->L);   /* file positions by model layer */
    for (int a = 0; a < meta->L; a++) order[a] = a;
    const int *li = sh[0].layer_index;
    for (int a = 1; a < meta->L && li; a++)   /* insertion sort by model layer: L is small */
        for (int j = a; j > 0 && li[order[j - 1]] > li[order[j]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    for (int s0 = 0; s0 < meta->S; s0 += B)
        for (int a = 0; a < meta->L; a++)
            for (int s = s0; s < meta->S && s < s0 + B; s++) {
                int i = 0;
                while (i < n - 1 && s >= sh[i].b) i++;   /* the shards are sorted and cover 0..S-1 */
                merge_block(w, &sh[i], s, order[a], block);
            }
    free(order);
}

/* The shards' windows in order, through the same HDF5 calls as one run (open_outputs,
 * run_batches, finish), so that the file's bytes are those of one run. */
static void merge_write(const char *out, shard *sh, int n) {
    char err[2048];
    attn_meta meta = *attn_meta_get(sh[0].r);
    meta.S = sh[0].whole_S;
    size_t T = (size_t)meta.T, rows = (size_t)meta.Q * T, st = (size_t)meta.S * T;
    attn_set_deflate(sh[0].deflate);
    attn_writer *w;
    static int32_t *qpos;   /* static, like the buffers below: reachable on error exits */
    qpos = merge_query_pos(sh, n, &meta);
    cli_check(attn_create_rows(&w, out, &meta, sh[0].whole_prov, qpos, err, sizeof err), err);
    free(qpos);
    qpos = NULL;
    static int32_t *tokens;
    static uint8_t *valid;
    static float *block;
    tokens = xmalloc(st * sizeof *tokens);
    valid = xmalloc(st);
    for (int i = 0; i < n; i++) {
        if (attn_read_tokens(sh[i].r, tokens + (size_t)sh[i].a * T, err, sizeof err)) die_data(NULL, "%s", err);
        attn_read_valid(sh[i].r, valid + (size_t)sh[i].a * T);
    }
    attn_write_tokens(w, tokens);
    if (attn_has_valid(sh[0].r)) attn_write_valid(w, valid);
    h5io_id f = attn_writer_file(w);
    if (sh[0].layer_index) h5io_write_i32(f, "layer_index", 1, &sh[0].n_layer_index, sh[0].layer_index);
    if (sh[0].head_index) h5io_write_i32(f, "head_index", 1, &sh[0].n_head_index, sh[0].head_index);
    block = xmalloc(sizeof *block * rows * (size_t)meta.H);
    if (attn_is_sampled(sh[0].r))
        merge_blocks_sampled(w, sh, n, &meta, block);
    else
        for (int i = 0; i < n; i++)
            for (int s = sh[i].a; s < sh[i].b; s++)
                for (int l = 0; l < meta.L; l++) merge_block(w, &sh[i], s, l, block);
    h5io_label_attention(f);
    cli_check(attn_finish(w, err, sizeof err), err);
    free(tokens);
    free(valid);
    free(block);
    tokens = NULL, valid = NULL, block = NULL;
}

static void merge_shards(const char *out, char **paths, int n) {
    static shard *sh;   /* static: reachable on error exits */
    sh = xcalloc((size_t)n, sizeof *sh);
    for (int i = 0; i < n; i++) {
        shard_open(&sh[i], paths[i]);
        if (i) shard_check_same(&sh[i], &sh[0]);
    }
    qsort(sh, (size_t)n, sizeof *sh, cmp_shard);
    shard_check_cover(sh, n);
    merge_write(out, sh, n);
    for (int i = 0; i < n; i++) {
        attn_close(sh[i].r);
        free(sh[i].whole_prov);
        free(sh[i].layer_index);
        free(sh[i].head_index);
    }
    free(sh);
    sh = NULL;
}

int main(int argc, char **argv) {
    static run r;
    cli_init(argv[0]);
    h5io_quiet();
    parse_args(argc, argv, &r.o);
    const char *outs[] = {r.o.out, r.o.nll, r.o.logits, r.o.pixels, r.o.predictions};
    for (size_t i = 0; i < sizeof outs / sizeof *outs; i++) cli_out_plan(outs[i]);
    if (r.o.info) {
        print_info(r.o.model);
        return 0;
    }
    if (r.o.merge) {
        merge_shards(r.o.out, r.o.shards, r.o.nshards);
        return 0;
    }
    if (r.o.images) {
        run_images(&r);
        return 0;
    }
    setup(&r);
    int B = r.o.batch < r.b.S ? r.o.batch : r.b.S;
    open_outputs(&r, B);
    run_batches(&r, B);
    finish(&r);
    run_free(&r);
    return 0;
}

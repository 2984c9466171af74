// Reference token ids for tests/t-tok-ref.sh, from independent implementations:
//   HF tokenizers (npm "tokenizers": the compiled Rust library) for tokenizer.json files, and for
//   Qwen2's vocab.json + merges.txt through a tokenizer.json assembled here with Qwen2's settings
//   (hf-checkpoints.md §10.4); tiktoken (npm, WASM) for Llama-3's tokenizer.model ranks; for a
//   GPT-2-style vocab.json + merges.txt directory (OPT) a tokenizer.json as transformers'
//   GPT2 converter writes it, whose added tokens are the *_token entries of the directory's
//   tokenizer_config.json / special_tokens_map.json.
// Usage: node tok_ref.js hf|qwen2|llama3|bytelevel TOKENIZER [--whole] [--special] [--out DIR] INPUT...
// Prints (or writes to DIR/<input name>.ids) the ids of every input line, or of the whole input,
// space-separated, one line each, without special tokens added (special-token strings in the
// text are recognised); --special: with them, encode(text, null, {addSpecialTokens: true}), what
// the tokenizer.json's post_processor adds (not for llama3).
'use strict';
const fs = require('fs');
const path = require('path');

const QWEN2_RE = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const LLAMA3_RE = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

function qwen2Json(dir) {
  const vocab = JSON.parse(fs.readFileSync(path.join(dir, 'vocab.json'), 'utf8'));
  const merges = fs.readFileSync(path.join(dir, 'merges.txt'), 'utf8').split('\n')
    .filter((l, i) => l.length > 0 && !(i === 0 && l.startsWith('#version')));
  const special = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'].map((c, i) => ({
    id: 151643 + i, content: c, single_word: false, lstrip: false, rstrip: false,
    normalized: false, special: true }));
  return JSON.stringify({
    version: '1.0', truncation: null, padding: null, added_tokens: special,
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: QWEN2_RE }, behavior: 'Isolated', invert: false },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }] },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
      end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab, merges },
  });
}

function byteLevelJson(dir) {
  const vocab = JSON.parse(fs.readFileSync(path.join(dir, 'vocab.json'), 'utf8'));
  const merges = fs.readFileSync(path.join(dir, 'merges.txt'), 'utf8').split('\n')
    .filter((l, i) => l.length > 0 && !(i === 0 && l.startsWith('#version')));
  const added = [];
  for (const f of ['tokenizer_config.json', 'special_tokens_map.json']) {
    const p = path.join(dir, f);
    if (!fs.existsSync(p)) continue;
    const cfg = JSON.parse(fs.readFileSync(p, 'utf8'));
    for (const k of ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token']) {
      let v = cfg[k];
      if (v && typeof v === 'object') v = v.content;
      if (typeof v !== 'string' || !(v in vocab) || added.some((a) => a.content === v)) continue;
      added.push({ id: vocab[v], content: v, single_word: false, lstrip: false, rstrip: false,
        normalized: false, special: true });
    }
  }
  return JSON.stringify({
    version: '1.0', truncation: null, padding: null, added_tokens: added, normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
      end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab, merges },
  });
}

function llama3Encoder(file) {
  const { Tiktoken } = require('tiktoken');
  const ranks = fs.readFileSync(file, 'utf8');
  const n = ranks.split('\n').filter((l) => l.length > 0).length;
  const names = ['<|begin_of_text|>', '<|end_of_text|>', '<|reserved_special_token_0|>',
    '<|reserved_special_token_1|>', '<|reserved_special_token_2|>', '<|reserved_special_token_3|>',
    '<|start_header_id|>', '<|end_header_id|>', '<|reserved_special_token_4|>', '<|eot_id|>'];
  for (let i = 5; i < 251; i++) names.push(`<|reserved_special_token_${i}|>`);
  const specials = {};
  names.forEach((s, i) => { specials[s] = n + i; });
  return new Tiktoken(ranks, specials, LLAMA3_RE);
}

function linesOf(text, whole) {
  if (whole) return [text];
  const lines = text.split('\n');
  if (text.endsWith('\n')) lines.pop();
  return lines;
}

async function main() {
  const args = process.argv.slice(2);
  let whole = false, special = false, outDir = null;
  const pos = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--whole') whole = true;
    else if (args[i] === '--special') special = true;
    else if (args[i] === '--out') outDir = args[++i];
    else pos.push(args[i]);
  }
  const [kind, tokPath, ...inputs] = pos;
  if (!kind || !tokPath || inputs.length === 0 || (inputs.length > 1 && !outDir)) {
    console.error('usage: node tok_ref.js hf|qwen2|llama3|bytelevel TOKENIZER [--whole] [--out DIR] INPUT...');
    process.exit(2);
  }
  let encode, done = () => {};
  if (kind === 'llama3') {
    const enc = llama3Encoder(tokPath);
    encode = async (l) => Array.from(enc.encode(l, 'all'));
    done = () => enc.free();
  } else if (kind === 'hf' || kind === 'qwen2' || kind === 'bytelevel') {
    const { Tokenizer } = require('tokenizers');
    const tk = kind === 'qwen2' ? Tokenizer.fromString(qwen2Json(tokPath))
      : kind === 'bytelevel' ? Tokenizer.fromString(byteLevelJson(tokPath)) : Tokenizer.fromFile(tokPath);
    encode = async (l) => (await tk.encode(l, null, { addSpecialTokens: special })).getIds();
  } else {
    throw new Error(`unknown kind '${kind}'`);
  }
  for (const input of inputs) {
    const out = [];
    for (const l of linesOf(fs.readFileSync(input, 'utf8'), whole)) out.push((await encode(l)).join(' '));
    const text = out.join('\n') + '\n';
    if (outDir) fs.writeFileSync(path.join(outDir, path.basename(input).replace(/\.txt$/, '') + '.ids'), text);
    else process.stdout.write(text);
  }
  done();
}

main().catch((e) => { console.error(`tok_ref.js: ${e.message}`); process.exit(1); });

"""Write a Hugging Face tokenizer.json equivalent to Llama-3's tiktoken tokenizer.model, the way
transformers' TikTokenConverter does: byte-level vocabulary (GPT-2 byte->unicode map), merges =
every split (a, b) of every token whose halves are tokens, ordered by the token's rank, the
Llama-3 Split regex + ByteLevel(use_regex false), ignore_merges true, Meta's 256 special tokens.
Used by tests/t-tok-ref.sh to check the tokenizer.json path (Sequence pre-tokenizer, pair-form
merges, ignore_merges) against the tiktoken path and against HF tokenizers.
Usage: python3 llama3_hf_json.py TOKENIZER_MODEL OUT_JSON"""
import base64
import json
import sys

ranks = {}
with open(sys.argv[1], "rb") as f:
    for line in f:
        if line.strip():
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
printable = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
cps, extra = printable[:], 0
order = printable[:]
for b in range(256):
    if b not in printable:
        order.append(b)
        cps.append(256 + extra)
        extra += 1
byte_char = {b: chr(c) for b, c in zip(order, cps)}


def enc(bs):
    return "".join(byte_char[x] for x in bs)


merges = []
for tok, rank in ranks.items():
    if len(tok) < 2:
        continue
    local = [(tok[:i], tok[i:], rank) for i in range(1, len(tok)) if tok[:i] in ranks and tok[i:] in ranks]
    local.sort(key=lambda m: (ranks[m[0]], ranks[m[1]]))
    merges.extend(local)
merges.sort(key=lambda m: m[2])
names = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
         "<|reserved_special_token_1|>", "<|reserved_special_token_2|>", "<|reserved_special_token_3|>",
         "<|start_header_id|>", "<|end_header_id|>", "<|reserved_special_token_4|>", "<|eot_id|>"]
names += [f"<|reserved_special_token_{i}|>" for i in range(5, 251)]
base = len(ranks)
regex = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
         r"|\s*[\r\n]+|\s+(?!\S)|\s+")
doc = {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [{"id": base + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True} for i, s in enumerate(names)],
    "normalizer": None,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
    "post_processor": None,
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
              "vocab": {enc(t): r for t, r in ranks.items()},
              "merges": [[enc(a), enc(b)] for a, b, _ in merges]},
}
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(doc, f, ensure_ascii=False)

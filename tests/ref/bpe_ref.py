"""Reference byte-level BPE learner for tests/t-bpe.sh, written from the definition (docs/TRAIN.md,
"BPE vocabulary"), sharing nothing with src/lib/tok/bpe_learn.c:

- pre-tokens: GPT-2's pattern 's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
  applied leftmost-first by a hand-written scanner over code points (letters and numbers from
  unicodedata's general category, \\s = Unicode White_Space), every character ending up in a
  pre-token;
- each distinct pre-token (UTF-8 bytes) counted with its frequency; a pair's count sums, over the
  distinct pre-tokens, frequency x adjacent occurrences (overlaps counted);
- every step recounts all pairs from scratch, takes the highest count, ties to the smallest
  (left id, right id), stops below 2; merges each pre-token left to right without overlap;
- ids: bytes 0-255, BOS 256, new strings from 257 in order; a merge whose bytes already are a
  token reuses that token's id.

Usage: bpe_ref.py learn TEXT N       prints one merge per line: "left right" in GPT-2's
                                     byte-to-unicode spelling, then the id it makes
       bpe_ref.py json TOKENIZER     the same lines from a tokenizer.json (merges + vocab)
"""
import json
import sys
import unicodedata

WHITE_SPACE = set(chr(c) for c in list(range(0x09, 0x0E)) + [0x20, 0x85, 0xA0, 0x1680] +
                  list(range(0x2000, 0x200B)) + [0x2028, 0x2029, 0x202F, 0x205F, 0x3000])


def is_letter(c):
    return unicodedata.category(c)[0] == "L"


def is_number(c):
    return unicodedata.category(c)[0] == "N"


def is_space(c):
    return c in WHITE_SPACE


def run(s, i, pred):
    j = i
    while j < len(s) and pred(s[j]):
        j += 1
    return j


def match_at(s, i):
    """End of the leftmost-first match of the GPT-2 pattern at i (None if none)."""
    for c in ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d"):
        if s.startswith(c, i):
            return i + len(c)
    for pred in (is_letter, is_number, lambda c: not (is_space(c) or is_letter(c) or is_number(c))):
        k = i + 1 if s[i] == " " and i + 1 < len(s) and pred(s[i + 1]) else i
        j = run(s, k, pred)
        if j > k:
            return j
    j = run(s, i, is_space)
    if j > i:
        if j == len(s):            # \s+(?!\S): the whole run at the end of the text
            return j
        if j - 1 > i:              # ... else give back the last space, which is followed by \S
            return j - 1
        return j                   # \s+
    return None


def pretokens(text):
    out, i, gap = [], 0, 0
    while i < len(text):
        j = match_at(text, i)
        if j is None:
            i += 1
            continue
        if i > gap:
            out.append(text[gap:i])
        out.append(text[i:j])
        gap = i = j
    if gap < len(text):
        out.append(text[gap:])
    return out


def byte_to_unicode():
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


def learn(text, n):
    freq = {}
    for p in pretokens(text):
        b = p.encode("utf-8")
        freq[b] = freq.get(b, 0) + 1
    words = [[list(w), f] for w, f in sorted(freq.items())]
    piece = {b: bytes([b]) for b in range(256)}
    by_bytes = {v: k for k, v in piece.items()}
    next_id = 257
    merges = []
    while len(merges) < n:
        counts = {}
        for syms, f in words:
            for x, y in zip(syms, syms[1:]):
                counts[(x, y)] = counts.get((x, y), 0) + f
        if not counts:
            break
        (a, b), c = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if c < 2:
            break
        joined = piece[a] + piece[b]
        if joined in by_bytes:
            made = by_bytes[joined]
        else:
            made = next_id
            next_id += 1
            piece[made] = joined
            by_bytes[joined] = made
        merges.append((a, b, made))
        for w in words:
            syms, out, i = w[0], [], 0
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    out.append(made)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            w[0] = out
    u = byte_to_unicode()
    spell = lambda t: "".join(u[x] for x in piece[t])
    return ["%s %s %d" % (spell(a), spell(b), m) for a, b, m in merges]


def from_json(path):
    t = json.load(open(path, encoding="utf-8"))
    vocab = t["model"]["vocab"]
    out = []
    for m in t["model"]["merges"]:
        a, b = m if isinstance(m, list) else m.split(" ")
        out.append("%s %s %d" % (a, b, vocab[a + b]))
    return out


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "learn":
        lines = learn(open(sys.argv[2], encoding="utf-8").read(), int(sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[1] == "json":
        lines = from_json(sys.argv[2])
    else:
        sys.exit(__doc__)
    sys.stdout.write("".join(l + "\n" for l in lines))

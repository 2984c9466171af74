#!/bin/bash
# Bad input, round two (issue 39): inputs of a few bytes or a pathological vocabulary that made a
# reader hang, allocate what the file does not hold, or accept nonsense. Each part names its class.
source tests/lib.sh

# ---- Unigram: one very long piece must not make every position try every prefix length ------
# (a 30 kB piece in a tokenizer.json, a 4 kB one in a tokenizer.model; words of 100 kB, one made
# of the long piece's byte itself). Before the fix the Viterbi hashed every prefix up to the
# longest piece at every position: minutes. The timeout is the assertion, not a timing.
"$PYTHON" - "$T" "$EMBED/tokenizers/t5-small/tokenizer.json" <<'PY'
import json, sys
out, src = sys.argv[1:]
t5 = json.load(open(src))
base = t5["model"]["vocab"][:400]
t5["added_tokens"] = [a for a in t5["added_tokens"] if a["id"] < 400]
for name, n in (("long30k.json", 30000), ("long4k.json", 4000)):
    t5["model"]["vocab"] = base + [["\u2581" + "a" * n, -20.0], ["a" * n, -30.0], ["b" * n, -25.0]]
    json.dump(t5, open(out + "/" + name, "w"))
PY
"$PYTHON" tests/ref/spm_ref.py tomodel "$T/long4k.json" "$T/long4k.model"
{ printf 'x '; head -c 100000 /dev/zero | tr '\0' a; printf ' '; head -c 100000 /dev/zero | tr '\0' b
  printf ' '; head -c 100000 /dev/zero | tr '\0' c; echo; } >"$T/long.txt"
for tk in long30k.json long4k.json long4k.model; do
    check "unigram $tk: three 100 kB words tokenized within 20 s" \
        bash -c "timeout 20 '$BIN/tokenize' --no-header -t '$T/$tk' '$T/long.txt' >'$T/$tk.ids' && [ \$(wc -w <'$T/$tk.ids') -gt 100 ]"
done
# the long pieces are used where they match: ids 400 ("▁" + a's), 401 (a's), 402 (b's)
check "unigram long30k.json: the 30 kB pieces are found where they match" \
    bash -c "tr ' ' '\n' <'$T/long30k.json.ids' | sort | uniq -c | awk '\$2==400||\$2==401||\$2==402{n[\$2]=\$1} END{exit !(n[400]==1 && n[401]==2 && n[402]==3)}'"
check "unigram: the .json and .model of the 4 kB vocabulary give the same ids" cmp -s "$T/long4k.json.ids" "$T/long4k.model.ids"

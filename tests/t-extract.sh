#!/bin/bash
# extract on tiny random-weight checkpoints of every family (written with the exact Hugging Face
# tensor names by tests/ref/make_tiny.py), compared with an independent PyTorch forward pass
# (tests/ref/reference_forward.py): attention probabilities within 1e-5 absolute, logits within
# 1e-4 relative. Covers F16/BF16 storage, a sharded index, GPT-2 with and without prefix, tied
# and untied heads, v4 and v5 RoPE spellings, llama3 scaling, GQA, Qwen2 biases, BERT padding
# with LayerNorm gamma/beta names, pruning masks, layer/head subsets, NLL and text windows.
source tests/lib.sh
MK="$PYTHON tests/ref/make_tiny.py"
REF="$PYTHON tests/ref/reference_forward.py"

# Sequences of 40 ids (vocab 101) so RoPE reaches positions where llama3 scaling matters.
$PYTHON -c "
import random; r = random.Random(7)
for _ in range(3): print(' '.join(str(r.randrange(101)) for _ in range(40)))" >"$T/ids.txt"
printf '5 6 7 8 9 10 11 12\n11 12 13\n14 15 16 17 18\n' >"$T/bert_ids.txt"

# compare NAME IDS [extract options] -- MAKE_TINY ARGS
compare() {
    local name=$1 ids=$2; shift 2
    local xo=() lg=()
    while [ "$1" != -- ]; do xo+=("$1"); shift; done; shift
    local fam=$1
    $MK "$@" "$T/$name" || { fail "$name: generator"; return; }
    [ "$fam" != bert ] && lg=(--logits "$T/$name.lg.h5")
    if "$BIN/extract" --model "$T/$name" --ids "$ids" "${lg[@]}" "${xo[@]}" "$T/$name.h5" >/dev/null 2>"$T/err"; then
        local rl=(); [ "$fam" != bert ] && rl=(--logits "$T/$name.lg.h5")
        local rm=(); [ "${xo[0]:-}" = --mask ] && rm=(--mask "${xo[1]}")
        $REF "$T/$name" "$ids" --attn "$T/$name.h5" "${rl[@]}" "${rm[@]}" --tag "$name"
    else
        fail "$name: extract failed: $(head -c 300 "$T/err")"
    fi
}

compare gpt2 "$T/ids.txt" -- gpt2
compare gpt2-prefix-f16 "$T/ids.txt" -- gpt2 --prefix --dtype F16
compare gpt2-untied-bf16 "$T/ids.txt" -- gpt2 --untied --dtype BF16
compare neox-f16 "$T/ids.txt" -- gpt_neox --dtype F16
compare neox-v5-sharded "$T/ids.txt" -- gpt_neox --v5 --shards 3
compare neox-serial-residual "$T/ids.txt" -- gpt_neox --serial
compare llama-llama3-gqa-bf16-tied "$T/ids.txt" -- llama --llama3 --gqa --dtype BF16 --tied
compare llama-v5-llama3-sharded "$T/ids.txt" -- llama --v5 --llama3 --shards 2
compare llama-type-key-headdim "$T/ids.txt" -- llama --llama3 --old-type-key --gqa --head-dim 32
compare llama-biases "$T/ids.txt" -- llama --bias
compare qwen2-gqa-bf16 "$T/ids.txt" -- qwen2 --gqa --dtype BF16 --tied
compare qwen2-untied "$T/ids.txt" -- qwen2
compare bert-padding "$T/bert_ids.txt" -- bert
compare bert-gamma-f16 "$T/bert_ids.txt" -- bert --gamma --dtype F16
printf '# pruned heads\n0 1\n\n1\t3\n' >"$T/mask.txt"
compare gpt2-mask "$T/ids.txt" --mask "$T/mask.txt" -- gpt2
compare llama-mask "$T/ids.txt" --mask "$T/mask.txt" -- llama --gqa

# Padding is recorded; padded keys are exactly zero probability; causal rows end at the diagonal.
$PYTHON - "$T" <<'EOF'
import sys, h5py, numpy as np
T = sys.argv[1]
f = h5py.File(T + "/bert-padding.h5", "r")
v = f["valid"][:]
p = np.exp(f["attention"][1])
ok = v[1].tolist() == [1, 1, 1, 0, 0, 0, 0, 0] and np.all(p[..., 3:] == 0) and f.attrs["causal"] == 0
print(("ok" if ok else "not ok") + " - bert: padded keys recorded in 'valid' and get probability 0")
g = h5py.File(T + "/gpt2.h5", "r")
a = g["attention"][0]
iu = np.triu_indices(a.shape[-1], 1)
ok = np.all(np.isneginf(a[..., iu[0], iu[1]])) and np.all(a[..., 0, 0] == 0) and g.attrs["causal"] == 1
print(("ok" if ok else "not ok") + " - gpt2: logp -inf above the diagonal, row 0 is log 1 = 0")
EOF

# Layer and head subsets: blocks equal the full file's, original indices recorded.
"$BIN/extract" --model "$T/gpt2" --ids "$T/ids.txt" --layers 1 --heads 0,2-3 "$T/sub.h5" >/dev/null
$PYTHON - "$T" <<'EOF'
import sys, h5py, numpy as np
T = sys.argv[1]
full, sub = h5py.File(T + "/gpt2.h5", "r"), h5py.File(T + "/sub.h5", "r")
ok = (sub["layer_index"][:].tolist() == [1] and sub["head_index"][:].tolist() == [0, 2, 3]
      and sub.attrs["layers"] == 1 and sub.attrs["heads"] == 3
      and np.array_equal(sub["attention"][:], full["attention"][:, 1:2][:, :, [0, 2, 3]]))
print(("ok" if ok else "not ok") + " - --layers/--heads subset: blocks and layer_index/head_index")
EOF

# NLL table: rows are -log softmax(logits[t])[token t+1]; perplexity = exp(mean); --no-attention.
"$BIN/extract" --model "$T/gpt2" --ids "$T/ids.txt" --nll "$T/nll.tsv" --logits "$T/lg2.h5" "$T/n.h5" >"$T/stdout"
"$BIN/extract" --model "$T/gpt2" --ids "$T/ids.txt" --no-attention >"$T/stdout2"
# the same run twice, a second apart (a header timestamp would differ), to the same file name
mkdir -p "$T/r1" "$T/r2"
X=$(cd "$BIN" && pwd)/extract
for r in r1 r2; do
    (cd "$T/$r" && "$X" --model ../gpt2 --ids ../ids.txt --logits lg.h5 --no-attention >/dev/null)
    sleep 1
done
check "--logits: the same bytes on a second run" cmp "$T/r1/lg.h5" "$T/r2/lg.h5"
$PYTHON - "$T" <<'EOF'
import sys, h5py, numpy as np
T = sys.argv[1]
lines = open(T + "/nll.tsv").read().splitlines()
com = [l for l in lines if l.startswith("# ")]
rows = [l.split("\t") for l in lines if not l.startswith("#")]
ok = com[0].startswith('# {"inputs"') and com[1].startswith("# perplexity\t") and com[2] == "# tokens\t117"
ok &= rows[0] == ["seq", "pos", "token", "nll"] and len(rows) == 118
lg = h5py.File(T + "/lg2.h5", "r")["logits"][:].astype(np.float64)
ids = [[int(x) for x in l.split()] for l in open(T + "/ids.txt")]
ref = []
for s, seq in enumerate(ids):
    z = lg[s]
    lse = np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1)
    ref += [lse[t] - z[t, seq[t + 1]] for t in range(len(seq) - 1)]
got = np.array([float(r[3]) for r in rows[1:]])
ok &= np.allclose(got, ref, atol=2e-6) and [int(r[2]) for r in rows[1:4]] == ids[0][1:4]
ppl = float(com[1].split("\t")[1])
ok &= abs(ppl - np.exp(np.mean(ref))) <= 1e-5 * ppl
out1, out2 = open(T + "/stdout").read(), open(T + "/stdout2").read()
ok &= out1 == out2 == "perplexity\t%s\n" % com[1].split("\t")[1]
print(("ok" if ok else "not ok") + " - --nll table, perplexity = exp(mean nll), same with --no-attention")
EOF

# Pruning changes perplexity; an all-kept mask file changes nothing.
printf '# nothing pruned\n' >"$T/empty_mask.txt"
p0=$("$BIN/extract" --model "$T/gpt2" --ids "$T/ids.txt" --no-attention)
p1=$("$BIN/extract" --model "$T/gpt2" --ids "$T/ids.txt" --no-attention --mask "$T/mask.txt")
p2=$("$BIN/extract" --model "$T/gpt2" --ids "$T/ids.txt" --no-attention --mask "$T/empty_mask.txt")
check "--mask: pruning changes perplexity, an empty mask does not" \
    test "$p0" != "$p1" -a "$p0" = "$p2"

# Text windows with a real tokenizer (GPT-2 vocabulary, random weights): BOS first, sequential
# windows are consecutive slices of the tokenised text, seeded windows are reproducible.
TOKS=$EMBED/tokenizers/gpt2
if [ -d "$TOKS" ]; then
    $MK gpt2 "$T/gpt2v" --vocab 50257 && cp "$TOKS"/* "$T/gpt2v/"
    head -c 6000 /usr/share/common-licenses/GPL-3 >"$T/text.txt"
    "$BIN/tokenize" --tokenizer "$TOKS" --family gpt2 --whole --no-header "$T/text.txt" >"$T/text.ids"
    "$BIN/extract" --model "$T/gpt2v" --text "$T/text.txt" -S 3 -T 32 --sequential "$T/seq.h5"
    "$BIN/extract" --model "$T/gpt2v" --text "$T/text.txt" -S 4 -T 32 --seed 5 "$T/r1.h5"
    "$BIN/extract" --model "$T/gpt2v" --text "$T/text.txt" -S 4 -T 32 --seed 5 "$T/r2.h5"
    "$BIN/extract" --model "$T/gpt2v" --text "$T/text.txt" -S 4 -T 32 --seed 6 --no-bos "$T/r3.h5"
    check "--text: same seed gives a bit-identical file" cmp -s "$T/r1.h5" "$T/r2.h5"
    $PYTHON - "$T" <<'EOF'
import sys, h5py, numpy as np
T = sys.argv[1]
ids = [int(x) for x in open(T + "/text.ids").read().split()]
seq = h5py.File(T + "/seq.h5", "r")["tokens"][:]
ok = all(seq[s][0] == 50256 and seq[s][1:].tolist() == ids[31 * s:31 * s + 31] for s in range(3))
print(("ok" if ok else "not ok") + " - --text --sequential: <|endoftext|> + consecutive 31-token slices")
r1 = h5py.File(T + "/r1.h5", "r")
r3 = h5py.File(T + "/r3.h5", "r")["tokens"][:]
s = " ".join(map(str, ids))
ok = r1.attrs["seed"] == 5 and all(" ".join(map(str, w[1:])) in s for w in r1["tokens"][:])
ok &= all(" ".join(map(str, w)) in s and w[0] != 50256 for w in r3)
print(("ok" if ok else "not ok") + " - --text random windows are slices of the text; --no-bos drops BOS")
EOF
fi
TOKB=$EMBED/tokenizers/bert-base-uncased
if [ -d "$TOKB" ]; then
    $MK bert "$T/bertv" --vocab 30522 && cp "$TOKB"/* "$T/bertv/"
    "$BIN/extract" --model "$T/bertv" --text "$T/text.txt" -S 2 -T 16 "$T/bt.h5"
    $PYTHON - "$T" <<'EOF'
import sys, h5py
t = h5py.File(sys.argv[1] + "/bt.h5", "r")["tokens"][:]
ok = all(w[0] == 101 and w[-1] == 102 and 101 not in w[1:-1] for w in t)
print(("ok" if ok else "not ok") + " - bert --text windows are [CLS] ... [SEP]")
EOF
fi

# Output to stdout is an HDF5 image; no perplexity line mixes into it.
"$BIN/extract" --model "$T/gpt2" --ids "$T/ids.txt" - >"$T/stdout.h5"
check "OUTPUT '-' writes the attention file to stdout" \
    $PYTHON -c "import h5py,sys; f=h5py.File(sys.argv[1],'r'); assert f['attention'].shape==(3,2,4,40,40)" "$T/stdout.h5"

# Results do not depend on --batch or --threads (the projection slabs and the K order of every
# dot product are the same), so the attention dataset is bit-identical.
"$BIN/extract" --model "$T/llama-llama3-gqa-bf16-tied" --ids "$T/ids.txt" --batch 1 --threads 1 "$T/b1.h5"
"$BIN/extract" --model "$T/llama-llama3-gqa-bf16-tied" --ids "$T/ids.txt" --batch 3 --threads 2 "$T/b3.h5"
check "--batch and --threads do not change the attention values" $PYTHON -c "
import h5py, numpy as np, sys
a, b = (h5py.File(f, 'r')['attention'][:] for f in sys.argv[1:])
assert np.array_equal(a, b)" "$T/b1.h5" "$T/b3.h5"

# Dispatch: a llama2.c .bin (tokenizer: the tok*.bin beside it) and the same model as GGUF give
# the same tokens and attention; a genuinely trained model has a plausible perplexity on a story.
ST=$EMBED/models/stories260K
if [ -f "$ST/stories260K.bin" ] && [ -f "$ST/stories260K.gguf" ]; then
    printf 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. One day, she saw a big red ball in the grass and ran to get it.\n' >"$T/story.txt"
    "$BIN/extract" --model "$ST/stories260K.bin" --text "$T/story.txt" -S 2 -T 24 --sequential \
        --nll "$T/st.nll" "$T/st_bin.h5" >/dev/null
    "$BIN/extract" --model "$ST/stories260K.gguf" --text "$T/story.txt" -S 2 -T 24 --sequential "$T/st_gguf.h5"
    $PYTHON - "$T" <<'EOF2'
import sys, h5py, numpy as np
T = sys.argv[1]
a, b = h5py.File(T + "/st_bin.h5", "r"), h5py.File(T + "/st_gguf.h5", "r")
ok = (np.array_equal(a["tokens"][:], b["tokens"][:]) and a["tokens"][0][0] == 1
      and np.array_equal(a["attention"][:], b["attention"][:]) and a.attrs["family"] == "llama")
print(("ok" if ok else "not ok") + " - stories260K: .bin and .gguf give the same tokens (BOS 1) and attention")
ppl = float([l for l in open(T + "/st.nll") if l.startswith("# perplexity")][0].split("\t")[1])
print(("ok" if 1.5 < ppl < 30 else "not ok") + f" - stories260K perplexity on a story is plausible ({ppl:.2f})")
EOF2
    # --ids written by sample: its provenance line becomes the upstream record
    "$BIN/sample" --model "$ST/stories260K.bin" -n 2 --steps 12 --seed 3 "$T/st.ids" &&
        "$BIN/extract" --model "$ST/stories260K.bin" --ids "$T/st.ids" "$T/st_ids.h5"
    check "--ids from sample: sample's provenance kept as upstream" $PYTHON -c "
import h5py, json, sys
p = json.loads(h5py.File(sys.argv[1], 'r').attrs['provenance'])
assert p['upstream'][0]['program'] == 'sample' and p['inputs'][-1]['name'].endswith('st.ids')" "$T/st_ids.h5"
fi

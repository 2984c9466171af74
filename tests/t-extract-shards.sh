#!/bin/bash
# extract --seqs A:B (a shard of the windows) and extract --merge (the shards joined): the merged
# file is byte-identical to one run over all windows, whatever the shards' thread counts, for ids
# and text inputs, causal and padded bidirectional models, layer and head selections, no
# compression and sampled query rows (--queries, --query-list); a shard is an attention file of
# its own; bad shards and bad ranges are one-line errors that leave no output.
source tests/lib.sh
X() { "$BIN/extract" "$@"; }
M=$EMBED/models/stories260K/stories260K.bin
"$BIN/sample" --model "$M" -n 10 --steps 48 --seed 1 --temperature 1.0 "$T/in.ids" || fail "sample"

X --model "$M" --ids "$T/in.ids" "$T/whole.h5"
X --model "$M" --ids "$T/in.ids" --seqs 0:3 "$T/p0.h5"
X --model "$M" --ids "$T/in.ids" --seqs 3:7 --threads 1 "$T/p1.h5"
X --model "$M" --ids "$T/in.ids" --seqs 7:10 --threads 2 "$T/p2.h5"
X --merge "$T/merged.h5" "$T/p2.h5" "$T/p0.h5" "$T/p1.h5"
check "stories260K: shards 0:3, 3:7 (1 thread), 7:10 merged = one run, byte for byte" cmp "$T/whole.h5" "$T/merged.h5"
check "the merge to stdout is the same bytes" sh -c "\"$BIN/extract\" --merge - \"$T/p0.h5\" \"$T/p1.h5\" \"$T/p2.h5\" | cmp - \"$T/whole.h5\""
X --model "$M" --ids "$T/in.ids" --seqs 0:10 "$T/all.h5"
X --merge "$T/one.h5" "$T/all.h5"
check "one shard of every window merges to the same bytes" cmp "$T/whole.h5" "$T/one.h5"
check "a shard is an attention file (decompose reads its 4 windows)" \
    sh -c "\"$BIN/decompose\" --tsv - \"$T/p1.h5\" \"$T/dec.h5\" >/dev/null && h5dump -a sequences \"$T/p1.h5\" | grep -q '(0): 4'"
check "a shard's provenance records its range, the merged file's is the one run's" \
    sh -c "h5dump -a provenance \"$T/p1.h5\" | grep -q '\"seqs\":\"3:7\"' && ! h5dump -a provenance \"$T/merged.h5\" | grep -q seqs"

# tiny GPT-2 on text windows (random offsets), a layer and two heads, no compression
$PYTHON tests/ref/make_tiny.py gpt2 "$T/gpt2" --vocab 50257 || fail "make_tiny gpt2"
cp "$EMBED/tokenizers/gpt2/"* "$T/gpt2/"
head -c 3000 "$EMBED/README.md" >"$T/text.txt"
G=(--model "$T/gpt2" --text "$T/text.txt" -S 6 -T 24 --seed 3 --layers 1 --heads 0,2 --deflate 0)
X "${G[@]}" "$T/g.h5"
X "${G[@]}" --seqs 0:1 "$T/g0.h5"
X "${G[@]}" --seqs 1:6 --threads 1 "$T/g1.h5"
X --merge "$T/gm.h5" "$T/g0.h5" "$T/g1.h5"
check "gpt2 text windows, --layers 1 --heads 0,2 --deflate 0: merged = one run" cmp "$T/g.h5" "$T/gm.h5"

# tiny BERT on ids of unequal lengths: padded, so the files carry 'valid'
$PYTHON tests/ref/make_tiny.py bert "$T/bert" || fail "make_tiny bert"
printf '2 5 6 7 8 3\n2 9 10 3\n2 11 12 13 3\n2 14 3\n2 15 16 17 18 3\n' >"$T/ragged.ids"
X --model "$T/bert" --ids "$T/ragged.ids" "$T/b.h5"
X --model "$T/bert" --ids "$T/ragged.ids" --seqs 0:2 "$T/b0.h5"
X --model "$T/bert" --ids "$T/ragged.ids" --seqs 2:3 "$T/b1.h5"
X --model "$T/bert" --ids "$T/ragged.ids" --seqs 3:5 "$T/b2.h5"
X --merge "$T/bm.h5" "$T/b1.h5" "$T/b2.h5" "$T/b0.h5"
check "bert, padded ids (valid dataset): merged = one run" cmp "$T/b.h5" "$T/bm.h5"

out=$T/out.h5
expect_error "--seqs without a colon" 2 "seqs: '3' is not A:B" "$out" X --model "$M" --ids "$T/in.ids" --seqs 3 "$out"
expect_error "--seqs not a number" 2 "seqs" "$out" X --model "$M" --ids "$T/in.ids" --seqs a:4 "$out"
expect_error "--seqs empty range" 2 "seqs: empty range '5:2'" "$out" X --model "$M" --ids "$T/in.ids" --seqs 5:2 "$out"
expect_error "--seqs beyond the windows" 2 "seqs 3:11: the input gives 10 sequences" "$out" \
    X --model "$M" --ids "$T/in.ids" --seqs 3:11 "$out"
expect_error "--seqs with --nll" 2 "seqs splits the attention file only" "$out" \
    X --model "$M" --ids "$T/in.ids" --seqs 0:2 --nll "$T/n.tsv" "$out"
expect_error "--merge with --model" 2 "merge takes only OUTPUT and the shard files" "$out" \
    X --merge --model "$M" "$out" "$T/p0.h5"
expect_error "--merge without shards" 2 "expected OUTPUT and at least one shard after --merge" "$out" X --merge "$out"
expect_error "a missing range" 1 "sequences 3:7 are in no shard of the 10" "$out" X --merge "$out" "$T/p0.h5" "$T/p2.h5"
expect_error "the last range missing" 1 "sequences 7:10 are in no shard of the 10" "$out" X --merge "$out" "$T/p0.h5" "$T/p1.h5"
expect_error "overlapping shards" 1 "sequences 3:7 overlap .*p1.h5's 3:7" "$out" X --merge "$out" "$T/p0.h5" "$T/p1.h5" "$T/p1.h5" "$T/p2.h5"
expect_error "shards of another run" 1 "g0.h5: a shard of another run than" "$out" X --merge "$out" "$T/p0.h5" "$T/g0.h5"
expect_error "not a shard" 1 "whole.h5: not a shard of extract --seqs" "$out" X --merge "$out" "$T/whole.h5"
cp "$T/p0.h5" "$T/p0copy.h5"
expect_error "OUTPUT is a shard" 2 "output '.*p0copy.h5' is the input '.*p0copy.h5' \(the same file\)" - X --merge "$T/p0copy.h5" "$T/p0copy.h5" "$T/p1.h5" "$T/p2.h5"
check "the shard named as OUTPUT is unchanged" cmp "$T/p0.h5" "$T/p0copy.h5"
head -c 3000 "$T/p1.h5" >"$T/trunc.h5"
expect_error "truncated shard" 1 "trunc.h5" "$out" X --merge "$out" "$T/p0.h5" "$T/trunc.h5" "$T/p2.h5"
# shards whose range attributes lie about what they hold
attr() {   # attr NAME KEY VALUE: a copy of p1.h5 with one root attribute replaced
    cp "$T/p1.h5" "$T/$1.h5"
    $PYTHON -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r+') as f:
    v = sys.argv[3]
    f.attrs[sys.argv[2]] = int(v) if v.lstrip('-').isdigit() else v" "$T/$1.h5" "$2" "$3"
}
attr rev shard_sequences 7:3
expect_error "range reversed" 1 "rev.h5: attribute 'shard_sequences' is not a range A:B of the 4 sequences" "$out" X --merge "$out" "$T/rev.h5"
attr wide shard_sequences 3:8
expect_error "range wider than the windows held" 1 "wide.h5: attribute 'shard_sequences' is not a range" "$out" X --merge "$out" "$T/wide.h5"
attr junk shard_sequences 3:7x
expect_error "range with trailing junk" 1 "junk.h5: attribute 'shard_sequences' is not a range" "$out" X --merge "$out" "$T/junk.h5"
attr of shard_of 99999999999
expect_error "shard_of out of range" 1 "of.h5: attribute 'shard_sequences' is not a range .* 'shard_of' = 99999999999" "$out" X --merge "$out" "$T/of.h5"
attr short shard_of 6
expect_error "range beyond shard_of" 1 "short.h5: attribute 'shard_sequences' is not a range" "$out" X --merge "$out" "$T/short.h5"

# sampled query rows (--queries, --query-list): each window keeps the rows the whole run draws for
# it, so the shards of a sampled run merge into that run's bytes, query_pos included
Q=(--model "$M" --ids "$T/in.ids" --queries 8 --query-seed 4)
X "${Q[@]}" "$T/q.h5"
X "${Q[@]}" --seqs 0:4 "$T/q0.h5"
X "${Q[@]}" --seqs 4:9 --threads 1 "$T/q1.h5"
X "${Q[@]}" --seqs 9:10 "$T/q2.h5"
X --merge "$T/qm.h5" "$T/q2.h5" "$T/q0.h5" "$T/q1.h5"
check "--queries 8: shards 0:4, 4:9 (1 thread), 9:10 merged = one sampled run, byte for byte" cmp "$T/q.h5" "$T/qm.h5"
check "--queries: a shard holds the whole run's query_pos and rows of its windows" "$PYTHON" -c "
import h5py, numpy as np
w, p = h5py.File('$T/q.h5', 'r'), h5py.File('$T/q1.h5', 'r')
assert p['query_pos'].shape == (5, 8), p['query_pos'].shape
assert np.array_equal(w['query_pos'][4:9], p['query_pos'][:])
assert np.array_equal(w['attention'][4:9], p['attention'][:])
assert len(set(map(tuple, w['query_pos'][:]))) > 1   # the windows' draws differ"
printf '3 17 40\n' >"$T/ql.txt"
X --model "$M" --ids "$T/in.ids" --query-list "$T/ql.txt" "$T/l.h5"
X --model "$M" --ids "$T/in.ids" --query-list "$T/ql.txt" --seqs 0:7 "$T/l0.h5"
X --model "$M" --ids "$T/in.ids" --query-list "$T/ql.txt" --seqs 7:10 "$T/l1.h5"
X --merge "$T/lm.h5" "$T/l1.h5" "$T/l0.h5"
check "--query-list: shards 0:7, 7:10 merged = one run, byte for byte" cmp "$T/l.h5" "$T/lm.h5"
expect_error "sampled and unsampled shards are not joined" 1 "p1.h5: a shard of another run than" "$out" \
    X --merge "$out" "$T/q0.h5" "$T/p1.h5" "$T/q2.h5"
X --model "$M" --ids "$T/in.ids" --queries 6 --query-seed 4 --seqs 4:9 "$T/q6.h5"
expect_error "shards of another Q are not joined" 1 "q6.h5: a shard of another run than" "$out" \
    X --merge "$out" "$T/q0.h5" "$T/q6.h5" "$T/q2.h5"
# the merge writes a sampled run's blocks in its order: batch by batch, model layers ascending
Q=(--model "$M" --ids "$T/in.ids" --queries 5 --query-seed 2 --layers 3,0,4 --heads 1-3 --batch 3)
X "${Q[@]}" "$T/r.h5"
X "${Q[@]}" --seqs 0:5 --threads 1 "$T/r0.h5"
X "${Q[@]}" --seqs 5:10 "$T/r1.h5"
X --merge "$T/rm.h5" "$T/r1.h5" "$T/r0.h5"
check "--queries with --layers 3,0,4 --heads 1-3 --batch 3: shards merged = one run, byte for byte" cmp "$T/r.h5" "$T/rm.h5"
cp "$T/r0.h5" "$T/nobatch.h5"
cp "$T/r1.h5" "$T/nobatch1.h5"
$PYTHON -c "
import h5py, json, sys
for path in sys.argv[1:]:
    with h5py.File(path, 'r+') as f:
        p = json.loads(f.attrs['whole_provenance']); del p['options']['batch']
        f.attrs['whole_provenance'] = json.dumps(p)" "$T/nobatch.h5" "$T/nobatch1.h5"
expect_error "a sampled shard whose whole provenance gives no batch" 1 \
    "nobatch.h5: attribute 'whole_provenance' gives no options.batch in 1..1024" "$out" \
    X --merge "$out" "$T/nobatch.h5" "$T/nobatch1.h5"

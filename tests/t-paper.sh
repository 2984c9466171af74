# paper: pipelines/paper.mk run on its own over the fixture tables of tests/golden/paper (two
# models: tiny-a, a trained 8-head model from a quick run; tiny-b, a hand-made 4-head model with
# strong sinks). Checks that every table and figure is made, that RESULTS.md states the fixtures'
# numbers, that a second run does nothing, that the output is deterministic, and that missing
# optional inputs and bad tables are handled.
source tests/lib.sh
if [ ! -x "$BIN/tabulate" ]; then ok "paper # SKIP $BIN/tabulate not built"; exit 0; fi
if ! command -v gnuplot >/dev/null; then ok "paper # SKIP gnuplot not installed"; exit 0; fi
G=tests/golden/paper
# run make afresh, not as a child of `make test` (whose command-line variables would leak in)
unset MAKEFLAGS MFLAGS MAKELEVEL
paper() {   # paper OUT [MAKE ARGS...]: make the paper of the fixtures into OUT
    local out=$1; shift
    make --no-print-directory -f pipelines/paper.mk paper R=$G PAPER_DIR="$out" PROFILE=quick \
        MODELS='tiny-a tiny-b' TRAINED=tiny-a DEV_MODELS=tiny-a BIN="$BIN" PYTHON="$PYTHON" \
        REGIME_CONF=$G/regime.conf SKIPPED='gpt2 pythia-70m' "$@"
}

paper "$T/p" -j2 >"$T/make.log" 2>&1
check "paper: make -j2 succeeds on the fixture tables" test -s "$T/p/RESULTS.md"
[ -s "$T/p/RESULTS.md" ] || { tail -5 "$T/make.log"; exit 1; }

missing=
for t in reversal theorem1 band identities sinks ari prune collapse train regime; do
    for e in md tex; do [ -s "$T/p/tables/$t.$e" ] || missing="$missing $t.$e"; done
done
check "paper: every table in Markdown and LaTeX${missing:+ (missing:$missing)}" test -z "$missing"
check "paper: LaTeX tables are tabular environments with captions" \
    grep -q '^\\caption{Flip rate' "$T/p/tables/reversal.tex"
bad=
for f in reversal band mds-tiny-a mds-tiny-b prune-tiny-a prune-tiny-b collapse-tiny-a regime; do
    [ "$(head -c 4 "$T/p/figures/$f.png" 2>/dev/null | tail -c 3)" = PNG ] || bad="$bad $f"
done
check "paper: every figure is a PNG${bad:+ (bad:$bad)}" test -z "$bad"
check "paper: only the expected figures" test "$(ls "$T/p/figures" | wc -l)" -eq 8

# Figures as a reader sees them (tests/ref/check_figures.py): distinct colour-blind-safe series
# colours, bands visible under one another, labels that do not overlap; on the fixtures, on 12
# models with the longest labels at near-equal heights, and on the committed paper/ data.
cf() {  # cf CHECK ARGS...: the script's TAP lines; a crash is a failure too
    local out rc
    out=$("$PYTHON" tests/ref/check_figures.py "$@" 2>&1); rc=$?
    grep -E '^(not )?ok - ' <<<"$out"
    if [ $rc -ne 0 ] && ! grep -q '^not ok' <<<"$out"; then fail "check_figures.py $1: $(tail -1 <<<"$out")"; fi
}
GP=pipelines/paper
mkdir -p "$T/cf"
cf palette $GP/common.gp
cf reversal $GP/reversal.gp $GP/common.gp "$T/p/data/reversal.tsv" "$T/cf"
cf band $GP/band.gp $GP/common.gp $G/tables/band.tsv "$T/cf"
cf regime $GP/regime.gp "$T/p/data/regime.tsv" $G/regime.conf "$T/cf"
"$PYTHON" - "$T/cf" <<'EOF'
import sys
d = sys.argv[1]
names = ["model-%02d-%s" % (i, "x" * (i % 4)) for i in range(12)]
with open(d + "/reversal12.tsv", "w") as f:
    f.write("metric\t" + "\t".join(names) + "\n")
    for k, m in enumerate(["cosine", "js", "euclidean", "aitchison", "content"]):
        f.write(m + "\t" + "\t".join("%g" % ((i + 1) * (5 - k)) for i in range(12)) + "\n")
with open(d + "/regime12.tsv", "w") as f:
    f.write("model\trole\tdispersion\tverdict\tobserved\toutcome\n")
    for i, n in enumerate(names):
        f.write("%s\t%s\t%g\t%s\tunsafe\t%s\n" % (n, "dev" if i < 4 else "held-out", 0.02 + 0.0005 * (i % 2),
                ["abstain", "unsafe", "safe"][i % 3], ["confirmation", "abstention", "failure"][i % 3]))
with open(d + "/regime12.conf", "w") as f:
    f.write("tau_lo = 0.0004\ntau_hi = 0.0201\n")
EOF
cf reversal $GP/reversal.gp $GP/common.gp "$T/cf/reversal12.tsv" "$T/cf"
cf regime $GP/regime.gp "$T/cf/regime12.tsv" "$T/cf/regime12.conf" "$T/cf"
if [ -f paper/data/regime.tsv ] && [ -f configs/regime-full.conf ]; then
    cf regime $GP/regime.gp paper/data/regime.tsv configs/regime-full.conf "$T/cf"
    cf reversal $GP/reversal.gp $GP/common.gp paper/data/reversal.tsv "$T/cf"
fi

# RESULTS.md: the fixtures' numbers, computed into sentences
R=$T/p/RESULTS.md
has() { grep -qF -- "$1" "$R"; }
check "results: combined flip-rate table, rows metric, columns model" \
    grep -qxF '| js | 1.82 | 41.2 |' "$T/p/tables/reversal.md"
check "results: flip-rate range from the fixtures (1.8% tiny-a to 41.2% tiny-b)" \
    has 'classical flip rates range from 1.8% (JS, tiny-a) to 41.2% (JS, tiny-b) over 2 models'
check "results: paper's flip rates stated beside" has '17–47% for the classical metrics on ten models'
check "results: 3 of 6 classical rates inside the paper's range (cosine, JS, Euclidean; d_A vs d_A⊥ apart)" has '3 of 6 classical rates fall inside'
check "results: d_A_perp never flips" has 'd_A⊥ agrees with the paper exactly: it never flips'
check "results: Theorem-1 region shares (cosine 85.7%)" has 'cosine 85.7%'
check "results: band bound at s near 0.8" has 'at s = 0.81 the smallest cosine similarity is 0.9973 (bound 0.9478)'
check "results: identities 10 of 10" has '10 of 10 identities hold'
check "results: ARI per model (tiny-b as the paper, tiny-a agrees more)" \
    bash -c "grep -qF 'In tiny-b (mean head sink mass 0.550, SD 0.296) the conventions disagree as completely as in the paper' '$R' && grep -qF 'In tiny-a (mean head sink mass 0.048, SD 0.066) they agree more' '$R'"
check "results: pruning perplexities at the largest sparsity (random seeds averaged)" \
    has 'tiny-b (15.3 → 4000 with JS keep vs 18.2 with d_A⊥ at 50.0% pruned)'
check "results: pruning table averages nothing it should not (random = mean 35 at 0.25)" \
    grep -qF '| tiny-b | random | 15.3 | nan | nan | 35 | nan | 70 |' "$T/p/tables/prune.md"
check "results: entropy-collapse sink share 12.3% beside the paper's 30/95/79%" \
    bash -c "grep -qF 'tiny-a (12.3%)' '$R' && grep -qF '30% (Pythia-70M), 95% (1B), 79% (1.4B)' '$R'"
check "results: regime outcomes over held-out models only" \
    has 'Over 1 held-out model the frozen predictor gives 0 confirmations, 0 abstentions and 1 failure'
check "results: trained model's validation loss" has 'validation losses of 2.350 nats/byte'
check "results: train table gives per-byte loss and the training data (a byte recipe: bytes)" \
    grep -qxF '| tiny-a | 120 | - | 2.35 | 2.35 | 3.39 | 8 | 0.05259 | 0.07077 | 0.006852 | 0.2375 | nan | bytes |' "$T/p/tables/train.md"
check "results: training data of a BPE recipe with synthetic windows, from its provenance options" \
    "$PYTHON" -B -c "
import importlib.util
s = importlib.util.spec_from_file_location('paper', 'pipelines/paper/paper.py')
m = importlib.util.module_from_spec(s); s.loader.exec_module(m)
o = {'bpe_merges': 2048, 'synthetic_share': 0.25, 'synthetic_task': 'mixed', 'synthetic_carrier': 'bigram',
     'synthetic_rules': 6, 'synthetic_triggers': 12}
assert m.training_data(o) == 'BPE 2048 + 25% synthetic mixed windows on a bigram carrier, 6 rules, 12 trigger kinds'
assert m.training_data({'synthetic_share': 0.5, 'synthetic_task': 'recall'}) == 'bytes + 50% synthetic recall windows'
"
check "results: section 8 says what observed safe means (the fixture thresholds carry no rule: in words)" \
    has '*Observed* is measured, not predicted: a model is observed unsafe when pruning its heads in the classical order (JS keep)'
printf '# provenance: {"options":{"classical":"js_keep","content":"content_full","ratio":1.5,"sparsity":0.20000000000000001}}\ntau_lo = 0.01\ntau_hi = 0.2\n' >"$T/rule.conf"
check "results: the observed rule's numbers come from the thresholds file's provenance" "$PYTHON" -B -c "
import importlib.util, sys
s = importlib.util.spec_from_file_location('paper', 'pipelines/paper/paper.py')
m = importlib.util.module_from_spec(s); s.loader.exec_module(m)
t = m.observed_definition(sys.argv[1])
assert 'with 20% of its heads pruned, a model is observed unsafe when pruning in the JS keep order raises its held-out perplexity by more than 1.5 times what pruning in the d_A⊥ order does' in t, t
" "$T/rule.conf"
check "results: skipped models listed" has 'Not analysed (checkpoint not present): gpt2, pythia-70m'
check "results: every figure is referenced" \
    test "$(grep -c '^!\[.*\](figures/.*\.png)$' "$R")" -eq 8

# file targets: nothing to do the second time; a changed table remakes what depends on it
check "paper: a second make has nothing to do" paper "$T/p" -q
cp -rp $G "$T/g"; touch "$T/g/tables/reversal-tiny-b.tsv"
make --no-print-directory -f pipelines/paper.mk paper R="$T/g" PAPER_DIR="$T/p" PROFILE=quick \
    MODELS='tiny-a tiny-b' TRAINED=tiny-a DEV_MODELS=tiny-a BIN="$BIN" PYTHON="$PYTHON" \
    REGIME_CONF=$G/regime.conf SKIPPED='gpt2 pythia-70m' -n >"$T/n.log" 2>&1
check "paper: a newer reversal table remakes the reversal table, figure and RESULTS.md only" \
    bash -c "grep -q 'paper.py reversal' '$T/n.log' && grep -q 'reversal.gp' '$T/n.log' &&
             grep -q 'paper.py results' '$T/n.log' && ! grep -qE 'paper.py (prune|ari|band)|mds.gp' '$T/n.log'"

# deterministic: the same tables give the same files, byte for byte
paper "$T/p2" >/dev/null 2>&1
check "paper: same tables, byte-identical RESULTS.md, tables, data and figures" \
    diff -r "$T/p" "$T/p2"

# optional inputs: no regime table at all; only the dispersion table (no thresholds)
paper "$T/p3" PAPER_REGIME_IN= >/dev/null 2>&1
check "paper: without a regime table the section says so and there is no regime figure" \
    bash -c "grep -qF 'No regime table was produced' '$T/p3/RESULTS.md' && [ ! -e '$T/p3/figures/regime.png' ]"
paper "$T/p4" REGIME_CONF="$T/none.conf" >/dev/null 2>&1
check "paper: without thresholds the dispersion table is shown and no verdicts are claimed" \
    bash -c "grep -qF 'the thresholds were not fitted' '$T/p4/RESULTS.md' && [ -s '$T/p4/figures/regime.png' ]"
paper "$T/p5" TRAINED= >/dev/null 2>&1
check "paper: no trained models: the collapse section says so" \
    grep -qF 'No entropy-collapse tables were produced' "$T/p5/RESULTS.md"

# a table without its documented columns: one error line, no RESULTS.md
cp -r $G "$T/b"; sed -i 's/^metric\tkeep/measure\tkeep/' "$T/b/tables/reversal-tiny-b.tsv"
make --no-print-directory -f pipelines/paper.mk paper R="$T/b" PAPER_DIR="$T/pb" PROFILE=quick \
    MODELS='tiny-a tiny-b' TRAINED=tiny-a BIN="$BIN" PYTHON="$PYTHON" PAPER_REGIME_IN= \
    >"$T/b.log" 2>&1
check "paper: a table missing a column fails with one 'paper.py: FILE: missing column' line" \
    bash -c "grep -q '^paper.py: .*reversal-tiny-b.tsv: missing columns\? metric' '$T/b.log' &&
             [ ! -e '$T/pb/RESULTS.md' ] && [ ! -e '$T/pb/data/reversal.tsv' ]"

# the sentences that must say what their tables say (issue 44 item 5), on made-up tables
"$PYTHON" tests/ref/paper_sentences.py || fail "tests/ref/paper_sentences.py exited with status $?"

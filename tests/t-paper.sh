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

# RESULTS.md: the fixtures' numbers, computed into sentences
R=$T/p/RESULTS.md
has() { grep -qF -- "$1" "$R"; }
check "results: combined flip-rate table, rows metric, columns model" \
    grep -qxF '| js | 1.82 | 41.2 |' "$T/p/tables/reversal.md"
check "results: flip-rate range from the fixtures (1.8% tiny-a to 41.2% tiny-b)" \
    has 'classical flip rates range from 1.8% (JS, tiny-a) to 41.2% (JS, tiny-b) over 2 models'
check "results: paper's flip rates stated beside" has '17–47% for the classical metrics on ten models'
check "results: 3 of 8 classical rates inside the paper's range" has '3 of 8 classical rates fall inside'
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

#!/bin/bash
# train: usage errors, a short run whose loss must fall, bit-identical reruns, the checkpoint
# layout, the Hugging Face file shapes, and agreement with an independent PyTorch forward; every
# position encoding (pos) on both bodies and the BERT-style encoder (family = bert) loaded back
# through bin/extract against that reference.
source tests/lib.sh
TRAIN="$BIN/train"
bible -f gen1:1-gen50:26 | sed 's/^[^ ]* //' >"$T/train.txt"
bible -f exo1:1-exo10:29 | sed 's/^[^ ]* //' >"$T/valid.txt"
cat >"$T/g.conf" <<'CONF'
kind = trained
family = gpt2
layers = 2
d_model = 32
heads = 2
d_ff = 64
context = 64
lr = 1e-2
warmup = 5
batch = 8
steps_full = 40
steps_quick = 40
eval_windows = 16
seed = 3
CONF
sed -e 's/gpt2/llama/' -e 's/heads = 2/heads = 4\nkv_heads = 2/' "$T/g.conf" >"$T/l.conf"
# One thread except where threads are the point: tiny models gain nothing from more.
run() { "$TRAIN" --train "$T/train.txt" --valid "$T/valid.txt" --threads 1 "$@" 2>"$T/stderr"; }

check "--help prints usage" bash -c "'$TRAIN' --help | grep -q 'Usage: train'"
check "--version" bash -c "'$TRAIN' --version | grep -q '^train (attncoda)'"
expect_error "missing --config is a usage error" 2 '^train: .*--config' - "$TRAIN" --out "$T/x"
expect_error "bad --profile" 2 '^train: .*profile' - "$TRAIN" --config "$T/g.conf" --out "$T/x" --profile big
printf 'family = gpt2\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\nbogus = 1\n' >"$T/bad.conf"
expect_error "unknown recipe key names file and line" 1 "^train: $T/bad.conf: line 6: unknown key bogus" "$T/bad/model.safetensors" \
    "$TRAIN" --config "$T/bad.conf" --out "$T/bad" --train "$T/train.txt" --valid "$T/valid.txt"
printf 'family = gpt2\nlayers = 2\nd_model = 30\nheads = 4\nd_ff = 64\n' >"$T/bad2.conf"
expect_error "d_model not divisible by heads" 1 "^train: $T/bad2.conf: " - "$TRAIN" --config "$T/bad2.conf" --out "$T/bad2"
head -c 40 "$T/train.txt" >"$T/short.txt"
expect_error "text shorter than the context" 1 "^train: $T/short.txt: text has 40 bytes" "$T/short/model.safetensors" \
    "$TRAIN" --config "$T/g.conf" --out "$T/short" --train "$T/short.txt" --valid "$T/valid.txt"

# A 40-step run: validation loss must fall from ln(257) = 5.55 to well below 3.5 nats/byte.
run --config "$T/g.conf" --out "$T/g1" || fail "gpt2 run failed: $(cat "$T/stderr")"
v0=$(awk -F'\t' '$1=="0"{print $5}' "$T/g1/train-log.tsv")
v1=$(awk -F'\t' '$1=="40" && $5!="-"{print $5}' "$T/g1/train-log.tsv")
check "initial validation loss is ln 257 ($v0)" awk -v v="$v0" 'BEGIN{exit !(v > 5.50 && v < 5.60)}'
check "validation loss falls in 40 steps ($v0 -> $v1)" awk -v v="$v1" 'BEGIN{exit !(v < 3.5)}'
check "checkpoints at steps 0, 16, 32 and the last" \
    bash -c "[ \"\$(ls '$T/g1/checkpoints' | tr '\n' ' ')\" = 'step-000000 step-000016 step-000032 step-000040 ' ]"
check "every checkpoint is a full HF directory" bash -c "for d in '$T'/g1/checkpoints/*/ '$T/g1/'; do
    for f in config.json model.safetensors tokenizer.json; do [ -s \$d/\$f ] || exit 1; done; done"
check "final model equals the last checkpoint" cmp -s "$T/g1/model.safetensors" "$T/g1/checkpoints/step-000040/model.safetensors"
check "log and report carry a provenance header" bash -c "head -c 30 '$T/g1/train-log.tsv' | grep -q '^# {\"inputs\"' &&
    head -1 '$T/g1/report.tsv' | grep -q '\"steps\":40'"
check "report has one sink_mass row per head" bash -c "[ \$(grep -c '^sink_mass	' '$T/g1/report.tsv') -eq 4 ]"
# Sink summaries recomputed here from the per-head rows: share of heads with mass > 0.3 / 0.8 per
# layer and over layers >= 1, population SD over all heads.
sinksum() {   # REPORT: prints "computed stored" pairs, one per summary, for awk to compare
    awk -F'\t' '$1=="sink_mass"{m[$2","$3]=$4; L=($2+1>L?$2+1:L); H=($3+1>H?$3+1:H)}
        $1 ~ /^sink_share|^sink_mass_sd/ {st[$1","$2]=$4}
        END{n=L*H; for(k in m){s+=m[k]}; mu=s/n; for(k in m){v+=(m[k]-mu)^2}; print sqrt(v/n), st["sink_mass_sd,-"]
            for(l=0;l<L;l++){a=0;b=0; for(h=0;h<H;h++){a+=m[l","h]>0.3; b+=m[l","h]>0.8}
                print a/H, st["sink_share_0.3,"l]; print b/H, st["sink_share_0.8,"l]; if(l>0){ua+=a/H/(L-1); ub+=b/H/(L-1)}}
            print ua, st["sink_share_0.3_layers_ge1,-"]; print ub, st["sink_share_0.8_layers_ge1,-"]}' "$1"
}
check "report's sink shares and SD agree with its sink_mass rows" bash -c "$(declare -f sinksum); sinksum '$T/g1/report.tsv' |
    awk '{d=\$1-\$2; if(d<0)d=-d; if(d>2e-6 || \$2==\"\") bad=1} END{exit bad}'"
check "report counts tokens" grep -q "^tokens	-	-	20480$" "$T/g1/report.tsv"
check "train-log has sink_sd, sink03_ge1, sink08_ge1 columns" bash -c "grep -v '^#' '$T/g1/train-log.tsv' | head -1 | grep -q 'sink_max	sink_sd	sink03_ge1	sink08_ge1$'"
printf 'family = gpt2\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\nsynthetic_task = copy\n' >"$T/bad3.conf"
expect_error "unknown synthetic_task" 1 "^train: $T/bad3.conf: line 6: synthetic_task = copy" - "$TRAIN" --config "$T/bad3.conf" --out "$T/bad3"
printf 'family = gpt2\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\ncontext = 64\neval_context = 65\n' >"$T/bad4.conf"
expect_error "eval_context above context" 1 "^train: $T/bad4.conf: eval_context = 65" - "$TRAIN" --config "$T/bad4.conf" --out "$T/bad4"
printf 'family = gpt2\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\nsynthetic_rules = 7\n' >"$T/bad6.conf"
expect_error "synthetic_rules above 6" 1 "^train: $T/bad6.conf: line 6: synthetic_rules" - "$TRAIN" --config "$T/bad6.conf" --out "$T/bad6"
printf 'family = gpt2\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\nsynthetic_share = 1.5\n' >"$T/bad5.conf"
expect_error "synthetic_share above 1" 1 "^train: $T/bad5.conf: line 6: synthetic_share" - "$TRAIN" --config "$T/bad5.conf" --out "$T/bad5"

# Synthetic windows: about the share asked for, recorded in the provenance, reproducible; a
# shorter evaluation context is honoured.
{ cat "$T/g.conf"; printf 'synthetic_share = 0.5\nsynthetic_task = recall\neval_context = 32\n'; } >"$T/s.conf"
run --config "$T/s.conf" --out "$T/s1" --no-checkpoints || fail "synthetic run failed: $(cat "$T/stderr")"
run --config "$T/s.conf" --out "$T/s2" --no-checkpoints
nsyn=$(awk -F'\t' '$1=="synthetic_windows"{print $4}' "$T/s1/report.tsv")
check "synthetic_windows near half of 320 ($nsyn)" awk -v n="$nsyn" 'BEGIN{exit !(n >= 130 && n <= 190)}'
check "synthetic recipe recorded in provenance" bash -c "head -1 '$T/s1/report.tsv' | grep -q '\"synthetic_share\":0.5' &&
    head -1 '$T/s1/report.tsv' | grep -q '\"synthetic_task\":\"recall\"' && head -1 '$T/s1/report.tsv' | grep -q '\"eval_context\":32'"
check "synthetic rerun is bit-identical" cmp -s "$T/s1/model.safetensors" "$T/s2/model.safetensors"
{ cat "$T/g.conf"; printf 'synthetic_share = 0.5\nsynthetic_task = mixed\nsynthetic_triggers = 6\nsynthetic_rules = 6\n'; } >"$T/sm.conf"
run --config "$T/sm.conf" --out "$T/sm" --no-checkpoints || fail "mixed synthetic run failed: $(cat "$T/stderr")"
check "synthetic_task = mixed recorded in provenance and trains other weights than recall" bash -c "
    head -1 '$T/sm/report.tsv' | grep -q '\"synthetic_rules\":6,.*\"synthetic_task\":\"mixed\"' && ! cmp -s '$T/s1/model.safetensors' '$T/sm/model.safetensors'"
{ cat "$T/g.conf"; printf 'synthetic_share = 0.5\nsynthetic_task = depths\nsynthetic_triggers = 6\n'; } >"$T/sd.conf"
run --config "$T/sd.conf" --out "$T/sd" --no-checkpoints || fail "depths synthetic run failed: $(cat "$T/stderr")"
check "synthetic_task = depths recorded in provenance (no rules) and trains other weights than mixed" bash -c "
    head -1 '$T/sd/report.tsv' | grep -q '\"synthetic_task\":\"depths\"' && ! head -1 '$T/sd/report.tsv' | grep -q synthetic_rules &&
    ! cmp -s '$T/sm/model.safetensors' '$T/sd/model.safetensors'"
{ cat "$T/g.conf"; printf 'synthetic_share = 0.5\nsynthetic_task = recall\neval_context = 32\nsynthetic_carrier = bigram\n'; } >"$T/sb.conf"
run --config "$T/sb.conf" --out "$T/sb1" --no-checkpoints || fail "bigram-carrier run failed: $(cat "$T/stderr")"
run --config "$T/sb.conf" --out "$T/sb2" --no-checkpoints
check "synthetic_carrier = bigram recorded, reproducible, and other weights than the text carrier" bash -c "
    head -1 '$T/sb1/report.tsv' | grep -q '\"synthetic_carrier\":\"bigram\"' && ! head -1 '$T/s1/report.tsv' | grep -q synthetic_carrier &&
    cmp -s '$T/sb1/model.safetensors' '$T/sb2/model.safetensors' && ! cmp -s '$T/s1/model.safetensors' '$T/sb1/model.safetensors'"
printf 'family = gpt2\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\nsynthetic_carrier = markov\n' >"$T/bad8.conf"
expect_error "unknown synthetic_carrier" 1 "^train: $T/bad8.conf: line 6: synthetic_carrier = markov: want text or bigram$" - "$TRAIN" --config "$T/bad8.conf" --out "$T/bad8"
check "recipes without the new keys record none of them" bash -c "! head -1 '$T/g1/report.tsv' | grep -q 'synthetic\|eval_context\|short_context'"

# short_context: the first share of the updates on windows of 16 tokens (4x as many). With share 0
# the run is g1's; with share 1 no window reaches positions 16..63, so Adam never moves those rows
# of wpe from their initial values (embeddings are not decayed).
printf 'family = gpt2\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\ncontext = 64\nshort_context = 24\n' >"$T/bad7.conf"
expect_error "short_context not a divisor of context" 1 "^train: $T/bad7.conf: short_context = 24" - "$TRAIN" --config "$T/bad7.conf" --out "$T/bad7"
{ cat "$T/g.conf"; printf 'short_context = 16\nshort_context_share = 0\n'; } >"$T/sc0.conf"
run --config "$T/sc0.conf" --out "$T/sc0" --no-checkpoints || fail "short_context run failed: $(cat "$T/stderr")"
check "short_context_share = 0 trains exactly as without short_context" bash -c "
    diff <(grep -v '^#' '$T/g1/train-log.tsv') <(grep -v '^#' '$T/sc0/train-log.tsv') >/dev/null &&
    head -1 '$T/sc0/report.tsv' | grep -q '\"short_context\":16,\"short_context_share\":0'"
{ cat "$T/g.conf"; printf 'short_context = 16\nshort_context_share = 1\n'; } >"$T/sc1.conf"
run --config "$T/sc1.conf" --out "$T/sc1" || fail "short_context run failed: $(cat "$T/stderr")"
cat >"$T/wpe.py" <<'PY'
import sys
sys.path.insert(0, "tests/ref")
from reference_forward import read_safetensors
w0, w1 = {}, {}
read_safetensors(sys.argv[1], w0)
read_safetensors(sys.argv[2], w1)
moved = (w0["wpe.weight"] != w1["wpe.weight"]).any(dim=1)
print(int(moved[:16].sum()), int(moved[16:].sum()))
PY
check "short_context_share = 1: wpe rows 0..15 trained, rows 16..63 untouched" bash -c "
    [ \"\$('$PYTHON' '$T/wpe.py' '$T/sc1/checkpoints/step-000000/model.safetensors' '$T/sc1/model.safetensors')\" = '16 0' ]"

# Determinism: same options and threads -> identical bytes.
run --config "$T/g.conf" --out "$T/g2" >/dev/null
check "rerun is bit-identical" \
    cmp -s "$T/g1/model.safetensors" "$T/g2/model.safetensors"
run --config "$T/g.conf" --out "$T/g3" --threads 2 --no-checkpoints
run --config "$T/g.conf" --out "$T/g4" --threads 2 --no-checkpoints
check "rerun with --threads 2 is bit-identical" cmp -s "$T/g3/model.safetensors" "$T/g4/model.safetensors"
run --config "$T/g.conf" --out "$T/g5" --threads 2 >/dev/null
check "--threads 2 gives the same bytes as --threads 1 (every checkpoint)" diff -r "$T/g1/checkpoints" "$T/g5/checkpoints"
check "--no-checkpoints writes no checkpoints" test ! -e "$T/g3/checkpoints"

# File shapes the HF loader depends on.
cat >"$T/shape.py" <<'PY'
import json, struct, sys
d, fam = sys.argv[1], sys.argv[2]
raw = open(d + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
assert n % 8 == 0, "header length not a multiple of 8"
h = json.loads(raw[8:8 + n])
meta = h.pop("__metadata__")
assert meta["format"] == "pt" and json.loads(meta["provenance"])["program"] == "train"
names = list(h)
assert names == sorted(names), "keys not sorted"
off = 0
for k in names:   # data laid out in key order, contiguous, F32
    v = h[k]
    assert v["dtype"] == "F32" and v["data_offsets"][0] == off, k
    cnt = 1
    for s in v["shape"]: cnt *= s
    off = v["data_offsets"][1]
    assert off - v["data_offsets"][0] == 4 * cnt, k
assert 8 + n + off == len(raw)
c = json.load(open(d + "/config.json"))
if fam == "gpt2":
    want = {"wte.weight": [257, 32], "wpe.weight": [64, 32], "h.0.attn.c_attn.weight": [32, 96],
            "h.1.mlp.c_proj.weight": [64, 32], "h.1.mlp.c_fc.weight": [32, 64], "ln_f.bias": [32]}
    assert "lm_head.weight" not in h and c["model_type"] == "gpt2" and c["n_embd"] == 32 and c["n_inner"] == 64
    assert c["activation_function"] == "gelu_new" and c["tie_word_embeddings"] is True and c["n_positions"] == 64
    assert len(h) == 2 + 2 + 12 * 2
else:
    want = {"model.embed_tokens.weight": [257, 32], "lm_head.weight": [257, 32], "model.norm.weight": [32],
            "model.layers.0.self_attn.q_proj.weight": [32, 32], "model.layers.0.self_attn.k_proj.weight": [16, 32],
            "model.layers.1.mlp.down_proj.weight": [32, 64], "model.layers.1.mlp.gate_proj.weight": [64, 32]}
    assert c["model_type"] == "llama" and c["num_key_value_heads"] == 2 and c["tie_word_embeddings"] is False
    assert c["hidden_act"] == "silu" and c["head_dim"] == 8 and len(h) == 3 + 9 * 2
    assert not any(k.endswith(".bias") for k in h)
for k, s in want.items():
    assert h[k]["shape"] == s, (k, h[k]["shape"])
assert c["vocab_size"] == 257 and c["bos_token_id"] == 256
t = json.load(open(d + "/tokenizer.json", encoding="utf-8"))
m = t["model"]
assert m["type"] == "BPE" and m["merges"] == [] and len(m["vocab"]) == 256
assert sorted(m["vocab"].values()) == list(range(256))
assert m["vocab"]["\u0120"] == 32 and m["vocab"]["A"] == 65 and m["vocab"]["\u010a"] == 10 and m["vocab"]["\u0100"] == 0
assert m["vocab"]["\u0143"] == 0xAD and m["vocab"]["\u00ff"] == 255
assert t["pre_tokenizer"] == {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
assert t["decoder"]["type"] == "ByteLevel"
a = t["added_tokens"]
assert len(a) == 1 and a[0]["id"] == 256 and a[0]["content"] == "<|bos|>" and a[0]["special"] is True
PY
check "gpt2 safetensors/config/tokenizer shapes" "$PYTHON" "$T/shape.py" "$T/g1" gpt2
run --config "$T/l.conf" --out "$T/l1" || fail "llama run failed: $(cat "$T/stderr")"
check "llama safetensors/config/tokenizer shapes" "$PYTHON" "$T/shape.py" "$T/l1" llama
l0=$(awk -F'\t' '$1=="0"{print $5}' "$T/l1/train-log.tsv")
l1=$(awk -F'\t' '$1=="40" && $5!="-"{print $5}' "$T/l1/train-log.tsv")
check "llama validation loss falls in 40 steps ($l0 -> $l1)" awk -v v="$l1" 'BEGIN{exit !(v < 3.5)}'

# An independent PyTorch forward of the saved files (HF semantics) gives the same validation loss
# and per-head sink mass as train's own forward.
agree() {   # DIR: compare report.tsv with the torch check, max |difference| ≤ 2e-5
    "$PYTHON" tests/ref/train_torch.py check "$1" "$T/valid.txt" 16 >"$T/ref.tsv" || return 1
    grep -E '^(val_loss|sink_mass)\s' "$1/report.tsv" | paste - <(grep -E '^(val_loss|sink_mass)\s' "$T/ref.tsv") |
        awk -F'\t' '$1!=$5||$2!=$6||$3!=$7{bad=1} {d=$4-$8; if(d<0)d=-d; if(d>m)m=d} END{exit bad || m > 2e-5 || NR < 5}'
}
check "gpt2: torch forward of the checkpoint agrees with train's report" agree "$T/g1"
check "llama: torch forward of the checkpoint agrees with train's report" agree "$T/l1"

# The project's own HF loader and forward (bin/extract, another engineer's) must read these
# directories like downloaded models: same attention (sink mass per head) and same loss.
cat >"$T/ext.py" <<'PY'
import sys, h5py, numpy as np
rep, h5, nll, ref = sys.argv[1:5]
A = h5py.File(h5, "r")["attention"][...]            # [S,L,H,T,T] log-probabilities
sink = np.exp(A[:, :, :, 1:, 0].astype(np.float64)).mean(axis=(0, 3))
mine = {}
for line in open(rep):
    f = line.rstrip("\n").split("\t")
    if f[0] == "sink_mass":
        mine[(int(f[1]), int(f[2]))] = float(f[3])
worst = max(abs(sink[l, h] - v) for (l, h), v in mine.items())
assert len(mine) == sink.size and worst < 2e-5, ("sink mass differs", worst)
rows = [l.split("\t") for l in open(nll) if not l.startswith("#")][1:]
mean = np.mean([float(r[3]) for r in rows])
want = [float(l.split("\t")[3]) for l in open(ref) if l.startswith("val_loss_tm1")][0]
assert abs(mean - want) < 1e-4, ("nll differs", mean, want)
PY
via_extract() {   # DIR FAMILY
    [ -x "$BIN/extract" ] || { echo "# $BIN/extract missing" >&2; return 1; }
    "$PYTHON" tests/ref/train_torch.py ids "$T/valid.txt" 16 64 "$T/ids.txt" &&
    "$PYTHON" tests/ref/train_torch.py check "$1" "$T/valid.txt" 16 >"$T/ref.tsv" &&
    "$BIN/extract" --model "$1" --ids "$T/ids.txt" --nll "$T/nll.tsv" "$T/att-$2.h5" >/dev/null 2>"$T/ext.err" &&
    "$PYTHON" "$T/ext.py" "$1/report.tsv" "$T/att-$2.h5" "$T/nll.tsv" "$T/ref.tsv"
}
check "gpt2: bin/extract loads the checkpoint, same attention and loss as train" via_extract "$T/g1" gpt2
check "llama: bin/extract loads the checkpoint, same attention and loss as train" via_extract "$T/l1" llama

# Position encodings (recipe key pos). Recipe errors name the key and the value.
printf 'family = gpt2\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\npos = rotary\n' >"$T/badp.conf"
expect_error "unknown pos names key and value" 1 \
    "^train: $T/badp.conf: line 6: pos = rotary: want learned, sinusoidal, rope, rope-ntk, alibi or none$" - \
    "$TRAIN" --config "$T/badp.conf" --out "$T/badp"
printf 'family = gpt2\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\npos = rope-ntk\n' >"$T/badp2.conf"
expect_error "pos = rope-ntk without its factor" 1 "^train: $T/badp2.conf: pos = rope-ntk needs rope_ntk_factor$" - \
    "$TRAIN" --config "$T/badp2.conf" --out "$T/badp2"
printf 'family = llama\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\nrope_ntk_factor = 4\n' >"$T/badp3.conf"
expect_error "rope_ntk_factor with another pos" 1 "^train: $T/badp3.conf: rope_ntk_factor is only used with pos = rope-ntk \(pos = rope\)$" - \
    "$TRAIN" --config "$T/badp3.conf" --out "$T/badp3"
printf 'family = gpt2\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\npos = rope-ntk\nrope_ntk_factor = 0.5\n' >"$T/badp4.conf"
expect_error "rope_ntk_factor below 1" 1 "^train: $T/badp4.conf: line 7: rope_ntk_factor = 0.5: want a number in \[1, " - \
    "$TRAIN" --config "$T/badp4.conf" --out "$T/badp4"
printf 'family = gpt2\nlayers = 2\nd_model = 8\nheads = 4\nd_ff = 64\npos = rope-ntk\nrope_ntk_factor = 2\n' >"$T/badp5.conf"
expect_error "rope-ntk with head_dim 2" 1 "^train: $T/badp5.conf: rope-ntk needs head_dim >= 4$" - \
    "$TRAIN" --config "$T/badp5.conf" --out "$T/badp5"
check "recipes without pos record no pos key" bash -c "! head -1 '$T/g1/report.tsv' | grep -q '\"pos\"\|rope_ntk' &&
    ! grep -q 'attncoda_position_encoding' '$T/g1/config.json' '$T/l1/config.json'"

# Every encoding on both bodies: 16 updates, the config says what was trained, train's report
# agrees with the PyTorch forward, and bin/extract loads the directory back with the attention
# that the independent PyTorch reference (tests/ref/train_torch.py attn) computes, to 1e-5.
cat >"$T/poscfg.py" <<'PY'
import json, struct, sys
d, body, pos = sys.argv[1:4]
c = json.load(open(d + "/config.json"))
raw = open(d + "/model.safetensors", "rb").read()
names = set(json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])) - {"__metadata__"}
own = "learned" if body == "gpt2" else "rope"
assert c.get("attncoda_position_encoding", own) == pos, c.get("attncoda_position_encoding")
assert (pos == own) == ("attncoda_position_encoding" not in c)
hd = 16 if body == "gpt2" else 8
if pos == "rope-ntk":
    assert c["attncoda_rope_base_theta"] == 10000 and c["attncoda_rope_ntk_factor"] == 4
    assert abs(c["rope_theta"] - 10000 * 4 ** (hd / (hd - 2))) < 1e-9 * c["rope_theta"], c["rope_theta"]
elif pos == "rope":
    assert c["rope_theta"] == 10000
else:
    assert body == "gpt2" or "rope_scaling" not in c or c["rope_scaling"] is None
table = "wpe.weight" if body == "gpt2" else "model.embed_positions.weight"
assert (table in names) == (pos in ("learned", "sinusoidal")), sorted(names)
PY
"$PYTHON" tests/ref/train_torch.py ids "$T/valid.txt" 16 64 "$T/pids.txt"
posround() {   # BODY POS: train, check config, report and the extract round trip
    local base=$T/g.conf d=$T/pos-$1-$2
    [ "$1" = llama ] && base=$T/l.conf
    { cat "$base"; echo "pos = $2"; [ "$2" = rope-ntk ] && echo "rope_ntk_factor = 4"; } >"$d.conf"
    run --config "$d.conf" --out "$d" --steps 16 --no-checkpoints || { echo "# train: $(cat "$T/stderr")"; return 1; }
    "$PYTHON" "$T/poscfg.py" "$d" "$1" "$2" || return 1
    agree "$d" || { echo "# report differs from the torch forward"; return 1; }
    "$BIN/extract" --model "$d" --ids "$T/pids.txt" "$d.h5" >/dev/null 2>"$T/ext.err" || { echo "# extract: $(cat "$T/ext.err")"; return 1; }
    local diff; diff=$("$PYTHON" tests/ref/train_torch.py attn "$d" "$T/pids.txt" "$d.h5") || return 1
    echo "# $1 pos=$2: max |attention - torch reference| = $diff"
    awk -v x="$diff" 'BEGIN{exit !(x < 1e-5)}'
}
for body in gpt2 llama; do
    for pos in learned sinusoidal rope rope-ntk alibi none; do
        check "$body pos=$pos: trains, config says so, extract's attention = torch reference (1e-5)" posround "$body" "$pos"
    done
done
check "the encodings train different models" bash -c "! cmp -s '$T/pos-gpt2-alibi/model.safetensors' '$T/pos-gpt2-none/model.safetensors'"
v=$(awk -F'\t' '$1=="val_loss"{print $4}' "$T/pos-gpt2-none/report.tsv")
check "pos=none still learns in 16 updates (val loss $v < 4)" awk -v v="$v" 'BEGIN{exit !(v < 4)}'

# The HF loader's side: a bad attncoda_position_encoding, an NTK base that is not the formula's.
mkdir -p "$T/posbad1" "$T/posbad2"
cp "$T/pos-gpt2-alibi/model.safetensors" "$T/pos-gpt2-alibi/tokenizer.json" "$T/posbad1/"
sed 's/"attncoda_position_encoding": "alibi"/"attncoda_position_encoding": "xpos"/' "$T/pos-gpt2-alibi/config.json" >"$T/posbad1/config.json"
expect_error "extract: unknown attncoda_position_encoding" 1 "^extract: $T/posbad1: config.json: 'attncoda_position_encoding' must be one of" \
    "$T/posbad1.h5" "$BIN/extract" --model "$T/posbad1" --ids "$T/pids.txt" "$T/posbad1.h5"
cp "$T/pos-llama-rope-ntk/model.safetensors" "$T/pos-llama-rope-ntk/tokenizer.json" "$T/posbad2/"
sed 's/"attncoda_rope_ntk_factor": 4.0/"attncoda_rope_ntk_factor": 2.0/' "$T/pos-llama-rope-ntk/config.json" >"$T/posbad2/config.json"
expect_error "extract: rope_theta that is not the NTK-aware base" 1 "^extract: $T/posbad2: config.json: rope_theta .* is not attncoda_rope_base_theta" \
    "$T/posbad2.h5" "$BIN/extract" --model "$T/posbad2" --ids "$T/pids.txt" "$T/posbad2.h5"

# family = bert: a BERT-style masked-LM encoder saved as BertForMaskedLM.
printf 'family = bert\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\npos = rope\n' >"$T/badb1.conf"
expect_error "bert with another pos" 1 "^train: $T/badb1.conf: bert is trained with pos = learned or sinusoidal only$" - \
    "$TRAIN" --config "$T/badb1.conf" --out "$T/badb1"
printf 'family = bert\nlayers = 2\nd_model = 32\nheads = 2\nd_ff = 64\nsynthetic_share = 0.5\n' >"$T/badb2.conf"
expect_error "bert with synthetic windows" 1 "^train: $T/badb2.conf: synthetic_share is for the causal families, not bert$" - \
    "$TRAIN" --config "$T/badb2.conf" --out "$T/badb2"
sed 's/family = gpt2/family = bert/' "$T/g.conf" >"$T/b.conf"
run --config "$T/b.conf" --out "$T/b1" || fail "bert run failed: $(cat "$T/stderr")"
run --config "$T/b.conf" --out "$T/b2" --threads 2
check "bert: --threads 2 gives the same bytes as --threads 1 (every checkpoint)" diff -r "$T/b1" "$T/b2"
b0=$(awk -F'\t' '$1=="0"{print $5}' "$T/b1/train-log.tsv")
b1=$(awk -F'\t' '$1=="40" && $5!="-"{print $5}' "$T/b1/train-log.tsv")
check "bert: initial masked-LM loss is ln 260 ($b0)" awk -v v="$b0" 'BEGIN{exit !(v > 5.50 && v < 5.62)}'
check "bert: masked-LM loss falls in 40 steps ($b0 -> $b1)" awk -v v="$b1" 'BEGIN{exit !(v < 3.5)}'
cat >"$T/bshape.py" <<'PY'
import json, struct, sys
d = sys.argv[1]
raw = open(d + "/model.safetensors", "rb").read()
h = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
h.pop("__metadata__")
c = json.load(open(d + "/config.json"))
assert c["architectures"] == ["BertForMaskedLM"] and c["model_type"] == "bert" and c["vocab_size"] == 260
assert c["hidden_act"] == "gelu" and c["pad_token_id"] == 256 and c["type_vocab_size"] == 2
assert c["tie_word_embeddings"] is True and c["max_position_embeddings"] == 64
assert (c["attncoda_cls_token_id"], c["attncoda_sep_token_id"], c["attncoda_mask_token_id"]) == (257, 258, 259)
want = {"bert.embeddings.word_embeddings.weight": [260, 32], "bert.embeddings.position_embeddings.weight": [64, 32],
        "bert.embeddings.token_type_embeddings.weight": [2, 32], "bert.embeddings.LayerNorm.bias": [32],
        "bert.encoder.layer.1.attention.self.query.weight": [32, 32], "bert.encoder.layer.0.attention.self.key.bias": [32],
        "bert.encoder.layer.0.intermediate.dense.weight": [64, 32], "bert.encoder.layer.1.output.dense.weight": [32, 64],
        "bert.encoder.layer.1.output.LayerNorm.weight": [32], "cls.predictions.transform.dense.weight": [32, 32],
        "cls.predictions.transform.LayerNorm.bias": [32], "cls.predictions.bias": [260]}
for k, s in want.items():
    assert h[k]["shape"] == s, (k, h[k]["shape"])
assert len(h) == 5 + 16 * 2 + 5 and not any("pooler" in k or "decoder" in k for k in h)
t = json.load(open(d + "/tokenizer.json", encoding="utf-8"))
assert [(a["id"], a["content"]) for a in t["added_tokens"]] == [(256, "[PAD]"), (257, "[CLS]"), (258, "[SEP]"), (259, "[MASK]")]
pp = t["post_processor"]
assert pp["type"] == "TemplateProcessing" and pp["special_tokens"]["[CLS]"]["ids"] == [257]
assert [list(x.values())[0]["id"] for x in pp["single"]] == ["[CLS]", "A", "[SEP]"]
PY
check "bert: BertForMaskedLM safetensors/config/tokenizer" "$PYTHON" "$T/bshape.py" "$T/b1"
# The torch reference replays train's validation masks (its own MT19937) and must give the same
# masked-LM loss and [CLS] mass per head: that checks the masking rule, the head and the encoder.
check "bert: torch BertForMaskedLM on the replayed masks agrees with train's report" agree "$T/b1"
cat >"$T/mstat.py" <<'PY'
import sys
sys.path.insert(0, "tests/ref")
from train_torch import bert_windows, MASK
text = open(sys.argv[1], "rb").read()
ids, tg = bert_windows(text, 400, 64, 3)
import torch
sel = tg[:, 1:-1] >= 0
n, N = sel.sum().item(), sel.numel()
m = (ids[:, 1:-1][sel] == MASK).sum().item()
same = (ids[:, 1:-1][sel] == tg[:, 1:-1][sel]).sum().item()
print("# selected %.4f, of those [MASK] %.4f, unchanged %.4f, other byte %.4f" % (n / N, m / n, same / n, 1 - (m + same) / n))
assert abs(n / N - 0.15) < 0.01 and abs(m / n - 0.8) < 0.02
assert abs(same / n - 0.1 - 0.1 / 256) < 0.015 and abs(1 - (m + same) / n - 0.1 * 255 / 256) < 0.015
assert (ids[:, 0] == 257).all() and (ids[:, -1] == 258).all() and (tg[:, 0] < 0).all() and (tg[:, -1] < 0).all()
PY
check "bert: the masking rule's shares (15 %; 80 / 10 / 10) over 24,800 positions" "$PYTHON" "$T/mstat.py" "$T/valid.txt"
"$PYTHON" tests/ref/train_torch.py ids "$T/valid.txt" 16 64 "$T/bids.txt" bert
bert_attn() {
    "$BIN/extract" --model "$1" --ids "$T/bids.txt" "$T/b.h5" >/dev/null 2>"$T/ext.err" || { echo "# $(cat "$T/ext.err")"; return 1; }
    local diff; diff=$("$PYTHON" tests/ref/train_torch.py attn "$1" "$T/bids.txt" "$T/b.h5") || return 1
    echo "# bert: max |attention - torch reference| = $diff"
    awk -v x="$diff" 'BEGIN{exit !(x < 1e-5)}'
}
check "bert: bin/extract loads it through the bert path, attention = torch reference (1e-5)" bert_attn "$T/b1"
cat >"$T/bidir.py" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
P = np.exp(f["attention"][...].astype(np.float64))          # [S,L,H,T,T]
T = P.shape[-1]
upper = P[..., np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]].sum(-1).mean()
print("# bert: mean attention mass on later keys %.3f" % (upper / T))
assert f.attrs["causal"] == 0 and np.allclose(P.sum(-1), 1, atol=1e-5) and upper / T > 0.2
PY
check "bert: the extracted attention is bidirectional (causal = 0, mass on later keys)" "$PYTHON" "$T/bidir.py" "$T/b.h5"
check "bert: checkpoints load too (step 16)" bert_attn "$T/b1/checkpoints/step-000016"
# pos = sinusoidal on bert: the fixed table is stored as position_embeddings.weight (HF runs it
# as is); the torch reference recomputes the table and compares it with the stored one.
{ cat "$T/b.conf"; echo "pos = sinusoidal"; } >"$T/bs.conf"
run --config "$T/bs.conf" --out "$T/bs1" --steps 16 --no-checkpoints || fail "bert sinusoidal run failed: $(cat "$T/stderr")"
check "bert pos=sinusoidal: config says so, the table is stored, report = torch forward" bash -c "
    grep -q '\"attncoda_position_encoding\": \"sinusoidal\"' '$T/bs1/config.json' &&
    grep -q 'bert.embeddings.position_embeddings.weight' '$T/bs1/model.safetensors'" 
check "bert pos=sinusoidal: train's report agrees with the torch forward on the recomputed table" agree "$T/bs1"
check "bert pos=sinusoidal: extract's attention = torch reference (1e-5)" bert_attn "$T/bs1"

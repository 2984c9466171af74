#!/bin/bash
# extract on tiny random checkpoints of the newer families (phi, mistral, gemma, gemma2, qwen3,
# opt, roberta, xlm-roberta; tests/ref/make_tiny_more.py, exact HF tensor names), compared with an
# independent PyTorch forward pass (tests/ref/reference_more.py): attention probabilities within
# 1e-5 absolute, logits within 1e-4 relative. Covers the sliding-window boundary, both soft-caps,
# OPT's position offset 2 and post-LN + project_in/out variant, RoBERTa's padding-offset positions
# with a pad id inside a sequence, tied/untied heads, F16/BF16, shards, and the released
# config.json of phi-2, Mistral-7B-v0.1, gemma-2b-it, Qwen3-0.6B and opt-125m shrunk to test size
# with every other key kept. Then bad input per family.
source tests/lib.sh
MK="$PYTHON tests/ref/make_tiny_more.py"
REF="$PYTHON tests/ref/reference_more.py"
HF=$DATA_DIR/hf   # released config.json files: optional data (DATA_DIR)

$PYTHON -c "
import random; r = random.Random(7)
for _ in range(3): print(' '.join(str(r.randrange(101)) for _ in range(40)))" >"$T/ids.txt"
# id 1 is RoBERTa's pad: inside a line it takes position row 1 and does not advance the count
printf '5 6 7 8 9 1 11 12\n11 12 13\n14 15 16 17 18\n' >"$T/rob_ids.txt"

# compare NAME FAMILY IDS [make_tiny_more options]
compare() {
    local name=$1 fam=$2 ids=$3; shift 3
    $MK "$fam" "$T/$name" "$@" || { fail "$name: generator"; return; }
    against_ref "$name" "$fam" "$ids"
}
against_ref() {   # against_ref NAME FAMILY IDS: extract the checkpoint in $T/NAME, compare
    local name=$1 fam=$2 ids=$3
    local lg=(--logits "$T/$name.lg.h5")
    case $fam in roberta | xlm-roberta) lg=() ;; esac
    if "$BIN/extract" --model "$T/$name" --ids "$ids" "${lg[@]}" "$T/$name.h5" >/dev/null 2>"$T/err"; then
        $REF "$T/$name" "$ids" --attn "$T/$name.h5" "${lg[@]}" --tag "$name"
    else
        fail "$name: extract failed: $(head -c 300 "$T/err")"
    fi
}

compare phi-default-rotary phi "$T/ids.txt"
compare phi-qk-layernorm-gqa-tied phi "$T/ids.txt" --qk-norm --gqa --tied --dtype BF16
compare mistral-window8-gqa mistral "$T/ids.txt" --window 8 --gqa
compare mistral-window-null-sharded mistral "$T/ids.txt" --window-null --shards 2 --dtype F16
compare gemma-headdim256-legacy-act gemma "$T/ids.txt" 2>/dev/null
compare gemma-attention-bias-mqa gemma "$T/ids.txt" --bias --gqa --dtype BF16 2>/dev/null
compare gemma2-window8-softcap gemma2 "$T/ids.txt" --window 8 --softcap 5,0.5 --gqa
compare gemma2-default-caps-layer-types gemma2 "$T/ids.txt" --window 5 --layer-types --dtype BF16
compare qwen3-qk-norm-gqa-untied qwen3 "$T/ids.txt" --gqa
compare qwen3-sliding-bias-tied qwen3 "$T/ids.txt" --window 6 --bias --tied --shards 3
compare opt-pre-ln opt "$T/ids.txt"
compare opt-post-ln-project opt "$T/ids.txt" --post-ln --proj 32 --untied --dtype F16
compare roberta-pad-positions roberta "$T/rob_ids.txt"
compare xlm-roberta-bf16-sharded xlm-roberta "$T/rob_ids.txt" --dtype BF16 --shards 2

# Released configs, shrunk: every other key as published.
for spec in phi:phi-2:F16 mistral:Mistral-7B-v0.1:BF16 gemma:gemma-2b-it:BF16 qwen3:Qwen3-0.6B:BF16 opt:opt-125m:F16; do
    IFS=: read -r fam dir dt <<<"$spec"
    if [ -f "$HF/$dir/config.json" ]; then
        compare "released-$dir" "$fam" "$T/ids.txt" --from-config "$HF/$dir/config.json" --dtype "$dt" 2>/dev/null
    else
        ok "# SKIP released-$dir: $HF/$dir/config.json absent"
    fi
done

# The window boundary itself: row t keeps keys t-W < j <= t (W of them once t >= W-1); Gemma2
# slides on even layers (layer_types: as listed), Qwen3 from max_window_layers on.
$PYTHON - "$T" <<'EOF'
import sys, h5py, numpy as np
T = sys.argv[1]
def keys(f, l):
    a = h5py.File(f"{T}/{f}.h5", "r")["attention"][0, l, 0]
    return [np.flatnonzero(np.isfinite(a[t])).tolist() for t in range(a.shape[0])]
def windowed(rows, W):
    return all(r == list(range(max(0, t - W + 1), t + 1)) for t, r in enumerate(rows))
def full(rows):
    return windowed(rows, 10 ** 9)
ok = all(windowed(keys("mistral-window8-gqa", l), 8) for l in (0, 1))
print(("ok" if ok else "not ok") + " - mistral sliding_window 8: every layer keeps keys t-8 < j <= t")
ok = windowed(keys("gemma2-window8-softcap", 0), 8) and full(keys("gemma2-window8-softcap", 1))
print(("ok" if ok else "not ok") + " - gemma2: layer 0 slides (W = 8), layer 1 is global")
ok = full(keys("gemma2-default-caps-layer-types", 0)) and windowed(keys("gemma2-default-caps-layer-types", 1), 5)
print(("ok" if ok else "not ok") + " - gemma2 layer_types: the listed layer slides, the other is global")
ok = full(keys("qwen3-sliding-bias-tied", 0)) and windowed(keys("qwen3-sliding-bias-tied", 1), 6)
print(("ok" if ok else "not ok") + " - qwen3 use_sliding_window: layers >= max_window_layers slide")
ok = full(keys("mistral-window-null-sharded", 1))
print(("ok" if ok else "not ok") + " - mistral sliding_window null: no window")
lg = h5py.File(f"{T}/gemma2-window8-softcap.lg.h5", "r")["logits"][:]
print(("ok" if 0.3 < np.abs(lg).max() < 0.5 else "not ok")
      + f" - gemma2 final_logit_softcapping 0.5 bounds the logits (max |logit| {np.abs(lg).max():.3f})")
EOF

# The soft-caps matter: the same weights with both caps null give other attention and logits.
mkdir -p "$T/nocap" && cp "$T/gemma2-window8-softcap/model.safetensors" "$T/nocap/"
$PYTHON -c "
import json, sys
c = json.load(open(sys.argv[1])); c['attn_logit_softcapping'] = c['final_logit_softcapping'] = None
json.dump(c, open(sys.argv[2], 'w'))" "$T/gemma2-window8-softcap/config.json" "$T/nocap/config.json"
"$BIN/extract" --model "$T/nocap" --ids "$T/ids.txt" --logits "$T/nocap.lg.h5" "$T/nocap.h5" >/dev/null
$REF "$T/nocap" "$T/ids.txt" --attn "$T/nocap.h5" --logits "$T/nocap.lg.h5" --tag "gemma2-caps-null"
check "gemma2: null soft-caps change the attention" $PYTHON -c "
import h5py, numpy as np, sys
a, b = (h5py.File(f, 'r')['attention'][:] for f in sys.argv[1:])
assert np.abs(np.exp(a) - np.exp(b)).max() > 1e-3" "$T/nocap.h5" "$T/gemma2-window8-softcap.h5"

# ---- bad input per family -------------------------------------------------------------------
out="$T/bad.h5"
# edit NAME FROM 'python on config dict c' ['python on tensor dict w']
edit() {
    local name=$1 from=$2 cexpr=$3 texpr=${4:-}
    mkdir -p "$T/$name"
    $PYTHON - "$T/$from" "$T/$name" <<EOF
import json, sys
sys.path.insert(0, "tests/ref")
from reference_forward import read_safetensors
from make_tiny import write_safetensors
c = json.load(open(sys.argv[1] + "/config.json"))
w = {}
read_safetensors(sys.argv[1] + "/model.safetensors", w)
w = {k: v.numpy() for k, v in w.items()}
$cexpr
$texpr
json.dump(c, open(sys.argv[2] + "/config.json", "w"))
write_safetensors(sys.argv[2] + "/model.safetensors", [(k, v, "I64" if v.dtype.kind == "i" else "F32") for k, v in w.items()])
EOF
}
bad() {   # bad NAME PATTERN [extract args]
    local name=$1 pat=$2; shift 2
    expect_error "$name" 1 "$pat" "$out" "$BIN/extract" --model "$T/$name" --ids "$T/ids.txt" "$@" "$out"
}

# ---- flags: every boolean key of every family as JSON true/false and as 0/1 (issue 43: the
# released OPT configs' "_remove_final_layer_norm": false was refused as "a boolean, expected a
# number"); each variant against the PyTorch reference, which reads the same keys
edit opt-flags-bool opt-pre-ln "c.update(_remove_final_layer_norm=False, do_layer_norm_before=True, enable_bias=True, layer_norm_elementwise_affine=True, tie_word_embeddings=True)"
against_ref opt-flags-bool opt "$T/ids.txt"
edit opt-flags-num opt-pre-ln "c.update(_remove_final_layer_norm=0, do_layer_norm_before=1, enable_bias=1, layer_norm_elementwise_affine=1, tie_word_embeddings=1)"
against_ref opt-flags-num opt "$T/ids.txt"
check "opt: the flags as booleans and as 0/1 give the same attention" "$PYTHON" -c "
import h5py, numpy as np, sys
a, b = (h5py.File(f, 'r')['attention'][:] for f in sys.argv[1:])
assert np.array_equal(a, b)" "$T/opt-flags-bool.h5" "$T/opt-flags-num.h5"
edit opt-remove-final opt-pre-ln "c['_remove_final_layer_norm'] = True" \
    "del w['model.decoder.final_layer_norm.weight'], w['model.decoder.final_layer_norm.bias']"
against_ref opt-remove-final opt "$T/ids.txt"
edit phi-flags-bool phi-default-rotary "c.update(qk_layernorm=False, tie_word_embeddings=False)"
against_ref phi-flags-bool phi "$T/ids.txt"
edit mistral-flags-num mistral-window8-gqa "c['tie_word_embeddings'] = 0"
against_ref mistral-flags-num mistral "$T/ids.txt"
edit gemma2-flags-bool gemma2-window8-softcap "c.update(use_bidirectional_attention=False, tie_word_embeddings=True)"
against_ref gemma2-flags-bool gemma2 "$T/ids.txt"
edit qwen3-flags-num qwen3-qk-norm-gqa-untied "c.update(use_sliding_window=0, attention_bias=0, tie_word_embeddings=0)"
against_ref qwen3-flags-num qwen3 "$T/ids.txt"
edit roberta-flags-num roberta-pad-positions "c['tie_word_embeddings'] = 1"
against_ref roberta-flags-num roberta "$T/rob_ids.txt"
# the older families (tests/ref/make_tiny.py): --info is the same with each flag spelled as a
# boolean and as a number, and extract runs
flag_info() {   # flag_info FAMILY 'key=value, ...' (Python booleans; the num variant writes 0/1)
    local fam=$1 kv=$2 v
    "$PYTHON" tests/ref/make_tiny.py "$fam" "$T/fl-$fam" >/dev/null || { fail "flags $fam: make_tiny"; return; }
    for v in bool num; do
        mkdir -p "$T/fl-$fam-$v" && cp "$T/fl-$fam/model.safetensors" "$T/fl-$fam-$v/"
        "$PYTHON" -c "
import json, sys
c = json.load(open(sys.argv[1] + '/config.json'))
kv = eval('dict(' + sys.argv[3] + ')')
c.update({k: (int(x) if sys.argv[4] == 'num' else x) for k, x in kv.items()})
json.dump(c, open(sys.argv[2] + '/config.json', 'w'))" "$T/fl-$fam" "$T/fl-$fam-$v" "$kv" "$v"
    done
    check "$fam: flags ($kv) as booleans and as 0/1: --info identical, extract runs" bash -c '
        "$1/extract" --model "$2-bool" --info >"$2-bool.info" && "$1/extract" --model "$2-num" --info >"$2-num.info" &&
        cmp -s "$2-bool.info" "$2-num.info" && "$1/extract" --model "$2-bool" --ids "$3" "$2-bool.h5" 2>/dev/null' \
        _ "$BIN" "$T/fl-$fam" "$T/ids.txt"
}
flag_info gpt2 "tie_word_embeddings=True, scale_attn_by_inverse_layer_idx=False"
flag_info gpt_neox "use_parallel_residual=True, tie_word_embeddings=False"
flag_info llama "tie_word_embeddings=False, attention_bias=False, mlp_bias=False"
flag_info qwen2 "use_sliding_window=False, tie_word_embeddings=False"
flag_info bert "tie_word_embeddings=True"
# the released opt-125m config.json with the sizes of facebook/opt-6.7b and the key its release
# carries, "_remove_final_layer_norm": false (optional data: DATA_DIR/hf)
if [ -f "$HF/opt-125m/config.json" ]; then
    mkdir -p "$T/opt-6.7b"
    "$PYTHON" -c "
import json, sys
c = json.load(open(sys.argv[1]))
c.update(_name_or_path='facebook/opt-6.7b', _remove_final_layer_norm=False, ffn_dim=16384, hidden_size=4096,
         num_attention_heads=32, num_hidden_layers=32, word_embed_proj_dim=4096)
json.dump(c, open(sys.argv[2], 'w'), indent=2)" "$HF/opt-125m/config.json" "$T/opt-6.7b/config.json"
    check "--info opt-6.7b config (\"_remove_final_layer_norm\": false): 32 layers, hidden 4096, pre-LN" bash -c \
        '"$1/extract" --model "$2" --info | tr "\t\n" "= " | grep -q "block=pre_ln layers=32 hidden=4096 heads=32"' \
        _ "$BIN" "$T/opt-6.7b"
else
    skip "--info opt-6.7b config (\"_remove_final_layer_norm\": false)" "$HF/opt-125m/config.json"
fi
edit opt-final-str opt-pre-ln "c['_remove_final_layer_norm'] = 'false'"
bad opt-final-str "'_remove_final_layer_norm' is not a boolean: expected true, false, 0 or 1"
expect_error "--info refuses a flag that is a string" 1 "'_remove_final_layer_norm' is not a boolean" - \
    "$BIN/extract" --model "$T/opt-final-str" --info
edit opt-final-two opt-pre-ln "c['_remove_final_layer_norm'] = 2"
bad opt-final-two "'_remove_final_layer_norm' = 2: expected true, false, 0 or 1"
edit phi-qkln-half phi-default-rotary "c['qk_layernorm'] = 0.5"
bad phi-qkln-half "'qk_layernorm' = 0.5: expected true, false, 0 or 1"
edit phi-no-lm-bias phi-default-rotary "" "del w['lm_head.bias']"
bad phi-no-lm-bias "missing tensor 'lm_head.bias'"
edit phi-head-dim phi-default-rotary "c['head_dim'] = 8"
bad phi-head-dim "'head_dim' 8 is not hidden_size / num_attention_heads"
edit mistral-neg-window mistral-window8-gqa "c['sliding_window'] = -3"
bad mistral-neg-window "'sliding_window' -3 is negative"
edit gemma2-no-preff gemma2-window8-softcap "" "del w['model.layers.1.pre_feedforward_layernorm.weight']"
bad gemma2-no-preff "missing tensor 'model.layers.1.pre_feedforward_layernorm.weight'"
edit gemma2-bidir gemma2-window8-softcap "c['use_bidirectional_attention'] = True"
bad gemma2-bidir "'use_bidirectional_attention' other than 0 is not supported"
edit gemma2-types gemma2-window8-softcap "c['layer_types'] = ['sliding_attention']"
bad gemma2-types "'layer_types' is not a list of 2 layer types"
edit gemma2-type-name gemma2-window8-softcap "c['layer_types'] = ['sliding_attention', 'chunked_attention']"
bad gemma2-type-name "layer_types\[1\] is not"
edit gemma-headdim gemma-headdim256-legacy-act "c['head_dim'] = 32; c['hidden_activation'] = 'gelu_pytorch_tanh'"
bad gemma-headdim "tensor 'model.layers.0.self_attn.q_proj.weight' has shape \[1024,64\], expected \[128,64\]"
edit qwen3-no-qnorm qwen3-qk-norm-gqa-untied "" "del w['model.layers.0.self_attn.q_norm.weight']"
bad qwen3-no-qnorm "missing tensor 'model.layers.0.self_attn.q_norm.weight'"
edit qwen3-frac qwen3-qk-norm-gqa-untied "c['head_dim'] = 24.5"
bad qwen3-frac "'head_dim': 24.5 is not an integer"
edit opt-positions opt-pre-ln "" "w['model.decoder.embed_positions.weight'] = w['model.decoder.embed_positions.weight'][2:]"
bad opt-positions "tensor 'model.decoder.embed_positions.weight' has shape \[64,64\], expected \[66,64\]"
edit opt-affine opt-pre-ln "c['layer_norm_elementwise_affine'] = False"
bad opt-affine "'layer_norm_elementwise_affine' other than 1 is not supported"
edit opt-no-project opt-pre-ln "c['word_embed_proj_dim'] = 32"
bad opt-no-project "tensor 'model.decoder.embed_tokens.weight' has shape \[101,64\], expected \[101,32\]"
edit roberta-relative roberta-pad-positions "c['position_embedding_type'] = 'relative_key'"
bad roberta-relative "only absolute RoBERTa position embeddings"
edit roberta-short-table roberta-pad-positions "c['max_position_embeddings'] = 2"
bad roberta-short-table "pad_token_id 1 leaves no positions in 2 rows"
printf '%s\n' "$(seq -s ' ' 2 66)" >"$T/long_ids.txt"
expect_error "roberta: 65 tokens exceed the 64 positions after padding_idx + 1" 1 "exceed the model's 64 positions" \
    "$out" "$BIN/extract" --model "$T/roberta-pad-positions" --ids "$T/long_ids.txt" "$out"
$MK roberta "$T/roberta-bare" --no-head
expect_error "roberta: no language-model head, --nll refused" 2 "roberta has no language-model head" "$out" \
    "$BIN/extract" --model "$T/roberta-bare" --ids "$T/rob_ids.txt" --nll "$T/x.tsv" "$out"

# --text with the released GPT-2-style tokenizers (random weights of the real vocabulary size):
# phi gets <|endoftext|> first like gpt2, OPT its </s> (id 2), RoBERTa <s> … </s>; the text ids
# between are the tokenize program's.
echo "In the beginning God created the heaven and the earth." >"$T/verse.txt"
for spec in phi:phi-2:51200:50256:- opt:opt-125m:50272:2:- roberta:roberta-base:50265:0:2; do
    IFS=: read -r fam dir V lead trail <<<"$spec"
    if [ ! -d "$HF/$dir" ]; then ok "# SKIP --text $fam: $HF/$dir absent"; continue; fi
    $MK "$fam" "$T/text-$fam" --vocab "$V"
    for f in "$HF/$dir"/*; do   # the tokenizer files, not the released config.json
        case $(basename "$f") in config.json | generation_config.json) ;; *) cp "$f" "$T/text-$fam/" ;; esac
    done
    "$BIN/tokenize" --tokenizer "$HF/$dir" --family "$fam" --no-header "$T/verse.txt" >"$T/verse-$fam.ids"
    "$BIN/extract" --model "$T/text-$fam" --text "$T/verse.txt" -S 1 -T 8 --sequential "$T/text-$fam.h5"
    last=""; [ "$trail" != - ] && last=", $trail last"
    check "--text $fam: $lead first$last, the tokenizer's ids between" $PYTHON -c "
import h5py, sys
t = h5py.File(sys.argv[1], 'r')['tokens'][0].tolist()
ids = [int(x) for x in open(sys.argv[2]).read().split()]
lead, trail = int(sys.argv[3]), sys.argv[4]
body = t[1:-1] if trail != '-' else t[1:]
assert t[0] == lead and body == ids[:len(body)], (t, ids)
assert trail == '-' or t[-1] == int(trail), t" "$T/text-$fam.h5" "$T/verse-$fam.ids" "$lead" "$trail"
done

# --info on every released config.json in $HF (config only, no weights): the values the forward
# pass will use; T5 (encoder-decoder) is refused by name.
info_has() {   # info_has DIR 'key<TAB>value' ...
    local dir=$1; shift
    [ -f "$HF/$dir/config.json" ] || { ok "# SKIP --info $dir: absent"; return; }
    "$BIN/extract" --model "$HF/$dir" --info >"$T/info.txt" 2>/dev/null || { fail "--info $dir: failed"; return; }
    local kv miss=""
    for kv in "$@"; do grep -qxF "$(printf "$kv")" "$T/info.txt" || miss="$miss [$kv]"; done
    if [ -z "$miss" ]; then ok "--info $dir: $# values as expected"; else fail "--info $dir: missing$miss"; fi
}
W32=$(printf '4096,%.0s' $(seq 31))4096
info_has phi-2 'block\tparallel_one_norm' 'head_dim\t80' 'rotary_dim\t32' 'activation\tgelu_tanh' 'tied_head\t0'
info_has Mistral-7B-v0.1 'kv_heads\t8' 'norm_eps\t1e-05' "sliding_window\t$W32" 'max_positions\t32768'
info_has gemma-2b-it 'head_dim\t256' 'kv_heads\t1' 'norm\trmsnorm(1+w)' 'activation\tgelu_tanh' \
    'embed_scale\t45.2548332' 'attn_scale\t0.0625' 'tied_head\t1' 'bos_id\t2'
info_has Qwen3-0.6B 'head_dim\t128' 'qk_norm\t1' 'tied_head\t1' 'rope_theta\t1e+06' 'max_positions\t40960'
info_has opt-125m 'block\tpre_ln' 'position_offset\t2' 'max_positions\t2048' 'activation\trelu' 'bos_id\t2'
info_has gpt2 'block\tpre_ln' 'learned_positions\t1' 'tied_head\t1'
info_has bert-base-uncased 'block\tpost_ln' 'causal\t0' 'norm_eps\t1e-12'
info_has pythia-410m-deduped 'block\tparallel' 'rotary_dim\t16'
info_has Qwen2.5-0.5B 'kv_heads\t2' 'tied_head\t1'
info_has Llama-3.1-8B 'kv_heads\t8' 'rope_theta\t500000'
n=0; for f in "$HF"/*/config.json; do [ -f "$f" ] && n=$((n + 1)); done
m=0; for f in "$HF"/*/config.json; do [ -f "$f" ] && "$BIN/extract" --model "$(dirname "$f")" --info >/dev/null 2>&1 && m=$((m + 1)); done
if [ "$n" -eq 0 ]; then skip "--info loads every released config.json but T5's" "$HF/*/config.json"
else check "--info loads every released config.json but T5's ($m of $n)" test "$m" -eq $((n - 1)); fi
if [ -d "$HF/flan-t5-large" ]; then
    expect_error "--info: t5 refused by name" 1 "model_type 't5' is not supported" - \
        "$BIN/extract" --model "$HF/flan-t5-large" --info
fi
expect_error "--info takes only --model" 2 "info takes only --model" - \
    "$BIN/extract" --model "$T/opt-pre-ln" --info --ids "$T/ids.txt"
expect_error "--info: a directory without config.json" 1 "config.json" - "$BIN/extract" --model "$T" --info

#!/bin/bash
# The rehearsal's checkpoints (tests/scale/make_real_shape.py, make rehearse, docs/SCALE.md): a
# Pythia-70M-shaped file cut to 2 of its 6 layers has the released dtype and tensor shapes,
# extract reads it with its real tokenizer, and the planted sinks are there: in every layer
# three heads in four put nearly all their attention on position 0, the fourth does not.
source tests/lib.sh
G=tests/scale/make_real_shape.py
read -r params bytes full kept dtype < <($PYTHON $G pythia-70m "$T/p" --layers 2)
check "make_real_shape: pythia-70m cut to 2 of 6 layers, F16: 57,817,088 parameters" \
    test "$params $full $kept $dtype" = "57817088 6 2 F16"
check "make_real_shape: the file's size is what it reports" test "$(stat -c %s "$T/p/model.safetensors")" = "$bytes"
check "make_real_shape: Pythia's shapes (fused QKV [1536, 512], 50304-token embeddings) and buffers" "$PYTHON" - "$T/p" <<'PY'
import json, struct, sys
f = open(sys.argv[1] + "/model.safetensors", "rb")
h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
ok = (h["gpt_neox.layers.1.attention.query_key_value.weight"] == {**h["gpt_neox.layers.1.attention.query_key_value.weight"], "dtype": "F16", "shape": [1536, 512]}
      and h["gpt_neox.embed_in.weight"]["shape"] == [50304, 512] and h["embed_out.weight"]["dtype"] == "F16"
      and h["gpt_neox.layers.0.attention.bias"]["dtype"] == "BOOL" and "gpt_neox.layers.2.attention.dense.weight" not in h)
sys.exit(0 if ok else 1)
PY
check "make_real_shape: extract reads it with the Pythia tokenizer; sinks planted in 3 heads of 4" bash -c "
    '$BIN/extract' --threads 1 --model '$T/p' --text pipelines/data/README.md -S 1 -T 32 --seed 1 '$T/a.h5' >/dev/null &&
    '$BIN/decompose' --tsv '$T/s.tsv' '$T/a.h5' '$T/d.h5' >/dev/null &&
    awk -F'\t' '!/^#/ && \$1 ~ /^[0-9]+\$/ { n++; if ((\$2 % 4 != 3) != (\$4 > 0.9)) bad++ } END { exit !(n == 16 && !bad) }' '$T/s.tsv'"

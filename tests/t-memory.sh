#!/bin/bash
# extract's kept-half weights (docs/EXTRACT.md, Memory and speed): F16/BF16 checkpoints, whose
# matrices stay memory-mapped and are widened per block inside each product, give the same
# attention and logits bytes as the same values stored as F32 (tests/ref/widen_safetensors.py)
# and used in place, for every decoder family and BERT; and a one-layer checkpoint of 1B widths
# (0.19e9 parameters, tests/bench/make_bf16_llama.py) stays within extract --help's rule of
# 2.2 bytes per parameter plus activations (given 64 MB: ids, logits, buffers, the program).
source tests/lib.sh
$PYTHON -c "
import random; r = random.Random(7)
for _ in range(3): print(' '.join(str(r.randrange(101)) for _ in range(40)))" >"$T/ids.txt"
printf '5 6 7 8 9 10 11 12\n11 12 13\n14 15 16 17 18\n' >"$T/bert_ids.txt"

same_as_f32() {   # GENERATOR FAMILY DTYPE
    local n="$T/$2-$3" ids="$T/ids.txt" lg=()
    case $2 in bert|roberta) ids="$T/bert_ids.txt" ;; *) lg=(--logits) ;; esac
    $PYTHON "tests/ref/$1" "$2" "$n" --dtype "$3" >/dev/null && $PYTHON tests/ref/widen_safetensors.py "$n" "$n-f32" &&
        "$BIN/extract" --model "$n" --ids "$ids" ${lg:+--logits "$n.lg.h5"} "$n.h5" >/dev/null &&
        "$BIN/extract" --model "$n-f32" --ids "$ids" ${lg:+--logits "$n-f32.lg.h5"} "$n-f32.h5" >/dev/null &&
        $PYTHON - "$n" <<'PY'
import h5py, os, sys
n = sys.argv[1]
for s in [".h5", ".lg.h5"]:
    if not os.path.exists(n + s): continue
    a, b = h5py.File(n + s), h5py.File(n + "-f32" + s)
    for k in ["attention", "logits"]:
        if k in a and a[k][()].tobytes() != b[k][()].tobytes(): sys.exit(1)
PY
}
for dt in BF16 F16; do
    for f in gpt2 gpt_neox llama qwen2 bert; do
        check "$f $dt: kept-half weights give the F32 bytes" same_as_f32 make_tiny.py $f $dt
    done
    for f in phi mistral gemma gemma2 qwen3 opt roberta; do
        check "$f $dt: kept-half weights give the F32 bytes" same_as_f32 make_tiny_more.py $f $dt
    done
done

p=$($PYTHON tests/bench/make_bf16_llama.py "$T/one" --layers 1)
$PYTHON -c "
import random; r = random.Random(3)
print(' '.join(str(r.randrange(32000)) for _ in range(32)))" >"$T/ids32.txt"
kb=$($PYTHON - "$BIN/extract" "$T" <<'PY'
import resource, subprocess, sys
x, t = sys.argv[1:]
subprocess.run([x, "--model", t + "/one", "--ids", t + "/ids32.txt", "--logits", t + "/one.lg.h5", t + "/one.h5"],
               check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
)
limit=$(( (p * 22 / 10 + 64 * 1048576) / 1024 ))
if ldd "$BIN/extract" 2>/dev/null | grep -q 'libasan'; then
    # make sanitize: ASan's quarantine (256 MB of freed blocks) and shadow memory are in the RSS
    skip "1B-wide BF16 layer: peak RSS ${kb} kB (bound ${limit} kB)" "a build without ASan, whose quarantine and shadow memory count in the RSS"
else
    check "1B-wide BF16 layer ($p parameters): peak RSS ${kb} kB <= 2.2 B/parameter + 64 MB (${limit} kB)" \
        test "${kb:-999999999}" -le "$limit"
fi

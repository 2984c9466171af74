#!/bin/bash
# Sampled query rows at long context (issue 45, docs/EXTRACT.md "Sampled query rows"): extract
# --queries on the Llama-3.2-1B-shaped random BF16 checkpoint of tests/bench/make_bf16_llama.py
# (hidden 2048, 32 heads, 8 KV heads, FFN 8192, 16 layers, 32000 vocabulary; its config.json
# copied with max_position_embeddings raised to T), one sequence of QB_T (8192) tokens with
# QB_Q (256) sampled queries. Prints, against the issue's targets:
#   peak RSS (getrusage of the child) against the model's bytes + 2 GB;
#   time against the forward pass's FLOPs at the kernels' measured GFLOP/s: the BF16 projections
#   2·T·(q,k,v,o,gate,up,down weights)·L and the causal attention blocks (128 query rows × the
#   keys up to the block's end, scores and context) at the single-thread GFLOP/s that
#   tests/bench/queries_gemm.c measures for those shapes, divided by the threads for wall time.
# CPU time is the figure to trust on a shared machine; wall time there includes the neighbours.
# The checkpoint is kept in MEM_BENCH_DIR (default /tmp/attncoda-membench). Asserts nothing.
set -u
BIN=${BIN:-bin}; BUILD=${BUILD:-build}; PYTHON=${PYTHON:-/usr/bin/python3}
D=${MEM_BENCH_DIR:-/tmp/attncoda-membench}
QT=${QB_T:-8192}; QQ=${QB_Q:-256}; THREADS=${QB_THREADS:-$(nproc)}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
mkdir -p "$D"
if [ ! -s "$D/llama1b-bf16/params" ]; then
    rm -rf "$D/llama1b-bf16"
    $PYTHON tests/bench/make_bf16_llama.py "$D/llama1b-bf16" --layers 16 --dtype BF16 >"$D/llama1b-bf16.params" &&
        mv "$D/llama1b-bf16.params" "$D/llama1b-bf16/params" || exit 0
fi
LONG=$D/llama1b-bf16-long
mkdir -p "$LONG"
ln -sf ../llama1b-bf16/model.safetensors "$LONG/model.safetensors"
$PYTHON - "$D/llama1b-bf16/config.json" "$LONG/config.json" "$QT" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["max_position_embeddings"] = max(int(sys.argv[3]), c["max_position_embeddings"])
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
$PYTHON -c "
import random; r = random.Random(3)
print(' '.join(str(r.randrange(32000)) for _ in range($QT)))" >"$TMP/ids.txt"
cc -std=c11 -D_GNU_SOURCE -O2 -ffp-contract=off -Isrc/lib -Isrc -fopenmp -o "$TMP/qg" tests/bench/queries_gemm.c "$BUILD/libattncoda.a" -ljansson -lnettle -lm || exit 0
"$TMP/qg" "$QT" >"$TMP/gflops.txt"
read -r kb wall cpu < <($PYTHON - "$BIN/extract" "$LONG" "$TMP" "$QQ" "$THREADS" <<'PY'
import resource, subprocess, sys, time
x, m, d, q, th = sys.argv[1:]
t = time.time()
subprocess.run([x, "--model", m, "--ids", d + "/ids.txt", "--queries", q, "--threads", th, "--deflate", "0",
                d + "/q.h5"], check=True, stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_maxrss, round(time.time() - t, 3), round(r.ru_utime + r.ru_stime, 3))
PY
)
$PYTHON - "$QT" "$QQ" "$THREADS" "$kb" "$wall" "$cpu" "$(stat -L -c %s "$LONG/model.safetensors")" \
    "$(stat -c %s "$TMP/q.h5")" "$TMP/gflops.txt" <<'PY'
import sys
T, Q, th, kb, wall, cpu, model_bytes, out_bytes = (float(x) for x in sys.argv[1:9])
g = dict(l.split() for l in open(sys.argv[9]))
L, Dm, H, KV, hd, FF, R = 16, 2048, 32, 8, 64, 8192, 128
T = int(T)
proj = 2.0 * T * (Dm * H * hd + 2 * Dm * KV * hd + H * hd * Dm + 3 * Dm * FF) * L
blocks = sum(min(R, T - t0) * (t0 + min(R, T - t0)) for t0 in range(0, T, R))   # rows × keys
scores = ctx = 2.0 * blocks * hd * H * L
pred_cpu = proj / (float(g["proj"]) * 1e9) + scores / (float(g["scores"]) * 1e9) + ctx / (float(g["context"]) * 1e9)
rss = kb * 1024
print("queries: 1B-shaped BF16, T=%d, Q=%d, %d threads: peak RSS %.2f GB, target <= model %.2f GB + 2 GB = %.2f GB (%s)"
      % (T, Q, th, rss / 1e9, model_bytes / 1e9, model_bytes / 1e9 + 2, "met" if rss <= model_bytes + 2e9 else "NOT met"))
print("queries: forward FLOPs %.3g (projections %.3g, attention %.3g) at %s/%s/%s GFLOP/s per thread (proj/scores/context)"
      % (proj + scores + ctx, proj, scores + ctx, g["proj"], g["scores"], g["context"]))
print("queries: CPU %.1f s = %.2fx the %.1f CPU-s the FLOPs predict; wall %.1f s = %.2fx the %.1f s predicted on %d threads (target <= 1.3x)"
      % (cpu, cpu / pred_cpu, pred_cpu, wall, wall / (pred_cpu / th), pred_cpu / th, th))
print("queries: attention file %.1f MB (kept rows L*H*Q*T*4 = %.1f MB, --deflate 0)" % (out_bytes / 1e6, L * H * Q * T * 4 / 1e6))
PY

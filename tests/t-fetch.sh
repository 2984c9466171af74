#!/bin/bash
# make fetch (pipelines/fetch.sh) against a local stand-in for the hub (tests/ref/fetch_server.py on
# 127.0.0.1, reached through HF_ENDPOINT): a file is kept only when it matches its check value
# (SHA-256, git blob SHA-1, or the value the hub declares, then locked); files already there are
# not fetched again; a wrong hash, a truncated transfer, a 404 and a server that is down each give
# one stderr line and exit 1 and leave no file at DEST; a rerun resumes a truncated transfer with
# an HTTP Range request. No network beyond 127.0.0.1.
source tests/lib.sh
unset MAKEFLAGS MFLAGS MAKELEVEL   # the make it calls is its own, not a sub-make of make test's
F=pipelines/fetch.sh
S=$T/srv; mkdir -p "$S"
$PYTHON - "$S" <<'PY'
import os, random, sys
r = random.Random(5); d = sys.argv[1]
for name, n in [("good.safetensors", 100000), ("trunc-big.safetensors", 300000), ("lock.safetensors", 5000)]:
    open(os.path.join(d, name), "wb").write(bytes(r.randrange(256) for _ in range(n)))
open(os.path.join(d, "config.json"), "w").write('{"model_type": "gpt2"}\n')
PY
$PYTHON tests/ref/fetch_server.py "$S" "$T/port" "$T/srv.log" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
export HF_ENDPOINT=http://127.0.0.1:$(cat "$T/port")
C=0123456789abcdef0123456789abcdef01234567
url() { echo "https://huggingface.co/org/repo/resolve/$C/$1"; }
sum() { sha256sum "$S/$1" | cut -c1-64; }
blob() { { printf 'blob %d\0' "$(stat -c %s "$S/$1")"; cat "$S/$1"; } | sha1sum | cut -c1-40; }
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@"; }   # ROOT DEST URL SIZE SHA256 GIT_SHA1

{ echo '# comment'
  row HF_MODELS_DIR m1/model.safetensors "$(url good.safetensors)" 100000 "$(sum good.safetensors)" -
  row HF_MODELS_DIR m1/config.json "$(url config.json)" - - "$(blob config.json)"
  row DATA_DIR models/x/model.safetensors "$(url good.safetensors)" - "$(sum good.safetensors)" -
} >"$T/ok.tsv"
check "fetch: SHA-256 and git blob SHA-1 rows into both roots, exit 0" bash -c "$F '$T/ok.tsv' '$T/d' '$T/h' 2>/dev/null"
check "fetch: the files are byte-identical to the served ones" \
    bash -c "cmp -s '$S/good.safetensors' '$T/h/m1/model.safetensors' && cmp -s '$S/config.json' '$T/h/m1/config.json' && cmp -s '$S/good.safetensors' '$T/d/models/x/model.safetensors'"
check "fetch: a second run finds all three present" bash -c "$F '$T/ok.tsv' '$T/d' '$T/h' 2>&1 | grep -q '0 downloaded, 3 already present'"
check "fetch: MODELS selects by folder: only m1's two files" bash -c "$F '$T/ok.tsv' '$T/d' '$T/h2' m1 2>&1 | grep -q '2 downloaded, 0 already' && [ ! -e '$T/d2' ]"
expect_error "fetch: a selection that names no file is a usage error" 2 "lists no file under: nosuch" - \
    $F "$T/ok.tsv" "$T/d" "$T/h" nosuch

# no check value in the manifest: the hub's declared value, recorded in fetch.lock
{ row HF_MODELS_DIR m2/model.safetensors "$(url lock.safetensors)" - - -
  row HF_MODELS_DIR m2/config.json "$(url config.json)" - - -; } >"$T/hub.tsv"
check "fetch: hub-declared values: downloaded, exit 0" bash -c "$F '$T/hub.tsv' '$T/d' '$T/h' 2>/dev/null"
check "fetch: fetch.lock records the LFS SHA-256 and the git blob SHA-1, under the manifest's URL" bash -c "
    grep -qP '^m2/model.safetensors\t$(url lock.safetensors)\tsha256\t$(sum lock.safetensors)\$' '$T/h/fetch.lock' &&
    grep -qP '^m2/config.json\t.*\tgitsha1\t$(blob config.json)\$' '$T/h/fetch.lock'"
cp "$S/lock.safetensors" "$T/lock.orig"
printf 'changed' | dd of="$S/lock.safetensors" bs=1 seek=10 conv=notrunc 2>/dev/null
rm "$T/h/m2/model.safetensors"
expect_error "fetch: the hub's file changed after it was locked: refused" 1 \
    "could not get 1 file\(s\): m2/model.safetensors \(wrong sha256: differs from .*fetch.lock, refused\)" \
    "$T/h/m2/model.safetensors" $F "$T/hub.tsv" "$T/d" "$T/h"
check "fetch: the refused download left no partial file" bash -c "[ -z \"\$(find '$T/h/.fetch-partial' -type f 2>/dev/null)\" ]"
cp "$T/lock.orig" "$S/lock.safetensors"

row DATA_DIR bad/f.safetensors "$(url good.safetensors)" - "$(printf '0%.0s' {1..64})" - >"$T/badsum.tsv"
expect_error "fetch: wrong SHA-256: one line naming the file, nothing kept" 1 \
    "could not get 1 file\(s\): bad/f.safetensors \(wrong sha256\)" "$T/d/bad/f.safetensors" $F "$T/badsum.tsv" "$T/d" "$T/h"
check "fetch: wrong SHA-256: no partial file either" bash -c "[ -z \"\$(find '$T/d/.fetch-partial' -type f 2>/dev/null)\" ]"

row HF_MODELS_DIR t/big.safetensors "$(url trunc-big.safetensors)" 300000 "$(sum trunc-big.safetensors)" - >"$T/trunc.tsv"
expect_error "fetch: truncated transfer: one line, exit 1, nothing at DEST" 1 \
    "t/big.safetensors \(transfer interrupted after 150000 bytes; run make fetch again to resume\)" \
    "$T/h/t/big.safetensors" $F "$T/trunc.tsv" "$T/d" "$T/h"
check "fetch: a rerun resumes with a Range request and completes the file" bash -c "
    $F '$T/trunc.tsv' '$T/d' '$T/h' 2>/dev/null && grep -q 'GET /org/repo/resolve/$C/trunc-big.safetensors bytes=150000-' '$T/srv.log' &&
    cmp -s '$S/trunc-big.safetensors' '$T/h/t/big.safetensors' && [ ! -d '$T/h/.fetch-partial' ]"

row HF_MODELS_DIR n/missing.safetensors "$(url missing.safetensors)" - "$(sum good.safetensors)" - >"$T/404.tsv"
expect_error "fetch: HTTP 404: one line, exit 1, nothing kept" 1 "n/missing.safetensors \(HTTP error 404" \
    "$T/h/n/missing.safetensors" $F "$T/404.tsv" "$T/d" "$T/h"
row HF_MODELS_DIR n/missing.safetensors "$(url missing.safetensors)" - - - >"$T/404hub.tsv"
expect_error "fetch: no hub-declared value (404 on HEAD): one line, exit 1" 1 "n/missing.safetensors \(the server declared no checksum" \
    "$T/h/n/missing.safetensors" $F "$T/404hub.tsv" "$T/d" "$T/h"

dead=$($PYTHON -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
expect_error "fetch: server down: one line naming the file, exit 1, nothing kept" 1 \
    "could not get 1 file\(s\): m9/model.safetensors \(.*(onnect|refused)" "$T/h9/m9/model.safetensors" \
    env HF_ENDPOINT=http://127.0.0.1:$dead $F <(row HF_MODELS_DIR m9/model.safetensors "$(url good.safetensors)" - "$(sum good.safetensors)" -) "$T/d" "$T/h9"
{ cat "$T/ok.tsv"; cat "$T/404.tsv"; cat "$T/badsum.tsv"; } | grep -v '^#' | sed 's/^HF_MODELS_DIR\tm1/HF_MODELS_DIR\tm5/' >"$T/two.tsv"
expect_error "fetch: several failures: still one line naming each" 1 \
    "could not get 2 file\(s\): n/missing.safetensors \(HTTP error 404\); bad/f.safetensors \(wrong sha256\)" - \
    $F "$T/two.tsv" "$T/d" "$T/h"
expect_error "fetch: a row without 6 columns is a usage error" 2 "want 6 tab-separated columns" - \
    $F <(printf 'DATA_DIR\ta\thttps://x/y\n') "$T/d" "$T/h"

check "fetch: the manifest pins a 40-hex commit and gives SIZE/SHA256/GIT_SHA1 or '-' on every row" "$PYTHON" -c "
import re, sys
rows = [l.rstrip('\\n') for l in open('pipelines/fetch.tsv') if not l.startswith('#')]
pat = re.compile(r'^(DATA_DIR|HF_MODELS_DIR)\\t[^\\t/][^\\t]*\\thttps://[^\\t]*/[0-9a-f]{40}/[^\\t]+\\t([0-9]+|-)\\t([0-9a-f]{64}|-)\\t([0-9a-f]{40}|-)$')
sys.exit(0 if rows and all(pat.match(r) for r in rows) else 1)"
check "fetch: the manifest gives config.json and model.safetensors of each of the ten paper models" bash -c '
    for m in gpt2 pythia-70m pythia-160m pythia-410m pythia-1b pythia-1.4b qwen2.5-0.5b llama-3.2-1b bert-base-uncased vit-base-patch16-224; do
        p=$(sed -n "s/^path *= *//p" configs/$m.conf)
        for f in config.json model.safetensors; do grep -qP "^HF_MODELS_DIR\t$p/$f\t" pipelines/fetch.tsv || { echo "$m: no $f" >&2; exit 1; }; done
    done'
check "fetch: make fetch MODELS=... passes each model's folder" bash -c "
    make -n fetch MODELS='gpt2 llama-3.2-1b' DATA_DIR=$T/d HF_MODELS_DIR=$T/h 2>/dev/null | grep -q \"fetch.sh pipelines/fetch.tsv '$T/d' '$T/h' gpt2 Llama-3.2-1B\$\""
expect_error "fetch: make fetch MODELS= with a model that has no config: one line, usage error" 2 \
    "make fetch: MODELS: no configs/nosuch.conf" - make -s fetch MODELS='gpt2 nosuch' DATA_DIR="$T/d" HF_MODELS_DIR="$T/h"

#!/bin/bash
# make fetch (pipelines/fetch.sh): a file is kept only when its SHA-256 matches the manifest, files
# already there are not fetched again, and anything it cannot get (no network, wrong checksum) is
# named on one stderr line with exit status 1. Uses file:// URLs, so it needs no network.
source tests/lib.sh
F=pipelines/fetch.sh
src=$PWD/pipelines/data/models/stories260K/tok512.bin
good=037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312
printf '# comment\nDATA_DIR\tmodels/x/tok512.bin\tfile://%s\t%s\nHF_MODELS_DIR\tm/tok512.bin\tfile://%s\t%s\n' \
    "$src" $good "$src" $good >"$T/ok.tsv"
check "fetch: both roots filled, exit 0" bash -c "$F '$T/ok.tsv' '$T/d' '$T/h' 2>/dev/null"
check "fetch: the files are byte-identical to their source" bash -c "cmp -s '$src' '$T/d/models/x/tok512.bin' && cmp -s '$src' '$T/h/m/tok512.bin'"
check "fetch: a second run finds both present" bash -c "$F '$T/ok.tsv' '$T/d' '$T/h' 2>&1 | grep -q '0 downloaded, 2 already present'"
printf 'DATA_DIR\tbad/f.bin\tfile://%s\t%s\n' "$src" "$(printf '0%.0s' {1..64})" >"$T/badsum.tsv"
expect_error "fetch: wrong SHA-256: one line naming the file, nothing kept" 1 "fetch: could not get 1 file.*bad/f.bin" \
    "$T/d/bad/f.bin" $F "$T/badsum.tsv" "$T/d" "$T/h"
printf 'DATA_DIR\ta.bin\tfile://%s/nowhere\t%s\nHF_MODELS_DIR\tb/c.bin\thttp://127.0.0.1:9/c\t%s\n' "$T" $good $good >"$T/net.tsv"
expect_error "fetch: unreachable sources: one line naming both" 1 "could not get 2 file\(s\).*a.bin b/c.bin" \
    "$T/d/a.bin" $F "$T/net.tsv" "$T/d" "$T/h"
check "fetch: the manifest names a 64-hex SHA-256 and a fixed revision for every file" "$PYTHON" -c "
import re, sys
rows = [l.rstrip('\\n').split('\\t') for l in open('pipelines/fetch.tsv') if not l.startswith('#')]
pat = re.compile(r'^(DATA_DIR|HF_MODELS_DIR)\\t[^\\t/][^\\t]*\\thttps://[^\\t]*/[0-9a-f]{40}/[^\\t]+\\t[0-9a-f]{64}$')
sys.exit(0 if rows and all(pat.match('\\t'.join(r)) for r in rows) else 1)"

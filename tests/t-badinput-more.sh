#!/bin/bash
# Bad input, round two (issue 39): inputs of a few bytes or a pathological vocabulary that made a
# reader hang, allocate what the file does not hold, or accept nonsense. Each part names its class.
source tests/lib.sh

# ---- Unigram: one very long piece must not make every position try every prefix length ------
# (a 30 kB piece in a tokenizer.json, a 4 kB one in a tokenizer.model; words of 100 kB, one made
# of the long piece's byte itself). Before the fix the Viterbi hashed every prefix up to the
# longest piece at every position: minutes. The timeout is the assertion, not a timing.
"$PYTHON" - "$T" "$EMBED/tokenizers/t5-small/tokenizer.json" <<'PY'
import json, sys
out, src = sys.argv[1:]
t5 = json.load(open(src))
base = t5["model"]["vocab"][:400]
t5["added_tokens"] = [a for a in t5["added_tokens"] if a["id"] < 400]
for name, n in (("long30k.json", 30000), ("long4k.json", 4000)):
    t5["model"]["vocab"] = base + [["\u2581" + "a" * n, -20.0], ["a" * n, -30.0], ["b" * n, -25.0]]
    json.dump(t5, open(out + "/" + name, "w"))
PY
"$PYTHON" tests/ref/spm_ref.py tomodel "$T/long4k.json" "$T/long4k.model"
{ printf 'x '; head -c 100000 /dev/zero | tr '\0' a; printf ' '; head -c 100000 /dev/zero | tr '\0' b
  printf ' '; head -c 100000 /dev/zero | tr '\0' c; echo; } >"$T/long.txt"
for tk in long30k.json long4k.json long4k.model; do
    check "unigram $tk: three 100 kB words tokenized within 20 s" \
        bash -c "timeout 20 '$BIN/tokenize' --no-header -t '$T/$tk' '$T/long.txt' >'$T/$tk.ids' && [ \$(wc -w <'$T/$tk.ids') -gt 100 ]"
done
# the long pieces are used where they match: ids 400 ("▁" + a's), 401 (a's), 402 (b's)
check "unigram long30k.json: the 30 kB pieces are found where they match" \
    bash -c "tr ' ' '\n' <'$T/long30k.json.ids' | sort | uniq -c | awk '\$2==400||\$2==401||\$2==402{n[\$2]=\$1} END{exit !(n[400]==1 && n[401]==2 && n[402]==3)}'"
check "unigram: the .json and .model of the 4 kB vocabulary give the same ids" cmp -s "$T/long4k.json.ids" "$T/long4k.model.ids"

# ---- train recipes: repeated keys, beta = 1, sizes in range whose product is not, NaN loss ----
bible -f gen1:1-gen5:32 | sed 's/^[^ ]* //' >"$T/train.txt"
bible -f exo1:1-exo2:25 | sed 's/^[^ ]* //' >"$T/valid.txt"
printf 'kind = trained\nfamily = gpt2\nlayers = 2\nd_model = 32\n\nheads = 2\nd_ff = 64\ncontext = 64\nbatch = 8\n' >"$T/r.conf"
recipe() {   # NAME EXTRA-LINES PATTERN: the recipe plus lines is refused (exit 1, one line, no model)
    { cat "$T/r.conf"; printf "$2"; } >"$T/bad.conf"
    expect_error "train: $1" 1 "$3" "$T/rout/model.safetensors" "$BIN/train" --config "$T/bad.conf" --out "$T/rout" \
        --train "$T/train.txt" --valid "$T/valid.txt" --threads 1 --steps 2 --no-checkpoints
    check "train: $1: no output folder" test ! -e "$T/rout"
}
recipe "a repeated key names both lines" 'lr = 1e-3\nd_model = 64\n' \
    "^train: $T/bad.conf: line 11: key d_model repeats line 4 \(each key once\)$"
recipe "beta1 = 1 is refused at parse time" 'beta1 = 1\n' "^train: $T/bad.conf: line 10: beta1 = 1: want a number in \[0, 1\)"
recipe "beta2 = 1 is refused at parse time" 'beta2 = 1.0\n' "^train: $T/bad.conf: line 10: beta2 = 1: want a number in \[0, 1\)"
sed -i 's/^layers = .*/layers = 64/; s/^context = .*/context = 4096/; s/^batch = .*/batch = 4096/; s/^heads = .*/heads = 256/; s/^d_model = .*/d_model = 8192/' "$T/r.conf"
recipe "sizes in range whose memory is not: refused up front, naming the keys" '' \
    "^train: $T/bad.conf: the recipe needs about [0-9.]+ GB \(batch = 4096, context = 4096, heads = 256, layers = 64, d_model = 8192, d_ff = 64\), more than this machine's [0-9.]+ GB of memory$"
# adam_eps = 0 on a Llama at lr 10: NaN from the second update on (the first is finite)
printf 'kind = trained\nfamily = llama\nlayers = 2\nd_model = 32\nheads = 4\nkv_heads = 2\nd_ff = 64\ncontext = 64\nbatch = 8\nlr = 10\nwarmup = 0\ngrad_clip = 0\nadam_eps = 0\n' >"$T/nan.conf"
expect_error "train: a non-finite training loss stops training naming the step" 1 \
    "^train: $T/nan.conf: step 2 of 40: the training loss is NaN \(not finite\)" "$T/nan/model.safetensors" \
    "$BIN/train" --config "$T/nan.conf" --out "$T/nan" --train "$T/train.txt" --valid "$T/valid.txt" --threads 1 --steps 40 --no-checkpoints

# ---- extract --images: a FIFO named like an image, a binary list, images claiming huge sizes ----
"$PYTHON" tests/ref/make_tiny_vit.py "$T/vit" >/dev/null || fail "make_tiny_vit"
mkdir -p "$T/img" && mkfifo "$T/img/x.png"
expect_error "images: a FIFO named x.png is refused, not read (it would block for ever)" 1 \
    "^extract: $T/img/x.png: not a regular file" "$T/o.h5" timeout 20 "$BIN/extract" --model "$T/vit" --images "$T/img/x.png" "$T/o.h5"
expect_error "images: a folder holding a FIFO named x.png" 1 \
    "^extract: $T/img/x.png: not a regular file" "$T/o.h5" timeout 20 "$BIN/extract" --model "$T/vit" --images "$T/img" "$T/o.h5"
rm -f "$T/img/x.png"
printf '# a list\n\033[31mred\001\377.png\na.png\n' >"$T/img/bin.list"
expect_error "images: a binary list is refused naming line and byte, no raw bytes echoed" 1 \
    "^extract: $T/img/bin.list: line 2: byte 0x1B at column 1 is not part of a printable UTF-8 path" "$T/o.h5" \
    "$BIN/extract" --model "$T/vit" --images "$T/img/bin.list" "$T/o.h5"
check "images: the binary list's message carries no control byte" bash -c "! LC_ALL=C grep -q \$'[\\x01-\\x1f\\x7f]' '$T/.err'"
# a 69-byte PNG and a 1.1 kB JPEG (rocket.jpg's headers, no scan data) claiming 13000 x 13000
# pixels: refused before the 0.5-0.7 GB of rows are allocated (address space capped at 300 MB)
"$PYTHON" - "$T/img" "$EMBED/images/rocket.jpg" <<'PY'
import struct, sys, zlib
out, jpg = sys.argv[1:]
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 13000, 13000, 8, 2, 0, 0, 0)) + \
      chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
open(out + "/big.png", "wb").write(png)
b = open(jpg, "rb").read()
i = 2
while b[i + 1] not in (0xC0, 0xC1, 0xC2):               # the SOF marker: height, width after precision
    i += 2 + struct.unpack(">H", b[i + 2:i + 4])[0]
sos = b.index(b"\xff\xda")
body = b[:i + 5] + struct.pack(">HH", 13000, 13000) + b[i + 9:sos]
sos_len = struct.unpack(">H", b[sos + 2:sos + 4])[0]
open(out + "/big.jpg", "wb").write(body + b[sos:sos + 2 + sos_len] + b"\x00" * 64 + b"\xff\xd9")
PY
# the address-space limit shows that nothing large is allocated; a sanitizer build cannot run under
# it (its shadow memory alone is larger), so there the refusal is checked without it
LIM=""
if bash -c 'ulimit -v 300000; "$1" --version' _ "$BIN/extract" >/dev/null 2>&1; then LIM="ulimit -v 300000;"; fi
for f in big.png big.jpg; do
    expect_error "images: $(stat -c %s "$T/img/$f")-byte $f claiming 13000x13000 pixels is refused before allocating" 1 \
        "^extract: $T/img/$f: bad (PNG|JPEG): 13000x13000 pixels need more .* data than the file's [0-9]+ bytes can hold" "$T/o.h5" \
        bash -c "$LIM exec '$BIN/extract' --threads 1 --model '$T/vit' --images '$T/img/$f' '$T/o.h5'"
done

# ---- invalid UTF-8 through the llama2.c and GGUF tokenizers: refused like the HF ones --------
M=$EMBED/models/stories260K
printf 'Once upon a time \377\376 there\n' >"$T/bad8.txt"
for tk in tok512.bin stories260K.gguf; do
    expect_error "tokenize $tk: invalid UTF-8 is refused naming line and byte" 1 \
        "^tokenize: $T/bad8.txt: line 1: invalid UTF-8 at byte 18 of the line$" - "$BIN/tokenize" -t "$M/$tk" "$T/bad8.txt"
done
expect_error "extract --text on llama2.c: invalid UTF-8 is refused naming the byte offset" 1 \
    "^extract: $T/bad8.txt: invalid UTF-8 at byte offset 17" "$T/x.h5" \
    "$BIN/extract" --model "$M/stories260K.bin" --text "$T/bad8.txt" -S 1 -T 4 "$T/x.h5"
expect_error "extract --text on GGUF: invalid UTF-8 is refused naming the byte offset" 1 \
    "^extract: $T/bad8.txt: invalid UTF-8 at byte offset 17" "$T/x.h5" \
    "$BIN/extract" --model "$M/stories260K.gguf" --text "$T/bad8.txt" -S 1 -T 4 "$T/x.h5"

# ---- analysis tables: negative distances, header-only and repeated regime rows, short frames ----
"$BIN/synth" -S 4 -L 2 -H 3 -T 16 --seed 2 "$T/s.h5" && "$BIN/distance" "$T/s.h5" "$T/d.h5" >/dev/null
cp "$T/d.h5" "$T/neg.h5"
"$PYTHON" -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r+') as f:
    d = f['distance/js_keep']; x = d[...]; x[1, 4] = x[4, 1] = -0.25; d[...] = x
" "$T/neg.h5"
check "cluster: the unmodified distance file is accepted" bash -c "'$BIN/cluster' '$T/d.h5' >/dev/null"
expect_error "cluster: a negative distance is refused naming file, dataset and entry" 1 \
    "^cluster: $T/neg.h5: distance/js_keep: entry \(4, 1\) = -0.25 is negative$" - "$BIN/cluster" "$T/neg.h5"
printf 'model\tdispersion\n' >"$T/empty.tsv"
expect_error "regime: a header-only TSV is refused" 1 "^regime: $T/empty.tsv: no model rows" - "$BIN/regime" "$T/empty.tsv"
printf 'model\tdispersion\na\t0.1\nb\t0.2\na\t0.3\n' >"$T/dup.tsv"
expect_error "regime: a repeated model row is refused naming both lines" 1 "^regime: $T/dup.tsv: line 4: model 'a' repeats line 2$" - \
    "$BIN/regime" "$T/dup.tsv"
"$BIN/synth" -S 2 -L 1 -H 2 -T 3 --seed 1 "$T/t3.h5"
expect_error "frames: T = 3 is a data problem (exit 1 naming the file), not a usage error" 1 \
    "^frames: $T/t3.h5: T = 3 tokens: no query reaches the default --min-query 4" - "$BIN/frames" "$T/t3.h5"
expect_error "frames: an explicit --min-query at or above T stays a usage error" 2 "^frames: --min-query 5 is not below T = 3" - \
    "$BIN/frames" --min-query 5 "$T/t3.h5"

# ---- the storage check counts bytes as stored: narrow integer 'valid'/'tokens' stay readable ----
"$BIN/synth" -S 2 -L 1 -H 2 -T 6 --seed 3 "$T/narrow.h5"
"$PYTHON" -c "
import h5py, numpy as np, sys
with h5py.File(sys.argv[1], 'r+') as f:
    del f['tokens']
    f.create_dataset('tokens', data=np.arange(12, dtype=np.int16).reshape(2, 6))
    f.create_dataset('valid', data=np.ones((2, 6), dtype=np.uint8))
" "$T/narrow.h5"
check "decompose: uint8 'valid' and int16 'tokens' (fewer stored bytes than int32) are accepted" \
    "$BIN/decompose" "$T/narrow.h5" "$T/narrow.dec.h5"

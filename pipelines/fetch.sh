#!/bin/bash
# make fetch: download the optional inputs that MANIFEST (pipelines/fetch.tsv) lists into DATA_DIR
# or HF_MODELS_DIR, keeping a file only when it matches its check value. Files already there and
# correct are left alone. HF_TOKEN, when set, is sent to the hub (gated repositories: Meta's Llama).
#   pipelines/fetch.sh MANIFEST DATA_DIR HF_MODELS_DIR [PREFIX...]
# PREFIX...: fetch only the rows whose DEST starts with PREFIX/ (make fetch MODELS=... passes each
# model's folder); none: every row.
#
# Check values, in this order of preference (docs/PIPELINE.md, "make fetch"):
#   SHA256    the file's SHA-256, from public sources (../shared/data/hf-weights-pins.tsv);
#   GIT_SHA1  the git blob SHA-1 of a small file (what the hub reports as its ETag);
#   neither   the value the hub declares for the pinned commit: X-Linked-Etag (the LFS object's
#             SHA-256) or, for a file kept in git, ETag (its git blob SHA-1). It is recorded in
#             ROOT/fetch.lock on the first successful download, and any later download or file on
#             disk that does not match the lock is refused.
# HF_ENDPOINT (default https://huggingface.co) replaces the hub's address, as huggingface_hub
# reads it: a mirror, or the local server of tests/t-fetch.sh.
# A download goes to ROOT/.fetch-partial/DEST and is moved into place only once checked, so DEST
# never holds a partial file. An interrupted transfer stays in .fetch-partial and the next run
# resumes it (HTTP Range); a wrong checksum or an HTTP error deletes it.
# Quiet while it works; on any failure one stderr line names every file it could not get, with the
# reason, and the exit status is 1; otherwise one summary line.
set -u
manifest=$1; data_dir=$2; hf_dir=$3; shift 3
prefixes=("$@")
[ -n "$data_dir" ] && [ -n "$hf_dir" ] || { echo "fetch: DATA_DIR and HF_MODELS_DIR must be set" >&2; exit 2; }
[ -r "$manifest" ] || { echo "fetch: $manifest: cannot read the manifest" >&2; exit 2; }
command -v curl >/dev/null || { echo "fetch: needs curl (apt-get install curl ca-certificates)" >&2; exit 1; }
HUB=https://huggingface.co
endpoint=${HF_ENDPOINT:-$HUB}; endpoint=${endpoint%/}

sha256_of() { sha256sum "$1" | cut -c1-64; }
gitsha1_of() { { printf 'blob %d\0' "$(stat -c %s "$1")"; cat "$1"; } | sha1sum | cut -c1-40; }
# set_want KIND VALUE: the one check value of the lock or the hub
set_want() { if [ "$1" = sha256 ]; then want_sha256=$2; else want_sha1=$2; fi; }
# matches FILE: every check value given holds; else $bad names the first that does not
matches() {
    bad=
    [ "$want_sha256" = - ] || [ "$(sha256_of "$1")" = "$want_sha256" ] || bad=sha256
    [ -n "$bad" ] || [ "$want_sha1" = - ] || [ "$(gitsha1_of "$1")" = "$want_sha1" ] || bad="git blob SHA-1"
    [ -z "$bad" ]
}

# lock_get ROOT DEST URL: "KIND VALUE" recorded for DEST at URL, or nothing
lock_get() { [ -f "$1/fetch.lock" ] && awk -F'\t' -v d="$2" -v u="$3" '$1 == d && $2 == u { print $3, $4; exit }' "$1/fetch.lock"; }
lock_put() {   # ROOT DEST URL KIND VALUE: replace DEST's line atomically
    local f=$1/fetch.lock
    { [ -f "$f" ] && awk -F'\t' -v d="$2" '$1 != d' "$f" ||
          printf '# make fetch: values the hub declared (DEST URL KIND VALUE); a later mismatch is refused\n'
      printf '%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$5"; } >"$f.tmp" && mv "$f.tmp" "$f"
}
# hub_declared URL: "KIND VALUE" from the response headers of the resolve URL (not followed)
hub_declared() {
    local h
    h=$(curl -sS -I --connect-timeout 20 "${auth[@]}" "$1" 2>/dev/null | tr -d '\r') || return 1
    local lfs etag
    lfs=$(sed -n 's/^[Xx]-[Ll]inked-[Ee][Tt]ag: *\(W\/\)\{0,1\}"\{0,1\}\([0-9a-f]\{64\}\)"\{0,1\}$/\2/p' <<<"$h" | head -1)
    etag=$(sed -n 's/^[Ee][Tt]ag: *\(W\/\)\{0,1\}"\{0,1\}\([0-9a-f]\{40\}\)"\{0,1\}$/\2/p' <<<"$h" | head -1)
    if [ -n "$lfs" ]; then echo "sha256 $lfs"; elif [ -n "$etag" ]; then echo "gitsha1 $etag"; else return 1; fi
}
selected() {   # DEST
    [ ${#prefixes[@]} -eq 0 ] && return 0
    local p; for p in "${prefixes[@]}"; do [[ $1 == "$p"/* ]] && return 0; done; return 1
}

failed=(); got=0; had=0; rows=0
while IFS=$'\t' read -r root dest url size want_sha256 want_sha1 rest; do
    case $root in '#'*|'') continue ;; DATA_DIR) base=$data_dir ;; HF_MODELS_DIR) base=$hf_dir ;;
        *) echo "fetch: $manifest: unknown root '$root'" >&2; exit 2 ;; esac
    [ -n "${want_sha1:-}" ] && [ -z "${rest:-}" ] || { echo "fetch: $manifest: $dest: want 6 tab-separated columns" >&2; exit 2; }
    selected "$dest" || continue
    rows=$((rows + 1))
    src=$url   # the lock names the manifest's URL, whichever server gave the file
    [[ $url == "$HUB"/* ]] && url=$endpoint${url#"$HUB"}
    auth=()
    [[ -n "${HF_TOKEN:-}" && $url == "$endpoint"/* ]] && auth=(-H "Authorization: Bearer $HF_TOKEN")
    out=$base/$dest part=$base/.fetch-partial/$dest
    # what the file must match: the manifest's values (both, when both are given), else the
    # lock's, else the hub's (then locked)
    locked=$(lock_get "$base" "$dest" "$src") tolock=
    if [ "$want_sha256" != - ] || [ "$want_sha1" != - ]; then
        if [ -n "$locked" ] && ! grep -qxE "sha256 $want_sha256|gitsha1 $want_sha1" <<<"$locked"; then
            failed+=("$dest (the manifest's check value differs from the one $base/fetch.lock recorded: refused)"); continue
        fi
    elif [ -n "$locked" ]; then read -r kind want <<<"$locked"; set_want "$kind" "$want"
    elif declared=$(hub_declared "$url"); then read -r kind want <<<"$declared"; set_want "$kind" "$want"; tolock=1
    else failed+=("$dest (the server declared no checksum: unreachable, no access, or no such file)"); continue
    fi
    if [ -f "$out" ]; then
        if matches "$out"; then
            [ -n "$tolock" ] && lock_put "$base" "$dest" "$src" "$kind" "$want"
            had=$((had + 1)); continue
        fi
        failed+=("$dest (on disk with a wrong $bad; remove it to download again)"); continue
    fi
    mkdir -p "$(dirname "$part")" || { failed+=("$dest (cannot create $(dirname "$part"))"); continue; }
    # a leftover larger than the file cannot be a prefix of it
    [ "$size" != - ] && [ -f "$part" ] && [ "$(stat -c %s "$part")" -gt "$size" ] && rm -f "$part"
    err=$(curl -fsSL --connect-timeout 20 --retry 2 -C - "${auth[@]}" -o "$part" "$url" 2>&1); rc=$?
    if [ $rc -ne 0 ]; then
        err=$(tail -1 <<<"$err" | sed 's/^curl: ([0-9]*) //')   # the last try's message
        case $rc in
            18|28|56) failed+=("$dest (transfer interrupted after $(stat -c %s "$part" 2>/dev/null || echo 0) bytes; run make fetch again to resume)") ;;
            22) rm -f "$part"; failed+=("$dest (HTTP error ${err##*error: })") ;;
            *) rm -f "$part"; failed+=("$dest ($err)") ;;
        esac
        continue
    fi
    n=$(stat -c %s "$part")
    if [ "$size" != - ] && [ "$n" != "$size" ]; then
        rm -f "$part"; failed+=("$dest (size $n instead of $size)"); continue
    fi
    if ! matches "$part"; then
        rm -f "$part"; failed+=("$dest (wrong $bad${locked:+: differs from $base/fetch.lock, refused})"); continue
    fi
    [ -n "$tolock" ] && lock_put "$base" "$dest" "$src" "$kind" "$want"
    mkdir -p "$(dirname "$out")" && mv "$part" "$out" && got=$((got + 1)) || failed+=("$dest (cannot move it into place)")
done <"$manifest"
for b in "$data_dir" "$hf_dir"; do find "$b/.fetch-partial" -depth -type d -empty -delete 2>/dev/null; done
if [ ${#prefixes[@]} -gt 0 ] && [ $rows -eq 0 ]; then
    echo "fetch: $manifest lists no file under: ${prefixes[*]}" >&2; exit 2
fi
if [ ${#failed[@]} -gt 0 ]; then
    msg=$(printf '%s; ' "${failed[@]}")
    echo "fetch: could not get ${#failed[@]} file(s): ${msg%; }" >&2
    exit 1
fi
echo "fetch: $got downloaded, $had already present (DATA_DIR=$data_dir, HF_MODELS_DIR=$hf_dir)" >&2

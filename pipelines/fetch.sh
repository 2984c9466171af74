#!/bin/bash
# make fetch: download every optional input listed in MANIFEST (pipelines/fetch.tsv) into DATA_DIR or
# HF_MODELS_DIR, keeping a file only when its SHA-256 matches; files already there and correct are
# left alone. HF_TOKEN, when set, is sent to huggingface.co (gated repositories: Meta's Llama).
# Quiet while it works; on any failure one line on stderr names every file it could not get and
# the exit status is 1; otherwise one summary line.
#   pipelines/fetch.sh MANIFEST DATA_DIR HF_MODELS_DIR
set -u
manifest=$1; data_dir=$2; hf_dir=$3
[ -n "$data_dir" ] && [ -n "$hf_dir" ] || { echo "fetch: DATA_DIR and HF_MODELS_DIR must be set" >&2; exit 2; }
command -v curl >/dev/null || { echo "fetch: needs curl (apt-get install curl ca-certificates)" >&2; exit 1; }
sha() { sha256sum "$1" | cut -c1-64; }
failed=(); got=0; had=0; part=
trap '[ -n "$part" ] && rm -f "$part"' EXIT   # no partial download left behind
while IFS=$'\t' read -r root dest url want; do
    case $root in '#'*|'') continue ;; DATA_DIR) base=$data_dir ;; HF_MODELS_DIR) base=$hf_dir ;;
        *) echo "fetch: $manifest: unknown root '$root'" >&2; exit 2 ;; esac
    out=$base/$dest
    if [ -f "$out" ] && [ "$(sha "$out")" = "$want" ]; then had=$((had + 1)); continue; fi
    mkdir -p "$(dirname "$out")" || { failed+=("$out"); continue; }
    auth=()
    [[ -n "${HF_TOKEN:-}" && $url == https://huggingface.co/* ]] && auth=(-H "Authorization: Bearer $HF_TOKEN")
    part=$out.part
    if curl -fsL --connect-timeout 20 --retry 2 "${auth[@]}" -o "$part" "$url" 2>/dev/null &&
       [ "$(sha "$part")" = "$want" ]; then
        mv "$part" "$out" && got=$((got + 1))
    else
        rm -f "$part"; failed+=("$dest")
    fi
    part=
done <"$manifest"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fetch: could not get ${#failed[@]} file(s) (no network, no access, or wrong SHA-256): ${failed[*]}" >&2
    exit 1
fi
echo "fetch: $got downloaded, $had already present (DATA_DIR=$data_dir, HF_MODELS_DIR=$hf_dir)" >&2

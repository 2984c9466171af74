#!/bin/bash
# checkpoint-attn.sh BIN CHECKPOINT_DIR OUT.h5 INPUT_ARGS...
# The attention of one training checkpoint on the pipeline's windows, shared by collapse.sh and
# frames.sh (both read WORK_DIR/step-N.h5). A file left by an earlier training of the same name is
# stale, so it is extracted again whenever the checkpoint or bin/extract is newer than it.
set -euo pipefail
bin=$1 ck=$2 h5=$3; shift 3
[ "$h5" -nt "$ck/model.safetensors" ] && [ "$h5" -nt "$bin/extract" ] && exit 0
exec "$bin/extract" --model "$ck" "$@" "$h5"

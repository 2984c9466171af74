#!/bin/bash
# The library's structure drawn from the code (tests/structure.py: includes and the symbols each
# object file uses and defines), against docs/ARCHITECTURE.md: no circle, no arrow running up or
# sideways between folders, no library unit using the program layer, the three model loaders side
# by side, no exit inside the library, no program touching HDF5 directly. Then the checker itself
# on a small made-up tree that breaks the rules, so that a rule which can no longer fail is seen.
source tests/lib.sh
BUILD=$BUILD $PYTHON tests/structure.py

root=$(cd "$(dirname "$0")/.." && pwd)
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir -p "$t/src/lib/core" "$t/src/lib/io" "$t/src/lib/model" "$t/src/cli" "$t/build"
printf '#include "b.h"\n' >"$t/src/lib/core/a.h"
printf '#include "core/a.h"\n#include "io/c.h"\n' >"$t/src/lib/core/b.h"          # a -> b -> a; core -> io
printf '#include "cli/cli.h"\n' >"$t/src/lib/io/c.h"                               # library -> cli
printf 'void f(void) { exit(1); }\n' >"$t/src/lib/io/c.c"                         # an exit, no object
printf 'void g(void);\n' >"$t/src/cli/cli.h"
for l in model_hf model_gguf llama2c; do printf '/* */\n' >"$t/src/lib/model/$l.h"; done
printf '#include "model_hf.h"\n' >"$t/src/lib/model/model_gguf.h"                 # stacked loaders
printf '#include <hdf5.h>\nint main(void) { H5open(); }\n' >"$t/src/prog.c"        # a program on HDF5
out=$(cd "$t" && BUILD=build $PYTHON "$root/tests/structure.py")
expect() {   # rule text, then ok/not ok
    local line; line=$(grep -F -- "$1" <<<"$out" | head -1)
    if [[ "$line" == "$2 - "* ]]; then echo "ok - made-up tree: $2 for '$1'"
    else echo "not ok - made-up tree: want $2 for '$1', got: ${line:-nothing}"; fi
}
expect "object file is in" "not ok"
expect "no circle among" "not ok"
expect "no arrow runs up or sideways" "not ok"
expect "no library unit uses the program layer" "not ok"
expect "stacked: model_gguf -> model_hf" "not ok"
expect "the library never exits" "not ok"
expect "no program includes hdf5.h" "not ok"

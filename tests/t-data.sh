#!/bin/bash
# The data the repository carries (pipelines/data): every file is listed in its README's SOURCES
# table with a licence, and its SHA-256 is the one given there.
source tests/lib.sh
D=$EMBED
rows=$(sed -n '/^## SOURCES/,$p' "$D/README.md" | grep -E '^\| `(models|tokenizers|images)/' | sed -n 's/^| `\([^`]*\)` |.*| `\([0-9a-f]\{64\}\)` | \([^|]*\) |$/\1 \2 \3/p')
check "README SOURCES table has rows" test -n "$rows"
while read -r f sum licence; do
    [ -z "$f" ] && continue
    if [ ! -f "$D/$f" ]; then fail "$f: listed but missing"; continue; fi
    got=$(sha256sum "$D/$f" | cut -c1-64)
    if [ "$got" = "$sum" ]; then ok "$f: sha256 as listed ($licence)"; else fail "$f: sha256 $got, README says $sum"; fi
done <<<"$rows"
unlisted=$(cd "$D" && find models tokenizers images -type f | sort | while read -r f; do
    grep -q "^$f " <<<"$rows" || echo "$f"; done)
check "every carried file is listed${unlisted:+ (not: $unlisted)}" test -z "$unlisted"
for l in $(grep -o 'LICENSES/[A-Za-z0-9.-]*\.txt' "$D/README.md" | sort -u); do
    check "licence text $l is there" test -s "$D/$l"
done

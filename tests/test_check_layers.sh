#!/bin/sh
# scripts/check_layers.sh on tiny trees: it passes a tree that keeps the
# layers and fails, naming the file and line, on each kind of break.
# usage: tests/test_check_layers.sh SOURCE_ROOT
script=$1/scripts/check_layers.sh
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# A tree: core/a.[ch], quant/q.[ch] including core, the public header.
tree() {
    rm -rf "$tmp/t"
    mkdir -p "$tmp/t/src/core" "$tmp/t/src/quant" "$tmp/t/src/tokenizer" "$tmp/t/src/template" "$tmp/t/include" "$tmp/t/cli"
    printf '#include "sprout.h"\n' >"$tmp/t/src/core/a.h"
    printf '#include "core/a.h"\n' >"$tmp/t/src/core/a.c"
    printf '#include "core/a.h"\n#include "sprout.h"\n' >"$tmp/t/src/quant/q.h"
    printf '#include "quant/q.h"\n' >"$tmp/t/src/quant/q.c"
    printf 'int x;\n' >"$tmp/t/src/tokenizer/tok_internal.h"
    printf '#include "tokenizer/tok_internal.h"\n' >"$tmp/t/src/tokenizer/tok.c"
    printf 'int y;\n' >"$tmp/t/src/template/tpl.h"
    printf '/* public */\n' >"$tmp/t/include/sprout.h"
    printf '#include "sprout.h"\n#include "quant/q.h"\n' >"$tmp/t/cli/main.c"
}

# expect STATUS PATTERN WHAT: the script's exit status and a line of its output
expect() {
    out=$(sh "$script" "$tmp/t" 2>&1)
    st=$?
    if [ "$st" -eq "$1" ] && printf '%s\n' "$out" | grep -q -- "$2"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $3 (status $st)"
        printf '%s\n' "$out"
    fi
}

tree
expect 0 'every include goes down' 'a tree that keeps the layers'

tree
printf '#include "quant/q.h"\n' >>"$tmp/t/src/core/a.c"
expect 1 '^src/core/a.c:2: folder core includes folder quant (above it)$' 'an upward include'

tree
printf '#include "template/tpl.h"\n' >>"$tmp/t/src/tokenizer/tok.c"
expect 1 '^src/tokenizer/tok.c:2: folder tokenizer includes folder template (beside it)$' 'a folder beside it'

tree
printf '#include "tokenizer/tok_internal.h"\n' >>"$tmp/t/cli/main.c"
expect 1 "^cli/main.c:3: folder cli includes another folder's internal header src/tokenizer/tok_internal.h$" 'an internal header'

tree
printf '#include "core/b.h"\n' >>"$tmp/t/src/core/a.c"
printf '#include "core/b.h"\n' >"$tmp/t/src/core/b.c"
printf 'int z;\n' >"$tmp/t/src/core/b.h"
expect 0 'every include goes down' 'two files of a folder, one way'
printf '#include "core/a.h"\n' >>"$tmp/t/src/core/b.c"
expect 1 '^src/core/[ab].c:2: files include each other in a loop: [ab] -> [ab] -> [ab]$' 'two files of a folder in a loop'

tree
mkdir -p "$tmp/t/src/newfolder"
printf '#include "core/a.h"\n' >"$tmp/t/src/newfolder/n.c"
expect 1 '^src/newfolder/n.c:1: folder newfolder is in no layer' 'a folder the order does not place'

tree
printf '#include "core/missing.h"\n' >>"$tmp/t/src/quant/q.c"
expect 1 'includes "core/missing.h", which is no file' 'an include of no file'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

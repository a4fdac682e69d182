#!/bin/sh
# libsprout.so exports exactly what include/sprout.h declares: every dynamic
# symbol it defines is a function the header declares, and every function
# the header declares that the library implements (libsprout.a defines it)
# is exported. A declared function that neither library defines fails too:
# the header promises nothing the library lacks.
#
# usage: test_exports.sh CC HEADER LIBSPROUT_SO LIBSPROUT_A
set -eu
cc=$1 header=$2 so=$3 archive=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The header through the preprocessor (no comments, no macros left), as one
# line: a function declaration is a sprout_ name followed by "(" but not by
# "(*" (a function-pointer typedef's return type; its name is followed by ")").
"$cc" -E -P -x c "$header" | tr '\n' ' ' |
    grep -oE '(^|[^A-Za-z0-9_])sprout_[a-z0-9_]+[[:space:]]*\([[:space:]]*[^*[:space:]]' |
    grep -oE 'sprout_[a-z0-9_]+' |
    sort -u >"$tmp/declared"
[ -s "$tmp/declared" ] || { echo "test_exports: no function found in $header"; exit 2; }

# The linker's own markers of a shared object's bounds are not the API.
nm -D --defined-only "$so" | awk '$3 !~ /^(_init|_fini|_edata|_end|__bss_start)$/ {print $2, $3}' | sort -k2 >"$tmp/exported"
[ -s "$tmp/exported" ] || { echo "test_exports: $so exports nothing"; exit 2; }
nm --defined-only "$archive" 2>/dev/null | awk '$2 == "T" {print $3}' | sort -u >"$tmp/implemented"

failed=0
while read -r type name; do
    if [ "$type" != T ]; then
        echo "exported, not a function: $name ($type)"; failed=$((failed + 1))
    elif ! grep -qx "$name" "$tmp/declared"; then
        echo "exported, not declared in sprout.h: $name"; failed=$((failed + 1))
    fi
done <"$tmp/exported"
awk '{print $2}' "$tmp/exported" | sort -u >"$tmp/exported_names"
for name in $(comm -23 "$tmp/declared" "$tmp/exported_names"); do
    if grep -qx "$name" "$tmp/implemented"; then
        echo "declared and implemented, not exported: $name"; failed=$((failed + 1))
    else
        echo "declared in sprout.h, implemented by neither library: $name"; failed=$((failed + 1))
    fi
done
n=$(wc -l <"$tmp/exported_names" | tr -d ' ')
if [ "$failed" -gt 0 ]; then
    echo "test_exports: $failed problem(s) among $n exported symbols"
    exit 1
fi
echo "test_exports: the $n exported symbols are exactly sprout.h's implemented functions"

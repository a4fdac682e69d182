#!/bin/sh
# Each part of the public header (include/sprout/*.h) compiles alone as
# strict C99 and as C++11, every warning an error: a caller may include one
# part without the others. And sprout.h includes every part, so that
# `#include <sprout.h>` still declares the whole API.
# usage: tests/test_headers_alone.sh CC CXX SOURCE_ROOT
cc=$1 cxx=$2 root=$3
passed=0
failed=0
for part in "$root"/include/sprout/*.h; do
    name=sprout/${part##*/}
    if "$cc" -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c "$part" &&
        "$cxx" -std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c++ "$part" &&
        grep -q "^#include \"$name\"$" "$root/include/sprout.h"; then
        passed=$((passed + 1))
    else
        echo "FAIL: $name does not compile alone, or sprout.h does not include it"
        failed=$((failed + 1))
    fi
done
[ $passed -gt 0 ] || { echo "FAIL: no part under $root/include/sprout"; exit 1; }
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]

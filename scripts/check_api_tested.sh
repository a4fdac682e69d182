#!/bin/sh
# Every function that include/sprout.h declares must be called by a C or C++
# test under tests/ (the server's JavaScript tests do not count: they drive
# the HTTP API, not the library's functions). Prints each function without a
# call and fails if there is one.
#
# usage: scripts/check_api_tested.sh [SOURCE_ROOT]
root=${1:-.}
header=$root/include/sprout.h
[ -f "$header" ] || { echo "check_api_tested: no $header" >&2; exit 2; }

# The header without comments, as one line; function-pointer typedefs
# ("ret (*name)(...)") removed; then every "sprout_name(" left is a function.
names=$(awk '
{
    line = $0; out = ""
    while (line != "") {
        if (in_comment) {
            i = index(line, "*/")
            if (!i) { line = ""; break }
            line = substr(line, i + 2); in_comment = 0; continue
        }
        i = index(line, "/*"); j = index(line, "//")
        if (j && (!i || j < i)) { out = out substr(line, 1, j - 1); break }
        if (!i) { out = out line; break }
        out = out substr(line, 1, i - 1) " "; line = substr(line, i + 2); in_comment = 1
    }
    printf "%s ", out
}' "$header" |
    sed -e 's/[A-Za-z_][A-Za-z0-9_]*[[:space:]]*([[:space:]]*\*[[:space:]]*[A-Za-z_][A-Za-z0-9_]*[[:space:]]*)//g' |
    grep -oE '(^|[^A-Za-z0-9_])sprout_[a-z0-9_]+[[:space:]]*\(' | grep -oE 'sprout_[a-z0-9_]+' | sort -u)
[ -n "$names" ] || { echo "check_api_tested: found no function in $header" >&2; exit 2; }

tests=$(ls "$root"/tests/*.c "$root"/tests/*.cpp "$root"/tests/*.h 2>/dev/null)
missing=0
for name in $names; do
    # shellcheck disable=SC2086 # one word per test file
    if ! grep -qE "(^|[^A-Za-z0-9_])$name[[:space:]]*\(" $tests; then
        echo "include/sprout.h: $name is called by no test in tests/"
        missing=$((missing + 1))
    fi
done
count=$(echo "$names" | wc -l | tr -d ' ')
if [ "$missing" -gt 0 ]; then
    echo "check_api_tested: $missing of $count public functions untested"
    exit 1
fi
echo "check_api_tested: all $count public functions are called by a test"

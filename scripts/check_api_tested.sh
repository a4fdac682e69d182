#!/bin/sh
# Every function that the public headers (include/sprout.h and its parts,
# include/sprout/*.h) declare must be called by a C or C++ test under tests/
# (the server's JavaScript tests do not count: they drive the HTTP API, not
# the library's functions). Prints each function without a call, with the
# header that declares it, and fails if there is one.
#
# usage: scripts/check_api_tested.sh [SOURCE_ROOT]
root=${1:-.}
[ -f "$root/include/sprout.h" ] || { echo "check_api_tested: no $root/include/sprout.h" >&2; exit 2; }
headers=$(cd "$root" && ls include/sprout.h include/sprout/*.h 2>/dev/null)

# C or C++ source without comments and without string and character
# literals, as one line: a name in either is not a call.
code_only() {
    awk '
    {
        line = $0; out = ""
        while (line != "") {
            if (in_comment) {
                i = index(line, "*/")
                if (!i) { line = ""; break }
                line = substr(line, i + 2); in_comment = 0; continue
            }
            c = substr(line, 1, 1); two = substr(line, 1, 2)
            if (two == "//") break
            if (two == "/*") { in_comment = 1; line = substr(line, 3); out = out " "; continue }
            if (c == "\"" || c == "\047") { # skip to the closing quote, past escapes
                k = 2
                while (k <= length(line) && substr(line, k, 1) != c) k += substr(line, k, 1) == "\\" ? 2 : 1
                line = substr(line, k + 1); out = out " "; continue
            }
            out = out c; line = substr(line, 2)
        }
        printf "%s ", out
    }' "$@"
}

# A header's code; function-pointer typedefs ("ret (*name)(...)")
# removed; then every "sprout_name(" left is a function.
functions_of() {
    code_only "$root/$1" |
        sed -e 's/[A-Za-z_][A-Za-z0-9_]*[[:space:]]*([[:space:]]*\*[[:space:]]*[A-Za-z_][A-Za-z0-9_]*[[:space:]]*)//g' |
        grep -oE '(^|[^A-Za-z0-9_])sprout_[a-z0-9_]+[[:space:]]*\(' | grep -oE 'sprout_[a-z0-9_]+' | sort -u
}
# "header name" pairs
declared=$(for header in $headers; do functions_of "$header" | sed "s|^|$header |"; done)
[ -n "$declared" ] || { echo "check_api_tested: found no function in $headers" >&2; exit 2; }

tests=$(ls "$root"/tests/*.c "$root"/tests/*.cpp "$root"/tests/*.h 2>/dev/null)
[ -n "$tests" ] || { echo "check_api_tested: no C or C++ tests in $root/tests" >&2; exit 2; }
# every name called, once (a grep of all the tests per function took 8 s):
# the leftmost, longest match is a whole identifier before its "("
# shellcheck disable=SC2086 # one word per test file
called=$(code_only $tests | grep -oE '[A-Za-z0-9_]+[[:space:]]*\(' | grep -oE '^[A-Za-z0-9_]+' | sort -u)
missing=0
while read -r header name; do
    if ! printf '%s\n' "$called" | grep -qx "$name"; then
        echo "$header: $name is called by no test in tests/"
        missing=$((missing + 1))
    fi
done <<EOF
$declared
EOF
count=$(echo "$declared" | wc -l | tr -d ' ')
if [ "$missing" -gt 0 ]; then
    echo "check_api_tested: $missing of $count public functions untested"
    exit 1
fi
echo "check_api_tested: all $count public functions are called by a test"

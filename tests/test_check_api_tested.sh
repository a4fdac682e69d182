#!/bin/sh
# scripts/check_api_tested.sh on a tiny tree: it fails naming the declared
# function that no test calls (function-pointer typedefs and comments are
# not functions, and a name in a test's comment or string is no call),
# fails with no tests at all, passes once a test calls it, and reads the
# parts under include/sprout/ too.
# usage: tests/test_check_api_tested.sh SOURCE_ROOT
script=$1/scripts/check_api_tested.sh
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include" "$tmp/tests"
cat >"$tmp/include/sprout.h" <<'H'
/* sprout_in_a_comment(void) is no function */
typedef enum sprout_status { SPROUT_OK } sprout_status;
typedef sprout_status (*sprout_callback)(void *user);
const char *sprout_name(void);
sprout_status sprout_run(int a,
                         int b); // sprout_also_a_comment(x)
H
printf 'int main(void) { return sprout_name() == 0; }\n' >"$tmp/tests/test_a.c"
failed=0
out=$(sh "$script" "$tmp" 2>&1)
if [ $? -ne 1 ] || [ "$(printf '%s\n' "$out" | grep -c 'is called by no test')" -ne 1 ] ||
    ! printf '%s\n' "$out" | grep -q '^include/sprout.h: sprout_run is called by no test in tests/$'; then
    echo "FAIL: an untested function"; printf '%s\n' "$out"; failed=1
fi
# named in a comment or a string is not called
printf '/* sprout_run(1, 2) */ const char *s = "sprout_run(1, 2) \\" sprout_run(";\n// sprout_run(3, 4)\n' >"$tmp/tests/test_c.c"
out=$(sh "$script" "$tmp" 2>&1)
if [ $? -ne 1 ] || ! printf '%s\n' "$out" | grep -q 'sprout_run is called by no test'; then
    echo "FAIL: a name in a comment or a string counted as a call"; printf '%s\n' "$out"; failed=1
fi
# no tests at all is an error, not a pass (nor a wait on standard input)
mkdir "$tmp/empty" "$tmp/empty/tests" && cp -r "$tmp/include" "$tmp/empty/"
sh "$script" "$tmp/empty" </dev/null >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: no tests"; failed=1; }
printf 'void f(void) { sprout_run (1, 2); }\n' >"$tmp/tests/test_b.c"
out=$(sh "$script" "$tmp" 2>&1) || { echo "FAIL: every function tested"; printf '%s\n' "$out"; failed=1; }
# the parts sprout.h includes count as much as sprout.h itself
mkdir "$tmp/include/sprout"
printf 'void sprout_part(void);\n' >"$tmp/include/sprout/part.h"
out=$(sh "$script" "$tmp" 2>&1)
if [ $? -ne 1 ] || ! printf '%s\n' "$out" | grep -q '^include/sprout/part.h: sprout_part is called by no test in tests/$'; then
    echo "FAIL: an untested function of a part"; printf '%s\n' "$out"; failed=1
fi
[ $failed -eq 0 ] && echo "5 passed, 0 failed" || echo "failed"
exit $failed

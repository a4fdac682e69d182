#!/bin/sh
# Installs the build into a fresh prefix, then builds examples/c/generate.c
# outside the tree against what was installed: with pkg-config (shared, and
# --static fully static) and with find_package(sprout) (sprout::sprout and
# sprout::sprout_static, and examples/c/CMakeLists.txt). Each program's greedy output must be `sprout run
# --temp 0`'s for the same prompt and length.
#
# usage: test_install.sh BUILD_DIR SOURCE_DIR SPROUT_CLI MODEL CC
set -eu
build=$1 src=$2 cli=$3 model=$4 cc=$5
work=$build/install_test
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"
failed=0
check() { # what, then the command; its stdout must equal $expected
    what=$1; shift
    if ! "$@" >"$work/out" 2>"$work/err"; then
        echo "FAIL $what: exit status $?"; cat "$work/err"; failed=$((failed + 1)); return
    fi
    if [ "$(cat "$work/out")" != "$expected" ]; then
        echo "FAIL $what: output differs from sprout run's"
        echo "  expected: $expected"; echo "  got:      $(cat "$work/out")"; failed=$((failed + 1)); return
    fi
    echo "ok $what"
}

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in include/sprout.h lib/libsprout.a lib/libsprout.so lib/libsprout.so.0 lib/libsprout.so.0.1.0 \
         lib/pkgconfig/sprout.pc lib/cmake/sprout/sproutConfig.cmake lib/cmake/sprout/sproutConfigVersion.cmake \
         lib/cmake/sprout/sproutTargets.cmake; do
    [ -e "$prefix/$f" ] || { echo "FAIL not installed: $f"; failed=$((failed + 1)); }
done
for part in "$src"/include/sprout/*.h; do # sprout.h includes every one of them
    f=include/sprout/${part##*/}
    cmp -s "$part" "$prefix/$f" || { echo "FAIL not installed: $f"; failed=$((failed + 1)); }
done
soname=$(readelf -d "$prefix/lib/libsprout.so.0.1.0" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = libsprout.so.0 ] || { echo "FAIL soname '$soname', not libsprout.so.0"; failed=$((failed + 1)); }

prompt="Once upon a time"
expected=$("$cli" run -m "$model" -p "$prompt" -n 40 --temp 0 2>/dev/null)
[ -n "$expected" ] || { echo "FAIL sprout run printed nothing"; exit 1; }

# pkg-config finds the prefix from the .pc file's own place
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046 # pkg-config's flags are words
"$cc" -o "$work/generate_pc" "$src/examples/c/generate.c" $(pkg-config --cflags --libs sprout) -Wl,-rpath,"$prefix/lib"
check "pkg-config, shared" "$work/generate_pc" "$model" "$prompt" 40
readelf -d "$work/generate_pc" | grep -q 'NEEDED.*libsprout.so.0' ||
    { echo "FAIL the pkg-config build does not load libsprout.so.0"; failed=$((failed + 1)); }
# shellcheck disable=SC2046
"$cc" -static -o "$work/generate_pc_static" "$src/examples/c/generate.c" $(pkg-config --static --cflags --libs sprout)
check "pkg-config --static" "$work/generate_pc_static" "$model" "$prompt" 40

cmake -S "$src/tests/install" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
check "find_package, sprout::sprout" "$work/cmake/generate_shared" "$model" "$prompt" 40
check "find_package, sprout::sprout_static" "$work/cmake/generate_static" "$model" "$prompt" 40
# examples/c's own CMakeLists.txt, as its comment tells users to build it
cmake -S "$src/examples/c" -B "$work/example" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    >>"$work/cmake.log" 2>&1 && cmake --build "$work/example" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
check "examples/c/CMakeLists.txt" "$work/example/generate" "$model" "$prompt" 40
readelf -d "$work/cmake/generate_static" | grep -q 'NEEDED.*libsprout' &&
    { echo "FAIL sprout::sprout_static loads libsprout.so"; failed=$((failed + 1)); }

[ "$failed" -eq 0 ] || { echo "test_install: $failed failure(s)"; exit 1; }
echo "test_install: all passed"

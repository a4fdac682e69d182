#!/bin/sh
# OpenVINO GenAI's C API as an install gives it: the build installed into a
# fresh prefix, the samples of examples/openvino_genai_c built outside the
# tree by their own CMakeLists.txt (find_package(OpenVINOGenAI),
# openvino::genai::c) and run as test_ovc_samples.sh runs them; and
# libopenvino_genai_c.so exporting exactly the C API's functions.
#
# usage: test_ovc_install.sh BUILD_DIR SOURCE_DIR SPROUT_CLI MODEL CC
set -eu
build=$1 src=$2 cli=$3 model=$4 cc=$5
work=$build/ovc_install_test
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"
failed=0

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in include/openvino/c/ov_common.h include/openvino/genai/c/llm_pipeline.h lib/libopenvino_genai_c.so \
         lib/libopenvino_genai_c.a lib/cmake/OpenVINOGenAI/OpenVINOGenAIConfig.cmake; do
    [ -e "$prefix/$f" ] || { echo "FAIL not installed: $f"; failed=$((failed + 1)); }
done

# exported: the functions the headers declare, all of them and nothing else
# (a name followed by "(*" is a callback's return type, not a function)
so=$prefix/lib/libopenvino_genai_c.so
for h in "$prefix"/include/openvino/genai/c/*.h; do echo "#include \"openvino/genai/c/${h##*/}\""; done |
    "$cc" -E -P -I"$prefix/include" -x c - | tr '\n' ' ' |
    grep -oE '(ov_genai_[a-z0-9_]+|ov_get_[a-z_]+|ov_free)[[:space:]]*\([[:space:]]*[^*[:space:]]' |
    grep -oE '^[a-z0-9_]+' | sort -u >"$work/declared"
nm -D --defined-only "$so" | awk '$3 !~ /^(_init|_fini|_edata|_end|__bss_start)$/ {print $3}' | sort -u >"$work/exported"
extra=$(comm -13 "$work/declared" "$work/exported")
missing=$(comm -23 "$work/declared" "$work/exported")
[ -z "$extra" ] || { echo "FAIL exported, not declared:" $extra; failed=$((failed + 1)); }
[ -z "$missing" ] || { echo "FAIL declared, not exported:" $missing; failed=$((failed + 1)); }
[ "$(wc -l <"$work/declared")" -gt 80 ] || { echo "FAIL only $(wc -l <"$work/declared") functions found in the headers"; failed=$((failed + 1)); }

cmake -S "$src/examples/openvino_genai_c" -B "$work/samples" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/samples" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
readelf -d "$work/samples/greedy_causal_lm_c" | grep -q 'NEEDED.*libopenvino_genai_c.so' ||
    { echo "FAIL the samples do not load libopenvino_genai_c.so"; failed=$((failed + 1)); }
sh "$src/tests/ovc/test_ovc_samples.sh" "$work/samples" "$cli" "$model" || failed=$((failed + 1))

# the static library, through openvino::genai::c_static: no shared library of sprout's loaded
cmake -S "$src/tests/ovc/install_static" -B "$work/static" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DOVC_SAMPLES_DIR="$src/examples/openvino_genai_c" -DCMAKE_BUILD_TYPE=Release >>"$work/cmake.log" 2>&1 &&
    cmake --build "$work/static" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
readelf -d "$work/static/greedy_causal_lm_c_static" | grep -qE 'NEEDED.*(libsprout|libopenvino_genai_c)' &&
    { echo "FAIL the static build loads a shared library of sprout's"; failed=$((failed + 1)); }
want=$("$cli" run -m "$model" -p "Once upon a time" -n 24 --temp 0 2>/dev/null)
got=$("$work/static/greedy_causal_lm_c_static" "$model" "Once upon a time" 24)
[ -n "$want" ] && [ "$got" = "$want" ] || { echo "FAIL static greedy: got '$got', want '$want'"; failed=$((failed + 1)); }

[ "$failed" -eq 0 ] || { echo "test_ovc_install: $failed failure(s)"; exit 1; }
echo "test_ovc_install: all passed"

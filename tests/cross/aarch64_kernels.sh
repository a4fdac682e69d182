#!/usr/bin/env bash
# Cross-builds the kernel test for 64-bit Arm (gcc-aarch64-linux-gnu, -Werror,
# the NEON file with +dotprod alone, the i8mm file with +dotprod+i8mm) and runs it
# under qemu-aarch64: once on a CPU with the dot-product and int8 matrix
# extensions (both NEON levels against the portable kernels, batch
# invariance, attention) and once on one without (the dispatcher must fall
# back to portable). Exit 77 (skipped) when the cross
# compiler or qemu is missing: scripts/deps.sh --test installs both.
set -euo pipefail
src=$1
out=$2
cc=aarch64-linux-gnu-gcc
if ! command -v "$cc" >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
  echo "SKIP: $cc or qemu-aarch64 not installed"
  exit 77
fi
mkdir -p "$out/obj"
flags=(-std=c11 -O2 -D_GNU_SOURCE -I"$src/include" -I"$src/src" -I"$src/tests" -Wall -Wextra -Wshadow -Wstrict-prototypes
       -Wmissing-prototypes -Wvla -Werror)
# one compiler per core, the longest files first (9 s one after another),
# through ccache where there is one (a rerun's unchanged files then cost nothing)
launcher=()
command -v ccache >/dev/null && launcher=(ccache)
jobs=$(nproc 2>/dev/null || echo 2)
running=() objects=()
compile() { # SOURCE [flags]: into $out/obj; a failure ends the script when it is waited for
  objects+=("$out/obj/$(basename "$1" .c).o")
  "${launcher[@]}" "$cc" "${flags[@]}" "${@:2}" -c "$1" -o "${objects[-1]}" &
  running+=($!)
  if ((${#running[@]} >= jobs)); then
    wait "${running[0]}"
    running=("${running[@]:1}")
  fi
}
compile "$src/src/kernels/matmul_neon.c" -march=armv8.2-a+dotprod
compile "$src/src/kernels/matmul_neon_i8mm.c" -march=armv8.2-a+dotprod+i8mm
for file in "$src/tests/test_kernels.c" "$src"/src/quant/*.c "$src/src/kernels/dispatch.c" "$src/src/kernels/matmul_portable.c" \
  "$src/src/kernels/attention_portable.c" "$src/src/kernels/activation_portable.c" "$src"/src/core/*.c; do
  compile "$file"
done
for pid in "${running[@]}"; do wait "$pid"; done
"$cc" -static -o "$out/test_kernels" "${objects[@]}" -lm -lpthread
echo "== aarch64 with dotprod and i8mm (qemu -cpu max)"
# the quick sizes (every path, shorter rows and contexts: 14 s where the
# full ones take 37); AARCH64_FULL=1 for the full ones
quick=1
[ "${AARCH64_FULL:-0}" = 1 ] && quick=
SPROUT_TEST_QUICK=$quick qemu-aarch64 -cpu max "$out/test_kernels" | tee "$out/max.log"
grep -q 'neon .* cases' "$out/max.log" || { echo "FAIL: the NEON kernels were not tested"; exit 1; }
grep -q 'i8mm .* cases' "$out/max.log" || { echo "FAIL: the i8mm kernels were not tested"; exit 1; }
echo "== aarch64 without dotprod (qemu -cpu cortex-a53)"
# only the portable kernels here, which the x86-64 run of test_kernels checks at full size
SPROUT_TEST_QUICK=emulated qemu-aarch64 -cpu cortex-a53 "$out/test_kernels" | tee "$out/a53.log"
grep -q 'neon .*skipped' "$out/a53.log" || { echo "FAIL: NEON kernels offered on a CPU without dotprod"; exit 1; }
grep -q 'i8mm .*skipped' "$out/a53.log" || { echo "FAIL: i8mm kernels offered on a CPU without i8mm"; exit 1; }

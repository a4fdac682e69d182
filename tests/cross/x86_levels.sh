#!/usr/bin/env bash
# The one x86-64 binary on older CPUs, emulated by qemu-x86_64 (whose TCG
# has AVX2 but not AVX-512): on a Haswell (AVX2, FMA, F16C) the dispatcher
# must pick the avx2 kernels and on a Nehalem (SSE4.2, no AVX) the portable
# ones, with no illegal instruction anywhere; there the kernel test must
# pass (and on the Nehalem the engine references, one thread with each
# cache type: emulated AVX2 is too slow for them, and the native run checks
# them at every level, threads and batches too), and a greedy generation
# must match the native run capped at the same level (the same code, so the
# same text).
# Exit 77 (skipped) without qemu-x86_64: scripts/deps.sh --test installs it
# (Debian's qemu-user).
set -euo pipefail
build=$1
model=${SPROUT_SHARED_DIR:?}/models/stories260K.gguf
if ! command -v qemu-x86_64 >/dev/null; then
  echo "SKIP: qemu-x86_64 not installed"
  exit 77
fi
if [ ! -f "$model" ]; then
  echo "SKIP: $model not found"
  exit 77
fi
sprout=$build/sprout
prompt="Once upon a time"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# One CPU model: its checks, in the order they print.
check_cpu() {
  local cpu=$1 level=$2 name=$2
  [ "$level" = generic ] && name=portable
  echo "== $cpu: expecting the $name kernels"
  # emulated AVX2 is some 70x slower than native: the kernel test walks every path on shorter rows (beside the
  # engine test where that runs)
  SPROUT_TEST_QUICK=emulated qemu-x86_64 -cpu "$cpu" "$build/tests/test_kernels" >"$logs/$cpu.kernels" 2>/dev/null & kernels=$!
  if [ "$level" = generic ]; then SPROUT_TEST_QUICK=emulated qemu-x86_64 -cpu "$cpu" "$build/tests/test_engine" 2>/dev/null | tail -n 1; fi
  wait $kernels || { cat "$logs/$cpu.kernels"; echo "FAIL: the kernel test under $cpu"; return 1; }
  # the dispatcher's choice, as the library names it (sprout bench prints the same name; running it emulated
  # as well took 3 s for nothing more)
  grep -q "(active: $name)" "$logs/$cpu.kernels" || { head -n 3 "$logs/$cpu.kernels"; echo "FAIL: $cpu did not get the $name kernels"; return 1; }
  tail -n 12 "$logs/$cpu.kernels"
  emulated=$(qemu-x86_64 -cpu "$cpu" "$sprout" run -m "$model" -p "$prompt" -n 48 --temp 0 2>/dev/null)
  if ! SPROUT_CPU=$level "$sprout" bench -m "$model" -p 8 -n 4 -r 1 2>/dev/null | grep -q "kernels $name,"; then
    echo "this host has no $name kernels: the greedy text is not compared"
    return 0
  fi
  native=$(SPROUT_CPU=$level "$sprout" run -m "$model" -p "$prompt" -n 48 --temp 0 2>/dev/null)
  if [ "$emulated" != "$native" ]; then
    printf 'FAIL: %s greedy text differs from the native %s run\n  emulated: %s\n  native:   %s\n' "$cpu" "$level" "$emulated" "$native"
    return 1
  fi
  echo "greedy text as native SPROUT_CPU=$level: $emulated"
}

# the two CPU models side by side: each emulator is one busy thread
check_cpu Haswell avx2 >"$logs/haswell" 2>&1 & haswell=$!
check_cpu Nehalem generic >"$logs/nehalem" 2>&1 & nehalem=$!
status=0
wait $haswell || status=1
cat "$logs/haswell"
wait $nehalem || status=1
cat "$logs/nehalem"
exit $status

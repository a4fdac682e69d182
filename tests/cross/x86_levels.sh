#!/usr/bin/env bash
# The one x86-64 binary on older CPUs, emulated by qemu-x86_64 (whose TCG
# has AVX2 but not AVX-512): on a Haswell (AVX2, FMA, F16C) the dispatcher
# must pick the avx2 kernels and on a Nehalem (SSE4.2, no AVX) the portable
# ones, with no illegal instruction anywhere; there the kernel test and the
# engine references must pass, and a greedy generation must match the
# native run capped at the same level (the same code, so the same text).
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
for pair in Haswell:avx2 Nehalem:generic; do
  cpu=${pair%%:*} level=${pair##*:}
  name=$level
  [ "$level" = generic ] && name=portable
  echo "== $cpu: expecting the $name kernels"
  bench=$(qemu-x86_64 -cpu "$cpu" "$sprout" bench -m "$model" -p 8 -n 4 -r 1 2>/dev/null)
  grep -q "kernels $name," <<<"$bench" || { echo "$bench"; echo "FAIL: $cpu did not get the $name kernels"; exit 1; }
  qemu-x86_64 -cpu "$cpu" "$build/tests/test_kernels" 2>/dev/null | tail -n 12
  qemu-x86_64 -cpu "$cpu" "$build/tests/test_engine" 2>/dev/null | tail -n 1
  emulated=$(qemu-x86_64 -cpu "$cpu" "$sprout" run -m "$model" -p "$prompt" -n 48 --temp 0 2>/dev/null)
  if ! SPROUT_CPU=$level "$sprout" bench -m "$model" -p 8 -n 4 -r 1 2>/dev/null | grep -q "kernels $name,"; then
    echo "this host has no $name kernels: the greedy text is not compared"
    continue
  fi
  native=$(SPROUT_CPU=$level "$sprout" run -m "$model" -p "$prompt" -n 48 --temp 0 2>/dev/null)
  if [ "$emulated" != "$native" ]; then
    printf 'FAIL: %s greedy text differs from the native %s run\n  emulated: %s\n  native:   %s\n' "$cpu" "$level" "$emulated" "$native"
    exit 1
  fi
  echo "greedy text as native SPROUT_CPU=$level: $emulated"
done

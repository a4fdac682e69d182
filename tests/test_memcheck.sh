#!/usr/bin/env bash
# The CLI's main paths under valgrind's memcheck, which sees what the
# sanitizers do not: a read of memory nobody wrote (ASan fills fresh memory
# with a pattern, so such a read passes there or fails by chance). A bench
# whose metrics struct went out with no struct_size was one: its assisted
# figures were stack garbage on one machine in ten. Valgrind hides AVX-512
# from the program, so this walks the AVX2 kernels.
# Exit 77 (skipped) without valgrind: scripts/deps.sh --test installs it.
set -euo pipefail
sprout=$1
model=${SPROUT_SHARED_DIR:?}/models/stories260K.gguf
command -v valgrind >/dev/null || { echo "SKIP: valgrind not installed"; exit 77; }
[ -f "$model" ] || { echo "SKIP: $model not found"; exit 77; }
log=$(mktemp)
trap 'rm -f "$log" "$log.origins"' EXIT
passed=0 failed=0
check() {
  local name=$1
  shift
  # without --track-origins (a quarter of the time): memcheck finds the same
  # errors, and a failure is run again with it to say where the bytes came from
  if valgrind -q --error-exitcode=99 "$sprout" "$@" >/dev/null 2>"$log"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $name (sprout $*)"
    valgrind -q --error-exitcode=99 --track-origins=yes "$sprout" "$@" >/dev/null 2>"$log.origins" && echo "(passed when run again)" ||
      mv "$log.origins" "$log"
    grep -v '^==[0-9]*== *$' "$log" | head -40
  fi
}
check "run with metrics" run -m "$model" -p "Once upon a time" -n 12 --temp 0 --metrics
check "run, sampled, as JSON" run -m "$model" -p "Once upon a time" -n 12 --temp 0.8 --seed 7 --json
check "bench with a draft model" bench -m "$model" -p 8 -n 8 -r 1 -t 1 --json -md "$model"
check "bench with prompt lookup and streams" bench -m "$model" -p 0 -n 8 -r 1 --lookup 3 -np 2 --json
check "tokenize" tokenize -m "$model" -p "Once upon a time, there was a cat."
check "info" info "$model"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

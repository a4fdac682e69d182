#!/usr/bin/env bash
# bench/compare.sh end to end on a toy model (qwen2-tiny: Qwen2's real
# vocabulary on a one-layer body): with a stand-in llama-bench that answers
# llama-bench's JSON at fixed speeds, each row's ratios must be sprout's own
# round figures over those speeds, and the chart must hold a bar per test;
# without LLAMA_BENCH only sprout runs and llama.cpp's columns are "-".
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
check() { # check DESCRIPTION COMMAND...
  if "${@:2}"; then passed=$((passed + 1)); else echo "check failed: $1"; failed=$((failed + 1)); fi
}

# llama-bench -o json prints one object per test, prefill (n_gen 0) then decode
cat > "$tmp/llama-bench" <<'EOF'
#!/bin/sh
cat <<'JSON'
[
  {
    "model_filename": "m.gguf",
    "n_prompt": 16,
    "n_gen": 0,
    "avg_ts": 200.000000,
    "stddev_ts": 1.000000
  },
  {
    "model_filename": "m.gguf",
    "n_prompt": 0,
    "n_gen": 4,
    "avg_ts": 8.000000,
    "stddev_ts": 0.500000
  }
]
JSON
EOF
chmod +x "$tmp/llama-bench"

run_compare() { # run_compare OUT_DIR [LLAMA_BENCH]
  env TMPDIR="$tmp" BUILD="$build" PRESET=qwen2-tiny MODELS="F16 Q8_0" THREADS=1 PP=16 TG=4 REPS=2 \
    ${2:+LLAMA_BENCH=$2} sh "$src/bench/compare.sh" "$1" > "$1.stdout" 2> "$1.stderr"
}

# the mean of sprout's rounds (field 1: prefill, 2: decode) for a type, to
# two decimals as compare.sh takes it
sprout_mean() {
  awk -v t="$2" -v f="$3" '$1 == t && $4 == "sprout" { split($5, v, ":"); s += v[f]; n++ } END { if (n) printf "%.2f", s / n }' "$1/rounds.txt"
}

# --- with the stand-in llama-bench ---
check "compare.sh runs with LLAMA_BENCH" run_compare "$tmp/with" "$tmp/llama-bench"
for type in F16 Q8_0; do
  row=$(grep "^| $type |" "$tmp/with/compare.md" || true)
  check "$type has a row" test -n "$row"
  pp=$(sprout_mean "$tmp/with" "$type" 1) tg=$(sprout_mean "$tmp/with" "$type" 2)
  want=$(awk -v p="$pp" -v g="$tg" 'BEGIN { printf "%.2fx %.2fx", p / 200, g / 8 }')
  got=$(echo "$row" | awk -F'|' '{ gsub(/ /, ""); print $5 " " $8 }')
  check "$type ratios are sprout's means over 200 and 8 t/s (want $want, got $got)" test "$want" = "$got"
  llama=$(echo "$row" | awk -F'|' '{ gsub(/ /, ""); print $4 " " $7 }')
  check "$type shows llama.cpp's speeds (got $llama)" test "$llama" = "200.0 8.0"
  rounds=$(grep -c "^$type round" "$tmp/with/rounds.txt")
  check "$type ran two rounds each ($rounds lines)" test "$rounds" = 4
done
check "the chart is an SVG" grep -q '^<svg' "$tmp/with/compare.svg"
# 4 legend swatches and 4 bars per model
bars=$(grep -c '<rect' "$tmp/with/compare.svg")
check "the chart has 12 bars and swatches (got $bars)" test "$bars" = 12

# --- without it ---
check "compare.sh runs without LLAMA_BENCH" run_compare "$tmp/without"
row=$(grep "^| Q8_0 |" "$tmp/without/compare.md" || true)
dashes=$(echo "$row" | awk -F'|' '{ gsub(/ /, ""); print $4 $5 $7 $8 }')
check "without llama.cpp its columns are dashes (got $dashes)" test "$dashes" = "----"
sprout_pp=$(echo "$row" | awk -F'|' '{ gsub(/ /, ""); print $3 }')
check "sprout's prefill is a positive speed ($sprout_pp)" awk -v v="$sprout_pp" 'BEGIN { exit !(v + 0 > 0) }'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

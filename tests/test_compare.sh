#!/usr/bin/env bash
# bench/compare.sh end to end on a toy model (qwen2-tiny: Qwen2's real
# vocabulary on a one-layer body): with a stand-in llama-bench that answers
# llama-bench's JSON at fixed speeds per depth, each row (a model at a
# depth) must hold sprout's own round figures over those speeds, sprout's
# roofline and attention share, llama.cpp's decode on the same roofline,
# and the chart must hold a bar per test; without LLAMA_BENCH only sprout
# runs and llama.cpp's columns are "-".
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
check() { # check DESCRIPTION COMMAND...
  if "${@:2}"; then passed=$((passed + 1)); else echo "check failed: $1"; failed=$((failed + 1)); fi
}

# llama-bench -o json prints one object per test, prefill (n_gen 0) then
# decode; with -d, those of each depth, n_depth saying which (here 0 and 8:
# 200 and 8 t/s at depth 0, 100 and 4 at depth 8). Its arguments are kept.
cat > "$tmp/llama-bench" <<'EOF'
#!/bin/sh
echo "$*" >> "$(dirname "$0")/llama-bench.args"
case " $* " in
*" -d "*)
  printf '[{"n_prompt": 16, "n_gen": 0, "n_depth": 0, "avg_ts": 200.0}, {"n_prompt": 0, "n_gen": 4, "n_depth": 0, "avg_ts": 8.0},\n'
  printf ' {"n_prompt": 16, "n_gen": 0, "n_depth": 8, "avg_ts": 100.0}, {"n_prompt": 0, "n_gen": 4, "n_depth": 8, "avg_ts": 4.0}]\n' ;;
*)
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
  ;;
esac
EOF
chmod +x "$tmp/llama-bench"

# a head size of 16 rules out the quantized KV types: f32 stands in for a non-default type
run_compare() { # run_compare OUT_DIR MODELS ROUNDS [LLAMA_BENCH [DEPTHS]]
  env TMPDIR="$tmp" BUILD="$build" PRESET=qwen2-tiny MODELS="$2" THREADS=1 PP=16 TG=4 REPS="$3" ROOFLINE_MIB=8 KV=f32 \
    ${4:+LLAMA_BENCH=$4} ${5:+DEPTHS=$5} sh "$src/bench/compare.sh" "$1" > "$1.stdout" 2> "$1.stderr"
}

# the mean of sprout's rounds (field 1: prefill, 2: decode) for a type at
# a depth, to six decimals as compare.sh takes it
sprout_mean() {
  awk -v t="$2" -v d="d$3" -v f="$4" '$1 == t && $2 == d && $5 == "sprout" { split($6, v, ":"); s += v[f]; n++ }
    END { if (n) printf "%.6f", s / n }' "$1/rounds.txt"
}
cell() { echo "$1" | awk -F'|' -v f="$2" '{ gsub(/ /, "", $f); print $f }'; }

# --- with the stand-in llama-bench, at depths 0 and 8 ---
check "compare.sh runs with LLAMA_BENCH" run_compare "$tmp/with" "F16 Q8_0" 2 "$tmp/llama-bench" 0,8
check "llama-bench was asked for both depths and the KV type" grep -q -- "-d 0,8 -ctk f32 -ctv f32" "$tmp/llama-bench.args"
for type in F16 Q8_0; do
  for depth in 0 8; do
    row=$(grep "^| $type | f32 | $depth |" "$tmp/with/compare.md" || true)
    check "$type at depth $depth has a row" test -n "$row"
    lp=$([ "$depth" = 0 ] && echo 200 || echo 100) lt=$([ "$depth" = 0 ] && echo 8 || echo 4)
    pp=$(sprout_mean "$tmp/with" "$type" "$depth" 1) tg=$(sprout_mean "$tmp/with" "$type" "$depth" 2)
    want=$(awk -v p="$pp" -v g="$tg" -v lp="$lp" -v lt="$lt" 'BEGIN { printf "%.2fx %.2fx", p / lp, g / lt }')
    got="$(cell "$row" 7) $(cell "$row" 10)"
    check "$type d$depth ratios are sprout's means over $lp and $lt t/s (want $want, got $got)" test "$want" = "$got"
    llama="$(cell "$row" 6) $(cell "$row" 9)"
    check "$type d$depth shows llama.cpp's speeds (got $llama)" test "$llama" = "$lp.0 $lt.0"
    # sprout's roofline and llama.cpp's (the same bytes and bandwidth: in
    # proportion to their speeds, within the cells' rounding) and attention's
    # share (a one-layer model's, near 0); llama.cpp's stand-in speeds are so
    # far below a toy model's that its roofline may round to 0.0%
    roof="$(cell "$row" 11) $(cell "$row" 12) $(cell "$row" 13)"
    check "$type d$depth has roofline and attention figures (got $roof)" \
      awk -v r="$roof" -v st="$tg" -v lt="$lt" 'BEGIN { split(r, v, " "); s = v[1] + 0; l = v[2] + 0; a = v[3] + 0
        exit !(v[1] ~ /%$/ && v[2] ~ /%$/ && v[3] ~ /%$/ && s > 0 && l >= 0 && a >= 0 && a < 100 && (l - s * lt / st) ^ 2 <= (0.06 + 0.05 * l) ^ 2) }'
  done
  rounds=$(grep -c "^$type d8 round" "$tmp/with/rounds.txt")
  check "$type ran two rounds each at depth 8 ($rounds lines)" test "$rounds" = 4
done
check "the chart is an SVG" grep -q '^<svg' "$tmp/with/compare.svg"
# 4 legend swatches and 4 bars per model and depth
bars=$(grep -c '<rect' "$tmp/with/compare.svg")
check "the chart has 20 bars and swatches (got $bars)" test "$bars" = 20
check "the chart names the depth" grep -q '>Q8_0@d8<' "$tmp/with/compare.svg"

# --- without it, at depth 0 ---
check "compare.sh runs without LLAMA_BENCH" run_compare "$tmp/without" Q8_0 1
row=$(grep "^| Q8_0 | f32 | 0 |" "$tmp/without/compare.md" || true)
dashes="$(cell "$row" 6)$(cell "$row" 7)$(cell "$row" 9)$(cell "$row" 10)$(cell "$row" 12)"
check "without llama.cpp its columns are dashes (got $dashes)" test "$dashes" = "-----"
sprout_pp=$(cell "$row" 5)
check "sprout's prefill is a positive speed ($sprout_pp)" awk -v v="$sprout_pp" 'BEGIN { exit !(v + 0 > 0) }'

# --- depth 0 alone: llama-bench is not given -d, and its older output (no n_depth) is read ---
rm -f "$tmp/llama-bench.args"
check "compare.sh runs at depth 0 with LLAMA_BENCH" run_compare "$tmp/old" Q8_0 1 "$tmp/llama-bench"
check "llama-bench was not given -d" test -z "$(grep -e ' -d ' "$tmp/llama-bench.args" || true)"
row=$(grep "^| Q8_0 | f32 | 0 |" "$tmp/old/compare.md" || true)
check "depth 0 takes the objects without n_depth (got $(cell "$row" 6) $(cell "$row" 9))" test "$(cell "$row" 6) $(cell "$row" 9)" = "200.0 8.0"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

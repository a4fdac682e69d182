#!/bin/sh
# The GenAI C samples (examples/openvino_genai_c) run on a model: greedy
# output equals `sprout run --temp 0`'s, the chat's streamer stops each
# answer after 3 chunks, and the benchmark prints every metric.
# usage: test_ovc_samples.sh SAMPLES_BIN_DIR SPROUT_CLI MODEL
set -u
bin=$1 cli=$2 model=$3
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

prompt="Once upon a time"
want=$("$cli" run -m "$model" -p "$prompt" -n 32 --temp 0 2>/dev/null) || fail "sprout run"
got=$("$bin/greedy_causal_lm_c" "$model" "$prompt" 32) || fail "greedy_causal_lm_c exited $?"
[ -n "$want" ] && [ "$got" = "$want" ] || fail "greedy: got '$got', want '$want'"

out=$(printf 'Hello\n\nTell me a story\n' | "$bin/chat_sample_c" "$model" 3 32) || fail "chat_sample_c exited $?"
stopped=$(printf '%s\n' "$out" | grep -c '^\[stopped after 3 chunks\]$')
[ "$stopped" = 2 ] || fail "chat: $stopped of 2 answers stopped after 3 chunks: $out"

out=$("$bin/benchmark_genai_c" -m "$model" -N 1 -n 2 -M 8) || fail "benchmark_genai_c exited $?"
for line in "Load time" "Generate time" "Inference time" "Tokenization time" "Detokenization time" "Chat template time" \
            "TTFT" "TPOT" "IPOT" "Throughput"; do
    printf '%s\n' "$out" | grep -q "^$line: [0-9.]*" || fail "benchmark: no '$line' in: $out"
done
printf '%s\n' "$out" | grep -q '^Generated tokens: 16$' || fail "benchmark: not 2 x 8 tokens: $out"
"$bin/greedy_causal_lm_c" "$model.missing" "$prompt" 2>/dev/null && fail "a missing model did not fail"

echo "$failed failed"
[ "$failed" = 0 ]

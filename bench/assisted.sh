#!/bin/sh
# Assisted decoding against plain decoding on one prompt: the same text
# (checked), decode tokens/s of each, their ratio, and the acceptance.
# The two take turns REPS times, so a host whose speed drifts slows both.
#
# usage: bench/assisted.sh MODEL PROMPT_FILE N ASSIST_FLAGS...
#   PROMPT_FILE: text, or token ids (space-separated) when it ends in .ids
#   e.g. bench/assisted.sh stories260K.gguf bench/prompts/story-retell.ids 48 --lookup 8
#        bench/assisted.sh target.gguf bench/prompts/edit.txt 64 -md draft.gguf --draft-max 6
#   BUILD=build THREADS=2 REPS=5
# Needs jq. Greedy decoding (--temp 0); the figures are medians.
set -eu
[ $# -ge 4 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
model=$1 prompt=$2 n=$3
shift 3
build=${BUILD:-build} threads=${THREADS:-2} reps=${REPS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # OUT FLAGS...
    out=$1
    shift
    case $prompt in
    *.ids) "$build/sprout" run -m "$model" --prompt-ids "$(cat "$prompt")" -n "$n" --temp 0 -t "$threads" --json "$@" >"$out" ;;
    *) "$build/sprout" run -m "$model" -f "$prompt" -n "$n" --temp 0 -t "$threads" --json "$@" >"$out" ;;
    esac
}
i=0
while [ $i -lt "$reps" ]; do
    if [ $((i % 2)) -eq 0 ]; then run "$tmp/plain.$i" && run "$tmp/assisted.$i" "$@"
    else run "$tmp/assisted.$i" "$@" && run "$tmp/plain.$i"; fi
    if [ "$(jq -c .tokens "$tmp/plain.$i")" != "$(jq -c .tokens "$tmp/assisted.$i")" ]; then
        echo "assisted output differs from plain (round $i)" >&2
        exit 1
    fi
    i=$((i + 1))
done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
plain=$(cat "$tmp"/plain.* | jq '.metrics.decode_tokens_per_s' | median)
assisted=$(cat "$tmp"/assisted.* | jq '.metrics.decode_tokens_per_s' | median)
jq -r --arg p "$plain" --arg a "$assisted" --arg flags "$*" '
  .metrics as $m
  | "flags      \($flags)\ntokens     \($m.n_generated_tokens) (identical to plain)\nplain      \($p | tonumber | . * 10 | round / 10) t/s\nassisted   \($a | tonumber | . * 10 | round / 10) t/s\nspeedup    \(($a | tonumber) / ($p | tonumber) | . * 100 | round / 100)x\naccepted   \($m.n_accepted_tokens) of \($m.n_draft_tokens) proposals, \(($m.n_generated_tokens - 1) / ([$m.n_decode_passes, 1] | max) | . * 100 | round / 100) tokens a pass"' \
  "$tmp/assisted.0"

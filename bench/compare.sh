#!/bin/sh
# sprout against llama.cpp on the same files: prefill (pp) and decode (tg)
# tokens/s, peak RSS of the benchmark run and time to ready (process start
# to the first generated token of a short prompt, page cache warm, best of
# three), side by side, as a markdown table of ratios and an SVG chart.
# The two take turns: REPS rounds of one repetition each (each run loads the
# model and warms up first), who goes first alternating, and the means of
# the rounds are compared, so that a host whose speed drifts by tens of
# percent within minutes (a shared VM) slows both alike. Each round's
# figures are kept in OUT_DIR/rounds.txt.
#
# usage: bench/compare.sh [OUT_DIR]
#   BUILD=build            sprout's build folder (sprout, make_model)
#   MODELS="Q4_0 Q4_K_M Q8_0 F16"   types of the TinyLlama-1.1B-shaped model
#   PRESET=tinyllama-1.1b  make_model preset
#   THREADS=2 PP=512 TG=128 REPS=3 (rounds)
#   LLAMA_BENCH=/path/to/llama-bench   optional: without it only sprout runs
#   LLAMA_SIMPLE=/path/to/llama-simple for llama.cpp's time to ready
#                          (default: llama-simple beside LLAMA_BENCH, if there)
# Peak RSS needs /usr/bin/time (Debian's package "time"); "-" without it.
# Models are written once under $TMPDIR (make_model, then sprout quantize).
set -eu
out=${1:-bench-results}
build=${BUILD:-build}
tmp=${TMPDIR:-/tmp}
preset=${PRESET:-tinyllama-1.1b}
threads=${THREADS:-2}
pp=${PP:-512}
tg=${TG:-128}
reps=${REPS:-3}
mkdir -p "$out"
base="$tmp/sprout-$preset-F16.gguf"
[ -f "$base" ] || "$build/make_model" "$preset" F16 "$base"

# the number after "key": in a flat JSON object (one occurrence)
json_num() { tr -d '\n ' | sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p"; }

# the mean of rounds ("pp:tg" words): field 1 (pp) or 2 (tg); "-" when any is missing
mean_of() {
    printf '%s\n' $1 | awk -F: -v f="$2" 'NF { n++; if ($f == "-" || $f == "") bad = 1; else s += $f }
        END { if (!n || bad) print "-"; else printf "%.2f\n", s / n }'
}

llama_simple=${LLAMA_SIMPLE:-}
if [ -z "$llama_simple" ] && [ -n "${LLAMA_BENCH:-}" ] && [ -x "$(dirname "$LLAMA_BENCH")/llama-simple" ]; then
    llama_simple="$(dirname "$LLAMA_BENCH")/llama-simple"
fi
prompt="Once upon a time"

# seconds from the start of a command to its first generated token (the
# first byte on its standard output, by first_output), the best of three;
# without first_output, to its exit
best_of_three() {
    best=
    for _ in 1 2 3; do
        if [ -x "$build/first_output" ]; then
            t=$("$build/first_output" "$@" 2> /dev/null | awk '{ print $1 }')
            [ -n "$t" ] || { echo -; return; }
        else
            t0=$(date +%s.%N)
            "$@" > /dev/null 2>&1 || { echo -; return; }
            t=$(echo "$(date +%s.%N) $t0" | awk '{ printf "%.3f", $1 - $2 }')
        fi
        best=$(echo "$t ${best:-$t}" | awk '{ print ($1 < $2 ? $1 : $2) }')
    done
    echo "$best"
}

table="$out/compare.md"
rows="$out/rows.txt"
# every round's figures (type, round, who, pp:tg), for the spread behind the means
round_log="$out/rounds.txt"
: > "$rows"
: > "$round_log"
{
    echo "| model | sprout pp$pp | llama.cpp pp$pp | ratio | sprout tg$tg | llama.cpp tg$tg | ratio | sprout peak RSS MiB | llama.cpp peak RSS MiB | ratio | sprout ready s | llama.cpp ready s | ratio |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} > "$table"
for type in ${MODELS:-Q4_0 Q4_K_M Q8_0 F16}; do
    model="$tmp/sprout-$preset-$type.gguf"
    [ -f "$model" ] || "$build/sprout" quantize "$base" "$model" "$type" > /dev/null
    s_rounds=
    l_rounds=
    rss=0
    l_rss=-
    round=1
    while [ "$round" -le "$reps" ]; do
        for who in $([ $((round % 2)) -eq 1 ] && echo "sprout llama" || echo "llama sprout"); do
            if [ "$who" = sprout ]; then
                s=$("$build/sprout" bench -m "$model" -p "$pp" -n "$tg" -t "$threads" -r 1 --json)
                s_rounds="$s_rounds $(printf '%s' "$s" | sed 's/.*"prefill":{\([^}]*\)}.*/\1/' | json_num tokens_per_s)"
                s_rounds="$s_rounds:$(printf '%s' "$s" | sed 's/.*"decode":{\([^}]*\)}.*/\1/' | json_num tokens_per_s)"
                echo "$type round $round sprout ${s_rounds##* }" >> "$round_log"
                rss=$(printf '%s' "$s" | json_num peak_rss_bytes | awk -v m="$rss" '{ print ($1 > m ? $1 : m) }')
            elif [ -n "${LLAMA_BENCH:-}" ]; then
                rss_file=$(mktemp)
                if [ -x /usr/bin/time ]; then
                    l=$(/usr/bin/time -f %M -o "$rss_file" "$LLAMA_BENCH" -m "$model" -p "$pp" -n "$tg" -t "$threads" -r 1 -o json 2> /dev/null || true)
                    l_rss=$(tail -n 1 "$rss_file" | awk -v m="$l_rss" '$1 ~ /^[0-9]+$/ { print (m == "-" || $1 > m ? $1 : m); next } { print m }')
                else
                    l=$("$LLAMA_BENCH" -m "$model" -p "$pp" -n "$tg" -t "$threads" -r 1 -o json 2> /dev/null || true)
                fi
                rm -f "$rss_file"
                # llama-bench prints one object per test: prefill first (n_gen 0), then decode
                one_pp=$(printf '%s' "$l" | tr -d '\n ' | sed 's/},{/}\n{/g' | grep '"n_gen":0' | json_num avg_ts || true)
                one_tg=$(printf '%s' "$l" | tr -d '\n ' | sed 's/},{/}\n{/g' | grep '"n_prompt":0' | json_num avg_ts || true)
                l_rounds="$l_rounds ${one_pp:--}:${one_tg:--}"
                echo "$type round $round llama.cpp ${one_pp:--}:${one_tg:--}" >> "$round_log"
            fi
        done
        round=$((round + 1))
    done
    s_pp=$(mean_of "$s_rounds" 1)
    s_tg=$(mean_of "$s_rounds" 2)
    l_pp=-
    l_tg=-
    if [ -n "${LLAMA_BENCH:-}" ]; then
        l_pp=$(mean_of "$l_rounds" 1)
        l_tg=$(mean_of "$l_rounds" 2)
    fi
    s_ready=$(best_of_three "$build/sprout" run -m "$model" -p "$prompt" -n 1 -t "$threads")
    l_ready=-
    [ -z "$llama_simple" ] || l_ready=$(best_of_three "$llama_simple" -m "$model" -n 1 "$prompt")
    awk -v t="$type" -v sp="$s_pp" -v lp="$l_pp" -v st="$s_tg" -v lt="$l_tg" -v rss="$rss" -v lrss="$l_rss" -v sr="$s_ready" \
        -v lr="$l_ready" 'BEGIN {
        rp = lp == "-" ? "-" : sprintf("%.2fx", sp / lp); rt = lt == "-" ? "-" : sprintf("%.2fx", st / lt);
        lps = lp == "-" ? "-" : sprintf("%.1f", lp); lts = lt == "-" ? "-" : sprintf("%.1f", lt);
        lrs = lrss == "-" ? "-" : sprintf("%.0f", lrss / 1024); rr = lrss == "-" ? "-" : sprintf("%.2fx", rss / 1024 / lrss);
        rdr = (lr == "-" || sr == "-") ? "-" : sprintf("%.2fx", sr / lr);
        printf "| %s | %.1f | %s | %s | %.1f | %s | %s | %.0f | %s | %s | %s | %s | %s |\n", t, sp, lps, rp, st, lts, rt, rss / 1048576,
               lrs, rr, sr, lr, rdr }' >> "$table"
    echo "$type $s_pp $l_pp $s_tg $l_tg" >> "$rows"
done

# bars: tokens/s of each test, sprout and llama.cpp side by side
awk -v pp="$pp" -v tg="$tg" '
{ n++; name[n] = $1; v[n, 1] = $2; v[n, 2] = ($3 == "-" ? 0 : $3); v[n, 3] = $4; v[n, 4] = ($5 == "-" ? 0 : $5)
  for (k = 1; k <= 4; k++) if (v[n, k] > max) max = v[n, k] }
END {
  w = 140 * n + 80; if (w < 500) w = 500; h = 300; scale = max > 0 ? 220 / max : 0
  printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n", w, h
  split("#2e7d32 #9e9e9e #1565c0 #bdbdbd", color, " ")
  split("sprout pp" pp " ,llama.cpp pp" pp " ,sprout tg" tg " ,llama.cpp tg" tg, label, ",")
  for (k = 1; k <= 4; k++) printf "<rect x=\"%d\" y=\"8\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"17\">%s</text>\n", 10 + (k - 1) * 120, color[k], 24 + (k - 1) * 120, label[k]
  for (i = 1; i <= n; i++) {
    x0 = 40 + (i - 1) * 140
    for (k = 1; k <= 4; k++) {
      bh = v[i, k] * scale; x = x0 + (k - 1) * 28
      printf "<rect x=\"%d\" y=\"%.1f\" width=\"24\" height=\"%.1f\" fill=\"%s\"/>\n", x, 260 - bh, bh, color[k]
      if (v[i, k] > 0) printf "<text x=\"%d\" y=\"%.1f\" font-size=\"9\">%.0f</text>\n", x, 256 - bh, v[i, k]
    }
    printf "<text x=\"%d\" y=\"280\">%s</text>\n", x0 + 30, name[i]
  }
  print "</svg>" }' "$rows" > "$out/compare.svg"
rm -f "$rows"
cat "$table"
echo "chart: $out/compare.svg" >&2

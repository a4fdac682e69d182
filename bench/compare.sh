#!/bin/sh
# sprout against llama.cpp on the same files: prefill (pp) and decode (tg)
# tokens/s at each depth (tokens already in the KV cache, llama-bench's -d),
# decode's memory roofline (the weight bytes a token reads times tokens/s,
# over the read bandwidth sprout bench --roofline measures with the same
# threads; llama.cpp's decode on the same figures), attention's share of a
# sprout decode step, peak RSS of the benchmark run and time to ready
# (process start to the first generated token of a short prompt, page cache
# warm, best of three), side by side, as a markdown table of ratios and an
# SVG chart. The two take turns: REPS rounds of one repetition each (each
# run loads the model and warms up first), who goes first alternating, and
# the means of the rounds are compared, so that a host whose speed drifts by
# tens of percent within minutes (a shared VM) slows both alike. Each
# round's figures are kept in OUT_DIR/rounds.txt.
#
# usage: bench/compare.sh [OUT_DIR]
#   BUILD=build            sprout's build folder (sprout, make_model)
#   MODELS="Q4_0 Q4_K_M Q8_0 F16"   types of the TinyLlama-1.1B-shaped model
#   PRESET=tinyllama-1.1b  make_model preset
#   THREADS=2 PP=512 TG=128 REPS=3 (rounds)
#   DEPTHS=0               depths, comma-separated ("0,4096"): a row each
#   KV=f16                 KV cache type of both (-ctk and -ctv)
#   ROOFLINE_MIB=          the read test's buffer (default: sprout's, 4x the LLC, at least 1 GiB)
#   LLAMA_BENCH=/path/to/llama-bench   optional: without it only sprout runs
#   LLAMA_SIMPLE=/path/to/llama-simple for llama.cpp's time to ready
#                          (default: llama-simple beside LLAMA_BENCH, if there)
# Peak RSS needs /usr/bin/time (Debian's package "time"); "-" without it.
# Models are written once under $TMPDIR (make_model, then sprout quantize),
# and dropped from the page cache before their rounds.
set -eu
out=${1:-bench-results}
build=${BUILD:-build}
tmp=${TMPDIR:-/tmp}
preset=${PRESET:-tinyllama-1.1b}
threads=${THREADS:-2}
pp=${PP:-512}
tg=${TG:-128}
reps=${REPS:-3}
depths=${DEPTHS:-0}
kv=${KV:-f16}
roofline="--roofline"
[ -z "${ROOFLINE_MIB:-}" ] || roofline="--roofline-mib $ROOFLINE_MIB"
# llama-bench's -d only where a depth is asked for: older builds lack it
depth_flag=
[ "$depths" = 0 ] || depth_flag="-d $depths"
mkdir -p "$out"
base="$tmp/sprout-$preset-F16.gguf"

# the number after "key": in a flat JSON object (one occurrence)
json_num() { tr -d '\n ' | sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p"; }

# the objects of a JSON array of flat objects, one a line
json_objects() { tr -d '\n ' | sed 's/},{/}\n{/g'; }

# the mean over rounds of field f of the "a:b:..." words of rounds.txt's
# lines "TYPE dDEPTH round N WHO WORD"; "-" when any is missing
mean_of() { # mean_of TYPE DEPTH WHO FIELD
    awk -v t="$1" -v d="d$2" -v w="$3" -v f="$4" '$1 == t && $2 == d && $5 == w { n++; split($6, v, ":");
            if (v[f] == "-" || v[f] == "") bad = 1; else s += v[f] }
        END { if (!n || bad) print "-"; else printf "%.6f\n", s / n }' "$round_log"
}

# sprout's roofline of a row: the bytes a token reads (each round's roofline
# times that round's bandwidth over its speed, the same in every round) times
# the mean speed over the mean bandwidth: the ratio of means llama.cpp's column
# takes, so one round's slow read test cannot swing one column and not the other
roofline_of() { # roofline_of TYPE DEPTH MEAN_TG MEAN_GB
    awk -v t="$1" -v d="d$2" -v st="$3" -v gb="$4" '$1 == t && $2 == d && $5 == "sprout" { n++; split($6, v, ":");
            if (v[3] == "-" || v[5] == "-" || v[2] + 0 <= 0) bad = 1; else b += v[3] * v[5] / v[2] }
        END { if (!n || bad || gb == "-" || gb + 0 <= 0) print "-"; else printf "%.6f\n", b / n * st / gb }' "$round_log"
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
# every round's figures (type, depth, round, who, pp:tg[:roofline:attention:GB/s]), for the spread behind the means
round_log="$out/rounds.txt"
: > "$rows"
: > "$round_log"
{
    echo "| model | KV | depth | sprout pp$pp | llama.cpp pp$pp | ratio | sprout tg$tg | llama.cpp tg$tg | ratio | sprout roofline | llama.cpp roofline | sprout attention | sprout peak RSS MiB | llama.cpp peak RSS MiB | ratio | sprout ready s | llama.cpp ready s | ratio |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} > "$table"
for type in ${MODELS:-Q4_0 Q4_K_M Q8_0 F16}; do
    model="$tmp/sprout-$preset-$type.gguf"
    # the F16 model is written only when a type is missing (OLMoE's is 14 GB)
    [ -f "$model" ] || [ -f "$base" ] || "$build/make_model" "$preset" F16 "$base"
    [ -f "$model" ] || "$build/sprout" quantize "$base" "$model" "$type" > /dev/null
    # the file's cached pages dropped, as after a reboot: the first run reads
    # it from disk, in the 2 MiB folios the kernel reads ahead where the
    # file system allows, not the small ones a fresh write leaves (sprout
    # bench's huge-page share; docs/CLI.md, bench). The same pages for both.
    dd if="$model" iflag=nocache count=0 status=none 2>/dev/null || true
    rss=0
    l_rss=-
    weight_bytes=0
    round=1
    while [ "$round" -le "$reps" ]; do
        for who in $([ $((round % 2)) -eq 1 ] && echo "sprout llama" || echo "llama sprout"); do
            if [ "$who" = sprout ]; then
                # shellcheck disable=SC2086 # $roofline is one or two words
                s=$("$build/sprout" bench -m "$model" -p "$pp" -n "$tg" -d "$depths" --kv-type "$kv" -t "$threads" -r 1 $roofline --json)
                gb=$(printf '%s' "$s" | sed 's/.*"read_bandwidth":{\([^}]*\)}.*/\1/' | json_num gb_per_s)
                weight_bytes=$(printf '%s' "$s" | json_num weight_bytes_per_token)
                for depth in $(echo "$depths" | tr ',' ' '); do
                    entry=$(printf '%s' "$s" | sed 's/.*"by_depth":\[\([^]]*\)\].*/\1/' | json_objects | grep "\"depth\":${depth}[,}]" || true)
                    word=$(printf '%s' "$entry" | json_num pp_tokens_per_s):$(printf '%s' "$entry" | json_num tg_tokens_per_s)
                    word=$word:$(printf '%s' "$entry" | json_num roofline):$(printf '%s' "$entry" | json_num attention_share):${gb:--}
                    echo "$type d$depth round $round sprout $word" >> "$round_log"
                done
                rss=$(printf '%s' "$s" | json_num peak_rss_bytes | awk -v m="$rss" '{ print ($1 > m ? $1 : m) }')
            elif [ -n "${LLAMA_BENCH:-}" ]; then
                rss_file=$(mktemp)
                # shellcheck disable=SC2086 # $depth_flag is none or two words
                set -- "$LLAMA_BENCH" -m "$model" -p "$pp" -n "$tg" $depth_flag -ctk "$kv" -ctv "$kv" -t "$threads" -r 1 -o json
                if [ -x /usr/bin/time ]; then
                    l=$(/usr/bin/time -f %M -o "$rss_file" "$@" 2> /dev/null || true)
                    l_rss=$(tail -n 1 "$rss_file" | awk -v m="$l_rss" '$1 ~ /^[0-9]+$/ { print (m == "-" || $1 > m ? $1 : m); next } { print m }')
                else
                    l=$("$@" 2> /dev/null || true)
                fi
                rm -f "$rss_file"
                # llama-bench prints one object per test: prefill (n_gen 0) and decode
                # (n_prompt 0) at each depth (n_depth; builds without -d have no such field)
                for depth in $(echo "$depths" | tr ',' ' '); do
                    tests=$(printf '%s' "$l" | json_objects | awk -v d="$depth" 'index($0, "\"n_depth\":" d ",") || index($0, "\"n_depth\":" d "}") ||
                        (d == 0 && !index($0, "\"n_depth\""))')
                    one_pp=$(printf '%s\n' "$tests" | grep '"n_gen":0' | json_num avg_ts || true)
                    one_tg=$(printf '%s\n' "$tests" | grep '"n_prompt":0' | json_num avg_ts || true)
                    echo "$type d$depth round $round llama.cpp ${one_pp:--}:${one_tg:--}" >> "$round_log"
                done
            fi
        done
        round=$((round + 1))
    done
    s_ready=$(best_of_three "$build/sprout" run -m "$model" -p "$prompt" -n 1 -t "$threads")
    l_ready=-
    [ -z "$llama_simple" ] || l_ready=$(best_of_three "$llama_simple" -m "$model" -n 1 "$prompt")
    for depth in $(echo "$depths" | tr ',' ' '); do
        s_pp=$(mean_of "$type" "$depth" sprout 1)
        s_tg=$(mean_of "$type" "$depth" sprout 2)
        s_att=$(mean_of "$type" "$depth" sprout 4)
        gb=$(mean_of "$type" "$depth" sprout 5)
        s_roof=$(roofline_of "$type" "$depth" "$s_tg" "$gb")
        l_pp=-
        l_tg=-
        if [ -n "${LLAMA_BENCH:-}" ]; then
            l_pp=$(mean_of "$type" "$depth" llama.cpp 1)
            l_tg=$(mean_of "$type" "$depth" llama.cpp 2)
        fi
        awk -v t="$type" -v kv="$kv" -v d="$depth" -v sp="$s_pp" -v lp="$l_pp" -v st="$s_tg" -v lt="$l_tg" -v sroof="$s_roof" \
            -v att="$s_att" -v gb="$gb" -v wb="$weight_bytes" -v rss="$rss" -v lrss="$l_rss" -v sr="$s_ready" -v lr="$l_ready" 'BEGIN {
            # a test one side skipped (PP=0, TG=0) or lacks: "-", not a zero
            rp = (lp == "-" || sp == "-") ? "-" : sprintf("%.2fx", sp / lp); rt = (lt == "-" || st == "-") ? "-" : sprintf("%.2fx", st / lt);
            sps = sp == "-" ? "-" : sprintf("%.1f", sp); sts = st == "-" ? "-" : sprintf("%.1f", st);
            lps = lp == "-" ? "-" : sprintf("%.1f", lp); lts = lt == "-" ? "-" : sprintf("%.1f", lt);
            sro = sroof == "-" ? "-" : sprintf("%.1f%%", 100 * sroof);
            lro = (lt == "-" || gb == "-" || gb <= 0) ? "-" : sprintf("%.1f%%", 100 * wb * lt / (gb * 1e9));
            at = att == "-" ? "-" : sprintf("%.1f%%", 100 * att);
            lrs = lrss == "-" ? "-" : sprintf("%.0f", lrss / 1024); rr = lrss == "-" ? "-" : sprintf("%.2fx", rss / 1024 / lrss);
            rdr = (lr == "-" || sr == "-") ? "-" : sprintf("%.2fx", sr / lr);
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %s | %s | %s | %s | %s |\n", t, kv, d, sps, lps, rp,
                   sts, lts, rt, sro, lro, at, rss / 1048576, lrs, rr, sr, lr, rdr }' >> "$table"
        name=$type
        [ "$depths" = 0 ] || name="$type@d$depth"
        echo "$name $s_pp $l_pp $s_tg $l_tg" >> "$rows"
    done
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

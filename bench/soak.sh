#!/usr/bin/env bash
# The server under a long mixed load (issue 39's soak): `sprout serve
# --parallel 4` on a TinyLlama-shaped model, CONNECTIONS clients for
# DURATION seconds mixing plain and streamed generations (OpenAI and
# Ollama), streams dropped mid-way, abandoned requests, oversized and
# malformed bodies and bad routes (bench/soak.mjs checks every answer).
# The server's RSS is sampled every SAMPLE seconds; its slope after the
# warm-up (the first WARMUP seconds) must stay under MAX_SLOPE_KIB_MIN.
#
# usage: bench/soak.sh [BUILD_DIR]      (default build)
#   DURATION=600 CONNECTIONS=32 PARALLEL=4 MODEL=FILE.gguf (default: BUILD_DIR/soak-tinyllama.gguf,
#   made once by make_model tinyllama-1.1b Q4_0) CTX=256 THREADS=(all) WARMUP=(DURATION/5)
#   SAMPLE=2 MAX_SLOPE_KIB_MIN=1024 MAX_BODY=65536
# Prints the figures (requests, errors, RSS, slope) and exits 1 when any
# request got an unexpected answer, /metrics disagrees with the client's
# counts, or the RSS grows faster than allowed.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
DURATION=${DURATION:-600}
CONNECTIONS=${CONNECTIONS:-32}
PARALLEL=${PARALLEL:-4}
CTX=${CTX:-256}
SAMPLE=${SAMPLE:-2}
WARMUP=${WARMUP:-$((DURATION / 5))}
MAX_SLOPE_KIB_MIN=${MAX_SLOPE_KIB_MIN:-1024}
MAX_BODY=${MAX_BODY:-65536}
sprout=$build/sprout
if [ -z "${MODEL:-}" ]; then
  MODEL=$build/soak-tinyllama.gguf
  [ -f "$MODEL" ] || "$build/make_model" tinyllama-1.1b Q4_0 "$MODEL" >/dev/null
fi
command -v node >/dev/null || { echo "soak: node is needed (scripts/deps.sh --test)"; exit 77; }

work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
threads=()
[ -n "${THREADS:-}" ] && threads=(-t "$THREADS")
"$sprout" serve -m "$MODEL" --port 0 -c "$CTX" --parallel "$PARALLEL" --max-body "$MAX_BODY" "${threads[@]}" 2>"$work/log" &
pid=$!
port=
for _ in $(seq 1200); do
  port=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9]*\).*/\1/p' "$work/log")
  grep -q 'ready' "$work/log" && [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
grep -q 'ready' "$work/log" || { echo "soak: the server did not start"; cat "$work/log"; exit 1; }

# RSS in KiB every SAMPLE seconds, "seconds kib" per line
(
  start=$(date +%s.%N)
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null) || break
    echo "$(echo "$(date +%s.%N) - $start" | bc) $rss"
    sleep "$SAMPLE"
  done
) >"$work/rss" &
sampler=$!

status=0
node "$here/soak.mjs" "http://127.0.0.1:$port" "$DURATION" "$CONNECTIONS" "$MAX_BODY" >"$work/client.json" || status=1
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
kill -TERM "$pid"
wait "$pid" || { echo "soak: the server exited with $?"; status=1; }
pid=

cat "$work/client.json"
# least squares over the samples after the warm-up: KiB per minute
read -r n first last peak slope < <(awk -v w="$WARMUP" '
  { if (NR == 1) first = $2; last = $2; if ($2 > peak) peak = $2 }
  $1 >= w { n++; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2 }
  END { s = (n > 1 && n * sxx - sx * sx > 0) ? (n * sxy - sx * sy) / (n * sxx - sx * sx) * 60 : 0; printf "%d %d %d %d %.1f\n", n, first, last, peak, s }' "$work/rss")
echo "rss: $first KiB at start, $peak KiB peak, $last KiB at the end; slope after ${WARMUP} s: $slope KiB/min over $n samples"
if awk -v s="$slope" -v m="$MAX_SLOPE_KIB_MIN" 'BEGIN { exit !(s > m) }'; then
  echo "soak: RSS grows $slope KiB/min after the warm-up (limit $MAX_SLOPE_KIB_MIN)"
  status=1
fi
# libmicrohttpd says so when a client it was writing to has gone: expected with the dropped streams
gone_re='no longer available for sending\|forcibly closed by remote peer'
gone=$(grep -c "$gone_re" "$work/log" || true)
other=$(grep 'warning\|ERROR' "$work/log" | grep -vc "$gone_re" || true)
echo "server log: $gone warnings of clients gone mid-response, $other other warnings or errors"
[ "$other" = 0 ] || { grep 'warning\|ERROR' "$work/log" | grep -v "$gone_re" | head; status=1; }
[ $status = 0 ] && echo "soak: ok" || echo "soak: FAILED"
exit $status

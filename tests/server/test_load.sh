#!/usr/bin/env bash
# A load run: wrk keeps 16 connections busy for LOAD_SECONDS (30 by default) with completion
# requests against `sprout serve` (stories260K, 4 slots); there must be no
# errors and no 503s, and the server's RSS must not grow after a warm-up.
# Prints the figures (requests/s, latency, RSS) for the notes.
set -uo pipefail
sprout=$1
model=${SPROUT_SHARED_DIR:-../shared}/models/stories260K.gguf
seconds=${LOAD_SECONDS:-30}
if ! command -v wrk >/dev/null; then echo "SKIP: wrk not installed (scripts/deps.sh --test installs it)"; exit 77; fi
work=$(mktemp -d)
serve_pid=
trap 'kill $serve_pid 2>/dev/null; rm -rf "$work"' EXIT
. "$(dirname "$0")/../serve_start.sh"
serve_start "$work/log" -m "$model" -c 256 --parallel 4 || exit 1
port=$serve_port pid=$serve_pid
cat >"$work/post.lua" <<'LUA'
local prompts = {"Once upon a time", "The little dog", "Mom said", "The sun was", "Bob and Sue"}
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"prompt":"%s","max_tokens":16,"temperature":0.7,"seed":%d}', prompts[n % #prompts + 1], n)
  return wrk.format("POST", "/v1/completions", {["Content-Type"] = "application/json"}, body)
end
LUA
# CTest runs other tests beside this one on 2 cores: a slow answer is not an
# error, so wrk waits up to 30 s before it counts a timeout
rss() { awk '/VmRSS/ {print $2 * 1024}' "/proc/$pid/status"; }
wrk -t 2 -c 16 -d 5s --timeout 30s --latency -s "$work/post.lua" "http://127.0.0.1:$port" >"$work/warm" 2>&1
rss_warm=$(rss)
wrk -t 2 -c 16 -d "${seconds}s" --timeout 30s --latency -s "$work/post.lua" "http://127.0.0.1:$port" >"$work/run" 2>&1
rss_end=$(rss)
cat "$work/run"
fail=0
if grep -q 'Non-2xx or 3xx' "$work/run" "$work/warm"; then echo "FAIL: error responses"; fail=1; fi
if grep -q 'Socket errors' "$work/run"; then echo "FAIL: socket errors"; fail=1; fi
requests=$(awk '/requests in/ {print $1}' "$work/run")
[ "${requests:-0}" -gt 0 ] || { echo "FAIL: no requests completed"; fail=1; }
echo "RSS after warm-up: $rss_warm bytes; after ${seconds}s under load: $rss_end bytes"
# allocator and thread-stack noise is under a megabyte; a leak of 100 bytes
# per request over the ~37 000 requests of a quiet run passes 3 MiB
if [ "$rss_end" -gt $((rss_warm + rss_warm / 20 + 2 * 1048576)) ]; then echo "FAIL: RSS grew"; fail=1; fi
kill -TERM $pid
wait $pid
status=$?
[ $status -eq 0 ] || { echo "FAIL: exit status $status after SIGTERM"; fail=1; }
grep -q 'AddressSanitizer\|runtime error' "$work/log" && { cat "$work/log"; fail=1; }
[ $fail -eq 0 ] && echo "load run passed"
exit $fail

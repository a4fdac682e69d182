#!/usr/bin/env bash
# Peak RSS of `sprout run` on a 113 MiB model (random weights, real shapes)
# must stay within the file size + KV cache + 64 MiB: the weights are used
# from the mapping, never copied.
set -euo pipefail
make_model=$1 sprout=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -x /usr/bin/time ]; then
  echo "/usr/bin/time is missing (Debian package 'time'; make test installs it)"
  echo "0 passed, 1 failed"
  exit 1
fi
"$make_model" small-100m Q8_0 "$tmp/m.gguf"
file_bytes=$(stat -c %s "$tmp/m.gguf")
n_ctx=512
# 4 layers x (K + V) x 256 values (4 KV heads of 64) x 2 bytes (f16) per cell
kv_bytes=$((n_ctx * 4 * 2 * 256 * 2))
/usr/bin/time -v "$sprout" run -m "$tmp/m.gguf" -p "hello there" -n 32 -c $n_ctx --temp 0 >/dev/null 2>"$tmp/time.txt"
rss_kib=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$tmp/time.txt")
limit_kib=$(((file_bytes + kv_bytes) / 1024 + 64 * 1024))
echo "file $((file_bytes / 1024)) KiB, KV $((kv_bytes / 1024)) KiB: peak RSS ${rss_kib} KiB, limit ${limit_kib} KiB"
if [ "$rss_kib" -le "$limit_kib" ]; then
  echo "1 passed, 0 failed"
else
  echo "0 passed, 1 failed"
  exit 1
fi

#!/bin/sh
# Quantizes one model to every type sprout quantize offers, checks that each
# output loads and generates, and prints a table: type, seconds, size.
#
# usage: bench/quantize_all.sh [MODEL.gguf] [BUILD_DIR]
#   MODEL defaults to a TinyLlama-1.1B-shaped F16 file written by make_model
#   (under $TMPDIR, reused when present).
set -eu
build=${2:-build}
tmp=${TMPDIR:-/tmp}
model=${1:-$tmp/sprout-tinyllama-1.1b-F16.gguf}
if [ ! -f "$model" ]; then
    echo "writing $model" >&2
    "$build/make_model" tinyllama-1.1b F16 "$model"
fi
out="$tmp/sprout-quantize-all.gguf"
printf '%-8s %9s %11s %8s  %s\n' TYPE seconds MiB bpw generates
params=$("$build/sprout" info "$model" --json | sed -n 's/.*"parameters": *\([0-9]*\).*/\1/p')
for t in F32 F16 BF16 Q8_0 Q6_K Q5_K_M Q5_K_S Q5_1 Q5_0 Q4_K_M Q4_K_S Q4_1 Q4_0 Q3_K_L Q3_K_M Q3_K_S Q2_K; do
    start=$(date +%s.%N)
    "$build/sprout" quantize "$model" "$out" "$t" > /dev/null 2>&1
    end=$(date +%s.%N)
    bytes=$(stat -c %s "$out")
    if "$build/sprout" run -m "$out" -p "Once upon a time" -n 4 --temp 0 > /dev/null 2>&1; then ok=yes; else ok=NO; fi
    awk -v t="$t" -v s="$start" -v e="$end" -v b="$bytes" -v p="${params:-0}" -v ok="$ok" \
        'BEGIN { printf "%-8s %9.1f %11.1f %8.2f  %s\n", t, e - s, b / 1048576, p ? b * 8 / p : 0, ok }'
    rm -f "$out"
done

#!/bin/sh
# The table of a fuzz run (`make test-fuzz`, `make fuzz-long`): for each
# libFuzzer target in BUILD's last CTest log, its executions, rate, the
# coverage it reached (edges `cov`, features `ft`), its corpus, peak RSS
# and whether it passed. Markdown, for docs/HARDENING.md and the notes.
#
#   scripts/fuzz_report.sh [BUILD]      (default build-fuzz-long)
#   scripts/fuzz_report.sh LOG...       libFuzzer's own output, a target a
#                                       file named TARGET.log, or CTest logs
set -eu
if [ $# -eq 0 ] || [ -d "$1" ]; then
    build=${1:-build-fuzz-long}
    set -- "$build/Testing/Temporary/LastTest.log"
    if [ ! -f "$1" ]; then
        echo "fuzz_report: no CTest log in $build (was the fuzz run skipped?)" >&2
        exit 0
    fi
fi
awk '
function flush() {
    if (name != "" && (execs != "" || result == "Failed"))
        printf "| %s | %s | %s | %s / %s | %s | %s MB | %s |\n", name, (execs == "" ? "?" : execs), rate, cov, ft, corp, rss, result
    name = ""; execs = ""; rate = "?"; cov = "?"; ft = "?"; corp = "?"; rss = "?"; result = "?"
}
BEGIN {
    print "| Target | Executions | exec/s | Edges / features | Corpus (inputs/size) | Peak RSS | Result |"
    print "|---|---|---|---|---|---|---|"
}
FNR == 1 { flush(); if (FILENAME ~ /\.log$/ && FILENAME !~ /LastTest/) { name = FILENAME; sub(/.*\//, "", name); sub(/\.log$/, "", name) } }
/^[0-9]+\/[0-9]+ Test: / { flush(); name = $3 }
/DONE +cov:|pulse +cov:|NEW +cov:|REDUCE +cov:|INITED +cov:/ {
    for (i = 1; i <= NF; i++) {
        if ($i == "cov:") cov = $(i + 1)
        if ($i == "ft:") ft = $(i + 1)
        if ($i == "corp:") corp = $(i + 1)
    }
}
/^stat::number_of_executed_units:/ { execs = $2 }
/^stat::average_exec_per_sec:/ { rate = $2 }
/^stat::peak_rss_mb:/ { rss = $2 }
/^Test (Passed|Failed)/ { result = $2; sub(/\.$/, "", result) }
/deadly signal|ERROR: AddressSanitizer|runtime error:|ERROR: libFuzzer/ { result = "Failed" }
/DONE +cov:/ && result != "Failed" { result = "Passed" }
END { flush() }
' "$@"

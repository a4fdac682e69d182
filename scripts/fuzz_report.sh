#!/bin/sh
# The table of a fuzz run (`make test-fuzz`, `make fuzz-long`): for each
# libFuzzer target in BUILD's last CTest log, its executions, rate, the
# coverage it reached (edges `cov`, features `ft`), its corpus, peak RSS
# and whether it passed. Markdown, for docs/HARDENING.md and the notes.
#
#   scripts/fuzz_report.sh [BUILD]      (default build-fuzz-long)
set -eu
build=${1:-build-fuzz-long}
log=$build/Testing/Temporary/LastTest.log
if [ ! -f "$log" ]; then
    echo "fuzz_report: no CTest log in $build (was the fuzz run skipped?)" >&2
    exit 0
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
END { flush() }
' "$log"

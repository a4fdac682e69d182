#!/bin/sh
# The source coverage a fuzz campaign's corpora reach (`make fuzz-coverage`):
# the fuzz targets built again with clang's source coverage (COV_BUILD),
# each target's corpus and seeds (the folders its CTest command in
# FUZZ_BUILD names) run once through it, and llvm-cov's count of the lines,
# functions and regions of the parser that target is for. Markdown, for
# docs/HARDENING.md and the notes.
#
#   scripts/fuzz_coverage.sh [FUZZ_BUILD] [COV_BUILD] [SHARED]
#                            (defaults build-fuzz-long, build-fuzz-cov, ../shared)
set -eu
fuzz_build=${1:-build-fuzz-long}
cov=${2:-build-fuzz-cov}
shared=${3:-../shared}
tests=$fuzz_build/fuzz/CTestTestfile.cmake
[ -f "$tests" ] || { echo "fuzz_coverage: no fuzz campaign in $fuzz_build (make fuzz-long first)" >&2; exit 1; }
mkdir -p "$cov"
cov=$(cd "$cov" && pwd)
shared=$(cd "$shared" && pwd)
command -v clang >/dev/null 2>&1 || { echo "fuzz_coverage: clang not found" >&2; exit 1; }
profdata=$(command -v llvm-profdata || command -v llvm-profdata-14)
llvmcov=$(command -v llvm-cov || command -v llvm-cov-14)

CC=clang cmake -S . -B "$cov" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPROUT_FUZZ=ON -DSPROUT_SHARED_DIR="$shared" \
    -DCMAKE_C_FLAGS="-fprofile-instr-generate -fcoverage-mapping" >/dev/null
cmake --build "$cov" -j"$(nproc)" --target fuzz_all >/dev/null

# The parser each target is for: the sources its coverage is counted over.
sources() {
    case $1 in
    fuzz_gguf) echo src/gguf/gguf.c src/gguf/gguf_reader.c ;;
    fuzz_tokenizer) ls src/tokenizer/*.c ;;
    fuzz_template) ls src/template/*.c | grep -v '/go_' ;;
    fuzz_gotemplate) ls src/template/go_*.c ;;
    fuzz_request) echo src/server/api_request.c ;;
    fuzz_tool_calls) echo src/server/tool_calls.c ;;
    fuzz_lora) echo src/model/lora.c ;;
    fuzz_modelfile) echo src/pipeline/modelfile.c ;;
    fuzz_manifest) echo src/store/manifest.c src/store/params.c ;;
    fuzz_grammar) echo src/grammar/gbnf.c src/grammar/grammar.c src/grammar/grammar_set.c src/grammar/grammar_mask.c ;;
    fuzz_json_schema) ls src/grammar/json_schema*.c ;;
    fuzz_imatrix) echo src/quantize/imatrix.c ;;
    esac
}

echo "| Target | Inputs replayed | Lines | Functions | Regions | Sources |"
echo "|---|---|---|---|---|---|"
grep -o '^add_test(\[=\[fuzz_[a-z_]*\]=\].*' "$tests" | while read -r line; do
    name=$(echo "$line" | sed 's/^add_test(\[=\[\(fuzz_[a-z_]*\)\]=\].*/\1/')
    src=$(sources "$name" | tr '\n' ' ' | sed 's/ $//')
    [ -n "$src" ] || continue
    # the folders among the command's arguments: its corpus, then its seeds
    dirs=$(echo "$line" | grep -o '"/[^"]*"' | tr -d '"' | while read -r a; do [ -d "$a" ] && echo "$a"; done)
    [ -n "$dirs" ] || continue
    inputs=$(find $dirs -type f | wc -l)
    rm -f "$cov/$name.profraw"
    # shellcheck disable=SC2086 # the folders are separate arguments
    (cd "$fuzz_build" && SPROUT_SHARED_DIR=$shared LLVM_PROFILE_FILE="$cov/$name.profraw" \
        "$cov/fuzz/$name" -runs=0 -timeout=120 -rss_limit_mb=4096 $dirs >/dev/null 2>&1) || true
    [ -f "$cov/$name.profraw" ] || continue
    "$profdata" merge -sparse "$cov/$name.profraw" -o "$cov/$name.profdata"
    files=$(echo "$src" | wc -w)
    # shellcheck disable=SC2086
    "$llvmcov" report "$cov/fuzz/$name" -instr-profile="$cov/$name.profdata" $src | awk -v n="$name" -v inputs="$inputs" -v src="$src" -v files="$files" '
        /^TOTAL/ { printf "| %s | %s | %s of %s (%s) | %s of %s (%s) | %s of %s (%s) | %s |\n",
                   n, inputs, $8 - $9, $8, $10, $5 - $6, $5, $7, $2 - $3, $2, $4, (files > 3 ? files " files in " dirname(src) : src) }
        function dirname(p) { sub(/ .*/, "", p); sub(/\/[^\/]*$/, "", p); return p }'
done

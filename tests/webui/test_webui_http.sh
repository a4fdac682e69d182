#!/usr/bin/env bash
# The web page's files as `sprout serve` sends them, checked with curl:
# gzip for clients that take it (the same bytes as webui/ once unzipped),
# content types, ETag and 304, the CSP, "sprout is running" for clients
# that do not ask for HTML, --no-webui, and --webui-path refusing paths
# out of its folder (.., symbolic links, non-files).
set -uo pipefail
sprout=$1
webui=$2
model=${SPROUT_SHARED_DIR:-../shared}/models/stories260K.gguf
command -v curl >/dev/null || { echo "SKIP: curl not installed (scripts/deps.sh --test installs it)"; exit 77; }
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
fail=0
expect() { # what, then a command that must succeed
  local what=$1
  shift
  if "$@"; then :; else echo "FAIL: $what"; fail=1; fi
}

. "$(dirname "$0")/../serve_start.sh"
# starts a server with the given options; sets $url
start() {
  serve_start "$work/log" -m "$model" --parallel 1 "$@" || exit 1
  pids+=("$serve_pid")
  url=$serve_url
}
header() { grep -i "^$1:" "$2" | head -1 | cut -d' ' -f2- | tr -d '\r'; }
html=(-H 'Accept: text/html,application/xhtml+xml')

start
# a browser that takes gzip
curl -s "${html[@]}" -H 'Accept-Encoding: gzip, deflate, br' -D "$work/h1" -o "$work/index.gz" "$url/"
expect "the page is gzipped" [ "$(header Content-Encoding "$work/h1")" = gzip ]
expect "the page varies by Accept-Encoding" [ "$(header Vary "$work/h1")" = Accept-Encoding ]
expect "the page is HTML" [ "$(header Content-Type "$work/h1")" = "text/html; charset=utf-8" ]
expect "the page is revalidated" [ "$(header Cache-Control "$work/h1")" = no-cache ]
expect "the page has a CSP" grep -qi "^Content-Security-Policy: default-src 'self'; connect-src 'self'" "$work/h1"
expect "the page unzips to webui/index.html" cmp -s <(gzip -dc "$work/index.gz") "$webui/index.html"
etag=$(header ETag "$work/h1")
code=$(curl -s "${html[@]}" -H 'Accept-Encoding: gzip' -H "If-None-Match: $etag" -o "$work/body304" -w '%{http_code}' "$url/")
expect "304 on the ETag" [ "$code" = 304 ] && expect "304 has no body" [ ! -s "$work/body304" ]
code=$(curl -s "${html[@]}" -H 'Accept-Encoding: gzip' -H 'If-None-Match: "other"' -o /dev/null -w '%{http_code}' "$url/")
expect "200 on another ETag" [ "$code" = 200 ]
# a client without gzip gets the bytes as written, under another tag
curl -s "${html[@]}" -H 'Accept-Encoding: gzip;q=0, identity' -D "$work/h2" -o "$work/index" "$url/"
expect "no gzip when q=0" [ -z "$(header Content-Encoding "$work/h2")" ]
expect "the raw page is webui/index.html" cmp -s "$work/index" "$webui/index.html"
expect "each encoding has its ETag" [ "$(header ETag "$work/h2")" != "$etag" ]
curl -s -D "$work/h3" -o "$work/app.js" "$url/webui/app.js"
expect "scripts are JavaScript" [ "$(header Content-Type "$work/h3")" = "text/javascript; charset=utf-8" ]
expect "app.js as written" cmp -s "$work/app.js" "$webui/app.js"
expect "a missing file is 404" [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/webui/missing.js")" = 404 ]
expect "no way out of /webui/" [ "$(curl -s --path-as-is -o /dev/null -w '%{http_code}' "$url/webui/../../etc/passwd")" = 404 ]
expect "Ollama's clients still hear it run" [ "$(curl -s "$url/")" = "sprout is running" ]
kill "${pids[-1]}"

start --no-webui
expect "--no-webui: no page" [ "$(curl -s "${html[@]}" -o /dev/null -w '%{http_code}' "$url/")" = 404 ]
expect "--no-webui: no files" [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/webui/app.js")" = 404 ]
expect "--no-webui: the root still answers" [ "$(curl -s "$url/")" = "sprout is running" ]
kill "${pids[-1]}"

mkdir -p "$work/dev/sub"
echo '<!doctype html><title>dev</title>' >"$work/dev/index.html"
echo 'secret' >"$work/secret.txt"
echo 'inside' >"$work/dev/inside.txt"
ln -s "$work/secret.txt" "$work/dev/out.txt"
ln -s "$work/dev/inside.txt" "$work/dev/link.txt"
mkfifo "$work/dev/pipe.txt"
start --webui-path "$work/dev"
expect "--webui-path serves its index" [ "$(curl -s "${html[@]}" "$url/")" = '<!doctype html><title>dev</title>' ]
expect "--webui-path serves its files" [ "$(curl -s "$url/webui/inside.txt")" = inside ]
expect "--webui-path follows links inside" [ "$(curl -s "$url/webui/link.txt")" = inside ]
expect "--webui-path refuses links out" [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/webui/out.txt")" = 404 ]
expect "--webui-path refuses escaped slashes" [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/webui/..%2Fsecret.txt")" = 404 ]
expect "--webui-path refuses FIFOs" [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$url/webui/pipe.txt")" = 404 ]
expect "--webui-path refuses folders" [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/webui/sub")" = 404 ]
expect "--webui-path refuses .." [ "$(curl -s --path-as-is -o /dev/null -w '%{http_code}' "$url/webui/..")" = 404 ]
etag=$(curl -s -D - -o /dev/null "$url/webui/inside.txt" | grep -i '^etag:' | cut -d' ' -f2 | tr -d '\r')
expect "--webui-path files have an ETag" [ -n "$etag" ]
expect "--webui-path answers 304" [ "$(curl -s -H "If-None-Match: $etag" -o /dev/null -w '%{http_code}' "$url/webui/inside.txt")" = 304 ]
kill "${pids[-1]}"
"$sprout" serve -m "$model" --port 0 --webui-path "$work/nowhere" 2>"$work/log"
expect "--webui-path must be a folder (exit 2)" [ $? = 2 ]

[ "$fail" = 0 ] && echo "PASS"
exit "$fail"

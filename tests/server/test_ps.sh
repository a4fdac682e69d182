#!/usr/bin/env bash
# `sprout ps` and `sprout stop` against `sprout serve -m` (the model kept
# loaded), the server found through $SPROUT_HOST: ps lists the model
# "Forever", stop of another name exits 1 naming the model there is, and
# with no server both say they cannot connect.
set -uo pipefail
sprout=$1
model=${SPROUT_SHARED_DIR:-../shared}/models/stories260K.gguf
work=$(mktemp -d)
serve_pid=
trap 'kill $serve_pid 2>/dev/null; rm -rf "$work"' EXIT
. "$(dirname "$0")/../serve_start.sh"
serve_start "$work/log" -m "$model" -c 256 --parallel 1 || exit 1
port=$serve_port pid=$serve_pid
fail=0
out=$(SPROUT_HOST=127.0.0.1:$port "$sprout" ps) || { echo "FAIL: ps exited $?"; fail=1; }
echo "$out"
echo "$out" | grep -q '^NAME *ID *SIZE' || { echo "FAIL: ps has no header"; fail=1; }
echo "$out" | grep -q '^stories260K:latest .*256 *Forever' || { echo "FAIL: ps does not list the model kept loaded"; fail=1; }
err=$(SPROUT_HOST=http://127.0.0.1:$port "$sprout" stop other 2>&1) && { echo "FAIL: stop of an unknown model exited 0"; fail=1; }
echo "$err" | grep -q 'stories260K' || { echo "FAIL: stop's error does not name the model there is: $err"; fail=1; }
SPROUT_HOST=127.0.0.1:$port "$sprout" stop stories260K || { echo "FAIL: stop of the served model"; fail=1; }
"$sprout" stop 2>/dev/null && { echo "FAIL: stop without a name exited 0"; fail=1; }
kill $pid
wait $pid 2>/dev/null
err=$(SPROUT_HOST=127.0.0.1:$port "$sprout" ps 2>&1) && { echo "FAIL: ps without a server exited 0"; fail=1; }
echo "$err" | grep -q 'cannot connect' || { echo "FAIL: ps without a server: $err"; fail=1; }
[ $fail = 0 ] && echo "ok"
exit $fail

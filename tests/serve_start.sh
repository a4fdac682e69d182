# Sourced by the shell tests that run a server (POSIX sh and bash alike).
#
# serve_start LOG ARGS...: starts "$sprout" serve --port 0 ARGS... in the
# background, its output in LOG, and waits (10 s at most) until it listens
# and its model is loaded. Sets serve_pid, serve_url (http://HOST:PORT) and
# serve_port; returns 1 after printing the log if it exits or never gets
# there.
serve_start() {
    serve_log=$1
    shift
    "$sprout" serve --port 0 "$@" >"$serve_log" 2>&1 &
    serve_pid=$!
    serve_url=
    serve_tries=0
    while [ "$serve_tries" -lt 200 ]; do
        serve_url=$(sed -n 's/.*listening on \(http:\/\/[^ ]*\).*/\1/p' "$serve_log" | head -1)
        [ -n "$serve_url" ] && grep -q 'ready' "$serve_log" && break
        kill -0 "$serve_pid" 2>/dev/null || serve_tries=200 # it exited
        serve_tries=$((serve_tries + 1))
        sleep 0.05
    done
    serve_port=${serve_url##*:}
    if [ "$serve_tries" -ge 200 ]; then
        echo "FAIL: the server did not start"
        cat "$serve_log"
        return 1
    fi
}

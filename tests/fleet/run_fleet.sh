#!/usr/bin/env bash
# Runs the fleet test: three replicas behind Debian's HAProxy, their
# /metrics checked by promtool (Debian's prometheus package). Exit 77
# (skipped) when node, haproxy or promtool is missing: scripts/deps.sh
# --test installs them.
set -uo pipefail
for tool in node haproxy promtool; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool not installed (scripts/deps.sh --test installs it)"
    exit 77
  fi
done
exec node "$(dirname "$0")/test_fleet.mjs"

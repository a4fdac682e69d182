#!/usr/bin/env bash
# Runs one node test of the server with the real client libraries, which
# npm installs once per build folder (into a temporary folder, then moved
# in place, under a lock: CTest may start several of these at once).
# Exit 77 (skipped) when node or the npm registry is not reachable.
set -uo pipefail
test_script=$1
clients=$2
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node/npm not installed (scripts/deps.sh --test installs them)"
  exit 77
fi
mkdir -p "$(dirname "$clients")"
(
  flock 9
  if [ ! -d "$clients/node_modules/openai" ] || [ ! -d "$clients/node_modules/ollama" ]; then
    tmp=$(mktemp -d)
    echo '{"name":"sprout-server-clients","private":true}' >"$tmp/package.json"
    if ! npm install --prefix "$tmp" --no-audit --no-fund --loglevel=error openai ollama; then
      rm -rf "$tmp"
      exit 1
    fi
    rm -rf "$clients"
    mv "$tmp" "$clients"
  fi
) 9>"$clients.lock" || { echo "SKIP: npm could not install the openai and ollama clients"; exit 77; }
version() { sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$clients/node_modules/$1/package.json" | head -1; }
echo "clients: openai $(version openai), ollama $(version ollama)"
SPROUT_NODE_CLIENTS=$clients exec node "$test_script"

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
# The clients, and for test_structured the validator and the AI SDK
# (pinned: ai 5 is the last major that runs on node 18 and 20).
packages=(openai ollama ajv@8.20.0 ajv-formats@3.0.1 ai@5.0.277 @ai-sdk/openai-compatible@1.0.61 zod@3.25.76)
. "$(dirname "$0")/../npm_install.sh"
npm_install_once "$clients" sprout-server-clients "${packages[@]}" ||
  { echo "SKIP: npm could not install the client packages (${packages[*]})"; exit 77; }
version() { sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$clients/node_modules/$1/package.json" | head -1; }
echo "clients: openai $(version openai), ollama $(version ollama)"
SPROUT_NODE_CLIENTS=$clients exec node "$test_script"

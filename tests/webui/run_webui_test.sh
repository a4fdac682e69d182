#!/usr/bin/env bash
# Runs the web page's browser test: headless Chromium (Debian's chromium,
# which scripts/deps.sh --test installs) driven by puppeteer-core, which npm
# installs once per build folder (into a temporary folder, moved in place
# under a lock). Exit 77 (skipped) only when Chromium is not installed, or
# node/npm or the npm registry is not there to install puppeteer-core.
set -uo pipefail
test_script=$1
modules=$2
chromium=${SPROUT_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$chromium" ]; then
  echo "SKIP: chromium not installed (scripts/deps.sh --test installs it)"
  exit 77
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node/npm not installed (scripts/deps.sh --test installs them)"
  exit 77
fi
package=puppeteer-core@24.43.1 # the last major that runs on node 18 (Debian 12)
mkdir -p "$(dirname "$modules")"
(
  flock 9
  if [ ! -d "$modules/node_modules/puppeteer-core" ]; then
    tmp=$(mktemp -d)
    echo '{"name":"sprout-webui-test","private":true}' >"$tmp/package.json"
    if ! npm install --prefix "$tmp" --no-audit --no-fund --loglevel=error "$package"; then
      rm -rf "$tmp"
      exit 1
    fi
    rm -rf "$modules"
    mv "$tmp" "$modules"
  fi
) 9>"$modules.lock" || { echo "SKIP: npm could not install $package"; exit 77; }
SPROUT_CHROMIUM=$chromium SPROUT_NODE_MODULES=$modules exec node "$test_script"

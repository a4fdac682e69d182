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
. "$(dirname "$0")/../npm_install.sh"
npm_install_once "$modules" sprout-webui-test "$package" || { echo "SKIP: npm could not install $package"; exit 77; }
SPROUT_CHROMIUM=$chromium SPROUT_NODE_MODULES=$modules exec node "$test_script"

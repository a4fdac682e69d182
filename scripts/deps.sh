#!/usr/bin/env bash
# Installs the Debian packages sprout builds and tests with, skipping those
# already present, so `make run` and `make test` work on a fresh machine.
set -euo pipefail

packages=(build-essential cmake pkg-config libjansson-dev libpcre2-dev libutf8proc-dev libedit-dev libmicrohttpd-dev)
if [ "${1:-}" = "--test" ]; then
  # clang brings libFuzzer (libclang-rt) for the fuzz smoke run
  packages+=(clang libclang-rt-dev time)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"

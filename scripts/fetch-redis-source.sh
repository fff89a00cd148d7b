#!/usr/bin/env bash
# Download Debian bookworm's redis source package (7.0.15) into .cache/redis-src/ once, with a
# private apt configuration (the system's sources and state are not touched).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/.cache/redis-src"
if ls "$DEST"/redis_*.orig.tar.gz >/dev/null 2>&1; then
  ls "$DEST"/redis_*.orig.tar.gz | head -1
  exit 0
fi
APTDIR="$ROOT/.cache/apt-src"
mkdir -p "$DEST" "$APTDIR/lists/partial" "$APTDIR/archives/partial" "$APTDIR/cache"
cat > "$APTDIR/sources.list" <<LIST
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
LIST
# lists, package caches and archives all under .cache/: nothing in /etc/apt or /var/*/apt changes
OPTS=(-o "Dir::Etc::SourceList=$APTDIR/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
      -o "Dir::State::Lists=$APTDIR/lists" -o "Dir::Cache=$APTDIR/cache"
      -o "Dir::Cache::Archives=$APTDIR/archives"
      -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
apt-get "${OPTS[@]}" -q update >/dev/null
cd "$DEST"
apt-get "${OPTS[@]}" -q source --download-only redis >/dev/null
ls "$DEST"/redis_*.orig.tar.gz | head -1

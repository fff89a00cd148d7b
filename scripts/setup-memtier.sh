#!/usr/bin/env bash
# memtier_benchmark, the performance team's main load generator, is in no package registry this
# machine reaches: build it once from the vendored source tarball into .cache/tools/bin, where
# `rbs` finds it without PATH changes. Idempotent: nothing to do when it is on PATH or built.
# The vendor folder is $RBS_VENDOR_DIR, ../shared/vendor beside the repository, or beside the
# local checkout this one was cloned from.
# Without either, print how to install it and carry on (memtier suites are then skipped).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VERSION=2.3.0
SHA256=c093d85573e9d143e92a2d107f516caf2f09cf716eeb178047a03165fdde05b8
DEST="$ROOT/.cache/tools/bin"
BIN="$DEST/memtier_benchmark"

if command -v memtier_benchmark >/dev/null 2>&1 || [ -x "$BIN" ]; then
  exit 0
fi
# shellcheck source=scripts/tool-cache.sh
. "$ROOT/scripts/tool-cache.sh"
if tool_cache_fetch "memtier_benchmark-$VERSION" "$DEST" memtier_benchmark; then
  exit 0
fi
# where the vendor folder may be: $RBS_VENDOR_DIR, beside this checkout, or beside the local
# checkout this one was cloned from (a CI clone in another folder of the same machine)
CANDIDATES=()
[ -n "${RBS_VENDOR_DIR:-}" ] && CANDIDATES+=("$RBS_VENDOR_DIR")
CANDIDATES+=("$ROOT/../shared/vendor")
ORIGIN="$(git -C "$ROOT" remote get-url origin 2>/dev/null || true)"
ORIGIN="${ORIGIN#file://}"
if [ -n "$ORIGIN" ] && [ -d "$ORIGIN" ]; then
  CANDIDATES+=("$ORIGIN/../shared/vendor")
fi
TARBALL="${CANDIDATES[0]}/memtier_benchmark-$VERSION.tar.gz"
for dir in "${CANDIDATES[@]}"; do
  if [ -f "$dir/memtier_benchmark-$VERSION.tar.gz" ]; then
    TARBALL="$dir/memtier_benchmark-$VERSION.tar.gz"
    break
  fi
done
if [ ! -f "$TARBALL" ]; then
  echo "setup: memtier_benchmark not found and no $TARBALL: install it from Redis's APT" \
       "repository (packages.redis.io, package memtier-benchmark), Homebrew" \
       "(brew install memtier_benchmark) or from source (github.com/RedisLabs/memtier_benchmark);" \
       "memtier suites are skipped until then" >&2
  exit 0
fi
if ! echo "$SHA256  $TARBALL" | sha256sum --check --status; then
  echo "setup-memtier: $TARBALL does not have the sha256 of memtier_benchmark $VERSION" >&2
  exit 1
fi

TARBALL="$(cd "$(dirname "$TARBALL")" && pwd)/$(basename "$TARBALL")"
# outside the repository: memtier's version string takes the sha of any enclosing git checkout
WORK="$(mktemp -d "${TMPDIR:-/tmp}/rbs-memtier-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$DEST"
echo "setup: building memtier_benchmark $VERSION from $TARBALL into $DEST (a minute once)"
tar xzf "$TARBALL" -C "$WORK"
SRC="$(find "$WORK" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
LOG="$WORK/build.log"
if ! (cd "$SRC" && autoreconf -ivf && ./configure && make -j2) >"$LOG" 2>&1; then
  echo "setup-memtier: build failed, last lines of $LOG:" >&2
  tail -n 20 "$LOG" >&2
  exit 1
fi
# copy then rename, so an interrupted run never leaves a half-written binary that looks built
cp "$SRC/memtier_benchmark" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
tool_cache_keep "memtier_benchmark-$VERSION" "$DEST" memtier_benchmark
"$BIN" --version | head -n 1

#!/usr/bin/env bash
# The held-out slowdown of benchmarks/decide_bench.py: two redis-server binaries from one
# Redis 7.0.15 tree, the second with a busy loop at the top of call() (~0.35 us of CPU per
# command here). Both are built with the same compiler and flags, so the loop is the only
# difference.
#
# Usage: benchmarks/build_held_out.sh OUT_DIR [SPIN_ITERATIONS] [BUILT_TREE]
#   OUT_DIR/redis-server-base and OUT_DIR/redis-server-spin are written.
#   BUILT_TREE: an already built Redis 7.0.15 work tree to copy (incremental make, seconds);
#   without it the Debian source (scripts/fetch-redis-source.sh) is unpacked and built in
#   full (~1-10 min on 2 cores). Heavy: run it under `flock /tmp/rbs-heavy.lock`.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$(mkdir -p "$1" && cd "$1" && pwd)"
SPIN="${2:-1200}"
WORK="$(mktemp -d /tmp/held-out-redis.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
if [ -n "${3:-}" ]; then
  cp -a "$3" "$WORK/tree"
else
  tar -xzf "$("$ROOT/scripts/fetch-redis-source.sh" | tail -1)" -C "$WORK"
  mv "$WORK"/redis-* "$WORK/tree"
fi
cd "$WORK/tree"
grep -q 'REDIS_VERSION "7.0.15"' src/version.h || { echo "not a Redis 7.0.15 tree" >&2; exit 1; }
build() { timeout 1800 make -j2 CC=gcc CXX=g++ REDIS_CFLAGS= BUILD_TLS=no >"$OUT/build-$1.log" 2>&1; }
build base
cp src/redis-server "$OUT/redis-server-base"
python3 - "$SPIN" <<'PY'
import sys
path, spin = "src/server.c", int(sys.argv[1])
text = open(path).read()
old = "void call(client *c, int flags) {\n    long long dirty;\n"
assert old in text, "call() not found in src/server.c"
new = ("static void heldOutSpin(void) { for (volatile unsigned i = 0; i < %d; i++); }\n" % spin
       + old + "    heldOutSpin();\n")
open(path, "w").write(text.replace(old, new, 1))
PY
build spin
cp src/redis-server "$OUT/redis-server-spin"
echo "$OUT/redis-server-base $OUT/redis-server-spin"

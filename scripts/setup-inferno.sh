#!/usr/bin/env bash
# Install inferno (flame graphs: inferno-collapse-perf, inferno-flamegraph, inferno-diff-folded)
# from crates.io into .cache/tools/bin. Idempotent: nothing to do when the binaries are there.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/.cache/tools"
TOOLS=(inferno-flamegraph inferno-collapse-perf inferno-diff-folded)
# shellcheck source=scripts/tool-cache.sh
. "$ROOT/scripts/tool-cache.sh"
if [ -x "$DEST/bin/inferno-flamegraph" ] && [ -x "$DEST/bin/inferno-collapse-perf" ] \
   && [ -x "$DEST/bin/inferno-diff-folded" ]; then
  exit 0
fi
if tool_cache_fetch inferno "$DEST/bin" "${TOOLS[@]}"; then
  exit 0
fi
CARGO="$(command -v cargo || true)"
if [ -x "$HOME/.cargo/bin/cargo" ]; then CARGO="$HOME/.cargo/bin/cargo"; fi
if [ -z "$CARGO" ]; then
  echo "setup-inferno: cargo not found (apt-get install cargo)" >&2
  exit 1
fi
mkdir -p "$DEST"
echo "setup: installing inferno into $DEST (cargo install, a few minutes once)"
if ! "$CARGO" install --locked --quiet inferno --root "$DEST"; then
  # Debian 12's Rust 1.63 cannot build the newest inferno: fall back to an older release
  "$CARGO" install --locked --quiet inferno --version 0.11.7 --root "$DEST"
fi
tool_cache_keep inferno "$DEST/bin" "${TOOLS[@]}"

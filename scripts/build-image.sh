#!/usr/bin/env bash
# A local build image for the builder's docker sandbox (no registry is reachable here):
# Debian bookworm with build-essential, made by mmdebstrap from Debian's packages and
# `docker import`-ed under TAG with the labels rbs.managed=1 and rbs.role=build-image.
# Cached: does nothing when the engine already has TAG (a minute or less, ~300 MB of packages).
# Two builds of the image never overlap: its own lock, not /tmp/rbs-heavy.lock, which a suite
# run under `flock /tmp/rbs-heavy.lock` holds already (its docker tests then waited on it
# until their 900 s timeout).
# Usage: scripts/build-image.sh [TAG]   (default rbs-build:bookworm)
set -euo pipefail
TAG="${1:-rbs-build:bookworm}"
MIRROR="${RBS_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
if docker image inspect "$TAG" >/dev/null 2>&1; then echo "$TAG"; exit 0; fi
command -v mmdebstrap >/dev/null || {
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends mmdebstrap
}
exec 9>/tmp/rbs-build-image.lock
flock 9
if docker image inspect "$TAG" >/dev/null 2>&1; then echo "$TAG"; exit 0; fi
mmdebstrap --quiet --variant=minbase --include=build-essential,pkg-config bookworm - "$MIRROR" \
  | docker import --change "LABEL rbs.managed=1" --change "LABEL rbs.role=build-image" \
      --change "ENV PATH=/usr/local/bin:/usr/bin:/bin" - "$TAG" >/dev/null
echo "$TAG"

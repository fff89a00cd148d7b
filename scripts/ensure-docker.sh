#!/usr/bin/env bash
# Make sure a Docker engine answers. On a fresh Debian 12 machine docker.io is installed by
# setup.sh but no init system may start it: start dockerd ourselves and wait for it.
set -euo pipefail
if docker info >/dev/null 2>&1; then exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
LOG="${TMPDIR:-/tmp}/rbs-dockerd.log"
echo "ensure-docker: starting dockerd (log: $LOG)"
$SUDO sh -c "nohup dockerd >'$LOG' 2>&1 &"
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then echo "ensure-docker: engine is up"; exit 0; fi
  sleep 1
done
echo "ensure-docker: dockerd did not come up within 60 s; log tail:" >&2
tail -20 "$LOG" >&2 || true
exit 1

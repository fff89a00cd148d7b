#!/usr/bin/env bash
# The whole test suite. Tests start their own redis-server / redis-stack-server processes on
# free ports; nothing here touches servers it did not start.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/.venv/bin:$PATH"
exec .venv/bin/pytest -q -ra --timeout=900 --durations=15 tests "$@"

"""Profile artifacts of a run read back for analysis (the per-function instruction counts the
``instructions`` profiler writes beside a result)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_functions(path: Path) -> list[dict[str, Any]]:
    """One run's per-function artifact; a missing or malformed file reads as no functions."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [f for f in data if isinstance(f, dict) and "function" in f] \
        if isinstance(data, list) else []

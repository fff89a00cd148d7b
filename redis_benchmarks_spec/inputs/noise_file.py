"""The noise book on disk (``--noise-file``, default ``$RBS_NOISE_FILE`` or
``~/.local/share/redis-benchmarks-spec/noise.json``): read here; written atomically by the
session that adds to it (``runner.ab_files.save_book``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from redis_benchmarks_spec.analysis.noise import NoiseBook
from redis_benchmarks_spec.common.paths import absolute

NOISE_FILE_ENV = "RBS_NOISE_FILE"


class NoiseBookError(ValueError):
    """The noise file cannot be read; the message names it."""


def default_path() -> Path:
    env = os.environ.get(NOISE_FILE_ENV)
    if env:
        return absolute(env)  # read by daemons that run in other folders
    return Path.home() / ".local" / "share" / "redis-benchmarks-spec" / "noise.json"


def load(path: Path | None = None) -> NoiseBook:
    """The book at ``path`` (empty when the file does not exist yet)."""
    path = path or default_path()
    if not path.exists():
        return NoiseBook(path)
    try:
        return NoiseBook.from_dict(path, json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NoiseBookError(f"{path}: not a noise file ({exc})") from None


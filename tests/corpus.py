"""The performance team's suite corpus, redis-benchmarks-specification 0.3.47 from PyPI.

Downloaded at test time with pip (never committed) and unpacked once into .cache/corpus/,
where later runs reuse it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from benchmarks.redis_history import cache_root, locked

PACKAGE = "redis-benchmarks-specification==0.3.47"
CACHE = cache_root() / "corpus" / "rbs-spec-0.3.47"


def corpus_suites() -> Path:
    """The corpus's test-suites folder, fetched on first use."""
    suites = CACHE / "redis_benchmarks_specification" / "test-suites"
    if suites.is_dir():
        return suites
    with locked(CACHE.parent / "corpus.lock"):
        if not suites.is_dir():  # not fetched by another test process meanwhile
            _fetch()
    return suites


def _fetch() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        PACKAGE, "-d", tmp], check=True, timeout=300)
        [wheel] = Path(tmp).glob("*.whl")
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(unpacked)
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(CACHE, ignore_errors=True)
        shutil.move(str(unpacked), CACHE)

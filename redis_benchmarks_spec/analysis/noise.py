"""What the system knows about each test's noise: the spread of its per-pair log ratios in
calibration A/A sessions (the same binary on both sides), per test, metric and platform.

An A/A session (``rbs run`` with the same server file on both sides and no side arguments)
adds its pairs' spread here; an A/B session on the same platform pools it with its own pairs
(:class:`analysis.paired.NoisePrior`), so a quiet metric decides with few pairs. Sessions
pool: the book keeps the pooled variance and its degrees of freedom, as a running sum.

The book is a JSON file (``--noise-file``, default ``$RBS_NOISE_FILE`` or
``~/.local/share/redis-benchmarks-spec/noise.json``), read and written atomically by
:mod:`inputs.noise_file`.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from redis_benchmarks_spec.analysis.paired import NoisePrior, log_ratios

VERSION = 1


@dataclass
class NoiseEntry:
    """Pooled spread of one test's per-pair log ratios on one metric and platform."""

    test: str
    metric: str
    platform: str
    sd: float
    df: int
    sessions: int = 1
    updated_ms: int = 0

    @property
    def key(self) -> str:
        return entry_key(self.test, self.metric, self.platform)


def entry_key(test: str, metric: str, platform: str) -> str:
    return f"{platform}|{metric}|{test}"


class NoiseBook:
    """Every recorded test's noise, read from and written to one file."""

    def __init__(self, path: Path, entries: dict[str, NoiseEntry] | None = None) -> None:
        self.path = path
        self.entries = entries or {}

    @classmethod
    def from_dict(cls, path: Path, raw: dict[str, Any]) -> NoiseBook:
        """A book read from ``path`` (entries without a usable spread are dropped); raises
        KeyError or TypeError when ``raw`` is not a book."""
        entries = [NoiseEntry(**e) for e in raw["entries"]]
        return cls(path, {e.key: e for e in entries if e.df >= 1 and math.isfinite(e.sd)})

    def to_dict(self) -> dict[str, Any]:
        return {"version": VERSION,
                "entries": [asdict(e) for _, e in sorted(self.entries.items())]}

    def priors(self, metric: str, platform: str, tests: list[str]) -> dict[str, NoisePrior]:
        """The recorded noise of these tests on this metric and platform."""
        out = {}
        for test in tests:
            entry = self.entries.get(entry_key(test, metric, platform))
            if entry is not None:
                out[test] = NoisePrior(entry.sd, entry.df, f"{entry.sessions} calibration "
                                       f"A/A session(s) of this test on {platform} "
                                       f"({entry.df + entry.sessions} pairs)")
        return out

    def session_priors(self, platform: str,
                       tests: list[str]) -> dict[str, dict[str, NoisePrior]]:
        """Every recorded metric's noise of these tests on this platform, per metric."""
        metrics = {e.metric for e in self.entries.values() if e.platform == platform}
        return {m: p for m in sorted(metrics) if (p := self.priors(m, platform, tests))}

    def record(self, test: str, metric: str, platform: str,
               pairs: list[tuple[float, float]]) -> NoiseEntry | None:
        """Pool an A/A session's pairs of one test into the book (2+ pairs needed)."""
        if len(pairs) < 2:
            return None
        ratios = log_ratios(pairs)
        var, df = float(np.var(ratios, ddof=1)), len(pairs) - 1
        key = entry_key(test, metric, platform)
        old = self.entries.get(key)
        sessions = 1
        if old is not None:
            var = (old.df * old.sd ** 2 + df * var) / (old.df + df)
            df, sessions = old.df + df, old.sessions + 1
        entry = NoiseEntry(test, metric, platform, math.sqrt(var), df, sessions,
                           int(time.time() * 1000))
        self.entries[key] = entry
        return entry

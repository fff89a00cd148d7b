"""What the system knows about each test's noise: the spread of its per-pair log ratios in
calibration A/A sessions (the same binary on both sides), per test, metric and platform.

An A/A session (``rbs run`` with the same server file on both sides and no side arguments)
adds its pairs' spread here; an A/B session on the same platform pools it with its own pairs
(:class:`analysis.paired.NoisePrior`), so a quiet metric decides with few pairs. Sessions
pool: the book keeps the pooled variance and its degrees of freedom, as a running sum.

Timed metrics are recorded too, but never pooled as priors (their spread is the moment's):
each A/A session's mean log ratio (its *offset*) is kept, and the largest offset this host
has shown for a test, or for the other tests of its family (the suite's first tested group),
is that test's noise floor on this host (:meth:`NoiseBook.floors`, at least
:data:`MIN_CALIBRATED_FLOOR_PCT`). A change smaller than what an A/A session of the same
binary moved by on this host is never a verdict. Tests with no calibration keep the
uncalibrated default (``analysis.verdict.DEFAULT_NOISE_FLOOR_PCT``), and the report says so.

The book is a JSON file (``--noise-file``, default ``$RBS_NOISE_FILE`` or
``~/.local/share/redis-benchmarks-spec/noise.json``), read by :mod:`inputs.noise_file` and
written atomically by :mod:`runner.ab_files`.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from redis_benchmarks_spec.analysis.paired import NoisePrior, log_ratios
from redis_benchmarks_spec.analysis.session_runs import ABRun, deterministic, keys_of
from redis_benchmarks_spec.analysis.verdict import UNCALIBRATED_PAIR_SD, HostNoise
from redis_benchmarks_spec.common import metrics

VERSION = 1
#: a calibrated timed floor never goes below this: smaller timed effects are left to
#: instruction counts
MIN_CALIBRATED_FLOOR_PCT = 1.0
#: a calibrated floor is capped here: a host noisier than this needs fixing, not a floor
MAX_CALIBRATED_FLOOR_PCT = 25.0
#: the offsets of this many latest A/A sessions are kept per entry
KEPT_OFFSETS = 20


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
    # each A/A session's mean log ratio (latest last), and the test's family
    offsets: list[float] = field(default_factory=list)
    family: str = ""

    @property
    def floor_pct(self) -> float | None:
        """The largest A/A offset as a percentage, bounded (module doc); None without one."""
        if not self.offsets:
            return None
        worst = 100 * (math.exp(max(abs(o) for o in self.offsets)) - 1)
        return min(MAX_CALIBRATED_FLOOR_PCT, max(MIN_CALIBRATED_FLOOR_PCT, round(worst, 2)))

    @property
    def key(self) -> str:
        return entry_key(self.test, self.metric, self.platform)


@dataclass
class Calibration:
    """When a platform's calibration A/A sessions last ran, under which host fingerprint
    (``telemetry.fingerprint``), and of which tests."""

    fingerprint: dict[str, str]
    at_ms: int
    tests: list[str] = field(default_factory=list)


def entry_key(test: str, metric: str, platform: str) -> str:
    return f"{platform}|{metric}|{test}"


class NoiseBook:
    """Every recorded test's noise, read from and written to one file."""

    def __init__(self, path: Path, entries: dict[str, NoiseEntry] | None = None,
                 calibrations: dict[str, Calibration] | None = None) -> None:
        self.path = path
        self.entries = entries or {}
        self.calibrations = calibrations or {}  # per platform: the last calibration

    @classmethod
    def from_dict(cls, path: Path, raw: dict[str, Any]) -> NoiseBook:
        """A book read from ``path`` (entries without a usable spread are dropped); raises
        KeyError or TypeError when ``raw`` is not a book."""
        entries = [NoiseEntry(**e) for e in raw["entries"]]
        calibrations = {p: Calibration(**c) for p, c in raw.get("calibrations", {}).items()}
        return cls(path, {e.key: e for e in entries if e.df >= 1 and math.isfinite(e.sd)},
                   calibrations)

    def to_dict(self) -> dict[str, Any]:
        return {"version": VERSION,
                "entries": [asdict(e) for _, e in sorted(self.entries.items())],
                "calibrations": {p: asdict(c) for p, c in sorted(self.calibrations.items())}}

    def calibrated(self, platform: str, fingerprint: dict[str, str], when_ms: int,
                   tests: list[str]) -> list[str]:
        """Mark ``platform`` calibrated now under ``fingerprint``; a changed fingerprint
        first drops the platform's timed entries (they describe another host). Returns
        what changed in the fingerprint."""
        old = self.calibrations.get(platform)
        changed = [] if old is None else [
            f"{k}: {old.fingerprint.get(k, '') or '?'} -> {v or '?'}"
            for k, v in fingerprint.items() if old.fingerprint.get(k, "") != v]
        if changed:
            self.entries = {k: e for k, e in self.entries.items()
                            if e.platform != platform or deterministic(e.metric)}
        self.calibrations[platform] = Calibration(dict(fingerprint), when_ms, list(tests))
        return changed

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
               pairs: list[tuple[float, float]], family: str = "") -> NoiseEntry | None:
        """Pool an A/A session's pairs of one test into the book (2+ pairs needed), and keep
        the session's offset (its mean log ratio)."""
        if len(pairs) < 2:
            return None
        ratios = log_ratios(pairs)
        var, df = float(np.var(ratios, ddof=1)), len(pairs) - 1
        key = entry_key(test, metric, platform)
        old = self.entries.get(key)
        sessions, offsets = 1, [float(ratios.mean())]
        if old is not None:
            var = (old.df * old.sd ** 2 + df * var) / (old.df + df)
            df, sessions = old.df + df, old.sessions + 1
            offsets = [*old.offsets, *offsets][-KEPT_OFFSETS:]
        entry = NoiseEntry(test, metric, platform, math.sqrt(var), df, sessions,
                           int(time.time() * 1000), offsets,
                           family or (old.family if old else ""))
        self.entries[key] = entry
        return entry

    def session_noise(self, platform: str, families: dict[str, str],
                      metrics: list[str]) -> dict[str, HostNoise]:
        """:meth:`host_noise` of each of ``metrics`` (the timed ones a session may judge)."""
        return {metric: self.host_noise(metric, platform, families) for metric in metrics}

    def host_noise(self, metric: str, platform: str, families: dict[str, str]) -> HostNoise:
        """Per test (``families``: label -> family), the noise floor and least pair spread
        this platform's A/A sessions give it (its own entry, else the largest of its
        family's), and a note of where they came from for the report."""
        on_platform = [e for e in self.entries.values()
                       if e.platform == platform and e.metric == metric and e.floor_pct]
        own = {e.test: e for e in on_platform}
        floors: dict[str, float] = {}
        spreads: dict[str, float] = {}
        from_family = 0
        for test, family in families.items():
            kin = [own[test]] if test in own else \
                [e for e in on_platform if family and e.family == family]
            if not kin:
                continue
            from_family += test not in own
            floors[test] = max(e.floor_pct or 0.0 for e in kin)
            spreads[test] = max(e.sd for e in kin)
        note = _floor_note(platform, len(floors), from_family, len(families) - len(floors))
        return HostNoise(floors, spreads, note)


#: the timed metrics a session may be judged on besides its own (--metric auto picks this)
SERVER_CPU_METRIC = metrics.SERVER_CPU_METRIC
THROUGHPUT = metrics.THROUGHPUT_METRIC


def timed_metrics(metric: str) -> list[str]:
    """The timed metrics whose floors a session of ``metric`` may need."""
    named = [m for m in (metric, THROUGHPUT, SERVER_CPU_METRIC) if m and m != "auto"]
    return [m for m in dict.fromkeys(named) if not deterministic(m)]


def family_of(groups: list[str]) -> str:
    """A test's family: its suite's first tested group (``string``, ``hash``...)."""
    return groups[0] if groups else ""


def families_of_runs(runs: list[ABRun]) -> dict[str, str]:
    """Per test label of these runs, its family."""
    keys = keys_of(runs)
    return {keys(r.result): family_of(r.result.tested_groups) for r in runs}


def _floor_note(platform: str, calibrated: int, from_family: int, missing: int) -> str:
    parts = []
    if calibrated:
        parts.append(f"{calibrated} test(s) with floors and spreads from {platform}'s calibration A/A "
                     f"sessions ({from_family} from their family)")
    if missing:
        parts.append(f"{missing} test(s) without a calibration on {platform}: the uncalibrated "
                     f"floor and an assumed pair spread of {100 * UNCALIBRATED_PAIR_SD:g} % (an "
                     "A/A session, the same server on both sides, calibrates)")
    return "; ".join(parts)

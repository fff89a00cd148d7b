"""What maintainers said about the watch's alerts, kept with them in the datasink (this
module owns ``ci.benchmarks.redis/watch/{org}/{repo}/{branch}/triage``: hash, alerted commit
-> JSON of its :class:`Triage`; each change is also a ``triage`` line of the branch's log,
which ``rbs history`` and the site show).

A triage says an alert was acknowledged (real, being looked at), expected (real, intended),
a false alarm, or fixed by a later commit; the newest word stands. The lab's measured
precision counts the alerts said to be real against those said to be false
(:func:`precision`). Read back as untrusted: bounded JSON, known states, shas checked.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

import redis

from redis_benchmarks_spec.common.safejson import loads as bounded_loads
from redis_benchmarks_spec.datasink import watch_store
from redis_benchmarks_spec.datasink.watch_store import Branch

STATES = ("acknowledged", "expected", "false-alarm", "fixed")
REAL = ("acknowledged", "expected", "fixed")
_SHA = re.compile(r"^[0-9a-f]{40}$")
_WHO = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")
SOURCES = ("label", "command", "site")


@dataclass(frozen=True)
class Triage:
    """One maintainer's word on one alert."""

    state: str
    by: str
    at_ms: int
    source: str
    fixed_by: str = ""  # the fixing commit, for ``fixed``

    def __post_init__(self) -> None:
        if self.state not in STATES or self.source not in SOURCES or \
                not _WHO.match(self.by) or type(self.at_ms) is not int:
            raise ValueError(f"triage: not a triage: {self.state!r} by {self.by!r}")
        if self.fixed_by and not _SHA.match(self.fixed_by):
            raise ValueError(f"triage: {self.fixed_by!r} is not a 40-hex commit")

    @property
    def words(self) -> str:
        """``false alarm (by alice, GitHub label)``."""
        fixed = f" by {self.fixed_by[:10]}" if self.fixed_by else ""
        how = {"label": "GitHub label", "command": "/rbs command", "site": "the site"}
        return f"{self.state.replace('-', ' ')}{fixed} (by {self.by}, {how[self.source]})"


def set_triage(client: redis.Redis, where: Branch, sha: str, triage: Triage) -> None:
    """Keep ``triage`` with the alert of ``sha`` (ValueError when no alert was told there)."""
    if not _SHA.match(sha) or sha not in watch_store.alert_summaries(client, where):
        raise ValueError(f"triage: no alert at {sha[:40]!r} on {where.branch}")
    client.hset(where.key("triage"), sha, json.dumps(asdict(triage)))
    watch_store.add_log(client, where, "triage", sha, triage.words)


def triages(client: redis.Redis, where: Branch) -> dict[str, Triage]:
    """Alerted commit -> the newest triage of its alert (unreadable entries left out)."""
    raw: Any = client.hgetall(where.key("triage"))
    out = {}
    for sha, value in raw.items():
        sha = sha.decode() if isinstance(sha, bytes) else str(sha)
        data = bounded_loads(value, 3)
        try:
            if _SHA.match(sha) and isinstance(data, dict):
                out[sha] = Triage(**{k: data[k] for k in ("state", "by", "at_ms", "source")},
                                  fixed_by=str(data.get("fixed_by") or ""))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def alert_of_issue(client: redis.Redis, where: Branch, number: int,
                   body: str) -> str | None:
    """The alerted commit a GitHub issue is about: the one whose summary names the issue,
    else the one whose full sha the issue's body names (only commits alerted here count)."""
    summaries = watch_store.alert_summaries(client, where)
    for sha, summary in summaries.items():
        if summary.get("issue") == number:
            return sha
    named = set(re.findall(r"\b[0-9a-f]{40}\b", body[:20_000]))
    found = sorted(named & set(summaries))
    return found[0] if len(found) == 1 else None


@dataclass(frozen=True)
class Precision:
    """One platform's alerts in one quarter: how many, said real, said false, unsaid."""

    platform: str
    quarter: str
    alerts: int
    real: int
    false: int

    @property
    def untriaged(self) -> int:
        return self.alerts - self.real - self.false

    @property
    def precision(self) -> float | None:
        """Real / (real + false); None before any alert was triaged."""
        judged = self.real + self.false
        return self.real / judged if judged else None


def quarter(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return f"{moment.year}-Q{(moment.month - 1) // 3 + 1}"


def precision(client: redis.Redis, where: Branch) -> list[Precision]:
    """Per platform and quarter (of the alert), the alerts and what was said of them."""
    said = triages(client, where)
    counts: dict[tuple[str, str], list[int]] = {}
    for sha, summary in watch_store.alert_summaries(client, where).items():
        at = summary.get("at_ms")
        when = quarter(at) if type(at) is int and at > 0 else "?"
        platforms = summary.get("platforms") or ["?"]
        for platform in platforms if isinstance(platforms, list) else ["?"]:
            row = counts.setdefault((str(platform)[:100], when), [0, 0, 0])
            row[0] += 1
            state = said[sha].state if sha in said else None
            row[1] += state in REAL
            row[2] += state == "false-alarm"
    return [Precision(p, q, *c) for (p, q), c in sorted(counts.items())]

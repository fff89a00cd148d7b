"""What the lab's watch of a tracked branch keeps in the datasink (this module owns the key
family ``ci.benchmarks.redis/watch/{org}/{repo}/{branch}/...``).

- ``.../fingerprint/{series key}``: hash, point timestamp -> the host fingerprint id (with
  the build's compiler) the point was taken under; the arrival gate compares these.
- ``.../candidates``: hash, candidate id -> JSON of a :class:`Candidate` (one per commit
  the change lands on, whatever the number of tests and platforms that saw it).
- ``.../candidate-series/{id}``: hash, ``test|platform|variant|metric`` -> JSON of the
  step that series showed (two agents add theirs without a read-modify-write race).
- ``.../alerted``: set of candidate ids already alerted: the first to add one sends it.
- ``.../alerts``: hash, alerted commit -> JSON of the alert's summary (what was told).
- ``.../lease/{id}``: string with a TTL, the confirmer working on a candidate now (two
  confirmers never re-run or bisect one candidate twice).
- ``.../log``: list of JSON lines (alerts and host-changed notes) ``rbs history`` shows.
- ``.../hosts``: hash, point fingerprint id -> JSON of the host's fingerprint fields (and the
  compiler) behind it: what a host-changed note says changed.
- ``.../remeasures``: hash, ``{platform}|{sha}`` -> JSON of a :class:`Remeasure` (the last
  commit before a host boundary, to be measured again on the new host), and
  ``.../remeasure-tests/{platform}|{sha}``: set of the tests that saw the boundary there.

Everything read back is untrusted (anyone with datasink write access): bounded JSON, shas
checked, unknown fields dropped.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import redis

from redis_benchmarks_spec.common.safejson import loads as bounded_loads

PREFIX = "ci.benchmarks.redis/watch"
_SHA = re.compile(r"^[0-9a-f]{40}$")
_NAME = re.compile(r"^[A-Za-z0-9._:/-]{1,200}$")
MAX_LOG = 10_000
STATES = ("candidate", "confirming", "bisecting", "confirmed", "rejected")


@dataclass(frozen=True)
class Branch:
    """Which tracked branch: ``org/repo`` and the branch name."""

    org: str
    repo: str
    branch: str

    def __post_init__(self) -> None:
        for name in (self.org, self.repo, self.branch):
            if not _NAME.match(name):
                raise ValueError(f"watch: invalid name {name!r}")

    def key(self, *parts: str) -> str:
        return "/".join((PREFIX, self.org, self.repo, self.branch, *parts))


@dataclass
class SeriesStep:
    """One series' view of a candidate change."""

    test: str
    platform: str
    build_variant: str
    metric: str
    change_pct: float
    low_pct: float | None = None
    high_pct: float | None = None
    noise_pct: float = 0.0
    #: the newest run the series knew when it raised the step: no run up to it votes on the
    #: confirmation (0: an older entry; its commits' first runs are left out instead)
    raised_ms: int = 0

    @property
    def field(self) -> str:
        return f"{self.test}|{self.platform}|{self.build_variant}|{self.metric}"


@dataclass
class Candidate:
    """A change between two commits, seen by at least one series, not yet told anyone."""

    id: str
    before: str
    after: str
    state: str = "candidate"
    created_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    reruns: list[str] = field(default_factory=list)  # build request ids of the re-runs
    placed_on: str = ""  # the commit the confirmed change is placed on
    reason: str = ""  # why it was confirmed or rejected


def _from(cls: type, raw: Any) -> Any:
    if not isinstance(raw, dict):
        raise TypeError(f"watch: expected an object, got {type(raw).__name__}")
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in raw.items() if k in names})


def record_fingerprint(client: redis.Redis, where: Branch, series_key: str,
                       ts_ms: int, fingerprint: str) -> None:
    client.hset(where.key("fingerprint", series_key), str(ts_ms), fingerprint)


def fingerprints(client: redis.Redis, where: Branch, series_key: str) -> dict[int, str]:
    """Point timestamp -> fingerprint id, for the points that recorded one."""
    raw: Any = client.hgetall(where.key("fingerprint", series_key))
    out = {}
    for ts, fp in raw.items():
        ts, fp = _text(ts), _text(fp)
        if ts.isdigit():
            out[int(ts)] = fp[:64]
    return out


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def candidate_id(after: str) -> str:
    return after


def add_candidate(client: redis.Redis, where: Branch, before: str, after: str,
                  step: SeriesStep) -> tuple[Candidate, bool]:
    """Record ``step`` under the candidate of ``after`` (created if new): (it, created)."""
    for sha in (before, after):
        if not _SHA.match(sha):
            raise ValueError(f"watch: {sha!r} is not a 40-hex commit")
    new = Candidate(candidate_id(after), before, after)
    created = bool(client.hsetnx(where.key("candidates"), new.id, json.dumps(asdict(new))))
    client.hset(where.key("candidate-series", new.id), step.field, json.dumps(asdict(step)))
    return (new if created else get_candidate(client, where, new.id)), created


def get_candidate(client: redis.Redis, where: Branch, cid: str) -> Candidate:
    raw: Any = client.hget(where.key("candidates"), cid)
    if raw is None:
        raise KeyError(f"watch: no candidate {cid}")
    return _checked(_from(Candidate, bounded_loads(raw)))


def _checked(c: Candidate) -> Candidate:
    if not (_SHA.match(str(c.before)) and _SHA.match(str(c.after))) or c.state not in STATES:
        raise ValueError(f"watch: candidate {c.id!r} is malformed")
    typed = (isinstance(c.id, str) and type(c.created_ms) is int
             and isinstance(c.reruns, list) and all(isinstance(r, str) for r in c.reruns)
             and isinstance(c.placed_on, str) and isinstance(c.reason, str))
    if not typed:
        raise ValueError(f"watch: candidate {c.id!r} has a field of the wrong type")
    return c


@dataclass(frozen=True)
class BadEntry:
    """A stored candidate that cannot be read: its id, its stored text (cut), and why."""

    id: str
    raw: str
    reason: str


def scan_candidates(client: redis.Redis, where: Branch) -> tuple[list[Candidate], list[BadEntry]]:
    """The readable candidates, oldest first, and the entries that are not."""
    raw: Any = client.hgetall(where.key("candidates"))
    good, bad = [], []
    for cid, value in raw.items():
        try:
            c = _checked(_from(Candidate, bounded_loads(value)))
            if c.id != _text(cid):
                raise ValueError(f"watch: candidate stored as {_text(cid)!r} names {c.id!r}")
            good.append(c)
        except (ValueError, TypeError) as exc:
            bad.append(BadEntry(_text(cid)[:200], _text(value)[:2000], str(exc)[:300]))
    return sorted(good, key=lambda c: c.created_ms), bad


def candidates(client: redis.Redis, where: Branch, state: str | None = None) -> list[Candidate]:
    """Every candidate (in the given state), oldest first; ``ValueError`` when one stored
    entry cannot be read (the confirmer service dead-letters those: :func:`scan_candidates`)."""
    found, bad = scan_candidates(client, where)
    if bad:
        raise ValueError(f"watch: candidate {bad[0].id!r}: {bad[0].reason}")
    return [c for c in found if state is None or c.state == state]


def remove_candidate(client: redis.Redis, where: Branch, cid: str) -> None:
    """Forget a candidate and the series that saw it (after it was dead-lettered)."""
    pipe = client.pipeline()
    pipe.hdel(where.key("candidates"), cid)
    pipe.delete(where.key("candidate-series", cid))
    pipe.execute()


def save_candidate(client: redis.Redis, where: Branch, candidate: Candidate) -> None:
    client.hset(where.key("candidates"), candidate.id, json.dumps(asdict(candidate)))


def series_steps(client: redis.Redis, where: Branch, cid: str) -> list[SeriesStep]:
    raw: Any = client.hgetall(where.key("candidate-series", cid))
    return sorted((_from(SeriesStep, bounded_loads(v)) for v in raw.values()),
                  key=lambda s: s.field)


def claim_alert(client: redis.Redis, where: Branch, cid: str) -> bool:
    """True for exactly one caller per candidate: the one that sends its alert."""
    return bool(client.sadd(where.key("alerted"), cid))


def add_log(client: redis.Redis, where: Branch, kind: str, sha: str, text: str) -> None:
    """One line for ``rbs history``: an ``alert``, a ``host-changed`` note or a
    ``small-change`` note (confirmed, under the alert floor) at ``sha``."""
    line = {"kind": kind, "sha": sha, "text": text[:500], "at_ms": int(time.time() * 1000)}
    pipe = client.pipeline()
    pipe.rpush(where.key("log"), json.dumps(line))
    pipe.ltrim(where.key("log"), -MAX_LOG, -1)
    pipe.execute()


def log_lines(client: redis.Redis, where: Branch) -> list[dict[str, Any]]:
    """The alerts and notes of the branch, oldest first."""
    out = []
    for raw in client.lrange(where.key("log"), 0, -1):  # type: ignore[union-attr]
        line = bounded_loads(raw)
        if isinstance(line, dict) and _SHA.match(str(line.get("sha", ""))):
            out.append({k: _text(line.get(k, ""))[:500] for k in ("kind", "sha", "text")})
    return out


def noted(client: redis.Redis, where: Branch, kind: str, sha: str) -> bool:
    """True the first time a (kind, sha) note is claimed (host-changed notes dedupe)."""
    return bool(client.sadd(where.key("noted"), f"{kind}:{sha}"))


def take_lease(client: redis.Redis, where: Branch, cid: str, owner: str, ttl_s: int) -> bool:
    """True when ``owner`` now holds the candidate's lease (it was free, or already its)."""
    key = where.key("lease", cid)
    if client.set(key, owner, nx=True, ex=ttl_s):
        return True
    return _text(client.get(key) or b"") == owner and bool(client.expire(key, ttl_s))


def drop_lease(client: redis.Redis, where: Branch, cid: str, owner: str) -> None:
    key = where.key("lease", cid)
    if _text(client.get(key) or b"") == owner:
        client.delete(key)


def record_alert(client: redis.Redis, where: Branch, sha: str, summary: dict[str, Any]) -> None:
    client.hset(where.key("alerts"), sha, json.dumps(summary))


def alert_summaries(client: redis.Redis, where: Branch) -> dict[str, dict[str, Any]]:
    """Commit -> the summary of the alert told about it (read back bounded)."""
    raw: Any = client.hgetall(where.key("alerts"))
    out = {}
    for sha, value in raw.items():
        summary = bounded_loads(value)
        if _SHA.match(_text(sha)) and isinstance(summary, dict):
            out[_text(sha)] = summary
    return out


def record_host(client: redis.Redis, where: Branch, fingerprint: str,
                facts: dict[str, str]) -> None:
    """What the host behind a point fingerprint looked like (kept from its first point)."""
    client.hsetnx(where.key("hosts"), fingerprint, json.dumps(facts))


def host_facts(client: redis.Redis, where: Branch, fingerprint: str) -> dict[str, str]:
    """The recorded fields of a point fingerprint's host (``{}`` when none was recorded)."""
    raw = bounded_loads(client.hget(where.key("hosts"), fingerprint) or b"{}")
    if not isinstance(raw, dict):
        return {}
    return {str(k)[:40]: str(v)[:200] for k, v in list(raw.items())[:40]}


@dataclass
class Remeasure:
    """The last commit before a host boundary on a platform, to be measured again on the
    new host (``sha``), the boundary's first commit (``first``), and the tests already asked."""

    platform: str
    sha: str
    first: str
    asked: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)  # read back: every test that saw it

    @property
    def id(self) -> str:
        return f"{self.platform}|{self.sha}"


def add_remeasure(client: redis.Redis, where: Branch, entry: Remeasure, test: str) -> bool:
    """Ask for ``entry``'s commit to be measured again for ``test`` (True: a new entry)."""
    for sha in (entry.sha, entry.first):
        if not _SHA.match(sha):
            raise ValueError(f"watch: {sha!r} is not a 40-hex commit")
    if not (_NAME.match(entry.platform) and _NAME.match(test)):
        raise ValueError(f"watch: invalid platform or test {entry.platform!r} {test!r}")
    stored = json.dumps({"platform": entry.platform, "sha": entry.sha, "first": entry.first,
                         "asked": []})
    created = bool(client.hsetnx(where.key("remeasures"), entry.id, stored))
    client.sadd(where.key("remeasure-tests", entry.id), test)
    return created


def remeasures(client: redis.Redis, where: Branch) -> list[Remeasure]:
    """Every re-measure entry with the tests that saw its boundary (unreadable ones are
    skipped: a re-measure is a help to judging, never a reason to stop)."""
    out = []
    raw: Any = client.hgetall(where.key("remeasures"))
    for rid, value in raw.items():
        try:
            entry = _from(Remeasure, bounded_loads(value))
            if entry.id != _text(rid) or not (_SHA.match(entry.sha) and
                                              _SHA.match(entry.first)):
                continue
        except (ValueError, TypeError):
            continue
        tests: Any = client.smembers(where.key("remeasure-tests", entry.id))
        entry.tests = sorted(t for t in (_text(x) for x in tests) if _NAME.match(t))
        asked: Any = entry.asked
        entry.asked = [t for t in asked if isinstance(t, str)] \
            if isinstance(asked, list) else []
        out.append(entry)
    return sorted(out, key=lambda e: e.id)


def save_remeasure(client: redis.Redis, where: Branch, entry: Remeasure) -> None:
    """Store which tests of ``entry`` were asked."""
    client.hset(where.key("remeasures"), entry.id, json.dumps(
        {"platform": entry.platform, "sha": entry.sha, "first": entry.first,
         "asked": entry.asked}))

"""Platform records in the datasink: the one owner of the ``platforms`` key family.

* ``ci.benchmarks.redis/platforms`` (set): platforms that have a record;
* ``ci.benchmarks.redis/platforms/<platform>`` (string): the newest record, JSON;
* ``ci.benchmarks.redis/platforms/<platform>:history`` (sorted set, scored by the record's
  time in ms): every record kept, newest :data:`HISTORY_KEEP`, so the noise in effect when
  a run was taken can be found again;
* ``ci.benchmarks.redis/platforms/<platform>/noise/<stat>`` (time series, labels
  ``host_noise=<stat> platform=<platform> metric=host_noise.<stat>``): each measurement's
  :data:`NOISE_STATS`, so Grafana draws a platform's noise beside its results. They carry
  no ``by`` label, so no results query ever matches them.

A record is written in one MULTI with its history entry. A record without a noise
measurement (``rbs run``) is written only when the host's facts differ from the newest
record's, so history holds changes and measurements, not one entry per run. Records come
from other hosts: :func:`latest` and :func:`history` validate each one
(:meth:`PlatformRecord.from_dict`) and report a bad one as a problem naming its key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.common import safejson
from redis_benchmarks_spec.datasink.keys import LABEL_METRIC, LABEL_PLATFORM, PREFIX, label_value
from redis_benchmarks_spec.results.platform import PlatformRecord, PlatformRecordError

PLATFORMS_KEY = f"{PREFIX}/platforms"
HISTORY_KEEP = 1000
MAX_RECORD_BYTES = 64 * 1024
NOISE_LOOKUP = 50
LABEL_HOST_NOISE = "host_noise"
NOISE_STATS = ("lost_pct", "per_second", "p99_us")


def record_key(platform: str) -> str:
    """Where the newest record of ``platform`` is kept."""
    return f"{PLATFORMS_KEY}/{platform}"


def noise_series_key(platform: str, stat: str) -> str:
    """The time series of one noise statistic of ``platform``."""
    return f"{PLATFORMS_KEY}/{platform}/noise/{stat}"


def noise_labels(platform: str, stat: str) -> dict[str, str]:
    """The labels of :func:`noise_series_key` (what the dashboard filters on)."""
    return {LABEL_HOST_NOISE: stat, LABEL_PLATFORM: label_value(platform),
            LABEL_METRIC: f"{LABEL_HOST_NOISE}.{stat}"}


def history_key(platform: str) -> str:
    """The sorted set of every record of ``platform`` (score: its time in ms)."""
    return f"{PLATFORMS_KEY}/{platform}:history"


@dataclass
class Records:
    """Records read back, and one line per record that could not be used."""

    records: list[PlatformRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _decode(raw: bytes | str, where: str) -> PlatformRecord:
    data = raw.encode() if isinstance(raw, str) else raw
    if len(data) > MAX_RECORD_BYTES:
        raise PlatformRecordError(f"{where}: {len(data)} bytes, more than {MAX_RECORD_BYTES}")
    try:
        return PlatformRecord.from_dict(safejson.loads(data))
    except (ValueError, PlatformRecordError) as exc:
        raise PlatformRecordError(f"{where}: {exc}") from None


def write(client: redis.Redis, record: PlatformRecord) -> bool:
    """Store ``record``; a record without noise whose facts equal the newest one's is not
    stored again (False)."""
    if record.noise is None:
        newest = latest(client, record.platform)
        if newest.records and newest.records[0].description == record.description \
                and newest.records[0].host == record.host:
            return False
    text = json.dumps(record.to_dict(), sort_keys=True)
    pipe = client.pipeline(transaction=True)
    pipe.sadd(PLATFORMS_KEY, record.platform)
    pipe.set(record_key(record.platform), text)
    pipe.zadd(history_key(record.platform), {text: record.recorded_ms})
    pipe.zremrangebyrank(history_key(record.platform), 0, -HISTORY_KEEP - 1)
    _queue_noise_points(pipe, record)
    pipe.execute()
    return True


def _queue_noise_points(pipe: Any, record: PlatformRecord) -> None:
    noise = record.noise
    if noise is None:
        return
    for stat in NOISE_STATS:
        value = getattr(noise, stat)
        if value is None:
            continue
        labels = noise_labels(record.platform, stat)
        pipe.execute_command("TS.ADD", noise_series_key(record.platform, stat),
                             record.recorded_ms, float(value), "ON_DUPLICATE", "LAST",
                             "LABELS", *[x for kv in labels.items() for x in kv])


def platforms(client: redis.Redis) -> list[str]:
    """Platforms that have a record."""
    return sorted(m.decode() if isinstance(m, bytes) else str(m)
                  for m in client.smembers(PLATFORMS_KEY))


def latest(client: redis.Redis, platform: str) -> Records:
    """The newest record of ``platform`` (none when it has none or it is invalid)."""
    key = record_key(platform)
    raw = client.get(key)
    if raw is None:
        return Records()
    try:
        return Records([_decode(raw, key)])
    except PlatformRecordError as exc:
        return Records(problems=[str(exc)])


def history(client: redis.Redis, platform: str, from_ms: int | None = None,
            to_ms: int | None = None) -> Records:
    """Every valid record of ``platform`` in ``from_ms``..``to_ms``, oldest first."""
    key = history_key(platform)
    low = "-inf" if from_ms is None else from_ms
    high = "+inf" if to_ms is None else to_ms
    out = Records()
    out.records = _decoded(client.zrangebyscore(key, low, high), key, out)
    return out


def _decoded(raws: Any, key: str, out: Records) -> list[PlatformRecord]:
    records = []
    for raw in raws:
        try:
            records.append(_decode(raw, key))
        except PlatformRecordError as exc:
            out.problems.append(str(exc))
    return records


def noise_at(client: redis.Redis, platform: str, moment_ms: int) -> Records:
    """The newest record of ``platform`` with a noise measurement taken at or before
    ``moment_ms``, else the first one after it (a host measured after its runs); among the
    :data:`NOISE_LOOKUP` nearest records on each side."""
    key, out = history_key(platform), Records()
    before = client.zrevrangebyscore(key, moment_ms, "-inf", start=0, num=NOISE_LOOKUP)
    after = client.zrangebyscore(key, f"({moment_ms}", "+inf", start=0, num=NOISE_LOOKUP)
    for raws in (before, after):
        measured = [r for r in _decoded(raws, key, out) if r.noise is not None]
        if measured:
            out.records = measured[:1]
            break
    return out

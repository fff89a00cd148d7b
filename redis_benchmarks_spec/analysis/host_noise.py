"""The hosts behind a comparison: each side's platform record, and whether its noise changed.

**The rule.** Two noise measurements (:class:`~redis_benchmarks_spec.results.platform.
IntrinsicLatency`, each with the frequency policy read beside it) differ when any of:

* the CPU frequency governor differs (both known);
* the turbo state differs (both known);
* the share of time the intrinsic-latency loop lost to interruptions differs by a factor
  of :data:`LOST_FACTOR` or more *and* by :data:`LOST_MIN_PP` percentage points or more.

Why these: repeats of the measurement on an unchanged host (this VM beside other
benchmarks; ``benchmarks/host_noise_bench.py``) kept the lost share within a factor of 2.2
while the p99 interruption moved by 18-20x and the maxima by up to 26x, so the tails are
shown but do not decide. Under 0.5 points of lost time cannot explain a
verdict against the 2 % noise floor, whatever the ratio (a quiet host going from 0.01 % to
0.1 % is not flagged). What a record does not hold is "not available", and never
raises a flag.

The sides are compared as they are: the same platform's measurements in effect at the
baseline's and at the comparison's runs (a host whose noise changed between two builds), or
two platforms' measurements (then a flag says part of the difference may be the hosts'
noise rather than their CPUs).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

from redis_benchmarks_spec.results.platform import (
    NOT_AVAILABLE,
    IntrinsicLatency,
    PlatformRecord,
    PlatformRecordError,
)

LOST_FACTOR = 3.0
LOST_MIN_PP = 0.5
NOISE_RULE = ("Host noise is flagged when the two sides' frequency governor or turbo state "
              "differ, or the share of time the intrinsic-latency loop lost to interruptions "
              f"differs by a factor of {LOST_FACTOR:g} or more and by {LOST_MIN_PP:g} "
              "percentage points or more; each side's noise is the measurement in effect at "
              "its newest run.")
GIB = 1024**3


@dataclass
class HostSide:
    """One side's platform: its newest description and the noise in effect for its runs."""

    side: str  # "baseline" | "comparison"
    platform: str
    description: PlatformRecord | None = None
    noise: PlatformRecord | None = None
    note: str = ""  # why something is not available

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> HostSide:
        """A side saved in a comparison's JSON (records validated again: it may come from
        another machine)."""
        def record(value: Any) -> PlatformRecord | None:
            return None if value is None else PlatformRecord.from_dict(value)
        try:
            return cls(side=str(raw["side"]), platform=str(raw["platform"]),
                       description=record(raw.get("description")),
                       noise=record(raw.get("noise")), note=str(raw.get("note", "")))
        except (KeyError, PlatformRecordError) as exc:
            raise ValueError(f"host side: {exc}") from None


def _ratio(a: float, b: float) -> float:
    low, high = sorted((a, b))
    return float("inf") if low == 0 else high / low


def noise_differences(before: PlatformRecord, after: PlatformRecord) -> list[str]:
    """What differs between two measured records by the rule of the module doc."""
    out = []
    for name in ("governor", "turbo"):
        a, b = getattr(before.description, name), getattr(after.description, name)
        if a is not None and b is not None and a != b:
            out.append(f"{name} {a} -> {b}")
    if before.noise is not None and after.noise is not None:
        a, b = before.noise.lost_pct, after.noise.lost_pct
        if abs(a - b) >= LOST_MIN_PP and _ratio(a, b) >= LOST_FACTOR:
            out.append(f"time lost to interruptions {a:.2f} % -> {b:.2f} %")
    return out


def noise_flags(hosts: list[HostSide]) -> list[str]:
    """One line when the baseline's and the comparison's noise differ (the rule above)."""
    sides = {h.side: h for h in hosts}
    base, comp = sides.get("baseline"), sides.get("comparison")
    if base is None or comp is None or base.noise is None or comp.noise is None:
        return []
    changes = noise_differences(base.noise, comp.noise)
    if not changes:
        return []
    if base.platform == comp.platform:
        return [(f"host noise changed on {base.platform} between the baseline's and the "
                f"comparison's runs: {'; '.join(changes)} (a change may be the host's, "
                "not the build's)")]
    return [(f"host noise differs between {base.platform} and {comp.platform}: "
            f"{'; '.join(changes)} (part of the difference may be the hosts' noise, not "
            "their CPUs)")]


def _na(value: object, unit: str = "") -> str:
    return NOT_AVAILABLE if value is None else f"{value}{unit}"


def when(ms: int) -> str:
    """A record's time as people read it (UTC)."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def noise_text(noise: IntrinsicLatency | None) -> str:
    """The intrinsic latency in one line."""
    if noise is None:
        return NOT_AVAILABLE
    tail = ", ".join(f"{name} {_na(value, ' µs')}" for name, value in (
        ("p50", noise.p50_us), ("p99", noise.p99_us), ("max", noise.max_us)))
    cli = (f"; redis-cli max {noise.redis_cli_max_us:g} µs" if noise.redis_cli_max_us
           is not None else f"; redis-cli: {noise.redis_cli_note or NOT_AVAILABLE}")
    return (f"{noise.lost_pct:.2f} % of {noise.seconds:g} s lost, "
            f"{noise.per_second:g} interruptions/s >= {noise.threshold_us:g} µs ({tail}) "
            f"on CPU {_na(noise.cpu)}{cli}")


def description_rows(host: HostSide) -> list[tuple[str, str]]:
    """(fact, value) rows of one side, every missing fact shown as not available."""
    rec = host.description
    if rec is None:
        return [("platform", host.platform), ("description", host.note or NOT_AVAILABLE)]
    d = rec.description
    nics = ", ".join(f"{n.name}: speed {_na(n.speed_mbps, ' Mb/s')}, driver {_na(n.driver)}"
                     for n in d.nics) or NOT_AVAILABLE
    virtualized = None if d.virtualized is None else ("yes" if d.virtualized else "no")
    memory = None if d.memory_bytes is None else f"{d.memory_bytes / GIB:.1f} GiB"
    noise = host.noise
    return [("platform", host.platform), ("host", rec.host),
            ("recorded", f"{when(rec.recorded_ms)} by {rec.recorded_by}"),
            ("CPU", _na(d.cpu_model)),
            ("sockets / cores / threads", " / ".join(_na(v) for v in (d.sockets, d.cores,
                                                                        d.threads))),
            ("NUMA nodes", _na(d.numa_nodes)), ("memory", _na(memory)),
            ("max frequency", _na(d.cpu_max_mhz, " MHz")), ("NICs", nics),
            ("kernel", _na(d.kernel)), ("OS", _na(d.os)), ("virtualized", _na(virtualized)),
            ("governor", _na((noise or rec).description.governor)),
            ("turbo", _na((noise or rec).description.turbo)),
            ("intrinsic latency", noise_text(noise.noise if noise else None)
             + (f" (measured {when(noise.recorded_ms)})" if noise else ""))]


def host_table(hosts: list[HostSide]) -> tuple[list[str], list[list[str]]]:
    """(header, rows): one row per fact, one column per side (every format draws this)."""
    columns = [dict(description_rows(h)) for h in hosts]
    facts: list[str] = []
    for h in hosts:
        facts += [f for f, _ in description_rows(h) if f not in facts]
    header = ["", *(f"{h.side} ({h.platform})" for h in hosts)]
    return header, [[fact, *(c.get(fact, NOT_AVAILABLE) for c in columns)] for fact in facts]


ACROSS_PLATFORMS_NOTE = ("platforms side by side: unpaired runs from two hosts, not a paired "
                         "A/B; the change includes every difference between the hosts and "
                         "their runs' times")

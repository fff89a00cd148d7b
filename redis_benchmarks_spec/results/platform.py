"""A platform's description and host noise: the versioned record one host writes about itself.

An agent writes one at startup, ``rbs run`` when its host's facts changed, and
``rbs platform record`` on demand (``telemetry.platform_probe`` measures it,
``datasink.platforms`` stores it). It is read back on another machine, so it is input from
another host: :meth:`PlatformRecord.from_dict` checks every field (types, lengths, ranges,
names) and raises :class:`PlatformRecordError` naming the first field at fault. A fact the
host does not expose is None and is shown as "not available", never guessed.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import asdict, dataclass, field, fields
from typing import Any

SCHEMA_VERSION = 1
RECORDED_BY = ("agent", "rbs run", "rbs platform record")
NOT_AVAILABLE = "not available"

MAX_TEXT = 200
MAX_NICS = 64
_NAME = re.compile(r"[A-Za-z0-9._:-]{1,200}")


class PlatformRecordError(ValueError):
    """A platform record that breaks a rule; the message names the field."""


def _fail(where: str, value: object, rule: str) -> PlatformRecordError:
    shown = repr(value)
    return PlatformRecordError(f"{where}: {shown[:60]}{'...' if len(shown) > 60 else ''} {rule}")


def _printable(text: str) -> bool:
    """No control, format (bidi overrides), private-use or unassigned character: the text
    reaches terminals, Markdown and HTML as another host wrote it."""
    return not any(unicodedata.category(c).startswith("C") for c in text)


def _text(where: str, value: object, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > MAX_TEXT or not _printable(value):
        raise _fail(where, value, f"is not printable text of at most {MAX_TEXT} characters")
    return value


def valid_name(value: object) -> bool:
    """Whether ``value`` may name a platform or a host (it becomes part of a key)."""
    return isinstance(value, str) and bool(_NAME.fullmatch(value)) and value not in (".", "..")


def _name(where: str, value: object) -> str:
    if not valid_name(value):
        raise _fail(where, value, "is not a name ([A-Za-z0-9._:-]+)")
    return str(value)


def _number(where: str, value: object, low: float, high: float, integer: bool = False
            ) -> Any:
    if value is None:
        return None
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value) \
            or not low <= value <= high:
        kind = "an integer" if integer else "a number"
        raise _fail(where, value, f"is not {kind} in [{low:g}, {high:g}]")
    return value


def _required(where: str, value: Any) -> Any:
    if value is None:
        raise _fail(where, None, "is missing")
    return value


def _bool(where: str, value: object) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise _fail(where, value, "is not true, false or null")
    return value


def _object(where: str, raw: object, cls: type) -> dict[str, Any]:
    """``raw`` as a dict holding only the fields of dataclass ``cls``."""
    if not isinstance(raw, dict):
        raise _fail(where, raw, "is not an object")
    unknown = sorted(set(raw) - {f.name for f in fields(cls)})
    if unknown:
        raise _fail(where, unknown[0], "is not a field of this schema")
    return raw


@dataclass(frozen=True)
class Nic:
    """A network interface with a device behind it (virtual ones such as lo are left out)."""

    name: str
    speed_mbps: int | None = None  # None: the driver does not say (virtio, link down)
    driver: str | None = None
    mtu: int | None = None

    @classmethod
    def from_dict(cls, raw: object, where: str) -> Nic:
        data = _object(where, raw, cls)
        return cls(name=_name(f"{where}.name", data.get("name")),
                   speed_mbps=_number(f"{where}.speed_mbps", data.get("speed_mbps"), 0, 10**7,
                                      True),
                   driver=_text(f"{where}.driver", data.get("driver")),
                   mtu=_number(f"{where}.mtu", data.get("mtu"), 0, 10**6, True))


@dataclass(frozen=True)
class PlatformDescription:
    """What the host is: hardware, kernel, and the CPU frequency policy as read now."""

    cpu_model: str | None = None
    sockets: int | None = None
    cores: int | None = None  # physical cores over every socket
    threads: int | None = None  # logical CPUs online
    numa_nodes: int | None = None
    memory_bytes: int | None = None
    cpu_max_mhz: float | None = None
    kernel: str | None = None
    os: str | None = None
    arch: str | None = None
    virtualized: bool | None = None  # the CPU reports a hypervisor
    nics: tuple[Nic, ...] = ()
    governor: str | None = None  # cpufreq scaling governor of cpu0
    turbo: str | None = None  # "on" | "off" (intel_pstate no_turbo, cpufreq boost)
    scaling_driver: str | None = None

    @classmethod
    def from_dict(cls, raw: object, where: str = "description") -> PlatformDescription:
        data = _object(where, raw, cls)
        nics = data.get("nics") or []
        if not isinstance(nics, list) or len(nics) > MAX_NICS:
            raise _fail(f"{where}.nics", nics, f"is not a list of at most {MAX_NICS} NICs")
        texts = ("cpu_model", "kernel", "os", "arch")
        counts = {"sockets": 4096, "cores": 2**20, "threads": 2**20, "numa_nodes": 4096,
                  "memory_bytes": 2**62}
        turbo = _text(f"{where}.turbo", data.get("turbo"))
        if turbo not in (None, "on", "off"):
            raise _fail(f"{where}.turbo", turbo, "is not on, off or null")
        values: dict[str, Any] = {k: _text(f"{where}.{k}", data.get(k)) for k in texts}
        # names, not text: they appear in the noise flag a pull-request comment carries
        values.update({k: None if data.get(k) is None else _name(f"{where}.{k}", data.get(k))
                       for k in ("governor", "scaling_driver")})
        values.update({k: _number(f"{where}.{k}", data.get(k), 0, top, True)
                       for k, top in counts.items()})
        return cls(
            **values,
            cpu_max_mhz=_number(f"{where}.cpu_max_mhz", data.get("cpu_max_mhz"), 0, 10**6),
            virtualized=_bool(f"{where}.virtualized", data.get("virtualized")),
            nics=tuple(Nic.from_dict(n, f"{where}.nics[{i}]") for i, n in enumerate(nics)),
            turbo=turbo)


@dataclass(frozen=True)
class IntrinsicLatency:
    """How long the kernel keeps a busy loop from running (``redis-cli --intrinsic-latency``).

    ``loop``: a child process pinned to ``cpu`` reads the monotonic clock in a tight loop
    for ``seconds``; every gap of ``threshold_us`` or more is an interruption. Its
    distribution (p50/p90/p99/max), how many per second and the share of time they took
    (``lost_pct``) describe the noise. ``redis_cli_*``: the real ``redis-cli
    --intrinsic-latency`` over the same time (max and average run), or None with
    ``redis_cli_note`` saying why not.
    """

    seconds: float
    cpu: int | None
    threshold_us: float
    iterations: int
    interruptions: int
    per_second: float
    lost_pct: float
    p50_us: float | None = None
    p90_us: float | None = None
    p99_us: float | None = None
    max_us: float | None = None
    redis_cli_max_us: float | None = None
    redis_cli_avg_us: float | None = None
    redis_cli_note: str = ""
    method: str = "loop"

    @classmethod
    def from_dict(cls, raw: object, where: str = "noise") -> IntrinsicLatency:
        data = _object(where, raw, cls)
        big = 1e12
        values: dict[str, Any] = {
            "seconds": _number(f"{where}.seconds", data.get("seconds"), 0, 86_400),
            "cpu": _number(f"{where}.cpu", data.get("cpu"), 0, 2**20, True),
            "threshold_us": _number(f"{where}.threshold_us", data.get("threshold_us"), 0, big),
            "iterations": _number(f"{where}.iterations", data.get("iterations"), 0, 2**62,
                                  True),
            "interruptions": _number(f"{where}.interruptions", data.get("interruptions"), 0,
                                     2**62, True),
            "per_second": _number(f"{where}.per_second", data.get("per_second"), 0, big),
            "lost_pct": _number(f"{where}.lost_pct", data.get("lost_pct"), 0, 100),
            "redis_cli_note": _text(f"{where}.redis_cli_note", data.get("redis_cli_note", ""),
                                    optional=False),
            "method": _text(f"{where}.method", data.get("method", "loop"), optional=False),
        }
        for key in ("seconds", "threshold_us", "iterations", "interruptions", "per_second",
                    "lost_pct"):
            _required(f"{where}.{key}", values[key])
        for key in ("p50_us", "p90_us", "p99_us", "max_us", "redis_cli_max_us",
                    "redis_cli_avg_us"):
            values[key] = _number(f"{where}.{key}", data.get(key), 0, big)
        return cls(**values)


@dataclass(frozen=True)
class PlatformRecord:
    """One host's description of its platform at one moment, with its noise when measured."""

    platform: str
    host: str
    recorded_ms: int
    recorded_by: str
    description: PlatformDescription = field(default_factory=PlatformDescription)
    noise: IntrinsicLatency | None = None
    schema: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: object) -> PlatformRecord:
        """A record read from another host, every field checked (module doc)."""
        data = _object("record", raw, cls)
        schema = _number("schema", data.get("schema"), 1, 10**6, True)
        if schema != SCHEMA_VERSION:
            raise _fail("schema", schema, f"is not {SCHEMA_VERSION}, the version this rbs reads")
        recorded_by = data.get("recorded_by")
        if recorded_by not in RECORDED_BY:
            raise _fail("recorded_by", recorded_by, f"is not one of {', '.join(RECORDED_BY)}")
        noise = data.get("noise")
        return cls(
            platform=_name("platform", data.get("platform")),
            host=_name("host", data.get("host")),
            recorded_ms=_required("recorded_ms", _number("recorded_ms", data.get("recorded_ms"),
                                                         0, 2**53, True)),
            recorded_by=recorded_by,
            description=PlatformDescription.from_dict(data.get("description", {})),
            noise=None if noise is None else IntrinsicLatency.from_dict(noise),
            schema=schema)

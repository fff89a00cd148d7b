"""The stored shape of what one load-generator run measured, normalized across tools.

Both drivers (redis-benchmark and memtier_benchmark) produce a :class:`ToolResult`; the
result document stores it under ``result``. Its ``data`` member is always shaped like
memtier's JSON (``{"ALL STATS": {"<Command>": {...}, "Totals": {...}}}``) so that the suites'
exporter JSONPaths, written for memtier, evaluate the same way against both tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0, 99.9, 99.99)


@dataclass
class LatencySummary:
    """Latency of one command type (or of all commands), in milliseconds."""

    count: int = 0
    mean_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    # keys are percentile labels as memtier writes them: "p50.00", "p99.90", "p99.99"
    percentiles_ms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        # by hand: asdict's deep copy was a tenth of a datasink push's client time
        return {"count": self.count, "mean_ms": self.mean_ms, "min_ms": self.min_ms,
                "max_ms": self.max_ms, "percentiles_ms": dict(self.percentiles_ms)}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> LatencySummary:
        return cls(
            count=int(raw.get("count", 0)),
            mean_ms=raw.get("mean_ms"),
            min_ms=raw.get("min_ms"),
            max_ms=raw.get("max_ms"),
            percentiles_ms={str(k): float(v) for k, v in raw.get("percentiles_ms", {}).items()},
        )


def percentile_label(p: float) -> str:
    """Label a percentile the way memtier does: 50 -> "p50.00", 99.9 -> "p99.90"."""
    return f"p{p:.2f}"


@dataclass
class CommandResult:
    """Throughput and latency of one command type (or of the totals)."""

    ops_per_sec: float
    latency: LatencySummary

    def to_dict(self) -> dict[str, Any]:
        return {"ops_per_sec": self.ops_per_sec, "latency": self.latency.to_dict()}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> CommandResult:
        return cls(float(raw["ops_per_sec"]), LatencySummary.from_dict(raw["latency"]))


@dataclass
class ToolResult:
    """What one tool run measured, normalized across tools."""

    tool: str
    totals: CommandResult
    per_command: dict[str, CommandResult] = field(default_factory=dict)
    # memtier-shaped JSON that exporter metric paths are evaluated against
    data: dict[str, Any] = field(default_factory=dict)
    # base64 HdrHistogram ("HISTFAAA...") of all requests, microseconds; None for redis-benchmark
    histogram: str | None = None
    error_replies: int = 0
    runs: int = 1
    duration_s: float | None = None
    # what the tool's output suggests but cannot prove (e.g. memtier's reply-byte audit)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # decoded histograms by command ("Totals" too), in memory only: not a dataclass
        # field, so never serialised or deep-copied; merging parallel clients uses them
        # instead of decoding the ``histogram`` strings again
        self.histograms: dict[str, Any] = {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "totals": self.totals.to_dict(),
            "per_command": {k: v.to_dict() for k, v in self.per_command.items()},
            "data": self.data,
            "histogram": self.histogram,
            "error_replies": self.error_replies,
            "runs": self.runs,
            "duration_s": self.duration_s,
            "notes": self.notes,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ToolResult:
        return cls(
            tool=raw["tool"],
            totals=CommandResult.from_dict(raw["totals"]),
            per_command={k: CommandResult.from_dict(v) for k, v in raw["per_command"].items()},
            data=raw.get("data", {}),
            histogram=raw.get("histogram"),
            error_replies=int(raw.get("error_replies", 0)),
            runs=int(raw.get("runs", 1)),
            duration_s=raw.get("duration_s"),
            notes=[str(n) for n in raw.get("notes", [])],
        )

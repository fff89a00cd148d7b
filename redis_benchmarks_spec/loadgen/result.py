"""What a load-generator run may fail with, and the checks on what it measured.

Both drivers (redis-benchmark and memtier_benchmark) produce a :class:`ToolResult`, the shape
stored in every result document, defined in :mod:`results.tool_result` (and named here too,
for the drivers).
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from typing import Any

from redis_benchmarks_spec.common.errors import TestRunError
from redis_benchmarks_spec.results.tool_result import (
    PERCENTILES,
    CommandResult,
    LatencySummary,
    ToolResult,
    percentile_label,
)

__all__ = ["PERCENTILES", "CommandResult", "LatencySummary", "ServerErrorReplies",
           "ToolOutputError", "ToolResult", "check_measurable", "drop_unmeasured_rates",
           "exporter_data", "percentile_label", "unmeasured_rates"]

class ToolOutputError(ValueError):
    """The tool's output could not be parsed; the message names the file and the field."""


class ServerErrorReplies(TestRunError):
    """The server answered errors during the run: the result is not a valid measurement."""

    def __init__(self, count: int, detail: str = "") -> None:
        self.count = count
        self.detail = detail
        msg = f"server answered {count} error replies during the run"
        super().__init__(f"{msg}: {detail}" if detail else msg)


def check_measurable(result: ToolResult, source: str) -> ToolResult:
    """``result``, or :class:`ToolOutputError` when it measured nothing usable: an infinite,
    NaN, negative or zero rate (``-n 1`` finishes within the tool's clock resolution and
    redis-benchmark prints ``inf``), or a zero or negative duration. Such a run is a failed
    test with this reason, never a number that overflows a later computation."""
    rates = [*[(name, c.ops_per_sec) for name, c in result.per_command.items()],
             ("Totals", result.totals.ops_per_sec)]
    for name, rate in rates:
        if not (math.isfinite(rate) and rate > 0):
            raise ToolOutputError(f"{source}: {name} ops/sec is {rate}: the run was too short "
                                  "to measure (raise -n or --test-time)")
    if result.duration_s is not None and not (math.isfinite(result.duration_s)
                                              and result.duration_s > 0):
        raise ToolOutputError(f"{source}: run duration is {result.duration_s}s: nothing "
                              "was measured")
    return result


UNMEASURED_RATE_NOTE = ("client rate not measurable ({rates}): the suite measures what the "
                        "server did after the client (wait_for_bgsave), so Ops/sec is left out")


def drop_unmeasured_rates(result: ToolResult) -> ToolResult:
    """A new result with every infinite, NaN or non-positive rate set to 0, its ``Ops/sec``
    left out of a copy of the tool's data (JSON has no infinity; an exporter path to it is
    then reported missing), and a note naming them; ``result`` is left as it is. For suites
    whose metric is not the client's rate: ``-n 1 BGSAVE`` returns within redis-benchmark's
    1 ms clock and it prints ``inf``."""
    bad = unmeasured_rates(result)
    if not bad:
        return result
    per_command = {name: replace(c, ops_per_sec=0.0) if name in bad else c
                   for name, c in result.per_command.items()}
    data = copy.deepcopy(result.data)
    _drop_rate_keys(data, set(bad))
    dropped = replace(result, totals=replace(result.totals, ops_per_sec=0.0),
                      per_command=per_command, data=data,
                      notes=[*result.notes, UNMEASURED_RATE_NOTE.format(rates=", ".join(bad))])
    dropped.histograms = result.histograms
    return dropped


def unmeasured_rates(result: ToolResult) -> list[str]:
    """The commands (and ``Totals``) whose rate is infinite, NaN or not positive; when any
    is, ``Totals`` too (a harmonic mean over an infinite rate overstates)."""
    bad = [name for name, c in [*result.per_command.items(), ("Totals", result.totals)]
           if not (math.isfinite(c.ops_per_sec) and c.ops_per_sec > 0)]
    if bad and "Totals" not in bad:
        bad.append("Totals")
    return bad


def exporter_data(result: ToolResult, extra_totals: dict[str, float]) -> dict[str, Any]:
    """What the suite's exporter paths are evaluated on: the tool's data, or a new copy of it
    with the run's own figures (full-sync time, the save's duration) beside its totals
    (``$."ALL STATS".Totals.<name>``). The tool's data itself is left as it was parsed."""
    if not extra_totals:
        return result.data
    data = copy.deepcopy(result.data)
    data.setdefault("ALL STATS", {}).setdefault("Totals", {}).update(extra_totals)
    return data


def _drop_rate_keys(node: Any, names: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, dict) and "Ops/sec" in value:
                rate = value["Ops/sec"]
                if key in names or (isinstance(rate, float) and not math.isfinite(rate)):
                    del value["Ops/sec"]
            _drop_rate_keys(value, names)
    elif isinstance(node, list):
        for item in node:
            _drop_rate_keys(item, names)

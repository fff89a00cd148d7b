"""Latency at a fixed offered rate: memtier_benchmark's ``--rate-limiting``, what a paced run
offered and achieved, and its latency corrected for coordinated omission.

**memtier 2.3.0's pacing** (``memtier_benchmark.cpp`` and ``shard_connection.cpp`` of the
vendored source): ``--rate-limiting=R`` is the most requests per second of *each connection*
(``-t`` threads x ``-c`` clients, an integer >= 1). A connection sends in bursts: every
``1e6 / (R // ceil(R / 50))`` microseconds a timer refills an allowance of ``ceil(R / 50)``
requests, which it spends as the pipeline allows. The allowance is reset, not accumulated:
requests a stalled connection could not send are never sent later. So a total offered rate
N becomes ``R = round(N / connections)`` per connection, and the rate actually offered is
``connections x ceil(R/50) x 1e6 / interval`` (:func:`offered_rps`), which this module
records rather than N.

**Coordinated omission.** memtier times a request from when it was sent. A stall of the
server (``DEBUG SLEEP 0.3``) delays the one request in flight on each connection, and the
requests that connection should have sent during the stall are never sent, so the
histogram holds one long value per connection instead of one per request that would have
waited. HdrHistogram's expected-interval correction (``record_corrected_value``: a value
``v`` above the interval ``I`` also records ``v - I``, ``v - 2I``, ... ) restores them, with
``I`` the connection's mean interval ``1 / R``. memtier's JSON carries the whole run's
histogram (``Compressed Histogram``, microseconds), so the correction needs no extra file.
Both are kept and named: ``latency_ms_uncorrected`` (memtier's) and ``latency_ms_corrected``.

**Saturation is a shortfall that lasts.** A point is saturated when it achieved less than
95 % of what it offered *and* most of its full seconds (memtier's per-second ``Time-Serie``)
fell short too. A stall (a host hiccup, a fork, ``DEBUG SLEEP 0.5`` in a 3 s run) costs the
whole-run mean more than 5 % while the server kept up in every other second: that point is
recorded as stalled (``short_seconds`` of ``full_seconds``), its latency kept, and not called
saturated. A run without the series (several clients merged) keeps the mean rule.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from typing import Any

from hdrh.histogram import HdrHistogram

from redis_benchmarks_spec.loadgen import histogram as hdr
from redis_benchmarks_spec.loadgen.memtier_argv import option_values
from redis_benchmarks_spec.results.tool_result import PERCENTILES, ToolResult, percentile_label

RATE_OPTION = "--rate-limiting"
#: achieved below this share of the offered rate: the point is saturated
SATURATION_SHARE = 0.95
SATURATED = "saturated"
DEFAULT_THREADS, DEFAULT_CLIENTS = 4, 50  # memtier's defaults


class PacingError(ValueError):
    """A rate that cannot be paced (the tool, the topology, or a value below 1 per
    connection)."""


def connections(argv: Sequence[str]) -> int:
    """memtier's connections: ``-t`` x ``-c`` (its defaults 4 x 50)."""
    threads = [v for v in option_values(argv, {"-t", "--threads"}) if v.isdigit()]
    clients = [v for v in option_values(argv, {"-c", "--clients"}) if v.isdigit()]
    return int(threads[-1] if threads else DEFAULT_THREADS) * \
        int(clients[-1] if clients else DEFAULT_CLIENTS)


def per_connection_offered(rate: int) -> float:
    """Requests per second one connection is allowed with ``--rate-limiting=rate``, as
    memtier's integer timer arithmetic makes it (module doc)."""
    per_interval = (rate + 50 - 1) // 50
    interval_us = 1_000_000 // (rate // per_interval)
    return per_interval * 1_000_000 / interval_us


def offered_rps(argv: Sequence[str]) -> float | None:
    """The total rate a memtier argv offers, or None when it is not paced."""
    values = [v for v in option_values(argv, {RATE_OPTION}) if v.isdigit()]
    if not values or int(values[-1]) < 1:
        return None
    return connections(argv) * per_connection_offered(int(values[-1]))


def paced_arguments(arguments: str, total_rps: float) -> str:
    """memtier ``arguments`` offering ``total_rps`` in all (any ``--rate-limiting`` of the
    suite replaced); raises :class:`PacingError` below one request per second and
    connection."""
    argv = shlex.split(arguments)
    conns = connections(argv)
    per_conn = round(total_rps / conns)
    if per_conn < 1:
        raise PacingError(f"{total_rps:,.0f} requests/s over {conns} connections is less than "
                          "1 per connection, the least memtier's --rate-limiting paces")
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == RATE_OPTION:
            skip = True
        elif not arg.startswith(f"{RATE_OPTION}="):
            kept.append(arg)
    return shlex.join([*kept, f"{RATE_OPTION}={per_conn}"])


def _corrected(hist: HdrHistogram, interval_us: float) -> HdrHistogram:
    out = HdrHistogram(hist.lowest_trackable_value, hist.highest_trackable_value,
                       hist.significant_figures)
    for item in hist.get_recorded_iterator():
        out.record_corrected_value(item.value_iterated_to, int(interval_us),
                                   item.count_at_value_iterated_to)
    return out


def _percentiles(hist: HdrHistogram) -> dict[str, float]:
    return {percentile_label(p): hdr.value_at_percentile(hist, p) / hdr.US_PER_MS
            for p in PERCENTILES}


def _full_second_counts(tool_result: ToolResult) -> list[int]:
    """Requests completed in each full second of a single memtier run (its last, partial
    second left out); [] when the output has no per-second series."""
    data = tool_result.data.get("ALL STATS") if isinstance(tool_result.data, dict) else None
    totals = data.get("Totals") if isinstance(data, dict) else None
    series = totals.get("Time-Serie") if isinstance(totals, dict) else None
    runtime = data.get("Runtime") if isinstance(data, dict) else None
    duration = runtime.get("Total duration") if isinstance(runtime, dict) else None
    if not isinstance(series, dict) or not isinstance(duration, (int, float)):
        return []
    counts = {}
    for key, value in series.items():
        if isinstance(key, str) and key.isdigit() and isinstance(value, dict) and \
                isinstance(value.get("Count"), int):
            counts[int(key)] = value["Count"]
    full = int(duration // 1000)
    return [counts.get(second, 0) for second in range(full)] if full and counts else []


def rate_record(argvs: Sequence[Sequence[str]], tool_result: ToolResult) -> dict[str, Any]:
    """What a paced run offered and achieved, whether it saturated, and its latency with and
    without the coordinated-omission correction; {} for a run that was not paced."""
    paced = [(argv, offered_rps(argv)) for argv in argvs]
    if not paced or any(rate is None for _, rate in paced):
        return {}
    offered = sum(rate or 0.0 for _, rate in paced)
    achieved = tool_result.totals.ops_per_sec
    conns = sum(connections(argv) for argv, _ in paced)
    short = achieved < SATURATION_SHARE * offered
    seconds = _full_second_counts(tool_result) if len(paced) == 1 else []
    record: dict[str, Any] = {
        "offered_rps": offered, "achieved_rps": achieved, "connections": conns,
        "saturated": short,
        "latency_ms_uncorrected": dict(tool_result.totals.latency.percentiles_ms)}
    if seconds:
        below = sum(1 for count in seconds if count < SATURATION_SHARE * offered)
        record.update({"full_seconds": len(seconds), "short_seconds": below,
                       "saturated": short and 2 * below > len(seconds),
                       "stalled": short and 2 * below <= len(seconds)})
    if tool_result.histogram and len(paced) == 1:
        interval_us = 1_000_000 * conns / offered
        hist = hdr.decode(tool_result.histogram)
        record["expected_interval_us"] = interval_us
        record["latency_ms_uncorrected"] = _percentiles(hist)
        record["latency_ms_corrected"] = _percentiles(_corrected(hist, interval_us))
    return record


def saturation_note(record: dict[str, Any]) -> str:
    """One line for a saturated or stalled point, else ''."""
    if record.get("stalled"):
        return (f"stalled, not saturated: achieved {record['achieved_rps']:,.0f} of the "
                f"{record['offered_rps']:,.0f} requests/s offered, short in "
                f"{record['short_seconds']} of {record['full_seconds']} full seconds only")
    if not record.get("saturated"):
        return ""
    share = record["achieved_rps"] / record["offered_rps"] * 100 if record["offered_rps"] \
        else math.nan
    return (f"saturated: achieved {record['achieved_rps']:,.0f} of the {record['offered_rps']:,.0f} "
            f"requests/s offered ({share:.0f} %, below {SATURATION_SHARE:.0%}): its latency is "
            "the server's at saturation, not at that load")

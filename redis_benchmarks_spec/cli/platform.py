"""``rbs platform``: describe this host as a platform, measure its noise, and read records back.

``record`` writes this host's description (CPU, cores, memory, NICs, kernel, frequency
policy) and, unless ``--no-noise``, its intrinsic latency to the datasink under the
platform's name (agents do the same at startup); ``show`` prints a platform's newest record
and its history of noise measurements, validated as input from another host.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from typing import Any

import redis
from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.analysis.host_noise import (
    HostSide,
    host_table,
    noise_differences,
    noise_text,
    when,
)
from redis_benchmarks_spec.cli import datasink as datasink_cli
from redis_benchmarks_spec.cli.console import make_console, print_table
from redis_benchmarks_spec.cli.errors import EXIT_USAGE, UsageError
from redis_benchmarks_spec.datasink import platforms as store
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.store import DatasinkConfig, connect
from redis_benchmarks_spec.results.platform import (
    NOT_AVAILABLE,
    IntrinsicLatency,
    PlatformRecord,
    valid_name,
)

DEFAULT_NOISE_SECONDS = 2.0
NOISE_SECONDS_ENV = "RBS_NOISE_SECONDS"
MAX_NOISE_SECONDS = 600.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("platform", help="record this host's platform description and noise; "
                                        "show a platform's records", description=__doc__)
    psub = p.add_subparsers(dest="platform_command", metavar="ACTION", required=True)
    rec = psub.add_parser("record", help="describe this host, measure its intrinsic latency "
                                         "and store both under --platform")
    rec.add_argument("--platform", required=True, help="platform name, e.g. icelake-2s")
    add_noise_args(rec)
    rec.add_argument("--format", choices=("table", "json"), default="table")
    rec.set_defaults(func=cmd_record)
    show = psub.add_parser("show", help="a platform's newest record and its noise history")
    show.add_argument("name", metavar="PLATFORM")
    show.add_argument("--last", type=int, default=10, help="noise measurements shown")
    show.add_argument("--format", choices=("table", "json"), default="table")
    show.set_defaults(func=cmd_show)
    for parser in (rec, show):
        datasink_cli.add_remote_args(parser)
        datasink_cli.add_embedded_args(parser)


def add_noise_args(p: argparse.ArgumentParser) -> None:
    """The noise measurement's flags (``rbs platform record`` and ``rbs agent``)."""
    g = p.add_argument_group("host noise")
    g.add_argument("--noise-seconds", type=float, default=None, metavar="S",
                   help="seconds of each intrinsic-latency measurement (the loop, then "
                        f"redis-cli --intrinsic-latency; default ${NOISE_SECONDS_ENV}, else "
                        f"{DEFAULT_NOISE_SECONDS:g}; 0: not measured)")
    g.add_argument("--noise-cpu", type=int, default=None, metavar="CPU",
                   help="CPU to measure on (default: the first one this process may use, "
                        "or an agent's first --cpus: where the first server runs)")
    g.add_argument("--no-noise", action="store_true", help="record the description only")


def noise_seconds(args: argparse.Namespace) -> float:
    """How long to measure (0: not at all), checked; one line naming the flag otherwise."""
    if args.no_noise:
        return 0.0
    flag, value = "--noise-seconds", args.noise_seconds
    if value is None:
        flag, raw = f"${NOISE_SECONDS_ENV}", os.environ.get(NOISE_SECONDS_ENV)
        try:
            value = DEFAULT_NOISE_SECONDS if raw is None else float(raw)
        except ValueError:
            raise UsageError(f"{flag} {raw!r}", "is not a number of seconds") from None
    if not 0 <= value <= MAX_NOISE_SECONDS:
        raise UsageError(f"{flag} {value:g}", f"must be from 0 to {MAX_NOISE_SECONDS:g}")
    if value and args.noise_cpu is not None and \
            args.noise_cpu not in os.sched_getaffinity(0):
        raise UsageError(f"--noise-cpu {args.noise_cpu}", "this process may not run there",
                         f"CPUs allowed: {sorted(os.sched_getaffinity(0))}")
    return float(value)


def measured_record(args: argparse.Namespace, recorded_by: str) -> PlatformRecord:
    """This host's record for ``args.platform``, with its noise unless ``--no-noise``."""
    from redis_benchmarks_spec.telemetry import platform_probe
    noise, seconds = None, noise_seconds(args)
    if seconds:
        try:
            noise = platform_probe.measure_noise(seconds, args.noise_cpu)
        except platform_probe.NoiseProbeError as exc:
            raise UsageError("intrinsic latency", str(exc)) from None
    return platform_probe.record(args.platform, recorded_by, noise)


def _client(args: argparse.Namespace) -> redis.Redis:
    """``--datasink``, else the embedded datasink (started when it is not running)."""
    config = datasink_cli.remote_config(args)
    if config is None:
        state = datasink_cli.start_embedded(EmbeddedDatasink(args.data_dir))
        return connect(DatasinkConfig(url=state.url or ""))
    datasink_cli.check_reachable(config)
    return connect(config)


def _print(args: argparse.Namespace, host: HostSide, extra: list[dict[str, Any]]) -> None:
    if args.format == "json":
        doc = {"record": host.description.to_dict() if host.description else None,
               "noise_history": extra}
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        return
    header, rows = host_table([host])
    table = Table(title=f"platform {host.platform}")
    for col in header:
        table.add_column(escape(col))
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    console = make_console()
    print_table(console, table)
    if extra:
        print_table(console, _history_table(extra))


def cmd_record(args: argparse.Namespace) -> int:
    """Run ``rbs platform record``."""
    if not valid_name(args.platform):
        raise UsageError(f"--platform {args.platform!r}", "is not a name ([A-Za-z0-9._:-]+)")
    record = measured_record(args, "rbs platform record")
    with _client(args) as client:
        store.write(client, record)
    _print(args, HostSide("recorded", record.platform, record,
                          record if record.noise else None), [])
    return 0


def _noise_history(records: list[PlatformRecord], last: int) -> list[dict[str, Any]]:
    """The last ``last`` measurements, each with what changed since the one before it
    (the rule of :mod:`analysis.host_noise`)."""
    measured = [r for r in records if r.noise is not None]
    out = []
    for i, record in enumerate(measured):
        changed = noise_differences(measured[i - 1], record) if i else []
        out.append({"recorded": when(record.recorded_ms), "host": record.host,
                    "governor": record.description.governor,
                    "turbo": record.description.turbo,
                    "noise": asdict(record.noise) if record.noise else None,
                    "changed_from_previous": changed})
    return out[-last:]


def _history_table(history: list[dict[str, Any]]) -> Table:
    table = Table(title="noise history (oldest first)")
    for col in ("recorded", "host", "governor", "turbo", "intrinsic latency",
                "changed from previous"):
        table.add_column(col)
    for entry in history:
        noise = IntrinsicLatency(**entry["noise"])
        cells = [entry["recorded"], entry["host"], entry["governor"] or NOT_AVAILABLE,
                 entry["turbo"] or NOT_AVAILABLE, noise_text(noise),
                 "; ".join(entry["changed_from_previous"]) or "no"]
        table.add_row(*(escape(cell) for cell in cells))  # text another host wrote
    return table


def cmd_show(args: argparse.Namespace) -> int:
    """Run ``rbs platform show``."""
    if args.last < 1:
        raise UsageError(f"--last {args.last}", "must be at least 1")
    with datasink_cli.datasink_client(args) as client:
        newest = store.latest(client, args.name)
        found = store.history(client, args.name)
        known = store.platforms(client)
    err = make_console(stderr=True)
    for problem in newest.problems + found.problems:
        err.print(problem, highlight=False, soft_wrap=True, markup=False)
    if not newest.records:
        err.print(f"rbs platform show: no valid record of {args.name} in the datasink "
                  f"(known: {', '.join(known) or 'none'})",
                  markup=False, highlight=False)
        return EXIT_USAGE
    measured = [r for r in found.records if r.noise is not None]
    host = HostSide("newest", args.name, newest.records[0], measured[-1] if measured else None)
    _print(args, host, _noise_history(found.records, args.last))
    return 0


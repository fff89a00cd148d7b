"""``--profilers`` and companions, shared by ``rbs run`` (plain and A/B) and ``rbs agent``."""

from __future__ import annotations

import argparse

from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.telemetry.profilers.base import ProfilerOptions
from redis_benchmarks_spec.telemetry.profilers.registry import NAMES, conflict, parse_profilers
from redis_benchmarks_spec.telemetry.window import WindowOptions


def add_profiling_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("profiling and telemetry")
    g.add_argument("--profilers", default="", metavar="A,B",
                   help=f"profile the measured window with these ({', '.join(NAMES)}); "
                        "profiled runs are flagged and their throughput is kept out of "
                        "regression history")
    g.add_argument("--profile-requests", type=int, default=ProfilerOptions.requests,
                   metavar="N", help="requests per client run when the server runs under "
                                     "callgrind (instructions profiler; default "
                                     f"{ProfilerOptions.requests:,}, the lab's: more do not "
                                     "steady the count)")
    g.add_argument("--write-preloads", action="store_true",
                   help="a server under callgrind writes its preload in every run, instead "
                        "of loading a snapshot of it written once per build by a plain server")
    g.add_argument("--instructions-method", choices=("auto", "callgrind", "perf"),
                   default="auto", help="instructions profiler: callgrind (any host) or perf "
                                        "stat -e instructions:u (hardware counters); auto "
                                        "picks perf where the host counts instructions")
    g.add_argument("--perf-frequency", type=int, default=ProfilerOptions.perf_frequency,
                   metavar="HZ", help="perf record sampling frequency")
    g.add_argument("--perf-call-graph", choices=("dwarf", "fp"),
                   default=ProfilerOptions.perf_call_graph,
                   help="perf record stack unwinding: dwarf (whole stacks of any binary, "
                        "~1.4 MB of perf.data per second) or fp (frame pointers: ~20x "
                        "smaller, but no callers in binaries built without them, such as "
                        "distributions' redis-server)")
    g.add_argument("--no-telemetry", action="store_true",
                   help="do not sample per-thread CPU, RSS and host context")


def window_options(args: argparse.Namespace) -> WindowOptions:
    """WindowOptions from the parsed flags; :class:`UsageError` names a bad flag and value."""
    text = getattr(args, "profilers", "")
    try:
        names = parse_profilers(text)
    except ValueError as exc:
        raise UsageError(f"--profilers {text}", str(exc).split(": ", 1)[-1]) from None
    requests = getattr(args, "profile_requests", ProfilerOptions.requests)
    if requests < 1:
        raise UsageError(f"--profile-requests {requests}", "must be at least 1")
    frequency = getattr(args, "perf_frequency", ProfilerOptions.perf_frequency)
    if not 1 <= frequency <= 10_000:
        raise UsageError(f"--perf-frequency {frequency}", "must be 1..10000 Hz")
    profilers = ProfilerOptions(
        names=names, requests=requests, perf_frequency=frequency,
        perf_call_graph=getattr(args, "perf_call_graph", ProfilerOptions.perf_call_graph),
        instructions_method=getattr(args, "instructions_method", "auto"),
        write_preloads=getattr(args, "write_preloads", False))
    clash = conflict(profilers)
    if clash:
        raise UsageError(f"--profilers {text}", clash,
                         "profile with perf-record and count instructions in separate runs")
    return WindowOptions(profilers=profilers, telemetry=not getattr(args, "no_telemetry", False))

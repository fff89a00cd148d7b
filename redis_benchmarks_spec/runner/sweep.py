"""``rbs run --sweep clients=1,8,64``: the selected suites once per value of one parameter,
each result labelled with the swept value (``RunResult.sweep``).

Client parameters are rewritten in each clientconfig's arguments (the suite's own value is
replaced, or the flag added): redis-benchmark ``-c`` / ``-P`` / ``--threads`` / ``-d``,
memtier_benchmark ``-c`` / ``--pipeline`` / ``-t`` / ``-d``. ``connections`` is the total
per client config: redis-benchmark ``-c N``, memtier ``-t`` x ``-c`` = N (the suite's
threads, fewer when they do not divide N). A ``clients`` or ``connections`` point raises the
limits it needs and follows the minimum rule (:mod:`runner.concurrency`). What-if knobs
(``server-cpus``, ``io-threads``, ``governor``) change the server instead
(:mod:`runner.knobs`). Every value runs in its own folder ``<param>-<value>/`` of the session.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from redis_benchmarks_spec.loadgen.pacing import PacingError
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.layout import RunPlace, run_folder
from redis_benchmarks_spec.runner import knobs, rate_sweep
from redis_benchmarks_spec.runner.concurrency import (
    ConcurrencyError,
    PointLimits,
    PointRule,
    PointSetup,
    check_reachable,
    suite_connections,
)
from redis_benchmarks_spec.runner.session import PlannedTest, SessionConfig, run_suites
from redis_benchmarks_spec.suites.suite import Suite

#: parameter -> tool -> (flag written, every spelling the tool accepts)
FLAGS: dict[str, dict[str, tuple[str, ...]]] = {
    "clients": {"redis-benchmark": ("-c",), "memtier_benchmark": ("-c", "--clients")},
    "pipeline": {"redis-benchmark": ("-P",), "memtier_benchmark": ("--pipeline",)},
    "threads": {"redis-benchmark": ("--threads",), "memtier_benchmark": ("-t", "--threads")},
    "datasize": {"redis-benchmark": ("-d",), "memtier_benchmark": ("-d", "--data-size")},
}
CONCURRENCY = ("clients", "connections")
PARAMS = (*FLAGS, "connections", "rate", *knobs.KNOBS)
ALIASES = {"data-size": "datasize", "data_size": "datasize", "conns": "connections",
           "server_cpus": "server-cpus", "io_threads": "io-threads"}
MAX_VALUE = 1_000_000


class SweepError(ValueError):
    """A --sweep that cannot be run, with the reason."""


@dataclass(frozen=True)
class Sweep:
    param: str
    values: tuple[int | str, ...]
    rule: PointRule = field(default_factory=PointRule)  # clients/connections points only


def parse_sweep(text: str, rule: PointRule | None = None) -> Sweep:
    """``clients=1,8,64`` (positive increasing integers), ``governor=NAME,NAME``, or
    ``rate=5000,10000`` / ``rate=10%,50%`` (:mod:`runner.rate_sweep`)."""
    head, _, rest = text.partition("=")
    if head.strip().lower() == "rate":
        return _rate_sweep(rest, rule)
    match = re.fullmatch(r"\s*([A-Za-z_-]+)\s*=\s*([A-Za-z0-9,\s_-]+)", text)
    if not match:
        raise SweepError("expected PARAM=V1,V2,... e.g. clients=1,8,64")
    param = ALIASES.get(match.group(1).lower(), match.group(1).lower())
    if param not in PARAMS:
        raise SweepError(f"unknown parameter {match.group(1)!r} (one of {', '.join(PARAMS)})")
    words = match.group(2).replace(" ", "").split(",")
    if "" in words:
        raise SweepError("an empty value between commas (e.g. clients=1,,8)")
    if len(words) < 2:
        raise SweepError("give at least 2 values")
    values = _names(words) if param == "governor" else _numbers(words)
    for value in values:
        reason = knobs.unavailable(param, value) if param in knobs.KNOBS else ""
        if reason:
            raise SweepError(f"{param}={value} is not available on this host: {reason}")
    return Sweep(param, values, rule or PointRule())


def _rate_sweep(text: str, rule: PointRule | None) -> Sweep:
    words = text.replace(" ", "").split(",")
    if len(words) < 2:
        raise SweepError("give at least 2 values")
    try:
        return Sweep("rate", rate_sweep.parse_rates(words), rule or PointRule())
    except ValueError as exc:
        raise SweepError(str(exc)) from None


def _numbers(words: list[str]) -> tuple[int, ...]:
    if not all(w.isdigit() for w in words):
        raise SweepError(f"values must be integers between 1 and {MAX_VALUE:,}")
    values = tuple(int(w) for w in words)
    if any(v < 1 or v > MAX_VALUE for v in values):
        raise SweepError(f"each value must be between 1 and {MAX_VALUE:,}")
    if list(values) != sorted(set(values)):
        raise SweepError("values must increase")
    return values


def _names(words: list[str]) -> tuple[str, ...]:
    if len(set(words)) != len(words) or not all(re.fullmatch(r"[a-z_]+", w) for w in words):
        raise SweepError("governor values are distinct names such as performance,powersave")
    return tuple(words)


def swept_arguments(arguments: str, tool: str, param: str, value: int) -> str:
    """``arguments`` with ``param`` set to ``value`` (replacing any spelling of its flag).

    The value goes where the suite's own flag was, or first when the suite has none:
    redis-benchmark reads everything after the command as the command's arguments
    (``GET key -c 8`` is a GET with three arguments), so nothing may be appended.
    """
    flags = FLAGS[param].get(tool)
    if flags is None:
        raise SweepError(f"{tool} has no {param} parameter to sweep")
    argv, out, skip, placed = shlex.split(arguments), [], False, False
    setting = [flags[0], str(value)]
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        spelled = (arg in flags and i + 1 < len(argv)) or \
            any(arg.startswith(f"{f}=") for f in flags if f.startswith("--"))
        if spelled:
            skip = "=" not in arg
            out += [] if placed else setting
            placed = True
            continue
        out.append(arg)
    return shlex.join(out if placed else [*setting, *out])


def memtier_connections(arguments: str, total: int) -> str:
    """memtier arguments opening ``total`` connections: ``-t`` x ``-c`` = total, with the
    suite's threads (default 4) or the largest count below them that divides ``total``."""
    argv = shlex.split(arguments)
    threads = next((int(argv[i + 1]) for i, a in enumerate(argv[:-1])
                    if a in ("-t", "--threads") and argv[i + 1].isdigit()), 4)
    threads = max(1, min(threads, total))
    while total % threads:
        threads -= 1
    with_threads = swept_arguments(arguments, "memtier_benchmark", "threads", threads)
    return swept_arguments(with_threads, "memtier_benchmark", "clients", total // threads)


def swept_suite(suite: Suite, param: str, value: int | str) -> Suite:
    """The suite with every clientconfig's ``param`` set to ``value`` (knobs: unchanged)."""
    if param in knobs.KNOBS:
        return suite
    if param == "rate":
        return suite if rate_sweep.is_percent(str(value)) else \
            rate_sweep.paced_suite(suite, float(value))
    number = int(value)
    if param == "connections":
        configs = [replace(c, arguments=memtier_connections(c.arguments, number)
                           if c.tool == "memtier_benchmark" else
                           swept_arguments(c.arguments, c.tool, "clients", number))
                   for c in suite.clientconfigs]
    else:
        configs = [replace(c, arguments=swept_arguments(c.arguments, c.tool, param, number))
                   for c in suite.clientconfigs]
    return replace(suite, clientconfigs=configs)


@dataclass
class Point:
    """One value of a sweep, ready to run: its session settings, suites and records."""

    config: SessionConfig
    suites: list[Suite]
    setup: PointSetup | None = None
    applied: str = ""  # what a knob changed, in words


def plan_point(config: SessionConfig, suites: list[Suite], sweep: Sweep,
               value: int | str) -> Point:
    """The point's session settings; raises :class:`SweepError` for a point this host or
    tool cannot run (checked for every point before the first one runs)."""
    place = RunPlace(sweep_param=sweep.param, sweep_value=str(value))
    cfg = replace(config, results_dir=run_folder(config.results_dir, place),
                  sweep={"param": sweep.param, "value": str(value)})
    problems = [rate_sweep.pacing_problem(s, config.topologies) for s in suites] \
        if sweep.param == "rate" else []
    if any(problems):
        raise SweepError(next(p for p in problems if p))
    try:
        swept = [swept_suite(s, sweep.param, value) for s in suites]
    except PacingError as exc:
        raise SweepError(str(exc)) from None
    if sweep.param in CONCURRENCY:
        return _concurrency_point(cfg, swept, sweep.rule)
    if sweep.param in ("server-cpus", "io-threads"):
        point = _cpu_point(cfg, swept, sweep.param, int(value))
    else:
        point = Point(cfg, swept, applied=f"governor {value}" if sweep.param == "governor"
                      else "")
    if point.applied:  # the runner labels every result with it
        point.config = replace(point.config, sweep={**cfg.sweep, "applied": point.applied})
    return point


def _concurrency_point(cfg: SessionConfig, suites: list[Suite], rule: PointRule) -> Point:
    count = max((suite_connections(s) for s in suites), default=1)
    try:
        check_reachable(suites, count)
    except ConcurrencyError as exc:
        raise SweepError(str(exc)) from None
    catalogue = cfg.catalogue()
    primaries = max((catalogue[t].primaries for s in suites for t in s.topologies
                     if t in catalogue and catalogue[t].is_cluster), default=1)
    limits = PointLimits.for_connections(count, primaries)
    for who, grant in (("the server", limits.server_nofile),
                       ("the client tool", limits.client_nofile)):
        if grant.granted < grant.needed:
            raise SweepError(f"{count:,} connections: {who} needs {grant.needed:,} open "
                             f"files; {grant.how}")
    setup = PointSetup(rule, limits, cfg.test_time)
    return Point(replace(cfg, server_args=[*cfg.server_args, *limits.server_args()],
                         point=setup), suites, setup)


def _cpu_point(cfg: SessionConfig, suites: list[Suite], knob: str, value: int) -> Point:
    catalogue = cfg.catalogue()
    if knob == "server-cpus":
        return Point(replace(cfg, topologies=knobs.with_node_cpus(catalogue, value)), suites,
                     applied=f"{value} core(s) per server node")
    cores = value + 1 if value > 1 else 1
    args = knobs.io_threads_args(value)
    return Point(replace(cfg, server_args=[*cfg.server_args, *args],
                         topologies=knobs.with_node_cpus(catalogue, cores)), suites,
                 applied=f"{' '.join(args)} on {cores} core(s) per server node")


def plan_points(config: SessionConfig, suites: list[Suite], sweep: Sweep) -> list[Point]:
    return [plan_point(config, suites, sweep, v) for v in sweep.values]


@contextlib.contextmanager
def _knob_applied(sweep: Sweep, value: int | str) -> Iterator[None]:
    if sweep.param != "governor":
        yield
        return
    with knobs.governor_set(str(value)):
        yield


def run_sweep(config: SessionConfig, suites: list[Suite], sweep: Sweep,
              on_result: Callable[[RunResult], None] | None = None,
              on_start: Callable[[PlannedTest], None] | None = None,
              stop: threading.Event | None = None) -> list[RunResult]:
    """Every suite at every value, values in the order given."""
    results: list[RunResult] = []
    if sweep.param == "rate" and rate_sweep.is_percent(str(sweep.values[0])):
        return rate_sweep.run_percent_sweep(
            config, suites, tuple(str(v) for v in sweep.values),
            lambda cfg, batch: run_suites(cfg, batch, on_result=on_result, stop=stop,
                                          on_start=on_start))
    for value, point in zip(sweep.values, plan_points(config, suites, sweep)):
        if stop is not None and stop.is_set():
            break
        with _knob_applied(sweep, value):
            batch = run_suites(point.config, point.suites, on_result=None, stop=stop,
                               on_start=on_start)
        for r in batch:
            if on_result:
                on_result(r)
        results += batch
    return results

"""``rbs run --sweep clients=1,8,64``: the selected suites once per value of one client
parameter, each result labelled with the swept value (``RunResult.sweep``).

The parameter is rewritten in each clientconfig's arguments (the suite's own value is
replaced, or the flag added): redis-benchmark ``-c`` / ``-P`` / ``--threads`` / ``-d``,
memtier_benchmark ``-c`` / ``--pipeline`` / ``-t`` / ``-d``. Every value runs in its own
folder ``<param>-<value>/`` of the session.
"""

from __future__ import annotations

import re
import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.layout import RunPlace, run_folder
from redis_benchmarks_spec.runner.session import PlannedTest, SessionConfig, run_suites
from redis_benchmarks_spec.suites.suite import Suite

#: parameter -> tool -> (flag written, every spelling the tool accepts)
FLAGS: dict[str, dict[str, tuple[str, ...]]] = {
    "clients": {"redis-benchmark": ("-c",), "memtier_benchmark": ("-c", "--clients")},
    "pipeline": {"redis-benchmark": ("-P",), "memtier_benchmark": ("--pipeline",)},
    "threads": {"redis-benchmark": ("--threads",), "memtier_benchmark": ("-t", "--threads")},
    "datasize": {"redis-benchmark": ("-d",), "memtier_benchmark": ("-d", "--data-size")},
}
ALIASES = {"data-size": "datasize", "data_size": "datasize", "connections": "clients"}
MAX_VALUE = 1_000_000


class SweepError(ValueError):
    """A --sweep that cannot be run, with the reason."""


@dataclass(frozen=True)
class Sweep:
    param: str
    values: tuple[int, ...]


def parse_sweep(text: str) -> Sweep:
    """``clients=1,8,64`` (values positive integers, increasing)."""
    match = re.fullmatch(r"\s*([A-Za-z_-]+)\s*=\s*([0-9,\s]+)", text)
    if not match:
        raise SweepError("expected PARAM=V1,V2,... e.g. clients=1,8,64")
    param = ALIASES.get(match.group(1).lower(), match.group(1).lower())
    if param not in FLAGS:
        raise SweepError(f"unknown parameter {match.group(1)!r} (one of {', '.join(FLAGS)})")
    values = tuple(int(v) for v in match.group(2).replace(" ", "").split(",") if v)
    if len(values) < 2 or any(v < 1 or v > MAX_VALUE for v in values):
        raise SweepError(f"give at least 2 values between 1 and {MAX_VALUE:,}")
    if list(values) != sorted(set(values)):
        raise SweepError("values must increase")
    return Sweep(param, values)


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


def swept_suite(suite: Suite, param: str, value: int) -> Suite:
    """The suite with every clientconfig's ``param`` set to ``value``."""
    configs = [replace(c, arguments=swept_arguments(c.arguments, c.tool, param, value))
               for c in suite.clientconfigs]
    return replace(suite, clientconfigs=configs)


def run_sweep(config: SessionConfig, suites: list[Suite], sweep: Sweep,
              on_result: Callable[[RunResult], None] | None = None,
              on_start: Callable[[PlannedTest], None] | None = None,
              stop: threading.Event | None = None) -> list[RunResult]:
    """Every suite at every value, values in increasing order."""
    results: list[RunResult] = []
    for value in sweep.values:
        if stop is not None and stop.is_set():
            break
        place = RunPlace(sweep_param=sweep.param, sweep_value=str(value))
        cfg = replace(config, results_dir=run_folder(config.results_dir, place),
                      sweep={"param": sweep.param, "value": str(value)})
        batch = run_suites(cfg, [swept_suite(s, sweep.param, value) for s in suites],
                           on_result=None, stop=stop, on_start=on_start)
        for r in batch:
            if on_result:
                on_result(r)
        results += batch
    return results

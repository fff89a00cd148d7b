"""A platform's agent settings file (``rbs agent --platform-config FILE``).

Today it holds one section, the budget that lets the agent answer a pull-request event with
interleaved baseline/PR pairs until each test is decided (``--until-decided`` of ``rbs run``)::

    until_decided:
      max_repetitions: 40      # most pairs per test (2..1000)
      time_budget: 30m         # start no pair after this long (s, m or h; at most 24h)
      round_repetitions: 4     # pairs added per round to the tests still UNKNOWN (1..100)
      first_round: 6           # pairs of the first round (2..max_repetitions; default 6)
      alpha: 0.05              # total false-positive rate over every look (0 < alpha < 0.5)
      spending: obrien-fleming # or pocock (Lan-DeMets spending function)
      noise_floor: 2           # percent: smaller changes are NO CHANGE (0..100); without
                               # it, each test's floor from this host's calibration A/A
                               # sessions (analysis/noise.py), else 5 % for timed metrics
      metric: auto             # or a metric name; auto: server CPU per command when the
                               # client was the bottleneck, else Ops/sec (runner.metric_choice)
      base_runs: 2             # counted runs of each test at a push of the tracked branch
                               # (1..10; default 1): the stored base a pull request's counts
                               # are compared with; two let the base's own spread show
      stored_base: true        # false: a pull request counts its base again in fresh
                               # interleaved pairs, never its push's counts (what the
                               # stored base is checked against: benchmarks/lab_replay.py)
      count_lanes: auto        # instruction-count tests side by side on disjoint cores:
                               # auto (as many as the host's cores give), or 1..256 (1: one
                               # after another); timed runs never (runner/count_lanes.py)

A ``calibration`` section runs A/A sessions (the same redis-server on both sides) of a few
suites at agent start, every ``every``, and when the host fingerprint changed; their
offsets set each test's timed noise floor on this host (analysis/noise.py)::

    calibration:
      tests: [redis-benchmark-1Kkeys-string-get-100B, memtier_benchmark-1Mkeys-string-get-10B]
      pairs: 8                 # pairs per calibration session (3..100)
      every: 168h              # recalibrate after this long (at most 90 days)
      test_time: 2             # seconds per run (1..600)
      server: /usr/bin/redis-server   # optional: the agent's redis-server otherwise
A ``selection`` section caps the suites a pull request runs (those that execute its
changed code, most exercised first; see ``analysis/suite_selection.py``)::

    selection:
      max_suites: 12
      sentinels: [redis-benchmark-1Kkeys-string-get-100B]   # optional

With ``sentinels`` (a list of suite names, possibly empty), a tracked branch's push is
selected too: it runs those suites and the ones that execute the code the push changes
(against the profile map of the commit pushed before it); without it a push runs every suite.

No ``until_decided`` section (or no file): the agent runs each suite once per event, as
before. A ``client_host`` section runs the client tools on another host over SSH (see
``runner/client_host.py`` and docs/two-hosts.md)::

    client_host:
      ssh: loadgen-1                 # [user@]host, or a Host of ssh_config
      server_address: 10.0.0.11      # this host's address on the benchmark network
      ssh_config: /etc/rbs/ssh_config  # optional: ssh -F (port, key, known hosts, user)
      tools: {memtier_benchmark: /opt/memtier/bin/memtier_benchmark}  # optional
      cpus: [0, 1, 2, 3]             # optional: client CPUs on that host
 The file is the operator's, but it is read like any input that could be wrong:
bounded YAML, unknown keys refused, every value checked for type and range, and the error
names the file and the key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from redis_benchmarks_spec.analysis.spending import OBRIEN_FLEMING, SPENDING_FUNCTIONS
from redis_benchmarks_spec.runner.client_host import ClientHostConfig, parse_client_host
from redis_benchmarks_spec.suites import yaml_safe

DEFAULT_METRIC = "auto"
MAX_BUDGET_S = 24 * 3600
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smh]?)$")
_METRIC = re.compile(r"^[A-Za-z0-9._/:%-]{1,200}$")
_KNOWN = {"until_decided", "client_host", "calibration", "selection"}
_KNOWN_CALIBRATION = {"tests", "pairs", "every", "test_time", "server"}
_SUITE_NAME = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")
MAX_CALIBRATION_EVERY_S = 90 * 24 * 3600
_KNOWN_BUDGET = {"max_repetitions", "time_budget", "round_repetitions", "first_round",
                 "alpha", "spending", "noise_floor", "metric", "base_runs",
                 "stored_base", "count_lanes"}


class PlatformConfigError(ValueError):
    """The platform settings file cannot be used; the message names the file and key."""


@dataclass(frozen=True)
class UntilDecidedBudget:
    """How far the agent may go for one pull-request event (see the module docstring)."""

    max_repetitions: int = 40
    time_budget_s: float | None = None
    round_repetitions: int = 4
    first_round: int = 6
    alpha: float = 0.05
    spending: str = OBRIEN_FLEMING
    noise_floor_pct: float | None = None  # None: calibrated per test, else the default
    metric: str = DEFAULT_METRIC
    # counted runs of each test a push makes: the stored base of its pull requests' counts
    # (runner.ab_stored); one run is one hash seed, whose draw the head's spread cannot show
    base_runs: int = 1
    # a pull request's counts compared with its base's push (True) or with fresh pairs
    stored_base: bool = True
    # instruction-count tests side by side on disjoint cores: 0 auto, 1 off (count_lanes.py)
    count_lanes: int = 0


@dataclass(frozen=True)
class CalibrationConfig:
    """A/A sessions that set this platform's timed noise floors (agent/calibration.py): at
    agent start, every ``every_s``, and when the host fingerprint changes."""

    tests: tuple[str, ...]
    pairs: int = 8
    every_s: float = 7 * 24 * 3600
    test_time: int = 2
    server: str | None = None  # None: the agent's redis-server


@dataclass(frozen=True)
class PlatformConfig:
    """What the file allows; ``until_decided`` None means "no A/B budget"."""

    until_decided: UntilDecidedBudget | None = None
    # the load generator's host: tools run there over SSH (runner/client_host.py)
    client_host: ClientHostConfig | None = None
    calibration: CalibrationConfig | None = None
    # most suites a pull request runs (those executing its changed code, most exercised
    # first: analysis/suite_selection.py); None: no cap
    max_suites: int | None = None
    # the suites every push of a tracked branch runs besides those its change reaches;
    # None: a push runs every suite
    sentinels: tuple[str, ...] | None = None


def parse_duration(text: str) -> float:
    """``900``, ``90s``, ``30m``, ``2h`` as seconds; ``ValueError`` otherwise."""
    found = _DURATION.match(text.strip().lower())
    if not found:
        raise ValueError(f"time_budget: {text!r} is not a duration (e.g. 900, 90s, 30m, 2h)")
    return float(found.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[found.group(2)]


def _int(raw: dict[str, Any], key: str, low: int, high: int, default: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{key}: {value!r} is not a whole number from {low} to {high}")
    return value


def _bool(raw: dict[str, Any], key: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise TypeError(f"{key}: {value!r} is not true or false")
    return value


def _float(raw: dict[str, Any], key: str, low: float, high: float, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not low <= value <= high:
        raise ValueError(f"{key}: {value!r} is not a number from {low} to {high}")
    return float(value)


def _budget_seconds(raw: dict[str, Any]) -> float | None:
    value = raw.get("time_budget")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"time_budget: {value!r} is not a duration")
    seconds = float(value) if not isinstance(value, str) else parse_duration(value)
    if not 0 < seconds <= MAX_BUDGET_S:
        raise ValueError(f"time_budget: {value!r} must be more than 0 and at most 24h")
    return seconds


def _choice(raw: dict[str, Any], key: str, pattern: re.Pattern[str] | None,
            choices: tuple[str, ...], default: str) -> str:
    value = raw.get(key, default)
    ok = isinstance(value, str) and (value in choices if choices else
                                     pattern is not None and pattern.match(value))
    if not ok:
        wanted = f"one of {', '.join(choices)}" if choices else "a metric name"
        raise ValueError(f"{key}: {value!r} is not {wanted}")
    return str(value)


T = TypeVar("T")


def _section(name: str, raw: Any, known: Iterable[str],
             build: Callable[[dict[str, Any]], T]) -> T:
    """One section of the file: a mapping of known keys, built by ``build``; every error
    (``ValueError``/``TypeError``) names ``<name>.<key>``."""
    if not isinstance(raw, dict):
        raise TypeError(f"{name}: expected a mapping of settings")
    known = sorted(known)
    unknown = sorted(str(k) for k in raw if k not in known)
    if unknown:
        raise ValueError(f"{name}: unknown key {unknown[0]!r} (known: {', '.join(known)})")
    try:
        return build(raw)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{name}.{exc}") from None


def parse_budget(raw: Any) -> UntilDecidedBudget:
    """The ``until_decided`` section, checked; ``ValueError``/``TypeError`` naming the key."""
    return _section("until_decided", raw, _KNOWN_BUDGET, _budget)


def _budget(raw: dict[str, Any]) -> UntilDecidedBudget:
    most = _int(raw, "max_repetitions", 2, 1000, 40)
    return UntilDecidedBudget(
        max_repetitions=most, time_budget_s=_budget_seconds(raw),
        round_repetitions=_int(raw, "round_repetitions", 1, 100, 4),
        first_round=_int(raw, "first_round", 2, most, min(6, most)),
        alpha=_float(raw, "alpha", 1e-6, 0.499, 0.05),
        spending=_choice(raw, "spending", None, SPENDING_FUNCTIONS, OBRIEN_FLEMING),
        noise_floor_pct=None if raw.get("noise_floor") is None
        else _float(raw, "noise_floor", 0.0, 100.0, 0.0),
        metric=_choice(raw, "metric", _METRIC, (), DEFAULT_METRIC),
        base_runs=_int(raw, "base_runs", 1, 10, 1),
        stored_base=_bool(raw, "stored_base", True),
        count_lanes=_lanes(raw))


def _lanes(raw: dict[str, Any]) -> int:
    """``count_lanes``: ``auto`` (0) or a whole number of lanes from 1 to 256."""
    if raw.get("count_lanes", "auto") == "auto":
        return 0
    return _int(raw, "count_lanes", 1, 256, 0)


def parse(raw: Any) -> PlatformConfig:
    """A loaded document as a :class:`PlatformConfig` (an empty file allows nothing)."""
    if raw is None:
        return PlatformConfig()
    if not isinstance(raw, dict):
        raise TypeError("expected a mapping at the top level")
    unknown = sorted(str(k) for k in raw if k not in _KNOWN)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_KNOWN))})")
    section = raw.get("until_decided")
    calibration = raw.get("calibration")
    return PlatformConfig(until_decided=None if section is None else parse_budget(section),
                          client_host=_client_host(raw.get("client_host")),
                          calibration=None if calibration is None
                          else parse_calibration(calibration),
                          **_selection(raw.get("selection")))


def parse_calibration(raw: Any) -> CalibrationConfig:
    """The ``calibration`` section, checked; errors name ``calibration.<key>``."""
    return _section("calibration", raw, _KNOWN_CALIBRATION, _calibration)


def _calibration(raw: dict[str, Any]) -> CalibrationConfig:
    tests = raw.get("tests")
    if not isinstance(tests, list) or not 1 <= len(tests) <= 50 or \
            not all(isinstance(t, str) and _SUITE_NAME.match(t) for t in tests):
        raise ValueError(f"tests: {tests!r} is not a list of 1 to 50 suite names")
    every = raw.get("every", "168h")
    every_s = float(every) if isinstance(every, (int, float)) and \
        not isinstance(every, bool) else parse_duration(str(every))
    if not 0 < every_s <= MAX_CALIBRATION_EVERY_S:
        raise ValueError(f"every: {every!r} must be more than 0 and at most 90 days")
    server = raw.get("server")
    if server is not None and (not isinstance(server, str) or not server.startswith("/")):
        raise ValueError(f"server: {server!r} is not an absolute path")
    return CalibrationConfig(tuple(tests), _int(raw, "pairs", 3, 100, 8), every_s,
                             _int(raw, "test_time", 1, 600, 2), server)


def _selection(raw: Any) -> dict[str, Any]:
    """``selection: {max_suites: N, sentinels: [names]}``: the pull-request suite budget
    (1..10000) and the suites every tracked-branch push runs."""
    if raw is None:
        return {}
    return _section("selection", raw, ("max_suites", "sentinels"), lambda section: {
        "max_suites": None if section.get("max_suites") is None
        else _int(section, "max_suites", 1, 10_000, 10_000),
        "sentinels": _sentinels(section.get("sentinels", None))})


def _sentinels(raw: Any) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) > 1000 or \
            not all(isinstance(n, str) and _SUITE_NAME.match(n) for n in raw):
        raise ValueError(f"sentinels: {str(raw)[:80]!r} is not a list of suite names")
    return tuple(raw)


def _client_host(raw: Any) -> ClientHostConfig | None:
    if raw is None:
        return None
    try:
        return parse_client_host(raw)
    except (ValueError, TypeError) as exc:
        keyed = not str(exc).startswith(("unknown key", "expected"))
        raise type(exc)(f"client_host{'.' if keyed else ': '}{exc}") from None


def load(path: Path) -> PlatformConfig:
    """The settings in ``path``; :class:`PlatformConfigError` naming the file and key."""
    try:
        return parse(yaml_safe.load_file(path))
    except OSError as exc:
        raise PlatformConfigError(f"{path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise PlatformConfigError(f"{path}: not YAML: {' '.join(str(exc).split())}") from None
    except (ValueError, TypeError) as exc:  # YamlRejected, or a key's value is wrong
        raise PlatformConfigError(f"{path}: {exc}") from None

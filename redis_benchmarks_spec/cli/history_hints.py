"""What ``rbs history`` says when a query finds no series: what the datasink does hold for
that test (branches, versions, platforms, swept values) and which flag to pass."""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from redis_benchmarks_spec.analysis.history import HistoryQuery
from redis_benchmarks_spec.datasink import keys, reader


@dataclass
class Found:
    """Label values of the series a test has for one metric, by side and platform."""

    branches: set[str] = field(default_factory=set)
    versions: set[str] = field(default_factory=set)
    hashes: int = 0
    platforms: set[str] = field(default_factory=set)  # on the query's branch
    swept: dict[str, str] = field(default_factory=dict)  # swept test name -> value
    known_test: bool = True  # the datasink or the suites folder knows a test of that name
    suite_note: str = ""  # where the suites were looked for, when it does not


def found_for(client: redis.Redis, query: HistoryQuery) -> Found:
    """What exists for ``query.test`` and ``query.metric`` (two TS.MGET)."""
    found = Found()
    test = keys.label_value(query.test)
    metric = f"{keys.LABEL_METRIC}={keys.label_value(query.metric)}"
    names = [keys.LABEL_BY, "branch", "version", keys.LABEL_PLATFORM]
    for labels in reader.series_labels(client, [f"{keys.LABEL_TEST_NAME}={test}", metric],
                                       names):
        kind = labels.get(keys.LABEL_BY)
        if kind == "branch":
            found.branches.add(labels.get("branch", ""))
            if labels.get("branch") == keys.label_value(query.branch):
                found.platforms.add(labels.get(keys.LABEL_PLATFORM, ""))
        elif kind == "version":
            found.versions.add(labels.get("version", ""))
        elif kind == "hash":
            found.hashes += 1
    found.swept = swept_values(client, query)
    if not (found.branches or found.versions or found.hashes or found.swept):
        found.known_test, found.suite_note = _test_known(client, query.test)
    return found


def _test_known(client: redis.Redis, test: str) -> tuple[bool, str]:
    """Whether any scope of the datasink lists ``test`` (under any metric) or the default
    suites folder has a suite of that name; and where the suites were looked for."""
    if any(test in reader.list_tests(client, scope) for scope in reader.scopes(client)):
        return True, ""
    from redis_benchmarks_spec.suites.catalog import default_suites_dir, load_catalog
    folder = default_suites_dir()
    try:
        there = load_catalog(folder).by_name(test) is not None
    except (OSError, ValueError):
        there = False
    return there, f"none in {folder}"


def swept_values(client: redis.Redis, query: HistoryQuery) -> dict[str, str]:
    """The series of ``query.test`` swept on ``query.branch``: swept test name -> value."""
    swept = reader.series_labels(
        client, [f"{keys.LABEL_SWEEP_OF}={keys.label_value(query.test)}",
                 f"{keys.LABEL_METRIC}={keys.label_value(query.metric)}",
                 f"{query.side[0]}=" + keys.label_value(query.side[1])],
        [keys.LABEL_TEST_NAME, keys.LABEL_SWEEP_VALUE])
    return {s[keys.LABEL_TEST_NAME]: s.get(keys.LABEL_SWEEP_VALUE, "") for s in swept
            if keys.LABEL_TEST_NAME in s}


def flag(found: Found, query: HistoryQuery) -> str:
    """The flag :func:`hint` is about."""
    if query.platform and found.platforms and query.platform not in found.platforms:
        return f"--platform {query.platform}"
    return "--test/--metric/--branch"


def swept_tests(swept: dict[str, str]) -> list[str]:
    """The swept series' test names (:func:`swept_values`) in increasing order of value."""
    def value(name: str) -> float:
        try:
            return float(swept[name])
        except ValueError:
            return float("inf")
    return sorted(swept, key=value)


def pass_swept(swept: dict[str, str]) -> str:
    """Which ``--test`` to pass for a swept value: ``pass --test T.clients-1 (or ...)``."""
    names = swept_tests(swept)
    return f"pass --test {names[0]} (or {', '.join(names[1:4])})"


def hint(found: Found, query: HistoryQuery) -> str:
    """What to pass instead, in one clause."""
    def listed(values: set[str]) -> str:
        return ", ".join(sorted(values))

    if found.swept:
        return f"it was swept: {pass_swept(found.swept)}"
    if not (found.branches or found.versions or found.hashes):
        if not found.known_test:
            return (f"no suite named {query.test} has results in the datasink, and "
                    f"{found.suite_note}: `rbs suites list` names the suites, `rbs datasink "
                    "status` what was pushed")
        return ("the datasink holds no series of this test and metric: `rbs datasink status` "
                "lists what was pushed; a session kept on disk goes in with `rbs datasink push "
                "DIR`")
    if query.platform and found.platforms and query.platform not in found.platforms:
        return f"on {query.branch} it ran on platform {listed(found.platforms)}: pass --platform"
    if query.branch in found.branches:
        return "it has series on that branch, but none of that --topology / --build-variant"
    if found.branches:
        return f"branches that have it: {listed(found.branches)}: pass --branch"
    if query.side[0] != "branch":
        return (f"it has series on branches {listed(found.branches) or 'none'} and versions "
                f"{listed(found.versions) or 'none'}: pass --branch or --version")
    if found.versions:
        return (f"its runs carry no branch, so they are filed by release version "
                f"{listed(found.versions)}: pass --version {max(found.versions)}")
    return ("its runs carry no branch, so they are filed by commit only: pass --hash SHA "
            "(the full sha; `rbs run --branch NAME` gives later runs a branch history)")

"""Typed queries over the datasink for compare and reports.

Series are found by label filters (``TS.MRANGE ... FILTER``) built from the same definitions
the writer uses (:mod:`redis_benchmarks_spec.datasink.keys`); listing uses the index sets.
Nothing here scans key names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import redis

from redis_benchmarks_spec.common.name_filter import NameFilter
from redis_benchmarks_spec.datasink import keys, wire

Point = tuple[int, float]

# A ``test_name=(a,b,...)`` filter costs RedisTimeSeries a union of every listed test's
# series (all metrics, all sides): ~4 ms per name on 620k series, 400 ms for 500 names,
# against ~35 ms for fetching one metric of every test. Longer lists are applied here.
MAX_SERVER_TEST_LIST = 8


class AmbiguousSelectorError(LookupError):
    """A selector matched several series of one test (say, two platforms); names them."""


#: the order of a by.hash read's filters (:meth:`SeriesSelector.filters`)
_HASH_FILTER_ORDER = ("hash", keys.LABEL_METRIC, keys.LABEL_PLATFORM, keys.LABEL_BY)


@dataclass(frozen=True)
class SeriesSelector:
    """Which series to read: a metric of a test on one side, narrowed by context labels.

    ``test_name`` may be None for :func:`series_for_tests`, and ``tests_regexp`` narrows the
    tests there (matched against the index sets, then one ``test_name=(...)`` filter). Unset
    context fields match any value. ``last_n`` keeps the newest N points inside
    ``from_ms``..``to_ms``.
    """

    metric: str
    side: keys.Side
    test_name: str | None = None
    platform: str | None = None
    topology: str | None = None
    build_variant: str | None = None
    triggering_env: str | None = None
    github_org: str | None = None
    github_repo: str | None = None
    from_ms: int | None = None
    to_ms: int | None = None
    last_n: int | None = None
    tests_regexp: str | None = None

    def matches_scope(self, scope: keys.Scope) -> bool:
        """Whether ``scope`` agrees with the selector's env / org / repo (unset: any)."""
        wanted = (self.triggering_env, self.github_org, self.github_repo)
        actual = (scope.triggering_env, scope.github_org, scope.github_repo)
        return all(w is None or w == a for w, a in zip(wanted, actual))

    def filters(self, test_names: list[str] | None = None) -> list[str]:
        """TS.MRANGE FILTER expressions; ``test_names`` overrides ``test_name`` with a list.

        Order matters to RedisTimeSeries, which starts from the first filter and intersects:
        measured on 620k series, ``branch=.. metric=.. ... by=..`` answers in ~15 ms where
        ``by=branch`` first (a label every branch series carries) takes ~38 ms. So the side's
        value and the metric lead and ``by`` comes last. A list of more than
        :data:`MAX_SERVER_TEST_LIST` names is not sent at all (see :func:`read_series`).
        """
        exact = {
            self.side.kind: self.side.value,
            keys.LABEL_METRIC: self.metric,
            keys.LABEL_TEST_NAME: self.test_name,
            keys.LABEL_PLATFORM: self.platform,
            keys.LABEL_TOPOLOGY: self.topology,
            keys.LABEL_BUILD_VARIANT: self.build_variant,
            keys.LABEL_TRIGGERING_ENV: self.triggering_env,
            keys.LABEL_GITHUB_ORG: self.github_org,
            keys.LABEL_GITHUB_REPO: self.github_repo,
            keys.LABEL_BY: self.side.kind,
        }
        if self.side.kind == "hash":  # the only labels a by.hash series has (see matches),
            # the commit first: every by.hash series has ``by=hash`` (~40 ms a read at year
            # scale starting there, ~25 from the commit's 11,020)
            exact = {name: exact[name] for name in _HASH_FILTER_ORDER}
        out = [f"{name}={keys.label_value(value)}" for name, value in exact.items() if value]
        if self.side.kind == "hash":
            return out
        if test_names is not None:
            out = [f for f in out if not f.startswith(f"{keys.LABEL_TEST_NAME}=")]
            if len(test_names) <= MAX_SERVER_TEST_LIST:
                values = ",".join(keys.label_value(t) for t in test_names)
                out.insert(2, f"{keys.LABEL_TEST_NAME}=({values})")
        return out

    def matches(self, series: keys.SeriesId, test_names: list[str] | None = None) -> bool:
        """Whether a series the filters found is selected: for by.hash series, which carry
        only :data:`keys.HASH_LABELS`, the rest is judged from the key here."""
        if self.side.kind != "hash":
            return True
        tests = test_names if test_names is not None else (
            [self.test_name] if self.test_name else None)
        wanted = ((self.platform, series.platform), (self.topology, series.topology),
                  (self.build_variant, series.build_variant),
                  (self.triggering_env, series.scope.triggering_env),
                  (self.github_org, series.scope.github_org),
                  (self.github_repo, series.scope.github_repo))
        return all(w is None or w == actual for w, actual in wanted) and \
            (tests is None or series.test_name in tests)

    def may_match(self, key: str, test_names: list[str] | None = None) -> bool:
        """A cheap first look at a by.hash key (its fixed components: scope, test, build
        variant, platform) before :meth:`matches` parses it whole."""
        head = keys.parse_key_head(key)
        if head is None:
            return False
        test = self.test_name if test_names is None else None  # a list is judged by matches
        wanted = ((self.triggering_env, head.scope.triggering_env),
                  (self.github_org, head.scope.github_org),
                  (self.github_repo, head.scope.github_repo), (test, head.test_name),
                  (self.build_variant, head.build_variant), (self.platform, head.platform))
        return all(w is None or w == actual for w, actual in wanted)

    def range_args(self) -> list[Any]:
        """``from to [COUNT n]`` of the range command."""
        args: list[Any] = [
            "-" if self.from_ms is None else self.from_ms,
            "+" if self.to_ms is None else self.to_ms,
        ]
        if self.last_n is not None:
            args += ["COUNT", self.last_n]
        return args


@dataclass(frozen=True)
class Series:
    """One series read back: its key, the labels asked for, and its points (oldest first)."""

    key: str
    labels: dict[str, str]
    points: list[Point]


def read_series(client: redis.Redis, selector: SeriesSelector,
                test_names: list[str] | None = None) -> list[Series]:
    """Every series matching ``selector`` (one TS.MRANGE or TS.MREVRANGE round trip)."""
    if test_names is not None and not test_names:
        return []
    reply = client.execute_command(*_range_command(selector, test_names))
    return _series_of(client, selector, reply, test_names)


def read_series_many(client: redis.Redis,
                     selectors: list[SeriesSelector]) -> list[list[Series]]:
    """:func:`read_series` of each selector, the commands sent together on one connection
    and each reply made series while the server answers the next
    (:func:`datasink.wire.replies_of`)."""
    return wire.replies_of(client, [_range_command(s, None) for s in selectors],
                           lambda i, reply: _series_of(client, selectors[i], reply, None))


def _range_command(selector: SeriesSelector, test_names: list[str] | None) -> tuple[Any, ...]:
    """The ``TS.MRANGE`` (or ``TS.MREVRANGE``) that reads ``selector``'s series."""
    # the newest N points need the reverse range; points are put back in time order after
    command = "TS.MREVRANGE" if selector.last_n is not None else "TS.MRANGE"
    # groups and commands too: compare filters on them without fetching run documents (a
    # by.hash series has none of them: its labels come from the scope's index)
    selected = [] if selector.side.kind == "hash" else [
        "SELECTED_LABELS", keys.LABEL_TEST_NAME, keys.LABEL_TESTED_GROUPS,
        keys.LABEL_TESTED_COMMANDS]
    return (command, *selector.range_args(), *selected, "FILTER",
            *selector.filters(test_names))


def _series_of(client: redis.Redis, selector: SeriesSelector, reply: Any,
               test_names: list[str] | None) -> list[Series]:
    """The series of a range command's ``reply`` (:func:`_range_command`), as selected."""
    command = "TS.MREVRANGE" if selector.last_n is not None else "TS.MRANGE"
    if selector.side.kind == "hash":
        series = _hash_series(client, selector, _entries(reply), test_names)
    else:
        series = [_parse_series(key, labels, samples)
                  for key, labels, samples in _entries(reply)]
    if selector.side.kind != "hash" and test_names is not None and \
            len(test_names) > MAX_SERVER_TEST_LIST:
        wanted = {keys.label_value(t) for t in test_names}
        series = [s for s in series if s.labels.get(keys.LABEL_TEST_NAME) in wanted]
    if command == "TS.MREVRANGE":
        series = [replace(s, points=s.points[::-1]) for s in series]
    return series


def _hash_series(client: redis.Redis, selector: SeriesSelector,
                 found: list[tuple[Any, Any, Any]], test_names: list[str] | None) -> list[Series]:
    """by.hash series the selector selects (from an MRANGE reply's entries), labelled as
    the other sides are (test name from the key; groups and commands from the scope's
    ``tested`` index, one round trip). A comparison of every platform reads 4,408: each key
    is looked at once and its points made numbers at once."""
    chosen = []
    # the server filtered on all the selector names but scope, test, variant and topology
    judged_here = test_names is not None or any((
        selector.test_name, selector.topology, selector.build_variant,
        selector.triggering_env, selector.github_org, selector.github_repo))
    for raw_key, _labels, samples in found:
        key = _text(raw_key)
        if not judged_here and keys.has_key_head(key):
            chosen.append((key, keys.parse_key(key, selector.metric), samples))
        elif selector.may_match(key, test_names) and \
                selector.matches(parsed := keys.parse_key(key, selector.metric), test_names):
            chosen.append((key, parsed, samples))
    labels = hash_labels(client, [parsed for _key, parsed, _samples in chosen])
    return [Series(key, dict(labels[(parsed.scope, parsed.test_name)]),
                   [(int(ts), float(value)) for ts, value in samples])
            for key, parsed, samples in chosen]


def hash_labels(client: redis.Redis, found: list[keys.SeriesId]
                ) -> dict[tuple[keys.Scope, str], dict[str, str]]:
    """The labels a by.hash series is read with, per (scope, test): its test name, groups
    and commands (from the scope's ``tested`` index: one HMGET a scope, one round trip)."""
    tests: dict[keys.Scope, dict[str, None]] = {}  # each test once (a commit's platforms)
    for sid in found:
        tests.setdefault(sid.scope, {})[sid.test_name] = None
    pipe = client.pipeline(transaction=False)
    for scope, names in tests.items():
        pipe.hmget(keys.index_keys(scope).tested, list(names))
    return {(scope, name): {keys.LABEL_TEST_NAME: name,
                            **keys.parse_tested_items(_text(value) if value else "")}
            for (scope, names), values in zip(tests.items(), pipe.execute() if tests else [])
            for name, value in zip(names, values)}


def has_series(client: redis.Redis, selector: SeriesSelector) -> bool:
    """Whether any series matches ``selector`` (TS.QUERYINDEX, by.hash narrowed by key)."""
    found = series_keys(client, selector.filters())
    if selector.side.kind != "hash":
        return bool(found)
    return any(selector.matches(keys.parse_key(k, selector.metric)) for k in found)


def points(client: redis.Redis, selector: SeriesSelector) -> list[Point]:
    """The points of the one series ``selector`` names ([] when none matches)."""
    if not selector.test_name:
        raise ValueError("points() needs selector.test_name; use series_for_tests for many")
    found = read_series(client, selector)
    if len(found) > 1:
        raise AmbiguousSelectorError(
            f"{selector.test_name} {selector.metric}: {len(found)} series match, narrow the "
            f"selector (platform, topology, build variant...): {[s.key for s in found]}")
    return found[0].points if found else []


def series_for_tests(client: redis.Redis, selector: SeriesSelector,
                     test_names: list[str] | None = None) -> dict[str, list[Point]]:
    """Points per test for many tests in one TS.MRANGE.

    ``test_names`` None means every test (``selector.test_name`` is then ignored). Tests
    without a matching series are absent from the result.
    """
    return {name: s.points for name, s in series_by_test(client, selector, test_names).items()}


def series_by_test(client: redis.Redis, selector: SeriesSelector,
                   test_names: list[str] | None = None) -> dict[str, Series]:
    """:func:`series_for_tests` with each series' labels (``tested_groups``, ...) kept."""
    if test_names is None and selector.tests_regexp:
        test_names = tests_matching(client, selector)
    if test_names is None:
        selector = replace(selector, test_name=None)
    by_test: dict[str, Series] = {}
    for s in read_series(client, selector, test_names):
        name = s.labels.get(keys.LABEL_TEST_NAME, "")
        if name in by_test:
            raise AmbiguousSelectorError(
                f"{name} {selector.metric}: several series match, narrow the selector: "
                f"{by_test[name].key}, {s.key}")
        by_test[name] = s
    return by_test


def tests_matching(client: redis.Redis, selector: SeriesSelector) -> list[str]:
    """Known tests (index sets of the selector's scopes) matching ``selector.tests_regexp``."""
    try:
        re.compile(selector.tests_regexp or "")
    except re.error as exc:
        raise ValueError(f"tests regexp {selector.tests_regexp!r}: {exc}") from exc
    wanted = NameFilter(tests=selector.tests_regexp)  # the regexp meaning every command shares
    names = {name for scope in scopes(client) if selector.matches_scope(scope)
             for name in list_tests(client, scope)}
    return sorted(name for name in names if wanted.matches_test(name))


def count_series(client: redis.Redis, filters: list[str] | None = None) -> int:
    """How many of our series match ``filters`` (default: all of them), via TS.QUERYINDEX."""
    every_side = f"{keys.LABEL_BY}=({','.join(keys.SIDE_KINDS)})"
    return len(client.execute_command("TS.QUERYINDEX", every_side, *(filters or [])))


def series_keys(client: redis.Redis, filters: list[str]) -> list[str]:
    """Keys of the series matching label ``filters`` (TS.QUERYINDEX)."""
    return sorted(_text(k) for k in client.execute_command("TS.QUERYINDEX", *filters))


def series_labels(client: redis.Redis, filters: list[str],
                  names: list[str]) -> list[dict[str, str]]:
    """The ``names`` labels of every series matching ``filters`` (one TS.MGET, no points
    sent back but each series' last): what exists, for hints when a query finds nothing."""
    reply = client.execute_command("TS.MGET", "SELECTED_LABELS", *names, "FILTER", *filters)
    entries = [(k, v[0]) for k, v in reply.items()] if isinstance(reply, dict) else \
        [(entry[0], entry[1]) for entry in reply]
    out = []
    for _key, labels in entries:
        pairs = labels.items() if isinstance(labels, dict) else [(p[0], p[1]) for p in labels]
        out.append({_text(k): _text(v) for k, v in pairs if v is not None})
    return out


def scopes(client: redis.Redis) -> list[keys.Scope]:
    """Every (triggering env, org, repo) that results were pushed for."""
    return [keys.Scope.from_path(p) for p in _members(client, keys.SCOPES_KEY)]


def list_tests(client: redis.Redis, scope: keys.Scope) -> list[str]:
    """Test names with results in ``scope``."""
    return _members(client, keys.index_keys(scope).tests)


def list_metrics(client: redis.Redis, scope: keys.Scope) -> list[str]:
    """Metric names with results in ``scope``."""
    return _members(client, keys.index_keys(scope).metrics)


def list_branches(client: redis.Redis, scope: keys.Scope) -> list[str]:
    """Branches with results in ``scope``."""
    return _members(client, keys.index_keys(scope).branches)


def list_versions(client: redis.Redis, scope: keys.Scope) -> list[str]:
    """Release versions with results in ``scope``."""
    return _members(client, keys.index_keys(scope).versions)


def list_platforms(client: redis.Redis, scope: keys.Scope) -> list[str]:
    """Platforms with results in ``scope``."""
    return _members(client, keys.index_keys(scope).platforms)


def list_topologies(client: redis.Redis, scope: keys.Scope) -> list[str]:
    """Topologies with results in ``scope``."""
    return _members(client, keys.index_keys(scope).topologies)


def list_build_variants(client: redis.Redis, scope: keys.Scope) -> list[str]:
    """Build variants with results in ``scope``."""
    return _members(client, keys.index_keys(scope).build_variants)


def last_push_ms(client: redis.Redis) -> int | None:
    """When the last push happened (ms since the epoch), or None if never."""
    raw = client.get(keys.LAST_PUSH_KEY)
    return None if raw is None else int(raw)


# -- reply parsing ----------------------------------------------------------------------------

def _entries(reply: Any) -> list[tuple[Any, Any, Any]]:
    """(key, labels, samples) of an MRANGE reply, RESP2 (list) or RESP3 (map)."""
    if isinstance(reply, dict):
        return [(key, value[0], value[-1]) for key, value in reply.items()]
    return [(entry[0], entry[1], entry[2]) for entry in reply]


def _parse_series(key: Any, labels: Any, samples: Any) -> Series:
    if isinstance(labels, dict):
        pairs = list(labels.items())
    else:
        pairs = [(pair[0], pair[1]) for pair in labels]
    parsed_labels = {_text(k): _text(v) for k, v in pairs if v is not None}
    pts = [(int(ts), float(value)) for ts, value in samples]
    return Series(_text(key), parsed_labels, pts)


def _members(client: redis.Redis, key: str) -> list[str]:
    return sorted(_text(m) for m in client.smembers(key))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)

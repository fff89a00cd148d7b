"""The one definition of every datasink key name and label.

Time series follow the scheme the existing Grafana dashboards read::

    ci.benchmarks.redis/{by.branch|by.version|by.hash}/{triggering_env}/{github_org}/
        {github_repo}/{test_name}/{build_variant}/{platform}/{deployment_type}[/{deployment_name}]/
        {branch|version|hash}/{metric}

``deployment_type`` is the topology's type (oss-standalone, oss-cluster) and the name part
follows only when the topology's name differs from its type, as in the performance team's
scheme: ``oss-standalone`` series keep the key (and labels) they always had, while
``.../oss-standalone/oss-standalone-04-io-threads/...`` and
``.../oss-cluster/oss-cluster-3-primaries/...`` also carry the team's dashboard labels
(:data:`TEAM_LABELS`). A run of a sweep (``rbs run --sweep clients=...``) writes its
series under ``{test_name}.{param}-{value}`` with ``sweep_of``/``sweep_param``/``sweep_value``
labels; every other run keeps its key. Every path component is also a label, so readers find series with
``TS.MRANGE ... FILTER`` and ``TS.QUERYINDEX`` instead of scanning key names. The writer and
the reader both build names, labels and filters here and nowhere else.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Literal

from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.profile import under_profiler
from redis_benchmarks_spec.suites.topology import TOPOLOGY_TYPES

PREFIX = "ci.benchmarks.redis"

SideKind = Literal["branch", "version", "hash"]
SIDE_KINDS: tuple[SideKind, ...] = ("branch", "version", "hash")

# label names (a series carries exactly one of branch / version / hash: the one of its side)
LABEL_BY = "by"
LABEL_TRIGGERING_ENV = "triggering_env"
LABEL_GITHUB_ORG = "github_org"
LABEL_GITHUB_REPO = "github_repo"
LABEL_TEST_NAME = "test_name"
LABEL_BUILD_VARIANT = "build_variant"
LABEL_PLATFORM = "platform"
LABEL_TOPOLOGY = "topology"
LABEL_METRIC = "metric"
LABEL_DEPLOYMENT_TYPE = "deployment_type"
LABEL_TESTED_GROUPS = "tested_groups"
LABEL_TESTED_COMMANDS = "tested_commands"
LABEL_LAUNCHER = "launcher"
# runs of `rbs run --sweep`: the test swept, the parameter and its value
LABEL_SWEEP_OF = "sweep_of"
LABEL_SWEEP_PARAM = "sweep_param"
LABEL_SWEEP_VALUE = "sweep_value"
# labels the performance team's dashboards filter on, written for non-default topologies
# (oss-standalone series keep exactly the labels they were created with)
LABEL_DEPLOYMENT_NAME = "deployment_name"
LABEL_RUNNING_PLATFORM = "running_platform"
LABEL_METRIC_NAME = "metric_name"
LABEL_METRIC_JSONPATH = "metric_jsonpath"
LABEL_TEST_BUILD_VARIANT = "test_name:build_variant"
LABEL_ORG_REPO = "github_org/github_repo"
TEAM_LABELS = (LABEL_DEPLOYMENT_NAME, LABEL_DEPLOYMENT_TYPE, LABEL_RUNNING_PLATFORM,
               LABEL_METRIC_NAME, LABEL_METRIC_JSONPATH, LABEL_TEST_BUILD_VARIANT,
               LABEL_ORG_REPO, "deployment_name+{side}", "target+{side}")
# one label per tested group / command ("tested_group.hash=1") so a filter can select by one
TESTED_GROUP_PREFIX = "tested_group."
TESTED_COMMAND_PREFIX = "tested_command."

# a release version: 7.0.15, 7.2.4-rc1, v7.4.0-m01 (a leading "v" is dropped)
_RELEASE_VERSION = re.compile(r"^v?(\d+\.\d+\.\d+(?:-(?:rc|m|alpha|beta)\d*)?)$")
# RedisTimeSeries rejects these in label values (and "=" cannot be matched by a filter)
_LABEL_UNSAFE = re.compile(r"[,()=]")
_ZERO_SHA = re.compile(r"^0+$")
_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")
# what an unstable (unreleased) Redis build reports as its version
_UNSTABLE_VERSION = "255.255.255"

LAST_PUSH_KEY = f"{PREFIX}:last_push_ms"
SCOPES_KEY = f"{PREFIX}:scopes"
DATASINK_ID_KEY = f"{PREFIX}:datasink_id"
#: set of the scope paths with a suspect mark (datasink/suspect_marks.py)
SUSPECT_SCOPES_KEY = f"{PREFIX}:suspect_scopes"


@dataclass(frozen=True)
class Side:
    """Which line of history a series belongs to: a branch, a release version or a commit."""

    kind: SideKind
    value: str

    def __post_init__(self) -> None:
        if self.kind not in SIDE_KINDS:
            raise ValueError(f"side kind must be one of {SIDE_KINDS}, got {self.kind!r}")
        if not self.value:
            raise ValueError(f"empty {self.kind} for a series side")


@dataclass(frozen=True)
class Scope:
    """The namespace index sets live in: who triggered the runs, and for which repository."""

    triggering_env: str = "ci"
    github_org: str = "redis"
    github_repo: str = "redis"

    @property
    def path(self) -> str:
        return f"{self.triggering_env}/{self.github_org}/{self.github_repo}"

    @classmethod
    def from_path(cls, path: str) -> Scope:
        """Inverse of :attr:`path` (``env/org/repo``), as stored in :data:`SCOPES_KEY`."""
        parts = path.split("/")
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"not a scope path (env/org/repo): {path!r}")
        return cls(*parts)

    @classmethod
    def of(cls, result: RunResult) -> Scope:
        ctx = result.context
        return cls(ctx.triggering_env, ctx.git.org, ctx.git.repo)


@dataclass(frozen=True)
class SeriesId:
    """Everything that names one time series."""

    side: Side
    scope: Scope
    test_name: str
    build_variant: str
    platform: str
    topology: str
    metric: str
    deployment_type: str = ""  # the topology's type; '' means the same as its name
    metric_jsonpath: str = ""
    #: the series key, exactly as the Grafana dashboards expect it (set by __post_init__)
    key: str = field(init=False, repr=False, compare=False)

    @property
    def is_default_deployment(self) -> bool:
        """True for a topology named after its type (oss-standalone): no name part."""
        return not self.deployment_type or self.deployment_type == self.topology

    @property
    def deployment_path(self) -> str:
        if self.is_default_deployment:
            return self.topology
        return f"{self.deployment_type}/{self.topology}"

    def __post_init__(self) -> None:
        # the key computed once, here, and read as a plain attribute: a push reads every key
        # two or three times, and functools.cached_property's lock (Python < 3.12) or a
        # property's call cost it more than computing the key
        object.__setattr__(self, "key", "/".join((
            PREFIX, f"by.{self.side.kind}", self.scope.triggering_env, self.scope.github_org,
            self.scope.github_repo, self.test_name, self.build_variant, self.platform,
            self.deployment_path, self.side.value, self.metric,
        )))

    def labels(self) -> dict[str, str]:
        """The labels naming this series (each path component, under its own name), plus
        the team's dashboard labels for a non-default topology."""
        raw = {
            LABEL_BY: self.side.kind,
            LABEL_TRIGGERING_ENV: self.scope.triggering_env,
            LABEL_GITHUB_ORG: self.scope.github_org,
            LABEL_GITHUB_REPO: self.scope.github_repo,
            LABEL_TEST_NAME: self.test_name,
            LABEL_BUILD_VARIANT: self.build_variant,
            LABEL_PLATFORM: self.platform,
            LABEL_TOPOLOGY: self.topology,
            self.side.kind: self.side.value,
            LABEL_METRIC: self.metric,
        }
        if not self.is_default_deployment:
            raw.update(self._team_labels())
        return {name: label_value(value) for name, value in raw.items()}

    def _team_labels(self) -> dict[str, str]:
        side, scope = self.side, self.scope
        jsonpath = self.metric_jsonpath.lstrip("$").lstrip(".") or self.metric
        return {
            LABEL_DEPLOYMENT_NAME: self.topology,
            LABEL_DEPLOYMENT_TYPE: self.deployment_type,
            LABEL_RUNNING_PLATFORM: self.platform,
            f"deployment_name+{side.kind}": f"{self.topology} {side.value}",
            f"target+{side.kind}": f"{side.value} {scope.github_repo}",
            LABEL_TEST_BUILD_VARIANT: f"{self.test_name}:{self.build_variant}",
            LABEL_ORG_REPO: f"{scope.github_org}/{scope.github_repo}",
            LABEL_METRIC_NAME: self.metric,
            LABEL_METRIC_JSONPATH: jsonpath,
        }


class KeyParseError(ValueError):
    """A key that is not a series key of this scheme; the message names the key."""


# prefix, by.<side>, env, org, repo, test, build variant, platform: never hold a "/"
_HEAD = 8


@functools.lru_cache(maxsize=1024)  # the keys of one read share their side and scope
def _side(kind: str, value: str) -> Side:
    return Side(kind, value)  # type: ignore[arg-type]  # kind checked by the caller


@functools.lru_cache(maxsize=256)
def _scope(env: str, org: str, repo: str) -> Scope:
    return Scope(env, org, repo)


def has_key_head(key: str) -> bool:
    """Whether :func:`parse_key_head` finds a head in ``key`` (without building it)."""
    return key.startswith(PREFIX + "/") and key.count("/") >= _HEAD


def _common_shape(key: str, metric: str) -> SeriesId | None:
    """:func:`parse_key` of a key of the common shape, a topology without a name part and a
    one-component side value (``.../<platform>/oss-standalone/<sha>/<metric>``: every key of
    a by.hash read), else None. Such a key has exactly two components between the platform
    and the metric, so it holds no name part whatever the side (:func:`_has_name_part`):
    one split, and the :class:`SeriesId` made without recomputing the key it was read from
    (~10 us a key the general way; a comparison of every platform reads 4,408)."""
    if not metric or metric[0] == "/" or metric[-1] == "/" or "//" in metric:
        return None
    end = len(key) - len(metric) - 1
    if end <= 0 or key[end] != "/" or not key.endswith(metric):
        return None
    parts = key[:end].split("/")
    if len(parts) != _HEAD + 2 or parts[0] != PREFIX or not all(parts) or \
            not parts[1].startswith("by.") or parts[1][3:] not in SIDE_KINDS:
        return None
    sid = object.__new__(SeriesId)  # frozen: its fields set as __init__ would set them
    sid.__dict__.update(side=_side(parts[1][3:], parts[9]), scope=_scope(*parts[2:5]),
                        test_name=parts[5], build_variant=parts[6], platform=parts[7],
                        topology=parts[8], metric=metric, deployment_type=parts[8],
                        metric_jsonpath="", key=key)
    return sid


@functools.lru_cache(maxsize=65536)  # a page parses a comparison's 4,408 keys twice
def parse_key(key: str, metric: str | None = None) -> SeriesId:
    """The :class:`SeriesId` a series key names: the inverse of :attr:`SeriesId.key`.

    Components before the deployment sit at fixed places. After them come the deployment
    (``type`` or ``type/name``), the side's value and the metric, and the metric may hold
    "/" (``ALL_STATS.Totals.Ops/sec``). A name part follows a type of
    :data:`~redis_benchmarks_spec.suites.topology.TOPOLOGY_TYPES` when the next component
    cannot be the side's value (a commit or release version has a fixed shape) or, on a
    branch side, when it is named after the type (``oss-standalone-04-io-threads``). Given
    ``metric``, the key must end with it and a branch may hold "/" too.
    """
    if metric:
        common = _common_shape(key, metric)
        if common is not None:
            return common
    parts = key.split("/")
    if len(parts) < _HEAD + 3 or parts[0] != PREFIX or not all(parts):
        raise KeyParseError(f"not a series key of {PREFIX}: {key!r}")
    kind = parts[1].removeprefix("by.")
    if kind not in SIDE_KINDS:
        raise KeyParseError(f"series key {key!r}: {parts[1]!r} is not by.branch, by.version "
                            "or by.hash")
    rest = parts[_HEAD:]
    before = _before_metric(key, rest, metric)
    deployment = rest[:2] if _has_name_part(rest, kind, before) else rest[:1]
    side_end = len(deployment) + 1 if before is None else before
    side_value = "/".join(rest[len(deployment):side_end])
    metric_name = "/".join(rest[side_end:])
    if not side_value or not metric_name:
        raise KeyParseError(f"series key {key!r} has no side value or no metric")
    return SeriesId(
        side=_side(kind, side_value), scope=_scope(*parts[2:5]), test_name=parts[5],
        build_variant=parts[6],
        platform=parts[7], topology=deployment[-1], metric=metric_name,
        deployment_type=deployment[0],
    )


@dataclass(frozen=True)
class KeyHead:
    """The components a series key opens with, which never hold a "/"."""

    kind: str
    scope: Scope
    test_name: str
    build_variant: str
    platform: str


def parse_key_head(key: str) -> KeyHead | None:
    """The fixed opening of a series key, without parsing the rest (a cheap first look when
    many keys are read: :meth:`reader.SeriesSelector.may_match`); None for a key that is
    too short to be one. :func:`parse_key` checks the whole key."""
    parts = key.split("/", _HEAD)
    if len(parts) <= _HEAD or parts[0] != PREFIX:
        return None
    return KeyHead(parts[1].removeprefix("by."), Scope(*parts[2:5]), parts[5], parts[6],
                   parts[7])


def _before_metric(key: str, rest: list[str], metric: str | None) -> int | None:
    """How many of ``rest`` come before the metric, or None when the metric is not given."""
    if not metric:
        return None
    if not key.endswith("/" + metric):
        raise KeyParseError(f"series key {key!r} does not end with metric {metric!r}")
    return len(rest) - metric.count("/") - 1


def _has_name_part(rest: list[str], kind: str, before: int | None) -> bool:
    """Whether ``rest`` (the components after the platform) opens with ``type/name``."""
    if rest[0] not in TOPOLOGY_TYPES or len(rest) < 4 or (before is not None and before < 3):
        return False
    if kind == "branch":  # a branch may be named anything: the team names topologies by type
        return rest[1].startswith(rest[0] + "-")
    if before is not None:  # a commit or a version is one component
        return before == 3
    if kind == "hash":
        return not _SHA.match(rest[1])
    return release_version(rest[1]) is None


@functools.lru_cache(maxsize=8192)  # a push writes the same few values again and again
def label_value(raw: str) -> str:
    """A label value RedisTimeSeries accepts and a FILTER can match.

    ``,``, ``(`` and ``)`` are rejected in label values and ``=`` cannot be matched, so each
    becomes ``_``. Writer and reader both pass values through here, so filters still match.
    """
    return _LABEL_UNSAFE.sub("_", raw)


def label_name(raw: str) -> str:
    """A label name safe for filters (same character rules as values, plus no spaces)."""
    return label_value(raw).replace(" ", "_").replace("!", "_")


def release_version(raw: str | None) -> str | None:
    """The normalised release version (``7.2.4-rc1``), or None when ``raw`` is not one."""
    if not raw:
        return None
    match = _RELEASE_VERSION.match(raw.strip())
    if not match or match.group(1) == _UNSTABLE_VERSION:
        return None
    return match.group(1)


def run_labels(result: RunResult) -> dict[str, str]:
    """Labels every series of one run carries besides its name: deployment and tested items.

    ``deployment_type`` has always held the launcher on oss-standalone series and keeps it
    there; on other topologies it is the topology's type (as the team's dashboards read
    it), and the launcher moves to ``launcher``.
    """
    ctx = result.context
    if not ctx.topology_type or ctx.topology_type == ctx.topology:
        labels = {LABEL_DEPLOYMENT_TYPE: ctx.deployment_type}
    else:
        labels = {LABEL_DEPLOYMENT_TYPE: ctx.topology_type, LABEL_LAUNCHER: ctx.deployment_type}
    if result.tested_groups:
        labels[LABEL_TESTED_GROUPS] = ";".join(sorted(result.tested_groups))
    if result.tested_commands:
        labels[LABEL_TESTED_COMMANDS] = ";".join(sorted(result.tested_commands))
    if result.sweep.get("param"):  # find every point of a sweep: FILTER sweep_of=<test>
        labels[LABEL_SWEEP_OF] = result.test_name
        labels[LABEL_SWEEP_PARAM] = result.sweep["param"]
        labels[LABEL_SWEEP_VALUE] = result.sweep.get("value", "")
    labels.update({label_name(TESTED_GROUP_PREFIX + g): "1" for g in result.tested_groups})
    labels.update({label_name(TESTED_COMMAND_PREFIX + c): "1" for c in result.tested_commands})
    return {name: label_value(value) for name, value in labels.items() if value}


#: the only labels of a by.hash series. It holds one commit's points and its readers (the PR
#: comparison, ``rbs compare --*-hash``, gc, the HTML report's marks) find a commit's series
#: with ``hash=<sha> metric=<m> platform=<p> by=hash`` and narrow the rest (test, topology,
#: build variant, scope) from the key (:func:`parse_key`); a test's groups and commands come
#: from :attr:`IndexKeys.tested`. The dashboards read by.branch and by.version, which keep
#: every label. Each label costs a series ~430 B in RedisTimeSeries' index
#: (docs/history.md), and by.hash is 99 % of the series. ``platform`` stays because it
#: divides what a PR query opens by the number of platforms.
HASH_LABELS = (LABEL_BY, "hash", LABEL_METRIC, LABEL_PLATFORM)


def series_labels(series: SeriesId, labels_of_run: dict[str, str]) -> dict[str, str]:
    """Every label ``series`` is created with: its own and the run's (:func:`run_labels`);
    a by.hash series only :data:`HASH_LABELS`."""
    if series.side.kind == "hash":  # every run creates 5 or so: only what they carry
        values = {LABEL_BY: series.side.kind, "hash": series.side.value,
                  LABEL_METRIC: series.metric, LABEL_PLATFORM: series.platform}
        return {name: label_value(values[name]) for name in HASH_LABELS}
    return {**series.labels(), **labels_of_run}


def tested_items(result: RunResult) -> str:
    """``groups|commands`` of a run (``;``-joined, as the labels), kept per test in
    :attr:`IndexKeys.tested` for readers of by.hash series, which do not carry them."""
    return ";".join(sorted(result.tested_groups)) + "|" + ";".join(
        sorted(result.tested_commands))


def parse_tested_items(value: str) -> dict[str, str]:
    """The ``tested_groups`` / ``tested_commands`` labels :func:`tested_items` stands for."""
    groups, _, commands = value.partition("|")
    return {name: text for name, text in ((LABEL_TESTED_GROUPS, groups),
                                          (LABEL_TESTED_COMMANDS, commands)) if text}


def sides_of(result: RunResult) -> list[Side]:
    """The sides a run's metrics are written to.

    The branch when known; the release version (from the git info, else the version the
    server reported) when it is one; the commit (from the git info, else the server's
    build sha unless that is all zeros). A local run of a packaged redis-server therefore
    still lands in ``by.version``.
    """
    git = result.context.git
    sides: list[Side] = []
    if git.branch:
        sides.append(Side("branch", git.branch))
    version = release_version(git.version) or release_version(result.redis_version)
    if version:
        sides.append(Side("version", version))
    sha = git.hash or result.redis_git_sha
    if sha and not _ZERO_SHA.match(sha):
        sides.append(Side("hash", sha))
    return sides


def series_test_name(result: RunResult) -> str:
    """The test component of a run's series: the test name, and for a run of a sweep
    (``rbs run --sweep clients=...``) ``<test>.<param>-<value>``, so every swept value has
    its own series. Runs that are not swept keep exactly the keys they always had."""
    if not result.sweep.get("param"):
        return result.test_name
    return f"{result.test_name}.{result.sweep['param']}-{result.sweep.get('value', '')}"


def history_metrics(result: RunResult) -> list[str]:
    """The metrics of ``result`` that go into series: all of them, except that a profiled
    run (perf or callgrind slowed the server) keeps only its instruction counts."""
    return [m for m in sorted(result.metrics) if not under_profiler(result.flags, m)]


@dataclass(frozen=True)
class RunNames:
    """What names one run's series and index entries, derived once (a push reads each
    several times: its series, its index sets, its test's run index)."""

    scope: Scope
    test_name: str  # :func:`series_test_name`
    sides: tuple[Side, ...]
    metrics: tuple[str, ...]  # :func:`history_metrics`

    @classmethod
    def of(cls, result: RunResult) -> RunNames:
        return cls(Scope.of(result), series_test_name(result), tuple(sides_of(result)),
                   tuple(history_metrics(result)))


def series_ids(result: RunResult, names: RunNames | None = None) -> list[SeriesId]:
    """Every series one run writes: one per history metric and side (``names``: the run's
    :class:`RunNames`, when the caller has them already)."""
    ctx = result.context
    names = names or RunNames.of(result)
    paths = result.metric_paths
    return [
        SeriesId(side, names.scope, names.test_name, ctx.build_variant, ctx.platform,
                 ctx.topology, metric, ctx.topology_type, paths.get(metric, ""))
        for side in names.sides
        for metric in names.metrics
    ]


@dataclass(frozen=True)
class IndexKeys:
    """The sets listing what a scope holds, so listing never needs KEYS or SCAN."""

    tests: str
    metrics: str
    branches: str
    versions: str
    hashes: str
    platforms: str
    build_variants: str
    topologies: str
    runs: str  # run ids of documents pushed before the per-test indexes were the only one
    # commit -> newest point time (ms) of its by.hash series: what `rbs datasink gc` expires
    hash_times: str = ""
    folded_until: str = ""  # documents older than this (ms) were folded by gc
    # commit -> first / newest point time (ms), never expired: where a commit's runs are
    # once gc deleted its by.hash series (a PR base is then found on its branch's series)
    hash_first: str = ""
    hash_last: str = ""
    tested: str = ""  # test -> "groups|commands" (see tested_items)


@functools.lru_cache(maxsize=256)  # a push asks for each run's; a scope's never change
def index_keys(scope: Scope) -> IndexKeys:
    """Index-set key names of ``scope`` (``ci.benchmarks.redis/ci/redis/redis:testcases``)."""
    base = f"{PREFIX}/{scope.path}"
    return IndexKeys(
        tests=f"{base}:testcases",
        metrics=f"{base}:metrics",
        branches=f"{base}:branches",
        versions=f"{base}:versions",
        hashes=f"{base}:hashes",
        platforms=f"{base}:platforms",
        build_variants=f"{base}:build_variants",
        topologies=f"{base}:topologies",
        runs=f"{base}:runs",
        hash_times=f"{base}:hash_times",
        folded_until=f"{base}:folded_until_ms",
        hash_first=f"{base}:hash_first",
        hash_last=f"{base}:hash_last",
        tested=f"{base}:tested",
    )


def run_key(run_id: str) -> str:
    """Where the full result document of one run is stored."""
    return f"{PREFIX}/runs/{run_id}"


@dataclass(frozen=True)
class CommitRunKeys:
    """A commit's runs on one platform, kept by the writer (:mod:`.commit_runs`): ``runs``
    is a sorted set of run ids scored by their points' time, ``tests`` the set of the
    series test names they wrote, ``series`` the set of their by.hash series' names without
    the metric (:func:`series_member`)."""

    runs: str
    tests: str
    series: str


def commit_run_keys(scope: Scope, sha: str, platform: str) -> CommitRunKeys:
    """``ci.benchmarks.redis/ci/redis/redis/commits/<sha>/<platform>:runs``, ``:tests`` and
    ``:series``."""
    base = f"{PREFIX}/{scope.path}/commits/{sha}/{platform}"
    return CommitRunKeys(f"{base}:runs", f"{base}:tests", f"{base}:series")


def series_member(sid: SeriesId) -> str:
    """A by.hash series in its commit's ``:series`` set: ``<test>/<build variant>/<deployment
    path>`` (test and variant never hold a "/"; the deployment path may: ``type/name``)."""
    return f"{sid.test_name}/{sid.build_variant}/{sid.deployment_path}"


def hash_series_ids(scope: Scope, sha: str, platform: str, members: list[str],
                    metric: str) -> list[SeriesId]:
    """The by.hash :class:`SeriesId` of ``metric`` each :func:`series_member` of the
    commit's set on ``platform`` names: what :func:`parse_key` gives of its key (made as
    :func:`_common_shape` makes it, without the dataclass's init: a comparison of every
    platform names 4,408)."""
    shared = {"side": _side("hash", sha), "scope": _scope(*scope.path.split("/")),
              "platform": platform, "metric": metric, "metric_jsonpath": ""}
    head, tail = f"{PREFIX}/by.hash/{scope.path}/", f"/{sha}/{metric}"
    out = []
    for member in members:
        test, variant, deployment = member.split("/", 2)
        kind, _, name = deployment.partition("/")
        sid = object.__new__(SeriesId)
        fields = sid.__dict__
        fields.update(shared)
        fields.update(test_name=test, build_variant=variant, topology=name or kind,
                      deployment_type=kind,
                      key=f"{head}{test}/{variant}/{platform}/{deployment}{tail}")
        out.append(sid)
    return out


def suspect_key(scope: Scope, sha: str) -> str:
    """Hash, build variant -> the mark of the commit's artifact found bad by the builder's
    check (:mod:`.suspect_marks`): ``.../commits/<sha>:suspect``."""
    return f"{PREFIX}/{scope.path}/commits/{sha}:suspect"


def suspect_commits_key(scope: Scope) -> str:
    """Set of the scope's commits with a :func:`suspect_key` mark: whether a reader need
    look for suspect points at all (one SCARD)."""
    return f"{PREFIX}/{scope.path}:suspect_commits"


def test_runs_key(scope: Scope, test_name: str) -> str:
    """Sorted set of a test's run ids, scored by run start (ms), to reach raw documents."""
    return f"{PREFIX}/{scope.path}/{test_name}:runs"

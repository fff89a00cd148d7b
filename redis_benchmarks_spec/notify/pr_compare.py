"""A pull request's comparison on one platform, read from the datasink.

Where the baseline comes from (documented in docs/pr-comments.md):

1. the series of the base commit (``by.hash/<base sha>``), when that exact commit was
   benchmarked on this platform and build variant;
2. the same commit's points on the branch it was benchmarked on, when gc deleted its by.hash
   series (``rbs datasink gc``: datasink/commit_points.py);
3. otherwise the base branch's series (``by.branch/<base ref>``, e.g. ``unstable``), its last
   ``baseline_points`` points: the recent history the pull request would merge into.

Where the lab's agent kept its A/B of the base and head commits on the platform
(``datasink.lab_ab``), its rows are that A/B's report as the engine judged it
(:mod:`inputs.lab_ab_report`), whichever baseline the points come from.

The comparison side is the head commit's series (``by.hash/<head sha>``). Both sides are
narrowed to the event's platform, build variant, triggering env and repository, one
topology at a time (a test with two topologies gives two rows). When the platform's host
noise changed between the baseline's newest run and the head's (the rule of
``analysis.host_noise``), or the two sides' binaries were built with different dependency
versions (``inputs.side_binaries``: "jemalloc 5.2.1 → 5.3.0"), the comment says so above
the verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import redis

from redis_benchmarks_spec.analysis.compare import DEFAULT_METRIC, ComparisonReport
from redis_benchmarks_spec.analysis.context import CompareContext, SideInfo
from redis_benchmarks_spec.analysis.engine import catalogue_options
from redis_benchmarks_spec.datasink import commit_points, keys, reader, run_reader
from redis_benchmarks_spec.datasink.lab_ab import LabABError, LabABKey
from redis_benchmarks_spec.events.messages import BuildEvent
from redis_benchmarks_spec.inputs import lab_ab_report, side_binaries
from redis_benchmarks_spec.inputs.comparison_series import read_side
from redis_benchmarks_spec.inputs.platform_context import hosts_of
from redis_benchmarks_spec.inputs.suspect_points import drop_suspect
from redis_benchmarks_spec.pullrequest.state import PrInfo
from redis_benchmarks_spec.results.comparison_key import label, split
from redis_benchmarks_spec.results.document import RunResult

Samples = dict[str, tuple[list[float], list[float]]]


@dataclass(frozen=True)
class PrCompareOptions:
    """What the datasink route reads. It judges as ``rbs compare`` does: with the metric's
    catalogue floor (:func:`analysis.engine.catalogue_options`), never a floor of its own."""

    metric: str = DEFAULT_METRIC
    baseline_points: int = 10
    default_base_branch: str = "unstable"  # when the trigger did not say (rbs trigger --pr)
    alpha: float = 0.05


def _selector(event: BuildEvent, platform: str, side: keys.Side,
              options: PrCompareOptions) -> reader.SeriesSelector:
    return reader.SeriesSelector(
        metric=options.metric, side=side, platform=platform,
        build_variant=event.build_variant, triggering_env=event.triggering_env,
        github_org=event.org, github_repo=event.repo)


def _read(client: redis.Redis, selector: reader.SeriesSelector,
          topologies: list[str], notes: list[str]) -> dict[str, reader.Series]:
    """Series per row name (test, or "test @ topology" when several topologies: the label
    of ``results.comparison_key``, as in the A/B rows of the same comment), read by the
    one reader of comparisons (``inputs.comparison_series``), without the points measured
    on an artifact found bad (what was left out is added to ``notes``)."""
    rows, left = drop_suspect(client, read_side(client, selector, tuple(topologies)),
                              selector.metric)
    notes += left
    return rows


def _points(series: dict[str, reader.Series]) -> dict[str, list[reader.Point]]:
    return {row: s.points for row, s in series.items()}


def _values(points: dict[str, list[reader.Point]]) -> dict[str, list[float]]:
    return {name: [v for _, v in pts] for name, pts in points.items()}


def _newest_ms(points: dict[str, list[reader.Point]]) -> int | None:
    return max((pts[-1][0] for pts in points.values() if pts), default=None)


def baseline_side(client: redis.Redis, event: BuildEvent, platform: str,
                  info: PrInfo | None, options: PrCompareOptions) -> tuple[keys.Side, int | None]:
    """The baseline's side and point limit (see the module docstring)."""
    if info and info.base_sha:
        side = keys.Side("hash", info.base_sha)
        if reader.has_series(client, _selector(event, platform, side, options)):
            return side, None
    branch = (info.base_ref if info and info.base_ref else options.default_base_branch)
    return keys.Side("branch", branch), options.baseline_points



def lab_key(event: BuildEvent, platform: str, info: PrInfo | None,
            metric: str) -> LabABKey | None:
    """The lab A/B of the pull request's base and head commits on ``platform`` the datasink
    may keep (``datasink.lab_ab``), whichever baseline the points are read from; None
    without a stored base commit."""
    if not (info and info.base_sha):
        return None
    try:
        return LabABKey(event.org, event.repo, info.base_sha, event.sha, platform, metric)
    except LabABError:
        return None

@dataclass
class PlatformComparison:
    """A platform's comparison: the report, the values of each side per row, and the head
    commit's result documents per row (flags, latency histograms, files)."""

    report: ComparisonReport
    samples: Samples
    head_runs: dict[str, list[RunResult]] = field(default_factory=dict)
    baseline_label: str = ""

    @property
    def flags(self) -> dict[str, list[str]]:
        return {test: sorted({f for r in runs for f in r.flags})
                for test, runs in self.head_runs.items()}


def compare_platform(client: redis.Redis, event: BuildEvent, platform: str,
                     info: PrInfo | None, options: PrCompareOptions) -> PlatformComparison:
    """Head commit vs baseline for every test the event ran on ``platform``."""
    scope = keys.Scope(event.triggering_env, event.org, event.repo)
    topologies = reader.list_topologies(client, scope) or ["oss-standalone"]
    base_side, last_n = baseline_side(client, event, platform, info, options)
    left: list[str] = []  # the suspect points left out (inputs/suspect_points.py)
    comp_series = _read(client, _selector(event, platform, keys.Side("hash", event.sha),
                                          options), topologies, left)
    comp_points = _points(comp_series)
    expired = _expired_base(client, event, platform, info, (options, list(comp_points))) \
        if base_side.kind == "branch" else None
    base_series, base_label, commits = expired or _base(
        client, event, platform, (base_side, last_n), (options, topologies), left)
    base_points = _points(base_series)
    comp, base = _values(comp_points), _values(base_points)
    samples: Samples = {t: (base.get(t, []), values) for t, values in comp.items()}
    problems = left + [f"{t}: no baseline points on {base_label}"
                       for t, (b, _) in samples.items() if not b]
    # judged as rbs compare and the site judge the same points: the lab's stored A/B of the
    # base and head commits where there is one, the pairs of one interleaved A/B session when
    # they are, else two samples; the metric's catalogue floor
    report = lab_ab_report.judged(client, (base_series, comp_series),
                                  catalogue_options(options.metric, options.alpha), problems,
                                  rows=list(comp_series),
                                  key=lab_key(event, platform, info, options.metric))
    heads = head_runs(client, event, platform, list(comp))
    base_deps = side_binaries.of_points(client, scope, base_points,
                                        (platform, event.build_variant))
    head_deps = side_binaries.agreed(r for runs in heads.values() for r in runs)
    report = replace(report, context=CompareContext(
        baseline=SideInfo(label=base_label, commits=commits,
                          runs=sum(len(b) for b, _ in samples.values()),
                          dependencies=base_deps),
        comparison=SideInfo(label=f"head {event.branch or ''}".strip(), commits=[event.sha],
                            versions=[event.redis_version] if event.redis_version else [],
                            runs=sum(len(c) for _, c in samples.values()),
                            dependencies=head_deps),
        platforms=[platform], build_variants=[event.build_variant],
        noise_flags=_noise_flags(client, platform, _newest_ms(base_points),
                                 _newest_ms(comp_points)),
        dependency_changes=side_binaries.changes(base_deps, head_deps)))
    return PlatformComparison(report, samples, heads, base_label)


Baseline = tuple[dict[str, reader.Series], str, list[str]]  # series per row, label, commits


def _base(client: redis.Redis, event: BuildEvent, platform: str,
          side: tuple[keys.Side, int | None],
          how: tuple[PrCompareOptions, list[str]], notes: list[str]) -> Baseline:
    """The baseline read from ``side`` (the base commit's series, or the branch's last N)."""
    (base_side, last_n), (options, topologies) = side, how
    selector = replace(_selector(event, platform, base_side, options), last_n=last_n)
    label = f"{base_side.kind} {base_side.value}" + (f" (last {last_n} points)" if last_n
                                                      else "")
    return (_read(client, selector, topologies, notes), label,
            [base_side.value] if base_side.kind == "hash" else [])


def _expired_base(client: redis.Redis, event: BuildEvent, platform: str, info: PrInfo | None,
                  how: tuple[PrCompareOptions, list[str]]) -> Baseline | None:
    """The base commit's own points when gc deleted its by.hash series (the caller found
    none): read on the branch it was benchmarked on (datasink/commit_points.py). None when
    it was never benchmarked here: the caller then reads the base branch's last points."""
    options, comp = how
    if not (info and info.base_sha):
        return None
    query = commit_points.CommitQuery(keys.Scope(event.triggering_env, event.org, event.repo),
                                      info.base_sha, platform, event.build_variant,
                                      options.metric)
    rows = {split(t) for t in comp}
    found = commit_points.on_branch(client, query, sorted({name for name, _ in rows}))
    if found is None:
        return None
    several = any(topology for _name, topology in rows)  # rows are "test @ topology"
    series = {label(test, topology, several): reader.Series(
        f"{info.base_sha} on branch {found.branch}", {}, p)
              for (test, topology), p in found.points.items()}
    return series, f"commit {info.base_sha[:12]} on branch {found.branch}", [info.base_sha]


def _noise_flags(client: redis.Redis, platform: str, base_ms: int | None,
                 head_ms: int | None) -> list[str]:
    """The flag when the platform's host noise changed between the baseline's runs and the
    head's (``analysis.host_noise``); records that cannot be read are left out."""
    _, flags, _ = hosts_of(client, {"baseline": platform, "comparison": platform},
                           {"baseline": base_ms, "comparison": head_ms})
    return flags


def platform_report(client: redis.Redis, event: BuildEvent, platform: str,
                    info: PrInfo | None, options: PrCompareOptions) -> ComparisonReport:
    """The report of :func:`compare_platform`."""
    return compare_platform(client, event, platform, info, options).report


def head_runs(client: redis.Redis, event: BuildEvent, platform: str,
              tests: list[str]) -> dict[str, list[RunResult]]:
    """The head commit's stored result documents per row (runs of this event's platform)."""
    return commit_runs(client, event, platform, tests, event.sha)


def commit_runs(client: redis.Redis, event: BuildEvent, platform: str, tests: list[str],
                sha: str) -> dict[str, list[RunResult]]:
    """Result documents of ``sha`` per row, stored since the event's build on its platform
    (the head commit's, or the base commit's runs of the agent's A/B)."""
    scope = keys.Scope(event.triggering_env, event.org, event.repo)
    rows = [(test, *split(test)) for test in tests]
    ids = run_reader.run_ids_of_tests(client, scope, [name for _t, name, _top in rows],
                                  from_ms=event.built_at_ms)
    heads = run_reader.contexts(client, [r for row in ids for r in row])  # first bytes only

    def mine(ctx: dict[str, Any] | None) -> bool:  # None: not in the first bytes, look whole
        return ctx is None or ((ctx.get("git") or {}).get("hash"), ctx.get("platform")) == (
            sha, platform)

    docs = run_reader.result_dicts(client, [r for r, ctx in heads.items() if mine(ctx)])  # MGET
    runs: dict[str, list[RunResult]] = {}
    for (test, _name, topology), row in zip(rows, ids):
        for raw in (docs[r] for r in row if r in docs):
            ctx = raw.get("context") or {}
            if mine(ctx) and topology in (None, ctx.get("topology")):
                runs.setdefault(test, []).append(RunResult.from_dict(raw))
    return runs

"""``rbs compare`` from the datasink: what each side names (build, platform) and the header
it gets. One side is a branch, release version or commit (``--*-branch/version/hash``) on a
platform (``--*-platform``, else ``--platform``); two different platforms make a platform
comparison, whose missing comparison build is the baseline's.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import redis

from redis_benchmarks_spec.analysis.compare import CompareOptions, ComparisonReport
from redis_benchmarks_spec.analysis.context import CompareContext, SideInfo
from redis_benchmarks_spec.analysis.engine import judge_samples
from redis_benchmarks_spec.analysis.host_noise import HostSide
from redis_benchmarks_spec.analysis.session_runs import ABRun
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.datasink import keys, reader
from redis_benchmarks_spec.inputs import lab_ab_report, session_pairs
from redis_benchmarks_spec.inputs.lab_ab_report import LabView
from redis_benchmarks_spec.results import binary

Samples = dict[str, tuple[list[float], list[float]]]


class CompareUsageError(UsageError):
    """The comparison cannot run as asked (missing side, bad date, no datasink...)."""

    def __init__(self, problem: str, hint: str = "", what: str = "") -> None:
        super().__init__(what, problem, hint)


@dataclass
class DatasinkSamples:
    """What a datasink comparison read: samples, problems, and each side's platform."""

    samples: Samples
    problems: list[str]
    hosts: list[HostSide] = field(default_factory=list)
    noise_flags: list[str] = field(default_factory=list)
    # per side, the dependency versions its runs' binaries agree on (inputs/side_binaries.py)
    dependencies: dict[str, dict[str, str]] = field(default_factory=dict)
    # the runs of one interleaved A/B session behind both sides' points, and each side's
    # series per row (inputs/session_pairs.py): judged as those pairs; None: two samples
    session: list[ABRun] | None = None
    series: tuple[dict[str, reader.Series], dict[str, reader.Series]] = ({}, {})
    # the lab's stored A/B of both sides' commits (inputs/lab_ab_report.py): its rows are
    # rendered, not judged again; ``session`` and ``series`` then hold only the other rows
    lab: LabView | None = None


def lab_and_session(client: redis.Redis, sides: tuple[dict[str, reader.Series],
                                                      dict[str, reader.Series]],
                    metric: str) -> tuple[LabView | None, list[str], list[ABRun] | None,
                                          tuple[dict[str, reader.Series],
                                                dict[str, reader.Series]]]:
    """How both sides' points are judged: the lab's stored A/B of their commits where
    there is one (with the notes of an entry left out), and for the other rows the runs of
    one interleaved A/B session when they are (``inputs.session_pairs``), with those rows'
    series."""
    lab, notes = lab_ab_report.find_for_sides(client, sides, metric)
    base, comp = sides
    if lab is not None:
        base, comp = ({r: s for r, s in side.items() if r not in lab.rows} for side in sides)
    session = session_pairs.session_runs(client, base, comp, metric) if base and comp \
        else None
    return lab, notes, session, (base, comp)


def judged(found: DatasinkSamples, options: CompareOptions) -> ComparisonReport:
    """The engine's report of what a datasink comparison read: the lab's stored A/B's rows
    as it judged them, the pairs of one interleaved A/B session when the points are, else
    two samples."""
    samples = {t: s for t, s in found.samples.items()
               if found.lab is None or t not in found.lab.rows}
    if found.lab is not None and not samples:
        return lab_ab_report.overlay(found.lab, None, found.problems)
    problems = [] if found.lab is not None else found.problems
    today = session_pairs.judged_session(found.session, found.series, options, problems) \
        if found.session is not None else judge_samples(samples, options, problems)
    if found.lab is None:
        return today
    return lab_ab_report.overlay(found.lab, today, found.problems)


def side_of(args: argparse.Namespace, side: str) -> keys.Side:
    """The ``keys.Side`` one side's --*-branch/version/hash names (across platforms, the
    comparison defaults to the baseline's build)."""
    for kind in keys.SIDE_KINDS:
        value = getattr(args, f"{side}_{kind}")
        if value:
            return keys.Side(kind, value)
    if side == "comparison" and across_platforms(args):
        return side_of(args, "baseline")
    raise CompareUsageError(f"give --{side}-branch, --{side}-version or --{side}-hash")


def side_platform(args: argparse.Namespace, side: str) -> str | None:
    """The platform of one side: its own flag, else ``--platform``."""
    return getattr(args, f"{side}_platform") or args.platform


def across_platforms(args: argparse.Namespace) -> bool:
    """The two sides name two different platforms."""
    base, comp = side_platform(args, "baseline"), side_platform(args, "comparison")
    return bool(base and comp and base != comp)


def date_ms(text: str | None, end_of_day: bool = False) -> int | None:
    """ISO date or datetime (UTC unless it says otherwise) as ms since the epoch."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CompareUsageError(f"not an ISO date: {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    if end_of_day and len(text) == 10:
        moment += timedelta(days=1, milliseconds=-1)
    return int(moment.timestamp() * 1000)


def selector(args: argparse.Namespace, side: keys.Side, platform: str | None
             ) -> reader.SeriesSelector:
    """The reader's ``SeriesSelector`` of one side."""
    return reader.SeriesSelector(
        metric=args.metric, side=side, platform=platform, topology=args.topology,
        build_variant=args.build_variant, from_ms=date_ms(args.from_date),
        to_ms=date_ms(args.to_date, end_of_day=True), last_n=args.last_n,
        tests_regexp=None if args.tests_regexp in ("", ".*") else args.tests_regexp)


def _datasink_side(args: argparse.Namespace, side: str, values: list[list[float]],
                   dependencies: dict[str, str]) -> SideInfo:
    chosen = side_of(args, side)
    kind, value = chosen.kind, chosen.value
    return SideInfo(label=f"{kind} {value}", commits=[value] if kind == "hash" else [],
                    versions=[value] if kind == "version" else [],
                    runs=sum(len(v) for v in values),
                    platform=(side_platform(args, side) or "") if across_platforms(args) else "",
                    dependencies=dependencies)


def compare_context(args: argparse.Namespace, found: DatasinkSamples) -> CompareContext:
    """The report header of a datasink comparison, from its selectors and platforms."""
    samples = found.samples
    across = across_platforms(args)
    named = {side_platform(args, side) for side in ("baseline", "comparison")}
    deps = [found.dependencies.get(side, {}) for side in ("baseline", "comparison")]
    return CompareContext(
        baseline=_datasink_side(args, "baseline", [b for b, _ in samples.values()], deps[0]),
        comparison=_datasink_side(args, "comparison", [c for _, c in samples.values()],
                                  deps[1]),
        platforms=sorted(p for p in named if p) if not across else [],
        build_variants=[args.build_variant] if args.build_variant else [],
        topologies=[args.topology] if args.topology else [],
        hosts=found.hosts, across_platforms=across, noise_flags=found.noise_flags,
        dependency_changes=binary.dependency_changes(*deps))

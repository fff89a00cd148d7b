"""What a comparison compared: per side the source, commits, versions and runs; where.

Every report (terminal, Markdown, HTML, the pull-request comment) opens with this header, so
a reader knows which builds the verdicts are about before reading a number. It is built from
the result documents of each side (directories, A/B sessions) or from the selectors and
point counts of a datasink query (read by :mod:`inputs`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from redis_benchmarks_spec.analysis.host_noise import HostSide
from redis_benchmarks_spec.common.records import known
from redis_benchmarks_spec.results import binary
from redis_benchmarks_spec.results.document import RunResult

SHORT_SHA = 10


@dataclass
class SideInfo:
    """One side of a comparison: where it came from and what it measured."""

    label: str = ""  # "results/A", "branch unstable", "redis-server ./old/redis-server"
    commits: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    runs: int = 0  # result documents (or datasink points) over every test of the side
    platform: str = ""  # set when the two sides ran on different platforms
    # dependency -> the version every run of the side that names it agrees on (the server's
    # allocator, the artifact's deps/: results/binary.py)
    dependencies: dict[str, str] = field(default_factory=dict)


@dataclass
class CompareContext:
    """The header of a comparison report."""

    baseline: SideInfo = field(default_factory=SideInfo)
    comparison: SideInfo = field(default_factory=SideInfo)
    platforms: list[str] = field(default_factory=list)
    build_variants: list[str] = field(default_factory=list)
    topologies: list[str] = field(default_factory=list)
    paired: bool = False
    # each side's platform record and noise (datasink comparisons, analysis.host_noise)
    hosts: list[HostSide] = field(default_factory=list)
    # the sides ran on two platforms: unpaired runs from two hosts, never a paired A/B
    across_platforms: bool = False
    noise_flags: list[str] = field(default_factory=list)
    # "jemalloc 5.2.1 → 5.3.0": each dependency the two sides ran at different versions
    dependency_changes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> CompareContext:
        data = known(cls, dict(raw))  # a newer writer's fields are left out
        data["baseline"] = SideInfo(**known(SideInfo, data.get("baseline", {})))
        data["comparison"] = SideInfo(**known(SideInfo, data.get("comparison", {})))
        data["hosts"] = [HostSide.from_dict(h) for h in data.get("hosts", [])]
        return cls(**data)


def _sorted_unique(values: Iterable[str | None]) -> list[str]:
    return sorted({v for v in values if v})


def _commit(doc: RunResult) -> str | None:
    sha = doc.context.git.hash or doc.redis_git_sha
    return sha if sha and sha.strip("0") else None  # a release build reports all zeros


def side_from_results(label: str, docs: list[RunResult]) -> SideInfo:
    """A side described by its result documents (git info first, else what the server said)."""
    commits = _sorted_unique(_commit(d) for d in docs)
    versions = _sorted_unique(d.context.git.version or d.redis_version for d in docs)
    platforms = _sorted_unique(d.context.platform for d in docs)
    return SideInfo(label=label, commits=commits, versions=versions, runs=len(docs),
                    platform=platforms[0] if len(platforms) == 1 else "",
                    dependencies=binary.agreed(d.binary for d in docs if d.binary))


def context_from_results(baseline: SideInfo, comparison: SideInfo,
                         docs: list[RunResult], paired: bool = False) -> CompareContext:
    """The header of a comparison whose sides are described, over ``docs`` of both sides;
    sides of one platform each, two different ones, are a platform comparison."""
    across = bool(baseline.platform and comparison.platform
                  and baseline.platform != comparison.platform)
    if not across:  # one platform: named once, in the "where" line
        baseline.platform = comparison.platform = ""
    return CompareContext(
        baseline=baseline, comparison=comparison,
        platforms=[] if across else _sorted_unique(d.context.platform for d in docs),
        build_variants=_sorted_unique(d.context.build_variant for d in docs),
        topologies=_sorted_unique(d.context.topology for d in docs), paired=paired,
        across_platforms=across, dependency_changes=binary.dependency_changes(
            baseline.dependencies, comparison.dependencies))


def short(sha: str) -> str:
    """A commit shortened for display (full hashes stay in JSON)."""
    return sha[:SHORT_SHA] if len(sha) == 40 else sha

"""Where Redis spends its instructions across every suite the lab ran for a commit.

The per-suite self instruction counts of one tracked commit (``datasink.lab_profile``) folded
into one table: each function's share of all the instructions per operation of all suites
(the sum of its self counts over the sum of the suites' whole counts), how many suites it
takes at least ``DOMINANT_PCT`` of, and the change of its share against the previous
profiled commit, in percentage points. The top of it is the "biggest win" list: functions
that cost much in many suites. The same fold per suite group (a suite's ``tested-groups``;
a suite of two groups counts in both) gives each group's top functions by share of that
group's instructions. Measured, not estimated: the counts are the runs' callgrind counts.

A suite's instructions are the larger of its count and the sum of its functions' self
counts: both are of the command path since the function table is the command path's own
(``telemetry.profilers.command_path``), so the shares of a commit add up to at most 100 %;
a table an older agent stored of the whole process (the timer's and INFO's functions too,
about 3x the count) is read as shares of its own sum rather than past 100 %. A function's
file is its source path in the Redis tree (``src/t_set.c``), not the build folder's.
Nothing here reads or prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

SuiteProfile = tuple[float, list[tuple[str, str, float]]]
DOMINANT_PCT = 5.0
TOP = 25
GROUP_TOP = 5
UNKNOWN_GROUP = "unknown"  # a suite whose profile was stored without its groups


@dataclass(frozen=True)
class LabRow:
    """One function across the lab's suites."""

    function: str
    file: str
    share_pct: float  # of all suites' instructions per op, this commit
    suites: int  # suites where it takes at least DOMINANT_PCT
    previous_share_pct: float | None  # the previous profiled commit's share
    change_pp: float | None  # share_pct - previous_share_pct


@dataclass(frozen=True)
class LabTable:
    commit: str
    previous: str | None
    suites: int
    rows: list[LabRow]
    groups: dict[str, LabTable] = field(default_factory=dict)  # group -> its own table


def source_path(file: str) -> str:
    """``file`` as a path in the Redis tree: ``/home/u/.cache/tree/src/t_set.c`` ->
    ``src/t_set.c``, ``.../deps/jemalloc/src/jemalloc.c`` -> ``deps/jemalloc/src/jemalloc.c``;
    a file outside it (glibc's) as given."""
    parts = PurePosixPath(file).parts
    if "src" in parts:
        start = len(parts) - 1 - parts[::-1].index("src")
        if start >= 2 and parts[start - 2] == "deps":  # a dependency's own deps/lua/src
            start -= 2
    elif "deps" in parts:
        start = len(parts) - 1 - parts[::-1].index("deps")
    else:
        return file
    return "/".join(parts[start:])


def _suite_total(suite_total: float, functions: list[tuple[str, str, float]]) -> float:
    """The instructions a suite's shares are of (module doc): never less than its
    functions' sum."""
    return max(suite_total, sum(per_op for _, _, per_op in functions))


def _shares(profiles: dict[str, SuiteProfile]) -> tuple[dict[str, float], dict[str, int],
                                                          dict[str, str]]:
    totals = [(_suite_total(t, fs), fs) for t, fs in profiles.values() if t > 0]
    total = sum(t for t, _ in totals)
    cost: dict[str, float] = {}
    dominant: dict[str, int] = {}
    files: dict[str, str] = {}
    for suite_total, functions in totals:
        for function, file, per_op in functions:
            cost[function] = cost.get(function, 0.0) + per_op
            files.setdefault(function, source_path(file) if file else "")
            if 100.0 * per_op / suite_total >= DOMINANT_PCT:
                dominant[function] = dominant.get(function, 0) + 1
    shares = {f: 100.0 * c / total for f, c in cost.items()} if total > 0 else {}
    return shares, dominant, files


def lab_table(commit: str, profiles: dict[str, SuiteProfile], previous: str | None = None,
              previous_profiles: dict[str, SuiteProfile] | None = None,
              top: int = TOP, groups: dict[str, tuple[str, ...]] | None = None) -> LabTable:
    """The ``top`` functions of ``commit`` by share of all suites' instructions; changes are
    measured on the suites both commits ran (so a suite added later moves nothing). With
    ``groups`` (test -> its groups), also a table per group of its ``GROUP_TOP`` functions."""
    table = _fold(commit, profiles, previous, previous_profiles, top)
    if groups:
        return replace(table, groups=group_tables(table, profiles, previous_profiles, groups))
    return table


def group_tables(table: LabTable, profiles: dict[str, SuiteProfile],
                 previous_profiles: dict[str, SuiteProfile] | None,
                 groups: dict[str, tuple[str, ...]]) -> dict[str, LabTable]:
    """Group -> the fold of its suites of ``table``'s commit (members by this commit's
    groups, so the previous commit's suites are compared group for group)."""
    members: dict[str, list[str]] = {}
    for suite in profiles:
        for group in groups.get(suite) or (UNKNOWN_GROUP,):
            members.setdefault(group, []).append(suite)
    out = {}
    for group, suites in sorted(members.items()):
        before = {s: previous_profiles[s] for s in suites if s in previous_profiles} \
            if previous_profiles else None
        out[group] = _fold(table.commit, {s: profiles[s] for s in suites}, table.previous,
                           before, GROUP_TOP)
    return out


def _fold(commit: str, profiles: dict[str, SuiteProfile], previous: str | None,
          previous_profiles: dict[str, SuiteProfile] | None, top: int) -> LabTable:
    shares, dominant, files = _shares(profiles)
    before: dict[str, float] | None = None
    if previous_profiles:
        common = set(profiles) & set(previous_profiles)
        before = _shares({s: previous_profiles[s] for s in common})[0]
        now_common = _shares({s: profiles[s] for s in common})[0]
    rows = []
    for function, share in sorted(shares.items(), key=lambda kv: -kv[1])[:top]:
        was = None if before is None else before.get(function, 0.0)
        change = None if was is None else now_common.get(function, 0.0) - was
        rows.append(LabRow(function, files.get(function, ""), share,
                           dominant.get(function, 0), was, change))
    return LabTable(commit, previous if previous_profiles else None, len(profiles), rows)

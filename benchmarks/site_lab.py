"""A year of the whole lab in the dimensions each page of the site reads (for site_pages.py).

A year is 4 platforms x 551 suites x 1,500 commits (history_scale.py's YEAR_*), 3.3 million
runs: more than this machine fills in a benchmark's time. No page reads all of it; each
reads a slice whose size is a year's:

- the branch page lists the newest 30 commits and reads the newest 40 (one round of
  ``web.branch_page``): the newest ``full`` commits ran every suite on every platform, so
  each commit it reads has its year's 2,204 by.hash series per metric (11,020 over the 5);
- the compare page judges every test of two commits on each platform: the newest
  ``compared`` commits ran every suite ``reps`` times (the engine judges samples, not single
  points), so a pair is 551 tests x 4 platforms of ``reps`` + ``reps`` runs;
- the history page reads one test's series on the branch: ``histories`` tests ran on every
  one of the 1,500 commits and every platform (older commits only these tests, and only the
  metric the pages read: their by.hash series are what gc deletes after its window).

Every run goes through the agents' push path (:func:`datasink.writer.push_results`), from
two processes (one per pair of platforms, so each series gets its points in time order).
Result documents are ~2.5 KB as stored: the branch page reads a run's first bytes, the
history page decodes 500 of them a chart; in a year-scale datasink the last 10 days' are
lean (~9.4 KB) and older ones folded by gc (a few hundred bytes). gc is not run: every
commit keeps its by.hash series (gc would delete those older than 10 days, ~41 commits;
the pages read the newest 40).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import time
from dataclasses import dataclass

import redis
from history_lab import METRIC_NAMES, LabShape, make_run
from history_scale import YEAR_COMMITS, YEAR_PLATFORMS, YEAR_SUITES

from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.results.document import RunResult

REP_SPACING_MS = 600_000  # a commit's repeated runs of a suite, 10 minutes apart


@dataclass(frozen=True)
class SiteLab:
    """Which slices of the year are filled (module doc)."""

    full: int = 40
    compared: int = 12
    reps: int = 5
    histories: int = 10
    commits: int = YEAR_COMMITS
    platforms: int = YEAR_PLATFORMS
    suites: int = YEAR_SUITES
    end_ms: int = 0

    @property
    def shape(self) -> LabShape:
        return LabShape(self.commits, self.platforms, self.suites, metrics=len(METRIC_NAMES),
                        doc_bytes=3_200, data_bytes=100, end_ms=self.end_ms)

    def suites_of(self, commit: int) -> range:
        return range(self.suites) if commit >= self.commits - self.full \
            else range(self.histories)

    def reps_of(self, commit: int) -> int:
        return self.reps if commit >= self.commits - self.compared else 1

    def newest(self, back: int = 0) -> str:
        """The sha of the commit ``back`` commits before the newest."""
        return self.shape.sha(self.commits - 1 - back)


def _value(commit: int, platform: int, suite: int, rep: int) -> float:
    """Ops/sec of a run: a few per mille of noise, and every 7th suite 5 % slower on every
    third commit (so comparisons find changes too); each platform its own values."""
    noise = 1 + 0.002 * ((rep * 7 + suite + commit + platform) % 5 - 2)
    slow = 0.95 if suite % 7 == 0 and commit % 3 == 0 else 1.0
    return (50_000.0 + 40 * suite + 1000 * platform) * noise * slow


def runs_of(lab: SiteLab, commit: int, platform: int) -> list[RunResult]:
    """The runs of one commit on one platform."""
    shape, out = lab.shape, []
    full = commit >= lab.commits - lab.full
    for suite in lab.suites_of(commit):
        run = make_run(shape, commit, platform, suite)
        for rep in range(lab.reps_of(commit)):
            value = _value(commit, platform, suite, rep)
            metrics = {m: value * (1 + i) for i, m in
                       enumerate(METRIC_NAMES if full else METRIC_NAMES[:1])}
            start = run.start_ms + rep * REP_SPACING_MS
            out.append(dataclasses.replace(run, run_id=f"{run.run_id}:{rep}", start_ms=start,
                                           end_ms=start + 60_000, metrics=metrics))
    return out


def _push_platforms(url: str, lab: SiteLab, platforms: list[int]) -> int:
    client = redis.Redis.from_url(url, socket_timeout=300)
    known: set[str] = set()
    pushed = 0
    for commit in range(lab.commits):
        for platform in platforms:
            report = push_results(client, runs_of(lab, commit, platform), known_series=known)
            if report.failed:
                raise RuntimeError(f"push failed: {list(report.failed.items())[:3]}")
            pushed += len(report.pushed)
    client.close()
    return pushed


def _worker(url: str, lab: SiteLab, platforms: list[int], out: multiprocessing.Queue) -> None:
    out.put(_push_platforms(url, lab, platforms))


def fill(url: str, lab: SiteLab, processes: int = 2) -> tuple[int, float]:
    """Push the lab (module doc); (runs pushed, wall seconds)."""
    started = time.monotonic()
    ctx = multiprocessing.get_context("fork")
    results: multiprocessing.Queue = ctx.Queue()
    shares = [[p for p in range(lab.platforms) if p % processes == i] for i in range(processes)]
    procs = [ctx.Process(target=_worker, args=(url, lab, share, results))
             for share in shares if share]
    for proc in procs:
        proc.start()
    pushed = sum(results.get(timeout=7200) for _ in procs)
    for proc in procs:
        proc.join(timeout=60)
    return pushed, time.monotonic() - started


def expected_runs(lab: SiteLab) -> int:
    """How many runs :func:`fill` pushes."""
    return sum(len(lab.suites_of(c)) * lab.reps_of(c) for c in range(lab.commits)) \
        * lab.platforms

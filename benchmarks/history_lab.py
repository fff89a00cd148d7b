"""A scaled-down year of the lab, as the agents would push it (for history_scale.py).

Commits of ``unstable`` in time order, each run on every platform by every suite; every
``release_every``-th commit is also a release version. ``agents`` processes push at once,
each the runs of its platform and its share of the suites, through the agents' own push
path (:func:`datasink.writer.push_results` with the series it created remembered), and
each also re-pushes the previous commit of another agent's share, as an agent that
recovers a dead holder's unconfirmed results does: the points must still come out exactly
once (those re-pushed points are work the clock sees but the ingest figure does not count).
Each agent builds its result documents and connects before the clock starts, as a lab
host's agent, a daemon holding its results, pushes them: the clock measures pushing.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import time
from dataclasses import dataclass, replace
from typing import Any

import redis

from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.loadgen.result import CommandResult, LatencySummary, ToolResult
from redis_benchmarks_spec.results.document import GitInfo, RunContext, RunResult

DAY_MS = 86_400_000
YEAR_MS = 365 * DAY_MS
BUILD_VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"
METRIC_NAMES = ("ALL_STATS.Totals.Ops/sec", "ALL_STATS.Totals.Latency",
                "ALL_STATS.Totals.Percentile_Latencies.p50.00",
                "ALL_STATS.Totals.Percentile_Latencies.p99.00",
                "ALL_STATS.Totals.Percentile_Latencies.p99.90")


@dataclass(frozen=True)
class LabShape:
    """One scale point: commits x platforms x suites x metrics, ending at ``end_ms``."""

    commits: int
    platforms: int = 4
    suites: int = 40
    metrics: int = 5
    release_every: int = 50
    # an ok memtier result.json is ~27-29 KB compact, ~19 KB of it the tool's raw JSON
    # (result.data) and ~8.7 KB the rest: measured over the result.json files on this machine
    doc_bytes: int = 29_000
    data_bytes: int = 19_000
    end_ms: int = 0

    @property
    def spacing_ms(self) -> int:
        """Commits spread over a year, as the lab's ~1,500 a year are."""
        return YEAR_MS // self.commits

    def commit_ms(self, commit: int) -> int:
        """The newest commit ran at ``end_ms`` (now), the oldest a year before."""
        return self.end_ms - (self.commits - 1 - commit) * self.spacing_ms - 60_000

    def platform(self, index: int) -> str:
        return f"lab-{index}"

    def test(self, index: int) -> str:
        return f"memtier_benchmark-scale-{index:04d}"

    def sha(self, commit: int) -> str:
        return f"{commit:08x}" + "c0ffee" * 5 + "ab"

    def version(self, commit: int) -> str | None:
        if commit % self.release_every:
            return None
        return f"8.{commit // 1000}.{commit % 1000}"

    @property
    def runs(self) -> int:
        return self.commits * self.platforms * self.suites


@functools.lru_cache(maxsize=4)
def _padding(size: int) -> dict[str, float]:
    """``size`` bytes of JSON or so, as INFO deltas or the tool's raw output carry."""
    return {f"info_field_{i:03d}": 1000.0 + i for i in range(max(0, size) // 24)}


def make_run(shape: LabShape, commit: int, platform: int, suite: int) -> RunResult:
    """One ok run of ``suite`` for ``commit`` on ``platform``."""
    start = shape.commit_ms(commit) + platform * 1000 + suite * 10
    git = GitInfo(branch="unstable", version=shape.version(commit), hash=shape.sha(commit),
                  commit_time_ms=start)
    context = RunContext(triggering_env="ci", platform=shape.platform(platform),
                         build_variant=BUILD_VARIANT, git=git)
    latency = LatencySummary(count=100_000, mean_ms=0.5, percentiles_ms={"p50.00": 0.4})
    tool = ToolResult("memtier_benchmark", CommandResult(1e5, latency), histogram="HIST" * 120,
                      data={"ALL STATS": _padding(shape.data_bytes)})
    test = shape.test(suite)
    return RunResult(
        test_name=test, run_id=f"{test}:{platform}:{commit}", status="ok", start_ms=start,
        end_ms=start + 60_000, context=context, result=tool, tested_groups=["string"],
        tested_commands=["get"],
        info_delta=_padding(shape.doc_bytes - shape.data_bytes - 2800),
        metrics={m: 1000.0 + suite + commit + i for i, m in
                 enumerate(METRIC_NAMES[:shape.metrics])})


@dataclass(frozen=True)
class AgentJob:
    url: str
    shape: LabShape
    agent: int
    agents: int

    def share(self) -> list[tuple[int, int]]:
        """(platform, suite) pairs this agent runs: its platform, its slice of the suites."""
        if self.agents < self.shape.platforms:  # a host runs several platforms' queues
            return [(p, s) for p in range(self.shape.platforms) if p % self.agents == self.agent
                    for s in range(self.shape.suites)]
        per_platform = self.agents // self.shape.platforms
        platform = self.agent % self.shape.platforms
        slot = self.agent // self.shape.platforms
        return [(platform, s) for s in range(self.shape.suites) if s % per_platform == slot]


@dataclass
class AgentOutcome:
    pushed: int = 0
    repushed: int = 0
    points: int = 0
    failed: int = 0
    started: float = 0.0  # time.monotonic() (one clock for every process) of the first push
    ended: float = 0.0
    cpu_s: float = 0.0  # this process's CPU while it pushed (user + system)

    @property
    def elapsed_s(self) -> float:
        return self.ended - self.started


def agent_runs(job: AgentJob) -> list[tuple[list[RunResult], list[RunResult]]]:
    """Per commit: this agent's runs, and the neighbour's previous-commit runs it re-pushes.
    Built before the clock starts: a real agent's results exist before it pushes them."""
    neighbour = replace(job, agent=(job.agent + 1) % job.agents)
    out = []
    for commit in range(job.shape.commits):
        runs = [make_run(job.shape, commit, p, s) for p, s in job.share()]
        again = [make_run(job.shape, commit - 1, p, s) for p, s in neighbour.share()[:2]] \
            if commit and job.agents > 1 else []
        out.append((runs, again))
    return out


def run_agent(job: AgentJob, start: Any = None) -> AgentOutcome:
    """Push this agent's runs commit by commit; re-push a neighbour's previous commit.
    ``start`` (a barrier) lines the agents up once every one has built its runs and
    connected, so the clock measures pushing only."""
    client = redis.Redis.from_url(job.url, socket_timeout=120)
    client.ping()
    work = agent_runs(job)
    known: set[str] = set()
    out = AgentOutcome()
    if start is not None:
        start.wait()
    cpu, out.started = _cpu_s(), time.monotonic()
    for runs, again in work:
        report = push_results(client, runs, known_series=known)
        out.pushed += len(report.pushed)
        out.points += report.datapoints
        out.failed += len(report.failed)
        if again:
            out.repushed += len(push_results(client, again, known_series=known).pushed)
    out.ended, out.cpu_s = time.monotonic(), _cpu_s() - cpu
    client.close()
    return out


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def _agent_process(job: AgentJob, start: Any, results: Any) -> None:
    results.put((job.agent, run_agent(job, start)))


def fill(url: str, shape: LabShape, agents: int) -> tuple[list[AgentOutcome], float]:
    """Every agent pushing at once (processes, started and lined up before the clock); the
    outcomes and the wall time from the first push's start to the last push's end."""
    jobs = [AgentJob(url, shape, a, agents) for a in range(agents)]
    if agents == 1:
        outcomes = [run_agent(jobs[0])]
    else:
        ctx = multiprocessing.get_context("fork")
        start, results = ctx.Barrier(agents), ctx.Queue()
        procs = [ctx.Process(target=_agent_process, args=(job, start, results))
                 for job in jobs]
        for proc in procs:
            proc.start()
        got = dict(results.get(timeout=3600) for _ in procs)
        for proc in procs:
            proc.join(timeout=60)
        outcomes = [got[a] for a in range(agents)]
    return outcomes, max(o.ended for o in outcomes) - min(o.started for o in outcomes)

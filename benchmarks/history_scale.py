"""Does a year of the whole lab fit in the datasink, and can Grafana and the PR comment read it?

For each scale point (``--commits``), a fresh redis-stack-server (the embedded datasink, in a
temporary directory on a free port, stopped by its own pid) is filled with a scaled-down
year of the lab (benchmarks/history_lab.py): COMMITS x PLATFORMS x SUITES runs of METRICS
metrics, pushed by AGENTS processes at once through the agents' push path. Then it prints:

- ingest points/s (all agents together, wall time) and the check of item 4: every point
  once (no loss, no duplicate, with a neighbour's runs re-pushed concurrently);
- memory (INFO used_memory less the empty server) and disk (RDB after SAVE) per series and
  per point, by key family (MEMORY USAGE of samples);
- p50/p95 latency of each Grafana panel query (datasink/grafana.py, as the plugin sends
  it: TS.MRANGE over the dashboard's 90 days), of the variables' SMEMBERS, and of the
  pull-request comparison (notify/pr_compare.py: each of its queries, and the whole
  compare_platform);
- gc with the default window (datasink/retention.py): memory after, and after a restart.

At the end: a linear fit over the scale points (COMMITSxSUITES), extrapolated to a year of 4
platforms x 551 suites x 1,500 commits, without and with gc, against the targets (8 GB,
50,000 points/s, 100 ms p95).

Usage: flock /tmp/rbs-heavy.lock .venv/bin/python benchmarks/history_scale.py \\
           [--points 40x40,80x40,40x160] [--agents 8]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from history_lab import BUILD_VARIANT, METRIC_NAMES, LabShape, fill

from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.datasink import (
    commit_points,
    grafana,
    keys,
    reader,
    retention,
    run_reader,
)
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.events.messages import ArtifactRef, BuildEvent
from redis_benchmarks_spec.notify import pr_compare
from redis_benchmarks_spec.pullrequest.state import PrInfo

YEAR_COMMITS, YEAR_SUITES, YEAR_PLATFORMS = 1500, 551, 4
TARGET_BYTES, TARGET_INGEST, TARGET_P95_MS = 8e9, 50_000, 100.0


@dataclass
class Point:
    """What one scale point measured."""

    shape: LabShape
    series: dict[str, int] = field(default_factory=dict)
    points: int = 0
    memory: int = 0
    rdb: int = 0
    family_bytes: dict[str, float] = field(default_factory=dict)
    ingest: float = 0.0
    cpu_per_k: tuple[float, float] = (0.0, 0.0)  # CPU s per 1,000 points: agents, server
    latency: dict[str, tuple[float, float]] = field(default_factory=dict)
    memory_after_gc: int = 0
    gc_line: str = ""


def percentiles(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    fn()  # warm: imports, connections, the server's first touch of the keys
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.95 * len(samples)))]


def server_cpu_s(client: redis.Redis) -> float:
    """The server's CPU seconds, with its finished children's (AOF rewrites, snapshots: a
    push that grows the AOF sets them off). Waits for a child still running to end."""
    while True:
        persistence = client.info("persistence")
        if not (persistence["aof_rewrite_in_progress"] or persistence["rdb_bgsave_in_progress"]):
            break
        time.sleep(0.05)
    info = client.info("cpu")
    return sum(float(info[f"used_cpu_{kind}"]) for kind in
               ("user", "sys", "user_children", "sys_children"))


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def count_samples(client: redis.Redis, kind: str) -> tuple[int, int, int]:
    """(series, samples, most samples at one timestamp of one series) of one side kind."""
    reply = client.execute_command("TS.MRANGE", "-", "+", "AGGREGATION", "count", 10**13,
                                   "FILTER", f"by={kind}")
    entries = reader._entries(reply)
    counts = [int(float(s[1])) for _key, _labels, samples in entries for s in samples]
    return len(entries), sum(counts), max(counts, default=0)


def check_exactly_once(client: redis.Redis, shape: LabShape) -> str:
    """Item 4: every run's points once, whatever the concurrent re-pushes did."""
    per_commit = shape.platforms * shape.suites * shape.metrics
    b_series, b_samples, _ = count_samples(client, "branch")
    h_series, h_samples, h_most = count_samples(client, "hash")
    docs = run_reader.count_runs(client)
    ok = (b_series == per_commit and b_samples == per_commit * shape.commits and h_series == per_commit * shape.commits
          and h_samples == h_series and h_most == 1 and docs == shape.runs)
    return (f"{'OK' if ok else 'MISMATCH'}: by.branch {b_series} series {b_samples} points, "
            f"by.hash {h_series} series {h_samples} points (want {per_commit * shape.commits} "
            f"each, 1 a series), documents {docs} (want {shape.runs})")


def family_bytes(client: redis.Redis, shape: LabShape) -> dict[str, float]:
    """Mean MEMORY USAGE of a few keys of each family."""
    out = {}
    for kind in ("branch", "version", "hash"):
        found = reader.series_keys(client, [f"by={kind}", "platform=lab-0"])[:20]
        out[f"by.{kind} series"] = statistics.mean(
            int(client.memory_usage(k, samples=0) or 0) for k in found) if found else 0.0
    runs = [keys.run_key(f"{shape.test(s)}:0:{c}") for s in range(3) for c in range(3)]
    out["run document"] = statistics.mean(int(client.memory_usage(k) or 0) for k in runs)
    return out


def dashboard_queries(shape: LabShape) -> dict[str, list[str]]:
    """Each panel's TS.MRANGE as Grafana sends it over the dashboard's 90 days."""
    release = (shape.commits - 1) // shape.release_every * shape.release_every
    values = {"$branch": "unstable", "$version": shape.version(release) or "",
              "$test": shape.test(1), "$platform": "lab-1", "$topology": "oss-standalone",
              "$build_variant": BUILD_VARIANT, "$env": "ci", "$org": "redis", "$repo": "redis"}
    span = [str(shape.end_ms - 90 * 86_400_000), str(shape.end_ms)]
    out = {}
    for family, panels in grafana.FAMILIES.items():
        for panel in panels:
            if panel.metric not in METRIC_NAMES[:shape.metrics]:
                continue
            filt = grafana.panel_filter(panel)
            for var, value in values.items():
                filt = filt.replace(var, keys.label_value(value))
            out[f"panel {family}: {panel.title}"] = ["TS.MRANGE", *span, "FILTER",
                                                     *filt.split()]
    for name, (which, _) in grafana.INDEX_VARS.items():
        pattern = grafana.index_set_pattern(which)
        out[f"variable ${name}"] = ["SMEMBERS", pattern.replace("$env", "ci").replace(
            "$org", "redis").replace("$repo", "redis")]
    return out


def pr_queries(client: redis.Redis, shape: LabShape,
               base: int | None = None) -> dict[str, Callable[[], Any]]:
    """The PR comment's reads, one by one and whole (base: the previous commit, unless given)."""
    head = shape.commits - 1
    base = shape.commits - 2 if base is None else base
    event = BuildEvent(id="ev-1", request_id="rq-1", org="redis", repo="redis",
                       branch="feature", sha=shape.sha(head), commit_time_ms=0,
                       build_variant=BUILD_VARIANT, built_at_ms=shape.commit_ms(head) - 1,
                       artifact=ArtifactRef("redis", "rbs:artifact:x", "0" * 64, 1),
                       redis_version="255.255.255")
    info = PrInfo("redis", "redis", 1, shape.sha(head), "feature", "unstable", shape.sha(base))
    opts = pr_compare.PrCompareOptions(metric=METRIC_NAMES[0])
    head_sel = pr_compare._selector(event, "lab-1", keys.Side("hash", event.sha), opts)
    branch_sel = pr_compare._selector(event, "lab-1", keys.Side("branch", "unstable"), opts)
    last = branch_sel.__class__(**{**branch_sel.__dict__, "last_n": opts.baseline_points})
    return {
        "pr: base commit has series (TS.QUERYINDEX)": lambda: pr_compare.baseline_side(
            client, event, "lab-1", info, opts),
        "pr: head commit, all tests (TS.MRANGE)": lambda: reader.series_for_tests(
            client, head_sel),
        "pr: base branch last 10, all tests (TS.MREVRANGE)": lambda: reader.series_for_tests(
            client, last),
        "pr: head commit's documents (one MGET)": lambda: pr_compare.head_runs(
            client, event, "lab-1", [shape.test(s) for s in range(shape.suites)]),
        "pr: base commit's points on its branch (after gc)": lambda: commit_points.on_branch(
            client, commit_points.CommitQuery(keys.Scope(), shape.sha(base), "lab-1",
                                              BUILD_VARIANT, opts.metric),
            [shape.test(s) for s in range(shape.suites)]),
        "pr: whole compare_platform (with documents)": lambda: pr_compare.compare_platform(
            client, event, "lab-1", info, opts),
    }


def measure_queries(client: redis.Redis, shape: LabShape, repeat: int) -> dict[str, Any]:
    out = {name: percentiles(functools.partial(client.execute_command, *cmd), repeat)
           for name, cmd in dashboard_queries(shape).items()}
    out.update({name: percentiles(fn, max(5, repeat // 4))
                for name, fn in pr_queries(client, shape).items()})
    return out


def rdb_bytes(client: redis.Redis, data_dir: Path) -> int:
    client.save()
    return (data_dir / "datasink.rdb").stat().st_size


def run_point(shape: LabShape, args: argparse.Namespace) -> Point:
    point = Point(shape)
    with tempfile.TemporaryDirectory(prefix="rbs-history-scale-") as tmp:
        sink = EmbeddedDatasink(Path(tmp), port=free_port())
        sink.up()
        try:
            client = sink.client(timeout=600)
            empty = used_memory(client)
            cpu_before = server_cpu_s(client)
            outcomes, wall = fill(sink.url or "", shape, args.agents)
            server_cpu = server_cpu_s(client) - cpu_before
            pushed_points = sum(o.points for o in outcomes)
            agents_cpu = sum(o.cpu_s for o in outcomes)
            point.ingest = pushed_points / wall
            point.cpu_per_k = (1000 * agents_cpu / pushed_points, 1000 * server_cpu / pushed_points)
            print(f"  ingest: {pushed_points:,} points ({sum(o.pushed for o in outcomes):,} "
                  f"runs + {sum(o.repushed for o in outcomes):,} re-pushed) by {args.agents} "
                  f"agent(s) in {wall:.1f} s = {point.ingest:,.0f} points/s; failed "
                  f"{sum(o.failed for o in outcomes)}; CPU per 1,000 points: agents "
                  f"{point.cpu_per_k[0] * 1000:.1f} ms, server {point.cpu_per_k[1] * 1000:.1f} ms "
                  f"(with its AOF rewrites; {100 * server_cpu / wall:.0f} % of one core), load "
                  f"average {os.getloadavg()[0]:.1f}", flush=True)
            print(f"  exactly once: {check_exactly_once(client, shape)}", flush=True)
            point.memory = used_memory(client) - empty
            point.rdb = rdb_bytes(client, Path(tmp))
            point.series = {k: count_samples(client, k)[0] for k in ("branch", "version", "hash")}
            point.points = sum(count_samples(client, k)[1] for k in ("branch", "version", "hash"))
            point.family_bytes = family_bytes(client, shape)
            point.latency = measure_queries(client, shape, args.repeat)
            report = retention.gc(client, now_ms=shape.end_ms)
            point.memory_after_gc = used_memory(client) - empty
            point.gc_line = report.summary()
            expired = pr_queries(client, shape, base=1)
            for name in ("pr: base commit's points on its branch (after gc)",
                         "pr: whole compare_platform (with documents)"):
                point.latency[f"{name}, base expired by gc"] = percentiles(
                    expired[name], max(5, args.repeat // 4))
            sink.down()
            sink = EmbeddedDatasink(Path(tmp))  # the same data directory, started again
            sink.up(timeout=600)
            client = sink.client(timeout=600)
            after = count_samples(client, "hash")[0]
            point.gc_line += (f"; after a restart: {count_samples(client, 'branch')[1]:,} "
                              f"by.branch points, {after:,} by.hash series")
        finally:
            sink.down()
    return point


def print_point(p: Point) -> None:
    total_series = sum(p.series.values())
    print(f"  series {p.series} = {total_series:,}; points {p.points:,}; documents "
          f"{p.shape.runs:,}")
    print(f"  memory {p.memory / 1e6:,.1f} MB = {p.memory / total_series:,.0f} B/series, "
          f"{p.memory / p.points:,.0f} B/point; RDB {p.rdb / 1e6:,.1f} MB = "
          f"{p.rdb / total_series:,.0f} B/series, {p.rdb / p.points:,.0f} B/point")
    print("  by family (MEMORY USAGE, mean): " + ", ".join(
        f"{k} {v:,.0f} B" for k, v in p.family_bytes.items()))
    for name, (p50, p95) in p.latency.items():
        print(f"  {name}: p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    print(f"  gc (by.hash {retention.DEFAULT_WINDOW_DAYS} days, documents "
          f"{retention.DEFAULT_DOCUMENT_DAYS} days): {p.gc_line}; memory after gc "
          f"{p.memory_after_gc / 1e6:,.1f} MB")


def _fit(xs: list[float], ys: list[float], x: float) -> float:
    """A least-squares line through (xs, ys), read at ``x`` (never below the last y)."""
    if len(set(xs)) < 2:
        return ys[-1]
    slope, intercept = statistics.linear_regression(xs, ys)
    return max(ys[-1], intercept + slope * x)


def _fit_size(points: list[Point], sizes: list[float]) -> float:
    """Bytes of a year: ``a x runs + b x (suites x platforms) + c`` fitted over the points
    (by.hash series and documents grow with runs; by.branch series with suites x platforms
    only), or linear in runs with fewer than three distinct shapes."""
    year_runs = YEAR_COMMITS * YEAR_PLATFORMS * YEAR_SUITES
    rows = [[p.shape.runs, p.shape.suites * p.shape.platforms, 1.0] for p in points]
    if len({(r[0], r[1]) for r in rows}) < 3 or len({r[1] for r in rows}) < 2:
        return _fit([r[0] for r in rows], sizes, year_runs)
    (a, b, c), *_ = numpy.linalg.lstsq(numpy.array(rows), numpy.array(sizes), rcond=None)
    return float(a * year_runs + b * YEAR_SUITES * YEAR_PLATFORMS + c)


def extrapolate(points: list[Point]) -> None:
    """Memory: by.hash series and documents grow with runs, by.branch series with suites x
    platforms (:func:`_fit_size`); a year is 1,500 commits x 4 platforms x 551 suites. Latency: grows in
    commits and in suites (:func:`_latency_year`)."""
    year_runs = YEAR_COMMITS * YEAR_PLATFORMS * YEAR_SUITES
    biggest = max(points, key=lambda p: p.shape.runs)
    year = _fit_size(points, [float(p.memory) for p in points])
    rdb = _fit_size(points, [float(p.rdb) for p in points])
    print(f"\nyear of {YEAR_PLATFORMS} platforms x {YEAR_SUITES} suites x {YEAR_COMMITS} "
          f"commits ({year_runs:,} runs; scale factor x{year_runs / biggest.shape.runs:,.0f} "
          f"from the largest point): without gc memory "
          f"{year / 1e9:,.1f} GB, RDB {rdb / 1e9:,.1f} GB (target < {TARGET_BYTES / 1e9:.0f} "
          f"GB: {'met' if year < TARGET_BYTES else 'MISSED'})")
    gc_year = _fit_size(points, [float(p.memory_after_gc) for p in points])
    print(f"with gc at its defaults (by.hash {retention.DEFAULT_WINDOW_DAYS} days, documents "
          f"whole {retention.DEFAULT_DOCUMENT_DAYS} days, folded after): memory "
          f"{gc_year / 1e9:,.1f} GB (target: {'met' if gc_year < TARGET_BYTES else 'MISSED'})")
    for name in biggest.latency:
        p95 = [p.latency[name][1] for p in points]
        est, how = _latency_year(points, name)
        verdict = "" if name.endswith("compare_platform (with documents)") else \
            (" met" if est < TARGET_P95_MS else " MISSED")
        print(f"  p95 {name}: {' -> '.join(f'{v:.2f}' for v in p95)} ms; year {est:,.1f} ms "
              f"({how}){verdict}")


def _latency_year(points: list[Point], name: str) -> tuple[float, str]:
    """A query's p95 at a year: the largest point's, plus its growth per commit (between
    points of equal suites) over the year's commits and per suite (between points of equal
    commits) over 551 suites; a slope below zero (noise) counts as none."""
    base = max(points, key=lambda p: p.shape.runs)
    est = base.latency[name][1]
    parts = []
    for axis, year_value in (("commits", YEAR_COMMITS), ("suites", YEAR_SUITES)):
        other = "suites" if axis == "commits" else "commits"
        pair = [p for p in points if getattr(p.shape, other) == getattr(points[0].shape, other)]
        if len(pair) < 2 or len({getattr(p.shape, axis) for p in pair}) < 2:
            continue
        xs = [float(getattr(p.shape, axis)) for p in pair]
        slope = max(0.0, statistics.linear_regression(xs, [p.latency[name][1] for p in pair])[0])
        est += slope * (year_value - getattr(base.shape, axis))
        parts.append(f"{slope:+.3f} ms per {axis[:-1]}")
    return est, ", ".join(parts) or "one shape"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", default="40x40,80x40,40x160",
                        help="scale points, COMMITSxSUITES, 2 or more")
    parser.add_argument("--platforms", type=int, default=4)
    parser.add_argument("--metrics", type=int, default=5)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    try:
        shapes = [tuple(int(n) for n in p.split("x")) for p in args.points.split(",")]
    except ValueError:
        parser.error(f"--points {args.points!r}: COMMITSxSUITES,COMMITSxSUITES,...")
    if len(shapes) < 2 or any(len(s) != 2 for s in shapes):
        parser.error("--points: at least two scale points, each COMMITSxSUITES")
    end_ms = int(time.time() * 1000)
    points = []
    for commits, suites in shapes:
        shape = LabShape(commits, args.platforms, suites, args.metrics, end_ms=end_ms)
        print(f"scale point: {commits} commits x {args.platforms} platforms x {suites} suites "
              f"x {args.metrics} metrics ({shape.runs:,} runs)", flush=True)
        points.append(run_point(shape, args))
        print_point(points[-1])
    extrapolate(points)
    return 0


if __name__ == "__main__":
    sys.exit(main())

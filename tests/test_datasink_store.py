"""Embedded datasink life cycle and the "nothing lost" push of result files, against real
redis-stack-server processes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.datasink import reader
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.session_push import push_session
from redis_benchmarks_spec.datasink.store import (
    DatasinkConfig,
    connect,
    marker_path,
    push_results_dir,
)
from redis_benchmarks_spec.results.document import RunResult
from tests.cli import rbs_in_process
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    METRICS,
    client_fixture,
    datasink_fixture,
    make_result,
    start_datasink,
)


def write_session(directory: Path, tests: int = 3, runs: int = 2) -> list[RunResult]:
    """Result files laid out like the runner's (``<test>/result.json``) plus a summary."""
    results = []
    for t in range(tests):
        for r in range(runs):
            result = make_result(r, test_name=f"test-{t}")
            folder = directory / f"run-{r}" / result.test_name
            folder.mkdir(parents=True)
            result.write(folder / "result.json")
            results.append(result)
    (directory / "summary.json").write_text(json.dumps([{"test": "not a result"}]))
    return results


def all_points(client: redis.Redis) -> dict[str, list[tuple[int, float]]]:
    return {key: [(int(t), float(v)) for t, v in client.execute_command("TS.RANGE", key, "-", "+")]
            for key in reader.series_keys(client, ["by=(branch,version,hash)"])}


def expected_datapoints(results: list[RunResult]) -> int:
    return len(results) * 3 * len(METRICS)  # three sides (branch, version, hash) per metric


def test_push_dir_pushes_every_result_marks_files_and_second_push_adds_nothing(
        tmp_path: Path, client: redis.Redis) -> None:
    results = write_session(tmp_path / "results")
    report = push_results_dir(client, tmp_path / "results")
    assert report.ok and sorted(report.pushed) == sorted(r.run_id for r in results)
    assert report.datapoints == expected_datapoints(results)
    assert report.round_trips == 1  # a batch of runs goes in one pipelined round trip
    files = sorted((tmp_path / "results").rglob("result.json"))
    assert all(marker_path(f).is_file() for f in files)
    before = all_points(client)
    again = push_results_dir(client, tmp_path / "results")
    assert again.ok and again.pushed == [] and len(again.files_already_pushed) == len(files)
    forced = push_results_dir(client, tmp_path / "results", force=True)
    assert len(forced.pushed) == len(results)
    assert all_points(client) == before


def test_unreachable_datasink_keeps_files_then_push_restores_every_point(
        tmp_path: Path) -> None:
    results = write_session(tmp_path / "results")
    sink = start_datasink(tmp_path / "sink")
    client = sink.client(timeout=2)
    sink.down()
    report = push_results_dir(client, tmp_path / "results")
    assert not report.ok and "unreachable" in report.error
    assert len(report.files_not_pushed) == len(results) and report.pushed == []
    files = sorted((tmp_path / "results").rglob("result.json"))
    assert len(files) == len(results)
    assert not any(marker_path(f).exists() for f in files)
    assert [RunResult.read(f) for f in files]  # untouched, still valid documents
    sink.up()
    try:
        restored = push_results_dir(sink.client(), tmp_path / "results")
        assert restored.ok and len(restored.pushed) == len(results)
        points = all_points(sink.client())
        assert sum(len(p) for p in points.values()) == expected_datapoints(results)
    finally:
        sink.down()


def test_data_persists_across_down_and_up(tmp_path: Path) -> None:
    sink = start_datasink(tmp_path / "sink")
    try:
        push_results_dir(sink.client(), _session(tmp_path))
        before = all_points(sink.client())
        assert before
    finally:
        sink.down()
    again = EmbeddedDatasink(tmp_path / "sink")  # another process would do just this
    assert not again.status().running
    again.up()
    try:
        assert all_points(again.client()) == before
    finally:
        again.down()


def _session(tmp_path: Path) -> Path:
    write_session(tmp_path / "results", tests=2, runs=2)
    return tmp_path / "results"


def test_status_and_down_from_another_instance_use_the_pidfile(tmp_path: Path) -> None:
    sink = start_datasink(tmp_path / "sink")
    other = EmbeddedDatasink(tmp_path / "sink")
    state = other.status()
    assert state.running and state.url == sink.url and state.pid
    assert other.down() is True
    assert not sink.status().running
    assert (tmp_path / "sink" / "datasink.rdb").is_file()  # SIGTERM made it save first


def test_down_never_signals_a_process_that_is_not_ours(tmp_path: Path) -> None:
    data_dir = tmp_path / "sink"
    data_dir.mkdir()
    sink = EmbeddedDatasink(data_dir)
    sink.pidfile.write_text(f"{os.getpid()}\n")  # this pytest process: alive, not a datasink
    state = sink.status()
    assert not state.running and "stale pidfile" in state.detail
    assert sink.down() is False  # and we are still here to check it


def test_credentials_are_used_and_a_refusal_keeps_results(tmp_path: Path,
                                                          datasink: EmbeddedDatasink) -> None:
    admin = datasink.client()
    admin.execute_command("ACL", "SETUSER", "bench", "on", ">s3cret", "~*", "+@all")
    try:
        results_dir = _session(tmp_path)
        wrong = connect(DatasinkConfig(url=datasink.url, username="bench", password="nope"))
        refused = push_results_dir(wrong, results_dir)
        assert not refused.ok and refused.files_not_pushed
        right = connect(DatasinkConfig(url=datasink.url, username="bench", password="s3cret"))
        assert push_results_dir(right, results_dir).ok
    finally:
        admin.execute_command("ACL", "DELUSER", "bench")


def test_config_hides_the_password_and_tls_options_switch_to_rediss() -> None:
    cfg = DatasinkConfig(url="redis://bench:pw@example.org:6380/0", ssl_ca_certs="/ca.pem")
    assert cfg.uses_tls and cfg.display_url == "rediss://bench@example.org:6380/0"
    client = connect(cfg)
    kwargs = client.connection_pool.connection_kwargs
    assert kwargs["ssl_ca_certs"] == "/ca.pem" and kwargs["password"] == "pw"
    assert client.connection_pool.connection_class is redis.SSLConnection


def test_rbs_run_session_push_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      datasink: EmbeddedDatasink, client: redis.Redis) -> None:
    results_dir = _session(tmp_path)
    outcome = push_session(results_dir, datasink.url)
    assert outcome.ok and "4 run(s) pushed" in outcome.message
    assert rbs_in_process(["datasink", "push", str(results_dir), "--datasink", datasink.url]) == 0
    assert "4 already pushed" in capsys.readouterr().out
    assert rbs_in_process(["datasink", "status", "--datasink", datasink.url]) == 0
    out = capsys.readouterr().out
    assert f"series: {reader.count_series(client)}" in out and "2 test(s)" in out


def test_cli_up_status_down_of_an_embedded_datasink(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    data_dir = str(tmp_path / "sink")
    assert rbs_in_process(["datasink", "status", "--data-dir", data_dir]) == 1
    assert rbs_in_process(["datasink", "up", "--data-dir", data_dir]) == 0
    try:
        assert rbs_in_process(["datasink", "push", str(_session(tmp_path)), "--data-dir",
                               data_dir]) == 0
        assert rbs_in_process(["datasink", "status", "--data-dir", data_dir]) == 0
        out = capsys.readouterr().out
        assert "running at redis://127.0.0.1:" in out and "series: 12" in out
    finally:
        assert rbs_in_process(["datasink", "down", "--data-dir", data_dir]) == 0
    assert "stopped" in capsys.readouterr().out

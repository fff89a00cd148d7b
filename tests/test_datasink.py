"""Datasink additions on top of the key-scheme/writer/store tests: the run index, run
documents by id, test regexps in selectors, marker contents and status values. All against
the real redis-stack-server of the session ``datasink`` fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.datasink import keys, reader, run_reader
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.store import marker_path, push_results_dir
from redis_benchmarks_spec.datasink.writer import push_results
from tests.cli import rbs_in_process
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    METRICS,
    client_fixture,
    datasink_fixture,
    make_result,
)

SCOPE = keys.Scope("ci", "redis", "redis")


def unstable(**kw: object) -> reader.SeriesSelector:
    return reader.SeriesSelector(metric=METRICS[0], side=keys.Side("branch", "unstable"),
                                 **kw)  # type: ignore[arg-type]


def test_runs_index_counts_each_run_once_and_documents_come_back(client: redis.Redis) -> None:
    results = [make_result(r, test_name=f"t-{t}") for t in range(2) for r in range(3)]
    push_results(client, results)
    push_results(client, results)  # idempotent: the run index does not grow either
    assert keys.index_keys(SCOPE).runs == "ci.benchmarks.redis/ci/redis/redis:runs"
    assert run_reader.list_runs(client, SCOPE) == sorted(r.run_id for r in results)
    assert run_reader.count_runs(client) == len(results)
    doc = run_reader.run_document(client, results[0].run_id)
    assert doc == results[0]
    with pytest.raises(run_reader.RunNotFoundError, match="ci.benchmarks.redis/runs/nope"):
        run_reader.run_document(client, "nope")


def test_selector_tests_regexp_reads_only_matching_tests(client: redis.Redis) -> None:
    names = ["memtier_benchmark-1Mkeys-string-get-10B", "memtier_benchmark-1Mkeys-hash-hget",
             "redis-benchmark-set"]
    push_results(client, [make_result(r, test_name=n) for n in names for r in range(2)])
    got = reader.series_for_tests(client, unstable(tests_regexp=r"^memtier_.*1Mkeys"))
    assert sorted(got) == sorted(names[:2])
    assert all(len(points) == 2 for points in got.values())
    assert reader.series_for_tests(client, unstable(tests_regexp="^nothing$")) == {}
    other_env = unstable(tests_regexp="memtier", triggering_env="nightly")
    assert reader.series_for_tests(client, other_env) == {}
    with pytest.raises(ValueError, match="tests regexp"):
        reader.series_for_tests(client, unstable(tests_regexp="("))


def test_marker_names_the_datasink_url_and_time(tmp_path: Path, datasink: EmbeddedDatasink,
                                                client: redis.Redis) -> None:
    result = make_result()
    folder = tmp_path / "results" / result.test_name
    folder.mkdir(parents=True)
    result.write(folder / "result.json")
    assert push_results_dir(client, tmp_path / "results").ok
    marker = json.loads(marker_path(folder / "result.json").read_text())
    assert marker["datasink_url"] == datasink.url + "/0"
    assert marker["run_ids"] == [result.run_id] and marker["pushed_ms"] > 0
    assert (folder / "result.json").is_file()  # never deleted


def test_status_values_and_cli_status_counts(datasink: EmbeddedDatasink, client: redis.Redis,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    state = datasink.status().as_dict()
    assert state["running"] is True and state["url"] == datasink.url
    push_results(client, [make_result(r, test_name=f"t-{t}") for t in range(3) for r in range(2)])
    assert rbs_in_process(["datasink", "status", "--datasink", datasink.url]) == 0
    out = capsys.readouterr().out
    assert "series: 18, tests known: 3, runs stored: 6" in out


def test_long_test_lists_are_filtered_here_short_ones_by_the_server(client: redis.Redis) -> None:
    names = [f"t-{i:02d}" for i in range(reader.MAX_SERVER_TEST_LIST + 4)]
    push_results(client, [make_result(0, test_name=n) for n in names])
    few, many = names[:3], names[: reader.MAX_SERVER_TEST_LIST + 2]
    assert any(f.startswith("test_name=(") for f in unstable().filters(few))
    assert not any(f.startswith("test_name") for f in unstable().filters(many))
    assert sorted(reader.series_for_tests(client, unstable(), few)) == few
    assert sorted(reader.series_for_tests(client, unstable(), many)) == many
    assert unstable().filters()[-1] == "by=branch"  # the broad label goes last

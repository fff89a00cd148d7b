"""`rbs history`: a branch's series from a real datasink, with a sparkline, the last N points
with their commits and versions, and CSV / JSON export."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.analysis.history import sparkline
from redis_benchmarks_spec.datasink.writer import push_results
from tests.cli import rbs_in_process
from tests.datasink_fixtures import (  # noqa: F401  (register the fixtures)
    METRICS,
    TEST_NAME,
    client_fixture,
    datasink_fixture,
    make_result,
)

VALUES = [100.0, 110.0, 90.0, 130.0, 120.0, 80.0]


def _fill(client: redis.Redis, platforms: tuple[str, ...] = ("icelake-2s",)) -> str:
    docs = []
    for platform in platforms:
        for run, value in enumerate(VALUES):
            doc = make_result(run, hash=f"{run:x}" * 40, version=f"7.2.{run}",
                              platform=platform)
            doc = dataclasses.replace(doc, metrics={METRICS[0]: value},
                                      run_id=f"{doc.run_id}-{platform}")
            docs.append(doc)
    assert not push_results(client, docs).failed
    return f"redis://127.0.0.1:{client.connection_pool.connection_kwargs['port']}"


def test_sparkline_scales_between_min_and_max() -> None:
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert sparkline([5, 5]) == "▄▄" and sparkline([]) == ""


def test_json_export_last_n_points_with_commits_and_versions(client: redis.Redis,
                                                              tmp_path: Path) -> None:
    url = _fill(client)
    out = tmp_path / "h.json"
    assert rbs_in_process(["history", "--test", TEST_NAME, "--branch", "unstable", "--last", "4",
                           "--datasink", url, "--format", "json", "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [p["value"] for p in data["points"]] == VALUES[-4:]
    assert [p["commit"] for p in data["points"]] == [f"{r:x}" * 40 for r in range(2, 6)]
    assert [p["version"] for p in data["points"]] == [f"7.2.{r}" for r in range(2, 6)]
    assert data["series"].endswith("/unstable/ALL_STATS.Totals.Ops/sec")


def test_csv_export_and_terminal_table(client: redis.Redis,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    url = _fill(client)
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url, "--format",
                           "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [float(r["value"]) for r in rows] == VALUES
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url]) == 0
    table = capsys.readouterr().out
    assert sparkline(VALUES) in table
    assert "5555555555" in table and "7.2.5" in table  # newest commit (short) and version


def test_several_series_name_the_flag_that_narrows(client: redis.Redis,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    url = _fill(client, ("p1", "p2"))
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url]) == 2
    err = capsys.readouterr().err
    assert "2 series match" in err and "--platform" in err and len(err.splitlines()) == 1
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url, "--platform", "p2",
                           "--format", "csv"]) == 0


def test_large_values_print_in_plain_notation(client: redis.Redis,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    docs = []
    for run, value in enumerate([56_940.2, 61_234.0, 123_456.0]):
        doc = make_result(run, hash=f"{run:x}" * 40)
        doc = dataclasses.replace(doc, metrics={METRICS[0]: value})
        docs.append(doc)
    assert not push_results(client, docs).failed
    url = f"redis://127.0.0.1:{client.connection_pool.connection_kwargs['port']}"
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url]) == 0
    table = capsys.readouterr().out
    assert "56,940" in table and "123,456" in table, table
    assert "e+0" not in table, table  # 5.694e+04 was printed before


def test_a_swept_test_with_a_filter_nothing_matches_is_one_line(
        client: redis.Redis, capsys: pytest.CaptureFixture[str]) -> None:
    """A swept test read through its values: a --platform none of them ran on is a usage
    error naming what to pass, never an internal error; the key is printed whole."""
    docs = []
    for run, clients in enumerate(("1", "8")):
        doc = make_result(run, hash=f"{run:x}" * 40)
        doc = dataclasses.replace(doc, sweep={"param": "clients", "value": clients},
                                  metrics={METRICS[0]: 1000.0 + run})
        docs.append(doc)
    assert not push_results(client, docs).failed
    url = f"redis://127.0.0.1:{client.connection_pool.connection_kwargs['port']}"
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url]) == 0
    out = capsys.readouterr().out
    key_lines = [line for line in out.splitlines() if line.startswith("ci.benchmarks.redis/")]
    assert len(key_lines) == 2 and all(line.endswith("/ALL_STATS.Totals.Ops/sec")
                                       for line in key_lines), out
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url,
                           "--platform", "nowhere"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "internal error" not in err, err
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url, "--output",
                           "x.txt"]) == 2
    assert "--format csv" in capsys.readouterr().err
    plain = make_result(5, hash="5" * 40)
    plain = dataclasses.replace(plain, metrics={METRICS[0]: 900.0})
    assert not push_results(client, [plain]).failed
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url]) == 0
    out = capsys.readouterr().out
    assert "900" in out and f"also swept on unstable: pass --test {TEST_NAME}.clients-1" in out
